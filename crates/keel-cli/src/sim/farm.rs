//! `keel sim farm`: the FastFlow ARRS paper's heterogeneous experiment
//! (§III-C, Figs. 7–8; see `docs/conventions.md#papers`) in
//! the simulator, at the paper's sizes: 4, 8 and 16 workers of which one is
//! `s_f` times faster, 1K–16K uniform tasks, every farm policy against the
//! paper's round-robin scheduler (RRS), and the relative performance
//! `S = t_rr / t_X` against the model `S = Σsᵢ / (p·s₁)` (Eq. 2).
//!
//! The reference `rr` runs on the same queues as the others. With the
//! default unbounded queues that is the paper's RRS; with `--capacity`, rr
//! skips full queues and adapts by itself, so S drops towards 1 for every
//! policy.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use keel_experiments::sim::farm::{self, FarmConfig, FarmSimReport, Row, DEFAULT_EMITTER_COST};
use keel_sim::farm::{PAPER_FAST_SPEED, PAPER_SLOW_TASK_S};

use crate::error::CliError;
use crate::plot::{self, Axis, Panel, Series};
use crate::progress;
use crate::report;

/// `keel sim farm`.
#[derive(Debug, Clone, clap::Args)]
pub struct FarmArgs {
    /// Farm sizes (worker threads), one of them fast.
    #[arg(long = "threads", alias = "workers", value_name = "N,...", value_delimiter = ',', default_values_t = [4usize, 8, 16], value_parser = super::bounds::count)]
    pub workers: Vec<usize>,

    /// Stream lengths (tasks).
    #[arg(long, value_delimiter = ',', default_values_t = [1000usize, 2000, 4000, 8000, 16000], value_parser = super::bounds::count)]
    pub tasks: Vec<usize>,

    /// Farm policy specs (default: rr, arrs:chunk=100, arrs, arrs-adaptive,
    /// on-demand, shortest-queue, eft:capacity=4); `rr` is always run as
    /// the reference.
    #[arg(short, long = "policy", value_name = "SPEC")]
    pub policies: Vec<String>,

    /// How many times faster the fast worker is (the paper's s_f ≈ 5.8).
    #[arg(long, default_value_t = PAPER_FAST_SPEED)]
    pub fast_speed: f64,

    /// A task's seconds on a slow worker (the paper's ≈ 0.28 ms).
    #[arg(long, default_value_t = PAPER_SLOW_TASK_S)]
    pub task_s: f64,

    /// One slow worker instead of one fast one: worker 0 at this speed
    /// (e.g. 0.1), the others at 1; `--fast-speed` is then unused.
    #[arg(long, value_name = "S")]
    pub slow_speed: Option<f64>,

    /// Emitter seconds per push (item or marker).
    #[arg(long, default_value_t = DEFAULT_EMITTER_COST)]
    pub emitter_cost: f64,

    /// Bound every input queue at this many items (default: unbounded, as
    /// in the paper).
    #[arg(long, value_parser = super::bounds::count)]
    pub capacity: Option<usize>,

    /// Coefficient of variation of each task's time (normal noise, mean 1).
    #[arg(long, default_value_t = 0.0, value_parser = super::bounds::cv)]
    pub noise_cv: f64,

    /// Seed of the noise.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Write S against tasks, one panel per farm size, to this SVG file.
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

impl FarmArgs {
    fn config(&self) -> FarmConfig {
        FarmConfig {
            workers: self.workers.clone(),
            tasks: self.tasks.clone(),
            policies: self.policies.clone(),
            fast_speed: self.fast_speed,
            task_s: self.task_s,
            slow_speed: self.slow_speed,
            emitter_cost: self.emitter_cost,
            capacity: self.capacity,
            noise_cv: self.noise_cv,
            seed: self.seed,
        }
    }
}

/// `keel sim farm`.
pub fn run(args: &FarmArgs) -> Result<(), CliError> {
    let config = args.config();
    let total = farm::simulations(&config);
    let bar = progress::bar(total as u64, "sim farm (simulations)", false);
    let report = farm::run(&config, &mut || bar.inc(1));
    bar.finish_and_clear();
    let report = report?;
    let mut out = BufWriter::new(io::stdout().lock());
    if args.json {
        serde_json::to_writer(&mut out, &report)?;
        writeln!(out)?;
    } else {
        write_tables(&mut out, &report)?;
    }
    // The tables come first: a plot that cannot be written must not throw
    // away what was computed; its failure is still the command's error.
    out.flush()?;
    if let Some(path) = &args.svg {
        plot(path, args, &report.rows)?;
        if !args.json {
            writeln!(out, "plot: {}", path.display())?;
            out.flush()?;
        }
    }
    Ok(())
}

fn write_tables(out: &mut dyn Write, r: &FarmSimReport) -> Result<(), CliError> {
    let odd = match r.slow_speed {
        Some(s) => format!("one worker at speed {s}, the others at 1"),
        None => format!("one worker {}× faster", r.fast_speed),
    };
    writeln!(
        out,
        "keel sim farm: {odd}, slow task {}, emitter {} ns per push, queues {}, noise cv {}",
        report::duration(r.task_s),
        r.emitter_cost * 1e9,
        r.capacity
            .map_or("unbounded".to_string(), |c| format!("bounded at {c}")),
        r.noise_cv
    )?;
    writeln!(
        out,
        "S = t_rr / t_X (simulated makespans); model S = Σsᵢ/(p·s₁) (Eq. 2)"
    )?;
    let mut sizes: Vec<usize> = r.rows.iter().map(|x| x.workers).collect();
    sizes.dedup();
    for p in sizes {
        let rows: Vec<&Row> = r.rows.iter().filter(|x| x.workers == p).collect();
        writeln!(out)?;
        writeln!(
            out,
            "{p} workers (model S = {:.3})",
            rows.first().map_or(0.0, |x| x.model)
        )?;
        let mut table = vec![[
            "tasks".to_string(),
            "policy".into(),
            "makespan".into(),
            "S".into(),
            "% of model".into(),
            if r.slow_speed.is_some() {
                "slow / other items".into()
            } else {
                "fast / slow items".into()
            },
            "level reads".into(),
            "blocks".into(),
        ]];
        for x in rows {
            table.push([
                x.tasks.to_string(),
                x.policy.clone(),
                report::duration(x.makespan_s),
                format!("{:.3}", x.speedup),
                format!("{:.1}", 100.0 * x.speedup / x.model),
                format!("{} / {:.0}", x.fast_items, x.slow_items),
                x.level_reads.to_string(),
                x.blocks.to_string(),
            ]);
        }
        for line in report::align(&table) {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

fn plot(path: &std::path::Path, args: &FarmArgs, rows: &[Row]) -> Result<(), CliError> {
    let policies = farm::policies(&args.config());
    let xmax = args.tasks.iter().copied().max().unwrap_or(1) as f64 / 1000.0 * 1.05;
    let ymax = rows
        .iter()
        .map(|r| r.speedup.max(r.model))
        .fold(1.0, f64::max)
        * 1.1;
    let panels: Vec<Panel> = args
        .workers
        .iter()
        .map(|&p| {
            let mut series: Vec<Series> = policies
                .iter()
                .enumerate()
                .map(|(i, spec)| {
                    let canonical = keel_policy::farm::parse(spec)
                        .map(|d| d.spec().to_string())
                        .unwrap_or_else(|_| spec.clone());
                    let points = rows
                        .iter()
                        .filter(|r| r.workers == p && r.policy == canonical)
                        .map(|r| (r.tasks as f64 / 1000.0, r.speedup))
                        .collect();
                    Series::new(canonical, i, points)
                })
                .collect();
            let model = rows
                .iter()
                .find(|r| r.workers == p)
                .map_or(1.0, |r| r.model);
            series.push(Series::reference(
                "model Σsᵢ/(p·s₁)",
                vec![(0.0, model), (xmax, model)],
            ));
            Panel {
                title: match args.slow_speed {
                    Some(s) => format!("{p} workers, one at speed {s}"),
                    None => format!("{p} workers, one {}x faster", args.fast_speed),
                },
                x_label: "tasks (K)".into(),
                y_label: "S = t_rr / t".into(),
                series,
                x_axis: Axis {
                    log: false,
                    range: Some((0.0, xmax)),
                },
                y_axis: Axis {
                    log: false,
                    range: Some((0.8, ymax)),
                },
            }
        })
        .collect();
    plot::write_svg(path, &panels)
}
