//! `keel sim objects`: the Charm++ + OpenMP paper's Lassen study
//! (§5, Tables 1–2) in
//! the simulator, at the paper's scale: the Lassen-like proxy on 64 nodes ×
//! 16 PUs (16 domains per PU, `LassenLike::for_pus`, pinned by
//! `crates/keel-sim/tests/objects_golden.rs`), or a hot band that stays,
//! drifts or jumps (`--workload persistent|drift|phase`).
//!
//! - **Table 1**: No LB, Greedy (hierarchical: `hier:nodes=N` with greedy
//!   at both levels, when it pays: the adaptive invocation), Greedy +
//!   stealing inside nodes, No LB + stealing, Greedy every `--period`
//!   steps: λ at the node and PU levels, total time.
//! - **Table 2**: hierarchical Greedy at periods 20, 50 and 100, time in
//!   steps and in balancing split out.
//! - **Table 3** (with `--slow-speed S`): the upper half of every node's PUs
//!   at speed S, the remap told the speeds; hierarchical `greedy` against
//!   `lpt-eft` inside nodes.
//!
//! Balancing time is modelled (decision per object + migrations), not
//! measured; see `keel_sim::objects`.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use indicatif::ProgressBar;
use keel_experiments::sim::objects::{self, ObjectsConfig, ObjectsProgress, ObjectsSimReport};
use keel_sim::objects::DEFAULT_STEAL_COST;

use crate::error::CliError;
use crate::plot::{self, Axis, Panel, Series};
use crate::progress;
use crate::report;

/// `keel sim objects`.
#[derive(Debug, Clone, clap::Args)]
pub struct ObjectsArgs {
    /// Nodes.
    #[arg(long, default_value_t = 64, value_parser = super::bounds::count)]
    pub nodes: usize,

    /// PUs per node.
    #[arg(long, default_value_t = 16, value_parser = super::bounds::count)]
    pub pus_per_node: usize,

    /// The object workload's spec (default: `lassen:pus=NODES×PUS`, 16
    /// domains per PU; without `pus`, `pus=NODES×PUS`), e.g.
    /// `lassen:steps=100`, `persistent`, `drift`, `phase`.
    #[arg(long, value_name = "SPEC")]
    pub workload: Option<String>,

    /// Table 1's fixed balancing period (the paper's 50).
    #[arg(long, default_value_t = 50)]
    pub period: usize,

    /// Table 2's periods.
    #[arg(long, value_delimiter = ',', default_values_t = [20usize, 50, 100])]
    pub periods: Vec<usize>,

    /// Exposure policy of the "+ stealing" rows.
    #[arg(long, default_value = "history-idle")]
    pub stealing: String,

    /// Seconds a thief pays per stolen chunk.
    #[arg(long, default_value_t = DEFAULT_STEAL_COST, value_parser = super::bounds::cost)]
    pub steal_cost: f64,

    /// Coefficient of variation of every piece of work (normal noise): the
    /// measured loads are noisy.
    #[arg(long, default_value_t = 0.05, value_parser = super::bounds::cv)]
    pub noise_cv: f64,

    /// Seed of the noise and of the thieves' choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Run Table 3: the upper half of every node's PUs at this relative
    /// speed, hierarchical greedy against lpt-eft inside nodes.
    #[arg(long, value_name = "S", value_parser = slow_speed)]
    pub slow_speed: Option<f64>,

    /// Write each Table 1 configuration's time per step to this SVG file.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,

    /// No progress on stderr (this command prints none; accepted so that
    /// `--quiet` works on every command).
    #[arg(long)]
    pub quiet: bool,

    /// Print one JSON document instead of tables.
    #[arg(long)]
    pub json: bool,
}

impl ObjectsArgs {
    fn config(&self) -> ObjectsConfig {
        ObjectsConfig {
            nodes: self.nodes,
            pus_per_node: self.pus_per_node,
            workload: self.workload.clone(),
            period: self.period,
            periods: self.periods.clone(),
            stealing: self.stealing.clone(),
            steal_cost: self.steal_cost,
            noise_cv: self.noise_cv,
            seed: self.seed,
            slow_speed: self.slow_speed,
        }
    }
}

/// `keel sim objects`.
pub fn run(args: &ObjectsArgs) -> Result<(), CliError> {
    let config = args.config();
    let mut bar: Option<ProgressBar> = None;
    let report = objects::run(&config, &mut |p| {
        let bar = bar.get_or_insert_with(|| {
            progress::bar(
                objects::total_steps(&config).unwrap_or(0),
                "sim objects (steps)",
                false,
            )
        });
        match p {
            ObjectsProgress::Config(label) => bar.set_message(label.to_string()),
            ObjectsProgress::Step => bar.inc(1),
        }
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let report = report?;
    // The tables come first: a plot that cannot be written must not throw
    // away what was computed; its failure is still the command's error.
    let mut out = BufWriter::new(io::stdout().lock());
    if args.json {
        serde_json::to_writer(&mut out, &report)?;
        writeln!(out)?;
    } else {
        write_tables(&mut out, &report, args)?;
    }
    out.flush()?;
    if let Some(path) = &args.svg {
        plot(path, &report)?;
        if !args.json {
            writeln!(out, "plot: {}", path.display())?;
            out.flush()?;
        }
    }
    Ok(())
}

fn write_tables(
    out: &mut dyn Write,
    r: &ObjectsSimReport,
    args: &ObjectsArgs,
) -> Result<(), CliError> {
    writeln!(
        out,
        "keel sim objects: {} nodes × {} PUs, workload {}",
        r.nodes, r.pus_per_node, r.workload
    )?;
    writeln!(
        out,
        "remap policy {}; stealing `{}` inside nodes, {} per steal; noise cv {}; balancing time modelled",
        r.policy,
        args.stealing,
        report::duration(args.steal_cost),
        args.noise_cv
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "Table 1: λ over the run (Σ_t max / Σ_t mean − 1) and total time; Greedy when it pays, and every {} steps",
        args.period
    )?;
    let mut rows = vec![[
        "config".to_string(),
        "λ node (%)".into(),
        "λ PU (%)".into(),
        "total".into(),
        "steps".into(),
        "balancing".into(),
        "remaps".into(),
        "migrations".into(),
        "stolen/exposed".into(),
    ]];
    for row in &r.table1 {
        let x = &row.run;
        rows.push([
            row.config.clone(),
            format!("{:.1}", 100.0 * x.lambda_node),
            format!("{:.1}", 100.0 * x.lambda_pu),
            report::duration(x.total_s),
            report::duration(x.steps_s),
            report::duration(x.balance_s),
            x.remaps.len().to_string(),
            x.migrations.to_string(),
            format!("{}/{}", x.tasks.stolen, x.tasks.exposed),
        ]);
    }
    for line in report::align(&rows) {
        writeln!(out, "{line}")?;
    }
    writeln!(
        out,
        "notes: Greedy + stealing is {:.2}× faster than No LB ({} the ≥ 1.5× target) and {:.2}× faster than Greedy alone ({} the ≥ 1.1× target)",
        r.gain_vs_no_lb,
        report::meets(r.gain_vs_no_lb >= 1.5),
        r.gain_vs_greedy,
        report::meets(r.gain_vs_greedy >= 1.1),
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "Table 2: Greedy (hier) at several periods, balancing time split out"
    )?;
    let mut rows = vec![[
        "config".to_string(),
        "steps".into(),
        "balancing".into(),
        "(decision".into(),
        "migration)".into(),
        "total".into(),
        "migrations".into(),
        "λ PU (%)".into(),
    ]];
    let no_lb = &r.table1[0].run;
    rows.push([
        "No LB".into(),
        report::duration(no_lb.steps_s),
        report::duration(0.0),
        report::duration(0.0),
        report::duration(0.0),
        report::duration(no_lb.total_s),
        "0".into(),
        format!("{:.1}", 100.0 * no_lb.lambda_pu),
    ]);
    for row in &r.table2 {
        let x = &row.run;
        rows.push([
            row.config.clone(),
            report::duration(x.steps_s),
            report::duration(x.balance_s),
            report::duration(x.decision_s),
            report::duration(x.migration_s),
            report::duration(x.total_s),
            x.migrations.to_string(),
            format!("{:.1}", 100.0 * x.lambda_pu),
        ]);
    }
    for line in report::align(&rows) {
        writeln!(out, "{line}")?;
    }
    if !r.table3.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "Table 3: upper half of each node's PUs slow, remap told the speeds; every {} steps, no stealing",
            args.period
        )?;
        let mut rows = vec![[
            "config".to_string(),
            "steps".into(),
            "total".into(),
            "migrations".into(),
            "λ PU (%)".into(),
            "vs first".into(),
        ]];
        let first = r.table3[0].run.steps_s;
        for row in &r.table3 {
            let x = &row.run;
            rows.push([
                row.config.clone(),
                report::duration(x.steps_s),
                report::duration(x.total_s),
                x.migrations.to_string(),
                format!("{:.1}", 100.0 * x.lambda_pu),
                format!("{:.3}×", x.steps_s / first),
            ]);
        }
        for line in report::align(&rows) {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// A relative speed: finite and > 0.
fn slow_speed(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 => Ok(s),
        _ => Err(format!("`{text}` is not a speed (a number > 0)")),
    }
}

fn plot(path: &std::path::Path, r: &ObjectsSimReport) -> Result<(), CliError> {
    let steps = r.table1.first().map_or(1, |x| x.run.steps) as f64;
    let ymax = r
        .table1
        .iter()
        .flat_map(|x| x.run.step_s.iter().copied())
        .fold(0.0, f64::max)
        * 1e3
        * 1.1;
    let series = r
        .table1
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let points = row
                .run
                .step_s
                .iter()
                .enumerate()
                .map(|(k, &s)| (k as f64, s * 1e3))
                .collect();
            Series::new(row.config.clone(), i, points)
        })
        .collect();
    let panel = Panel {
        title: "Lassen-like, time per step (Table 1 configurations)".into(),
        x_label: "step".into(),
        y_label: "time per step (ms)".into(),
        series,
        x_axis: Axis {
            log: false,
            range: Some((0.0, steps)),
        },
        y_axis: Axis {
            log: false,
            range: Some((0.0, ymax.max(1e-3))),
        },
    };
    plot::write_svg(path, &[panel])
}
