//! Dynamic loop self-scheduling: the DLS portfolio of Auto4OMP (Auto4OMP
//! paper §3.2) and LB4OMP, with the formulas as LLVM's libomp and LB4OMP
//! implement them in `kmp_dispatch.cpp` (summarised in
//! `docs/conventions.md#loop-schedules`).
//!
//! A schedule here is a *pure chunk calculator*. The context (`keel::loops`)
//! claims chunks atomically and feeds adaptive schedules their measurements;
//! nothing in this module reads a clock or touches a thread.
//!
//! The protocol, per loop instance:
//! 1. The context builds a [`Plan`] with [`LoopSchedule::plan`] from the
//!    loop's [`LoopShape`] and the concepts its context handler provides
//!    ([`Concept::IterationProfile`](crate::Concept::IterationProfile),
//!    [`ThreadWeights`](crate::Concept::ThreadWeights),
//!    [`ThreadHistory`](crate::Concept::ThreadHistory),
//!    [`SchedulingOverhead`](crate::Concept::SchedulingOverhead)); each is
//!    optional and has a documented neutral fallback. Plans are `Copy` and
//!    borrow per-thread inputs from the handler: starting a loop allocates
//!    nothing. Schedules are built by name through [`registry()`] or from
//!    `KEEL_SCHEDULE` text through [`crate::select::parse_setting`].
//! 2. The plan's [`Claim`] tells the context how to claim chunks:
//!    - [`Claim::Static`]: each thread walks its own blocks
//!      ([`Plan::static_block`]); no shared state.
//!    - [`Claim::Indexed`]: chunk bounds are a function of a chunk index, so
//!      one `fetch_add` on the index claims chunk `i` ([`Plan::chunk_at`]).
//!    - [`Claim::Remaining`]: the size depends on what remains; the context
//!      reads the next iteration `r`, asks [`Plan::next_size`], and claims
//!      `[r, r + size)` with one compare-and-swap, retrying on failure.
//!    - [`Claim::Steal`]: each thread owns a range ([`Plan::home_range`]) and
//!      takes [`Plan::chunk_unit`] iterations at a time from its front;
//!      idle threads steal [`Plan::steal_amount`] from a victim's back.
//! 3. Adaptive schedules say what they need measured ([`Plan::timing`]); the
//!    context times chunks only then, keeps per-thread sums in the thread's
//!    [`ThreadLocal`] and publishes per-thread [`ThreadTiming`]s on a
//!    [`TimingBoard`] the plan reads.
//!
//! Units: iterations are `u64` offsets in `[0, N)`; times are `f64` seconds.
//!
//! | name | claim | timing | inputs (fallback) |
//! |---|---|---|---|
//! | `static` | static | – | – |
//! | `ss` = `dynamic` | indexed | – | – |
//! | `gss` = `guided`, `gss-llvm` | remaining | – | – |
//! | `gac` (= `auto` for now) | indexed | – | – |
//! | `tss` | indexed | – | – |
//! | `fsc` | indexed | – | profile σ (→ `mfac2`), overhead (→ [`DEFAULT_OVERHEAD`]) |
//! | `fac`, `mfac` | remaining | – | profile μ, σ (→ `mfac2`) |
//! | `fac2`, `mfac2` | indexed | – | – |
//! | `wf` | remaining | – | thread weights (→ 1) |
//! | `tap` | remaining | – | profile μ, σ (→ `mfac2`) |
//! | `bold` | remaining | – | profile μ, σ (→ `mfac2`), overhead (→ [`DEFAULT_OVERHEAD`]) |
//! | `awf` | remaining | – | thread history (→ thread weights → 1) |
//! | `awf-b`, `awf-c` | remaining | chunk | thread weights until measured (→ 1) |
//! | `awf-d`, `awf-e` | remaining | request | thread weights until measured (→ 1) |
//! | `af` / `maf` | remaining, one sub-chunk per request | chunk / request | – |
//! | `static-steal` | steal | – | – |
//!
//! **Fallbacks.** A schedule needing a profile (`fsc`, `fac`, `mfac`, `tap`,
//! `bold`) plans as `mfac2` when the context has none (the first instance of
//! a loop) or its mean is 0. Not LB4OMP's `KMP_MU`/`KMP_SIGMA` defaults
//! (1600/30 µs): LB4OMP parses them but reads the profile file instead, and
//! their arbitrary σ/μ ≈ 0.02 would make FAC's first batch nearly `N/P` per
//! thread — a static schedule in disguise. mFAC2 is factoring without a
//! profile (FAC with `x = 2`), the member Auto4OMP keeps for exactly that
//! reason (paper §3.2, criterion C1). A missing overhead is
//! [`DEFAULT_OVERHEAD`]; missing weights are 1. Inputs of the wrong length
//! or with negative / non-finite numbers are typed errors, never guessed.
//!
//! **Context obligations** (what the rules assume of `keel::loops`):
//! - [`Claim::Remaining`]: take the request number `c` once per request,
//!   before the CAS loop; a failed CAS calls [`Plan::next_size`] again with
//!   the same [`Request`] and the new remaining count. The rules are
//!   idempotent for a repeated request (FAC's batch cache, BOLD's marker).
//!   Sizes are at least `min(k, remaining)`; clamp them to `remaining`.
//! - After each successful claim call [`ThreadLocal::claimed`] with the
//!   claimed size (AF and mAF hand out a chunk as sub-chunks, one per
//!   request, each claimed from the shared counter).
//! - [`Timing::Chunk`]: time each claimed chunk from after the claim to
//!   its end; [`Timing::Request`]: from the thread's request, so the
//!   time carries the scheduling overhead (the end of a thread's previous
//!   chunk may serve as its request's time: one clock read per chunk).
//!   Feed each to [`Plan::measured`] and publish the timing it returns on
//!   the board before the thread's next request (equivalently, for the
//!   fields the plan reads: [`ThreadLocal::record`] and, when
//!   [`ThreadLocal::chunk_spent`], [`ThreadLocal::timing`]).
//! - Reset every [`ThreadLocal`] to `default()` at the start of an instance.
//!
//! `dynamic,4` on ten iterations: chunk `i` is a function of `i`, the last one short.
//!
//! ```
//! use keel_policy::dls::{Claim, LoopShape};
//! use keel_policy::select::parse_setting;
//! use keel_policy::ContextHandler;
//! let (schedule, chunk) = parse_setting("dynamic,4").unwrap().into_fixed().unwrap();
//! assert_eq!(chunk, Some(4));
//! let ctx = ContextHandler::new();
//! let plan = schedule.plan(&LoopShape::new(10, 2, chunk).unwrap(), &ctx).unwrap();
//! assert!(matches!(plan.claim(), Claim::Indexed));
//! assert_eq!(plan.chunk_at(0), Some(0..4));
//! assert_eq!(plan.chunk_at(2), Some(8..10));
//! assert_eq!(plan.chunk_at(3), None);
//! ```

use std::fmt;
use std::ops::Range;

use crate::concept::Requirement;
use crate::context::ContextHandler;
use crate::error::PolicyError;
use crate::spec::Spec;

/// The loop a plan is made for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopShape {
    /// Number of iterations `N` (the range is `[0, N)`).
    pub iterations: u64,
    /// Number of threads `P` taking part (`>= 1`).
    pub threads: usize,
    /// The chunk parameter `k` (`docs/conventions.md#the-chunk-parameter`):
    /// exact for `static,k`
    /// and `dynamic,k`, a minimum for the others, the stealing unit for
    /// `static-steal`, the last chunk for `tss`. `None` means the
    /// schedule's default.
    pub chunk: Option<u64>,
}

impl LoopShape {
    /// Validates the shape: at least one thread, a chunk parameter `>= 1`.
    ///
    /// Inlined, with the errors built out of line: every loop instance
    /// makes a shape, and the check itself is two comparisons.
    #[inline]
    pub fn new(iterations: u64, threads: usize, chunk: Option<u64>) -> Result<Self, PolicyError> {
        if threads == 0 {
            return Err(invalid_shape("threads", "0", "at least 1 thread"));
        }
        if chunk == Some(0) {
            return Err(invalid_shape("chunk", "0", "a chunk size >= 1"));
        }
        Ok(LoopShape {
            iterations,
            threads,
            chunk,
        })
    }

    /// The chunk parameter, 1 when not given.
    pub fn min_chunk(&self) -> u64 {
        self.chunk.unwrap_or(1)
    }
}

/// [`LoopShape::new`]'s error.
#[cold]
#[inline(never)]
fn invalid_shape(key: &str, value: &str, expected: &str) -> PolicyError {
    PolicyError::InvalidParameter {
        policy: "loop".into(),
        key: key.into(),
        value: value.into(),
        expected: expected.into(),
    }
}

/// How the context claims chunks of a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// Fixed per-thread blocks, no shared state.
    Static,
    /// One `fetch_add` on a chunk index; bounds from [`Plan::chunk_at`].
    Indexed,
    /// Read the next iteration, size from [`Plan::next_size`], CAS.
    Remaining,
    /// Per-thread home ranges with stealing from the back.
    Steal,
}

/// What an adaptive plan needs the context to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timing {
    /// Nothing: the context reads no clock.
    None,
    /// Each chunk's execution time, from after the claim to its end
    /// (AWF-B, AWF-C, AF).
    Chunk,
    /// Time from one request to the next, so the scheduling overhead is
    /// included (AWF-D, AWF-E, mAF): a context may take the end of the
    /// thread's previous chunk as the request's time.
    Request,
}

/// One chunk request, as the context numbers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// The requesting thread, `0..P`.
    pub thread: usize,
    /// Global request number `c` (a shared counter, one per request), whose
    /// `⌊c / P⌋` is the batch index of the factoring schedules.
    pub number: u64,
}

/// Per-thread, per-instance state a plan keeps between its own requests.
/// The context owns one per worker and resets it to `default()` at the
/// start of each loop instance; plans read and update only their own fields.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ThreadLocal {
    /// Batch index this thread last computed a size for (FAC, mFAC); BOLD
    /// keeps `request number + 1` of the request `size` was computed for.
    pub batch: u64,
    /// That batch's chunk size, or the last size handed out (0 = none yet).
    pub size: u64,
    /// Iterations the batch recursion assumes remain at the start of
    /// `batch` (FAC, mFAC).
    pub remaining: u64,
    /// The size this thread was handed at its previous request (BOLD).
    pub previous: u64,
    /// Chunks this thread completed in this instance (AWF's κ).
    pub chunks: u64,
    /// Σ κ·Δt over its chunks (AWF-B..E).
    pub weighted_time: f64,
    /// Σ κ·size over its chunks (AWF-B..E).
    pub weighted_iterations: f64,
    /// Σ per-iteration times of its samples (AF, mAF).
    pub sum: f64,
    /// Σ of their squares (AF, mAF).
    pub sum_squares: f64,
    /// Number of samples (AF, mAF).
    pub samples: u64,
    /// Iterations this thread's current chunk may still claim, one
    /// sub-chunk per request (AF, mAF); 0 = the next request plans a new
    /// chunk. See [`ThreadLocal::claimed`].
    pub budget: u64,
    /// Sub-chunk size of the current chunk (AF, mAF).
    pub sub_chunk: u64,
}

impl ThreadLocal {
    /// Tells the plan that a request's CAS claimed `size` iterations; the
    /// context calls it once per successful [`Claim::Remaining`] claim,
    /// never on a failed attempt (the rules are idempotent for retries).
    #[inline]
    pub fn claimed(&mut self, size: u64) {
        self.budget = self.budget.saturating_sub(size);
    }

    /// Whether the thread's current chunk is spent, so its
    /// [`ThreadLocal::timing`] is due on the board before its next
    /// request. Always true for plans without chunk budgets; for AF and
    /// mAF only once the last sub-chunk of a chunk has run, as LB4OMP
    /// publishes μ and σ.
    #[inline]
    pub fn chunk_spent(&self) -> bool {
        self.budget == 0
    }

    /// Records one finished chunk of `size` iterations that took `seconds`
    /// (measured as [`Plan::timing`] asks); updates the AWF and AF sums.
    /// A context that feeds one plan calls [`Plan::measured`] instead,
    /// which updates only the sums that plan reads.
    pub fn record(&mut self, size: u64, seconds: f64) {
        self.record_weighted(size, seconds);
        self.record_sample(size, seconds);
    }

    /// AWF's half of [`ThreadLocal::record`]: the chunk-index-weighted sums
    /// behind `π`.
    #[inline]
    pub fn record_weighted(&mut self, size: u64, seconds: f64) {
        self.chunks += 1;
        let kappa = self.chunks as f64;
        self.weighted_time += kappa * seconds;
        self.weighted_iterations += kappa * size as f64;
    }

    /// AF's half of [`ThreadLocal::record`]: one sample of the time per
    /// iteration (none for an empty chunk).
    #[inline]
    pub fn record_sample(&mut self, size: u64, seconds: f64) {
        if size > 0 {
            let per_iteration = seconds / size as f64;
            self.sum += per_iteration;
            self.sum_squares += per_iteration * per_iteration;
            self.samples += 1;
        }
    }

    /// What this thread publishes on the board.
    pub fn timing(&self) -> ThreadTiming {
        let (mean, sd) = self.moments();
        ThreadTiming {
            time_per_iteration: self.time_per_iteration(),
            mean,
            sd,
        }
    }

    /// AWF's `π` from [`ThreadLocal::record_weighted`]'s sums (0 = no data).
    #[inline]
    pub fn time_per_iteration(&self) -> f64 {
        if self.weighted_iterations > 0.0 {
            self.weighted_time / self.weighted_iterations
        } else {
            0.0
        }
    }

    /// AF's `μ` and sample `σ` from [`ThreadLocal::record_sample`]'s sums
    /// (0 = no data).
    #[inline]
    pub fn moments(&self) -> (f64, f64) {
        let n = self.samples as f64;
        let mean = if self.samples > 0 { self.sum / n } else { 0.0 };
        let sd = if self.samples > 1 {
            ((self.sum_squares - n * mean * mean) / (n - 1.0))
                .max(0.0)
                .sqrt()
        } else {
            0.0
        };
        (mean, sd)
    }
}

/// What one thread has published about its speed in this instance.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ThreadTiming {
    /// AWF's π: chunk-index-weighted time per iteration (0 = no data yet).
    pub time_per_iteration: f64,
    /// AF's μ: mean time per iteration over its samples (0 = no data yet).
    pub mean: f64,
    /// AF's σ: sample standard deviation of that time.
    pub sd: f64,
}

/// Every thread's latest [`ThreadTiming`], kept by the context. Entries may
/// be a moment stale; the schedules tolerate that, as LB4OMP's do.
pub trait TimingBoard {
    /// Number of threads.
    fn threads(&self) -> usize;
    /// Thread `thread`'s latest timing.
    fn get(&self, thread: usize) -> ThreadTiming;
    /// Thread `thread`'s latest `π` alone: what AWF reads of every thread
    /// at every request, so a board whose fields are separate words reads
    /// one.
    ///
    /// ```
    /// use keel_policy::dls::{ThreadTiming, TimingBoard};
    /// let board = vec![ThreadTiming { time_per_iteration: 2e-6, ..ThreadTiming::default() }];
    /// assert_eq!(board.time_per_iteration(0), 2e-6);
    /// ```
    #[inline]
    fn time_per_iteration(&self, thread: usize) -> f64 {
        self.get(thread).time_per_iteration
    }
}

/// A board held in a plain vector (tests, the simulator).
impl TimingBoard for Vec<ThreadTiming> {
    fn threads(&self) -> usize {
        self.len()
    }
    fn get(&self, thread: usize) -> ThreadTiming {
        self[thread]
    }
}

/// A loop schedule: a registry policy of the `loop schedule` family. It reads
/// its inputs through the context handler once per instance and returns a
/// `Copy` [`Plan`].
pub trait LoopSchedule: Send + Sync + fmt::Debug {
    /// The canonical spec: rebuilds this schedule through [`registry()`].
    fn spec(&self) -> Spec;

    /// The concepts the schedule reads (all optional for the built-ins: each
    /// has a neutral fallback), so a context measures only what is used.
    fn requirements(&self) -> &[Requirement] {
        &[]
    }

    /// The plan for one loop instance; it may borrow per-thread inputs from
    /// `ctx`, which must therefore outlive the instance.
    fn plan<'a>(
        &self,
        shape: &LoopShape,
        ctx: &'a ContextHandler<'_>,
    ) -> Result<Plan<'a>, PolicyError>;

    /// A workload-aware schedule (`binlpt`, `greedy`): its iteration
    /// assignment is made once by [`WorkloadSchedule::assign`] and offered
    /// back to [`LoopSchedule::plan`] by the context.
    fn as_workload(&self) -> Option<&WorkloadSchedule> {
        None
    }
}

/// Clamps a computed size to `[min_chunk, remaining]` and to at least 1.
#[inline]
pub fn clamp_size(size: u64, min_chunk: u64, remaining: u64) -> u64 {
    size.max(min_chunk).max(1).min(remaining)
}

/// `⌈x⌉` as a chunk size: 0 for NaN and non-positive values, saturating at
/// `u64::MAX` (an `as` cast saturates), so a formula that degenerates never
/// wraps around; callers then clamp to the minimum chunk.
///
/// Equal to `x.ceil() as u64` for every `x > 0` (a test sweeps the edges),
/// without `f64::ceil`, which x86-64's baseline (no SSE4.1 `roundsd`) makes
/// a library call on the adaptive schedules' per-chunk path: the
/// truncation, plus one when it lost a fraction. Past 2⁵³ every `f64` is
/// an integer, so the truncation is exact there; past `u64::MAX` both
/// saturate.
#[inline]
pub(crate) fn ceil_size(x: f64) -> u64 {
    if x >= TWO_TO_63 {
        // Every f64 from 2⁶³ up is an integer: the cast is the ceiling
        // (saturated at `u64::MAX`, as `x.ceil() as u64` is).
        x as u64
    } else if x > 0.0 {
        // The signed conversions are an instruction each way on x86-64,
        // the unsigned ones a sequence; below 2⁶³ both give these values.
        let truncated = x as i64;
        (truncated + i64::from((truncated as f64) < x)) as u64
    } else {
        0
    }
}

/// 2⁶³ as an `f64`.
const TWO_TO_63: f64 = 9_223_372_036_854_775_808.0;

/// `v > 0.0 && v.is_finite()` as one integer comparison of its bits (the
/// positive finite non-zero values are exactly the bit patterns
/// `1..=0x7fef_ffff_ffff_ffff`), which the adaptive schedules ask of every
/// thread's published timing at every request.
#[inline]
pub(crate) fn positive_finite(v: f64) -> bool {
    v.to_bits().wrapping_sub(1) < f64::MAX.to_bits()
}

/// Guarded `⌊x⌋` for the formulas LB4OMP truncates into an integer.
#[inline]
pub(crate) fn floor_size(x: f64) -> u64 {
    if x > 0.0 {
        x as u64
    } else {
        0
    }
}

/// A chunk as a half-open range of iteration offsets.
pub type Chunk = Range<u64>;

/// One schedule's chunk arithmetic for one loop instance. Each schedule
/// implements the methods its [`Claim`] uses; the defaults are never called
/// for other claims.
pub trait Rule: Copy + fmt::Debug {
    /// How chunks are claimed.
    fn claim(&self) -> Claim;

    /// What the context must measure (default: nothing).
    fn timing(&self) -> Timing {
        Timing::None
    }

    /// [`Claim::Static`]: thread `thread`'s `round`-th block, `None` when done.
    fn static_block(&self, _thread: usize, _round: u64) -> Option<Chunk> {
        None
    }

    /// [`Claim::Indexed`]: bounds of chunk `index`, `None` past the end.
    fn chunk_at(&self, _index: u64) -> Option<Chunk> {
        None
    }

    /// [`Claim::Remaining`]: whether [`Rule::next_size`] reads
    /// [`Request::number`]; the context numbers requests (one more shared
    /// atomic per chunk) only for rules that do.
    fn numbers_requests(&self) -> bool {
        false
    }

    /// [`Claim::Remaining`]: size of the next chunk (the context clamps it to
    /// `[1, remaining]`). Generic over the board, so that a context's board
    /// is read without a virtual call per thread.
    fn next_size<B: TimingBoard + ?Sized>(
        &self,
        remaining: u64,
        _request: Request,
        _local: &mut ThreadLocal,
        _board: &B,
    ) -> u64 {
        remaining
    }

    /// A measuring plan ([`Rule::timing`] not [`Timing::None`]): records
    /// one chunk of `size` iterations that took `seconds` in `local` and
    /// returns the timing due on the board, if one is (when
    /// [`ThreadLocal::chunk_spent`]). The default keeps every sum and
    /// publishes every field ([`ThreadLocal::record`],
    /// [`ThreadLocal::timing`]); a plan may keep only the sums it reads and
    /// leave the other fields 0, provided what it reads is the same.
    fn measured(&self, local: &mut ThreadLocal, size: u64, seconds: f64) -> Option<ThreadTiming> {
        local.record(size, seconds);
        local.chunk_spent().then(|| local.timing())
    }

    /// [`Claim::Steal`]: the range thread `thread` starts with.
    fn home_range(&self, _thread: usize) -> Chunk {
        0..0
    }

    /// [`Claim::Steal`]: iterations taken from the front of one's own range.
    fn chunk_unit(&self) -> u64 {
        1
    }

    /// [`Claim::Steal`]: iterations a thief takes from the back of a victim
    /// with `victim_remaining` iterations left (0 = leave it).
    fn steal_amount(&self, _victim_remaining: u64) -> u64 {
        0
    }
}

mod af;
mod awf_live;
mod bold;
mod fac;
mod fac2;
mod fsc;
mod gac;
mod guided;
mod inputs;
mod memory;
mod plan;
mod registry;
mod ss;
mod static_block;
mod static_steal;
mod tap;
#[cfg(test)]
mod tests;
mod tss;
mod wf;
mod workload;

pub use af::{Af, AfVariant, AF_INITIAL_CHUNK, DEFAULT_DIVIDER};
pub use awf_live::{AwfLive, AwfVariant};
pub use bold::Bold;
pub use fac::{Fac, FacVariant};
pub use fac2::Fac2;
pub use fsc::fsc_chunk;
pub use gac::{Gac, GAC_MAX_THREADS};
pub use guided::{Guided, GuidedRule};
pub use inputs::{Profile, ProfileSums, Weights, DEFAULT_OVERHEAD};
pub use memory::{LoopMemory, Recall, StepMeasurement};
pub use plan::Plan;
pub(crate) use registry::parse_schedule;
pub use registry::{registry, Schedule, ScheduleParams, AUTO4OMP_PORTFOLIO};
pub use ss::Ss;
pub use static_block::StaticBlock;
pub use static_steal::{StaticSteal, STEAL_DIVISOR, STEAL_QUARTER_ABOVE};
pub use tap::{Tap, DEFAULT_ALPHA};
pub use tss::Tss;
pub use wf::Weighted;
pub use workload::{Assigned, Assignment, SharedAssignment, WorkloadSchedule, WORKLOAD_SCHEDULES};
