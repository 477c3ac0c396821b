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
//! `auto`), build its [`Plan`](keel_policy::dls::Plan) through a context handler that offers what
//! this loop measured before, fork a pool region, let every participant
//! claim chunks as the plan's [`Claim`](keel_policy::dls::Claim) says, join, and keep the instance's
//! measurements in the loop's [`LoopRecord`]. Chunk claiming is in
//! `claim.rs`, with its protocol notes.
//!
//! A loop runs a body per index ([`ParallelLoop::for_each`]), per chunk
//! ([`ParallelLoop::for_each_chunk`]), per disjoint piece of a mutable slice
//! ([`ParallelLoop::for_each_chunk_mut`]), or folds into per-participant
//! accumulators combined at the join ([`ParallelLoop::fold_reduce`]); its
//! schedule is a [`Schedule`], parsed where it is written.

mod claim;
mod index;
mod record;
mod schedule;
mod state;

use std::ops::Range;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use crossbeam_utils::CachePadded;
use keel_policy::concept::{Concept, Model, Origin, Subject};
use keel_policy::dls::{
    self, LoopSchedule, LoopShape, SharedAssignment, ThreadTiming, TimingBoard, WorkloadSchedule,
};
use keel_policy::{ContextHandler, PolicyError};
use smallvec::SmallVec;

use keel_policy::select::{self, Measurement, Setting};
use state::{CachedAssignment, LoopState, Parsed, ParsedSchedule, Resolved, Selection};

use crate::pool::{self, PoolError, ThreadPool};
use crate::trace;

pub use index::LoopIndex;
pub use record::{
    all_records, clear_records, record, InstanceStats, LoopId, LoopName, LoopRecord,
    SelectionTimeline,
};
pub use schedule::{Schedule, ScheduleError};

/// Why a loop did not run. No iteration has run when one is returned.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LoopError {
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
    schedule: Option<Schedule>,
    chunk: Option<u64>,
    id: LoopId,
    weights: Option<Arc<[f64]>>,
    workload: Option<&'p [f64]>,
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
        workload: None,
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
            workload: None,
        }
    }
}

impl<'p, I: LoopIndex> ParallelLoop<'p, I> {
    /// The schedule, parsed from `KEEL_SCHEDULE` syntax
    /// (`.schedule("guided".parse()?)`, `dynamic,4`, `awf-b`, `auto`, …);
    /// overrides the environment.
    pub fn schedule(mut self, schedule: Schedule) -> Self {
        self.schedule = Some(schedule);
        self
    }

    /// The chunk parameter (`docs/conventions.md#the-chunk-parameter`);
    /// overrides one in the spec.
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

    /// Per-iteration workload hints (one non-negative number per iteration,
    /// any unit), for the workload-aware schedules `binlpt` and `greedy`
    /// (BinLPT's `omp_set_workload`); other schedules ignore them. Such a
    /// schedule maps the iterations once and reuses that assignment in later
    /// instances of this loop until the hints (compared bit for bit), the
    /// team or the chunk change.
    pub fn workload<'w>(self, loads: &'w [f64]) -> ParallelLoop<'w, I>
    where
        'p: 'w,
    {
        ParallelLoop {
            pool: self.pool,
            range: self.range,
            schedule: self.schedule,
            chunk: self.chunk,
            id: self.id,
            weights: self.weights,
            workload: Some(loads),
        }
    }

    /// Names the loop, so that its records do not depend on the call site:
    /// a literal (`.id("solver")`) or a name built at run time
    /// (`.id(format!("solver/{level}"))`); names with equal text are one
    /// loop.
    pub fn id(mut self, name: impl Into<LoopName>) -> Self {
        self.id = LoopId::Named(name.into());
        self
    }

    /// Runs `body(i)` for every index.
    pub fn for_each(self, body: impl Fn(I) + Sync) -> Result<LoopSummary, LoopError> {
        let start = self.range.start;
        self.run(&|_, from: u64, to: u64| {
            for offset in from..to {
                body(I::at(start, offset));
            }
        })
    }

    /// Runs `body(chunk)` for every chunk the schedule hands out.
    pub fn for_each_chunk(self, body: impl Fn(Range<I>) + Sync) -> Result<LoopSummary, LoopError> {
        let start = self.range.start;
        self.run(&|_, from: u64, to: u64| body(I::at(start, from)..I::at(start, to)))
    }

    /// Folds every index into a per-participant accumulator and combines
    /// the accumulators at the join (rayon's `fold` + `reduce`, OpenMP's
    /// `reduction` clause): each participant starts from `identity()`,
    /// folds the chunks the schedule hands it, in the order it claims them,
    /// with `fold`; the caller then combines the participants' results in
    /// participant order with `reduce`. An empty loop returns `identity()`.
    ///
    /// `reduce` must be associative, and `identity()` its neutral element,
    /// for the result not to depend on the schedule; with floating point
    /// the result is the sequential sum up to rounding (the order of the
    /// additions depends on the schedule).
    ///
    /// ```
    /// let pool = keel::ThreadPool::builder().threads(2).build().unwrap();
    /// let (sum, _) = pool
    ///     .parallel(0..1000u64)
    ///     .fold_reduce(|| 0u64, |acc, i| acc + i, |a, b| a + b)
    ///     .unwrap();
    /// assert_eq!(sum, 499_500);
    /// ```
    pub fn fold_reduce<T: Send>(
        self,
        identity: impl Fn() -> T + Sync,
        fold: impl Fn(T, I) -> T + Sync,
        reduce: impl Fn(T, T) -> T,
    ) -> Result<(T, LoopSummary), LoopError> {
        let start = self.range.start;
        let participants = match self.pool {
            Some(p) => p.team_size_here(),
            None => pool::global()?.team_size_here(),
        };
        // One accumulator per participant, each on its own cache lines:
        // participant `me` is the only one to lock `partial[me]` during the
        // region, so the lock is never contended.
        let partial: Vec<CachePadded<Mutex<Option<T>>>> = (0..participants)
            .map(|_| CachePadded::new(Mutex::new(None)))
            .collect();
        let summary = self.run(&|me, from: u64, to: u64| {
            let mut slot = partial[me].lock().unwrap_or_else(|e| e.into_inner());
            let acc = slot.take().unwrap_or_else(&identity);
            *slot = Some((from..to).fold(acc, |acc, offset| fold(acc, I::at(start, offset))));
        })?;
        let result = partial
            .into_iter()
            .filter_map(|slot| {
                CachePadded::into_inner(slot)
                    .into_inner()
                    .unwrap_or_else(|e| e.into_inner())
            })
            .reduce(reduce)
            .unwrap_or_else(identity);
        Ok((result, summary))
    }

    fn run(self, body: &(dyn Fn(usize, u64, u64) + Sync)) -> Result<LoopSummary, LoopError> {
        let iterations = I::span(&self.range)?;
        let pool = match self.pool {
            Some(p) => p,
            None => pool::global()?,
        };
        let (text, source_name) = match &self.schedule {
            Some(s) => (s.text(), "schedule"),
            None => (env_schedule()?, "KEEL_SCHEDULE"),
        };
        let schedule_error = |error| LoopError::Schedule { source_name, error };
        let threads = pool.team_size_here();
        let loop_state = state::state_of(&self.id);

        // Before the fork: what this loop kept from its earlier instances,
        // and, under `auto`, this instance's schedule.
        let mut history: SmallVec<[f64; 32]> = SmallVec::new();
        let (parsed, shape, profile, profiled, assignment, selected) = {
            let mut st = state::lock(loop_state);
            let (parsed, auto_chunk, selected) =
                resolve(&mut st, &self.id, text, iterations, threads).map_err(schedule_error)?;
            let reads = |concept| {
                parsed
                    .schedule
                    .requirements()
                    .iter()
                    .any(|r| r.concept == concept)
            };
            if reads(Concept::ThreadHistory) && st.record.history.len() == 2 * threads {
                history.extend_from_slice(&st.record.history);
            }
            let profiled = reads(Concept::IterationProfile);
            let profile = if profiled {
                st.record.profile.map(|(mean, sd)| [mean, sd])
            } else {
                None
            };
            // The loop's own chunk wins; under `auto` the expert chunk takes
            // the chunk parameter's place (docs/conventions.md#the-chunk-parameter).
            let chunk = self.chunk.or(auto_chunk).or(parsed.chunk);
            let shape = LoopShape::new(iterations, threads, chunk).map_err(schedule_error)?;
            let assignment = match parsed.schedule.as_workload() {
                Some(workload) => Some(
                    assignment_for(&mut st, workload, &parsed, &shape, self.workload)
                        .map_err(schedule_error)?,
                ),
                None => None,
            };
            (parsed, shape, profile, profiled, assignment, selected)
        };

        let mut ctx = ContextHandler::new();
        if let Some(values) = &profile {
            ctx.provide_values(Concept::IterationProfile, Origin::Runtime, &values[..]);
        }
        if !history.is_empty() {
            ctx.provide_values(Concept::ThreadHistory, Origin::Runtime, &history[..]);
        }
        if let Some(weights) = self
            .weights
            .as_deref()
            .filter(|_| threads == pool.threads())
        {
            ctx.provide_values(Concept::ThreadWeights, Origin::User, weights);
        }
        if let Some(hints) = self.workload {
            ctx.provide_values(HINTS, Origin::User, hints);
        }
        if let Some(assignment) = &assignment {
            ctx.provide_assignment(Origin::Runtime, assignment);
        }
        let plan = parsed.schedule.plan(&shape, &ctx).map_err(schedule_error)?;

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
        // The trace names each instance by its schedule, and under `auto` by
        // the method's choice and why it made it.
        let traced_name;
        let name: &str = match (&selected, trace::tracer()) {
            (Some(sel), Some(_)) => {
                traced_name = format!("{} → {} ({})", sel.method, parsed.canonical, sel.phase);
                &traced_name
            }
            _ => &parsed.canonical,
        };
        let instance = claim::Instance {
            plan,
            n: iterations,
            shared: claim::Shared::new(),
            board: Board { slots },
            t0: Instant::now(),
            name,
            profile: profiled,
            body,
        };
        pool.region(|team| claim::participate(team.index, &instance));
        let t_par = instance.t0.elapsed().as_secs_f64();

        let mut st = state::lock(loop_state);
        let st = &mut *st;
        let record = &mut st.record;
        record.store(&parsed.canonical, iterations, slots, t_par, profiled);
        record.last.selection = selected.map(|s| s.phase);
        record.last.chunk = shape.chunk;
        let summary = LoopSummary {
            id: self.id,
            threads,
            iterations,
            chunks: record.last.total_chunks(),
            t_par,
            lib_percent: record.last.lib_percent,
        };
        if let (Some(_), Some((_, Resolved::Auto(selection)))) = (selected, &mut st.resolved) {
            let measurement =
                Measurement::from_finish_times(&record.last.finish).with_iterations(iterations);
            // Finish times come from a monotonic clock and LIB from them, so
            // the selector cannot refuse them; if it ever did, the choice
            // stays pending and is simply retried.
            let _ = selection.selector.observe(&measurement);
        }
        Ok(summary)
    }
}

impl<'p> ParallelLoop<'p, usize> {
    /// Runs `body(start, chunk)` on disjoint pieces of `data`: for every
    /// chunk `a..b` of the loop's range that the schedule hands out (or
    /// piece of one, for the schedules that time sub-chunks), `chunk` is
    /// `&mut data[a..b]` and `start` is `a`. Every index of the range is in
    /// exactly one chunk, so each element is borrowed mutably once, with no
    /// lock or atomic (OpenMP's `parallel for` over an array, rayon's
    /// `par_chunks_mut` with the schedule choosing the chunks). The range
    /// must lie inside `data`: `pool.parallel(0..data.len())` covers it
    /// all.
    ///
    /// ```
    /// let pool = keel::ThreadPool::builder().threads(2).build().unwrap();
    /// let mut squares = vec![0u64; 1000];
    /// pool.parallel(0..squares.len())
    ///     .schedule("guided".parse().unwrap())
    ///     .for_each_chunk_mut(&mut squares, |start, chunk| {
    ///         for (k, x) in chunk.iter_mut().enumerate() {
    ///             let i = (start + k) as u64;
    ///             *x = i * i;
    ///         }
    ///     })
    ///     .unwrap();
    /// assert_eq!(squares[999], 998_001);
    /// ```
    pub fn for_each_chunk_mut<T: Send>(
        self,
        data: &mut [T],
        body: impl Fn(usize, &mut [T]) + Sync,
    ) -> Result<LoopSummary, LoopError> {
        if self.range.end > data.len() && self.range.start < self.range.end {
            return Err(LoopError::SliceTooShort {
                end: self.range.end,
                len: data.len(),
            });
        }
        let start = self.range.start;
        let base = SlicePtr(data.as_mut_ptr());
        self.run(&|_, from: u64, to: u64| {
            let (a, b) = (start + from as usize, start + to as usize);
            // SAFETY: `a..b` lies inside `data` (checked above: the range
            // ends within it, and every chunk lies inside the range), and
            // the schedule hands out each iteration exactly once per
            // instance (claim.rs; the exactly-once tests check it under
            // every schedule), so no two calls get overlapping pieces. The
            // exclusive borrow of `data` lasts until `run` returns, which
            // is after the join: no piece outlives it.
            let chunk = unsafe { std::slice::from_raw_parts_mut(base.get().add(a), b - a) };
            body(a, chunk);
        })
    }
}

/// The base of a slice whose disjoint pieces go to different participants.
struct SlicePtr<T>(*mut T);

impl<T> SlicePtr<T> {
    /// Through a method, so that closures capture the whole wrapper (and
    /// its `Sync`), not the raw pointer field.
    fn get(&self) -> *mut T {
        self.0
    }
}

// SAFETY: the pointer is only turned into disjoint `&mut [T]` pieces, one
// per chunk, each used by one participant: sending a `T` to another thread
// is what `T: Send` allows.
unsafe impl<T: Send> Sync for SlicePtr<T> {}

/// The user's per-iteration hints, as a workload-aware schedule reads them.
const HINTS: Concept = Concept::Workload {
    subject: Subject::Tasks,
    model: Model::Static,
};

/// What `auto` chose for one instance.
#[derive(Clone, Copy, Debug)]
struct Selected {
    method: &'static str,
    phase: &'static str,
}

/// The schedule of this instance for `text`: parsed once per distinct text
/// and then reused, so later instances neither parse nor allocate. Under
/// `auto[,method]` the loop's selector picks a portfolio schedule and,
/// with the expert chunk on, a chunk parameter.
fn resolve(
    st: &mut LoopState,
    id: &LoopId,
    text: &str,
    iterations: u64,
    threads: usize,
) -> Result<(Parsed, Option<u64>, Option<Selected>), PolicyError> {
    let fresh = !matches!(&st.resolved, Some((cached, _)) if cached == text);
    if fresh {
        let resolved = match select::parse_setting(text)? {
            Setting::Fixed { schedule, chunk } => Resolved::Fixed(Arc::new(ParsedSchedule {
                canonical: schedule.spec().to_string(),
                schedule,
                chunk,
            })),
            Setting::Auto(mut spec) => {
                if !text.contains("expert-chunk") {
                    spec = spec.with_expert_chunk(env_expert_chunk());
                }
                Resolved::Auto(Box::new(Selection {
                    selector: spec.selector(stream_of(id)),
                    spec,
                }))
            }
        };
        st.resolved = Some((text.to_string(), resolved));
    }
    match &mut st.resolved {
        Some((_, Resolved::Fixed(parsed))) => Ok((Arc::clone(parsed), None, None)),
        Some((_, Resolved::Auto(selection))) => {
            let choice = selection.selector.choose(iterations, threads);
            let selected = Selected {
                method: selection.spec.method.name(),
                phase: choice.phase.label(),
            };
            Ok((
                Arc::clone(&portfolio()[choice.index]),
                choice.chunk,
                Some(selected),
            ))
        }
        None => unreachable!("resolved just above"),
    }
}

/// The Auto4OMP portfolio, built once through the registry, in
/// portfolio order (the selectors' indices).
fn portfolio() -> &'static [Parsed] {
    static PORTFOLIO: OnceLock<Vec<Parsed>> = OnceLock::new();
    PORTFOLIO.get_or_init(|| {
        select::portfolio()
            .into_iter()
            .map(|schedule| {
                Arc::new(ParsedSchedule {
                    canonical: schedule.spec().to_string(),
                    schedule,
                    chunk: None,
                })
            })
            .collect()
    })
}

/// `KEEL_EXPERT_CHUNK=0|1`, read once: whether `auto` replaces the chunk
/// parameter by the expert chunk (on unless set to `0`).
fn env_expert_chunk() -> bool {
    static ENV: OnceLock<bool> = OnceLock::new();
    *ENV.get_or_init(|| std::env::var("KEEL_EXPERT_CHUNK").map_or(true, |v| v.trim() != "0"))
}

/// A stable number per loop, separating RandomSel's random streams.
fn stream_of(id: &LoopId) -> u64 {
    // FNV-1a over the loop's printed identity: stable across runs.
    id.to_string().bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A workload-aware schedule's assignment: the cached one while the
/// schedule, team, chunk and hints are unchanged, else a new one (counted in
/// the record's `assignments`).
fn assignment_for(
    st: &mut LoopState,
    workload: &WorkloadSchedule,
    parsed: &Parsed,
    shape: &LoopShape,
    hints: Option<&[f64]>,
) -> Result<SharedAssignment, PolicyError> {
    let name = workload.spec().name;
    let hints = hints.ok_or_else(|| PolicyError::InvalidParameter {
        policy: name.clone(),
        key: "workload".to_string(),
        value: "none".to_string(),
        expected: format!(
            "per-iteration workload hints: `{name}` maps iterations by their loads; \
             pass them with .workload(&loads)"
        ),
    })?;
    if let Some(cached) = &st.assignment {
        if cached.matches(&parsed.canonical, shape.threads, shape.chunk, hints) {
            return Ok(Arc::clone(&cached.assignment));
        }
    }
    let mut ctx = ContextHandler::new();
    ctx.provide_values(HINTS, Origin::User, hints);
    let assignment = Arc::new(workload.assign(shape, &ctx)?);
    st.record.assignments += 1;
    st.assignment = Some(CachedAssignment {
        canonical: parsed.canonical.clone(),
        threads: shape.threads,
        chunk: shape.chunk,
        hints: hints.iter().map(|h| h.to_bits()).collect(),
        assignment: Arc::clone(&assignment),
    });
    Ok(assignment)
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
