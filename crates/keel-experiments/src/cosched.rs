//! `keel cosched run`: the FCS paper's three verification scenarios (§3.2)
//! run for real on this machine by `keel-cosched`'s gang scheduler — two
//! nodes of one PE each — under fcfs, local, gs, sb and fcs, each table the
//! paper's shape (Algorithm × each job's termination time × Max).
//!
//! [`prepare`] checks a [`RunConfig`] before any process starts; then
//! [`Prepared::run`] runs one scenario at a time, so a caller can show each
//! table as it ends.
//!
//! ```
//! use keel_experiments::cosched::{prepare, RunConfig};
//! let bad = RunConfig {
//!     iterations: Some(0),
//!     ..RunConfig::new(vec!["keel-bsp-job".into()])
//! };
//! let e = prepare(&bad).unwrap_err();
//! assert_eq!(e.to_string(), "cosched: --iterations must be at least 1");
//! ```

use std::ffi::OsString;

use keel_cosched::machine::{Config, ManagerExit};
use keel_cosched::scenario::{self, Scenario, ScenarioParams, Table, POLICIES};
use keel_cosched::SuspendChoice;
use serde::Serialize;

use crate::error::{ExperimentError, Result};

/// What to run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The short version (40 supersteps, no retries).
    pub quick: bool,
    /// Only these scenarios: fine-grained, load-imbalanced, complementing
    /// (empty: all three).
    pub scenarios: Vec<String>,
    /// Only these schedulers (empty: fcfs, local, gs, sb, fcs).
    pub policies: Vec<String>,
    /// Time slice of GS and FCS, ms.
    pub slice_ms: Option<f64>,
    /// Base compute per superstep, ms.
    pub granularity_ms: Option<f64>,
    /// Supersteps per rank.
    pub iterations: Option<u64>,
    /// Repetitions per cell; cells are medians.
    pub reps: Option<usize>,
    /// Rerun a run during which other processes used more than this
    /// fraction of the CPUs ...
    pub max_background: Option<f64>,
    /// ... up to this many times.
    pub retries: Option<usize>,
    /// Suspend method.
    pub suspend: SuspendChoice,
    /// What happens to the jobs if the manager dies.
    pub on_manager_exit: ManagerExit,
    /// The command line that starts the synthetic BSP job.
    pub bsp_command: Vec<OsString>,
}

impl RunConfig {
    /// The full scenarios with every default, the jobs started by
    /// `bsp_command`.
    pub fn new(bsp_command: Vec<OsString>) -> Self {
        RunConfig {
            quick: false,
            scenarios: Vec::new(),
            policies: Vec::new(),
            slice_ms: None,
            granularity_ms: None,
            iterations: None,
            reps: None,
            max_background: None,
            retries: None,
            suspend: SuspendChoice::Auto,
            on_manager_exit: ManagerExit::Resume,
            bsp_command,
        }
    }
}

/// A checked run: the parameters, what to run and the machine.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The scenarios' parameters.
    pub params: ScenarioParams,
    /// The scenarios, in order.
    pub scenarios: Vec<Scenario>,
    /// The schedulers.
    pub policies: Vec<String>,
    /// The machine manager's configuration.
    pub config: Config,
}

/// The whole run, as `--json` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct CoschedReport {
    /// The scenarios' parameters.
    pub params: ScenarioParams,
    /// The suspend method the runs used.
    pub suspend: String,
    /// One table per scenario.
    pub tables: Vec<Table>,
}

fn usage(e: impl std::fmt::Display) -> ExperimentError {
    ExperimentError::Invalid(format!("cosched: {e}"))
}

/// Checks the configuration and builds the machine's configuration; no
/// process starts.
pub fn prepare(a: &RunConfig) -> Result<Prepared> {
    let mut params = if a.quick {
        ScenarioParams {
            retries: 0,
            ..ScenarioParams::quick()
        }
    } else {
        ScenarioParams::full()
    };
    if let Some(ms) = a.slice_ms {
        if !(ms.is_finite() && ms > 0.0) {
            return Err(usage(format!("--slice-ms {ms} is not a positive number")));
        }
        params.time_slice = ms / 1e3;
    }
    if let Some(g) = a.granularity_ms {
        if !(g.is_finite() && g > 0.0) {
            return Err(usage(format!(
                "--granularity-ms {g} is not a positive number"
            )));
        }
        params.granularity_ms = g;
    }
    if let Some(n) = a.iterations {
        if n == 0 {
            return Err(usage("--iterations must be at least 1"));
        }
        params.iterations = n;
    }
    if let Some(r) = a.reps {
        params.reps = r.max(1);
    }
    if let Some(b) = a.max_background {
        if !(0.0..=1.0).contains(&b) {
            return Err(usage(format!(
                "--max-background {b} is not a fraction in [0, 1]"
            )));
        }
        params.max_background = b;
    }
    if let Some(r) = a.retries {
        params.retries = r;
    }
    let scenarios = if a.scenarios.is_empty() {
        Scenario::ALL.to_vec()
    } else {
        a.scenarios
            .iter()
            .map(|s| Scenario::from_name(s).map_err(usage))
            .collect::<Result<Vec<_>, _>>()?
    };
    let policies: Vec<String> = if a.policies.is_empty() {
        POLICIES.iter().map(|s| s.to_string()).collect()
    } else {
        for p in &a.policies {
            if !POLICIES.contains(&p.as_str()) {
                return Err(usage(format!(
                    "unknown scheduler `{p}`; valid: {}",
                    POLICIES.join(", ")
                )));
            }
        }
        a.policies.clone()
    };
    let mut config = Config::new("fcs").map_err(usage)?;
    config
        .split_cpus(2, 1)
        .map_err(|e| usage(format!("{e} (the scenarios need two CPUs)")))?;
    config.suspend = a.suspend;
    config.on_manager_exit = a.on_manager_exit;
    config.bsp_command = a.bsp_command.clone();
    Ok(Prepared {
        params,
        scenarios,
        policies,
        config,
    })
}

impl Prepared {
    /// Runs `scenario` under every scheduler; `progress` hears each step.
    pub fn run(&self, scenario: Scenario, progress: &mut dyn FnMut(&str)) -> Result<Table> {
        scenario::run_scenario(
            scenario,
            &self.params,
            &self.policies,
            &self.config,
            |what| progress(what),
        )
        .map_err(usage)
    }

    /// The report of the tables run; the suspend method shown is that of
    /// the last table's first run (every run uses one method).
    pub fn report(&self, tables: Vec<Table>) -> CoschedReport {
        let suspend = tables
            .iter()
            .rev()
            .find_map(|t| t.rows.first().and_then(|r| r.runs.first()))
            .map_or(String::new(), |run| run.suspend.to_string());
        CoschedReport {
            params: self.params.clone(),
            suspend,
            tables,
        }
    }
}
