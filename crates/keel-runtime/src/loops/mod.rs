//! Parallel loops: the context that enacts `keel-policy::dls` schedules.
//!
//! ```
//! use std::sync::atomic::{AtomicU64, Ordering};
//! let sum = AtomicU64::new(0);
//! keel::loops::for_each(0..1000u32, |i| {
//!     sum.fetch_add(i as u64, Ordering::Relaxed);
//! });
//! assert_eq!(sum.into_inner(), 499_500);
//! ```
//!
//! A loop instance: resolve the schedule (code, else `KEEL_SCHEDULE`, else
//! `auto`), build its [`Plan`](keel_policy::dls::Plan) through a context handler that offers what
//! this loop measured before, fork a pool region, let every participant
//! claim chunks as the plan's [`Claim`](keel_policy::dls::Claim) says, join, and keep the instance's
//! measurements in the loop's [`LoopRecord`]. Chunk claiming is in
//! `claim.rs`, with its protocol notes.
//!
//! One instance, top to bottom: `ParallelLoop::run` takes the schedule
//! resolved once (`schedule.rs`'s `ResolvedSchedule`, from a [`Schedule`]
//! or `KEEL_SCHEDULE` read in `settings.rs`) → a driver: the pool
//! (`pool_driver.rs`) or a foreign runtime's threads ([`Workshare`]) →
//! `instance::prepare` (the loop's selection and memory, when
//! `recording.rs` says the instance is recorded) → the plan →
//! `claim.rs` on every participant → `Prepared::finish` (record,
//! summarise).
//!
//! A loop runs a body per index ([`ParallelLoop::for_each`]), per chunk
//! ([`ParallelLoop::for_each_chunk`]), per disjoint piece of a mutable slice
//! ([`ParallelLoop::for_each_chunk_mut`]), or folds into per-participant
//! accumulators combined at the join ([`ParallelLoop::fold_reduce`]); its
//! schedule is a [`Schedule`], parsed where it is written.
//!
//! Each form has a `try_` twin with the typed errors
//! ([`ParallelLoop::try_for_each`], …). The plain forms return the
//! summary (the fold its value) and never fail on the environment: a bad
//! `KEEL_SCHEDULE` or pool variable is warned about once per process on
//! stderr and its default used, and a global pool that cannot be built
//! runs the loop on the caller; what only code can get wrong (a bad
//! schedule given in code, weights of the wrong length, a slice shorter
//! than the range) panics with the [`LoopError`]'s message.

mod claim;
mod cost;
mod foreign;
mod index;
mod instance;
#[cfg(all(loom, test))]
mod loom_support;
#[cfg(all(loom, test))]
mod loom_tests;
mod parallel;
mod pool_driver;
pub mod process_report;
mod record;
mod recording;
mod report;
mod schedule;
mod settings;
mod state;

use std::ops::Range;
use std::sync::OnceLock;

use crossbeam_utils::CachePadded;
use keel_policy::concept::{Concept, Model, Subject};
use keel_policy::dls::{self, ThreadTiming, TimingBoard};
use keel_policy::PolicyError;

use crate::pool::{self, PoolError, ThreadPool};
use crate::sync::{AtomicU64, Mutex, Ordering};
use crate::warn;

pub use cost::{dispatch_cost, dispatch_cost_settled};
pub use foreign::{Cursor, Workshare};
pub use index::LoopIndex;
pub use parallel::{
    for_each, for_each_chunk, parallel, try_for_each, try_for_each_chunk, ParallelLoop,
};
pub(crate) use pool_driver::LoopArea;
pub use record::{
    all_records, clear_records, record, InstanceStats, LoopId, LoopName, LoopRecord, ScheduleRun,
    SelectionTimeline, SCHEDULE_RUNS,
};
pub use recording::record_all;
pub use report::{report, LoopReport, ScheduleRunReport, SelectionReport, SelectionRunReport};
pub use schedule::{Schedule, ScheduleError};
pub use state::{kept_loop_states, MAX_LOOP_STATES};

/// Why a loop did not run, as the `try_` forms return it. No iteration
/// has run when one is returned.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LoopError {
    /// More than `u64::MAX` iterations: only a `u128` or `i128` range can
    /// be that long (every other [`LoopIndex`] spans at most `u64::MAX`).
    #[error("loop range of {len} iterations is longer than 2^64 - 1")]
    RangeTooLong {
        /// The length, printed.
        len: String,
    },
    /// The schedule (from code or `KEEL_SCHEDULE`) is invalid.
    #[error("{source_name}: {error}")]
    Schedule {
        /// Where the schedule came from.
        source_name: &'static str,
        /// What is wrong with it.
        error: PolicyError,
    },
    /// The global pool could not be built.
    #[error(transparent)]
    Pool(#[from] PoolError),
    /// A participant of a [`Workshare`] whose index is out of the team's
    /// range or was given before.
    #[error("participant {index} of a team of {threads}: out of range or already joined")]
    Participant {
        /// The index given.
        index: usize,
        /// The team's size.
        threads: usize,
    },
    /// A loop over a slice whose range reaches past the slice's end.
    #[error("loop range ends at {end}, past the end of a slice of {len} elements")]
    SliceTooShort {
        /// The range's end.
        end: usize,
        /// The slice's length.
        len: usize,
    },
}

/// A small, allocation-free summary of one instance; the full measurements
/// are in the loop's [`LoopRecord`].
#[derive(Clone, Debug, PartialEq)]
pub struct LoopSummary {
    /// The loop's identity.
    pub id: LoopId,
    /// Participants.
    pub threads: usize,
    /// Iterations.
    pub iterations: u64,
    /// Chunks executed.
    pub chunks: u64,
    /// T_par in seconds, from the fork to the join; `None` when the
    /// instance was not recorded (it read no clock: see [`LoopRecord`] and
    /// [`ParallelLoop::recorded`]).
    pub t_par: Option<f64>,
    /// LIB in percent over the participants' finish times; `None` when the
    /// instance was not recorded.
    pub lib_percent: Option<f64>,
}

/// Per-participant state shared during a loop: what the participant
/// publishes for adaptive schedules, its steal range, its measurements.
/// One per pool thread, created with the pool, reused by every loop.
///
/// Field order matters: the end-of-loop stats and the published timing share
/// the first cache line, so a loop moves one line per participant from the
/// worker to the caller; the steal range sits after them.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    chunks: AtomicU64,
    iterations: AtomicU64,
    start: AtomicU64,
    finish: AtomicU64,
    /// Published [`ThreadTiming`] as f64 bits: π, μ, σ.
    timing: [AtomicU64; 3],
    /// Remaining home range for `static-steal` (owner takes from the front,
    /// thieves from the back).
    steal: Mutex<Range<u64>>,
    /// Chunk-time sums for the iteration profile, as f64 bits (written only
    /// in profiled instances): see [`claim::ProfileSums`].
    profile: [AtomicU64; 4],
}

impl Slot {
    fn publish(&self, timing: ThreadTiming) {
        // Relaxed: readers only need some recent value (the schedules
        // tolerate staleness); no other data hangs off these words.
        self.timing[0].store(timing.time_per_iteration.to_bits(), Ordering::Relaxed);
        self.timing[1].store(timing.mean.to_bits(), Ordering::Relaxed);
        self.timing[2].store(timing.sd.to_bits(), Ordering::Relaxed);
    }

    fn clear_timing(&self) {
        for word in &self.timing {
            word.store(0, Ordering::Relaxed);
        }
    }
}

/// The pool threads' slots, read as a [`TimingBoard`].
pub(crate) struct Board<'s> {
    slots: &'s [CachePadded<Slot>],
}

impl TimingBoard for Board<'_> {
    #[inline]
    fn threads(&self) -> usize {
        self.slots.len()
    }

    #[inline]
    fn get(&self, thread: usize) -> ThreadTiming {
        let word = |i: usize| f64::from_bits(self.slots[thread].timing[i].load(Ordering::Relaxed));
        ThreadTiming {
            time_per_iteration: word(0),
            mean: word(1),
            sd: word(2),
        }
    }

    /// One word: AWF reads every thread's `π` at every request.
    #[inline]
    fn time_per_iteration(&self, thread: usize) -> f64 {
        f64::from_bits(self.slots[thread].timing[0].load(Ordering::Relaxed))
    }
}

/// Whether a loop instance returns what the environment got wrong as a
/// typed error (the `try_` forms) or warns once and uses the default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Every problem is a [`LoopError`].
    Strict,
    /// Environment problems are warnings; only code problems are errors.
    Lenient,
}

/// The infallible forms' end: a [`LoopError`] left in lenient mode is one
/// only code can cause, reported as a panic at the caller's line, as slice
/// indexing reports an index out of bounds.
#[track_caller]
pub(crate) fn or_panic<T>(result: Result<T, LoopError>) -> T {
    match result {
        Ok(value) => value,
        Err(err) => panic!("{err}"),
    }
}

/// A pool of one participant, the caller: where loops on the global pool
/// run when that pool cannot be built. It starts no thread, which is what
/// could make a build fail.
fn caller_pool() -> &'static ThreadPool {
    static POOL: OnceLock<ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        ThreadPool::builder()
            .threads(1)
            .wait_policy(pool::WaitPolicy::Passive)
            .pin(false)
            .build()
            .expect("a pool of one participant starts no thread")
    })
}

impl<'p, I: LoopIndex> ParallelLoop<'p, I> {
    /// The pool this loop runs on: its own, else the global pool, else
    /// (lenient mode, global pool unbuildable, warned once) the caller.
    pub(crate) fn pool_for(&self, mode: Mode) -> Result<&'p ThreadPool, LoopError> {
        match (self.pool, mode) {
            (Some(p), _) => Ok(p),
            (None, Mode::Strict) => Ok(pool::global()?),
            (None, Mode::Lenient) => Ok(pool::global().unwrap_or_else(|err| {
                warn::once("global pool", &err.to_string(), || {
                    format!("the global pool could not be built ({err}); loops run on the calling thread")
                });
                caller_pool()
            })),
        }
    }

    /// Runs one instance of the loop, `body(participant, from, to)` per
    /// chunk of offsets, with the schedule from code, else `KEEL_SCHEDULE`.
    pub(crate) fn run(
        self,
        mode: Mode,
        body: &(dyn Fn(usize, u64, u64) + Sync),
    ) -> Result<LoopSummary, LoopError> {
        let iterations = I::span(&self.range)?;
        let pool = self.pool_for(mode)?;
        if let Some(schedule) = &self.schedule {
            return pool.run_loop(&self, iterations, schedule.resolved(), body);
        }
        let schedule = match mode {
            Mode::Strict => settings::env_schedule()?,
            Mode::Lenient => settings::env_schedule_or_default(),
        };
        let result = pool.run_loop(&self, iterations, schedule, body);
        match result {
            // A fixed schedule from the environment that cannot plan this
            // loop (a workload-aware one without hints, say): no iteration
            // has run, so the instance runs again under the default.
            Err(LoopError::Schedule { error, .. })
                if mode == Mode::Lenient && schedule.fixed().is_some() =>
            {
                settings::warn_env_schedule_unplannable(&error);
                pool.run_loop(&self, iterations, settings::default_schedule(), body)
            }
            other => other,
        }
    }
}

/// Makes the participants' slots ready for `plan`, before any participant
/// claims. The caller touches them only where the plan needs it: each
/// write here moves a cache line to this core and back. The end-of-loop
/// stats need no reset: every participant overwrites its own.
#[inline]
pub(crate) fn ready_slots(plan: &dls::Plan<'_>, slots: &[CachePadded<Slot>]) {
    if plan.timing() != dls::Timing::None {
        slots.iter().for_each(|slot| slot.clear_timing());
    }
    if plan.claim() == dls::Claim::Steal {
        for (i, slot) in slots.iter().enumerate() {
            *claim::lock(&slot.steal) = plan.home_range(i);
        }
    }
}

/// The user's per-iteration hints, as a workload-aware schedule reads them.
pub(crate) const HINTS: Concept = Concept::Workload {
    subject: Subject::Tasks,
    model: Model::Static,
};
