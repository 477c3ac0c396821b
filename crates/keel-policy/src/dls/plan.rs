//! [`Plan`]: one loop instance's schedule, a `Copy` enum over the rules,
//! with each [`Rule`] method dispatched to the variant's.

use super::{
    Af, Assigned, AwfLive, Bold, Chunk, Claim, Fac, Fac2, Gac, Guided, Request, Rule, Ss,
    StaticBlock, StaticSteal, Tap, ThreadLocal, ThreadTiming, Timing, TimingBoard, Tss, Weighted,
};

/// A plan for one loop instance: one variant per schedule (or per family of
/// schedules sharing their arithmetic). `Copy`, and it borrows whatever
/// per-thread inputs it needs from the context handler, so building one
/// allocates nothing.
#[derive(Clone, Copy, Debug)]
pub enum Plan<'a> {
    /// `static`, `static,k`.
    Static(StaticBlock),
    /// `ss` = `dynamic[,k]`; also `fsc` (a fixed size computed once).
    Ss(Ss),
    /// `gss` = `guided` (⌈R/P⌉) and `gss-llvm` (⌊R/2P⌋).
    Guided(Guided),
    /// `gac`: LLVM's analytical guided.
    Gac(Gac),
    /// `tss`: trapezoid self-scheduling.
    Tss(Tss),
    /// `fac`, `mfac`: factoring with profiled μ, σ.
    Fac(Fac),
    /// `fac2`, `mfac2` (identical sequences), and the profile schedules'
    /// fallback.
    Fac2(Fac2),
    /// `wf`, `awf`: mFAC2 batches scaled by per-thread weights.
    Weighted(Weighted<'a>),
    /// `tap`: tapering.
    Tap(Tap),
    /// `bold`: Hagerup's BOLD.
    Bold(Bold),
    /// `awf-b`, `awf-c`, `awf-d`, `awf-e`: weights adapted per chunk.
    AwfLive(AwfLive<'a>),
    /// `af`, `maf`: adaptive factoring.
    Af(Af),
    /// `static-steal`.
    StaticSteal(StaticSteal),
    /// `binlpt`, `greedy`: ranges assigned once from workload hints.
    Assigned(Assigned<'a>),
}

macro_rules! dispatch {
    ($self:expr, $rule:ident => $body:expr) => {
        match $self {
            Plan::Static($rule) => $body,
            Plan::Ss($rule) => $body,
            Plan::Guided($rule) => $body,
            Plan::Gac($rule) => $body,
            Plan::Tss($rule) => $body,
            Plan::Fac($rule) => $body,
            Plan::Fac2($rule) => $body,
            Plan::Weighted($rule) => $body,
            Plan::Tap($rule) => $body,
            Plan::Bold($rule) => $body,
            Plan::AwfLive($rule) => $body,
            Plan::Af($rule) => $body,
            Plan::StaticSteal($rule) => $body,
            Plan::Assigned($rule) => $body,
        }
    };
}

impl Plan<'_> {
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

    /// See [`Rule::numbers_requests`].
    #[inline]
    pub fn numbers_requests(&self) -> bool {
        dispatch!(self, r => r.numbers_requests())
    }

    /// See [`Rule::chunk_at`].
    #[inline]
    pub fn chunk_at(&self, index: u64) -> Option<Chunk> {
        dispatch!(self, r => r.chunk_at(index))
    }

    /// See [`Rule::next_size`].
    #[inline]
    pub fn next_size<B: TimingBoard + ?Sized>(
        &self,
        remaining: u64,
        request: Request,
        local: &mut ThreadLocal,
        board: &B,
    ) -> u64 {
        dispatch!(self, r => r.next_size(remaining, request, local, board))
    }

    /// See [`Rule::measured`]: records one chunk's measurement and returns
    /// the timing due on the board, if any.
    ///
    /// ```
    /// use keel_policy::dls::{registry, LoopShape, ThreadLocal};
    /// use keel_policy::ContextHandler;
    /// let ctx = ContextHandler::new();
    /// let shape = LoopShape::new(1000, 2, None).unwrap();
    /// let awf = registry().build("awf-b").unwrap().plan(&shape, &ctx).unwrap();
    /// let mut local = ThreadLocal::default();
    /// // AWF publishes π after every chunk: 2 s over 4 iterations.
    /// let due = awf.measured(&mut local, 4, 2.0).unwrap();
    /// assert_eq!(due.time_per_iteration, 0.5);
    /// ```
    #[inline]
    pub fn measured(
        &self,
        local: &mut ThreadLocal,
        size: u64,
        seconds: f64,
    ) -> Option<ThreadTiming> {
        dispatch!(self, r => r.measured(local, size, seconds))
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
}

/// The plan is a rule itself (each method its variant's), so that a
/// context's code generic over [`Rule`] takes either a whole plan or, for a
/// hot loop, the one variant it matched.
impl Rule for Plan<'_> {
    #[inline]
    fn claim(&self) -> Claim {
        dispatch!(self, r => r.claim())
    }

    #[inline]
    fn timing(&self) -> Timing {
        dispatch!(self, r => r.timing())
    }

    #[inline]
    fn static_block(&self, thread: usize, round: u64) -> Option<Chunk> {
        dispatch!(self, r => r.static_block(thread, round))
    }

    #[inline]
    fn chunk_at(&self, index: u64) -> Option<Chunk> {
        dispatch!(self, r => r.chunk_at(index))
    }

    #[inline]
    fn numbers_requests(&self) -> bool {
        dispatch!(self, r => r.numbers_requests())
    }

    #[inline]
    fn next_size<B: TimingBoard + ?Sized>(
        &self,
        remaining: u64,
        request: Request,
        local: &mut ThreadLocal,
        board: &B,
    ) -> u64 {
        dispatch!(self, r => r.next_size(remaining, request, local, board))
    }

    #[inline]
    fn measured(&self, local: &mut ThreadLocal, size: u64, seconds: f64) -> Option<ThreadTiming> {
        dispatch!(self, r => r.measured(local, size, seconds))
    }

    #[inline]
    fn home_range(&self, thread: usize) -> Chunk {
        dispatch!(self, r => r.home_range(thread))
    }

    #[inline]
    fn chunk_unit(&self) -> u64 {
        dispatch!(self, r => r.chunk_unit())
    }

    #[inline]
    fn steal_amount(&self, victim_remaining: u64) -> u64 {
        dispatch!(self, r => r.steal_amount(victim_remaining))
    }
}
