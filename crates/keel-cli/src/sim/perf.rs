//! `keel sim perf`: the simulator's own speed. The headline is its speed
//! goal — 1,000,000 iterations on 20 workers under `ss` with chunk 1 in
//! under 5 s — and the scaling table runs the same loop over P = 16 … 1,024
//! and prints nanoseconds per event, and that divided by log₂ P: if a run
//! costs O(events · log P), the last column stays flat while P grows 64-fold.
//! Wall times are medians of `--reps` runs on this machine's clock.

use std::io::Write;

use keel_experiments::sim::perf::{self, PerfConfig};

use crate::error::CliError;
use crate::report;

/// `keel sim perf`.
#[derive(Debug, clap::Args)]
pub struct PerfArgs {
    /// Iterations of the loop.
    #[arg(long, value_name = "N", default_value_t = 1_000_000, value_parser = super::bounds::count)]
    pub iterations: usize,

    /// Worker counts of the scaling table.
    #[arg(long, value_delimiter = ',', default_values_t = [16usize, 32, 64, 128, 256, 512, 1024], value_parser = super::bounds::count)]
    pub threads: Vec<usize>,

    /// The schedule (`ss` with chunk 1 makes one event per iteration).
    #[arg(long, default_value = "dynamic,1")]
    pub schedule: String,

    /// Runs per point (the median is shown).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = super::bounds::count)]
    pub reps: usize,

    /// A calibration file (default: the committed one).
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<std::path::PathBuf>,

    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,

    /// Print one JSON document instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// `keel sim perf`.
pub fn run(args: &PerfArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let config = PerfConfig {
        iterations: args.iterations,
        threads: args.threads.clone(),
        schedule: args.schedule.clone(),
        reps: args.reps,
        calibration: args.calibration.clone(),
    };
    let report = super::with_progress("sim perf", args.quiet, |progress| {
        perf::run(&config, progress)
    })?;
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &report)?;
        writeln!(out)?;
        return Ok(());
    }
    let h = &report.headline;
    writeln!(
        out,
        "keel sim perf: {} iterations, schedule {}, median of {} runs (release build expected)",
        report.iterations, report.schedule, args.reps
    )?;
    writeln!(
        out,
        "headline P = 20: {} wall for {} events ({:.0} ns/event); {} the < 5 s target",
        report::duration(h.wall_s),
        h.events,
        h.ns_per_event,
        report::meets(report.headline_under_5s)
    )?;
    writeln!(out)?;
    let mut table = vec![[
        "P".to_string(),
        "events".into(),
        "wall".into(),
        "ns/event".into(),
        "ns/event/log2 P".into(),
        "simulated T_par".into(),
    ]];
    for r in &report.rows {
        table.push([
            r.threads.to_string(),
            r.events.to_string(),
            report::duration(r.wall_s),
            format!("{:.1}", r.ns_per_event),
            format!("{:.2}", r.ns_per_event_log_p),
            report::duration(r.simulated_t_par),
        ]);
    }
    for line in report::align(&table) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}
