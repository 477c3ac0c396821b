//! The objects model: over-decomposed objects on
//! `nodes × PUs per node`, stepped with a barrier per step, measured, and
//! remapped by any registry mapping policy when the invocation policy says
//! (`keel_policy::invoke`: adaptive, every `period` steps, or never) — the
//! simulator's counterpart of `keel::objects` + `keel::tasks`
//! (Charm++ + OpenMP paper, §3–5).
//!
//! - **Loads** come from a `keel-workloads` object proxy ([`WorkloadCosts`]:
//!   Lassen-like, lb_test, stencil), converted from spin units to seconds at
//!   `UNITS_PER_US`; they evolve per step as the proxy says.
//! - **Measurement.** What the simulator "measures" is what it simulated: an
//!   object's load is its simulated *work* in a step, as `keel::objects`
//!   attributes it — the time from its start to its end on its PU (noise of
//!   the PU's [`WorkerModel`] included), less the time its PU waited for
//!   thieves to finish its chunks (stealing others' chunks meanwhile
//!   included), plus the time thieves ran its chunks — summed since the
//!   last remap; PU background is the PU's time outside its objects before
//!   it went idle, which in this model is zero.
//! - **Run order.** Each PU runs its objects in id order; with stealing,
//!   after every step each PU stable-sorts its list by the work each object
//!   measured in that step, lightest first, so a hot object's divisible
//!   task comes when other PUs of its node are idle and can take chunks;
//!   after a remap, the new lists are sorted the same way (ties in id
//!   order), as `keel::objects`' remap does.
//! - **Balancing** goes through [`balance::decide`], the same context
//!   handler `keel::objects` builds (PU speeds included where the PU
//!   models' base speeds differ, as `ObjectsBuilder::speeds` declares
//!   them), with the unchanged registry policy
//!   (`greedy`, `hier:nodes=64,...`, anything the registry builds). Its
//!   time is *modelled*, not measured (a measured wall time would make
//!   runs irreproducible): `decision_per_object` seconds per object (the
//!   default is Charm++'s centralised GreedyLB, 0.13 s for 36k objects in
//!   published lb_test runs with Charm++ 6.8.1), plus migrations through [`MigrationModel`].
//!   The invocation reads each step's simulated PU busy times and each
//!   remap's modelled cost, as the runtimes feed it measured ones.
//! - **Stealing** of potential tasks happens inside a node only; see
//!   `step`.
//!
//! A small stencil on one node of two PUs, block placement and no remaps:
//!
//! ```
//! use keel_sim::objects::{simulate, Balancing, ObjectsModel, WorkloadCosts};
//! use keel_sim::Noise;
//! use keel_workloads::objects::object_workload;
//! let work = object_workload("stencil:pus=2,objects=8,rows=4,row-us=10,steps=3,scale=1").unwrap();
//! let model = ObjectsModel::new(1, 2, Noise::None).unwrap();
//! let run = simulate(&model, &WorkloadCosts::new(work.as_ref()), &Balancing::none("none")).unwrap();
//! assert_eq!(run.step_s.len(), 3);
//! assert_eq!(run.placement.len(), 8);
//! assert_eq!(run.migrations, 0);
//! ```

pub mod balance;
mod step;

use keel_policy::expose::{Expose, ExposeState};
use keel_policy::invoke::{Invocation, LoadHistory, Trigger};
use keel_policy::{mapping, metrics, Concept, ContextHandler, Model, Origin, Subject};
use keel_workloads::objects::{ObjectWorkload, UNITS_PER_US};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

pub use balance::{decide, Decided, MigrationModel, RemapInput};
pub use step::{TaskStats, CHUNKS_PER_WORKER, MAX_CHUNKS};

use crate::error::SimError;
use crate::worker::{Noise, WorkerModel};

/// Per-object, per-step costs in seconds at speed 1.
pub trait ObjectCosts {
    /// Number of objects.
    fn objects(&self) -> usize;
    /// Steps of a run.
    fn steps(&self) -> usize;
    /// Serial seconds of `object` in `step`.
    fn serial(&self, object: usize, step: usize) -> f64;
    /// Cells of the object's potential task (0 = none).
    fn cells(&self, object: usize) -> usize;
    /// Seconds of the whole potential task of `object` in `step`.
    fn potential(&self, object: usize, step: usize) -> f64;
    /// Seconds of each of `chunks` contiguous chunks of the potential task
    /// (chunk `c` covers cells `c·len/chunks .. (c+1)·len/chunks`, as
    /// `keel::tasks` cuts them), pushed onto `out`.
    fn chunk_costs(&self, object: usize, step: usize, chunks: usize, out: &mut Vec<f64>);
}

/// The costs of a `keel-workloads` object proxy.
pub struct WorkloadCosts<'w> {
    work: &'w dyn ObjectWorkload,
    uniform_cells: bool,
}

fn units_to_s(units: u64) -> f64 {
    units as f64 / UNITS_PER_US * 1e-6
}

impl<'w> WorkloadCosts<'w> {
    /// Every cell's cost asked of the workload (exact for any proxy).
    pub fn new(work: &'w dyn ObjectWorkload) -> Self {
        WorkloadCosts {
            work,
            uniform_cells: false,
        }
    }

    /// For proxies whose cells of one object cost the same in a step (the
    /// Lassen-like front spreads its work "evenly over the cells"): cell 0
    /// stands for all, which keeps 16,384 domains × 64 cells × 300 steps
    /// cheap. `tests/objects_golden.rs` checks it against [`Self::new`].
    pub fn uniform_cells(work: &'w dyn ObjectWorkload) -> Self {
        WorkloadCosts {
            work,
            uniform_cells: true,
        }
    }

    fn cell(&self, object: usize, step: usize, cell: usize) -> f64 {
        let c = if self.uniform_cells { 0 } else { cell };
        units_to_s(self.work.cell_units(object, step, c))
    }
}

impl ObjectCosts for WorkloadCosts<'_> {
    fn objects(&self) -> usize {
        self.work.objects()
    }
    fn steps(&self) -> usize {
        self.work.steps()
    }
    fn serial(&self, object: usize, step: usize) -> f64 {
        units_to_s(self.work.serial_units(object, step))
    }
    fn cells(&self, object: usize) -> usize {
        self.work.cells(object)
    }
    fn potential(&self, object: usize, step: usize) -> f64 {
        let cells = self.work.cells(object);
        if self.uniform_cells {
            cells as f64 * self.cell(object, step, 0)
        } else {
            (0..cells).map(|c| self.cell(object, step, c)).sum()
        }
    }
    fn chunk_costs(&self, object: usize, step: usize, chunks: usize, out: &mut Vec<f64>) {
        let len = self.work.cells(object);
        let bound = |c: usize| c * len / chunks;
        for c in 0..chunks {
            let (a, b) = (bound(c), bound(c + 1));
            if self.uniform_cells {
                out.push((b - a) as f64 * self.cell(object, step, 0));
            } else {
                out.push((a..b).map(|i| self.cell(object, step, i)).sum());
            }
        }
    }
}

/// The machine and its runtime costs.
#[derive(Debug, Clone)]
pub struct ObjectsModel {
    /// Nodes (≥ 1).
    pub nodes: usize,
    /// PUs per node (≥ 1).
    pub pus_per_node: usize,
    /// One model per PU (`nodes × pus_per_node`), numbered node by node.
    pub pus: Vec<WorkerModel>,
    /// Which PUs may run objects (one flag per PU).
    pub available: Vec<bool>,
    /// Which objects may move (`None` = all).
    pub migratable: Option<Vec<bool>>,
    /// Seconds a thief pays per stolen chunk.
    pub steal_cost: f64,
    /// Seconds of the barrier that ends every step.
    pub barrier_cost: f64,
    /// Modelled decision seconds per object per remap.
    pub decision_per_object: f64,
    /// Cost of moving objects between nodes.
    pub migration: MigrationModel,
    /// Seed of the noise and of the thieves' victim choice.
    pub seed: u64,
}

/// The most PUs a simulated machine may have: 2²⁰ = 1,048,576 (the paper's
/// Lassen runs use 64 nodes × 40 PUs). Every PU holds a worker model and a
/// queue; past this the model is a memory exhaustion, not an experiment.
pub const MAX_PUS: usize = 1 << 20;

/// Checks `nodes × pus_per_node` against [`MAX_PUS`] (and that both are at
/// least 1), returning the product.
pub fn machine_size(nodes: usize, pus_per_node: usize) -> Result<usize, SimError> {
    if nodes == 0 || pus_per_node == 0 {
        return Err(SimError::invalid(
            "machine",
            format!("{nodes} nodes × {pus_per_node} PUs"),
            "at least 1 node of at least 1 PU",
        ));
    }
    match nodes.checked_mul(pus_per_node) {
        Some(n) if n <= MAX_PUS => Ok(n),
        _ => Err(SimError::over_limit(
            "machine size",
            format!(
                "{nodes} nodes × {pus_per_node} PUs = {} PUs",
                nodes as u128 * pus_per_node as u128
            ),
            format!("at most MAX_PUS = {MAX_PUS} PUs"),
        )),
    }
}

/// Default steal cost: a remote deque CAS and the chunk's cache misses.
pub const DEFAULT_STEAL_COST: f64 = 2e-6;
/// Default barrier: a few network latencies.
pub const DEFAULT_BARRIER_COST: f64 = 20e-6;
/// Charm++ GreedyLB on 36k objects takes about 0.13 s (lb_test's Mesh2D of
/// 35,990 elements, Charm++ 6.8.1, 144–672 PEs): 3.6 µs per object.
pub const DEFAULT_DECISION_PER_OBJECT: f64 = 0.13 / 36_000.0;
/// Default object state: 256 KiB (a domain of a few thousand mesh nodes).
pub const DEFAULT_OBJECT_BYTES: f64 = 256.0 * 1024.0;
/// Default per-node link bandwidth, bytes/s (Blue Waters' Gemini: a few GB/s).
pub const DEFAULT_BANDWIDTH: f64 = 5e9;
/// Default latency of a remap with cross-node moves.
pub const DEFAULT_MIGRATION_LATENCY: f64 = 10e-6;

impl ObjectsModel {
    /// `nodes × pus_per_node` PUs of speed 1 with `noise`, all available,
    /// every object migratable, the default costs.
    pub fn new(nodes: usize, pus_per_node: usize, noise: Noise) -> Result<Self, SimError> {
        let n = machine_size(nodes, pus_per_node)?;
        let pu = WorkerModel::with(1.0, noise, &[])?;
        Ok(ObjectsModel {
            nodes,
            pus_per_node,
            pus: vec![pu; n],
            available: vec![true; n],
            migratable: None,
            steal_cost: DEFAULT_STEAL_COST,
            barrier_cost: DEFAULT_BARRIER_COST,
            decision_per_object: DEFAULT_DECISION_PER_OBJECT,
            migration: MigrationModel {
                object_bytes: DEFAULT_OBJECT_BYTES,
                bandwidth: DEFAULT_BANDWIDTH,
                latency: DEFAULT_MIGRATION_LATENCY,
            },
            seed: 0,
        })
    }

    /// Total PUs.
    pub fn npus(&self) -> usize {
        self.nodes.saturating_mul(self.pus_per_node)
    }

    fn validate(&self, objects: usize) -> Result<(), SimError> {
        let n = machine_size(self.nodes, self.pus_per_node)?;
        if self.pus.len() != n {
            return Err(SimError::invalid(
                "PU models",
                self.pus.len(),
                "one per PU (nodes × PUs per node)",
            ));
        }
        if self.available.len() != n {
            return Err(SimError::invalid(
                "availability flags",
                self.available.len(),
                "one per PU",
            ));
        }
        if !self.available.iter().any(|&a| a) {
            return Err(SimError::invalid(
                "availability flags",
                "none available",
                "at least one PU available",
            ));
        }
        if let Some(m) = &self.migratable {
            if m.len() != objects {
                return Err(SimError::invalid(
                    "migratable flags",
                    m.len(),
                    "one per object",
                ));
            }
        }
        for (what, v) in [
            ("steal cost", self.steal_cost),
            ("barrier cost", self.barrier_cost),
            ("decision time per object", self.decision_per_object),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(SimError::invalid(what, v, "must be finite and ≥ 0 seconds"));
            }
        }
        self.migration.validate()
    }
}

/// How a run balances.
#[derive(Debug, Clone, PartialEq)]
pub struct Balancing {
    /// Mapping spec for remaps (through the registry).
    pub policy: String,
    /// Mapping spec of the first placement (it sees zero loads), `block` in
    /// `keel::objects`.
    pub initial: String,
    /// When to remap (never after the last step): the invocation policy
    /// the runtimes use, fed the simulated PUs' busy times and the
    /// modelled remap costs.
    pub invocation: Invocation,
    /// Exposure policy of potential tasks (`none` = no stealing).
    pub stealing: String,
}

impl Balancing {
    /// No remaps, block placement, with or without stealing.
    pub fn none(stealing: &str) -> Self {
        Balancing {
            policy: "block".into(),
            initial: "block".into(),
            invocation: Invocation::Never,
            stealing: stealing.into(),
        }
    }

    /// `policy` every `period` steps from a block placement; a period of
    /// 0 is an error.
    pub fn periodic(policy: &str, period: usize, stealing: &str) -> Result<Self, SimError> {
        let invocation = Invocation::every(period)
            .ok_or_else(|| SimError::invalid("balancing period", 0, "at least 1 step (or none)"))?;
        Ok(Balancing {
            policy: policy.into(),
            initial: "block".into(),
            invocation,
            stealing: stealing.into(),
        })
    }

    /// `policy` when the loss to imbalance pays for a remap (the adaptive
    /// invocation), from a block placement.
    pub fn adaptive(policy: &str, stealing: &str) -> Self {
        Balancing {
            policy: policy.into(),
            initial: "block".into(),
            invocation: Invocation::Adaptive,
            stealing: stealing.into(),
        }
    }
}

/// One remap.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RemapReport {
    /// Steps completed when it ran.
    pub step: usize,
    /// Objects moved.
    pub migrations: usize,
    /// Objects moved to another node.
    pub cross_node: usize,
    /// λ (PU level) of the measured loads under the old placement.
    pub lambda_before: f64,
    /// λ of the same loads under the new placement.
    pub lambda_after: f64,
    /// Modelled decision seconds.
    pub decision_s: f64,
    /// Modelled migration seconds.
    pub migration_s: f64,
    /// Why it ran: the invocation's reason.
    pub reason: String,
    /// The new placement (not in JSON: it can be large).
    #[serde(skip)]
    pub placement: Vec<usize>,
}

/// What a simulated run measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObjectsRun {
    /// The remap policy's canonical spec.
    pub policy: String,
    /// When it remapped: the invocation's spec.
    pub invocation: String,
    /// The exposure policy's spec.
    pub stealing: String,
    /// Steps run.
    pub steps: usize,
    /// Each step's time, barrier included.
    pub step_s: Vec<f64>,
    /// Σ step times.
    pub steps_s: f64,
    /// Σ remap times (decision + migration).
    pub balance_s: f64,
    /// Σ modelled decision times.
    pub decision_s: f64,
    /// Σ modelled migration times.
    pub migration_s: f64,
    /// Total simulated time: steps plus remaps.
    pub total_s: f64,
    /// λ at the PU level: Σ_t max_p busy / Σ_t mean_p busy − 1 over
    /// available PUs (`metrics::stepped_lambda`, as `keel::objects`).
    pub lambda_pu: f64,
    /// The same at the node level (a node's load = its PUs' busy time).
    pub lambda_node: f64,
    /// Σ busy seconds of every PU.
    pub busy_s: f64,
    /// Objects moved over the run.
    pub migrations: usize,
    /// Every remap.
    pub remaps: Vec<RemapReport>,
    /// Potential-task counters.
    pub tasks: TaskStats,
    /// Times each object was stepped (every entry equals `steps`).
    pub object_steps: Vec<u32>,
    /// The placement at the end.
    #[serde(skip)]
    pub placement: Vec<usize>,
    /// Events processed.
    pub events: u64,
}

/// The first placement: `initial` over zero loads and the availability,
/// as `keel::objects`' builder makes it.
fn initial_placement(
    spec: &str,
    objects: usize,
    available: &[bool],
) -> Result<Vec<usize>, SimError> {
    let registry = mapping::registry();
    let policy = registry.build(spec)?;
    let zeros_t = vec![0.0; objects];
    let zeros_p = vec![0.0; available.len()];
    let dynamic = |subject| Concept::Workload {
        subject,
        model: Model::Dynamic,
    };
    let mut ctx = ContextHandler::new();
    ctx.provide_values(dynamic(Subject::Tasks), Origin::Runtime, &zeros_t[..])
        .provide_values(dynamic(Subject::Pus), Origin::Runtime, &zeros_p[..])
        .provide_flags(Concept::PuAvailability, Origin::Runtime, available);
    let first = policy.map(&ctx)?;
    if first.ntasks() != objects || first.npus() != available.len() {
        return Err(SimError::Policy(format!(
            "initial `{spec}` decided for {} objects on {} PUs",
            first.ntasks(),
            first.npus()
        )));
    }
    if let Some((o, &p)) = first
        .as_slice()
        .iter()
        .enumerate()
        .find(|(_, &p)| !available[p])
    {
        return Err(SimError::Policy(format!(
            "initial `{spec}` placed object {o} on unavailable PU {p}"
        )));
    }
    Ok(first.into_vec())
}

fn lists_of(placement: &[usize], npus: usize) -> Vec<Vec<usize>> {
    let mut lists = vec![Vec::new(); npus];
    for (o, &p) in placement.iter().enumerate() {
        lists[p].push(o);
    }
    lists
}

/// Runs `costs` on `model` under `balancing`.
pub fn simulate(
    model: &ObjectsModel,
    costs: &dyn ObjectCosts,
    balancing: &Balancing,
) -> Result<ObjectsRun, SimError> {
    simulate_with_progress(model, costs, balancing, &mut |_| {})
}

/// As [`simulate`], calling `progress(steps done)` after every step.
pub fn simulate_with_progress(
    model: &ObjectsModel,
    costs: &dyn ObjectCosts,
    balancing: &Balancing,
    progress: &mut dyn FnMut(usize),
) -> Result<ObjectsRun, SimError> {
    let n = costs.objects();
    model.validate(n)?;
    let npus = model.npus();
    let registry = mapping::registry();
    let policy = registry.build(balancing.policy.trim())?;
    let expose = Expose::parse(&balancing.stealing)?;
    let migratable = model.migratable.clone().unwrap_or_else(|| vec![true; n]);
    let mut placement = initial_placement(balancing.initial.trim(), n, &model.available)?;
    let mut lists = lists_of(&placement, npus);
    let machine = step::Machine {
        pus: &model.pus,
        available: &model.available,
        pus_per_node: model.pus_per_node,
        steal_cost: model.steal_cost,
        expose: expose.steals().then_some(expose),
    };
    let mut st = step::Persistent {
        history: vec![ExposeState::new(&expose); npus],
        last_work: vec![0.0; n],
        rng: ChaCha8Rng::seed_from_u64(model.seed),
        stats: TaskStats::default(),
    };
    let steps = costs.steps();
    let mut run = ObjectsRun {
        policy: policy.spec().to_string(),
        invocation: balancing.invocation.spec(),
        stealing: expose.spec(),
        steps,
        step_s: Vec::with_capacity(steps),
        steps_s: 0.0,
        balance_s: 0.0,
        decision_s: 0.0,
        migration_s: 0.0,
        total_s: 0.0,
        lambda_pu: 0.0,
        lambda_node: 0.0,
        busy_s: 0.0,
        migrations: 0,
        remaps: Vec::new(),
        tasks: TaskStats::default(),
        object_steps: vec![0; n],
        placement: Vec::new(),
        events: 0,
    };
    let mut loads = vec![0.0; n];
    let background = vec![0.0; npus];
    // The speeds a runtime would declare: offered only where they differ,
    // so that a machine of equal PUs remaps exactly as before.
    let base_speeds: Vec<f64> = model.pus.iter().map(WorkerModel::speed).collect();
    let speeds = base_speeds
        .iter()
        .any(|&s| s != 1.0)
        .then_some(&base_speeds[..]);
    // What a runtime expects its first remap to cost: the modelled
    // decision (migrations are unknown before deciding).
    let mut trigger = Trigger::new(balancing.invocation, model.decision_per_object * n as f64);
    let mut history = LoadHistory::new();
    let mut pu_rows: Vec<Vec<f64>> = Vec::with_capacity(steps);
    let mut node_rows: Vec<Vec<f64>> = Vec::with_capacity(steps);
    let mut t = 0.0;
    for k in 0..steps {
        let r = step::run_step(
            &machine,
            costs,
            k,
            t,
            &lists,
            &mut loads,
            &mut run.object_steps,
            &mut st,
        );
        run.events += r.events;
        let step_s = r.end - t + model.barrier_cost;
        run.step_s.push(step_s);
        run.steps_s += step_s;
        t += step_s;
        run.busy_s += r.pu_busy.iter().sum::<f64>();
        let mut node_row = vec![0.0; model.nodes];
        for (p, &b) in r.pu_busy.iter().enumerate() {
            node_row[p / model.pus_per_node] += b;
        }
        // Nodes with no available PU carry no load and are left out, as
        // unavailable PUs are.
        let node_live: Vec<bool> = (0..model.nodes)
            .map(|nd| {
                (nd * model.pus_per_node..(nd + 1) * model.pus_per_node).any(|p| model.available[p])
            })
            .collect();
        node_rows.push(
            node_row
                .into_iter()
                .zip(&node_live)
                .filter(|(_, &l)| l)
                .map(|(b, _)| b)
                .collect(),
        );
        pu_rows.push(
            r.pu_busy
                .into_iter()
                .zip(&model.available)
                .filter(|(_, &a)| a)
                .map(|(b, _)| b)
                .collect(),
        );
        let summary = history.add(pu_rows.last().map_or(&[][..], |r| &r[..]));
        let verdict = trigger.after_step(k + 1, &summary, Some(steps - k - 1));
        if verdict.balance && k + 1 < steps {
            let d = decide(
                policy.as_ref(),
                &RemapInput {
                    loads: &loads,
                    background: &background,
                    migratable: &migratable,
                    available: &model.available,
                    current: &placement,
                    speeds,
                },
            )?;
            let next = d.mapping.into_vec();
            let decision_s = model.decision_per_object * n as f64;
            let migration_s = model.migration.cost(&placement, &next, model.pus_per_node);
            let cross_node = placement
                .iter()
                .zip(&next)
                .filter(|(&a, &b)| a / model.pus_per_node != b / model.pus_per_node)
                .count();
            t += decision_s + migration_s;
            trigger.balanced(decision_s + migration_s);
            history.clear();
            run.decision_s += decision_s;
            run.migration_s += migration_s;
            run.balance_s += decision_s + migration_s;
            run.migrations += d.migrations;
            lists = lists_of(&next, npus);
            run.remaps.push(RemapReport {
                step: k + 1,
                migrations: d.migrations,
                cross_node,
                lambda_before: d.lambda_before,
                lambda_after: d.lambda_after,
                decision_s,
                migration_s,
                reason: verdict.reason.to_string(),
                placement: next.clone(),
            });
            placement = next;
            loads.iter_mut().for_each(|l| *l = 0.0);
        }
        // As `keel::objects` after a step (and after a remap, whose lists
        // come in id order): heavy divisible work last, when other PUs are
        // idle to share it. Stable, so ties keep id order.
        if machine.expose.is_some() {
            for list in &mut lists {
                list.sort_by(|&a, &b| st.last_work[a].total_cmp(&st.last_work[b]));
            }
        }
        progress(k + 1);
    }
    run.total_s = t;
    run.lambda_pu = metrics::stepped_lambda(&pu_rows);
    run.lambda_node = metrics::stepped_lambda(&node_rows);
    run.tasks = st.stats;
    run.placement = placement;
    Ok(run)
}
