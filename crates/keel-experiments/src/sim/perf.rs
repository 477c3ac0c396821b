//! `keel sim perf`: the simulator's own speed. The headline is its speed
//! goal — 1,000,000 iterations on 20 workers under `ss` with chunk 1 in
//! under 5 s — and the scaling table runs the same loop over P = 16 … 1,024
//! and prints nanoseconds per event, and that divided by log₂ P: if a run
//! costs O(events · log P), the last column stays flat while P grows 64-fold.
//! Wall times are medians of `--reps` runs on this machine's clock.
//!
//! ```
//! use keel_experiments::sim::perf::{self, PerfConfig};
//! let config = PerfConfig { iterations: 500, threads: vec![4], reps: 1, ..PerfConfig::default() };
//! let report = perf::run(&config, &mut |_| {}).unwrap();
//! assert_eq!(report.rows[0].threads, 4);
//! ```

use std::path::PathBuf;
use std::time::Instant;

use keel_policy::stats::median;
use keel_sim::loops::{simulate, IterationCosts, Machine};
use serde::Serialize;

use super::{load_calibration, Progress};
use crate::error::{ExperimentError, Result};

/// What to time.
#[derive(Debug, Clone, PartialEq)]
pub struct PerfConfig {
    /// Iterations of the loop.
    pub iterations: usize,
    /// Worker counts of the scaling table.
    pub threads: Vec<usize>,
    /// The schedule (`dynamic,1` makes one event per iteration).
    pub schedule: String,
    /// Runs per point (the median is kept).
    pub reps: usize,
    /// A calibration file (`None`: the committed one).
    pub calibration: Option<PathBuf>,
}

impl Default for PerfConfig {
    /// 10⁶ iterations, P = 16 … 1,024, `dynamic,1`, 3 runs per point.
    fn default() -> Self {
        PerfConfig {
            iterations: 1_000_000,
            threads: vec![16, 32, 64, 128, 256, 512, 1024],
            schedule: "dynamic,1".into(),
            reps: 3,
            calibration: None,
        }
    }
}

fn sim_error(e: impl std::error::Error + Send + Sync + 'static) -> ExperimentError {
    ExperimentError::sim("sim", e)
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
) -> Result<PerfRow> {
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

/// The headline point (P = 20) and the scaling table; `progress` hears the
/// number of points first, then each one as it ends (labelled `P = …` for
/// the table's).
pub fn run(config: &PerfConfig, progress: &mut dyn FnMut(Progress<'_>)) -> Result<PerfReport> {
    if config.threads.contains(&0) {
        return Err(ExperimentError::Invalid(
            "--threads must be at least 1".into(),
        ));
    }
    let calibration = load_calibration(config.calibration.as_deref())?;
    // 1 µs per iteration: long enough that the counter does not saturate at
    // P = 20, so the events are the claims of a loop doing real work.
    let costs = IterationCosts::uniform(config.iterations, 1e-6).map_err(sim_error)?;
    progress(Progress::Total(config.threads.len() as u64 + 1));
    let headline = point(
        &costs,
        20,
        &config.schedule,
        calibration.overhead,
        config.reps,
    )?;
    progress(Progress::Step("P = 20"));
    let mut rows = Vec::new();
    for &p in &config.threads {
        rows.push(point(
            &costs,
            p,
            &config.schedule,
            calibration.overhead,
            config.reps,
        )?);
        progress(Progress::Step(&format!("P = {p}")));
    }
    Ok(PerfReport {
        schedule: config.schedule.clone(),
        iterations: config.iterations,
        headline_under_5s: headline.wall_s < 5.0,
        headline,
        rows,
    })
}
