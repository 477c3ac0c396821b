//! Claiming chunks: the loop's hot path.
//!
//! Every claim only has to be *unique*: two participants must never get
//! overlapping iterations. The chunk counter and the next-iteration counter
//! are therefore updated with `Relaxed` atomics (a fetch-add or a CAS is
//! atomic whatever its ordering). What the body writes is made visible to
//! the caller by the pool's join (`remaining`: Release decrement, Acquire
//! load), not by these counters.
//!
//! - `Static`: each participant walks its own blocks; nothing is shared.
//! - `Indexed`: `fetch_add(1)` on the chunk index; the plan turns the index
//!   into bounds. Wait-free.
//! - `Remaining`: read the next iteration `r`, ask the plan for a size,
//!   `compare_exchange_weak(r, r + size)`; on failure retry with the value
//!   seen. Lock-free: a failed CAS means another participant progressed.
//! - `Steal`: each participant's home range sits behind its own mutex; the
//!   owner takes `chunk_unit` from the front, a thief takes
//!   `steal_amount(remaining)` from a victim's back and makes it its own
//!   range. A participant leaves only when its range is empty and no victim
//!   gives anything; iterations a victim keeps are run by that victim, which
//!   cannot leave before its range is empty — so nothing is lost.
//!
//! Clocks are read only for adaptive plans ([`Timing`]): twice per chunk
//! for [`Timing::Chunk`] (after the claim and after the body; AF claims
//! each sub-chunk as a chunk of its own), once per chunk for
//! [`Timing::Request`] (the end of a participant's chunk is the start of
//! its next request); and, in recorded instances only, at the fork and the
//! join and at each participant's start and finish.

use std::ops::Range;
use std::time::Instant;

use crossbeam_utils::CachePadded;
use keel_policy::dls::{clamp_size, Claim, Plan, Request, Rule, ThreadLocal, Timing};

use super::{Board, Slot};
use crate::sync::{AtomicU64, Mutex, MutexGuard, Ordering};
use crate::trace::{self, ChunkEvent, LoopLabel};

/// Counters shared by one loop instance, on the caller's stack.
pub(crate) struct Shared {
    /// Next chunk index (`Indexed`) or next iteration (`Remaining`).
    pub(crate) next: CachePadded<AtomicU64>,
    /// Request numbers for the factoring schedules' batch index.
    pub(crate) requests: CachePadded<AtomicU64>,
}

impl Shared {
    pub(crate) fn new() -> Self {
        Shared {
            next: CachePadded::new(AtomicU64::new(0)),
            requests: CachePadded::new(AtomicU64::new(0)),
        }
    }

    /// Resets what `plan`'s claims read, before its participants start:
    /// nothing for static blocks and stealing, so that their instances
    /// leave these lines alone.
    pub(crate) fn ready(&self, plan: &Plan<'_>) {
        if matches!(plan.claim(), Claim::Indexed | Claim::Remaining) {
            self.next.store(0, Ordering::Relaxed);
            if plan.numbers_requests() {
                self.requests.store(0, Ordering::Relaxed);
            }
        }
    }
}

/// What a participant of one loop instance reads. Under Keel's pool each
/// participant builds it on its own stack from the job the fork carried
/// (`pool_driver.rs`), so reading it moves no line; threads Keel does not own
/// each hold their own (with equal plans) over one set of counters. The
/// shared counters, which only dynamic claims touch, sit on lines of their
/// own behind a reference.
pub(crate) struct Instance<'a, 'p> {
    pub(crate) plan: Plan<'p>,
    /// Iterations.
    pub(crate) n: u64,
    /// The body: `(participant, from, to)`.
    pub(crate) body: &'a (dyn Fn(usize, u64, u64) + Sync),
    pub(crate) board: Board<'a>,
    /// The fork, from which start and finish times are measured; `None`
    /// when the instance is not recorded: its participants then read no
    /// clock at their start and finish.
    pub(crate) t0: Option<Instant>,
    /// How the trace names this instance's chunks; `None` when off.
    pub(crate) trace: Option<&'a LoopLabel>,
    /// Time every chunk for the iteration profile (the schedule reads one).
    pub(crate) profile: bool,
    pub(crate) shared: &'a Shared,
}

/// One participant's chunk times for the iteration profile (the estimator
/// lives in `keel-policy`, so the simulator measures it the same way).
pub(crate) use keel_policy::dls::ProfileSums;

/// Runs participant `me`'s share of the loop and stores its end-of-loop
/// stats in its slot.
pub(crate) fn participate(me: usize, instance: &Instance<'_, '_>) {
    participate_counted(me, instance, true);
}

/// What a participant measures of the chunks it runs. The one claim loop
/// ([`claim_chunks`]) is generic over it, so that each instance's loop
/// compiles to its claims, its body calls and what it measures, nothing
/// else.
pub(crate) trait Meter {
    /// Called before each claim: the request's timestamp, for meters that
    /// time a chunk from the request for it.
    fn requested(&mut self) -> Option<Instant>;

    /// Runs `body` over participant `me`'s claimed `chunk`, requested at
    /// `requested`, and measures it; `local` is the participant's sums
    /// that the rule reads when it sizes requests.
    fn run(
        &mut self,
        local: &mut ThreadLocal,
        body: &(dyn Fn(usize, u64, u64) + Sync),
        me: usize,
        chunk: Range<u64>,
        requested: Option<Instant>,
    );
}

/// Measures nothing: the chunk is its claim and the body call alone.
struct Unmeasured;

impl Meter for Unmeasured {
    #[inline(always)]
    fn requested(&mut self) -> Option<Instant> {
        None
    }

    #[inline(always)]
    fn run(
        &mut self,
        _: &mut ThreadLocal,
        body: &(dyn Fn(usize, u64, u64) + Sync),
        me: usize,
        chunk: Range<u64>,
        _: Option<Instant>,
    ) {
        body(me, chunk.start, chunk.end);
    }
}

/// Participant `me`'s chunks of `0..n`, claimed as `rule` says, each run
/// through `meter`: the claim loop of every participant that runs a body.
/// `rule` is the instance's `plan` or, for the adaptive schedules' loop,
/// the one rule the plan holds (so that no dispatch on the plan is left in
/// the loop); stealing claims through `plan`. Returns the chunk and
/// iteration counts.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn claim_chunks<R: Rule, M: Meter>(
    rule: &R,
    plan: &Plan<'_>,
    me: usize,
    n: u64,
    shared: &Shared,
    board: &Board<'_>,
    body: &(dyn Fn(usize, u64, u64) + Sync),
    meter: &mut M,
) -> Counts {
    let mut local = ThreadLocal::default();
    let mut counts = Counts::default();
    match rule.claim() {
        Claim::Static => {
            // A participant's `round`-th block is its `round`-th chunk.
            let mut round = 0;
            while let Some(chunk) = rule.static_block(me, round) {
                round += 1;
                counts.add(&chunk);
                meter.run(&mut local, body, me, chunk, None);
            }
        }
        Claim::Indexed => loop {
            let requested = meter.requested();
            let index = shared.next.fetch_add(1, Ordering::Relaxed);
            let Some(chunk) = rule.chunk_at(index) else {
                break;
            };
            counts.add(&chunk);
            meter.run(&mut local, body, me, chunk, requested);
        },
        Claim::Remaining => {
            let numbered = rule.numbers_requests();
            loop {
                let requested = meter.requested();
                let claimed = claim_remaining(rule, numbered, shared, n, me, &mut local, board);
                let Some(chunk) = claimed else {
                    break;
                };
                counts.add(&chunk);
                meter.run(&mut local, body, me, chunk, requested);
            }
        }
        Claim::Steal => {
            // Home ranges were installed by the caller before the fork, so
            // no thief can see a range from an earlier loop.
            let unit = plan.chunk_unit().max(1);
            loop {
                let requested = meter.requested();
                let Some(chunk) = claim_steal(plan, unit, board.slots, me) else {
                    break;
                };
                counts.add(&chunk);
                meter.run(&mut local, body, me, chunk, requested);
            }
        }
    }
    counts
}

/// A participant's chunk and iteration counts.
#[derive(Clone, Copy, Default)]
struct Counts {
    chunks: u64,
    iterations: u64,
}

impl Counts {
    #[inline(always)]
    fn add(&mut self, chunk: &Range<u64>) {
        self.chunks += 1;
        self.iterations += chunk.end - chunk.start;
    }
}

/// Participant `me`'s share of an instance that reads no clock, slot or
/// trace (not recorded, traced or profiled), when its plan measures nothing
/// and claims static blocks or indexed chunks: the claims and the body
/// calls, nothing else. Returns the chunk count; `None`, having run
/// nothing, for other plans.
#[inline]
pub(crate) fn participate_lean(
    me: usize,
    plan: &Plan<'_>,
    body: &(dyn Fn(usize, u64, u64) + Sync),
    shared: &Shared,
) -> Option<u64> {
    if plan.timing() != Timing::None {
        return None;
    }
    match plan.claim() {
        Claim::Static | Claim::Indexed => {}
        Claim::Remaining | Claim::Steal => return None,
    }
    // Static blocks and indexed chunks read neither `n` nor the board.
    let board = Board { slots: &[] };
    let counts = claim_chunks(plan, plan, me, 0, shared, &board, body, &mut Unmeasured);
    Some(counts.chunks)
}

/// Runs participant `me`'s share of the loop; stores its end-of-loop stats
/// in its slot only when `stats` asks (they move the slot's line to whoever
/// reads them). Returns the participant's chunk count.
pub(crate) fn participate_counted(me: usize, instance: &Instance<'_, '_>, stats: bool) -> u64 {
    let Instance {
        ref plan,
        n,
        shared,
        ref board,
        t0,
        trace: label,
        profile,
        body,
    } = *instance;
    let slot = &board.slots[me];
    // The caller (participant 0) starts at the fork itself, a few
    // instructions after `t0`: one clock read saved on every instance.
    let start = match t0 {
        Some(t0) if me != 0 => t0.elapsed().as_secs_f64(),
        _ => 0.0,
    };
    let tracer = label.and_then(|label| Some((trace::tracer()?, label)));
    if tracer.is_none() && !profile && plan.claim() == Claim::Remaining {
        // The adaptive schedules' loop, compiled for the one rule it runs.
        let counts = match plan {
            Plan::AwfLive(rule) => participate_measured(rule, me, instance),
            Plan::Af(rule) => participate_measured(rule, me, instance),
            _ if plan.timing() != Timing::None => participate_measured(plan, me, instance),
            _ => None,
        };
        if let Some(counts) = counts {
            if stats {
                let finish = t0.map_or(0.0, |t0| t0.elapsed().as_secs_f64());
                store_finish(slot, finish, start, counts);
            }
            return counts.chunks;
        }
    }
    let mut meter = ChunkMeter {
        plan,
        slot,
        timing: plan.timing(),
        last: None,
        profile: profile.then(ProfileSums::default),
        events: tracer.map(|_| Vec::new()),
    };
    let counts = claim_chunks(plan, plan, me, n, shared, board, body, &mut meter);
    let finish = t0.map_or(0.0, |t0| t0.elapsed().as_secs_f64());
    if let (Some((tracer, label)), Some(events)) = (tracer, &meter.events) {
        tracer.write_loop(label, me, events);
    }
    if let Some(sums) = meter.profile {
        for (word, bits) in slot.profile.iter().zip(sums.to_bits()) {
            word.store(bits, Ordering::Relaxed);
        }
    }
    if stats {
        store_finish(slot, finish, start, counts);
    }
    counts.chunks
}

#[inline]
fn store_finish(slot: &Slot, finish: f64, start: f64, counts: Counts) {
    slot.chunks.store(counts.chunks, Ordering::Relaxed);
    slot.iterations.store(counts.iterations, Ordering::Relaxed);
    slot.start.store(start.to_bits(), Ordering::Relaxed);
    slot.finish.store(finish.to_bits(), Ordering::Relaxed);
}

/// Participant `me`'s share under a plan that measures and claims what
/// remains (AF, mAF, AWF-B…E), when nothing traces or profiles the
/// instance: claim, run, time, record, publish, and nothing else. Generic
/// over the rule, so that the caller's match on the plan leaves no
/// dispatch in the loop. `None`, having run nothing, for a plan that
/// measures nothing.
#[inline]
fn participate_measured<R: Rule>(
    rule: &R,
    me: usize,
    instance: &Instance<'_, '_>,
) -> Option<Counts> {
    let per_request = match rule.timing() {
        Timing::None => return None,
        Timing::Chunk => false,
        Timing::Request => true,
    };
    let Instance {
        ref plan,
        n,
        shared,
        ref board,
        body,
        ..
    } = *instance;
    let mut meter = RuleTimer {
        rule,
        slot: &board.slots[me],
        per_request,
        // `Timing::Request` times a chunk from the participant's request
        // for it, which is the end of its previous chunk: one clock read
        // per chunk.
        last: per_request.then(Instant::now),
    };
    Some(claim_chunks(
        rule, plan, me, n, shared, board, body, &mut meter,
    ))
}

/// Times each chunk for one adaptive rule and publishes the participant's
/// timing when the rule says it is due.
struct RuleTimer<'a, R> {
    rule: &'a R,
    slot: &'a Slot,
    per_request: bool,
    /// The end of the participant's last chunk, under `Timing::Request`.
    last: Option<Instant>,
}

impl<R: Rule> Meter for RuleTimer<'_, R> {
    #[inline(always)]
    fn requested(&mut self) -> Option<Instant> {
        None
    }

    #[inline(always)]
    fn run(
        &mut self,
        local: &mut ThreadLocal,
        body: &(dyn Fn(usize, u64, u64) + Sync),
        me: usize,
        chunk: Range<u64>,
        _: Option<Instant>,
    ) {
        let began = self.last.unwrap_or_else(Instant::now);
        body(me, chunk.start, chunk.end);
        let end = Instant::now();
        if self.per_request {
            self.last = Some(end);
        }
        let size = chunk.end - chunk.start;
        let seconds = end.saturating_duration_since(began).as_secs_f64();
        if let Some(timing) = self.rule.measured(local, size, seconds) {
            self.slot.publish(timing);
        }
    }
}

/// Measures what the plan asks (its [`Timing`]), the iteration profile
/// when the schedule reads one, and the trace's chunk events when tracing
/// is on.
struct ChunkMeter<'a, 'p> {
    plan: &'a Plan<'p>,
    slot: &'a Slot,
    timing: Timing,
    /// The clock read at the end of this participant's last chunk (`None`
    /// before its first): under [`Timing::Request`] it is also when its next
    /// request began, so a chunk costs one clock read, not a pair.
    last: Option<Instant>,
    /// Chunk times for the iteration profile, when the schedule reads one.
    profile: Option<ProfileSums>,
    /// Executed chunks, only when `KEEL_TRACE` is on.
    events: Option<Vec<ChunkEvent>>,
}

impl Meter for ChunkMeter<'_, '_> {
    /// The end of the participant's previous chunk, read then, for plans
    /// that time whole requests; the clock only for its first request.
    #[inline]
    fn requested(&mut self) -> Option<Instant> {
        if self.timing != Timing::Request {
            return None;
        }
        Some(*self.last.get_or_insert_with(Instant::now))
    }

    #[inline]
    fn run(
        &mut self,
        local: &mut ThreadLocal,
        body: &(dyn Fn(usize, u64, u64) + Sync),
        me: usize,
        chunk: Range<u64>,
        requested: Option<Instant>,
    ) {
        if self.events.is_none() {
            self.run_timed(local, body, me, chunk, requested);
            return;
        }
        let start = Instant::now();
        self.run_timed(local, body, me, chunk.clone(), requested);
        let event = ChunkEvent {
            start,
            end: Instant::now(),
            from: chunk.start,
            to: chunk.end,
        };
        if let Some(events) = &mut self.events {
            events.push(event);
        }
    }
}

impl ChunkMeter<'_, '_> {
    #[inline]
    fn run_timed(
        &mut self,
        local: &mut ThreadLocal,
        body: &(dyn Fn(usize, u64, u64) + Sync),
        me: usize,
        chunk: Range<u64>,
        requested: Option<Instant>,
    ) {
        let size = chunk.end - chunk.start;
        if self.timing == Timing::None {
            match &mut self.profile {
                None => body(me, chunk.start, chunk.end),
                Some(sums) => {
                    let began = Instant::now();
                    body(me, chunk.start, chunk.end);
                    sums.add(size, began.elapsed().as_secs_f64());
                }
            }
            return;
        }
        let began = requested.unwrap_or_else(Instant::now);
        body(me, chunk.start, chunk.end);
        let end = Instant::now();
        self.last = Some(end);
        let seconds = end.saturating_duration_since(began).as_secs_f64();
        // The plan keeps only the sums it reads and says when its timing is
        // due on the board (AWF after every chunk, AF when a budget is spent).
        if let Some(timing) = self.plan.measured(local, size, seconds) {
            self.slot.publish(timing);
        }
    }
}

/// `Claim::Remaining`: participant `me`'s next chunk of `0..n`, sized by
/// the plan for what remains and claimed from the shared counter by CAS;
/// `None` once nothing remains. When the plan numbers its requests
/// (`numbered`, its `numbers_requests()`), one number per claim, kept
/// across CAS retries: a retry is the same request, not a new one in a
/// later batch. Both the push and the pull participants claim through here.
#[inline]
pub(crate) fn claim_remaining<R: Rule>(
    plan: &R,
    numbered: bool,
    shared: &Shared,
    n: u64,
    me: usize,
    local: &mut ThreadLocal,
    board: &Board<'_>,
) -> Option<Range<u64>> {
    let mut next = shared.next.load(Ordering::Relaxed);
    if next >= n {
        return None;
    }
    let request = Request {
        thread: me,
        number: if numbered {
            shared.requests.fetch_add(1, Ordering::Relaxed)
        } else {
            0
        },
    };
    loop {
        let remaining = n - next;
        let size = clamp_size(
            plan.next_size(remaining, request, local, board),
            1,
            remaining,
        );
        match shared.next.compare_exchange_weak(
            next,
            next + size,
            Ordering::Relaxed,
            Ordering::Relaxed,
        ) {
            Ok(_) => {
                local.claimed(size);
                return Some(next..next + size);
            }
            Err(seen) if seen >= n => return None,
            Err(seen) => next = seen,
        }
    }
}

/// `Claim::Steal`: `unit` (the plan's `chunk_unit`, at least 1) from the
/// front of participant `me`'s own range, else `steal_amount` from the back
/// of the first victim (after `me`, round the team) that has any, made
/// `me`'s own range; `None` when the own range is empty and no victim
/// gives anything.
#[inline]
pub(crate) fn claim_steal(
    plan: &Plan<'_>,
    unit: u64,
    slots: &[CachePadded<Slot>],
    me: usize,
) -> Option<Range<u64>> {
    loop {
        let own = {
            let mut range = lock(&slots[me].steal);
            let take = unit.min(range.end - range.start);
            range.start += take;
            range.start - take..range.start
        };
        if !own.is_empty() {
            return Some(own);
        }
        if !steal_into(plan, slots, me) {
            return None;
        }
    }
}

/// Moves `steal_amount` from the back of the first victim (after `me`,
/// round the team) that has any into participant `me`'s own range;
/// `false` when no victim gives anything.
#[cold]
fn steal_into(plan: &Plan<'_>, slots: &[CachePadded<Slot>], me: usize) -> bool {
    let p = slots.len();
    let stolen = (1..p).map(|d| (me + d) % p).find_map(|victim| {
        let mut range = lock(&slots[victim].steal);
        let left = range.end - range.start;
        let take = plan.steal_amount(left).min(left);
        (take > 0).then(|| {
            range.end -= take;
            range.end..range.end + take
        })
    });
    match stolen {
        Some(range) => {
            *lock(&slots[me].steal) = range;
            true
        }
        None => false,
    }
}

pub(crate) fn lock(m: &Mutex<Range<u64>>) -> MutexGuard<'_, Range<u64>> {
    // A body panic never happens while a range lock is held.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::ProfileSums;

    #[test]
    fn profile_from_chunk_times() {
        let mut sums = ProfileSums::default();
        sums.add(1, 1.0);
        sums.add(1, 3.0);
        assert_eq!(sums.profile(), Some((2.0, 1.0)));
        // A chunk of 4 iterations of 2 s each: variance 4σ² around 8.
        let mut even = ProfileSums::default();
        even.add(4, 8.0);
        even.add(0, 5.0);
        assert_eq!(even.profile(), Some((2.0, 0.0)));
        // Chunks of 4 whose times deviate by ±2·√4: σ = 2.
        let mut spread = ProfileSums::default();
        spread.add(4, 8.0 - 4.0);
        spread.add(4, 8.0 + 4.0);
        let (mean, sd) = spread.profile().unwrap();
        assert_eq!(mean, 2.0);
        assert!((sd - 2.0).abs() < 1e-12, "{sd}");
        let mut merged = sums;
        merged.merge(ProfileSums::from_bits(even.to_bits()));
        assert_eq!(f64::from_bits(merged.to_bits()[0]), 3.0, "chunks");
        assert_eq!(ProfileSums::default().profile(), None);
    }
}
