//! `keel bench farm`: the experiments of the FastFlow ARRS paper
//! (§III) on Keel's farm,
//! on this machine, plus the per-item cost of dispatch with empty tasks.
//!
//! Every experiment times each policy's farm on the same tasks, the
//! policies interleaved run by run, and prints the paper's relative
//! performance `S = ⟨t_RR⟩ / ⟨t_X⟩` (Eq. 1) with its standard error,
//! propagated from the standard errors of the two means:
//!
//! - **(a)** uniform prime-counting tasks (primes up to 7,500) on 2
//!   workers, 1K–16K tasks (Fig. 6);
//! - **(b)** two workers, the first counting primes only up to 2,000, against
//!   the model `S = Σsᵢ / (p·s₁)` (Eq. 2) with the speed ratio measured now
//!   (Figs. 7–8), with the earliest-finish-time dispatch on measured
//!   speeds (`eft:capacity=4`, also in (a)) and told the speed ratio;
//! - **(c)** three workers, two pinned to core 0 and one to core 1, uniform
//!   tasks: more workers than cores, unevenly placed (Fig. 10);
//! - **(d)** very short uniform tasks: MD-like pair forces (Fig. 11);
//! - **(e)** the material-optimisation farm with feedback, two workers of
//!   strategy costs 1 and 4 (Fig. 13);
//! - **overhead**: nanoseconds per item with empty tasks.
//!
//! `--threads N` (default 2, the paper's setting on this 2-core machine)
//! sets the workers of (a), (b) (one fast worker among `N`, model
//! `(s + N − 1)/N`), (d) and the overhead's second row, for runs on machines
//! with more cores (`scripts/scaling.sh`); (c) and (e) keep their layouts.
//!
//! ```
//! use keel_experiments::bench::farm::FarmBenchConfig;
//! let config = FarmBenchConfig { experiments: vec!["b".into()], ..FarmBenchConfig::default() };
//! let plan = config.plan().unwrap();
//! assert_eq!((plan.experiments, plan.runs, plan.workers), (vec!["b"], 10, 2));
//! ```

mod demo;
mod experiments;
pub mod harness;

use serde::Serialize;

use crate::error::{ExperimentError, Result};

pub use demo::{demo, FarmDemo, FarmDemoRow};
pub use experiments::{
    experiment_a, experiment_b, experiment_c, experiment_d, experiment_e, overhead,
};
pub use keel_policy::farm::known_split::KNOWN_SPLIT;

/// The experiments, in order.
pub const EXPERIMENTS: [&str; 6] = ["a", "b", "c", "d", "e", "overhead"];

/// Runs per point unless `--runs` says otherwise (the paper's minimum).
pub const DEFAULT_RUNS: usize = 10;

/// One policy at one size.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Tasks (or pool size for (e)).
    pub size: usize,
    /// The policy spec.
    pub policy: String,
    /// Mean wall time, seconds.
    pub mean_s: f64,
    /// Standard error of that mean.
    pub se_s: f64,
    /// S = ⟨t_RR⟩ / ⟨t_X⟩.
    pub speedup: f64,
    /// Standard error of S.
    pub speedup_se: f64,
    /// The median over runs of `t_rr / t_X` within each round of the
    /// interleaved runs: what a drift of this machine's speed between
    /// rounds does not enter.
    pub median_round_ratio: f64,
    /// Eq. 2's S, where the experiment has a model.
    pub model: Option<f64>,
    /// Items each worker ran in the last run.
    pub per_worker: Vec<u64>,
    /// Where measured ((b)), each worker's time in tasks as a percentage of
    /// the run's wall time, averaged over the runs: near 100 for every
    /// worker means the policy left no one waiting, so what separates its S
    /// from the model is how fast the tasks ran, not the dispatch.
    pub busy_percent: Option<Vec<f64>>,
}

/// One experiment.
#[derive(Clone, Debug, Serialize)]
pub struct Experiment {
    /// `a`..`e`.
    pub id: String,
    /// What it is.
    pub title: String,
    /// Workers of the farm.
    pub workers: usize,
    /// The workload spec.
    pub workload: String,
    /// Notes (measured constants, placement).
    pub notes: Vec<String>,
    /// One row per size and policy.
    pub rows: Vec<Row>,
}

/// Per-item cost with empty tasks.
#[derive(Clone, Debug, Serialize)]
pub struct Overhead {
    /// The policy.
    pub policy: String,
    /// Workers.
    pub workers: usize,
    /// Items per run.
    pub items: usize,
    /// Median nanoseconds per item.
    pub ns_per_item: f64,
    /// Fastest and slowest run, ns per item.
    pub range: (f64, f64),
    /// For `arrs`: the median over paired runs of its time over `rr`'s.
    pub vs_rr: Option<f64>,
}

/// The whole run.
#[derive(Clone, Debug, Serialize)]
pub struct FarmBenchReport {
    /// Quick mode.
    pub quick: bool,
    /// Runs per point.
    pub runs: usize,
    /// Cores the OS reports.
    pub cores: usize,
    /// The experiments run.
    pub experiments: Vec<Experiment>,
    /// The per-item cost rows.
    pub overhead: Vec<Overhead>,
    /// The machine's background load over the run (`None` without
    /// `/proc`); measure it with [`super::LoadMeter`].
    pub background_load: Option<super::BackgroundLoad>,
}

/// What to run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FarmBenchConfig {
    /// Fewer sizes and smaller task sets.
    pub quick: bool,
    /// Runs per point (`None`: [`DEFAULT_RUNS`]).
    pub runs: Option<usize>,
    /// Only these experiments of [`EXPERIMENTS`] (empty: all).
    pub experiments: Vec<String>,
    /// Workers of (a), (b), (d) and the per-item cost (`None`: 2).
    pub workers: Option<usize>,
}

/// A checked configuration, as every experiment reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Quick mode.
    pub quick: bool,
    /// Runs per point.
    pub runs: usize,
    /// Workers of the experiments that scale: (a), (b), (d), overhead.
    pub workers: usize,
    /// The experiments to run, in [`EXPERIMENTS`] order.
    pub experiments: Vec<&'static str>,
}

impl FarmBenchConfig {
    /// The plan, or why the configuration is refused (no run starts).
    pub fn plan(&self) -> Result<Plan> {
        let runs = self.runs.unwrap_or(DEFAULT_RUNS);
        if runs == 0 {
            return Err(ExperimentError::Invalid("--runs must be at least 1".into()));
        }
        for e in &self.experiments {
            if !EXPERIMENTS.contains(&e.as_str()) {
                return Err(ExperimentError::Invalid(format!(
                    "unknown farm experiment `{e}`; valid: {}",
                    EXPERIMENTS.join(", ")
                )));
            }
        }
        let workers = self.workers.unwrap_or(2);
        if workers == 0 {
            return Err(ExperimentError::Invalid(
                "--threads must be at least 1".into(),
            ));
        }
        let experiments = EXPERIMENTS
            .into_iter()
            .filter(|id| self.experiments.is_empty() || self.experiments.iter().any(|e| e == id))
            .collect();
        Ok(Plan {
            quick: self.quick,
            runs,
            workers,
            experiments,
        })
    }
}

/// Cores the OS reports.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Runs the experiment `id` (`a` … `e`) of the plan; `None` for
/// `overhead` and unknown ids (see [`overhead`]).
pub fn experiment(id: &str, plan: &Plan) -> Option<Result<Experiment>> {
    let run: fn(&Plan) -> Result<Experiment> = match id {
        "a" => experiment_a,
        "b" => experiment_b,
        "c" => experiment_c,
        "d" => experiment_d,
        "e" => experiment_e,
        _ => return None,
    };
    Some(run(plan))
}

/// Every chosen experiment, then the per-item cost if chosen.
pub fn run(config: &FarmBenchConfig) -> Result<FarmBenchReport> {
    let plan = config.plan()?;
    let meter = super::LoadMeter::start();
    let mut report = FarmBenchReport {
        quick: plan.quick,
        runs: plan.runs,
        cores: cores(),
        experiments: Vec::new(),
        overhead: Vec::new(),
        background_load: None,
    };
    for id in &plan.experiments {
        if let Some(e) = experiment(id, &plan) {
            report.experiments.push(e?);
        }
    }
    if plan.experiments.contains(&"overhead") {
        report.overhead = overhead(&plan)?;
    }
    report.background_load = meter.finish();
    Ok(report)
}
