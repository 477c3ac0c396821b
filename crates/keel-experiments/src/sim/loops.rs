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
//!
//! ```
//! use keel_experiments::sim::loops::{self, LoopsConfig};
//! let zero = LoopsConfig { threads: vec![0], ..LoopsConfig::default() };
//! let e = loops::run(&zero, &mut |_| {}).unwrap_err();
//! assert_eq!(e.to_string(), "thread counts must be at least 1");
//! ```

use std::path::PathBuf;

use crate::evaluation::oracle::{degradation_percent, LoopTimes};
use keel_policy::dls::AUTO4OMP_PORTFOLIO;
use keel_policy::select::expert_chunk;
use keel_sim::loops::sphynx_l1::{self, SphynxL1};
use keel_sim::loops::{Call, IterationCosts, Machine, Stepper};
use keel_sim::{Noise, OverheadModel, WorkerModel};
use serde::Serialize;

use super::{load_calibration, Progress};
use crate::error::{ExperimentError, Result};

/// The bathtub's schedules (the paper's Fig. 1: STATIC, SS, GSS).
pub const BATHTUB_SCHEDULES: [&str; 3] = ["static", "dynamic", "guided"];

/// The selection methods, in report order.
pub const METHODS: [&str; 4] = ["auto,keel", "auto,expert", "auto,exhaustive", "auto,random"];

/// The expert chunk counts as "near the bottom" within this factor of the
/// best chunk's time.
pub const NEAR_BOTTOM: f64 = 1.10;

/// The bathtub's worker count (the paper's Fig. 1).
pub const BATHTUB_THREADS: usize = 20;

/// What to run: the pinned SPHYNX-like L1 experiments.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopsConfig {
    /// Worker counts of the selection experiment.
    pub threads: Vec<usize>,
    /// Time steps of the selection experiment (`None`: the pinned 20).
    pub steps: Option<usize>,
    /// Only the bathtub.
    pub bathtub_only: bool,
    /// Coefficient of variation of every chunk's time (normal noise, mean 1).
    pub noise_cv: f64,
    /// Seed of the noise (and of RandomSel's stream).
    pub seed: u64,
    /// A calibration file (`None`: the committed one).
    pub calibration: Option<PathBuf>,
}

impl Default for LoopsConfig {
    /// The command's defaults: P = 20 and 64, every pinned step, no noise,
    /// seed 1, the committed calibration.
    fn default() -> Self {
        LoopsConfig {
            threads: vec![20, 64],
            steps: None,
            bathtub_only: false,
            noise_cv: 0.0,
            seed: 1,
            calibration: None,
        }
    }
}

/// What to run on a user's trace of per-iteration costs.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceConfig {
    /// The CSV/JSON trace (formats in `keel-sim`'s README).
    pub trace: PathBuf,
    /// Schedules (empty: the Auto4OMP portfolio).
    pub schedules: Vec<String>,
    /// Workers.
    pub threads: usize,
    /// Coefficient of variation of every chunk's time.
    pub noise_cv: f64,
    /// Seed of the noise.
    pub seed: u64,
    /// A calibration file (`None`: the committed one).
    pub calibration: Option<PathBuf>,
}

/// One chunk size of the bathtub.
#[derive(Debug, Clone, Serialize)]
pub struct BathtubPoint {
    /// The chunk parameter.
    pub chunk: u64,
    /// Simulated T_par per schedule, seconds, in [`BATHTUB_SCHEDULES`] order.
    pub t_par: Vec<f64>,
}

/// The bathtub experiment.
#[derive(Debug, Clone, Serialize)]
pub struct Bathtub {
    /// Workers.
    pub threads: usize,
    /// The expert chunk for N and P.
    pub expert_chunk: u64,
    /// Points, largest chunk first.
    pub points: Vec<BathtubPoint>,
    /// Per schedule: the best chunk, its time, the expert chunk's time over it.
    pub best: Vec<(String, u64, f64, f64)>,
}

/// One configuration's outcome against Oracle.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigRow {
    /// `static`, `static+expert`, `auto,keel`, …
    pub config: String,
    /// Simulated seconds over every instance.
    pub total: f64,
    /// (total − Oracle)/Oracle · 100.
    pub degradation_percent: f64,
    /// For methods: the schedule chosen at the last instance.
    pub last_choice: Option<String>,
    /// For methods: instances spent exploring.
    pub exploration_instances: Option<u64>,
}

/// Selection at one P.
#[derive(Debug, Clone, Serialize)]
pub struct Selection {
    /// Workers.
    pub threads: usize,
    /// Instances (time steps).
    pub instances: usize,
    /// Oracle's total.
    pub oracle: f64,
    /// ManualBest: its schedule and total.
    pub manual_best: ConfigRow,
    /// Every fixed configuration.
    pub fixed: Vec<ConfigRow>,
    /// Every method.
    pub methods: Vec<ConfigRow>,
}

/// The report.
#[derive(Debug, Clone, Serialize)]
pub struct LoopsReport {
    /// The workload's spec.
    pub workload: String,
    /// Iterations.
    pub iterations: usize,
    /// Seconds per spin unit used.
    pub spin_unit_seconds: f64,
    /// The overhead model used.
    pub overhead: OverheadModel,
    /// Calibration date.
    pub calibration_date: String,
    /// Fig. 1.
    pub bathtub: Bathtub,
    /// Table 3, per P.
    pub selection: Vec<Selection>,
}

/// One schedule over a user trace.
#[derive(Debug, Clone, Serialize)]
pub struct TraceRow {
    /// The schedule spec.
    pub schedule: String,
    /// Simulated seconds over every instance.
    pub total: f64,
    /// Mean load imbalance (LIB %) over the instances.
    pub mean_lib_percent: f64,
    /// Chunks over every instance.
    pub chunks: u64,
}

/// A user trace under each schedule.
#[derive(Debug, Clone, Serialize)]
pub struct TraceReport {
    /// Loop instances in the trace.
    pub instances: usize,
    /// Iterations in the trace.
    pub iterations: usize,
    /// One row per schedule, in the order asked.
    pub rows: Vec<TraceRow>,
}

fn sim_error(e: impl std::error::Error + Send + Sync + 'static) -> ExperimentError {
    ExperimentError::sim("sim", e)
}

/// Refuses a zero worker count or a noise that is not a finite number ≥ 0,
/// before any work.
pub fn check(threads: &[usize], noise_cv: f64) -> Result<()> {
    if threads.contains(&0) {
        return Err(ExperimentError::Invalid(
            "thread counts must be at least 1".into(),
        ));
    }
    if !(noise_cv.is_finite() && noise_cv >= 0.0) {
        return Err(ExperimentError::Invalid(
            "--noise-cv must be a finite number ≥ 0".into(),
        ));
    }
    Ok(())
}

fn machine(threads: usize, overhead: OverheadModel, cv: f64) -> Result<Machine> {
    let noise = if cv > 0.0 {
        Noise::Normal { cv }
    } else {
        Noise::None
    };
    let worker = WorkerModel::with(1.0, noise, &[]).map_err(sim_error)?;
    Machine::new(vec![worker; threads], overhead).map_err(sim_error)
}

/// k = N/(2P), halved (rounding down) to 1.
pub fn bathtub_chunks(n: u64, p: u64) -> Vec<u64> {
    let mut k = (n / (2 * p)).max(1);
    let mut chunks = vec![k];
    while k > 1 {
        k /= 2;
        chunks.push(k.max(1));
    }
    chunks
}

fn bathtub(
    costs: &IterationCosts,
    config: &LoopsConfig,
    overhead: OverheadModel,
    tick: &mut dyn FnMut(&str),
) -> Result<Bathtub> {
    let p = BATHTUB_THREADS;
    let m = machine(p, overhead, config.noise_cv)?;
    let n = costs.len();
    let mut points = Vec::new();
    for k in bathtub_chunks(n, p as u64) {
        let mut t_par = Vec::new();
        for s in BATHTUB_SCHEDULES {
            tick(&format!("bathtub {s},{k}"));
            let mut stepper =
                Stepper::new(m.clone(), &format!("{s},{k}"), config.seed).map_err(sim_error)?;
            t_par.push(stepper.run("l1", costs).map_err(sim_error)?.t_par);
        }
        points.push(BathtubPoint { chunk: k, t_par });
    }
    let expert = expert_chunk(n, p).unwrap_or(1);
    let best = BATHTUB_SCHEDULES
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let (chunk, t) = points
                .iter()
                .map(|pt| (pt.chunk, pt.t_par[i]))
                .fold((0, f64::INFINITY), |b, x| if x.1 < b.1 { x } else { b });
            let at_expert = points
                .iter()
                .find(|pt| pt.chunk == expert)
                .map_or(f64::NAN, |pt| pt.t_par[i]);
            (s.to_string(), chunk, t, at_expert / t)
        })
        .collect();
    Ok(Bathtub {
        threads: p,
        expert_chunk: expert,
        points,
        best,
    })
}

fn selection(
    costs: &[IterationCosts],
    threads: usize,
    config: &LoopsConfig,
    overhead: OverheadModel,
    tick: &mut dyn FnMut(&str),
) -> Result<Selection> {
    let m = machine(threads, overhead, config.noise_cv)?;
    let n = costs.first().map_or(0, |c| c.len());
    let expert = expert_chunk(n, threads);
    let run_all = |setting: &str, chunk: Option<u64>, tick: &mut dyn FnMut(&str)| {
        let mut stepper = Stepper::new(m.clone(), setting, config.seed).map_err(sim_error)?;
        let mut times = Vec::with_capacity(costs.len());
        for c in costs {
            tick(&format!("P={threads} {setting}"));
            let call = Call { chunk, hints: None };
            times.push(stepper.run_with("l1", c, call).map_err(sim_error)?.t_par);
        }
        Ok::<_, ExperimentError>((times, stepper))
    };
    let mut labels = Vec::new();
    let mut rows = Vec::new();
    let mut defaults = Vec::new();
    for name in AUTO4OMP_PORTFOLIO {
        defaults.push(rows.len());
        labels.push(name.to_string());
        rows.push(run_all(name, None, tick)?.0);
        labels.push(format!("{name}+expert"));
        rows.push(run_all(name, expert, tick)?.0);
    }
    let table = LoopTimes::new(&rows)?;
    let oracle = table.oracle();
    let default_rows: Vec<Vec<f64>> = defaults.iter().map(|&k| rows[k].clone()).collect();
    let (best, best_total) = LoopTimes::new(&default_rows)?.manual_best();
    let row = |config: String, total: f64| ConfigRow {
        config,
        total,
        degradation_percent: degradation_percent(total, oracle),
        last_choice: None,
        exploration_instances: None,
    };
    let fixed = labels
        .iter()
        .zip(&rows)
        .map(|(l, r)| row(l.clone(), r.iter().sum()))
        .collect();
    let mut methods = Vec::new();
    for method in METHODS {
        let (times, stepper) = run_all(method, None, tick)?;
        let record = stepper.selection_record("l1");
        let mut r = row(method.to_string(), times.iter().sum());
        r.last_choice = record
            .and_then(|rec| rec.runs().last())
            .map(|run| AUTO4OMP_PORTFOLIO[run.index].to_string());
        r.exploration_instances = record.map(|rec| rec.exploration_instances());
        methods.push(r);
    }
    Ok(Selection {
        threads,
        instances: costs.len(),
        oracle,
        manual_best: row(
            format!("ManualBest ({})", AUTO4OMP_PORTFOLIO[best]),
            best_total,
        ),
        fixed,
        methods,
    })
}

/// The bathtub and, unless `bathtub_only`, the selection experiment at
/// every P of `config.threads`; `progress` hears the number of simulations
/// first, then each one as it ends.
pub fn run(config: &LoopsConfig, progress: &mut dyn FnMut(Progress<'_>)) -> Result<LoopsReport> {
    check(&config.threads, config.noise_cv)?;
    let calibration = load_calibration(config.calibration.as_deref())?;
    let steps = config.steps.unwrap_or(sphynx_l1::STEPS);
    if steps == 0 || steps > sphynx_l1::STEPS {
        return Err(ExperimentError::Invalid(format!(
            "--steps must be in 1..={} (the pinned workload's steps)",
            sphynx_l1::STEPS
        )));
    }
    let l1 = SphynxL1::new();
    let spin = calibration.spin_unit_seconds;
    let overhead = calibration.overhead;
    let n = sphynx_l1::PARTICLES as u64;
    let selection_threads: &[usize] = if config.bathtub_only {
        &[]
    } else {
        &config.threads
    };
    let sims = bathtub_chunks(n, BATHTUB_THREADS as u64).len() * BATHTUB_SCHEDULES.len()
        + selection_threads.len() * (2 * AUTO4OMP_PORTFOLIO.len() + METHODS.len()) * steps;
    progress(Progress::Total(sims as u64));
    let mut tick = |msg: &str| progress(Progress::Step(msg));
    let first = l1.costs(sphynx_l1::BATHTUB_STEP, spin).map_err(sim_error)?;
    let tub = bathtub(&first, config, overhead, &mut tick)?;
    drop(first);
    let mut selections = Vec::new();
    if !selection_threads.is_empty() {
        // Spread the pinned steps evenly when fewer are asked for.
        let costs = (0..steps)
            .map(|s| l1.costs(s * sphynx_l1::STEPS / steps, spin))
            .collect::<Result<Vec<_>, _>>()
            .map_err(sim_error)?;
        for &p in selection_threads {
            selections.push(selection(&costs, p, config, overhead, &mut tick)?);
        }
    }
    Ok(LoopsReport {
        workload: SphynxL1::spec(),
        iterations: sphynx_l1::PARTICLES,
        spin_unit_seconds: spin,
        overhead,
        calibration_date: calibration.date.clone(),
        bathtub: tub,
        selection: selections,
    })
}

/// A user trace: every instance in file order under each schedule.
pub fn run_trace(config: &TraceConfig) -> Result<TraceReport> {
    check(&[config.threads], config.noise_cv)?;
    let calibration = load_calibration(config.calibration.as_deref())?;
    let overhead = calibration.overhead;
    let trace = keel_sim::trace::read_trace(&config.trace).map_err(sim_error)?;
    let costs = trace
        .instances
        .iter()
        .map(|i| i.iteration_costs())
        .collect::<Result<Vec<_>, _>>()
        .map_err(sim_error)?;
    let schedules: Vec<String> = if config.schedules.is_empty() {
        AUTO4OMP_PORTFOLIO.iter().map(|s| s.to_string()).collect()
    } else {
        config.schedules.clone()
    };
    let m = machine(config.threads, overhead, config.noise_cv)?;
    let mut rows = Vec::new();
    for s in &schedules {
        let mut stepper = Stepper::new(m.clone(), s, config.seed).map_err(sim_error)?;
        let (mut total, mut lib, mut chunks) = (0.0, 0.0, 0);
        for (inst, c) in trace.instances.iter().zip(&costs) {
            let r = stepper.run(&inst.loop_name, c).map_err(sim_error)?;
            total += r.t_par;
            lib += r.lib_percent;
            chunks += r.total_chunks();
        }
        rows.push(TraceRow {
            schedule: s.clone(),
            total,
            mean_lib_percent: lib / costs.len().max(1) as f64,
            chunks,
        });
    }
    Ok(TraceReport {
        instances: trace.instances.len(),
        iterations: trace.iterations(),
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bathtub_chunks_of_the_paper() {
        let k = bathtub_chunks(1_000_000, 20);
        assert_eq!(k.first(), Some(&25_000));
        assert_eq!(k.last(), Some(&1));
        assert!(k.contains(&48), "{k:?}");
    }
}
