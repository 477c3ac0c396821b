//! `keel sim farm`: the FastFlow ARRS paper's heterogeneous experiment
//! (§III-C, Figs. 7–8; see `docs/conventions.md#papers`) in
//! the simulator, at the paper's sizes: 4, 8 and 16 workers of which one is
//! `s_f` times faster, 1K–16K uniform tasks, every farm policy against the
//! paper's round-robin scheduler (RRS), and the relative performance
//! `S = t_rr / t_X` against the model `S = Σsᵢ / (p·s₁)` (Eq. 2).
//!
//! With `slow_speed` (`--slow-speed S`) the odd worker out is slow instead:
//! worker 0 runs at `S`, the others at 1, the case of the `lpt-eft`
//! mapping's issue (one PU at a tenth of the speed), where round-robin
//! waits `1/S` times a fair share for the slow worker.
//!
//! `eft:capacity=4` is the earliest-finish-time dispatch with measured
//! speeds (nothing is told to the emitter): bounded queues, so that it
//! places items while the workers run and see their speeds.
//!
//! The reference `rr` runs on the same queues as the others. With the
//! default unbounded queues that is the paper's RRS; with `--capacity`, rr
//! skips full queues and adapts by itself, so S drops towards 1 for every
//! policy.
//!
//! ```
//! use keel_experiments::sim::farm::{self, FarmConfig};
//! let config = FarmConfig { workers: vec![4], tasks: vec![100], ..FarmConfig::default() };
//! let report = farm::run(&config, &mut || {}).unwrap();
//! assert_eq!(report.rows.len(), farm::simulations(&config));
//! ```

use keel_sim::farm::{simulate, uniform_costs, FarmModel, PAPER_FAST_SPEED, PAPER_SLOW_TASK_S};
use keel_sim::{Noise, SimError, WorkerModel};
use serde::Serialize;

use crate::error::{ExperimentError, Result};

/// The policies compared unless the configuration names others: the
/// paper's ARRS at Fig. 7's CHUNK_SIZE (100) and at its default (300), and
/// the rest of the family.
pub const DEFAULT_POLICIES: [&str; 7] = [
    "rr",
    "arrs:chunk=100",
    "arrs",
    "arrs-adaptive",
    "on-demand",
    "shortest-queue",
    "eft:capacity=4",
];

/// Emitter seconds per push by default: the per-item goal of `keel bench
/// farm`'s overhead experiment (rr ≤ 50 ns).
pub const DEFAULT_EMITTER_COST: f64 = 50e-9;

/// What to simulate.
#[derive(Debug, Clone, PartialEq)]
pub struct FarmConfig {
    /// Farm sizes (workers), one of them fast.
    pub workers: Vec<usize>,
    /// Stream lengths (tasks).
    pub tasks: Vec<usize>,
    /// Farm policy specs (empty: [`DEFAULT_POLICIES`]); `rr` always runs as
    /// the reference.
    pub policies: Vec<String>,
    /// How many times faster the fast worker is (the paper's s_f ≈ 5.8).
    pub fast_speed: f64,
    /// A task's seconds on a slow worker (the paper's ≈ 0.28 ms).
    pub task_s: f64,
    /// One slow worker instead of one fast one: worker 0 runs at this
    /// speed (finite, `> 0`), the others at 1, and `fast_speed` is unused.
    pub slow_speed: Option<f64>,
    /// Emitter seconds per push (item or marker).
    pub emitter_cost: f64,
    /// Bound every input queue at this many items (`None`: unbounded, as in
    /// the paper).
    pub capacity: Option<usize>,
    /// Coefficient of variation of each task's time (normal noise, mean 1).
    pub noise_cv: f64,
    /// Seed of the noise.
    pub seed: u64,
}

impl Default for FarmConfig {
    /// The paper's setting: 4, 8 and 16 workers, 1K–16K tasks, the default
    /// policies, unbounded queues, no noise, seed 1.
    fn default() -> Self {
        FarmConfig {
            workers: vec![4, 8, 16],
            tasks: vec![1000, 2000, 4000, 8000, 16000],
            policies: Vec::new(),
            fast_speed: PAPER_FAST_SPEED,
            task_s: PAPER_SLOW_TASK_S,
            slow_speed: None,
            emitter_cost: DEFAULT_EMITTER_COST,
            capacity: None,
            noise_cv: 0.0,
            seed: 1,
        }
    }
}

/// One policy at one size.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Workers.
    pub workers: usize,
    /// Tasks.
    pub tasks: usize,
    /// The policy's canonical spec.
    pub policy: String,
    /// Simulated makespan, seconds.
    pub makespan_s: f64,
    /// S = t_rr / t_X.
    pub speedup: f64,
    /// Eq. 2's S for these workers.
    pub model: f64,
    /// Items worker 0 ran: the fast worker (the slow one with
    /// `slow_speed`).
    pub fast_items: u64,
    /// Mean items of each other worker.
    pub slow_items: f64,
    /// Times the policy read a queue level.
    pub level_reads: u64,
    /// Marker blocks.
    pub blocks: u64,
    /// Times the emitter waited (room or marker).
    pub emitter_waits: u64,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct FarmSimReport {
    /// The fast worker's speed.
    pub fast_speed: f64,
    /// Slow task seconds.
    pub task_s: f64,
    /// Worker 0's speed when it is the slow one.
    pub slow_speed: Option<f64>,
    /// Emitter seconds per push.
    pub emitter_cost: f64,
    /// Queue capacity (`None` = unbounded).
    pub capacity: Option<usize>,
    /// Noise coefficient of variation.
    pub noise_cv: f64,
    /// Seed.
    pub seed: u64,
    /// Every row.
    pub rows: Vec<Row>,
}

fn sim_error(e: SimError) -> ExperimentError {
    ExperimentError::sim("sim farm", e)
}

fn farm(config: &FarmConfig, workers: usize) -> Result<FarmModel> {
    let noise = Noise::normal(config.noise_cv).map_err(sim_error)?;
    let odd = config.slow_speed.unwrap_or(config.fast_speed);
    let mut model = FarmModel::heterogeneous(workers, 1, odd).map_err(sim_error)?;
    model.workers = model
        .workers
        .iter()
        .map(|w| WorkerModel::with(w.speed(), noise, &[]))
        .collect::<Result<_, _>>()
        .map_err(sim_error)?;
    model.capacity = config.capacity;
    model.emitter_cost = config.emitter_cost;
    model.seed = config.seed;
    model.validate().map_err(sim_error)?;
    Ok(model)
}

/// Runs every point; `tick` after each simulation.
fn rows(config: &FarmConfig, tick: &mut dyn FnMut()) -> Result<Vec<Row>> {
    if config.workers.is_empty() || config.workers.contains(&0) {
        return Err(ExperimentError::Invalid(
            "--threads needs farm sizes of at least 1".into(),
        ));
    }
    let policies = policies(config);
    let mut out = Vec::new();
    for &p in &config.workers {
        let model = farm(config, p)?;
        for &n in &config.tasks {
            let costs = uniform_costs(n, config.task_s).map_err(sim_error)?;
            let reference = simulate(&model, "rr", &costs).map_err(sim_error)?;
            tick();
            for spec in &policies {
                let run = if spec == "rr" {
                    reference.clone()
                } else {
                    let r = simulate(&model, spec, &costs).map_err(sim_error)?;
                    tick();
                    r
                };
                let slow: u64 = run.per_worker[1..].iter().sum();
                out.push(Row {
                    workers: p,
                    tasks: n,
                    policy: run.policy.clone(),
                    makespan_s: run.makespan,
                    speedup: if run.makespan > 0.0 {
                        reference.makespan / run.makespan
                    } else {
                        1.0
                    },
                    model: model.model_speedup(),
                    fast_items: run.per_worker[0],
                    slow_items: if p > 1 {
                        slow as f64 / (p - 1) as f64
                    } else {
                        0.0
                    },
                    level_reads: run.level_reads,
                    blocks: run.blocks,
                    emitter_waits: run.waits_for_room + run.waits_for_marker,
                });
            }
        }
    }
    Ok(out)
}

/// The policy specs to run, trimmed, with `rr` (the reference) first
/// when it was not asked for.
pub fn policies(config: &FarmConfig) -> Vec<String> {
    let mut p: Vec<String> = if config.policies.is_empty() {
        DEFAULT_POLICIES.iter().map(|s| s.to_string()).collect()
    } else {
        config
            .policies
            .iter()
            .map(|s| s.trim().to_string())
            .collect()
    };
    if !p.iter().any(|s| s == "rr") {
        p.insert(0, "rr".into());
    }
    p
}

/// How many simulations [`run`] makes (every size × length × policy).
pub fn simulations(config: &FarmConfig) -> usize {
    config.workers.len() * config.tasks.len() * policies(config).len()
}

/// Every point, after checking every policy spec (before any simulation
/// runs); `tick` after each simulation.
pub fn run(config: &FarmConfig, tick: &mut dyn FnMut()) -> Result<FarmSimReport> {
    if let Some(s) = config.slow_speed {
        if !(s.is_finite() && s > 0.0) {
            return Err(ExperimentError::Invalid(format!(
                "--slow-speed must be finite and > 0 (got {s})"
            )));
        }
    }
    for spec in policies(config) {
        keel_policy::farm::parse(&spec)
            .map_err(|e| ExperimentError::Invalid(format!("farm policy `{spec}`: {e}")))?;
    }
    let rows = rows(config, tick)?;
    Ok(FarmSimReport {
        fast_speed: config.fast_speed,
        task_s: config.task_s,
        slow_speed: config.slow_speed,
        emitter_cost: config.emitter_cost,
        capacity: config.capacity,
        noise_cv: config.noise_cv,
        seed: config.seed,
        rows,
    })
}
