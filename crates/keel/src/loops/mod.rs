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
mod index;
mod parallel;
mod record;
mod schedule;
mod state;

use std::ops::Range;
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
use crate::{trace, warn};

pub use index::LoopIndex;
pub use parallel::{
    for_each, for_each_chunk, parallel, try_for_each, try_for_each_chunk, ParallelLoop,
};
pub use record::{
    all_records, clear_records, record, InstanceStats, LoopId, LoopName, LoopRecord,
    SelectionTimeline,
};
pub use schedule::{Schedule, ScheduleError};

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
            return self.run_on(pool, iterations, schedule.text(), "schedule", body);
        }
        let text = match mode {
            Mode::Strict => env_schedule(),
            Mode::Lenient => env_schedule_or_auto(),
        };
        let result = self.run_on(pool, iterations, text, "KEEL_SCHEDULE", body);
        match result {
            // A schedule from the environment that cannot plan this loop
            // (a workload-aware one without hints, say): no iteration has
            // run, so the instance runs again under the default.
            Err(LoopError::Schedule { error, .. }) if mode == Mode::Lenient && text != "auto" => {
                warn::once("KEEL_SCHEDULE", text, || {
                    format!("KEEL_SCHEDULE={text:?} cannot run every loop ({error}); using auto")
                });
                self.run_on(pool, iterations, "auto", "KEEL_SCHEDULE", body)
            }
            other => other,
        }
    }

    fn run_on(
        &self,
        pool: &ThreadPool,
        iterations: u64,
        text: &str,
        source_name: &'static str,
        body: &(dyn Fn(usize, u64, u64) + Sync),
    ) -> Result<LoopSummary, LoopError> {
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
        // The trace names each instance by its loop id and schedule, and
        // under `auto` by the method's choice and why it made it.
        let label = trace::tracer().map(|_| {
            let schedule = match &selected {
                Some(sel) => format!("{} → {} ({})", sel.method, parsed.canonical, sel.phase),
                None => parsed.canonical.clone(),
            };
            let id = self.id.to_string();
            trace::LoopLabel {
                name: format!("{id} [{schedule}]"),
                schedule,
                id,
            }
        });
        let instance = claim::Instance {
            plan,
            n: iterations,
            shared: claim::Shared::new(),
            board: Board { slots },
            t0: Instant::now(),
            trace: label.as_ref(),
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
            id: self.id.clone(),
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
fn env_schedule() -> &'static str {
    static ENV: OnceLock<String> = OnceLock::new();
    ENV.get_or_init(|| {
        std::env::var("KEEL_SCHEDULE")
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| "auto".to_string())
    })
}

/// [`env_schedule`], or `auto` when it does not parse (warned once, as
/// libgomp warns about a bad `OMP_SCHEDULE`).
fn env_schedule_or_auto() -> &'static str {
    static CHECKED: OnceLock<&'static str> = OnceLock::new();
    CHECKED.get_or_init(|| {
        let text = env_schedule();
        match select::parse_setting(text) {
            Ok(_) => text,
            Err(err) => {
                warn::once("KEEL_SCHEDULE", text, || {
                    format!("KEEL_SCHEDULE={text:?} is invalid ({err}); using auto")
                });
                "auto"
            }
        }
    })
}
