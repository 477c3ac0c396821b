//! Farm dispatch: which worker gets the next item of a stream (FastFlow
//! ARRS paper, §II; FastFlow's own policies as its `ff_loadbalancer`,
//! `ff/lb.hpp`, implements them).
//!
//! A farm is an emitter, `p` workers each with its own single-producer
//! input queue, and an optional collector. A [`Dispatch`] policy decides,
//! item by item, which queue the emitter pushes to. Policies are pure: they
//! read queue levels through a [`QueueView`] the context provides and return
//! a [`Decision`]; the context (`keel::farm` on threads, a simulator, a
//! scripted test) enacts it. They never touch a queue, a thread or a clock.
//!
//! | name | paper / source | reads levels | waits |
//! |---|---|---|---|
//! | `rr` | FastFlow's default (the paper's RRS): next worker in turn, skipping full queues | never | when every queue is full |
//! | `arrs` | the paper's Fig. 5, faithful | once per `chunk` items | for the block's marker, when the block is done |
//! | `arrs-adaptive` | the paper's future work (§IV): short first block, block size from the ready items | once per block | as `arrs` |
//! | `on-demand` | FastFlow's `set_scheduling_ondemand`: round-robin over queues bounded at `capacity` slots | never | when every queue is full |
//! | `shortest-queue` | the paper's ideal model (§III-C): exact levels at every item | every item | when every queue is full |
//! | `eft` | earliest finish time, the `lpt-eft` mapping's rule item by item: the queue's time plus the item's cost over the worker's speed (told or measured) | every item, with speeds and the item's cost hint | when every queue is full (`capacity=N` bounds them) |
//!
//! Spec strings follow `docs/conventions.md#spec-strings`: `arrs:chunk=300,near-end=8`,
//! `on-demand:capacity=2`. Build them with [`parse`] (typed [`FarmError`]s)
//! or through the generic [`registry()`].
//!
//! **The context's obligations.** Call [`Dispatch::start`] once per stream
//! with the farm's [`FarmConfig`]. For each item, call [`Dispatch::next`]
//! until it returns a `Send`:
//! - [`Decision::Send`]`(w)`: push the item to worker `w` (the policy only
//!   names a worker whose [`QueueView::has_room`] was true).
//! - [`Decision::SendAndMark`]: push the item to `worker`, then push the
//!   marker ("fake task") `block` to every worker; a worker that dequeues a
//!   marker reports it, and [`QueueView::marker_reached`] returns the
//!   highest block any worker has reached. A context may skip a worker
//!   still holding an earlier marker (at least the worker whose marker ended
//!   the previous wait has none), so markers never pile up.
//! - [`Decision::WaitForRoom`]: every queue is full (or, for `eft`, the
//!   queue the item should go to); wait until a worker takes an item from
//!   a bounded queue, then ask again for the same item.
//! - [`Decision::WaitForMarker`]`(b)`: ARRS throttling; wait until
//!   `marker_reached() >= b` (or the farm stops), then ask again.
//!
//! Levels count what sits in a queue, markers included (FastFlow's
//! `length()`); an item a worker is running is no longer in its queue.
//!
//! Round-robin over three empty queues, enacted on [`ScriptedQueues`]:
//!
//! ```
//! use keel_policy::farm::{parse, FarmConfig, ScriptedQueues};
//! let mut policy = parse("rr").unwrap();
//! policy.start(&FarmConfig::new(3, None).unwrap()).unwrap();
//! let mut queues = ScriptedQueues::new(3);
//! let workers: Vec<_> = (0..4)
//!     .map(|_| {
//!         let decision = policy.next(&queues);
//!         queues.apply(decision).unwrap()
//!     })
//!     .collect();
//! assert_eq!(workers, vec![0, 1, 2, 0]);
//! ```

mod arrs;
mod arrs_adaptive;
mod eft;
mod on_demand;
mod rr;
mod shortest_queue;

pub mod known_split;

use std::fmt;

pub use arrs::{Arrs, DEFAULT_CHUNK_SIZE, NEAR_END_PER_WORKER};
pub use arrs_adaptive::{ArrsAdaptive, DEFAULT_DIVISOR, DEFAULT_MIN_BLOCK_PER_WORKER};
pub use eft::Eft;
pub use on_demand::{OnDemand, DEFAULT_ON_DEMAND_CAPACITY};
pub use rr::RoundRobin;
pub use shortest_queue::ShortestQueue;

use crate::error::PolicyError;
use crate::registry::Registry;
use crate::spec::Spec;

/// The farm names (`docs/conventions.md#policy-names`), in registry order.
pub const NAMES: [&str; 6] = [
    "rr",
    "arrs",
    "arrs-adaptive",
    "on-demand",
    "shortest-queue",
    "eft",
];

/// What a policy may read about the workers' input queues. The thread
/// context reads two indices per level; a scripted view reads a vector.
pub trait QueueView {
    /// Number of workers `p`.
    fn workers(&self) -> usize;
    /// Items (and markers) waiting in worker `worker`'s queue now.
    fn level(&self, worker: usize) -> usize;
    /// Whether a push to `worker` would succeed now (always true for an
    /// unbounded queue; one index load for a bounded one).
    fn has_room(&self, worker: usize) -> bool;
    /// The highest marker block any worker has dequeued (0 = none yet).
    fn marker_reached(&self) -> u64;
    /// Items known to be ready for dispatch, this one included (the rest
    /// of a sized source plus a feedback pool), or `None` when unknown.
    fn ready(&self) -> Option<usize>;
    /// Worker `worker`'s speed in work units per unit of time, as the
    /// context knows it: told by the user, or measured (work done over
    /// time spent running items); `None` while unknown. Only ratios
    /// between workers matter. Contexts that know nothing keep the default.
    fn speed(&self, worker: usize) -> Option<f64> {
        let _ = worker;
        None
    }
    /// Items worker `worker` has finished since the stream started, when
    /// the context knows; a policy that models the item in service (which
    /// has left the queue) reads it.
    fn done(&self, worker: usize) -> Option<u64> {
        let _ = worker;
        None
    }
    /// The current item's cost hint in work units (seconds at speed 1),
    /// when the user supplied one.
    fn cost_hint(&self) -> Option<f64> {
        None
    }
}

/// What the context should do with the current item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Push it to this worker.
    Send(usize),
    /// Push it to `worker`, then the marker `block` to every worker.
    SendAndMark {
        /// The worker that gets the item.
        worker: usize,
        /// The marker's block number (1, 2, ...).
        block: u64,
    },
    /// Every queue the policy would use is full: wait until a worker takes
    /// an item from a bounded queue, then ask again.
    WaitForRoom,
    /// Wait until some worker has dequeued marker `block`, then ask again.
    WaitForMarker(u64),
}

impl Decision {
    /// The worker the item goes to, if it goes now.
    pub fn worker(self) -> Option<usize> {
        match self {
            Decision::Send(w) | Decision::SendAndMark { worker: w, .. } => Some(w),
            Decision::WaitForRoom | Decision::WaitForMarker(_) => None,
        }
    }
}

/// The farm a policy dispatches to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FarmConfig {
    /// Number of workers (`>= 1`).
    pub workers: usize,
    /// Capacity of every input queue; `None` = unbounded (the paper's
    /// experiments, FastFlow's default).
    pub capacity: Option<usize>,
}

impl FarmConfig {
    /// A validated configuration: at least one worker, a capacity `>= 1`.
    pub fn new(workers: usize, capacity: Option<usize>) -> Result<Self, FarmError> {
        if workers == 0 {
            return Err(FarmError::ZeroWorkers);
        }
        if capacity == Some(0) {
            return Err(FarmError::ZeroCapacity);
        }
        Ok(FarmConfig { workers, capacity })
    }
}

/// Why a farm policy or configuration cannot be built.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FarmError {
    /// A farm needs a worker.
    #[error("a farm needs at least 1 worker (got 0)")]
    ZeroWorkers,
    /// ARRS's block / level-recording period (CHUNK_SIZE) was 0.
    #[error(
        "CHUNK_SIZE (`chunk`) must be at least 1 (the paper's default is {DEFAULT_CHUNK_SIZE})"
    )]
    ZeroChunk,
    /// A queue capacity of 0 could never take an item.
    #[error("a queue capacity must be at least 1 (or unbounded); got 0")]
    ZeroCapacity,
    /// NEAR_END of 0 would inject the marker after the block's last item,
    /// so the fastest queue would run empty before the next block.
    #[error("NEAR_END (`near-end`) must be at least 1 (default 4 × workers)")]
    ZeroNearEnd,
    /// The spec did not parse, names an unknown policy or parameter, or a
    /// value is not a number.
    #[error(transparent)]
    Spec(#[from] PolicyError),
}

impl From<FarmError> for PolicyError {
    fn from(e: FarmError) -> Self {
        let (key, expected) = match &e {
            FarmError::Spec(inner) => return inner.clone(),
            FarmError::ZeroWorkers => ("workers", "at least 1 worker"),
            FarmError::ZeroChunk => ("chunk", "an integer >= 1"),
            FarmError::ZeroCapacity => ("capacity", "an integer >= 1"),
            FarmError::ZeroNearEnd => ("near-end", "an integer >= 1"),
        };
        PolicyError::InvalidParameter {
            policy: "farm".into(),
            key: key.into(),
            value: "0".into(),
            expected: expected.into(),
        }
    }
}

/// A farm dispatch policy: a registry policy of the `farm` family.
pub trait Dispatch: Send + fmt::Debug {
    /// The canonical spec: rebuilds this policy through [`parse`].
    fn spec(&self) -> Spec;

    /// The queue capacity the policy needs, overriding the farm's
    /// (`on-demand`); `None` = the farm's own.
    fn capacity(&self) -> Option<usize> {
        None
    }

    /// Whether the policy reads [`QueueView::speed`]: a context that
    /// measures speeds at a cost (the thread farm reads the clock twice per
    /// item) does so only then.
    fn reads_speeds(&self) -> bool {
        false
    }

    /// Resets the policy for a new stream into `config`'s workers.
    fn start(&mut self, config: &FarmConfig) -> Result<(), FarmError>;

    /// The decision for the current item.
    fn next(&mut self, view: &dyn QueueView) -> Decision;
}

/// The next worker after `last` (cyclically, starting at `last + 1`) whose
/// queue has room: FastFlow's `schedule_task` loop over `selectworker()`.
#[inline]
pub(crate) fn next_with_room(view: &dyn QueueView, last: usize, workers: usize) -> Option<usize> {
    let mut w = last;
    for _ in 0..workers {
        w += 1;
        if w == workers {
            w = 0;
        }
        if view.has_room(w) {
            return Some(w);
        }
    }
    None
}

/// A [`QueueView`] over plain numbers: for tests, golden sequences and
/// simulators. It counts [`QueueView::level`] calls.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScriptedQueues {
    /// Level of each worker's queue.
    pub levels: Vec<usize>,
    /// Capacity of every queue (`None` = unbounded).
    pub capacity: Option<usize>,
    /// The highest marker block reached.
    pub reached: u64,
    /// Items ready for dispatch.
    pub ready: Option<usize>,
    /// Each worker's speed (`None`: unknown).
    pub speeds: Option<Vec<f64>>,
    /// The current item's cost hint.
    pub cost: Option<f64>,
    /// Items each worker has finished (`None`: unknown).
    pub done: Option<Vec<u64>>,
    level_reads: std::cell::Cell<u64>,
}

impl ScriptedQueues {
    /// `workers` empty unbounded queues.
    pub fn new(workers: usize) -> Self {
        ScriptedQueues {
            levels: vec![0; workers],
            ..Default::default()
        }
    }

    /// How many times a policy read one queue's level.
    pub fn level_reads(&self) -> u64 {
        self.level_reads.get()
    }

    /// Applies a decision as a context would: the item (and any markers)
    /// join the queues. Returns the worker the item went to.
    pub fn apply(&mut self, decision: Decision) -> Option<usize> {
        match decision {
            Decision::Send(w) => self.levels[w] += 1,
            Decision::SendAndMark { worker, .. } => {
                self.levels[worker] += 1;
                for level in &mut self.levels {
                    *level += 1;
                }
            }
            Decision::WaitForRoom | Decision::WaitForMarker(_) => {}
        }
        decision.worker()
    }
}

impl QueueView for ScriptedQueues {
    fn workers(&self) -> usize {
        self.levels.len()
    }
    fn level(&self, worker: usize) -> usize {
        self.level_reads.set(self.level_reads.get() + 1);
        self.levels[worker]
    }
    fn has_room(&self, worker: usize) -> bool {
        self.capacity.is_none_or(|c| self.levels[worker] < c)
    }
    fn marker_reached(&self) -> u64 {
        self.reached
    }
    fn ready(&self) -> Option<usize> {
        self.ready
    }
    fn speed(&self, worker: usize) -> Option<f64> {
        self.speeds.as_ref().and_then(|s| s.get(worker).copied())
    }
    fn cost_hint(&self) -> Option<f64> {
        self.cost
    }
    fn done(&self, worker: usize) -> Option<u64> {
        self.done.as_ref().and_then(|d| d.get(worker).copied())
    }
}

type Builder = fn(&Spec) -> Result<Box<dyn Dispatch>, FarmError>;

const BUILTINS: [(&str, &str, Builder); 6] = [
    (
        "rr",
        "round-robin, skipping full queues (FastFlow's default, the paper's RRS)",
        |s| Ok(Box::new(RoundRobin::from_spec(s)?)),
    ),
    (
        "arrs",
        "adaptive round-robin, the paper's Fig. 5 [chunk=300, near-end=4×workers]",
        |s| Ok(Box::new(Arrs::from_spec(s)?)),
    ),
    (
        "arrs-adaptive",
        "ARRS with a short first block and blocks sized from the ready items [chunk=300, min-block=2×workers, divisor=8, near-end]",
        |s| Ok(Box::new(ArrsAdaptive::from_spec(s)?)),
    ),
    (
        "on-demand",
        "round-robin over queues bounded at a few slots (FastFlow's on-demand) [capacity=1]",
        |s| Ok(Box::new(OnDemand::from_spec(s)?)),
    ),
    (
        "shortest-queue",
        "the shortest queue at every item (the paper's ideal model)",
        |s| Ok(Box::new(ShortestQueue::from_spec(s)?)),
    ),
    (
        "eft",
        "earliest finish time: queue time + item cost hint / worker speed (told or measured), lpt-eft's rule per item [capacity=farm's]",
        |s| Ok(Box::new(Eft::from_spec(s)?)),
    ),
];

/// Builds a farm policy from a spec string, e.g. `arrs:chunk=100`.
///
/// ```
/// use keel_policy::farm::{self, FarmError};
/// assert_eq!(farm::parse("arrs").unwrap().spec().to_string(), "arrs");
/// assert_eq!(farm::parse("arrs:chunk=0").unwrap_err(), FarmError::ZeroChunk);
/// assert!(farm::parse("fifo").unwrap_err().to_string().contains("shortest-queue"));
/// ```
pub fn parse(text: &str) -> Result<Box<dyn Dispatch>, FarmError> {
    parse_spec(&Spec::parse(text).map_err(PolicyError::from)?)
}

/// Builds a farm policy from a parsed spec.
pub fn parse_spec(spec: &Spec) -> Result<Box<dyn Dispatch>, FarmError> {
    let (_, _, build) = BUILTINS
        .iter()
        .find(|(name, _, _)| *name == spec.name)
        .ok_or_else(|| PolicyError::UnknownPolicy {
            family: "farm",
            name: spec.name.clone(),
            valid: NAMES.iter().map(|s| s.to_string()).collect(),
        })?;
    build(spec)
}

/// The `farm` registry with the built-in policies; users may register
/// their own.
pub fn registry() -> Registry<dyn Dispatch> {
    let mut r: Registry<dyn Dispatch> = Registry::empty("farm");
    for (name, summary, build) in BUILTINS {
        r.register(name, summary, move |spec, _| Ok(build(spec)?))
            .expect("built-in farm names are unique and kebab-case");
    }
    r
}

/// A count parameter `>= 1`, where 0 is the typed error `zero`.
pub(crate) fn positive(
    spec: &Spec,
    key: &str,
    zero: FarmError,
) -> Result<Option<usize>, FarmError> {
    match spec.parsed::<usize>(key, "an integer >= 1")? {
        Some(0) => Err(zero),
        other => Ok(other),
    }
}

#[cfg(test)]
mod tests;
