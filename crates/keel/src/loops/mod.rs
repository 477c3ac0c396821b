//! Parallel loops: the context that enacts `keel-policy::dls` schedules.
//!
//! ```
//! use std::sync::atomic::{AtomicU64, Ordering};
//! let sum = AtomicU64::new(0);
//! keel::loops::for_each(0..1000u32, |i| {
//!     sum.fetch_add(i as u64, Ordering::Relaxed);
//! })
//! .unwrap();
//! assert_eq!(sum.into_inner(), 499_500);
//! ```
//!
//! A loop instance: resolve the schedule (code, else `KEEL_SCHEDULE`, else
//! `auto`), build its [`Plan`] through a context handler that offers what
//! this loop measured before, fork a pool region, let every participant
//! claim chunks as the plan's [`Claim`] says, join, and keep the instance's
//! measurements in the loop's [`LoopRecord`]. Chunk claiming is in
//! `claim.rs`, with its protocol notes.

mod claim;
mod index;
mod record;

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use crossbeam_utils::CachePadded;
use keel_policy::concept::{Concept, Origin};
use keel_policy::dls::{self, LoopSchedule, LoopShape, ThreadTiming, TimingBoard};
use keel_policy::{ContextHandler, PolicyError};

use crate::pool::{self, PoolError, ThreadPool};

pub use index::LoopIndex;
pub use record::{all_records, clear_records, record, InstanceStats, LoopId, LoopRecord};

/// Why a loop did not run. No iteration has run when one is returned.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LoopError {
    /// `start > end`.
    #[error("inverted loop range {start}..{end}: the start is after the end")]
    InvertedRange {
        /// The start, printed.
        start: String,
        /// The end, printed.
        end: String,
    },
    /// More than `u64::MAX` iterations.
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
}

/// A small, allocation-free summary of one instance; the full measurements
/// are in the loop's [`LoopRecord`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoopSummary {
    /// The loop's identity.
    pub id: LoopId,
    /// Participants.
    pub threads: usize,
    /// Iterations.
    pub iterations: u64,
    /// Chunks executed.
    pub chunks: u64,
    /// T_par in seconds.
    pub t_par: f64,
    /// LIB in percent over the participants' finish times.
    pub lib_percent: f64,
}

/// Per-participant state shared during a loop: what the participant
/// publishes for adaptive schedules, its steal range, its measurements.
/// One per pool thread, created with the pool, reused by every loop.
///
/// Field order matters: the end-of-loop stats and the published timing share
/// the first cache line, so a loop moves one line per participant from the
/// worker to the caller; the steal range sits after them.
#[derive(Debug, Default)]
pub struct Slot {
    chunks: AtomicU64,
    iterations: AtomicU64,
    start: AtomicU64,
    finish: AtomicU64,
    /// Published [`ThreadTiming`] as f64 bits: π, μ, σ.
    timing: [AtomicU64; 3],
    /// Remaining home range for `static-steal` (owner takes from the front,
    /// thieves from the back).
    steal: Mutex<Range<u64>>,
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
    fn threads(&self) -> usize {
        self.slots.len()
    }

    fn get(&self, thread: usize) -> ThreadTiming {
        let word = |i: usize| f64::from_bits(self.slots[thread].timing[i].load(Ordering::Relaxed));
        ThreadTiming {
            time_per_iteration: word(0),
            mean: word(1),
            sd: word(2),
        }
    }
}

/// A parallel loop being configured.
#[must_use = "a loop runs only when for_each or for_each_chunk is called"]
pub struct ParallelLoop<'p, I> {
    pool: Option<&'p ThreadPool>,
    range: Range<I>,
    schedule: Option<Cow<'static, str>>,
    chunk: Option<u64>,
    id: LoopId,
    weights: Option<Arc<[f64]>>,
}

/// A loop over `range` on the global pool; its identity is the caller's
/// source location.
#[track_caller]
pub fn parallel<I: LoopIndex>(range: Range<I>) -> ParallelLoop<'static, I> {
    ParallelLoop {
        pool: None,
        range,
        schedule: None,
        chunk: None,
        id: LoopId::Site(Location::caller()),
        weights: None,
    }
}

/// Runs `body(i)` for every `i` in `range` on the global pool, with the
/// schedule from `KEEL_SCHEDULE` (else `auto`).
#[track_caller]
pub fn for_each<I: LoopIndex>(
    range: Range<I>,
    body: impl Fn(I) + Sync,
) -> Result<LoopSummary, LoopError> {
    parallel(range).for_each(body)
}

/// Runs `body(chunk)` for every chunk of `range` on the global pool.
#[track_caller]
pub fn for_each_chunk<I: LoopIndex>(
    range: Range<I>,
    body: impl Fn(Range<I>) + Sync,
) -> Result<LoopSummary, LoopError> {
    parallel(range).for_each_chunk(body)
}

impl ThreadPool {
    /// A loop over `range` on this pool; its identity is the caller's
    /// source location.
    #[track_caller]
    pub fn parallel<I: LoopIndex>(&self, range: Range<I>) -> ParallelLoop<'_, I> {
        ParallelLoop {
            pool: Some(self),
            range,
            schedule: None,
            chunk: None,
            id: LoopId::Site(Location::caller()),
            weights: None,
        }
    }
}

impl<'p, I: LoopIndex> ParallelLoop<'p, I> {
    /// The schedule, in `KEEL_SCHEDULE` syntax (`static`, `dynamic,4`,
    /// `guided`, `awf-b`, `auto`, …); overrides the environment.
    pub fn schedule(mut self, spec: impl Into<Cow<'static, str>>) -> Self {
        self.schedule = Some(spec.into());
        self
    }

    /// The chunk parameter (DESIGN.md Conventions); overrides one in the spec.
    pub fn chunk(mut self, chunk: u64) -> Self {
        self.chunk = Some(chunk);
        self
    }

    /// Relative speeds of the participants, one per thread, for `wf` (LB4OMP's
    /// `KMP_WEIGHTS`): offered to the schedule as a user component. They apply
    /// when the loop runs on the whole team; a loop nested inside a region
    /// runs on one thread and ignores them. A wrong length is a typed error.
    pub fn weights(mut self, weights: impl Into<Arc<[f64]>>) -> Self {
        self.weights = Some(weights.into());
        self
    }

    /// Names the loop, so that its records do not depend on the call site.
    pub fn id(mut self, name: &'static str) -> Self {
        self.id = LoopId::Named(name);
        self
    }

    /// Runs `body(i)` for every index.
    pub fn for_each(self, body: impl Fn(I) + Sync) -> Result<LoopSummary, LoopError> {
        let start = self.range.start;
        self.run(&|from: u64, to: u64| {
            for offset in from..to {
                body(I::at(start, offset));
            }
        })
    }

    /// Runs `body(chunk)` for every chunk the schedule hands out.
    pub fn for_each_chunk(self, body: impl Fn(Range<I>) + Sync) -> Result<LoopSummary, LoopError> {
        let start = self.range.start;
        self.run(&|from: u64, to: u64| body(I::at(start, from)..I::at(start, to)))
    }

    fn run(self, body: &(dyn Fn(u64, u64) + Sync)) -> Result<LoopSummary, LoopError> {
        let iterations = I::span(&self.range)?;
        let pool = match self.pool {
            Some(p) => p,
            None => pool::global()?,
        };
        let (text, source_name) = match &self.schedule {
            Some(s) => (s.as_ref(), "schedule"),
            None => (env_schedule()?, "KEEL_SCHEDULE"),
        };
        let schedule_error = |error| LoopError::Schedule { source_name, error };
        let (schedule, spec_chunk, canonical) =
            cached_schedule(self.id, text).map_err(schedule_error)?;
        let threads = pool.team_size_here();
        let shape = LoopShape::new(iterations, threads, self.chunk.or(spec_chunk))
            .map_err(schedule_error)?;

        let (profile, history) = record::with_record(self.id, |r| {
            let history: smallvec::SmallVec<[f64; 32]> = r.history.iter().copied().collect();
            (r.profile, history)
        });
        let profile_values = profile.map(|(mean, sd)| [mean, sd]);
        let mut ctx = ContextHandler::new();
        if let Some(values) = &profile_values {
            ctx.provide_values(Concept::IterationProfile, Origin::Runtime, &values[..]);
        }
        if history.len() == 2 * threads {
            ctx.provide_values(Concept::ThreadHistory, Origin::Runtime, &history[..]);
        }
        if let Some(weights) = self
            .weights
            .as_deref()
            .filter(|_| threads == pool.threads())
        {
            ctx.provide_values(Concept::ThreadWeights, Origin::User, weights);
        }
        let plan = schedule.plan(&shape, &ctx).map_err(schedule_error)?;

        let nested;
        let slots: &[CachePadded<Slot>] = if threads == pool.threads() {
            pool.loop_slots()
        } else {
            nested = [CachePadded::new(Slot::default())];
            &nested
        };
        // The caller touches the participants' slots only where the plan
        // needs it: each write here moves a cache line to this core and back.
        // The end-of-loop stats need no reset: every participant overwrites
        // its own.
        if plan.timing() != dls::Timing::None {
            slots.iter().for_each(|slot| slot.clear_timing());
        }
        if plan.claim() == dls::Claim::Steal {
            for (i, slot) in slots.iter().enumerate() {
                *claim::lock(&slot.steal) = plan.home_range(i);
            }
        }
        let instance = claim::Instance {
            plan: &plan,
            n: iterations,
            shared: claim::Shared::new(),
            board: Board { slots },
            t0: Instant::now(),
            name: &canonical,
            body,
        };
        pool.region(|team| claim::participate(team.index, &instance));
        let t0 = instance.t0;
        let t_par = t0.elapsed().as_secs_f64();

        let summary = record::with_record(self.id, |r| {
            r.store(&canonical, iterations, slots, t_par);
            LoopSummary {
                id: self.id,
                threads,
                iterations,
                chunks: r.last.total_chunks(),
                t_par,
                lib_percent: r.last.lib_percent,
            }
        });
        Ok(summary)
    }
}

/// `KEEL_SCHEDULE`, read once (as OpenMP reads `OMP_SCHEDULE`); `auto` when unset.
fn env_schedule() -> Result<&'static str, LoopError> {
    static ENV: OnceLock<String> = OnceLock::new();
    Ok(ENV
        .get_or_init(|| {
            std::env::var("KEEL_SCHEDULE")
                .ok()
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| "auto".to_string())
        })
        .as_str())
}

/// A parsed schedule, its spec's chunk, and its canonical spec text.
type Parsed = (Arc<dyn LoopSchedule>, Option<u64>, Arc<str>);

/// Parses each distinct schedule text once per loop and reuses the policy
/// object, so a loop's later instances neither parse nor allocate.
fn cached_schedule(id: LoopId, text: &str) -> Result<Parsed, PolicyError> {
    type Cache = Mutex<HashMap<LoopId, (String, Parsed)>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((cached_text, parsed)) = cache.get(&id) {
        if cached_text == text {
            return Ok(parsed.clone());
        }
    }
    let (schedule, chunk) = dls::parse_schedule(text)?;
    let canonical: Arc<str> = Arc::from(schedule.spec().to_string());
    let parsed: Parsed = (Arc::from(schedule), chunk, canonical);
    cache.insert(id, (text.to_string(), parsed.clone()));
    Ok(parsed)
}
