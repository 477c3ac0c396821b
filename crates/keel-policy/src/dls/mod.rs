//! Dynamic loop self-scheduling: the DLS portfolio of Auto4OMP (paper
//! `auto4omp-automated-loop-schedule-selection.txt` §3.2) and LB4OMP, with
//! the formulas of `research/loops.md` §2.
//!
//! A schedule here is a *pure chunk calculator*. The context (`keel::loops`)
//! claims chunks atomically and feeds adaptive schedules their measurements;
//! nothing in this module reads a clock or touches a thread.
//!
//! The protocol, per loop instance:
//! 1. The context builds a [`Plan`] with [`LoopSchedule::plan`] from the
//!    loop's [`LoopShape`] and the concepts its context handler provides
//!    (profiled μ/σ, thread weights). Plans are `Copy`: starting a loop
//!    allocates nothing.
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

use std::fmt;
use std::ops::Range;

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
    /// The chunk parameter `k` (DESIGN.md Conventions): exact for `static,k`
    /// and `dynamic,k`, a minimum for the others, the stealing unit for
    /// `static-steal`, the last chunk for `tss`. `None` means the
    /// schedule's default.
    pub chunk: Option<u64>,
}

impl LoopShape {
    /// Validates the shape: at least one thread, a chunk parameter `>= 1`.
    pub fn new(iterations: u64, threads: usize, chunk: Option<u64>) -> Result<Self, PolicyError> {
        if threads == 0 {
            return Err(PolicyError::InvalidParameter {
                policy: "loop".into(),
                key: "threads".into(),
                value: "0".into(),
                expected: "at least 1 thread".into(),
            });
        }
        if chunk == Some(0) {
            return Err(PolicyError::InvalidParameter {
                policy: "loop".into(),
                key: "chunk".into(),
                value: "0".into(),
                expected: "a chunk size >= 1".into(),
            });
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
    /// included (AWF-D, AWF-E, mAF).
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
    /// Batch index this thread last computed a size for (mFAC2, WF, AWF-B/D).
    pub batch: u64,
    /// That batch's chunk size, or the last size handed out.
    pub size: u64,
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
}

impl ThreadLocal {
    /// Records one finished chunk of `size` iterations that took `seconds`
    /// (measured as [`Plan::timing`] asks); updates the AWF and AF sums.
    pub fn record(&mut self, size: u64, seconds: f64) {
        self.chunks += 1;
        let kappa = self.chunks as f64;
        self.weighted_time += kappa * seconds;
        self.weighted_iterations += kappa * size as f64;
        if size > 0 {
            let per_iteration = seconds / size as f64;
            self.sum += per_iteration;
            self.sum_squares += per_iteration * per_iteration;
            self.samples += 1;
        }
    }

    /// What this thread publishes on the board.
    pub fn timing(&self) -> ThreadTiming {
        let n = self.samples as f64;
        let mean = if self.samples > 0 { self.sum / n } else { 0.0 };
        let sd = if self.samples > 1 {
            ((self.sum_squares - n * mean * mean) / (n - 1.0))
                .max(0.0)
                .sqrt()
        } else {
            0.0
        };
        let pi = if self.weighted_iterations > 0.0 {
            self.weighted_time / self.weighted_iterations
        } else {
            0.0
        };
        ThreadTiming {
            time_per_iteration: pi,
            mean,
            sd,
        }
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
    /// The canonical spec (`KEEL_SCHEDULE` syntax where one exists).
    fn spec(&self) -> Spec;

    /// The plan for one loop instance.
    fn plan(&self, shape: &LoopShape, ctx: &ContextHandler<'_>) -> Result<Plan, PolicyError>;
}

/// Clamps a computed size to `[min_chunk, remaining]` and to at least 1.
#[inline]
pub fn clamp_size(size: u64, min_chunk: u64, remaining: u64) -> u64 {
    size.max(min_chunk).max(1).min(remaining)
}

/// Ceiling of `a / b` for `b > 0`.
#[inline]
pub fn div_ceil(a: u64, b: u64) -> u64 {
    a.div_ceil(b)
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

    /// [`Claim::Remaining`]: size of the next chunk (the context clamps it to
    /// `[1, remaining]`).
    fn next_size(
        &self,
        remaining: u64,
        _request: Request,
        _local: &mut ThreadLocal,
        _board: &dyn TimingBoard,
    ) -> u64 {
        remaining
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

    /// Sub-chunk size in which a claimed chunk of `size` is executed and
    /// timed (AF, mAF); the default runs it whole.
    fn sub_chunk(&self, size: u64) -> u64 {
        size
    }
}

mod guided;
mod ss;
mod static_block;

pub use guided::{Guided, GuidedRule};
pub use ss::Ss;
pub use static_block::StaticBlock;

/// A plan for one loop instance: one variant per schedule. `Copy`, and it
/// borrows whatever per-thread inputs it needs from the context handler, so
/// building one allocates nothing.
#[derive(Clone, Copy, Debug)]
pub enum Plan {
    /// `static`, `static,k`.
    Static(StaticBlock),
    /// `ss` = `dynamic[,k]`.
    Ss(Ss),
    /// `gss` = `guided` (⌈R/P⌉) and `gss-llvm` (⌊R/2P⌋).
    Guided(Guided),
}

macro_rules! dispatch {
    ($self:expr, $rule:ident => $body:expr) => {
        match $self {
            Plan::Static($rule) => $body,
            Plan::Ss($rule) => $body,
            Plan::Guided($rule) => $body,
        }
    };
}

impl Plan {
    /// How chunks are claimed.
    #[inline]
    pub fn claim(&self) -> Claim {
        dispatch!(self, r => r.claim())
    }

    /// What the context must measure.
    #[inline]
    pub fn timing(&self) -> Timing {
        dispatch!(self, r => r.timing())
    }

    /// See [`Rule::static_block`].
    #[inline]
    pub fn static_block(&self, thread: usize, round: u64) -> Option<Chunk> {
        dispatch!(self, r => r.static_block(thread, round))
    }

    /// See [`Rule::chunk_at`].
    #[inline]
    pub fn chunk_at(&self, index: u64) -> Option<Chunk> {
        dispatch!(self, r => r.chunk_at(index))
    }

    /// See [`Rule::next_size`].
    #[inline]
    pub fn next_size(
        &self,
        remaining: u64,
        request: Request,
        local: &mut ThreadLocal,
        board: &dyn TimingBoard,
    ) -> u64 {
        dispatch!(self, r => r.next_size(remaining, request, local, board))
    }

    /// See [`Rule::home_range`].
    #[inline]
    pub fn home_range(&self, thread: usize) -> Chunk {
        dispatch!(self, r => r.home_range(thread))
    }

    /// See [`Rule::chunk_unit`].
    #[inline]
    pub fn chunk_unit(&self) -> u64 {
        dispatch!(self, r => r.chunk_unit())
    }

    /// See [`Rule::steal_amount`].
    #[inline]
    pub fn steal_amount(&self, victim_remaining: u64) -> u64 {
        dispatch!(self, r => r.steal_amount(victim_remaining))
    }

    /// See [`Rule::sub_chunk`].
    #[inline]
    pub fn sub_chunk(&self, size: u64) -> u64 {
        dispatch!(self, r => r.sub_chunk(size))
    }
}
