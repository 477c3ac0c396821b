//! `keel bench loops`: the loop workloads of `keel-workloads` run with every
//! loop schedule on the global pool, against their own sequential time.
//!
//! Each workload runs `reps` interleaved rounds. A round runs the body
//! sequentially once (the reference, `T_serial`) and one instance of the
//! loop under each schedule, in an order that rotates from round to round
//! ([`rounds::round_order`]), so that the reference is measured in the same
//! machine phases as the schedules and costs no more than one more entry
//! per round. A row shows the median `T_par` over the rounds and two ratios,
//! each the median over rounds of a ratio within one round
//! ([`rounds::ratios`]):
//!
//! - **÷ ideal (same round)**, the headline: `T_par / (T_serial / P)` with
//!   the round's own `T_serial` (1.00 is perfect; Keel's `P` is the global
//!   pool's, from `KEEL_NUM_THREADS` or the cores). A frequency change or
//!   a neighbour that slows a whole round slows its reference too, so it
//!   cannot make a row beat its ideal; one that hits only the reference of
//!   one round moves that round's ratio, not the median. It answers "how
//!   far from a perfect speed-up", and is still flagged below
//!   [`super::IDEAL_TOLERANCE`] where few rounds leave the median exposed.
//! - **÷ best**: `T_par` over the fastest schedule of the same round, at
//!   least 1 by construction: how far each schedule is from the best one
//!   this run found, with no reference at all.
//!
//! Beside them, the LIB of the last instance from the loop's record, and
//! the chunks it ran. A schedule that does not parse is refused before any
//! work ([`ExperimentError::Invalid`]); one that fails while running is a
//! row with its error (it runs in no later round), and the others still
//! run.
//!
//! ```
//! use keel_experiments::bench::loops::{self, LoopsConfig};
//! let config = LoopsConfig {
//!     schedules: vec!["dynamic,4".into()],
//!     workloads: vec!["mandelbrot:width=16,height=8,max-iter=20".into()],
//!     reps: 1,
//!     chunk: None,
//! };
//! let report = loops::run(&config, &mut |_| {}).unwrap();
//! // dynamic,4 over 16 columns: 4 chunks.
//! assert_eq!(report.workloads[0].rows[0].chunks, Some(4));
//! ```

pub mod rounds;

use std::hint::black_box;
use std::time::Instant;

use keel_policy::stats::median;
use keel_workloads::loops::{loop_workload, LoopWorkload};
use serde::Serialize;

use super::{BackgroundLoad, LoadMeter, Progress};
use crate::error::{ExperimentError, Result};

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopsConfig {
    /// Loop schedules in `KEEL_SCHEDULE` syntax (empty: [`SCHEDULES`]).
    pub schedules: Vec<String>,
    /// Loop workload specs (empty: [`WORKLOADS`] with their defaults).
    pub workloads: Vec<String>,
    /// Interleaved rounds: instances per schedule and sequential runs of
    /// the reference, one of each per round; medians are kept.
    pub reps: usize,
    /// The chunk parameter for every schedule.
    pub chunk: Option<u64>,
}

impl Default for LoopsConfig {
    /// Every schedule on both workloads, 3 instances each, default chunks.
    fn default() -> Self {
        LoopsConfig {
            schedules: Vec::new(),
            workloads: Vec::new(),
            reps: 3,
            chunk: None,
        }
    }
}

/// Every loop schedule name of `docs/conventions.md#loop-schedules`, in its
/// order, with
/// the OpenMP names `dynamic` and `guided` for `ss` and `gss`.
pub const SCHEDULES: [&str; 29] = [
    "static",
    "dynamic",
    "guided",
    "gss-llvm",
    "gac",
    "tss",
    "fsc",
    "fac",
    "mfac",
    "fac2",
    "mfac2",
    "wf",
    "tap",
    "bold",
    "awf",
    "awf-b",
    "awf-c",
    "awf-d",
    "awf-e",
    "af",
    "maf",
    "static-steal",
    "binlpt",
    "greedy",
    "auto",
    "auto,keel",
    "auto,expert",
    "auto,exhaustive",
    "auto,random",
];

/// The workloads `keel bench loops` runs by default.
pub const WORKLOADS: [&str; 2] = ["mandelbrot", "lavamd"];

/// One schedule on one workload.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The schedule text given to the loop.
    pub schedule: String,
    /// Median T_par over the rounds, seconds.
    pub t_par: Option<f64>,
    /// Fastest and slowest instance, seconds.
    pub t_par_range: Option<(f64, f64)>,
    /// The headline: the median over rounds of T_par / (T_serial / P),
    /// T_serial the sequential reference of the same round. The JSON has
    /// no `ratio_to_ideal` (T_par over a reference measured apart from
    /// the rows): a machine phase during such a reference moves every
    /// row, below its ideal too.
    pub ratio_to_ideal_same_round: Option<f64>,
    /// The median over rounds of T_par over the fastest schedule of the
    /// same round: at least 1 by construction.
    pub ratio_to_best: Option<f64>,
    /// [`Row::ratio_to_ideal_same_round`] is below
    /// [`super::IDEAL_TOLERANCE`]: impossible by construction (a noisy
    /// reference in most rounds, or the timer), not a fast run.
    pub below_ideal: bool,
    /// LIB of the last instance, percent, from the loop record.
    pub lib_percent: Option<f64>,
    /// Chunks of the last instance, from the loop record.
    pub chunks: Option<u64>,
    /// Why the schedule did not run.
    pub error: Option<String>,
}

/// Every schedule on one workload.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadResult {
    /// The workload's full spec.
    pub spec: String,
    /// Iterations of the loop.
    pub iterations: usize,
    /// Total work, in `unit`s.
    pub total_work: u64,
    /// The unit of work.
    pub unit: String,
    /// Median sequential time of the body over the rounds, seconds.
    pub t_serial: f64,
    /// Fastest and slowest sequential run, seconds.
    pub t_serial_range: (f64, f64),
    /// T_serial / P, seconds: the scale of the rows' times. The rows'
    /// ratios divide by each round's own reference, not by this median.
    pub ideal: f64,
    /// One row per schedule.
    pub rows: Vec<Row>,
}

/// The whole run.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// Threads of the global pool.
    pub threads: usize,
    /// Interleaved rounds: instances per schedule, and sequential runs.
    pub reps: usize,
    /// The chunk parameter given to every schedule, if any.
    pub chunk: Option<u64>,
    /// One result per workload.
    pub workloads: Vec<WorkloadResult>,
    /// The machine's background load over the run (`None` without `/proc`).
    pub background_load: Option<BackgroundLoad>,
}

/// One sequential run of the whole loop, seconds.
pub fn serial_time(w: &dyn LoopWorkload) -> f64 {
    let t = Instant::now();
    for i in 0..w.iterations() {
        black_box(w.run(i));
    }
    t.elapsed().as_secs_f64()
}

/// One schedule's instances across the rounds.
struct Entry {
    schedule: String,
    parsed: Result<keel::Schedule, String>,
    id: String,
    times: Vec<f64>,
    last: Option<keel::loops::LoopId>,
}

impl Entry {
    fn new(w: &dyn LoopWorkload, schedule: &str) -> Entry {
        Entry {
            schedule: schedule.to_string(),
            parsed: schedule
                .parse()
                .map_err(|e| keel::LoopError::from(e).to_string()),
            // One loop identity per workload and schedule, so that adaptive
            // and selecting schedules see only their own history across
            // the rounds.
            id: format!("keel bench loops/{}/{schedule}", w.spec()),
            times: Vec::new(),
            last: None,
        }
    }

    /// One instance of the loop on the global pool; a failure ends the
    /// schedule's rounds with its error.
    fn run_once(&mut self, w: &dyn LoopWorkload, hints: &[f64], chunk: Option<u64>) {
        let Ok(parsed) = &self.parsed else { return };
        let mut l = keel::parallel(0..w.iterations())
            .schedule(parsed.clone())
            .id(self.id.clone())
            .workload(hints)
            // Timed and its LIB read from the record: recorded.
            .recorded();
        if let Some(k) = chunk {
            l = l.chunk(k);
        }
        match l.try_for_each(|i| {
            black_box(w.run(i));
        }) {
            Ok(summary) => {
                // A recorded instance always has its T_par.
                self.times.push(summary.t_par.unwrap_or(f64::NAN));
                self.last = Some(summary.id);
            }
            Err(e) => self.parsed = Err(e.to_string()),
        }
    }

    /// The row, with the ratios [`rounds::ratios`] computed.
    fn row(self, ratios: rounds::Ratios) -> Row {
        let mut row = Row {
            schedule: self.schedule,
            t_par: None,
            t_par_range: None,
            ratio_to_ideal_same_round: None,
            ratio_to_best: None,
            below_ideal: false,
            lib_percent: None,
            chunks: None,
            error: self.parsed.err(),
        };
        if row.error.is_some() {
            return row;
        }
        let mut times = self.times;
        row.t_par_range = range(&times);
        row.t_par = (!times.is_empty()).then(|| median(&mut times));
        row.ratio_to_ideal_same_round = ratios.to_ideal_same_round;
        row.ratio_to_best = ratios.to_best;
        row.below_ideal = ratios.to_ideal_same_round.is_some_and(super::below_ideal);
        if let Some(record) = self.last.and_then(keel::loops::record) {
            row.lib_percent = Some(record.last.lib_percent);
            row.chunks = Some(record.last.total_chunks());
        }
        row
    }
}

/// The smallest and largest of `times`, `None` for none.
fn range(times: &[f64]) -> Option<(f64, f64)> {
    (!times.is_empty()).then(|| {
        times
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &t| {
                (lo.min(t), hi.max(t))
            })
    })
}

/// Runs `schedules` on `w` in `reps` interleaved rounds (see the module
/// documentation); `progress` hears one [`Progress::Step`] per entry of
/// each round: the sequential reference and every schedule.
pub fn bench_workload(
    w: &dyn LoopWorkload,
    schedules: &[String],
    chunk: Option<u64>,
    reps: usize,
    threads: usize,
    progress: &mut dyn FnMut(Progress<'_>),
) -> WorkloadResult {
    let spec = w.spec();
    // The bar's label: the workload's name, not its full spec, so that it
    // fits on one line.
    let name = spec.split(':').next().unwrap_or(&spec).to_string();
    // The workload-aware schedules (binlpt, greedy) map iterations by these
    // hints; the others ignore them. They are the model's exact work, the
    // best estimate a user could give (BinLPT's premise).
    let hints: Vec<f64> = w.work().iter().map(|&u| u as f64).collect();
    let mut entries: Vec<Entry> = schedules.iter().map(|s| Entry::new(w, s)).collect();
    let rounds = reps.max(1);
    let mut serial = Vec::with_capacity(rounds);
    for round in 0..rounds {
        for e in rounds::round_order(round, entries.len() + 1) {
            let label = match e {
                0 => {
                    serial.push(serial_time(w));
                    "T_serial"
                }
                _ => {
                    let entry = &mut entries[e - 1];
                    entry.run_once(w, &hints, chunk);
                    &entry.schedule
                }
            };
            progress(Progress::Step(&format!(
                "{name} {}/{rounds}: {label}",
                round + 1
            )));
        }
    }
    let ratios = {
        let times: Vec<Option<&[f64]>> = entries
            .iter()
            .map(|e| e.parsed.is_ok().then_some(e.times.as_slice()))
            .collect();
        rounds::ratios(&serial, &times, threads)
    };
    let t_serial_range = range(&serial).unwrap_or((0.0, 0.0));
    let t_serial = median(&mut serial);
    WorkloadResult {
        spec: w.spec(),
        iterations: w.iterations(),
        total_work: w.total_work(),
        unit: w.unit().to_string(),
        t_serial,
        t_serial_range,
        ideal: t_serial / threads.max(1) as f64,
        rows: entries
            .into_iter()
            .zip(ratios)
            .map(|(e, r)| e.row(r))
            .collect(),
    }
}

/// The threads of the global pool.
pub fn global_threads() -> Result<usize> {
    Ok(keel::pool::global()
        .map_err(|e| ExperimentError::Invalid(format!("cannot start Keel's global pool: {e}")))?
        .threads())
}

/// Every schedule on every workload, after checking the configuration and
/// building every workload (a bad spec fails before any work). The loops
/// run on Keel's global pool and their rows read the loops' records back:
/// run one bench at a time in a process, or the rows mix. `progress` hears
/// the number of steps first, then one step per round of each schedule and
/// of the sequential reference, on every workload.
pub fn run(config: &LoopsConfig, progress: &mut dyn FnMut(Progress<'_>)) -> Result<BenchReport> {
    if config.reps == 0 {
        return Err(ExperimentError::Invalid("--reps must be at least 1".into()));
    }
    if config.chunk == Some(0) {
        return Err(ExperimentError::Invalid(
            "--chunk must be at least 1".into(),
        ));
    }
    let specs: Vec<String> = if config.workloads.is_empty() {
        WORKLOADS.iter().map(|s| s.to_string()).collect()
    } else {
        config.workloads.clone()
    };
    // Build every workload first, so that a bad spec fails before any work.
    let workloads: Vec<Box<dyn LoopWorkload>> = specs
        .iter()
        .map(|s| loop_workload(s))
        .collect::<Result<_, _>>()?;
    let schedules: Vec<String> = if config.schedules.is_empty() {
        SCHEDULES.iter().map(|s| s.to_string()).collect()
    } else {
        config.schedules.clone()
    };
    // And every schedule: a spec that does not parse is the caller's
    // mistake, refused before any work rather than reported as a row.
    for s in &schedules {
        if let Err(e) = s.parse::<keel::Schedule>() {
            return Err(ExperimentError::Invalid(format!("--schedule: {e}")));
        }
    }
    let threads = global_threads()?;
    progress(Progress::Total(
        (workloads.len() * (schedules.len() + 1) * config.reps) as u64,
    ));
    let meter = LoadMeter::start();
    let workloads = workloads
        .iter()
        .map(|w| {
            bench_workload(
                w.as_ref(),
                &schedules,
                config.chunk,
                config.reps,
                threads,
                progress,
            )
        })
        .collect();
    Ok(BenchReport {
        threads,
        reps: config.reps,
        chunk: config.chunk,
        workloads,
        background_load: meter.finish(),
    })
}
