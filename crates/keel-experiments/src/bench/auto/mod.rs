//! `keel bench auto`: the Auto4OMP evaluation (paper §4, Table 3) on this
//! machine. Each time-stepping workload of `keel_workloads::steps` runs
//! under every portfolio schedule, with its default chunk and with the
//! expert chunk, and under each selection method, `reps` times. Within a
//! repeat the configurations take turns step by step (each keeps its own
//! loop ids, so its schedule state and selection evolve as in a run of its
//! own): on a shared machine whose speed drifts over seconds, instance `k`
//! of every configuration then runs within moments of the others. From the
//! fixed runs come **Oracle** (the best fixed configuration *per loop
//! instance*, from the medians of the repeats) and **ManualBest** (the best
//! fixed schedule *per loop* with the default chunk, found after the fact).
//! Every configuration is reported as % degradation relative to Oracle.
//! Beside it, two readings the goals need: **Oracle held out**, whose
//! excess over Oracle is the luck of taking, per instance, the smallest of
//! many noisy medians; and `auto,keel` against each Auto4OMP method with
//! the 95 % interval of their paired per-repeat differences, so that "ahead
//! where they differ by more than noise" is read off, not guessed.
//!
//! Per workload, `auto,keel` is also set loop by loop against each loop's
//! best fixed configuration (over both chunk modes; ManualBest's
//! default-chunk choice beside it), with two goals: the whole program
//! within [`PROGRAM_GOAL`] of the sum of the per-loop bests, and every loop
//! within [`LOOP_GOAL`] of its own ([`PerLoopGoals`]).
//!
//! Workloads come in named sets ([`SETS`]): `default`, the five the bench
//! was built on, and `characters`, loops of characters the selection was
//! not built on (a per-element memory stream, a triangular loop, a
//! wavefront of growing and shrinking instances, many short instances,
//! power-law SpMV rows, phase-change, and three loops per step that each
//! want their own schedule), each with a `--quick` form.
//!
//! Times are taken around each whole loop call, so the selection's own
//! bookkeeping (choosing before the fork, observing after the join) counts
//! against the methods. Loop ids are unique per configuration and repeat,
//! so every run starts with fresh records and selection state.
//!
//! ```
//! use keel_experiments::bench::auto::{self, AutoConfig};
//! let none = AutoConfig { reps: Some(0), ..AutoConfig::default() };
//! let e = auto::run(&none, &mut |_| {}).unwrap_err();
//! assert_eq!(e.to_string(), "--reps must be at least 1");
//! ```

mod goals;
mod noise;
mod program;
mod workload;

use keel::policy::select::Run;
use keel_workloads::steps::{stepped_workload, SteppedWorkload};
use serde::Serialize;

use super::loops::global_threads;
use super::{BackgroundLoad, LoadMeter, Progress};
use crate::error::{ExperimentError, Result};

pub use goals::{held_out_best, Goal, LoopVersusBest, PerLoopGoals, LOOP_GOAL, PROGRAM_GOAL};
pub use workload::bench_workload;

/// The workloads the bench runs by default (their pinned defaults).
pub const WORKLOADS: [&str; 5] = [
    "mandelbrot-zoom",
    "lavamd-steps",
    "sphynx",
    "gromacs",
    "phase-change",
];

/// Small versions for `--quick` (and `keel demo`): seconds, not minutes.
pub const QUICK_WORKLOADS: [&str; 2] = [
    "mandelbrot-zoom:width=96,height=64,max-iter=200,steps=16",
    "phase-change:iterations=60000,steps=16,switch=8",
];

/// Workloads of characters `auto` was not built on, with their pinned
/// defaults: about 0.2–1 s per configuration and repeat on two threads
/// (`phase-change` several seconds), so not in the default set.
pub const CHARACTERS: [&str; 7] = [
    "stream",
    "triangular",
    "wavefront",
    "short-balanced",
    "sparse",
    "phase-change",
    "multi-loop",
];

/// [`CHARACTERS`] scaled down for `--quick`: the same shapes, 16 steps.
pub const CHARACTERS_QUICK: [&str; 7] = [
    "stream:elements=200000,steps=16",
    "triangular:iterations=1000,steps=16",
    "wavefront:m=24,steps=16",
    "short-balanced:calls=20,steps=16",
    "sparse:rows=20000,steps=16",
    "phase-change:iterations=60000,steps=16,switch=8",
    "multi-loop:width=48,height=64,max-iter=200,tasks=200,elements=50000,steps=16",
];

/// The named workload sets: name, full workloads, `--quick` workloads.
pub const SETS: [(&str, &[&str], &[&str]); 2] = [
    ("default", &WORKLOADS, &QUICK_WORKLOADS),
    ("characters", &CHARACTERS, &CHARACTERS_QUICK),
];

/// The workloads of the set `name` (`quick`: its small versions); `None`
/// for a name that is not a set.
///
/// ```
/// use keel_experiments::bench::auto::workload_set;
/// assert_eq!(workload_set("characters", false).unwrap()[0], "stream");
/// assert!(workload_set("nope", false).is_none());
/// ```
pub fn workload_set(name: &str, quick: bool) -> Option<&'static [&'static str]> {
    SETS.iter()
        .find(|(n, _, _)| *n == name)
        .map(|&(_, full, small)| if quick { small } else { full })
}

/// The methods, in report order.
pub const METHODS: [&str; 4] = ["auto,keel", "auto,expert", "auto,exhaustive", "auto,random"];

/// `auto,keel` with every instance pinned to plain STATIC: what the
/// selection mechanism costs by itself.
pub const PINNED_STATIC: &str = "auto:method=keel,expert-chunk=0,pin=static";

/// A workload must spread its best and worst fixed schedules by this much
/// (or be balanced by design) to discriminate between schedules.
pub const DISCRIMINATION: f64 = 0.20;

/// One fixed or selecting configuration's outcome.
#[derive(Clone, Debug, Serialize)]
pub struct ConfigResult {
    /// `static`, `static+expert`, `auto,keel`, …
    pub config: String,
    /// Seconds over the whole program: the sum over loop instances of each
    /// instance's median across the repeats (for every configuration,
    /// fixed or selecting, and for Oracle and ManualBest alike).
    pub total: f64,
    /// `(total − Oracle) / Oracle · 100`.
    pub degradation_percent: f64,
}

/// A selection method's outcome on one workload.
#[derive(Clone, Debug, Serialize)]
pub struct MethodResult {
    /// The configuration and its total.
    pub result: ConfigResult,
    /// Every repeat's total, seconds, in increasing order: the spread of a
    /// method's own runs, against which differences between methods are
    /// read. `result.total` is not their median but the sum of the
    /// per-instance medians, as for every other configuration.
    pub repeat_totals: Vec<f64>,
    /// Seconds spent in exploration instances beyond Oracle's time for
    /// them (in the repeat with the median total).
    pub exploration_cost: f64,
    /// Exploration instances (same repeat).
    pub exploration_instances: u64,
    /// Each loop's selection timeline (same repeat).
    pub timelines: Vec<(String, Vec<Run>)>,
    /// Seconds of every loop instance, in program order (same repeat).
    pub instance_times_s: Vec<f64>,
    /// The portfolio index (`keel::policy::dls::AUTO4OMP_PORTFOLIO`) each instance ran,
    /// in program order (same repeat); `None` where no record says.
    pub selected_per_instance: Vec<Option<usize>>,
    /// `auto,keel` against this method (`None` for `auto,keel` itself).
    pub versus_keel: Option<VersusKeel>,
}

/// `auto,keel` against another method on one workload, with the noise of
/// the difference: the two took turns step by step in every repeat, so
/// each repeat gives one paired difference, and their scatter is the noise
/// the goal "ahead where they differ by more than noise" is read against.
#[derive(Clone, Debug, Serialize)]
pub struct VersusKeel {
    /// `(T_keel − T_method) / Oracle · 100` from the two totals of the
    /// table (sums of per-instance medians): negative when `auto,keel` is
    /// faster.
    pub difference_points: f64,
    /// Half-width of the 95 % interval of the mean paired per-repeat
    /// difference (Student's t over the repeats), in the same points;
    /// `None` with a single repeat.
    pub noise_points: Option<f64>,
    /// `ahead`, `behind`, `within noise`, or `no noise estimate`.
    pub verdict: &'static str,
}

/// One workload's report.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadReport {
    /// The workload's full spec.
    pub spec: String,
    /// Loop instances per run.
    pub instances: usize,
    /// Oracle's total, seconds.
    pub oracle: f64,
    /// Oracle held out
    /// ([`evaluation::oracle::held_out_oracle`](crate::evaluation::oracle::held_out_oracle)):
    /// each instance's choice made from the other repeats and timed in the one
    /// left out, seconds; `None` with a single repeat. Its excess over
    /// Oracle is Oracle's luck, a lead no run can repeat.
    pub oracle_held_out: Option<f64>,
    /// Oracle's seconds for every loop instance, in program order.
    pub oracle_instance_times_s: Vec<f64>,
    /// ManualBest's total and its schedule per loop.
    pub manual_best: ConfigResult,
    /// ManualBest's choice per loop name.
    pub manual_best_schedules: Vec<(String, String)>,
    /// Every fixed configuration.
    pub fixed: Vec<ConfigResult>,
    /// Every method.
    pub methods: Vec<MethodResult>,
    /// (worst − best) / best over the default-chunk fixed schedules.
    pub spread: f64,
    /// Balanced by design (exempt from the spread rule).
    pub balanced: bool,
    /// The selection mechanism's own cost: `auto,keel` pinned to STATIC
    /// with the expert chunk off ([`PINNED_STATIC`]: the method decides and
    /// observes every instance, the context times every thread, the record
    /// grows, but every instance runs plain STATIC) over fixed `static`,
    /// the two taking turns step by step in every repeat; the median of the
    /// per-repeat ratios of the totals, minus 1.
    pub mechanism_cost_vs_static: f64,
    /// `auto,keel` loop by loop against each loop's best fixed
    /// configuration, and the goals read from it.
    pub per_loop: PerLoopGoals,
}

/// The whole report.
#[derive(Clone, Debug, Serialize)]
pub struct AutoReport {
    /// Threads of the global pool.
    pub threads: usize,
    /// Repeats of every configuration.
    pub reps: usize,
    /// One per workload.
    pub workloads: Vec<WorkloadReport>,
    /// The machine's background load over the run (`None` without `/proc`).
    pub background_load: Option<BackgroundLoad>,
}

/// What to run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AutoConfig {
    /// Stepped workload specs (empty: [`WORKLOADS`], or
    /// [`QUICK_WORKLOADS`] with `quick`).
    pub workloads: Vec<String>,
    /// Repeats of every configuration (`None`: 3, 1 with `quick`).
    pub reps: Option<usize>,
    /// Two small workloads, one repeat, short timelines.
    pub quick: bool,
}

/// Every workload under every configuration; `progress` hears the number
/// of steps first, then one step per workload's warm-up and per repeat. Like [`super::loops::run`], it runs
/// on Keel's global pool and reads loop records back: one bench at a time
/// in a process.
pub fn run(config: &AutoConfig, progress: &mut dyn FnMut(Progress<'_>)) -> Result<AutoReport> {
    let reps = config.reps.unwrap_or(if config.quick { 1 } else { 3 });
    if reps == 0 {
        return Err(ExperimentError::Invalid("--reps must be at least 1".into()));
    }
    let specs: Vec<String> = match (&config.workloads[..], config.quick) {
        ([], true) => QUICK_WORKLOADS.iter().map(|s| s.to_string()).collect(),
        ([], false) => WORKLOADS.iter().map(|s| s.to_string()).collect(),
        (given, _) => given.to_vec(),
    };
    let workloads: Vec<Box<dyn SteppedWorkload>> = specs
        .iter()
        .map(|s| stepped_workload(s))
        .collect::<Result<_, _>>()?;
    let threads = global_threads()?;
    progress(Progress::Total((workloads.len() * (reps + 1)) as u64));
    let meter = LoadMeter::start();
    let workloads = workloads
        .iter()
        .map(|w| bench_workload(w.as_ref(), reps, threads, progress))
        .collect::<Result<_>>()?;
    Ok(AutoReport {
        threads,
        reps,
        workloads,
        background_load: meter.finish(),
    })
}
