//! A loop instance on Keel's pool: planned on the caller, then one
//! fork/join whose job — the plan, the body and the iteration count — rides
//! in the fork's own cache lines ([`Broadcast`]), so that a worker reads
//! nothing else the caller wrote for this instance unless the plan needs
//! it: the claim counters (dynamic claims), the slots (adaptive and
//! stealing plans, recorded instances), the few per-instance extras
//! (recorded, traced or profiled instances).
//!
//! Counters, slots and extras belong to the pool ([`LoopArea`]), one set for
//! its one region at a time; the caller makes them ready under the region
//! lock, and writes only what the plan needs, so that an unrecorded `static`
//! instance moves no line between cores but the fork's and the join's.
//! An unrecorded instance's participants store no end-of-loop stats either:
//! their chunk counts come back summed in the join's line (the region's
//! tally).

use std::cell::{Cell, UnsafeCell};
use std::time::Instant;

use crossbeam_utils::CachePadded;
use keel_policy::concept::{Concept, Origin};
use keel_policy::dls::{self, LoopShape, Plan};
use keel_policy::ContextHandler;

use super::instance::{self, LoopSpec};
use super::recording::must_record;
use super::schedule::ResolvedSchedule;
use super::{claim, ready_slots, Board, LoopError, LoopIndex, LoopSummary, Slot, HINTS};
use crate::pool::{Broadcast, Team, ThreadPool};
use crate::trace::{self, LoopLabel};

/// What a pool keeps for the loops its regions run: created with the pool,
/// reused by every loop instance on it.
pub(crate) struct LoopArea {
    counters: claim::Shared,
    /// The instance's extras; on a line of its own, rewritten only when they
    /// change, so that unrecorded instances leave it shared by every core.
    extras: CachePadded<UnsafeCell<Extras>>,
    /// One per participant.
    slots: Box<[CachePadded<Slot>]>,
}

// SAFETY: `extras` is written only by the caller holding the pool's region
// lock, before the fork publishes it (Release; workers Acquire the epoch),
// and read only by that region's participants before the join, after which
// the next writer holds the lock. The rest is atomic or behind mutexes.
unsafe impl Sync for LoopArea {}
// SAFETY: the extras' label pointer is only dereferenced by the region that
// wrote it (see above), never by the thread that owns the pool as such.
unsafe impl Send for LoopArea {}

impl LoopArea {
    /// The area of a pool of `threads` participants.
    pub(crate) fn new(threads: usize) -> Self {
        LoopArea {
            counters: claim::Shared::new(),
            extras: CachePadded::new(UnsafeCell::new(Extras::LEAN)),
            slots: (0..threads).map(|_| CachePadded::default()).collect(),
        }
    }
}

/// What an instance's participants read beyond the plan, when it is
/// recorded, traced or profiled.
#[derive(Clone, Copy, PartialEq)]
struct Extras {
    /// The fork, when the instance is recorded.
    t0: Option<Instant>,
    /// How the trace names the instance's chunks; null when off.
    trace: *const LoopLabel,
    profile: bool,
    /// Store each participant's end-of-loop stats in its slot (recorded
    /// instances, whose record reads them).
    stats: bool,
}

impl Extras {
    const LEAN: Extras = Extras {
        t0: None,
        trace: std::ptr::null(),
        profile: false,
        stats: false,
    };
}

/// A loop instance as the fork carries it: 14 words.
#[derive(Clone, Copy)]
struct LoopJob<'a> {
    plan: Plan<'a>,
    body: &'a (dyn Fn(usize, u64, u64) + Sync),
    n: u64,
    area: &'a LoopArea,
}

impl Broadcast for LoopJob<'_> {
    fn run(&self, team: Team) -> u64 {
        let area = self.area;
        // SAFETY: written before the fork under the region lock, not again
        // before the join (see `LoopArea`'s `Sync`).
        let extras = unsafe { *area.extras.get() };
        if extras == Extras::LEAN {
            let lean = claim::participate_lean(team.index, &self.plan, self.body, &area.counters);
            if let Some(chunks) = lean {
                return chunks;
            }
        }
        let instance = claim::Instance {
            plan: self.plan,
            n: self.n,
            body: self.body,
            board: Board { slots: &area.slots },
            t0: extras.t0,
            // SAFETY: the label outlives the region (`run_loop` keeps it).
            trace: unsafe { extras.trace.as_ref() },
            profile: extras.profile,
            shared: &area.counters,
        };
        claim::participate_counted(team.index, &instance, extras.stats)
    }
}

impl ThreadPool {
    /// Runs one instance of a loop of `iterations` iterations: the body
    /// `body(participant, from, to)` per chunk.
    pub(crate) fn run_loop<I: LoopIndex>(
        &self,
        lp: &super::ParallelLoop<'_, I>,
        iterations: u64,
        schedule: &ResolvedSchedule,
        body: &(dyn Fn(usize, u64, u64) + Sync),
    ) -> Result<LoopSummary, LoopError> {
        let schedule_error = |error| LoopError::Schedule {
            source_name: schedule.source,
            error,
        };
        let threads = self.team_size_here();
        let weights = lp.weights.as_deref().filter(|_| threads == self.threads());
        if let Some(parsed) = schedule
            .fixed()
            .filter(|p| !must_record(false, p.reads_state, lp.recorded) && trace::off())
        {
            // An instance nothing records: plan it and run it, with no
            // loop state, clock or label.
            let shape = LoopShape::new(iterations, threads, lp.chunk.or(parsed.chunk))
                .map_err(schedule_error)?;
            let mut ctx = ContextHandler::new();
            if let Some(weights) = weights {
                ctx.provide_values(Concept::ThreadWeights, Origin::User, weights);
            }
            if let Some(hints) = lp.workload {
                ctx.provide_values(HINTS, Origin::User, hints);
            }
            let plan = parsed.schedule.plan(&shape, &ctx).map_err(schedule_error)?;
            let chunks = self.fork_loop(threads, plan, iterations, body, Extras::LEAN);
            return Ok(unrecorded(lp, threads, iterations, chunks));
        }
        let spec = LoopSpec {
            id: &lp.id,
            schedule,
            iterations,
            threads,
            chunk: lp.chunk,
            weights,
            hints: lp.workload,
            record: lp.recorded,
        };
        let mut history = instance::History::new();
        let prepared = instance::prepare(&spec, &mut history).map_err(schedule_error)?;
        let mut ctx = ContextHandler::new();
        prepared.provide(&mut ctx, &spec, &history);
        let plan = prepared.plan(&ctx).map_err(schedule_error)?;
        let label = prepared.label(&lp.id);
        let recorded = prepared.recorded();
        let extras = Extras {
            t0: None,
            trace: label.as_ref().map_or(std::ptr::null(), |l| l as *const _),
            profile: prepared.profiled,
            stats: recorded,
        };
        if !recorded {
            let chunks = self.fork_loop(threads, plan, iterations, body, extras);
            return Ok(unrecorded(lp, threads, iterations, chunks));
        }
        if threads == 1 {
            let slots = [CachePadded::new(Slot::default())];
            let t0 = Instant::now();
            let extras = Extras {
                t0: Some(t0),
                ..extras
            };
            run_inline(plan, iterations, body, &slots, extras);
            let t_par = t0.elapsed().as_secs_f64();
            return Ok(prepared.finish(&lp.id, &slots, Some(t_par)));
        }
        let t0 = Cell::new(Instant::now());
        let area = &*self.loop_area;
        let job = LoopJob {
            plan,
            body,
            n: iterations,
            area,
        };
        // The record reads the slots before another region can reuse them.
        let summary = self.region_with(
            job,
            || {
                let start = Instant::now();
                t0.set(start);
                let extras = Extras {
                    t0: Some(start),
                    ..extras
                };
                ready_area(area, &plan, extras);
            },
            |_| {
                let t_par = t0.get().elapsed().as_secs_f64();
                prepared.finish(&lp.id, &area.slots, Some(t_par))
            },
        );
        Ok(summary)
    }

    /// Forks an instance of `plan` on `threads` participants (the team
    /// size here); the participants' chunk count.
    fn fork_loop(
        &self,
        threads: usize,
        plan: Plan<'_>,
        n: u64,
        body: &(dyn Fn(usize, u64, u64) + Sync),
        extras: Extras,
    ) -> u64 {
        if threads == 1 {
            if extras == Extras::LEAN {
                let counters = claim::Shared::new();
                if let Some(chunks) = claim::participate_lean(0, &plan, body, &counters) {
                    return chunks;
                }
            }
            let slots = [CachePadded::new(Slot::default())];
            return run_inline(plan, n, body, &slots, extras);
        }
        let area = &*self.loop_area;
        let job = LoopJob {
            plan,
            body,
            n,
            area,
        };
        self.region_with(job, || ready_area(area, &plan, extras), |chunks| chunks)
    }
}

/// The summary of an instance nothing recorded: no clock was read.
fn unrecorded<I: LoopIndex>(
    lp: &super::ParallelLoop<'_, I>,
    threads: usize,
    iterations: u64,
    chunks: u64,
) -> LoopSummary {
    LoopSummary {
        id: lp.id.clone(),
        threads,
        iterations,
        chunks,
        t_par: None,
        lib_percent: None,
    }
}

/// One participant, the caller: counters and slot on its own stack.
fn run_inline(
    plan: Plan<'_>,
    n: u64,
    body: &(dyn Fn(usize, u64, u64) + Sync),
    slots: &[CachePadded<Slot>],
    extras: Extras,
) -> u64 {
    ready_slots(&plan, slots);
    let counters = claim::Shared::new();
    let instance = claim::Instance {
        plan,
        n,
        body,
        board: Board { slots },
        t0: extras.t0,
        // SAFETY: the label outlives this call (the caller keeps it).
        trace: unsafe { extras.trace.as_ref() },
        profile: extras.profile,
        shared: &counters,
    };
    claim::participate_counted(0, &instance, extras.stats)
}

/// Makes the pool's area ready for `plan`, under the region lock: writes
/// only what the plan's participants will read, so that the lines they do
/// not need stay where they are.
fn ready_area(area: &LoopArea, plan: &dls::Plan<'_>, extras: Extras) {
    // SAFETY: the caller holds the region lock (`region_with`'s setup), so
    // no participant reads the extras now.
    unsafe {
        let cell = area.extras.get();
        if *cell != extras {
            *cell = extras;
        }
    }
    area.counters.ready(plan);
    ready_slots(plan, &area.slots);
}
