//! One loop instance driven by threads Keel does not own (an OpenMP
//! runtime's team, threads of another library): each calls
//! [`Workshare::participate`] with its own index. The first to arrive
//! prepares the instance (resolves the schedule, reads what the loop kept,
//! readies the shared counters and steal ranges) while the others wait for
//! it; the plan is a pure function of what was prepared, so all plans are
//! equal: the first makes it once when it reads an empty context and every
//! participant copies it, and otherwise each makes its own. Each claims
//! chunks; the last to leave records the instance and gets its summary.

use std::time::Instant;

use crossbeam_utils::CachePadded;
use keel_policy::dls::Plan;
use keel_policy::ContextHandler;

use super::instance::{self, History, LoopSpec, Prepared};
use super::{claim, ready_slots, Board, LoopError, LoopId, LoopSummary, Schedule, Slot};
use crate::sync::{AtomicU64, AtomicUsize, OnceLock, Ordering};
use crate::trace::LoopLabel;

/// One instance of a loop over the offsets `0..iterations`, run by
/// `threads` participants that are not Keel's: each calls
/// [`participate`](Self::participate) once with its own index, from any
/// thread, in any order; the call returns when that participant has no
/// more chunks. Nothing runs before the first participant arrives; the
/// participants need not start together.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use keel::loops::{LoopId, Workshare};
///
/// let sum = AtomicU64::new(0);
/// let body = |_participant: usize, from: u64, to: u64| {
///     sum.fetch_add((from..to).sum::<u64>(), Ordering::Relaxed);
/// };
/// let schedule = "dynamic,3".parse()?;
/// let work = Workshare::new(LoopId::named("doc-foreign"), &schedule, 100, 3, &body);
/// let summaries: Vec<_> = std::thread::scope(|s| {
///     let handles: Vec<_> = (0..3)
///         .map(|me| {
///             let work = &work;
///             s.spawn(move || work.participate(me))
///         })
///         .collect();
///     handles.into_iter().map(|h| h.join().unwrap()).collect()
/// });
/// assert_eq!(sum.into_inner(), 4950);
/// // Exactly one participant, the last to leave, got the summary.
/// let last: Vec<_> = summaries.into_iter().filter_map(|r| r.unwrap()).collect();
/// assert_eq!(last.len(), 1);
/// assert_eq!(last[0].iterations, 100);
/// # Ok::<(), keel::loops::ScheduleError>(())
/// ```
pub struct Workshare<'a> {
    id: LoopId,
    schedule: Schedule,
    iterations: u64,
    threads: usize,
    chunk: Option<u64>,
    record: bool,
    body: &'a (dyn Fn(usize, u64, u64) + Sync),
    slots: Box<[CachePadded<Slot>]>,
    /// Per participant, the last [`instance`](Self::instance) it joined:
    /// each on a line of its own, which only that participant writes
    /// (renewing the workshare moves `instance` on instead of clearing
    /// them).
    joined: Box<[CachePadded<AtomicU64>]>,
    /// This instance's number (from 1), for `joined`.
    instance: u64,
    ready: OnceLock<Result<Ready, LoopError>>,
    shared: claim::Shared,
    left: AtomicUsize,
    /// Preparations of the instances before this one's (the models count
    /// every preparation of a renewed workshare).
    #[cfg(all(test, loom))]
    prepared_before: usize,
}

/// What the first participant prepared.
struct Ready {
    prepared: Prepared,
    /// AWF's history, when the schedule reads one (boxed: most instances
    /// have none, and an inline one would be copied with every `Ready`).
    history: Option<Box<History>>,
    /// The plan, made once by the first participant when it reads an empty
    /// context (every fixed schedule and every choice of `auto` that reads
    /// no measured input): a pure function of the prepared inputs, so every
    /// participant's own would equal it, and each copies it instead.
    plan: Option<Plan<'static>>,
    label: Option<LoopLabel>,
    /// The first arrival, when the instance is recorded.
    t0: Option<Instant>,
    /// [`reusable`](Self::reusable), asked once: renewing a workshare
    /// asks at every instance, on the path other participants wait on.
    reusable: bool,
}

impl Ready {
    /// Whether another instance of the same loop, schedule, iteration
    /// count and team may run from this preparation: nothing was read from
    /// or will be written to the loop's record, nothing is timed, traced
    /// or profiled, and the plan reads nothing an instance provides.
    fn reusable(&self) -> bool {
        self.plan.is_some()
            && !self.prepared.recorded()
            && !self.prepared.profiled
            && (self.prepared.selected.is_none() || self.prepared.lease.is_some())
            && self.history.is_none()
            && self.label.is_none()
            && self.t0.is_none()
    }

    /// AWF's history as the plan reads it (empty when there is none).
    fn history(&self) -> &History {
        static EMPTY: std::sync::OnceLock<History> = std::sync::OnceLock::new();
        match &self.history {
            Some(history) => history,
            None => EMPTY.get_or_init(History::new),
        }
    }
}

/// The context a plan reads when its instance provides nothing: one for
/// the process, so that a plan made from it borrows nothing of an
/// instance's and every participant may copy it.
fn empty_context() -> &'static ContextHandler<'static> {
    static EMPTY: std::sync::OnceLock<ContextHandler<'static>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(ContextHandler::new)
}

impl<'a> Workshare<'a> {
    /// An instance of loop `id` under `schedule`, `body(participant, from,
    /// to)` per chunk of offsets, for a team of `threads`.
    pub fn new(
        id: LoopId,
        schedule: &Schedule,
        iterations: u64,
        threads: usize,
        body: &'a (dyn Fn(usize, u64, u64) + Sync),
    ) -> Self {
        Workshare {
            id,
            schedule: schedule.clone(),
            iterations,
            threads,
            chunk: None,
            record: false,
            body,
            slots: (0..threads).map(|_| CachePadded::default()).collect(),
            joined: (0..threads)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
            instance: 1,
            ready: OnceLock::new(),
            shared: claim::Shared::new(),
            left: AtomicUsize::new(threads),
            #[cfg(all(test, loom))]
            prepared_before: 0,
        }
    }

    /// Readies the workshare for another instance, of loop `id` under
    /// `schedule` over `iterations`, for the same team size: what an
    /// OpenMP interposer does with a call site's workshare once every
    /// participant of its last instance is gone (`&mut self` proves it),
    /// instead of allocating a new one. The chunk and recording settings
    /// go back to the defaults.
    ///
    /// ```
    /// use keel::loops::{LoopId, Workshare};
    ///
    /// let body = |_: usize, _: u64, _: u64| {};
    /// let schedule = "dynamic,2".parse()?;
    /// let mut work = Workshare::new(LoopId::named("doc-renew"), &schedule, 10, 1, &body);
    /// assert_eq!(work.participate(0).unwrap().unwrap().chunks, 5);
    /// work.renew(LoopId::named("doc-renew"), &"static".parse()?, 7);
    /// assert_eq!(work.participate(0).unwrap().unwrap().iterations, 7);
    /// # Ok::<(), keel::loops::ScheduleError>(())
    /// ```
    pub fn renew(&mut self, id: LoopId, schedule: &Schedule, iterations: u64) {
        self.id = id;
        self.reset(schedule, iterations, false);
    }

    /// As [`renew`](Self::renew), for another instance of the loop the
    /// workshare already names: its id is kept, not replaced by a clone.
    ///
    /// ```
    /// use keel::loops::{LoopId, Workshare};
    ///
    /// let schedule = "dynamic,4".parse()?;
    /// let mut work = Workshare::pulled(LoopId::named("doc-again"), &schedule, 10, 1);
    /// work.renew_same_loop(&schedule, 12);
    /// let mut cursor = std::sync::Arc::new(work).join(0)?;
    /// let mut seen = 0;
    /// while let Some(chunk) = cursor.next() {
    ///     seen += chunk.end - chunk.start;
    /// }
    /// assert_eq!(seen, 12);
    /// assert_eq!(cursor.leave().unwrap().id, LoopId::named("doc-again"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn renew_same_loop(&mut self, schedule: &Schedule, iterations: u64) {
        self.reset(schedule, iterations, true);
    }

    /// Readies another instance. With `same_loop`, an unrecorded instance
    /// of a fixed schedule over as many iterations as the last keeps the
    /// last one's preparation and plan, which would come out equal: the
    /// plan is a pure function of the schedule, the iteration count and
    /// the team size when its context is empty (only the slots it readies
    /// are readied again, which stealing consumed).
    fn reset(&mut self, schedule: &Schedule, iterations: u64, same_loop: bool) {
        // The same schedule (the same allocation) is kept, not cloned: a
        // clone writes its reference count, one line for every loop of the
        // process under that schedule.
        let same_schedule = std::ptr::eq(self.schedule.as_str(), schedule.as_str());
        if !same_schedule {
            self.schedule = schedule.clone();
        }
        let keep = same_loop
            && same_schedule
            && self.iterations == iterations
            && self.chunk.is_none()
            && !self.record
            && matches!(self.ready.get(), Some(Ok(ready)) if ready.reusable
                // An `auto` choice is kept only for the instances its
                // lease still covers.
                && ready.prepared.lease.as_ref().is_none_or(super::state::take_leased))
            && !super::recording::recording_all()
            && crate::trace::tracer().is_none();
        // Fields that keep their values are not written: the participants
        // read them when they join, and a line left clean stays in their
        // caches (only the instance number and the leaving count must
        // change).
        if self.iterations != iterations {
            self.iterations = iterations;
        }
        if self.chunk.is_some() {
            self.chunk = None;
        }
        if self.record {
            self.record = false;
        }
        self.instance += 1;
        match self.ready.get() {
            Some(Ok(Ready {
                plan: Some(plan), ..
            })) if keep => ready_slots(plan, &self.slots),
            _ => {
                #[cfg(all(test, loom))]
                {
                    self.prepared_before += self.ready.runs();
                }
                self.ready = OnceLock::new();
            }
        }
        // The counters alone, not a whole padded `Shared` moved in; new
        // atomics rather than `get_mut`, which loom's lack (the same plain
        // stores without loom). A counter the last instance left at 0
        // (both under static blocks and stealing, `requests` unless a
        // factoring schedule numbered its requests) is not written, so
        // that its line stays in every participant's cache.
        for counter in [&mut self.shared.next, &mut self.shared.requests] {
            if counter.load(Ordering::Relaxed) != 0 {
                **counter = AtomicU64::new(0);
            }
        }
        self.left = AtomicUsize::new(self.threads);
    }

    /// The team size this workshare was made for.
    ///
    /// ```
    /// use keel::loops::{LoopId, Workshare};
    ///
    /// let work = Workshare::pulled(LoopId::named("doc-threads"), &"static".parse()?, 9, 4);
    /// assert_eq!(work.threads(), 4);
    /// # Ok::<(), keel::loops::ScheduleError>(())
    /// ```
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Whether the instance is prepared and its schedule could plan it:
    /// true once a participant joined, and from the start for an instance
    /// renewed from its predecessor's preparation
    /// ([`renew_same_loop`](Self::renew_same_loop)). A participant of a
    /// prepared instance cannot fail to join for its schedule.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use keel::loops::{LoopId, Workshare};
    ///
    /// let schedule = "dynamic,2".parse()?;
    /// let mut work = Arc::new(Workshare::pulled(LoopId::named("doc-prepared"), &schedule, 8, 1));
    /// assert!(!work.prepared());
    /// drop(Arc::clone(&work).join(0)?);
    /// assert!(work.prepared());
    /// Arc::get_mut(&mut work).unwrap().renew_same_loop(&schedule, 8);
    /// assert!(work.prepared(), "kept for an instance of the same size");
    /// Arc::get_mut(&mut work).unwrap().renew_same_loop(&schedule, 9);
    /// assert!(!work.prepared());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn prepared(&self) -> bool {
        matches!(self.ready.get(), Some(Ok(_)))
    }

    /// The instance's iteration count.
    ///
    /// ```
    /// use keel::loops::{LoopId, Workshare};
    ///
    /// let work = Workshare::pulled(LoopId::named("doc-n"), &"static".parse()?, 9, 4);
    /// assert_eq!(work.iterations(), 9);
    /// # Ok::<(), keel::loops::ScheduleError>(())
    /// ```
    pub fn iterations(&self) -> u64 {
        self.iterations
    }

    /// The chunk parameter, as [`ParallelLoop::chunk`](super::ParallelLoop::chunk).
    pub fn chunk(mut self, chunk: u64) -> Self {
        self.chunk = Some(chunk);
        self
    }

    /// Records the instance, as [`ParallelLoop::recorded`](super::ParallelLoop::recorded).
    pub fn recorded(mut self) -> Self {
        self.record = true;
        self
    }

    fn spec(&self) -> LoopSpec<'_> {
        LoopSpec {
            id: &self.id,
            schedule: self.schedule.resolved(),
            iterations: self.iterations,
            threads: self.threads,
            chunk: self.chunk,
            weights: None,
            hints: None,
            record: self.record,
        }
    }

    /// The first participant's work: prepare, check that the schedule can
    /// plan this loop, ready the slots, start the clock if recorded.
    fn prepare(&self) -> Result<Ready, LoopError> {
        let schedule_error = |error| LoopError::Schedule {
            source_name: "schedule",
            error,
        };
        let spec = self.spec();
        let mut history = History::new();
        let prepared = instance::prepare(&spec, &mut history).map_err(schedule_error)?;
        let plan = {
            let mut ctx = ContextHandler::new();
            prepared.provide(&mut ctx, &spec, &history);
            if ctx.components().is_empty() {
                let plan = prepared.plan(empty_context()).map_err(schedule_error)?;
                ready_slots(&plan, &self.slots);
                Some(plan)
            } else {
                let plan = prepared.plan(&ctx).map_err(schedule_error)?;
                ready_slots(&plan, &self.slots);
                None
            }
        };
        let label = prepared.label(&self.id);
        let t0 = prepared.recorded().then(Instant::now);
        let mut ready = Ready {
            prepared,
            history: (!history.is_empty()).then(|| Box::new(history)),
            plan,
            label,
            t0,
            reusable: false,
        };
        ready.reusable = ready.reusable();
        Ok(ready)
    }

    /// Runs participant `me`'s share. Returns the instance's summary to the
    /// last participant to leave (it records the instance), `None` to the
    /// others; an index out of range or given twice, or a schedule that
    /// cannot plan this loop, is an error, and that participant runs
    /// nothing. A panic in the body reaches that participant's thread;
    /// the instance then is never recorded.
    pub fn participate(&self, me: usize) -> Result<Option<LoopSummary>, LoopError> {
        let ready = self.enter(me)?;
        let spec = self.spec();
        let mut ctx = ContextHandler::new();
        let plan = match ready.plan {
            Some(plan) => plan,
            None => {
                ready.prepared.provide(&mut ctx, &spec, ready.history());
                ready
                    .prepared
                    .plan(&ctx)
                    .map_err(|error| LoopError::Schedule {
                        source_name: "schedule",
                        error,
                    })?
            }
        };
        let instance = claim::Instance {
            plan,
            n: self.iterations,
            body: self.body,
            board: Board { slots: &self.slots },
            t0: ready.t0,
            trace: ready.label.as_ref(),
            profile: ready.prepared.profiled,
            shared: &self.shared,
        };
        claim::participate(me, &instance);
        Ok(self.leave(ready, true))
    }

    /// Marks participant `me` as joined and returns what the first
    /// participant prepared (preparing it when `me` is the first).
    fn enter(&self, me: usize) -> Result<&Ready, LoopError> {
        let twice = match self.joined.get(me) {
            Some(last) => last.swap(self.instance, Ordering::Relaxed) == self.instance,
            None => true,
        };
        if twice {
            return Err(LoopError::Participant {
                index: me,
                threads: self.threads,
            });
        }
        self.ready
            .get_or_init(|| self.prepare())
            .as_ref()
            .map_err(Clone::clone)
    }

    /// One participant has left, its stats in its slot: the last to leave
    /// records the instance and gets the summary. A participant that does
    /// not want the summary (`wanted` false: a cursor dropped without
    /// leaving) skips making it when the instance is not recorded either.
    fn leave(&self, ready: &Ready, wanted: bool) -> Option<LoopSummary> {
        // AcqRel: the last to leave sees every participant's stats.
        if self.left.fetch_sub(1, Ordering::AcqRel) != 1 {
            return None;
        }
        if !wanted && !ready.prepared.recorded() {
            return None;
        }
        let t_par = ready.t0.map(|t0| t0.elapsed().as_secs_f64());
        Some(ready.prepared.finish(&self.id, &self.slots, t_par))
    }

    /// How many participants prepared an instance of this workshare: one
    /// per instance once any arrived, unless a renewed instance kept its
    /// predecessor's preparation.
    #[cfg(all(test, loom))]
    pub(super) fn preparations(&self) -> usize {
        self.prepared_before + self.ready.runs()
    }
}

mod cursor;
pub use cursor::Cursor;

#[cfg(all(test, loom))]
mod loom_cursor;

#[cfg(all(test, not(loom)))]
mod tests;
