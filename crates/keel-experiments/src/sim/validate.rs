//! `keel sim validate`: the simulator against the thread runtime, where both
//! run on this machine. For each loop workload (Mandelbrot and the
//! exponential, LavaMD-like loop by default) and each loop schedule:
//!
//! 0. **Warm-up.** The kernel runs sequentially for a second first: this
//!    machine runs a kernel markedly slower for its first fraction of a
//!    second, which would otherwise land on whatever is measured first.
//! 1. **Costs, sequentially.** Every iteration of the body is timed alone on
//!    this thread, `--reps` passes, and its median (less the clock's own
//!    cost) is its cost in seconds: a sequential per-iteration trace of the
//!    kernel. Nothing is fitted to the parallel runs being validated.
//! 2. **Measured.** The schedule runs `--reps` instances of the loop on a
//!    `--threads` pool; `T_par` (fork to join, the runtime's own figure) is
//!    the median. Each repeat makes one sequential pass of step 1 and then
//!    one instance of every schedule, so that a slow phase of the machine
//!    spreads over the costs and every schedule alike.
//! 3. **Simulated.** The same number of instances, with the same workload
//!    hints for `binlpt`/`greedy`, on `--threads` workers of speed 1 with
//!    the committed calibration (or `--calibration`): instance `r` on the
//!    costs of repeat `r`'s sequential pass. The machine's speed drifts by
//!    up to ±25 % over seconds (a shared VM), so the error is the median of
//!    the per-repeat errors, each instance against the pass taken next to
//!    it; the simulation on the per-iteration medians of all passes, and
//!    its error against the median measurement, are printed beside it.
//!
//! Reported: simulated and measured makespans and the % error per schedule,
//! Kendall's τ between the two rankings, and whether every pair of
//! schedules whose measured times are more than 5 % apart is ranked alike.
//!
//! ```
//! use keel_experiments::sim::validate::{self, ValidateConfig};
//! let none = ValidateConfig { reps: 0, ..ValidateConfig::default() };
//! let e = validate::run(&none, &mut |_| {}).unwrap_err();
//! assert_eq!(e.to_string(), "--reps and --threads must be at least 1");
//! ```

use std::hint::black_box;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Instant;

use crate::evaluation::stats::kendall_tau;
use keel::pool::ThreadPool;
use keel_policy::dls::registry;
use keel_policy::stats::median;
use keel_sim::loops::{Call, IterationCosts, Machine, Stepper};
use keel_workloads::loops::{loop_workload, LoopWorkload};
use serde::Serialize;

use super::{load_calibration, Progress};
use crate::error::{ExperimentError, Result};

/// The validation's accuracy goal: the simulator's error against the
/// runtime's measured times, percent.
pub const ERROR_GOAL_PERCENT: f64 = 10.0;

/// The validation's ranking goal: the least Kendall τ between the
/// simulated and the measured ranking of the schedules.
pub const TAU_GOAL: f64 = 0.8;

/// Pairs further apart than this (relative) must be ranked alike.
pub const PAIR_GAP: f64 = 0.05;

/// Seconds of sequential warm-up before anything is measured.
pub const WARM_UP_SECONDS: f64 = 1.0;

/// The workloads validated by default.
pub const WORKLOADS: [&str; 2] = ["mandelbrot", "lavamd"];

/// What to validate.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidateConfig {
    /// Loop workload specs (empty: [`WORKLOADS`] with their defaults).
    pub workloads: Vec<String>,
    /// Schedules (empty: [`default_schedules`]).
    pub schedules: Vec<String>,
    /// Threads of the pool and workers of the simulation.
    pub threads: usize,
    /// Instances per schedule, and sequential timing passes (medians kept).
    pub reps: usize,
    /// A calibration file (`None`: the committed one).
    pub calibration: Option<PathBuf>,
}

impl Default for ValidateConfig {
    /// Both workloads, every schedule, 2 threads, 7 repeats.
    fn default() -> Self {
        ValidateConfig {
            workloads: Vec::new(),
            schedules: Vec::new(),
            threads: 2,
            reps: 7,
            calibration: None,
        }
    }
}

/// One schedule on one workload.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The schedule.
    pub schedule: String,
    /// Median measured T_par, seconds.
    pub measured: f64,
    /// Median simulated T_par, instance r on repeat r's sequential costs.
    pub simulated: f64,
    /// The median over repeats of (simulated_r / measured_r − 1) · 100:
    /// each instance against the sequential pass taken next to it, which
    /// takes out the machine's drift between repeats.
    pub error_percent: f64,
    /// Median simulated T_par on the per-iteration medians of all passes.
    pub unpaired_simulated: f64,
    /// (unpaired_simulated − measured) / measured · 100.
    pub unpaired_error_percent: f64,
}

/// One workload's comparison.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadValidation {
    /// The workload's full spec.
    pub spec: String,
    /// Iterations.
    pub iterations: usize,
    /// Σ of the per-iteration medians: the sequential time the costs imply.
    pub sequential_from_costs: f64,
    /// One per schedule.
    pub rows: Vec<Row>,
    /// Kendall's τ between the measured and simulated rankings.
    pub kendall_tau: f64,
    /// Pairs more than 5 % apart in the measurement.
    pub distinct_pairs: usize,
    /// Of those, the pairs the simulation ranks the other way.
    pub misranked_pairs: Vec<(String, String)>,
    /// Largest |error|, percent.
    pub max_abs_error_percent: f64,
    /// Every |error| ≤ 10 %.
    pub errors_within_goal: bool,
    /// τ ≥ 0.8 or every distinct pair ranked alike.
    pub ranking_goal_met: bool,
}

/// The report.
#[derive(Debug, Clone, Serialize)]
pub struct ValidateReport {
    /// Threads and workers.
    pub threads: usize,
    /// Instances and passes.
    pub reps: usize,
    /// The calibration used: its date and model.
    pub calibration_date: String,
    /// The overhead model used.
    pub overhead: keel_sim::OverheadModel,
    /// One per workload.
    pub workloads: Vec<WorkloadValidation>,
}

fn sim_error(e: impl std::error::Error + Send + Sync + 'static) -> ExperimentError {
    ExperimentError::sim("sim", e)
}

/// Pairs whose measured times differ by more than [`PAIR_GAP`], and those
/// the simulation orders the other way.
pub fn pair_check(rows: &[Row]) -> (usize, Vec<(String, String)>) {
    let mut distinct = 0;
    let mut wrong = Vec::new();
    for (i, a) in rows.iter().enumerate() {
        for b in &rows[i + 1..] {
            let (lo, hi) = (a.measured.min(b.measured), a.measured.max(b.measured));
            if hi <= lo * (1.0 + PAIR_GAP) {
                continue;
            }
            distinct += 1;
            if (a.measured < b.measured) != (a.simulated < b.simulated) {
                wrong.push((a.schedule.clone(), b.schedule.clone()));
            }
        }
    }
    (distinct, wrong)
}

/// Every canonical registry schedule (aliases `dynamic`, `guided` left out).
pub fn default_schedules() -> Vec<String> {
    registry()
        .names()
        .into_iter()
        .filter(|n| n != "dynamic" && n != "guided")
        .collect()
}

/// The cost of reading the clock twice, to subtract from each timing.
fn clock_cost() -> f64 {
    let mut empty: Vec<f64> = (0..1001)
        .map(|_| {
            let t = Instant::now();
            t.elapsed().as_secs_f64()
        })
        .collect();
    median(&mut empty)
}

/// One sequential pass over the loop, every iteration timed alone; pushes
/// each time (less the clock's cost) onto its iteration's samples.
pub fn sequential_pass(w: &dyn LoopWorkload, clock: f64, samples: &mut [Vec<f64>]) {
    for (i, s) in samples.iter_mut().enumerate() {
        let t = Instant::now();
        black_box(w.run(i));
        s.push((t.elapsed().as_secs_f64() - clock).max(0.0));
    }
}

/// Runs the kernel sequentially for at least [`WARM_UP_SECONDS`] (two
/// passes at least): this machine runs a kernel markedly slower for its
/// first fraction of a second (up to 40 % on LavaMD), and whatever came
/// first would carry it.
fn warm_up(w: &dyn LoopWorkload) {
    let started = Instant::now();
    let mut passes = 0;
    while passes < 2 || started.elapsed().as_secs_f64() < WARM_UP_SECONDS {
        for i in 0..w.iterations() {
            black_box(w.run(i));
        }
        passes += 1;
    }
}

fn validate_workload(
    w: &dyn LoopWorkload,
    schedules: &[String],
    config: &ValidateConfig,
    machine: &Machine,
    pool: &ThreadPool,
    tick: &mut dyn FnMut(&str),
) -> Result<WorkloadValidation> {
    let spec = w.spec();
    tick(&format!("{spec}: warm-up"));
    warm_up(w);
    // binlpt and greedy map by these hints in both contexts: the model's
    // exact work, as `keel bench loops` passes them.
    let hints: Vec<f64> = w.work().iter().map(|&u| u as f64).collect();
    let ids: Vec<String> = schedules
        .iter()
        .map(|s| format!("keel sim validate/{spec}/{s}"))
        .collect();
    let parsed = schedules
        .iter()
        .map(|s| {
            s.parse::<keel::Schedule>()
                .map_err(|e| ExperimentError::Invalid(format!("{s}: {}", keel::LoopError::from(e))))
        })
        .collect::<Result<Vec<_>, _>>()?;
    // One untimed parallel instance warms the pool.
    pool.parallel(0..w.iterations())
        .schedule(
            keel::Schedule::from_str("static")
                .map_err(|e| ExperimentError::Invalid(e.to_string()))?,
        )
        .id("keel sim validate/warm-up")
        .try_for_each(|i| {
            black_box(w.run(i));
        })
        .map_err(|e| ExperimentError::Invalid(e.to_string()))?;
    // Each repeat: one sequential timing pass, then one instance of every
    // schedule, so that the machine's drifts fall on the costs and on the
    // measurements alike (the costs still come from sequential runs only).
    let clock = clock_cost();
    let mut samples = vec![Vec::with_capacity(config.reps); w.iterations()];
    let mut measured = vec![Vec::with_capacity(config.reps); schedules.len()];
    for rep in 0..config.reps {
        tick(&format!(
            "{spec}: sequential pass {}/{}",
            rep + 1,
            config.reps
        ));
        sequential_pass(w, clock, &mut samples);
        for (k, schedule) in schedules.iter().enumerate() {
            tick(&format!("{spec}: {schedule} ({}/{})", rep + 1, config.reps));
            let summary = pool
                .parallel(0..w.iterations())
                .schedule(parsed[k].clone())
                .id(ids[k].clone())
                .workload(&hints)
                .recorded()
                .try_for_each(|i| {
                    black_box(w.run(i));
                })
                .map_err(|e| ExperimentError::Invalid(format!("{schedule}: {e}")))?;
            // A recorded instance always has its T_par.
            measured[k].push(summary.t_par.unwrap_or(f64::NAN));
        }
    }
    // Repeat r's own costs (its sequential pass) for the paired figures,
    // and the per-iteration medians over all passes for the plain ones.
    let per_repeat = (0..config.reps)
        .map(|r| IterationCosts::new(&samples.iter().map(|s| s[r]).collect::<Vec<f64>>()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(sim_error)?;
    let costs: Vec<f64> = samples.iter_mut().map(|s| median(s)).collect();
    let sequential_from_costs = costs.iter().sum();
    let costs = IterationCosts::new(&costs).map_err(sim_error)?;
    let call = Call {
        chunk: None,
        hints: Some(&hints),
    };

    let mut rows = Vec::with_capacity(schedules.len());
    for (schedule, times) in schedules.iter().zip(&measured) {
        // Instance r of the loop on repeat r's costs, one stepper, so that
        // adaptive schedules see the same history as on threads.
        let mut paired = Stepper::new(machine.clone(), schedule, 1).map_err(sim_error)?;
        let mut plain = Stepper::new(machine.clone(), schedule, 1).map_err(sim_error)?;
        let mut simulated = Vec::with_capacity(config.reps);
        let mut on_median_costs = Vec::with_capacity(config.reps);
        let mut ratios = Vec::with_capacity(config.reps);
        for (r, c) in per_repeat.iter().enumerate() {
            let s = paired
                .run_with("validate", c, call)
                .map_err(sim_error)?
                .t_par;
            simulated.push(s);
            ratios.push(s / times[r]);
            on_median_costs.push(
                plain
                    .run_with("validate", &costs, call)
                    .map_err(sim_error)?
                    .t_par,
            );
        }
        let m = median(&mut times.clone());
        let unpaired = median(&mut on_median_costs);
        rows.push(Row {
            schedule: schedule.clone(),
            measured: m,
            simulated: median(&mut simulated),
            error_percent: (median(&mut ratios) - 1.0) * 100.0,
            unpaired_simulated: unpaired,
            unpaired_error_percent: (unpaired - m) / m * 100.0,
        });
    }
    let measured_times: Vec<f64> = rows.iter().map(|r| r.measured).collect();
    let simulated_times: Vec<f64> = rows.iter().map(|r| r.simulated).collect();
    let kendall_tau = kendall_tau(&measured_times, &simulated_times);
    let (distinct_pairs, misranked_pairs) = pair_check(&rows);
    let max_abs_error_percent = rows
        .iter()
        .map(|r| r.error_percent.abs())
        .fold(0.0, f64::max);
    Ok(WorkloadValidation {
        spec,
        iterations: w.iterations(),
        sequential_from_costs,
        kendall_tau,
        distinct_pairs,
        ranking_goal_met: kendall_tau >= TAU_GOAL || misranked_pairs.is_empty(),
        misranked_pairs,
        errors_within_goal: max_abs_error_percent <= ERROR_GOAL_PERCENT,
        max_abs_error_percent,
        rows,
    })
}

/// Every workload under every schedule, measured on a pool and simulated;
/// `progress` hears the number of steps, then each with what it was.
pub fn run(
    config: &ValidateConfig,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<ValidateReport> {
    if config.reps == 0 || config.threads == 0 {
        return Err(ExperimentError::Invalid(
            "--reps and --threads must be at least 1".into(),
        ));
    }
    let calibration = load_calibration(config.calibration.as_deref())?;
    let specs: Vec<String> = if config.workloads.is_empty() {
        WORKLOADS.iter().map(|s| s.to_string()).collect()
    } else {
        config.workloads.clone()
    };
    let workloads: Vec<Box<dyn LoopWorkload>> = specs
        .iter()
        .map(|s| loop_workload(s))
        .collect::<Result<_, _>>()?;
    let schedules = if config.schedules.is_empty() {
        default_schedules()
    } else {
        config.schedules.clone()
    };
    // Every schedule must build before anything runs.
    for s in &schedules {
        keel_policy::select::parse_setting(s)?;
    }
    let machine = Machine::uniform(config.threads, calibration.overhead).map_err(sim_error)?;
    let pool = ThreadPool::builder()
        .threads(config.threads)
        .build()
        .map_err(|e| ExperimentError::Invalid(format!("cannot start the pool: {e}")))?;
    let steps = workloads.len() * (1 + config.reps * (1 + schedules.len()));
    progress(Progress::Total(steps as u64));
    let mut tick = |msg: &str| progress(Progress::Step(msg));
    let results = workloads
        .iter()
        .map(|w| validate_workload(w.as_ref(), &schedules, config, &machine, &pool, &mut tick))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ValidateReport {
        threads: config.threads,
        reps: config.reps,
        calibration_date: calibration.date.clone(),
        overhead: calibration.overhead,
        workloads: results,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_pairs_far_apart_must_agree() {
        let row = |s: &str, m: f64, sim: f64| Row {
            schedule: s.into(),
            measured: m,
            simulated: sim,
            error_percent: 0.0,
            unpaired_simulated: sim,
            unpaired_error_percent: 0.0,
        };
        // a/b are 2 % apart (free), a/c and b/c are far apart.
        let rows = [row("a", 1.0, 1.1), row("b", 1.02, 1.0), row("c", 2.0, 0.5)];
        let (distinct, wrong) = pair_check(&rows);
        assert_eq!(distinct, 2);
        assert_eq!(wrong.len(), 2);
    }
}
