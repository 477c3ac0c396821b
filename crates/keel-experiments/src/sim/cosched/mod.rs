//! `keel sim cosched`: the FCS paper's experiments ("Flexible
//! CoScheduling: Mitigating Load Imbalance and Improving Utilization of
//! Heterogeneous Resources", §3) in the cluster model
//! (`keel_sim::cluster`), under the unchanged `keel_policy::cosched`
//! policies.
//!
//! | subcommand | paper | what it prints |
//! |---|---|---|
//! | `verify` | §3.2 | the three verification tables (fine-grained, load-imbalanced, complementing jobs) under fcfs, local, gs, sb, fcs: each job's termination time and the Max, the paper's Max beside it, FCS's gap to the best, the order against the paper's, FCS's classes |
//! | `verify --scaled` | §3.2 at half width | the same three scenarios as `keel cosched run` runs them for real (2 nodes × 1 PE, 2-rank jobs of 500 × 6 ms, 25 ms slice), in that command's table shape, so the two can be compared |
//! | `fig5` | §3.3, Fig. 5 | the parameter space: granularity 4 ms – 1.024 s × variability 0 – 100 % × nearest-neighbour / barrier under gs, fcfs, fcs, sb, as tables of normalised turnaround (1 = the jobs' CPU work perfectly packed), the paper's five observations checked, and SVG plots with `--svg DIR` |
//! | `apps` | §3.4 | the SWEEP3D-like and SAGE-like mixes under fcfs, gs, sb, fcs, with the paper's tables |
//! | `swf` | — | a Standard Workload Format log replayed for a throughput study: each job arrives at its submit time with its processors, its run time becoming iterations of `--granularity` seconds |
//!
//! Every scenario's parameters are fixed in `keel_workloads::bsp` and the
//! model's constants in `keel_sim::cluster::params`. [`CoschedSetup::scale()`]
//! multiplies every job's iterations (`quick` = [`QUICK_SCALE`], for smoke
//! tests).
//!
//! Here each experiment is a function of a [`CoschedSetup`] (the options
//! every experiment takes) and its own settings, returning a typed report.
//!
//! ```
//! use keel_experiments::sim::cosched::{self, CoschedSetup};
//! let setup = CoschedSetup { quick: true, ..CoschedSetup::default() };
//! let report = cosched::apps("sage", &setup, &mut |_| {}).unwrap();
//! assert_eq!(report.tables[0].rows.len(), 4);
//! ```

use keel_sim::cluster::scenarios::{run_table, Fig5Point, Finding, ScenarioTable, APP_POLICIES};
use keel_sim::cluster::{scenarios, CommClock, CoschedModel, CpuClock, OsModel};
use keel_sim::SimError;
use keel_workloads::bsp::BspScenario;
use serde::Serialize;

use super::Progress;
use crate::error::{ExperimentError, Result};

mod fig5;
mod swf;
mod verify;

pub use fig5::{fig5, fig5_policies, policy_name, Fig5Config};
pub use swf::{swf, SwfConfig};
pub use verify::{
    as_real_table, demo_table, read_real_runs, scaled_policies, verify, verify_against,
    verify_scaled, CoschedDemo, RealRuns,
};

/// The iteration scale of `quick`.
pub const QUICK_SCALE: f64 = 0.02;

/// Default compute seconds per iteration of a job replayed from an SWF log:
/// coarse enough that a job of hours stays cheap to simulate, fine enough
/// that jobs synchronise hundreds of times per time-slice rotation.
pub const SWF_GRANULARITY: f64 = 0.1;

/// The settings every coscheduling experiment takes: the policies, the
/// seed, the iteration scale and the model's overrides.
#[derive(Debug, Clone, PartialEq)]
pub struct CoschedSetup {
    /// Policy specs to compare (empty: the paper's schedulers for the
    /// experiment).
    pub policies: Vec<String>,
    /// Seed of the OS schedulers' phases and jitter.
    pub seed: u64,
    /// Multiply every job's iterations by this (1 = the paper's jobs).
    pub scale: f64,
    /// [`QUICK_SCALE`] instead of `scale`.
    pub quick: bool,
    /// What FCS's T_comm counts: `scheduled` or `wall`.
    pub comm_clock: String,
    /// What FCS's T_cpu counts: `cpu` or `elapsed`.
    pub cpu_clock: String,
    /// Message and barrier latency, seconds (`None`: the model's).
    pub latency: Option<f64>,
    /// Context-switch cost, seconds (`None`: the model's).
    pub context_switch: Option<f64>,
    /// The nodes' kernel by name (`None`: the experiment's default).
    pub os: Option<String>,
    /// The local OS scheduler's time slice, seconds (overrides `os`).
    pub os_quantum: Option<f64>,
    /// The local OS scheduler's tick, seconds (overrides `os`).
    pub os_tick: Option<f64>,
    /// Wake-up cost of a blocked process, seconds.
    pub wakeup: Option<f64>,
}

impl Default for CoschedSetup {
    /// The paper's jobs at full scale, seed 1, every model constant as
    /// `keel_sim::cluster` has it.
    fn default() -> Self {
        CoschedSetup {
            policies: Vec::new(),
            seed: 1,
            scale: 1.0,
            quick: false,
            comm_clock: "scheduled".into(),
            cpu_clock: "cpu".into(),
            latency: None,
            context_switch: None,
            os: None,
            os_quantum: None,
            os_tick: None,
            wakeup: None,
        }
    }
}

impl CoschedSetup {
    /// The iteration scale: [`QUICK_SCALE`] with `quick`, else `scale`,
    /// which must be a finite number > 0.
    pub fn scale(&self) -> Result<f64> {
        let scale = if self.quick { QUICK_SCALE } else { self.scale };
        if !(scale.is_finite() && scale > 0.0) {
            return Err(ExperimentError::Invalid(format!(
                "--scale {} is invalid: expected a finite number > 0",
                keel_sim::error::shown(scale.to_string())
            )));
        }
        Ok(scale)
    }

    /// The model for a `nodes` × `pes_per_node` machine on the kernel
    /// `--os` names (else `default_os`), with every override applied,
    /// validated.
    pub fn model(
        &self,
        nodes: usize,
        pes_per_node: usize,
        default_os: OsModel,
    ) -> Result<CoschedModel> {
        let mut m = CoschedModel::new(nodes, pes_per_node)
            .map_err(sim_error)?
            .with_seed(self.seed);
        m.os = match &self.os {
            Some(name) => OsModel::named(name).map_err(sim_error)?,
            None => default_os,
        };
        m.comm_clock = CommClock::parse(&self.comm_clock).map_err(sim_error)?;
        m.cpu_clock = CpuClock::parse(&self.cpu_clock).map_err(sim_error)?;
        if let Some(v) = self.latency {
            m.net.latency = v;
        }
        if let Some(v) = self.context_switch {
            m.cluster.context_switch = v;
        }
        if let Some(v) = self.os_quantum {
            m.os.quantum = v;
        }
        if let Some(v) = self.os_tick {
            m.os.tick = v;
        }
        if let Some(v) = self.wakeup {
            m.os.wakeup = v;
        }
        m.validate().map_err(sim_error)?;
        Ok(m)
    }

    /// The specs to run, each checked before any simulation starts.
    pub fn specs(&self, defaults: &[&str]) -> Result<Vec<String>> {
        let specs: Vec<String> = if self.policies.is_empty() {
            defaults.iter().map(|s| s.to_string()).collect()
        } else {
            self.policies.iter().map(|s| s.trim().to_string()).collect()
        };
        for spec in &specs {
            keel_policy::cosched::parse(spec)
                .map_err(|e| ExperimentError::Invalid(format!("cosched policy `{spec}`: {e}")))?;
        }
        Ok(specs)
    }
}

/// The model's constants, as reported.
#[derive(Debug, Clone, Serialize)]
pub struct Setup {
    /// Seed.
    pub seed: u64,
    /// Iteration scale.
    pub scale: f64,
    /// The model (machine of the first scenario; the constants are shared).
    pub model: CoschedModel,
}

/// `verify` and `apps`.
#[derive(Debug, Clone, Serialize)]
pub struct TablesReport {
    /// Constants.
    pub setup: Setup,
    /// One table per scenario.
    pub tables: Vec<ScenarioTable>,
}

/// `fig5`.
#[derive(Debug, Clone, Serialize)]
pub struct Fig5Report {
    /// Constants.
    pub setup: Setup,
    /// Every point.
    pub points: Vec<Fig5Point>,
    /// The paper's observations, checked.
    pub findings: Vec<Finding>,
}

/// One policy on an SWF log.
#[derive(Debug, Clone, Serialize)]
pub struct SwfRow {
    /// The policy's registry name.
    pub policy: String,
    /// First submission to last completion, seconds.
    pub makespan: f64,
    /// Mean turnaround, seconds.
    pub mean_turnaround: f64,
    /// Mean of turnaround over the job's dedicated time.
    pub mean_slowdown: f64,
    /// Fraction of PE time spent computing.
    pub utilisation: f64,
}

/// `swf`.
#[derive(Debug, Clone, Serialize)]
pub struct SwfReport {
    /// Constants.
    pub setup: Setup,
    /// The log.
    pub file: String,
    /// Jobs replayed.
    pub jobs: usize,
    /// Jobs the log had that could not be replayed (unknown width or run
    /// time, width 0, wider than the cluster) or were past `--limit`.
    pub skipped: usize,
    /// One row per policy.
    pub rows: Vec<SwfRow>,
}

fn sim_error(e: SimError) -> ExperimentError {
    ExperimentError::sim("sim cosched", e)
}

fn scaled(s: BspScenario, scale: f64) -> Result<BspScenario> {
    Ok(s.scaled(scale)?)
}

/// The scenario called `name` of `all` (or every one for `all`); `flag`
/// names the option in the refusal.
pub fn pick(name: &str, all: Vec<BspScenario>, flag: &str) -> Result<Vec<BspScenario>> {
    if name == "all" {
        return Ok(all);
    }
    let valid: Vec<String> = all.iter().map(|s| s.name.clone()).collect();
    let chosen: Vec<BspScenario> = all.into_iter().filter(|s| s.name == name).collect();
    if chosen.is_empty() {
        return Err(ExperimentError::Invalid(format!(
            "{flag} `{name}` is unknown; valid: all, {}",
            valid.join(", ")
        )));
    }
    Ok(chosen)
}

/// Simulates every scenario under every policy (`defaults` unless the
/// setup names policies), on the kernel `default_os` unless the setup
/// names one; `progress` hears the number of simulations, then each.
pub fn tables(
    scenarios: Vec<BspScenario>,
    defaults: &[&str],
    default_os: OsModel,
    common: &CoschedSetup,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<TablesReport> {
    let scale = common.scale()?;
    let specs = common.specs(defaults)?;
    common.model(1, 1, default_os)?;
    let scenarios = scenarios
        .into_iter()
        .map(|s| scaled(s, scale))
        .collect::<Result<Vec<_>, _>>()?;
    progress(Progress::Total((scenarios.len() * specs.len()) as u64));
    let mut done = Vec::new();
    let mut model = None;
    for s in &scenarios {
        let m = common.model(s.nodes, s.pes_per_node, default_os)?;
        let table = run_table(s, &m, &specs, &mut || progress(Progress::Step("")));
        done.push(table.map_err(sim_error)?);
        model.get_or_insert(m);
    }
    let Some(model) = model else {
        return Err(ExperimentError::Invalid("no scenario to run".into()));
    };
    Ok(TablesReport {
        setup: Setup {
            seed: common.seed,
            scale,
            model,
        },
        tables: done,
    })
}

/// §3.4's application mixes (`mix`: `all`, `sweep3d` or `sage`) under
/// the paper's schedulers.
pub fn apps(
    mix: &str,
    common: &CoschedSetup,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<TablesReport> {
    let chosen = pick(mix, scenarios::application_scenarios(), "--mix")?;
    tables(
        chosen,
        &APP_POLICIES,
        OsModel::linux_2_4(),
        common,
        progress,
    )
}

/// One scheduler of a scaled scenario, simulated and run for real.
#[derive(Debug, Clone, Serialize)]
pub struct AgainstRow {
    /// The scheduler.
    pub policy: String,
    /// The real Max (the median run's), seconds.
    pub real_max: f64,
    /// Every real run's makespan, seconds.
    pub real_runs: Vec<f64>,
    /// The simulated Max, seconds.
    pub simulated_max: f64,
    /// (simulated − real) / real · 100.
    pub error_percent: f64,
}

/// A scaled scenario's simulation against its real runs.
#[derive(Debug, Clone, Serialize)]
pub struct AgainstTable {
    /// The simulated scenario's name.
    pub scenario: String,
    /// One row per scheduler both ran.
    pub rows: Vec<AgainstRow>,
    /// Pairs of schedulers.
    pub pairs: usize,
    /// Pairs the simulation orders as the real runs do.
    pub pairs_alike: usize,
    /// Pairs whose real runs do not overlap (every run of one scheduler
    /// ended before every run of the other): the orderings noise cannot
    /// explain.
    pub separated_pairs: usize,
    /// Of those, the pairs ordered alike.
    pub separated_alike: usize,
    /// The pairs ordered differently, `(a, b, separated)`.
    pub disagreements: Vec<(String, String, bool)>,
}
