//! `keel sim loops`: loop schedules at the Auto4OMP paper's scale, which this
//! 2-core machine cannot reach, on the pinned SPHYNX-like L1
//! (`keel_sim::loops::sphynx_l1`: N = 1,000,000, costs in spin units times
//! the calibrated seconds per unit, dispatch overhead from the calibration):
//!
//! 1. **Bathtub (Fig. 1).** One instance of L1 at P = 20 under `static,k`,
//!    `dynamic,k` and `guided,k` for k = N/(2P), halved down to 1. Large
//!    chunks leave threads idle at the end; small ones queue on the shared
//!    counter (the calibrated contention). The expert chunk (48 here) should
//!    sit near the bottom.
//! 2. **Selection vs Oracle (Table 3).** L1 over its time steps at P = 20
//!    and 64: every portfolio schedule with its default chunk and with the
//!    expert chunk, then each method `auto,keel|expert|exhaustive|random`.
//!    Oracle is the best fixed configuration per instance, ManualBest the
//!    best default-chunk schedule over the run; every row is % degradation
//!    relative to Oracle, as `keel bench auto` reports it on threads.
//!
//! With `--input FILE` it simulates the user's own loops instead (formats
//! in `keel-sim`'s README): every instance in file order, per schedule.

use std::io::Write;
use std::path::{Path, PathBuf};

use keel_experiments::sim::loops::{
    self, Bathtub, ConfigRow, LoopsConfig, LoopsReport, TraceConfig, BATHTUB_SCHEDULES, NEAR_BOTTOM,
};
use keel_sim::loops::sphynx_l1;

use crate::error::CliError;
use crate::plot::{self, Axis, Panel, Series};
use crate::report;

/// `keel sim loops`.
#[derive(Debug, clap::Args)]
pub struct LoopsArgs {
    /// Worker counts of the selection experiment.
    #[arg(long, value_delimiter = ',', default_values_t = [20usize, 64])]
    pub threads: Vec<usize>,

    /// Time steps of the selection experiment (default: the pinned 20).
    #[arg(long, value_name = "N")]
    pub steps: Option<usize>,

    /// Only the bathtub.
    #[arg(long)]
    pub bathtub_only: bool,

    /// Coefficient of variation of every chunk's time (normal noise, mean 1).
    #[arg(long, default_value_t = 0.0, value_parser = super::bounds::cv)]
    pub noise_cv: f64,

    /// Seed of the noise (and of RandomSel's stream).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// A calibration file (default: the committed one).
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,

    /// Write the bathtub curves to this SVG file.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,

    /// Simulate this CSV/JSON trace of per-iteration costs instead.
    #[arg(long = "input", alias = "trace", value_name = "FILE")]
    pub trace: Option<PathBuf>,

    /// With --input: schedules (default: the Auto4OMP portfolio).
    #[arg(short, long = "schedule", value_name = "SPEC")]
    pub schedules: Vec<String>,

    /// With --input: workers.
    #[arg(long, value_name = "P", default_value_t = 20)]
    pub trace_threads: usize,

    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,

    /// Print one JSON document instead of tables.
    #[arg(long)]
    pub json: bool,
}

impl LoopsArgs {
    fn config(&self) -> LoopsConfig {
        LoopsConfig {
            threads: self.threads.clone(),
            steps: self.steps,
            bathtub_only: self.bathtub_only,
            noise_cv: self.noise_cv,
            seed: self.seed,
            calibration: self.calibration.clone(),
        }
    }
}

/// `keel sim loops`.
pub fn run(args: &LoopsArgs, out: &mut dyn Write) -> Result<(), CliError> {
    if let Some(path) = &args.trace {
        let mut threads = args.threads.clone();
        threads.push(args.trace_threads);
        loops::check(&threads, args.noise_cv)?;
        return run_trace(path, args, out);
    }
    let report = super::with_progress("sim loops", args.quiet, |progress| {
        loops::run(&args.config(), progress)
    })?;
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &report)?;
        writeln!(out)?;
    } else {
        write_report(out, &report, args)?;
    }
    // The tables come first: a plot that cannot be written must not throw
    // away what was computed; its failure is still the command's error.
    if let Some(path) = &args.svg {
        out.flush()?;
        plot(path, &report.bathtub)?;
        if !args.json {
            writeln!(out)?;
            writeln!(out, "plot: {}", path.display())?;
        }
    }
    Ok(())
}

fn write_report(out: &mut dyn Write, r: &LoopsReport, args: &LoopsArgs) -> Result<(), CliError> {
    writeln!(
        out,
        "keel sim loops: SPHYNX-like L1 ({}), N = {}, {:.3} ns per spin unit, overhead fork_join {:.0} ns, claim_local {:.1} ns, claim_serial {:.1} ns (calibration of {}), noise cv {}",
        r.workload,
        r.iterations,
        r.spin_unit_seconds * 1e9,
        r.overhead.fork_join * 1e9,
        r.overhead.claim_local * 1e9,
        r.overhead.claim_serial * 1e9,
        r.calibration_date,
        args.noise_cv
    )?;
    let b = &r.bathtub;
    writeln!(out)?;
    writeln!(
        out,
        "Bathtub (Auto4OMP Fig. 1): simulated T_par of step {} at P = {}, chunk k from N/(2P) down to 1; expert chunk {}",
        sphynx_l1::BATHTUB_STEP,
        b.threads,
        b.expert_chunk
    )?;
    let mut table = vec![{
        let mut h = vec!["k".to_string()];
        h.extend(BATHTUB_SCHEDULES.iter().map(|s| format!("{s},k")));
        h
    }];
    for pt in &b.points {
        let mut line = vec![format!(
            "{}{}",
            pt.chunk,
            if pt.chunk == b.expert_chunk {
                " (expert)"
            } else {
                ""
            }
        )];
        line.extend(pt.t_par.iter().map(|&t| report::duration(t)));
        table.push(line);
    }
    for line in report::align(&table) {
        writeln!(out, "{line}")?;
    }
    for (s, chunk, t, ratio) in &b.best {
        writeln!(
            out,
            "{s}: best k = {chunk} ({}); expert k = {} at {:.3}× the best — {}",
            report::duration(*t),
            b.expert_chunk,
            ratio,
            if *ratio <= NEAR_BOTTOM {
                "near the bottom"
            } else {
                "NOT near the bottom"
            }
        )?;
    }
    for s in &r.selection {
        writeln!(out)?;
        writeln!(
            out,
            "Selection vs Oracle (Table 3 style), P = {}: {} instances of L1; Oracle {} (best fixed configuration per instance)",
            s.threads,
            s.instances,
            report::duration(s.oracle)
        )?;
        let mut table = vec![[
            "configuration".to_string(),
            "total".into(),
            "% vs Oracle".into(),
            "last choice".into(),
            "explored".into(),
        ]];
        let mut add = |c: &ConfigRow| {
            table.push([
                c.config.clone(),
                report::duration(c.total),
                format!("{:.1}", c.degradation_percent),
                c.last_choice.clone().unwrap_or_default(),
                c.exploration_instances
                    .map_or(String::new(), |e| e.to_string()),
            ])
        };
        for m in &s.methods {
            add(m);
        }
        add(&s.manual_best);
        for f in &s.fixed {
            add(f);
        }
        for line in report::align(&table) {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

fn plot(path: &Path, b: &Bathtub) -> Result<(), CliError> {
    let xmax = b.points.iter().map(|p| p.chunk).max().unwrap_or(1) as f64 * 1.5;
    let ms = |t: f64| t * 1e3;
    let times = || b.points.iter().flat_map(|p| p.t_par.iter().copied());
    let ymax = times().fold(0.0, f64::max);
    let ymin = times().fold(f64::INFINITY, f64::min);
    let mut series: Vec<Series> = BATHTUB_SCHEDULES
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let points = b
                .points
                .iter()
                .map(|p| (p.chunk as f64, ms(p.t_par[i])))
                .collect();
            Series::new(format!("{s},k"), i, points)
        })
        .collect();
    let k = b.expert_chunk as f64;
    series.push(Series::reference(
        format!("expert chunk {}", b.expert_chunk),
        vec![(k, ms(ymin) * 0.9), (k, ms(ymax) * 1.05)],
    ));
    let panel = Panel {
        title: format!(
            "Simulated SPHYNX-like L1, N = 10^6, P = {}: T_par over the chunk parameter",
            b.threads
        ),
        x_label: "chunk parameter k (log)".into(),
        y_label: "T_par (ms, log)".into(),
        series,
        x_axis: Axis {
            log: true,
            range: Some((0.8, xmax)),
        },
        y_axis: Axis {
            log: true,
            range: Some((ms(ymin) * 0.9, ms(ymax) * 1.05)),
        },
    };
    plot::write_svg(path, &[panel])
}

/// A user trace: every instance in file order under each schedule.
fn run_trace(path: &Path, args: &LoopsArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let report = loops::run_trace(&TraceConfig {
        trace: path.to_path_buf(),
        schedules: args.schedules.clone(),
        threads: args.trace_threads,
        noise_cv: args.noise_cv,
        seed: args.seed,
        calibration: args.calibration.clone(),
    })?;
    let rows = &report.rows;
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &rows)?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(
        out,
        "keel sim loops --input {}: {} instances, {} iterations, {} workers",
        path.display(),
        report.instances,
        report.iterations,
        args.trace_threads
    )?;
    let mut table = vec![[
        "schedule".to_string(),
        "total T_par".into(),
        "mean LIB (%)".into(),
        "chunks".into(),
    ]];
    for r in rows {
        table.push([
            r.schedule.clone(),
            report::duration(r.total),
            format!("{:.1}", r.mean_lib_percent),
            r.chunks.to_string(),
        ]);
    }
    for line in report::align(&table) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}
