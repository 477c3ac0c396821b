//! `keel sim perf`: the simulator's own speed. The headline is the issue's
//! goal — 1,000,000 iterations on 20 workers under `ss` with chunk 1 in
//! under 5 s — and the scaling table runs the same loop over P = 16 … 1,024
//! and prints nanoseconds per event, and that divided by log₂ P: if a run
//! costs O(events · log P), the last column stays flat while P grows 64-fold.
//! Wall times are medians of `--reps` runs on this machine's clock.

use std::io::Write;
use std::time::Instant;

use keel_sim::loops::{simulate, IterationCosts, Machine};
use serde::Serialize;

use super::{load_calibration, median, progress, sim_error};
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

/// One point of the table.
#[derive(Debug, Clone, Serialize)]
pub struct PerfRow {
    /// Workers.
    pub threads: usize,
    /// Events processed.
    pub events: u64,
    /// Median wall seconds.
    pub wall_s: f64,
    /// Nanoseconds per event.
    pub ns_per_event: f64,
    /// Nanoseconds per event per log₂ P.
    pub ns_per_event_log_p: f64,
    /// The simulated makespan (a check that the runs did the work).
    pub simulated_t_par: f64,
}

/// The report.
#[derive(Debug, Clone, Serialize)]
pub struct PerfReport {
    /// The schedule.
    pub schedule: String,
    /// Iterations.
    pub iterations: usize,
    /// The headline point: P = 20.
    pub headline: PerfRow,
    /// Whether the headline is under 5 s.
    pub headline_under_5s: bool,
    /// The scaling table.
    pub rows: Vec<PerfRow>,
}

fn point(
    costs: &IterationCosts,
    threads: usize,
    schedule: &str,
    overhead: keel_sim::OverheadModel,
    reps: usize,
) -> Result<PerfRow, CliError> {
    let machine = Machine::uniform(threads, overhead).map_err(sim_error)?;
    let mut walls = Vec::with_capacity(reps);
    let mut last = None;
    for _ in 0..reps.max(1) {
        let started = Instant::now();
        let r = simulate(costs, &machine, schedule, 1).map_err(sim_error)?;
        walls.push(started.elapsed().as_secs_f64());
        last = Some(r);
    }
    let r = last.expect("at least one run");
    let wall = median(&mut walls);
    let ns = wall * 1e9 / r.events.max(1) as f64;
    Ok(PerfRow {
        threads,
        events: r.events,
        wall_s: wall,
        ns_per_event: ns,
        ns_per_event_log_p: ns / (threads as f64).log2().max(1.0),
        simulated_t_par: r.t_par,
    })
}

/// `keel sim perf`.
pub fn run(args: &PerfArgs, out: &mut dyn Write) -> Result<(), CliError> {
    if args.threads.contains(&0) {
        return Err(CliError::Usage("--threads must be at least 1".into()));
    }
    let calibration = load_calibration(args.calibration.as_deref())?;
    // 1 µs per iteration: long enough that the counter does not saturate at
    // P = 20, so the events are the claims of a loop doing real work.
    let costs = IterationCosts::uniform(args.iterations, 1e-6).map_err(sim_error)?;
    let bar = progress(args.threads.len() as u64 + 1, "sim perf", args.quiet);
    let headline = point(&costs, 20, &args.schedule, calibration.overhead, args.reps)?;
    bar.inc(1);
    let mut rows = Vec::new();
    for &p in &args.threads {
        bar.set_message(format!("P = {p}"));
        rows.push(point(
            &costs,
            p,
            &args.schedule,
            calibration.overhead,
            args.reps,
        )?);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let report = PerfReport {
        schedule: args.schedule.clone(),
        iterations: args.iterations,
        headline_under_5s: headline.wall_s < 5.0,
        headline,
        rows,
    };
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
        "headline P = 20: {} wall for {} events ({:.0} ns/event) — goal < 5 s: {}",
        report::duration(h.wall_s),
        h.events,
        h.ns_per_event,
        if report.headline_under_5s {
            "met"
        } else {
            "NOT met"
        }
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
