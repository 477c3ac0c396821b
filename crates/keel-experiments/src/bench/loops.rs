//! `keel bench loops`: the loop workloads of `keel-workloads` run with every
//! loop schedule on the global pool, against their own sequential time.
//!
//! For each workload the body is first run sequentially (`T_serial`, the
//! median of `reps` runs); then each schedule runs `reps` instances of the
//! same loop, and the row shows the median `T_par`, its ratio to the ideal
//! `T_serial / P` (1.00 is perfect; Keel's `P` is the global pool's, from
//! `KEEL_NUM_THREADS` or the cores), the LIB of the last instance from the
//! loop's record, and the chunks it ran. A schedule that does not parse is
//! refused before any work ([`ExperimentError::Invalid`]); one that fails
//! while running is a row with its error, and the others still run.
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
    /// Instances per schedule (and sequential runs); medians are kept.
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
    /// Median T_par over the instances, seconds.
    pub t_par: Option<f64>,
    /// Fastest and slowest instance, seconds.
    pub t_par_range: Option<(f64, f64)>,
    /// Median T_par / (T_serial / P).
    pub ratio_to_ideal: Option<f64>,
    /// The ratio is below [`super::IDEAL_TOLERANCE`]: impossible by
    /// construction (a noisy `T_serial` or the timer), not a fast run.
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
    /// Median sequential time of the body, seconds.
    pub t_serial: f64,
    /// T_serial / P, seconds.
    pub ideal: f64,
    /// One row per schedule.
    pub rows: Vec<Row>,
}

/// The whole run.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// Threads of the global pool.
    pub threads: usize,
    /// Instances per schedule (and sequential runs).
    pub reps: usize,
    /// The chunk parameter given to every schedule, if any.
    pub chunk: Option<u64>,
    /// One result per workload.
    pub workloads: Vec<WorkloadResult>,
    /// The machine's background load over the run (`None` without `/proc`).
    pub background_load: Option<BackgroundLoad>,
}

/// Sequential time of the whole loop: the median of `reps` runs.
pub fn serial_time(w: &dyn LoopWorkload, reps: usize) -> f64 {
    let mut times: Vec<f64> = (0..reps.max(1))
        .map(|_| {
            let t = Instant::now();
            for i in 0..w.iterations() {
                black_box(w.run(i));
            }
            t.elapsed().as_secs_f64()
        })
        .collect();
    median(&mut times)
}

/// Runs `schedule` for `reps` instances of `w`'s loop on the global pool.
pub fn run_schedule(
    w: &dyn LoopWorkload,
    schedule: &str,
    chunk: Option<u64>,
    reps: usize,
    ideal: f64,
) -> Row {
    let mut row = Row {
        schedule: schedule.to_string(),
        t_par: None,
        t_par_range: None,
        ratio_to_ideal: None,
        below_ideal: false,
        lib_percent: None,
        chunks: None,
        error: None,
    };
    // One loop identity per workload and schedule, so that adaptive and
    // selecting schedules see only their own history.
    let id = format!("keel bench loops/{}/{schedule}", w.spec());
    // The workload-aware schedules (binlpt, greedy) map iterations by these
    // hints; the others ignore them. They are the model's exact work, the
    // best estimate a user could give (BinLPT's premise).
    let hints: Vec<f64> = w.work().iter().map(|&u| u as f64).collect();
    let parsed: keel::Schedule = match schedule.parse() {
        Ok(parsed) => parsed,
        Err(e) => {
            row.error = Some(keel::LoopError::from(e).to_string());
            return row;
        }
    };
    let mut times = Vec::with_capacity(reps);
    let mut last = None;
    for _ in 0..reps.max(1) {
        let mut l = keel::parallel(0..w.iterations())
            .schedule(parsed.clone())
            .id(id.clone())
            .workload(&hints);
        if let Some(k) = chunk {
            l = l.chunk(k);
        }
        match l.try_for_each(|i| {
            black_box(w.run(i));
        }) {
            Ok(summary) => {
                times.push(summary.t_par);
                last = Some(summary.id);
            }
            Err(e) => {
                row.error = Some(e.to_string());
                return row;
            }
        }
    }
    let (lo, hi) = times.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &t| {
        (lo.min(t), hi.max(t))
    });
    let t = median(&mut times);
    row.t_par = Some(t);
    row.t_par_range = Some((lo, hi));
    row.ratio_to_ideal = (ideal > 0.0).then(|| t / ideal);
    row.below_ideal = row.ratio_to_ideal.is_some_and(super::below_ideal);
    if let Some(record) = last.and_then(keel::loops::record) {
        row.lib_percent = Some(record.last.lib_percent);
        row.chunks = Some(record.last.total_chunks());
    }
    row
}

/// Runs `schedules` on `w`; `progress` hears one [`Progress::Step`] per
/// schedule and one for the sequential runs.
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
    let t_serial = serial_time(w, reps);
    progress(Progress::Step(&format!("{name}: T_serial")));
    let ideal = t_serial / threads as f64;
    WorkloadResult {
        spec: w.spec(),
        iterations: w.iterations(),
        total_work: w.total_work(),
        unit: w.unit().to_string(),
        t_serial,
        ideal,
        rows: schedules
            .iter()
            .map(|s| {
                let row = run_schedule(w, s, chunk, reps, ideal);
                progress(Progress::Step(&format!("{name}: {s}")));
                row
            })
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
/// the number of steps first, then one step per schedule and workload.
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
        (workloads.len() * (schedules.len() + 1)) as u64,
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
