//! Task farms: an emitter, `N` workers and an optional collector, with the
//! dispatch policies of `keel-policy::farm` (FastFlow's farm and the ARRS of
//! the FastFlow ARRS paper, "An Adaptive Load-balancer for Task-scheduling
//! in FastFlow").
//!
//! ```text
//!                 ┌─ SPSC ─▶ worker 0 ─ SPSC ─┐
//!  source ─▶ emitter ─ SPSC ─▶ worker 1 ─ SPSC ─┼─▶ collector ─▶ (feedback pool ─▶ emitter)
//!   (iterator)    └─ SPSC ─▶ worker 2 ─ SPSC ─┘
//!   └──────────── the calling thread ─────────────┘
//! ```
//!
//! - The **emitter runs on the calling thread** and pulls items from any
//!   iterator (`std::iter::from_fn` turns a callback into one). For each
//!   item it asks the [`Dispatch`] policy for a [`Decision`] through a
//!   [`QueueView`] over the workers' input queues, and enacts it: push the
//!   item, push ARRS's markers, or wait for room or for a marker.
//! - **Workers** are threads of their own (they may outnumber the cores),
//!   each popping its own single-producer / single-consumer input queue.
//! - The **collector is not a thread**: the calling thread runs it between
//!   dispatches, draining one output queue per worker. With
//!   [`Farm::run_feedback`] the collector may send new items back to the
//!   emitter's pool ([`Feedback::send`]) until it calls [`Feedback::stop`]
//!   or nothing is left in flight: the material-optimisation pattern of the
//!   paper's §III-E.
//! - **End of stream** closes every input queue once the source (and the
//!   feedback pool) is empty; workers drain their queue, then exit; the
//!   emitter returns after the last result was collected.
//! - **Waiting.** Every waiting thread (a worker with an empty queue or a
//!   full output, the emitter with full queues, throttled, or with nothing
//!   to collect) spins [`DEFAULT_FARM_SPINS`] steps, yielding now and then,
//!   then parks on its signal (a one-word event count); no emitter or collector spins on the
//!   workers' cores (FastFlow's on-demand farm lost 41–71 % here to that).
//! - **Panics.** A worker that panics stops the farm: the other workers
//!   drop what is left, the emitter stops, and the panic is resumed on the
//!   caller. A panic in the source or the collector stops the workers too.
//!
//! The queue and signal protocols are in `README.md` beside this file.
//!
//! ```
//! use keel::farm::Farm;
//! use std::sync::atomic::{AtomicU64, Ordering};
//! let mut farm = Farm::builder().workers(3).policy("arrs:chunk=50").build().unwrap();
//! let sum = AtomicU64::new(0);
//! let report = farm.run(1..=1000u64, |_, i| { sum.fetch_add(i, Ordering::Relaxed); }).unwrap();
//! assert_eq!(sum.into_inner(), 500_500);
//! assert_eq!(report.per_worker.iter().sum::<u64>(), 1000);
//! ```

mod builder;
mod emitter;
mod feedback;
mod run;
mod shared;
mod signal;
pub(crate) mod spsc;
mod worker;

#[cfg(all(loom, test))]
mod loom_tests;

use crate::sync;
use keel_policy::farm as policy;
pub use keel_policy::farm::{Decision, Dispatch, FarmConfig, QueueView};

pub use builder::FarmBuilder;
pub use feedback::Feedback;
pub use run::Farm;
pub(crate) use signal::Signal;

/// Spin steps (each a `spin_loop` hint, every 64th a yield) before a farm
/// thread parks, under the default wait policy: about a microsecond or
/// two, enough to catch a worker's next item on a busy farm, short enough
/// that an idle emitter or collector hands its core to a worker.
pub const DEFAULT_FARM_SPINS: u32 = 1 << 10;

/// Items the emitter dispatches before it flushes its queues (publishes
/// and notifies) and looks at the collector again. A worker that has run
/// dry sees nothing of a batch until its flush, and under ARRS every block
/// starts with the workers nearly dry (the emitter waited for them to
/// reach the marker): 64 items keep that wait to a few microseconds, at
/// one notify per worker per 64 items (with empty tasks, 256 made `arrs`
/// cost 1.2–1.35× `rr` per item here, 64 about 1.05–1.2×, `rr` unchanged).
const DISPATCH_BATCH: usize = 64;

/// Results the collector takes from one worker before the next.
const COLLECT_BATCH: usize = 256;

/// Results a busy worker pushes before it notifies the collector; it also
/// notifies whenever its input runs dry or its output is full, so a result
/// waits at most this many items, and never while the worker waits.
const RESULT_NOTIFY_BATCH: u32 = 32;

/// The longest an emitter throttled by ARRS spins for its marker before it
/// parks: only when recent marker waits were this short (very short tasks,
/// where a park–unpark round trip would cost more than the block), never
/// when blocks take longer, so it never holds a worker's core for long.
const MARKER_SPIN: std::time::Duration = std::time::Duration::from_micros(100);

/// A user's cost hint per item ([`Farm::run_hinted`]).
pub(crate) type CostHint<'a, T> = &'a (dyn Fn(&T) -> f64 + Sync);

/// Which worker is running an item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Worker {
    /// This worker, `0..workers`.
    pub index: usize,
    /// Number of workers in the farm.
    pub workers: usize,
}

/// Why a farm cannot be built or started.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FarmError {
    /// A farm needs a worker.
    #[error("a farm needs at least 1 worker (got 0)")]
    ZeroWorkers,
    /// A queue capacity of 0.
    #[error("a queue capacity must be at least 1 (or unbounded); got 0")]
    ZeroCapacity,
    /// The policy spec or its parameters (`CHUNK_SIZE` 0, ...).
    #[error(transparent)]
    Policy(policy::FarmError),
    /// A pinning that names a core this machine lacks.
    #[error("worker pinned to core {core}, but this machine has {cores} cores (0..{cores})")]
    BadPin {
        /// The core asked for.
        core: usize,
        /// Cores the OS reports.
        cores: usize,
    },
    /// [`FarmBuilder::speeds`] gave a number of speeds other than the
    /// number of workers.
    #[error("{speeds} worker speeds given for {workers} workers")]
    SpeedCount {
        /// Speeds given.
        speeds: usize,
        /// Workers of the farm.
        workers: usize,
    },
    /// A told speed that is not finite and positive.
    #[error("worker {worker}'s speed is {speed}; speeds must be finite and > 0")]
    BadSpeed {
        /// The worker.
        worker: usize,
        /// Its speed.
        speed: f64,
    },
    /// The OS refused a thread.
    #[error("could not start a farm worker: {0}")]
    Spawn(String),
}

impl From<policy::FarmError> for FarmError {
    fn from(e: policy::FarmError) -> Self {
        match e {
            policy::FarmError::ZeroWorkers => FarmError::ZeroWorkers,
            policy::FarmError::ZeroCapacity => FarmError::ZeroCapacity,
            other => FarmError::Policy(other),
        }
    }
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FarmReport {
    /// Items dispatched (feedback items included).
    pub items: u64,
    /// Items each worker ran.
    pub per_worker: Vec<u64>,
    /// Results the collector received.
    pub collected: u64,
    /// Marker blocks sent (ARRS).
    pub blocks: u64,
    /// Times the emitter waited (for room, a marker, a result or the end).
    pub emitter_waits: u64,
    /// Wall time of the run, seconds.
    pub seconds: f64,
}
