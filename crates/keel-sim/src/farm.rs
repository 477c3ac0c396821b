//! The farm model: an emitter, `p` workers each with its
//! own input queue, and any `keel_policy::farm` dispatch policy, driven
//! unchanged through its [`Dispatch`] trait — the same calls, in the same
//! order, that `keel::farm`'s emitter makes (its `emit` and `worker_main`
//! functions):
//!
//! - For each item the emitter asks [`Dispatch::next`] through a
//!   [`QueueView`] over the simulated queues and enacts the decision:
//!   `Send(w)` pushes the item; `SendAndMark` pushes the item, then the
//!   marker to every worker holding no earlier marker (so at most one marker
//!   sits in any queue, as the thread farm does); `WaitForRoom` and
//!   `WaitForMarker` put the emitter to sleep until a bounded queue loses an
//!   item or a worker dequeues a marker, and the *same* item is offered
//!   again.
//! - Levels count what sits in a queue, markers included; an item a worker
//!   runs has left its queue (FastFlow's `length()`). Bounded queues take
//!   markers past their capacity (`push_past_capacity`).
//! - A worker dequeues in FIFO order; a marker costs it nothing and raises
//!   `marker_reached` to its block; an item takes its cost (seconds at speed
//!   1) on the worker's [`WorkerModel`] (speed, noise, perturbations).
//! - The emitter pays `emitter_cost` seconds per push (item or marker): the
//!   source, the decision and the queue write. With a free emitter and
//!   unbounded queues every item is dispatched at time zero, so a policy
//!   that reads levels per item (`shortest-queue`) sees empty queues every
//!   time and degenerates to round-robin; its ideal model needs items to
//!   arrive while workers consume, i.e. bounded queues (or an emitter no
//!   faster than the workers). This is the thread farm's behaviour too.
//!
//! - A policy that reads speeds (`eft`) sees each worker's base speed when
//!   the model says so (`told_speeds`), else the speed measured as
//!   `keel::farm`'s workers measure it: work over busy time of the items
//!   the worker finished (work = the items' costs with `cost_hints`, one
//!   per item without), nothing before its first; and each worker's
//!   finished items. With `cost_hints` the item's cost is its hint.
//!
//! Not modelled: the emitter's wake-up latency after a park, the
//! collector, feedback (the material farm of §III-E.2).
//!
//! Round-robin over two equal workers: each runs half the items.
//!
//! ```
//! use keel_sim::farm::{simulate, uniform_costs, FarmModel};
//! let model = FarmModel::heterogeneous(2, 0, 1.0).unwrap();
//! let costs = uniform_costs(10, 1e-3).unwrap();
//! let run = simulate(&model, "rr", &costs).unwrap();
//! assert_eq!(run.per_worker, vec![5, 5]);
//! assert!(run.makespan >= 5e-3);
//! ```

use std::cell::Cell;
use std::collections::VecDeque;

use keel_policy::farm::{self as policy, Decision, Dispatch, FarmConfig, QueueView};
use keel_workloads::farm::Primes;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::engine::{EventQueue, SimTime};
use crate::error::SimError;
use crate::worker::WorkerModel;

/// The slow worker's task time in the paper's hardware simulation (primes
/// up to 7,500: "∼ 0.28 ms", §III-C).
pub const PAPER_SLOW_TASK_S: f64 = 0.28e-3;

/// The fast worker's speed in the paper's hardware simulation
/// (`s_f ∼ 5.8`, §III-C: primes up to 2,000 take ∼ 0.048 ms).
pub const PAPER_FAST_SPEED: f64 = 5.8;

/// The most workers a simulated farm may have: 65,536 (the paper's
/// farms have 4–16). Each worker holds a model and a queue; past this
/// a farm is a memory exhaustion, not an experiment.
pub const MAX_FARM_WORKERS: usize = 1 << 16;

/// The most items [`uniform_costs`] builds: 2²⁶ ≈ 67 million (the paper's
/// streams have 1,000–16,000), 512 MiB of costs.
pub const MAX_FARM_ITEMS: usize = 1 << 26;

/// A farm to simulate.
#[derive(Debug, Clone)]
pub struct FarmModel {
    /// One model per worker.
    pub workers: Vec<WorkerModel>,
    /// Capacity of every input queue (`None` = unbounded, the paper's);
    /// a policy's own capacity (`on-demand`) wins, as in `keel::farm`.
    pub capacity: Option<usize>,
    /// Emitter seconds per push (item or marker).
    pub emitter_cost: f64,
    /// Seed of the workers' noise.
    pub seed: u64,
    /// Whether the emitter is told each worker's base speed (as
    /// `keel::farm::FarmBuilder::speeds` tells the thread farm); otherwise
    /// a policy that reads speeds sees them measured: work done over time
    /// spent running finished items, nothing until a worker finishes one.
    pub told_speeds: bool,
    /// Whether the emitter is told each item's cost (its hint, in seconds
    /// at speed 1); measured speeds then count work in those units, and
    /// otherwise in items.
    pub cost_hints: bool,
}

impl FarmModel {
    /// `workers` workers of speed 1, the first `fast` of them `fast_speed`
    /// times faster (the paper's heterogeneous farm), unbounded queues, a
    /// free emitter.
    pub fn heterogeneous(workers: usize, fast: usize, fast_speed: f64) -> Result<Self, SimError> {
        if workers == 0 {
            return Err(SimError::invalid("farm workers", 0, "at least 1"));
        }
        check_workers(workers)?;
        let models = (0..workers)
            .map(|w| WorkerModel::new(if w < fast { fast_speed } else { 1.0 }))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(FarmModel {
            workers: models,
            capacity: None,
            emitter_cost: 0.0,
            seed: 0,
            told_speeds: false,
            cost_hints: false,
        })
    }

    /// Checks the model's parameters.
    pub fn validate(&self) -> Result<(), SimError> {
        if self.workers.is_empty() {
            return Err(SimError::invalid("farm workers", 0, "at least 1"));
        }
        check_workers(self.workers.len())?;
        if self.capacity == Some(0) {
            return Err(SimError::invalid(
                "queue capacity",
                0,
                "at least 1 (or unbounded)",
            ));
        }
        if !(self.emitter_cost.is_finite() && self.emitter_cost >= 0.0) {
            return Err(SimError::invalid(
                "emitter cost",
                self.emitter_cost,
                "must be finite and ≥ 0 seconds",
            ));
        }
        Ok(())
    }

    /// The paper's Eq. 2 for these workers' base speeds:
    /// `S = Σsᵢ / (p · s_slowest)`.
    pub fn model_speedup(&self) -> f64 {
        let speeds: Vec<f64> = self.workers.iter().map(WorkerModel::speed).collect();
        let slowest = speeds.iter().copied().fold(f64::INFINITY, f64::min);
        speeds.iter().sum::<f64>() / (speeds.len() as f64 * slowest)
    }
}

fn check_workers(workers: usize) -> Result<(), SimError> {
    if workers > MAX_FARM_WORKERS {
        return Err(SimError::over_limit(
            "farm size",
            format!("{workers} workers"),
            format!("at most MAX_FARM_WORKERS = {MAX_FARM_WORKERS} workers"),
        ));
    }
    Ok(())
}

/// Per-item costs, seconds at speed 1: between 1 and [`MAX_FARM_ITEMS`]
/// items (a stream of none has no makespan to compare).
pub fn uniform_costs(items: usize, cost: f64) -> Result<Vec<f64>, SimError> {
    if items == 0 {
        return Err(SimError::invalid("stream length", 0, "at least 1 item"));
    }
    if items > MAX_FARM_ITEMS {
        return Err(SimError::over_limit(
            "stream length",
            format!("{items} items"),
            format!("at most MAX_FARM_ITEMS = {MAX_FARM_ITEMS} items"),
        ));
    }
    if !(cost.is_finite() && cost >= 0.0) {
        return Err(SimError::invalid(
            "item cost",
            cost,
            "must be finite and ≥ 0 seconds",
        ));
    }
    Ok(vec![cost; items])
}

/// The paper's heterogeneous experiment from the `primes` workload: its
/// `tasks` items cost `slow_task_s` on a slow worker, and its
/// `fast-workers` workers run `fast_speed` times faster (the paper makes a
/// worker fast by giving it cheaper tasks; a faster worker is the same
/// thing to the farm). Returns the model (unbounded queues, free emitter)
/// and the costs.
pub fn primes_farm(
    w: &Primes,
    workers: usize,
    slow_task_s: f64,
    fast_speed: f64,
) -> Result<(FarmModel, Vec<f64>), SimError> {
    let model = FarmModel::heterogeneous(workers, w.fast_workers.min(workers), fast_speed)?;
    Ok((model, uniform_costs(w.tasks, slow_task_s)?))
}

/// What a simulated farm run measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FarmRun {
    /// The policy's canonical spec.
    pub policy: String,
    /// When the last item finished, seconds.
    pub makespan: f64,
    /// Items each worker ran.
    pub per_worker: Vec<u64>,
    /// Seconds each worker spent running items.
    pub busy: Vec<f64>,
    /// Which worker ran each item (index by item).
    pub worker_of: Vec<usize>,
    /// Markers pushed (all workers counted).
    pub markers: u64,
    /// Marker blocks announced by the policy.
    pub blocks: u64,
    /// Times the policy read one queue's level.
    pub level_reads: u64,
    /// Times the emitter waited for room.
    pub waits_for_room: u64,
    /// Times the emitter waited for a marker.
    pub waits_for_marker: u64,
    /// The highest level any queue reached.
    pub max_level: usize,
    /// Events the engine processed.
    pub events: u64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Msg {
    Item(usize),
    Marker(u64),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Event {
    /// The emitter may dispatch (after a push, or woken).
    Emit,
    /// Worker `w` finished its item.
    Done(usize),
}

/// The simulated queues as a policy sees them.
struct View<'a> {
    queues: &'a [VecDeque<Msg>],
    capacity: Option<usize>,
    reached: u64,
    ready: usize,
    reads: &'a Cell<u64>,
    /// Told base speeds, or `None` to report measured ones.
    told: Option<&'a [f64]>,
    /// Per worker: work and seconds of the items it finished.
    done_work: &'a [f64],
    done_busy: &'a [f64],
    done: &'a [u64],
    cost: Option<f64>,
}

impl QueueView for View<'_> {
    fn workers(&self) -> usize {
        self.queues.len()
    }
    fn level(&self, worker: usize) -> usize {
        self.reads.set(self.reads.get() + 1);
        self.queues[worker].len()
    }
    fn has_room(&self, worker: usize) -> bool {
        self.capacity.is_none_or(|c| self.queues[worker].len() < c)
    }
    fn marker_reached(&self) -> u64 {
        self.reached
    }
    fn ready(&self) -> Option<usize> {
        Some(self.ready)
    }
    fn speed(&self, worker: usize) -> Option<f64> {
        match self.told {
            Some(speeds) => speeds.get(worker).copied(),
            None => {
                let busy = *self.done_busy.get(worker)?;
                (busy > 0.0).then(|| self.done_work[worker] / busy)
            }
        }
    }
    fn cost_hint(&self) -> Option<f64> {
        self.cost
    }
    fn done(&self, worker: usize) -> Option<u64> {
        self.done.get(worker).copied()
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Emitter {
    /// An `Emit` event is scheduled.
    Scheduled,
    /// Asleep until room frees up.
    WaitingRoom,
    /// Asleep until `marker_reached >= block`.
    WaitingMarker(u64),
    /// Every item dispatched.
    Done,
}

/// Runs `costs` through a farm under the policy `spec` (built with
/// [`keel_policy::farm::parse`]).
pub fn simulate(model: &FarmModel, spec: &str, costs: &[f64]) -> Result<FarmRun, SimError> {
    let dispatch = policy::parse(spec).map_err(|e| SimError::Policy(e.to_string()))?;
    simulate_with(model, dispatch, costs)
}

/// As [`simulate`], with a policy object already built (a user's own).
pub fn simulate_with(
    model: &FarmModel,
    mut dispatch: Box<dyn Dispatch>,
    costs: &[f64],
) -> Result<FarmRun, SimError> {
    model.validate()?;
    if let Some((i, &c)) = costs
        .iter()
        .enumerate()
        .find(|(_, c)| !(c.is_finite() && **c >= 0.0))
    {
        return Err(SimError::invalid(
            "item cost",
            format!("{c} (item {i})"),
            "must be finite and ≥ 0 seconds",
        ));
    }
    let p = model.workers.len();
    let capacity = dispatch.capacity().or(model.capacity);
    let config = FarmConfig::new(p, capacity).map_err(|e| SimError::Policy(e.to_string()))?;
    dispatch
        .start(&config)
        .map_err(|e| SimError::Policy(e.to_string()))?;
    let policy_spec = dispatch.spec().to_string();

    let mut rng = ChaCha8Rng::seed_from_u64(model.seed);
    let mut q: EventQueue<Event> = EventQueue::new();
    let mut queues: Vec<VecDeque<Msg>> = vec![VecDeque::new(); p];
    // Per worker: the item it runs, when it started and when it ends.
    let mut running: Vec<Option<(usize, SimTime, SimTime)>> = vec![None; p];
    let told: Vec<f64> = model.workers.iter().map(WorkerModel::speed).collect();
    let mut done_work = vec![0.0f64; p];
    let mut done_busy = vec![0.0f64; p];
    let mut done = vec![0u64; p];
    let mut marker_sent = vec![0u64; p];
    let mut marker_seen = vec![0u64; p];
    let mut reached = 0u64;
    let reads = Cell::new(0u64);
    let mut run = FarmRun {
        policy: policy_spec,
        makespan: 0.0,
        per_worker: vec![0; p],
        busy: vec![0.0; p],
        worker_of: vec![usize::MAX; costs.len()],
        markers: 0,
        blocks: 0,
        level_reads: 0,
        waits_for_room: 0,
        waits_for_marker: 0,
        max_level: 0,
        events: 0,
    };
    let mut next_item = 0usize;
    let mut emitter = if costs.is_empty() {
        Emitter::Done
    } else {
        q.schedule(0.0, Event::Emit);
        Emitter::Scheduled
    };

    // Starts worker `w` on the front of its queue, if it is idle. Markers
    // are dequeued at once (they cost the worker nothing). Returns whether
    // the emitter should wake: it was waiting for room and a bounded queue
    // shrank, or for a marker that is now reached.
    macro_rules! start_worker {
        ($w:expr, $now:expr) => {{
            let w: usize = $w;
            let now: SimTime = $now;
            let mut wake = false;
            while running[w].is_none() {
                match queues[w].pop_front() {
                    None => break,
                    Some(Msg::Marker(block)) => {
                        marker_seen[w] = block;
                        reached = reached.max(block);
                        if let Emitter::WaitingMarker(b) = emitter {
                            wake |= reached >= b;
                        }
                        wake |= emitter == Emitter::WaitingRoom && capacity.is_some();
                    }
                    Some(Msg::Item(i)) => {
                        let end = model.workers[w].finish(now, costs[i], &mut rng);
                        run.busy[w] += end - now;
                        run.per_worker[w] += 1;
                        run.worker_of[i] = w;
                        running[w] = Some((i, now, end));
                        q.schedule(end, Event::Done(w));
                        wake |= emitter == Emitter::WaitingRoom && capacity.is_some();
                    }
                }
            }
            if wake {
                emitter = Emitter::Scheduled;
                q.schedule(now, Event::Emit);
            }
        }};
    }

    while let Some((now, event)) = q.pop() {
        match event {
            Event::Done(w) => {
                if let Some((i, start, end)) = running[w].take() {
                    done_work[w] += if model.cost_hints { costs[i] } else { 1.0 };
                    done_busy[w] += end - start;
                    done[w] += 1;
                }
                run.makespan = run.makespan.max(now);
                start_worker!(w, now);
            }
            Event::Emit => {
                if emitter != Emitter::Scheduled {
                    continue;
                }
                let view = View {
                    queues: &queues,
                    capacity,
                    reached,
                    ready: costs.len() - next_item,
                    reads: &reads,
                    told: model.told_speeds.then_some(&told[..]),
                    done_work: &done_work,
                    done_busy: &done_busy,
                    done: &done,
                    cost: model.cost_hints.then(|| costs[next_item]),
                };
                let decision = dispatch.next(&view);
                let (worker, block) = match decision {
                    Decision::Send(w) => (w, None),
                    Decision::SendAndMark { worker, block } => (worker, Some(block)),
                    Decision::WaitForRoom => {
                        run.waits_for_room += 1;
                        emitter = Emitter::WaitingRoom;
                        continue;
                    }
                    Decision::WaitForMarker(b) => {
                        if reached >= b {
                            // Cannot happen with a correct policy (it asks
                            // only while unreached); ask again rather than
                            // sleep for ever.
                            q.schedule(now, Event::Emit);
                        } else {
                            run.waits_for_marker += 1;
                            emitter = Emitter::WaitingMarker(b);
                        }
                        continue;
                    }
                };
                if worker >= p || !view.has_room(worker) {
                    return Err(SimError::Policy(format!(
                        "farm policy `{}` sent item {next_item} to worker {worker}, which {}",
                        run.policy,
                        if worker >= p {
                            "does not exist"
                        } else {
                            "has no room"
                        }
                    )));
                }
                queues[worker].push_back(Msg::Item(next_item));
                next_item += 1;
                let mut pushes = 1u64;
                if let Some(block) = block {
                    run.blocks += 1;
                    for w in 0..p {
                        // Only to workers holding no earlier marker, as
                        // keel::farm does: markers never pile up.
                        if marker_sent[w] == marker_seen[w] {
                            queues[w].push_back(Msg::Marker(block));
                            marker_sent[w] = block;
                            run.markers += 1;
                            pushes += 1;
                        }
                    }
                }
                run.max_level = queues.iter().fold(run.max_level, |m, q| m.max(q.len()));
                // Idle workers start on what just arrived.
                for w in 0..p {
                    if running[w].is_none() && !queues[w].is_empty() {
                        start_worker!(w, now);
                    }
                }
                if next_item == costs.len() {
                    emitter = Emitter::Done;
                } else if emitter == Emitter::Scheduled {
                    q.schedule(now + model.emitter_cost * pushes as f64, Event::Emit);
                }
            }
        }
    }
    run.level_reads = reads.get();
    run.events = q.events_processed();
    if next_item != costs.len() || run.worker_of.contains(&usize::MAX) {
        // Every queue drained but items are left: the policy waited for
        // something that can no longer happen.
        return Err(SimError::Policy(format!(
            "farm policy `{}` stalled after {next_item} of {} items",
            run.policy,
            costs.len()
        )));
    }
    Ok(run)
}
