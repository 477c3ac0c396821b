//! A participant of a [`Workshare`] that *pulls* its chunks one at a time
//! instead of handing a body to [`Workshare::participate`]: the shape of
//! an OpenMP runtime's dispatch ABI, where the compiled loop asks for its
//! next chunk (`GOMP_loop_*_next`) and runs it itself.
//!
//! Each call to [`Cursor::next`] claims exactly as `claim::participate`
//! does for the same [`Claim`] (same counters, same plan), so push and
//! pull participants may share one instance. What `participate` times
//! around the body, a cursor times between two calls: the chunk handed
//! out last ran in between.

use std::ops::Range;
use std::time::Instant;

use keel_policy::dls::{Claim, Plan, ProfileSums, Rule, Ss, ThreadLocal, Timing};
use keel_policy::ContextHandler;

use super::{Ready, Workshare};
use crate::loops::claim::{claim_remaining, claim_steal};
use crate::loops::{Board, LoopError, LoopId, LoopSummary, Schedule, Slot};
use crate::sync::{Arc, Ordering};
use crate::trace::{self, ChunkEvent};

/// The body of a workshare whose participants all pull: it runs nothing.
static NO_BODY: fn(usize, u64, u64) = |_, _, _| {};

impl Workshare<'static> {
    /// An instance whose participants pull chunks with
    /// [`join`](Self::join) instead of running a body.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use keel::loops::{LoopId, Workshare};
    ///
    /// let schedule = "guided".parse()?;
    /// let work = Arc::new(Workshare::pulled(LoopId::named("doc-pull"), &schedule, 50, 2));
    /// let mut seen = 0;
    /// for me in 0..2 {
    ///     let mut cursor = Arc::clone(&work).join(me)?;
    ///     while let Some(chunk) = cursor.next() {
    ///         seen += chunk.end - chunk.start;
    ///     }
    ///     let summary = cursor.leave();
    ///     // Only the last participant to leave gets the summary.
    ///     assert_eq!(summary.is_some(), me == 1);
    /// }
    /// assert_eq!(seen, 50);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pulled(id: LoopId, schedule: &Schedule, iterations: u64, threads: usize) -> Self {
        Workshare::new(id, schedule, iterations, threads, &NO_BODY)
    }

    /// Joins the instance as participant `me` and returns its cursor; the
    /// first to join prepares the instance. An index out of range or
    /// given twice, or a schedule that cannot plan this loop, is an error
    /// (and that participant gets no chunk).
    #[cfg(not(loom))]
    #[inline]
    pub fn join(self: Arc<Self>, me: usize) -> Result<Cursor, LoopError> {
        Self::attach(self, me)
    }

    /// [`join`](Self::join) under loom, whose `Arc` cannot be a method's
    /// receiver: the models call `Workshare::join(work, me)`, which
    /// names the same call in both builds.
    #[cfg(loom)]
    pub fn join(this: Arc<Self>, me: usize) -> Result<Cursor, LoopError> {
        Self::attach(this, me)
    }

    /// As [`join`](Self::join), with the cursor made in `place` (a cursor
    /// still there leaves first): a caller that keeps its cursor in a box
    /// from loop to loop gets it there without a copy of it.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use keel::loops::{LoopId, Workshare};
    ///
    /// let schedule = "dynamic,4".parse()?;
    /// let mut place = Box::new(None);
    /// for n in [10, 6] {
    ///     let work = Arc::new(Workshare::pulled(LoopId::named("doc-into"), &schedule, n, 1));
    ///     Workshare::join_into(work, 0, &mut place)?;
    ///     let cursor = (*place).as_mut().expect("joined");
    ///     let mut seen = 0;
    ///     while let Some(chunk) = cursor.next() {
    ///         seen += chunk.end - chunk.start;
    ///     }
    ///     assert_eq!(seen, n);
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn join_into(
        this: Arc<Self>,
        me: usize,
        place: &mut Option<Cursor>,
    ) -> Result<(), LoopError> {
        // Dropped where it is (a `take` would copy it out first).
        *place = None;
        *place = Some(Self::attach(this, me)?);
        Ok(())
    }

    /// The cursor keeps the instance alive through the crate's `Arc`
    /// (`crate::sync`): under loom the instance's lifetime is then loom's,
    /// which reports a cursor whose reference outlives the execution (a
    /// leaked `Arc`) and orders the instance's drop by the reference count.
    #[inline(always)]
    fn attach(this: Arc<Self>, me: usize) -> Result<Cursor, LoopError> {
        let ready = this.enter(me)?;
        // SAFETY: `ready` lives inside `*this`, on the heap behind the Arc
        // the cursor keeps until it is dropped (its last field, so dropped
        // after every field that borrows from it); the OnceLock is never
        // reset, so the reference stays valid and unaliased by writers.
        let ready: &'static Ready = unsafe { &*(ready as *const Ready) };
        // SAFETY: as above, for the workshare itself.
        let work: &'static Workshare<'static> = unsafe { &*Arc::as_ptr(&this) };
        let (plan, ctx) = match ready.plan {
            // The first participant's plan, which borrows no instance's
            // context: no context of the cursor's own to keep.
            Some(plan) => (plan, None),
            None => match Self::own_plan(work, ready) {
                Ok(planned) => planned,
                Err(err) => {
                    // A participant that cannot plan still counts as
                    // leaving, so that the others' instance is recorded.
                    work.leave(ready, false);
                    return Err(err);
                }
            },
        };
        let start = ready.t0.map_or(0.0, |t0| t0.elapsed().as_secs_f64());
        let tracing = ready.label.is_some() && trace::tracer().is_some();
        let timing = plan.timing();
        let profile = ready.prepared.profiled.then(ProfileSums::default);
        let events = tracing.then(Vec::new);
        Ok(Cursor {
            plan,
            _ctx: ctx,
            ready,
            work,
            me,
            claim: plan.claim(),
            n: work.iterations,
            path: match plan {
                _ if timing != Timing::None || profile.is_some() || events.is_some() => {
                    Path::Measured
                }
                Plan::Ss(rule) => Path::Dynamic(rule),
                _ => Path::Lean,
            },
            timing,
            local: ThreadLocal::default(),
            profile,
            events,
            start,
            chunks: 0,
            iterations: 0,
            round: 0,
            pending: None,
            done: false,
            held: None,
            _owner: this,
        })
    }
}

impl Workshare<'static> {
    /// A participant's own plan, from a context it fills itself (the
    /// instance provides measured inputs or hints), with that context.
    #[allow(clippy::type_complexity)]
    fn own_plan(
        work: &'static Workshare<'static>,
        ready: &'static Ready,
    ) -> Result<(Plan<'static>, Option<Box<ContextHandler<'static>>>), LoopError> {
        let mut ctx = Box::new(ContextHandler::new());
        ready
            .prepared
            .provide(&mut ctx, &work.spec(), ready.history());
        let plan = ready
            .prepared
            .plan(&ctx)
            .map_err(|error| LoopError::Schedule {
                source_name: "schedule",
                error,
            })?;
        // SAFETY: the plan borrows `*ctx`, boxed (so it never moves) and
        // owned by the cursor, which drops `plan` before `ctx`.
        let plan = unsafe { std::mem::transmute::<Plan<'_>, Plan<'static>>(plan) };
        Ok((plan, Some(ctx)))
    }
}

/// The chunk handed out last, settled at the next call.
#[derive(Clone, Copy)]
struct Pending {
    from: u64,
    to: u64,
    /// When it was asked for (`Timing::Request`) or claimed.
    began: Option<Instant>,
    /// When it was claimed, for the trace.
    claimed: Option<Instant>,
}

/// One participant of a pulled [`Workshare`]: [`next`](Self::next) until
/// `None`, then [`leave`](Self::leave). Dropping a cursor without leaving
/// leaves too (the summary is then lost); a cursor may leave early, as a
/// cancelled OpenMP loop does, and the iterations it did not claim are
/// then claimed by the others or by nobody.
pub struct Cursor {
    // Field order is drop order: everything borrowing `owner` first.
    plan: Plan<'static>,
    /// What `plan` borrows, when the cursor made its own plan; never read
    /// otherwise.
    _ctx: Option<Box<ContextHandler<'static>>>,
    ready: &'static Ready,
    work: &'static Workshare<'static>,
    me: usize,
    /// `plan.claim()`, asked once.
    claim: Claim,
    /// The loop's iteration count, read at every chunk: kept here, off
    /// the instance's lines that other participants write.
    n: u64,
    /// How [`next`](Self::next) claims.
    path: Path,
    timing: Timing,
    local: ThreadLocal,
    profile: Option<ProfileSums>,
    events: Option<Vec<ChunkEvent>>,
    start: f64,
    chunks: u64,
    iterations: u64,
    /// The next static round.
    round: u64,
    pending: Option<Pending>,
    done: bool,
    /// The chunk ending at the loop's end, while [`next_final_last`]
    /// (Self::next_final_last) has others to hand out first.
    held: Option<Range<u64>>,
    _owner: Arc<Workshare<'static>>,
}

/// How a cursor claims its chunks.
#[derive(Clone, Copy)]
enum Path {
    /// Chunks are timed, profiled or traced.
    Measured,
    /// Nothing to time, profile or trace: a chunk is its claim alone.
    Lean,
    /// Lean under `dynamic`, the schedule most foreign loops run under:
    /// its rule is matched once per cursor, not on every chunk.
    Dynamic(Ss),
}

impl Cursor {
    /// The participant's next chunk of offsets, `None` when it has no more.
    #[allow(clippy::should_implement_trait)]
    #[inline(always)]
    pub fn next(&mut self) -> Option<Range<u64>> {
        match self.path {
            Path::Dynamic(rule) => return self.next_dynamic(rule),
            Path::Measured => return self.next_measured(),
            Path::Lean => {}
        }
        if self.done {
            return None;
        }
        let Some(chunk) = self.claim() else {
            self.done = true;
            return None;
        };
        self.chunks += 1;
        self.iterations += chunk.end - chunk.start;
        Some(chunk)
    }

    /// [`next`](Self::next) under `dynamic`, lean: chunk `i` is claimed
    /// by the `i`-th claim of the team, so the chunk that ends at the
    /// loop's end has the highest index, and a participant that claimed it
    /// has no more to find (it does not claim again).
    #[inline(always)]
    fn next_dynamic(&mut self, rule: Ss) -> Option<Range<u64>> {
        if self.done {
            return None;
        }
        let claimed = rule.chunk_at(self.work.shared.next.fetch_add(1, Ordering::Relaxed));
        let Some(chunk) = claimed else {
            self.done = true;
            return None;
        };
        self.done = chunk.end == self.n;
        self.chunks += 1;
        self.iterations += chunk.end - chunk.start;
        Some(chunk)
    }

    /// [`next`](Self::next) for a cursor that times, profiles or traces
    /// its chunks.
    fn next_measured(&mut self) -> Option<Range<u64>> {
        self.settle();
        if self.done {
            return None;
        }
        let requested = (self.timing == Timing::Request).then(Instant::now);
        let Some(chunk) = self.claim() else {
            self.done = true;
            return None;
        };
        let stamp = |wanted: bool| wanted.then(Instant::now);
        let claimed = stamp(
            self.events.is_some()
                || (self.timing == Timing::Chunk)
                || (self.timing == Timing::None && self.profile.is_some()),
        );
        self.chunks += 1;
        self.iterations += chunk.end - chunk.start;
        self.pending = Some(Pending {
            from: chunk.start,
            to: chunk.end,
            began: requested.or(claimed),
            claimed,
        });
        Some(chunk)
    }

    /// As [`next`](Self::next), but the chunk that ends at the loop's end
    /// comes last among this participant's chunks: it is held back while
    /// the participant claims others. OpenMP's `lastprivate` copies out on
    /// the thread whose last chunk holds the final iteration, which
    /// stealing or assigned schedules would not otherwise guarantee.
    ///
    /// The held chunk's time, for the schedules that time chunks, is the
    /// moment between its claim and the next claim, not its run.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use keel::loops::{LoopId, Workshare};
    ///
    /// let schedule = "static-steal".parse().unwrap();
    /// let work = Arc::new(Workshare::pulled(LoopId::named("held"), &schedule, 10, 1));
    /// let mut cursor = work.join(0).unwrap();
    /// let mut chunks = Vec::new();
    /// while let Some(chunk) = cursor.next_final_last() {
    ///     chunks.push(chunk);
    /// }
    /// assert_eq!(chunks.last().map(|c| c.end), Some(10));
    /// cursor.leave();
    /// ```
    #[inline(always)]
    pub fn next_final_last(&mut self) -> Option<Range<u64>> {
        if let Path::Dynamic(rule) = self.path {
            // Its chunk ending at the loop's end is its last already.
            return self.next_dynamic(rule);
        }
        match self.next() {
            Some(chunk) if chunk.end == self.n && self.held.is_none() => {
                self.held = Some(chunk);
                self.next().or_else(|| self.held.take())
            }
            Some(chunk) => Some(chunk),
            None => self.held.take(),
        }
    }

    /// Leaves the instance: returns its summary to the last participant
    /// to leave, which records it; `None` to the others.
    pub fn leave(mut self) -> Option<LoopSummary> {
        self.depart(true)
    }

    /// Leaves; the summary is made only when `wanted` or the instance is
    /// recorded (its record needs it).
    fn depart(&mut self, wanted: bool) -> Option<LoopSummary> {
        if self.me == usize::MAX {
            return None;
        }
        self.done = true;
        if matches!(self.path, Path::Measured) {
            self.settle();
        }
        let finish = self.ready.t0.map_or(0.0, |t0| t0.elapsed().as_secs_f64());
        let slot = self.slot();
        // The tracer is asked only for a cursor that traced its chunks.
        if let Some(events) = &self.events {
            if let (Some(label), Some(tracer)) = (&self.ready.label, trace::tracer()) {
                tracer.write_loop(label, self.me, events);
            }
        }
        if let Some(sums) = self.profile {
            for (word, bits) in slot.profile.iter().zip(sums.to_bits()) {
                word.store(bits, Ordering::Relaxed);
            }
        }
        slot.chunks.store(self.chunks, Ordering::Relaxed);
        slot.iterations.store(self.iterations, Ordering::Relaxed);
        slot.start.store(self.start.to_bits(), Ordering::Relaxed);
        slot.finish.store(finish.to_bits(), Ordering::Relaxed);
        // Marks the cursor as gone, so that `Drop` does not leave again.
        self.me = usize::MAX;
        self.work.leave(self.ready, wanted)
    }

    fn slot(&self) -> &'static Slot {
        &self.work.slots[self.me]
    }

    /// Times the chunk handed out last: it ran since then.
    fn settle(&mut self) {
        let Some(p) = self.pending.take() else {
            return;
        };
        let size = p.to - p.from;
        let now = Instant::now;
        if let (Some(events), Some(start)) = (&mut self.events, p.claimed) {
            events.push(ChunkEvent {
                start,
                end: now(),
                from: p.from,
                to: p.to,
            });
        }
        let Some(began) = p.began else {
            return;
        };
        let seconds = began.elapsed().as_secs_f64();
        if self.timing == Timing::None {
            if let Some(sums) = &mut self.profile {
                sums.add(size, seconds);
            }
            return;
        }
        self.local.record(size, seconds);
        if self.local.chunk_spent() {
            self.slot().publish(self.local.timing());
        }
    }

    #[inline(always)]
    fn claim(&mut self) -> Option<Range<u64>> {
        let plan = &self.plan;
        let shared = &self.work.shared;
        let n = self.n;
        match self.claim {
            Claim::Static => {
                let chunk = plan.static_block(self.me, self.round)?;
                self.round += 1;
                Some(chunk)
            }
            Claim::Indexed => plan.chunk_at(shared.next.fetch_add(1, Ordering::Relaxed)),
            Claim::Remaining => {
                let board = Board {
                    slots: &self.work.slots,
                };
                let numbered = plan.numbers_requests();
                claim_remaining(plan, numbered, shared, n, self.me, &mut self.local, &board)
            }
            Claim::Steal => {
                let unit = plan.chunk_unit().max(1);
                claim_steal(plan, unit, &self.work.slots, self.me)
            }
        }
    }
}

impl Drop for Cursor {
    fn drop(&mut self) {
        if self.me != usize::MAX {
            self.depart(false);
        }
    }
}

impl std::fmt::Debug for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cursor")
            .field("participant", &self.me)
            .field("chunks", &self.chunks)
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}
