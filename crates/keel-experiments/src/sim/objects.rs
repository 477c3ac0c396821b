//! `keel sim objects`: the Charm++ + OpenMP paper's Lassen study
//! (§5, Tables 1–2) in
//! the simulator, at the paper's scale: the Lassen-like proxy on 64 nodes ×
//! 16 PUs (16 domains per PU, `LassenLike::for_pus`, pinned by
//! `crates/keel-sim/tests/objects_golden.rs`), or any object workload
//! (`persistent`, `drift`, `phase`: a hot band that stays, drifts or
//! jumps).
//!
//! - **Table 1**: No LB, Greedy (hierarchical: `hier:nodes=N` with greedy
//!   at both levels, when it pays: the adaptive invocation), Greedy +
//!   stealing inside nodes, No LB + stealing, and Greedy every `--period`
//!   steps: λ at the node and PU levels, total time.
//! - **Table 2**: hierarchical Greedy at periods 20, 50 and 100, time in
//!   steps and in balancing split out.
//! - **Table 3** (only with `slow_speed`): the upper half of every node's
//!   PUs at that speed, the remap told the speeds; hierarchical balancing
//!   with `greedy` (GreedyLB: least normalised time) against `lpt-eft`
//!   (earliest finish) inside nodes, every `period` steps, no stealing.
//!
//! Balancing time is modelled (decision per object + migrations), not
//! measured; see `keel_sim::objects`.
//!
//! ```
//! use keel_experiments::sim::objects::{self, ObjectsConfig};
//! let config = ObjectsConfig {
//!     nodes: 1,
//!     pus_per_node: 2,
//!     workload: Some("lassen:pus=2,steps=10".into()),
//!     period: 5,
//!     periods: vec![5],
//!     ..ObjectsConfig::default()
//! };
//! let report = objects::run(&config, &mut |_| {}).unwrap();
//! assert_eq!((report.table1.len(), report.table2.len()), (5, 1));
//! ```

use keel_policy::Spec;
use keel_sim::objects::{
    simulate_with_progress, Balancing, ObjectsModel, ObjectsRun, WorkloadCosts, DEFAULT_STEAL_COST,
};
use keel_sim::{Noise, SimError, WorkerModel};
use keel_workloads::objects::object_workload;
use serde::Serialize;

use crate::error::{ExperimentError, Result};

/// What to simulate.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectsConfig {
    /// Nodes.
    pub nodes: usize,
    /// PUs per node.
    pub pus_per_node: usize,
    /// The object workload's spec (`None`: `lassen:pus=NODES×PUS`, 16
    /// domains per PU; a spec without `pus` gets `pus=NODES×PUS`).
    pub workload: Option<String>,
    /// Table 1's fixed balancing period (the paper's 50).
    pub period: usize,
    /// Table 2's periods.
    pub periods: Vec<usize>,
    /// Exposure policy of the "+ stealing" rows.
    pub stealing: String,
    /// Seconds a thief pays per stolen chunk.
    pub steal_cost: f64,
    /// Coefficient of variation of every piece of work (normal noise).
    pub noise_cv: f64,
    /// Seed of the noise and of the thieves' choices.
    pub seed: u64,
    /// Table 3's speed of the slow PUs (the upper half of each node);
    /// `None`: no Table 3.
    pub slow_speed: Option<f64>,
}

impl Default for ObjectsConfig {
    /// The paper's Lassen study: 64 nodes × 16 PUs, period 50, Table 2 at
    /// 20, 50 and 100, `history-idle` stealing, 5 % noise, seed 1.
    fn default() -> Self {
        ObjectsConfig {
            nodes: 64,
            pus_per_node: 16,
            workload: None,
            period: 50,
            periods: vec![20, 50, 100],
            stealing: "history-idle".into(),
            steal_cost: DEFAULT_STEAL_COST,
            noise_cv: 0.05,
            seed: 1,
            slow_speed: None,
        }
    }
}

/// What [`run`] tells its caller while it runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ObjectsProgress<'a> {
    /// A configuration starts (its label).
    Config(&'a str),
    /// One simulated step done.
    Step,
}

/// One configuration's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// What ran.
    pub config: String,
    /// The simulated run.
    pub run: ObjectsRun,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct ObjectsSimReport {
    /// The workload spec.
    pub workload: String,
    /// Nodes.
    pub nodes: usize,
    /// PUs per node.
    pub pus_per_node: usize,
    /// The remap policy spec.
    pub policy: String,
    /// Table 1.
    pub table1: Vec<Row>,
    /// Table 2.
    pub table2: Vec<Row>,
    /// Table 3 (empty without `slow_speed`).
    pub table3: Vec<Row>,
    /// Time of No LB ÷ time of Greedy + stealing (goal ≥ 1.5).
    pub gain_vs_no_lb: f64,
    /// Time of Greedy ÷ time of Greedy + stealing (goal ≥ 1.1).
    pub gain_vs_greedy: f64,
}

/// One configuration of a table, its progress reported.
fn simulate_row(
    model: &ObjectsModel,
    costs: &WorkloadCosts,
    label: &str,
    balancing: &Balancing,
    progress: &mut dyn FnMut(ObjectsProgress<'_>),
) -> Result<Row> {
    progress(ObjectsProgress::Config(label));
    let run = simulate_with_progress(model, costs, balancing, &mut |_| {
        progress(ObjectsProgress::Step)
    })
    .map_err(sim_error)?;
    Ok(Row {
        config: label.to_string(),
        run,
    })
}

fn sim_error(e: SimError) -> ExperimentError {
    ExperimentError::sim("sim objects", e)
}

/// Labelled configurations of one table.
type Configs = Vec<(String, Balancing)>;

/// Table 1's and Table 2's configurations: label and balancing.
fn configs(config: &ObjectsConfig, policy: &str) -> Result<(Configs, Configs), SimError> {
    let t1 = vec![
        ("No LB".to_string(), Balancing::none("none")),
        (
            "Greedy (hier)".to_string(),
            Balancing::adaptive(policy, "none"),
        ),
        (
            "Greedy (hier) + stealing".to_string(),
            Balancing::adaptive(policy, &config.stealing),
        ),
        (
            "No LB + stealing".to_string(),
            Balancing::none(&config.stealing),
        ),
        (
            format!("Greedy (hier), every {}", config.period),
            Balancing::periodic(policy, config.period, "none")?,
        ),
    ];
    let t2 = config
        .periods
        .iter()
        .map(|&p| {
            Ok((
                format!("Greedy (hier), period {p}"),
                Balancing::periodic(policy, p, "none")?,
            ))
        })
        .collect::<Result<_, SimError>>()?;
    Ok((t1, t2))
}

/// How many simulated steps [`run`] makes in all (for a progress bar).
pub fn total_steps(config: &ObjectsConfig) -> Result<u64> {
    let work = object_workload(&workload_spec(config)?)?;
    let table3 = if config.slow_speed.is_some() { 2 } else { 0 };
    Ok(work.steps() as u64 * (5 + config.periods.len() + table3) as u64)
}

/// The workload spec: the configured one, else the proxy for every PU.
fn workload_spec(config: &ObjectsConfig) -> Result<String> {
    let pus = keel_sim::objects::machine_size(config.nodes, config.pus_per_node).map_err(|e| {
        ExperimentError::Invalid(format!("sim objects: --nodes × --pus-per-node: {e}"))
    })?;
    let Some(given) = &config.workload else {
        return Ok(format!("lassen:pus={pus}"));
    };
    let mut spec = Spec::parse(given.trim())
        .map_err(|e| ExperimentError::Invalid(format!("sim objects: --workload: {e}")))?;
    if spec.get("pus").is_none() {
        spec.params.insert(
            0,
            ("pus".into(), keel_policy::SpecValue::Token(pus.to_string())),
        );
    }
    Ok(spec.to_string())
}

/// Table 1 and Table 2; `progress` hears each configuration's label as it
/// starts (`Step(label)` with no step done) and then every simulated step.
pub fn run(
    config: &ObjectsConfig,
    progress: &mut dyn FnMut(ObjectsProgress<'_>),
) -> Result<ObjectsSimReport> {
    let spec = workload_spec(config)?;
    if config.period == 0 || config.periods.contains(&0) {
        return Err(ExperimentError::Invalid(
            "periods must be at least 1 step".into(),
        ));
    }
    if let Some(s) = config.slow_speed {
        if !(s.is_finite() && s > 0.0) {
            return Err(ExperimentError::Invalid(format!(
                "the slow PUs' speed must be finite and > 0 (got {s})"
            )));
        }
    }
    let work = object_workload(&spec)?;
    let costs = WorkloadCosts::uniform_cells(work.as_ref());
    let noise = Noise::normal(config.noise_cv).map_err(sim_error)?;
    let mut model =
        ObjectsModel::new(config.nodes, config.pus_per_node, noise).map_err(sim_error)?;
    model.steal_cost = config.steal_cost;
    model.seed = config.seed;
    let policy = format!("hier:nodes={},outer=(greedy),inner=(greedy)", config.nodes);
    let (t1, t2) = configs(config, &policy).map_err(sim_error)?;
    let mut simulate =
        |label: &str, b: &Balancing| simulate_row(&model, &costs, label, b, progress);
    let table1: Vec<Row> = t1
        .iter()
        .map(|(l, b)| simulate(l, b))
        .collect::<Result<_, _>>()?;
    let table2: Vec<Row> = t2
        .iter()
        .map(|(l, b)| simulate(l, b))
        .collect::<Result<_, _>>()?;
    let mut table3 = Vec::new();
    if let Some(slow) = config.slow_speed {
        let half = config.pus_per_node.div_ceil(2);
        for (p, pu) in model.pus.iter_mut().enumerate() {
            if p % config.pus_per_node >= half {
                *pu = WorkerModel::with(slow, noise, &[]).map_err(sim_error)?;
            }
        }
        let mut simulate =
            |label: &str, b: &Balancing| simulate_row(&model, &costs, label, b, progress);
        for (label, inner) in [("Greedy (hier)", "greedy"), ("LPT-EFT (hier)", "lpt-eft")] {
            let spec = format!("hier:nodes={},outer=(greedy),inner=({inner})", config.nodes);
            let b = Balancing::periodic(&spec, config.period, "none").map_err(sim_error)?;
            table3.push(simulate(&format!("{label}, slow PUs at {slow}"), &b)?);
        }
    }
    let t = |i: usize| table1[i].run.total_s;
    Ok(ObjectsSimReport {
        workload: work.spec(),
        nodes: config.nodes,
        pus_per_node: config.pus_per_node,
        policy,
        gain_vs_no_lb: t(0) / t(2),
        gain_vs_greedy: t(1) / t(2),
        table1,
        table2,
        table3,
    })
}
