//! Teams and their loops: who is in which team, which work-shared loop a
//! thread is in, who decides whether Keel takes it.
//!
//! Every `GOMP_parallel*` is wrapped: the region's threads run a
//! trampoline that gives each its [`Member`] record (the team, its index
//! from `omp_get_thread_num`, the team size, the nesting level) and counts
//! the loops it starts in that team. The `k`-th loop a thread starts is
//! the `k`-th of every thread of the team (OpenMP requires every thread to
//! meet the same work-sharing constructs in the same order), so the count
//! matches the threads of one loop even when `nowait` lets a fast thread
//! run several loops ahead: the team's ring (`ring.rs`, no lock) holds one
//! slot per loop some thread has reached and not every thread has passed,
//! with the decision the first to arrive made; the last to pass frees the
//! slot. A thread [`RING`] loops ahead of the slowest waits for it.
//!
//! A thread that is not in a wrapped team (a team libgomp built through an
//! entry point this library does not wrap), or whose level is not its
//! record's (it is the master of such a team nested in a wrapped one),
//! forwards its loops; so does every other thread of that team, alike.

use std::cell::{Cell, RefCell};
use std::sync::{Arc, Mutex, OnceLock};

use keel::loops::{Cursor, Workshare};

use crate::ring::Ring;

mod sites;
pub(crate) use sites::taken_sites;
use sites::Recent;

use crate::bounds::Bounds;
use crate::settings::{self, Kind};
use crate::{real, warn_once};

/// Loops a team keeps decisions for at once: how far `nowait` lets the
/// fastest thread run ahead of the slowest before it waits.
pub(crate) const RING: usize = 16;

/// One team of a wrapped parallel region.
pub(crate) struct Team {
    ring: Ring<Decision>,
    /// The call site whose loop this team's deciders took last, with its
    /// workshare: a team that runs one loop again and again renews it
    /// without the process-wide site table (its lock and its hash). Only
    /// deciders touch it, and the ring orders a team's deciders (the first
    /// to arrive at loop `k + 1` has read loop `k`'s published decision),
    /// so the lock is never contended. On lines of its own: every thread
    /// reads the ring's address at every loop, and only the deciding
    /// thread writes here.
    recent: OwnLines<Mutex<Option<Recent>>>,
}

/// A value on cache lines of its own (two: adjacent lines are fetched in
/// pairs).
#[repr(align(128))]
pub(crate) struct OwnLines<T>(pub(crate) T);

#[derive(Clone)]
enum Decision {
    Take(Arc<Workshare<'static>>),
    Forward,
}

thread_local! {
    /// The team of the last region this thread began, reset, for its next
    /// one: a region of some microseconds would otherwise spend about a
    /// fifth of what wrapping it costs allocating, filling and freeing a
    /// ring (and give its last call site's workshare back to the site
    /// table, to fetch it again under the table's lock).
    static SPARE_TEAM: Cell<Option<Arc<Team>>> = const { Cell::new(None) };
}

impl Team {
    pub(crate) fn new() -> Self {
        Team {
            ring: Ring::new(RING),
            recent: OwnLines(Mutex::new(None)),
        }
    }

    /// A team for a region this thread begins: the one it kept from its
    /// last region ([`recycle`](Self::recycle)), or a new one.
    ///
    /// Before its first team, while no thread of it runs, the process
    /// measures what dispatching costs if `auto` may choose its loops'
    /// schedules: measured later, inside the first loop, the measuring
    /// threads would compete for the CPUs with the team's threads waiting
    /// for that loop.
    pub(crate) fn for_region() -> Arc<Team> {
        SPARE_TEAM
            .try_with(Cell::take)
            .ok()
            .flatten()
            .unwrap_or_else(|| {
                if settings::settings().may_select() {
                    keel::loops::dispatch_cost();
                }
                Arc::new(Team::new())
            })
    }

    /// Keeps `team`, whose region this thread began and which has ended,
    /// for the thread's next region: its ring reset (the next region's
    /// threads count their loops from 0), its last call site's workshare
    /// kept. A team some thread still holds is not kept.
    pub(crate) fn recycle(mut team: Arc<Team>) {
        let Some(unused) = Arc::get_mut(&mut team) else {
            return;
        };
        unused.ring.reset();
        // Without the thread-local (the thread is exiting) the team is
        // dropped as it would have been.
        let _ = SPARE_TEAM.try_with(move |spare| spare.set(Some(team)));
    }

    /// A workshare for an instance of the loop at `site`: the team's last
    /// site's, renewed, when it is that site again; else the site table's.
    fn workshare(
        &self,
        site: usize,
        schedule: &keel::Schedule,
        n: u64,
        threads: usize,
    ) -> Arc<Workshare<'static>> {
        sites::workshare(&self.recent.0, site, schedule, n, threads)
    }
}

impl Drop for Team {
    /// The last site's workshare goes back to the site table, for the
    /// site's next team.
    fn drop(&mut self) {
        sites::give_back(self.recent.0.get_mut().unwrap_or_else(|e| e.into_inner()));
    }
}

impl Team {
    /// Thread `me`'s arrival at the team's loop `seq`: the decision, and
    /// the first arrival's own cursor when it took the loop (in `spare`,
    /// when the thread has one).
    fn arrive(
        &self,
        seq: u64,
        me: usize,
        threads: usize,
        call: &LoopCall,
        spare: &mut Option<CursorBox>,
    ) -> (Decision, Option<CursorBox>) {
        if threads <= 1 {
            let (decision, mine) = decide(self, call, threads.max(1), me, spare);
            count(&decision);
            return (decision, mine);
        }
        // The others wait for the first arrival's decision anyway: it is
        // made before it is published.
        let (decision, mine) = self
            .ring
            .arrive(seq, threads, || decide(self, call, threads, me, spare));
        // Counted by the decider once it is published, off the others'
        // wait.
        if mine.is_some() {
            count(&decision);
        }
        (decision, mine.flatten())
    }
}

/// A thread's cursor, in a box the thread keeps from loop to loop (the
/// cursor moves as a pointer, and a loop allocates nothing for it).
type CursorBox = Box<Option<Cursor>>;

/// Joins `work` as participant `me`, the cursor made in the thread's
/// spare box (or a new one).
fn join_boxed(
    work: Arc<Workshare<'static>>,
    me: usize,
    spare: &mut Option<CursorBox>,
) -> Result<CursorBox, keel::loops::LoopError> {
    let mut held = spare.take().unwrap_or_else(|| Box::new(None));
    match Workshare::join_into(work, me, &mut held) {
        Ok(()) => Ok(held),
        Err(err) => {
            *spare = Some(held);
            Err(err)
        }
    }
}

/// Counts a decision in [`COUNTS`].
fn count(decision: &Decision) {
    let counter = match decision {
        Decision::Take(_) => &COUNTS.0.taken,
        Decision::Forward => &COUNTS.0.forwarded,
    };
    counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// A loop as a `*_start` entry (or a combined `GOMP_parallel_loop_*`)
/// received it.
pub(crate) struct LoopCall {
    pub(crate) kind: Kind,
    pub(crate) monotonic: bool,
    pub(crate) bounds: Bounds,
    /// The call site: the return address of the `*_start` call, or the
    /// outlined body of a combined loop.
    pub(crate) site: usize,
}

/// The first arrival's decision: take the loop under the process-wide
/// schedule (and join it, so that a schedule that cannot plan it turns
/// into forwarding before anyone else sees the decision — unless the call
/// site's renewed workshare is prepared already), or forward it.
fn decide(
    team: &Team,
    call: &LoopCall,
    threads: usize,
    me: usize,
    spare: &mut Option<CursorBox>,
) -> (Decision, Option<CursorBox>) {
    if cancellation() {
        return (Decision::Forward, None);
    }
    let Some(n) = call.bounds.runnable_iterations() else {
        return (Decision::Forward, None);
    };
    settings::with_program_schedule(|program| {
        let Some(schedule) = settings::settings().schedule_ref(call.kind, call.monotonic, program)
        else {
            return (Decision::Forward, None);
        };
        let work = team.workshare(call.site, schedule, n, threads);
        if work.prepared() {
            // Renewed from the site's last instance, whose schedule planned
            // it: published at once, and the deciding thread joins after,
            // as the others do, instead of keeping them waiting.
            return (Decision::Take(work), None);
        }
        match join_boxed(Arc::clone(&work), me, spare) {
            // Made in its box: the cursor then moves as a pointer.
            Ok(cursor) => (Decision::Take(work), Some(cursor)),
            Err(err) => {
                warn_once(&format!("schedule {schedule} cannot run an OpenMP loop ({err}); such loops keep libgomp's schedule"));
                (Decision::Forward, None)
            }
        }
    })
}

/// `OMP_CANCELLATION`: a cancelled loop leaves through libgomp's
/// cancellation barrier with libgomp's work share, so with cancellation
/// on, every loop stays libgomp's.
fn cancellation() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    // SAFETY: libgomp's omp_get_cancellation takes nothing.
    *ON.get_or_init(|| unsafe { real::omp_get_cancellation()() } != 0)
}

/// A thread's place in a wrapped team.
pub(crate) struct Member {
    team: TeamRef,
    me: usize,
    threads: usize,
    level: i32,
    /// Loops this thread has started in the team.
    seq: u64,
}

/// The team of a [`Member`], borrowed for as long as the member is the
/// thread's: whoever makes the member keeps the team alive until then (the
/// wrapped region's [`Region`], on the encountering thread's stack until
/// every thread has left the trampoline; OMPT's task frame, until the
/// implicit task ends). Not a reference count: a count would be written by
/// every thread of every region, one line shared by the whole team.
#[derive(Clone, Copy)]
struct TeamRef(std::ptr::NonNull<Team>);

impl TeamRef {
    /// The team, to a member whose maker keeps it alive (see above).
    fn of(team: &Arc<Team>) -> Self {
        TeamRef(std::ptr::NonNull::from(&**team))
    }
}

impl std::ops::Deref for TeamRef {
    type Target = Team;
    fn deref(&self) -> &Team {
        // SAFETY: the member's maker keeps the team alive while the member
        // is in the thread's state (see the type's doc), and members are
        // only read through that state.
        unsafe { self.0.as_ref() }
    }
}

/// The loop a thread is in. An explicit tag, not one folded into the
/// bounds' own: [`next`] tests it on every chunk.
#[repr(u8)]
pub(crate) enum Current {
    /// None, or one libgomp runs.
    Libgomp,
    /// A combined loop forwarded to libgomp, whose first chunk the
    /// trampoline already received.
    Stashed(Option<(i64, i64)>),
    /// A loop Keel runs; the cursor is gone once it returned its last
    /// chunk. Chunks come from `Cursor::next_final_last`: GCC's
    /// `lastprivate` copies out on the thread whose *last* chunk ends at
    /// the loop's end.
    Taken {
        cursor: Option<CursorBox>,
        bounds: Bounds,
        /// `bounds.iterations()`, counted once per loop.
        iterations: u64,
    },
}

pub(crate) struct ThreadState {
    member: Option<Member>,
    current: Current,
    /// The box of the thread's last cursor, for its next one.
    spare: Option<CursorBox>,
}

thread_local! {
    static STATE: RefCell<ThreadState> = const {
        RefCell::new(ThreadState { member: None, current: Current::Libgomp, spare: None })
    };
}

fn with_state<R>(f: impl FnOnce(&mut ThreadState) -> R) -> Option<R> {
    STATE.try_with(|s| f(&mut s.borrow_mut())).ok()
}

fn level() -> i32 {
    // SAFETY: libgomp's omp_get_level takes nothing.
    unsafe { real::omp_get_level()() }
}

/// Starts a loop on this thread: `true` when Keel runs it (the chunks come
/// from [`next`]), `false` when the caller must forward the call.
pub(crate) fn begin(call: &LoopCall) -> bool {
    let here = level();
    with_state(|st| begin_in(st, call, here)).unwrap_or(false)
}

/// [`begin`] and, when Keel runs the loop, the thread's first [`next`]
/// step, in one borrow of the thread's state: what a `*_start` entry
/// hands out. `None` when the caller must forward the call.
pub(crate) fn begin_first(call: &LoopCall) -> Option<Step> {
    let here = level();
    with_state(|st| begin_in(st, call, here).then(|| step(st))).flatten()
}

/// [`begin`] on the thread's state (borrowed once for the whole start:
/// the decision and the join run no program code and never reach it).
fn begin_in(st: &mut ThreadState, call: &LoopCall, here: i32) -> bool {
    {
        let Some(m) = st.member.as_mut().filter(|m| m.level == here) else {
            st.current = Current::Libgomp;
            return false;
        };
        let seq = m.seq;
        m.seq += 1;
        let (me, threads) = (m.me, m.threads);
        let team: &Team = &m.team;
        let mut spare = st.spare.take();
        let (decision, mine) = team.arrive(seq, me, threads, call, &mut spare);
        let current = match decision {
            Decision::Forward => Current::Libgomp,
            Decision::Take(work) => {
                let iterations = work.iterations();
                let cursor = match mine {
                    Some(cursor) => cursor,
                    None => match join_boxed(work, me, &mut spare) {
                        Ok(cursor) => cursor,
                        Err(err) => crate::fatal(&format!(
                            "thread {me} of {threads} cannot join a loop its team took: {err}"
                        )),
                    },
                };
                Current::Taken {
                    cursor: Some(cursor),
                    bounds: call.bounds,
                    iterations,
                }
            }
        };
        let taken = matches!(current, Current::Taken { .. });
        st.current = current;
        st.spare = spare;
        taken
    }
}

/// What a `*_next` call does.
pub(crate) enum Step {
    /// Hand out `[istart, iend)` (raw 64-bit words).
    Chunk(i64, i64),
    /// The thread has no more chunks.
    Done,
    /// libgomp runs the loop: call its function.
    Forward,
}

pub(crate) fn next() -> Step {
    with_state(step).unwrap_or(Step::Forward)
}

/// [`next`] on the thread's state.
#[inline(always)]
fn step(st: &mut ThreadState) -> Step {
    match &mut st.current {
        Current::Taken {
            cursor,
            bounds,
            iterations,
        } => {
            match cursor
                .as_mut()
                .and_then(|held| (**held).as_mut())
                .and_then(Cursor::next_final_last)
            {
                Some(offsets) => {
                    let (s, e) = bounds.chunk_of(offsets, *iterations);
                    Step::Chunk(s, e)
                }
                None => {
                    // Dropping the cursor in its box leaves as
                    // `Cursor::leave` does (its summary is not wanted)
                    // without moving it out; the box is kept for the
                    // thread's next loop.
                    if let Some(mut held) = cursor.take() {
                        *held = None;
                        st.spare = Some(held);
                    }
                    Step::Done
                }
            }
        }
        Current::Stashed(first) => {
            let first = first.take();
            st.current = Current::Libgomp;
            first.map_or(Step::Done, |(s, e)| Step::Chunk(s, e))
        }
        Current::Libgomp => Step::Forward,
    }
}

/// Ends the thread's loop: `true` when Keel ran it (the caller then waits
/// at the team's barrier when the construct has one), `false` when the
/// caller must forward the call to libgomp.
pub(crate) fn end() -> bool {
    with_state(
        |st| match std::mem::replace(&mut st.current, Current::Libgomp) {
            // Dropping a cursor not yet at its end leaves the loop early;
            // the box is kept for the thread's next loop.
            Current::Taken { cursor, .. } => {
                if let Some(mut held) = cursor {
                    *held = None;
                    st.spare = Some(held);
                }
                true
            }
            _ => false,
        },
    )
    .unwrap_or(false)
}

/// How a forwarded combined loop's first chunk is fetched: libgomp's own
/// `*_start` of the same kind, inside the region.
#[derive(Clone, Copy)]
pub(crate) enum RealStart {
    Runtime(unsafe extern "C" fn(i64, i64, i64, *mut i64, *mut i64) -> bool),
    Chunked(
        unsafe extern "C" fn(i64, i64, i64, i64, *mut i64, *mut i64) -> bool,
        i64,
    ),
}

/// A combined `GOMP_parallel_loop_*`'s loop, started by every thread of
/// the region before the body runs (the body only calls `*_next`).
pub(crate) struct Preset {
    pub(crate) call: LoopCall,
    pub(crate) real: RealStart,
}

/// What the trampoline reads: the region's body and team.
pub(crate) struct Region {
    pub(crate) body: extern "C" fn(*mut libc::c_void),
    pub(crate) data: *mut libc::c_void,
    pub(crate) team: Arc<Team>,
    pub(crate) preset: Option<Preset>,
}

/// Every thread of a wrapped region runs this instead of the body.
pub(crate) extern "C" fn trampoline(arg: *mut libc::c_void) {
    crate::guard(|| {
        // SAFETY: `arg` is the `Region` the wrapper passed to libgomp,
        // alive on the wrapper's stack until every thread has returned.
        let region = unsafe { &*(arg as *const Region) };
        // SAFETY: libgomp's team queries take nothing.
        let (me, threads) =
            unsafe { (real::omp_get_thread_num()(), real::omp_get_num_threads()()) };
        let member = Member {
            team: TeamRef::of(&region.team),
            me: usize::try_from(me).unwrap_or(0),
            threads: usize::try_from(threads).unwrap_or(1).max(1),
            level: level(),
            seq: 0,
        };
        // The thread's spare cursor box goes with it into the region and
        // back: a region's first loop then allocates none.
        let saved = with_state(|st| {
            let fresh = ThreadState {
                member: Some(member),
                current: Current::Libgomp,
                spare: st.spare.take(),
            };
            std::mem::replace(st, fresh)
        });
        if let Some(preset) = &region.preset {
            if !begin(&preset.call) {
                let first = start_in_libgomp(preset);
                with_state(|st| st.current = Current::Stashed(first));
            }
        }
        (region.body)(region.data);
        let inner = with_state(|st| {
            let inner = std::mem::replace(
                st,
                saved.unwrap_or(ThreadState {
                    member: None,
                    current: Current::Libgomp,
                    spare: None,
                }),
            );
            if st.spare.is_none() {
                st.spare = inner.spare;
            }
            ThreadState {
                spare: None,
                ..inner
            }
        });
        // A loop never ended (a body leaving through longjmp) leaves here.
        drop(inner);
    });
}

/// A thread's state set aside while it runs an implicit task of a team
/// whose boundaries OMPT reports (libomp, whose `__kmpc_fork_call` cannot
/// be wrapped): what [`enter_team`] returns and [`leave_team`] restores.
pub(crate) struct Saved(ThreadState);

/// Makes this thread member `me` of `threads` in `team` at the current
/// nesting level, as the trampoline does for a wrapped region.
/// The caller keeps `team` alive until [`leave_team`].
pub(crate) fn enter_team(team: &Arc<Team>, me: usize, threads: usize) -> Option<Saved> {
    let fresh = ThreadState {
        member: Some(Member {
            team: TeamRef::of(team),
            me,
            threads: threads.max(1),
            level: level(),
            seq: 0,
        }),
        current: Current::Libgomp,
        spare: None,
    };
    with_state(|st| Saved(std::mem::replace(st, fresh)))
}

/// Ends the implicit task [`enter_team`] began; a loop never ended leaves.
pub(crate) fn leave_team(saved: Saved) {
    let inner = with_state(|st| std::mem::replace(st, saved.0));
    drop(inner);
}

fn start_in_libgomp(preset: &Preset) -> Option<(i64, i64)> {
    let Bounds::Long { start, end, incr } = preset.call.bounds else {
        return None;
    };
    let (mut s, mut e) = (0i64, 0i64);
    // SAFETY: libgomp's start functions write the two out-parameters.
    let got = unsafe {
        match preset.real {
            RealStart::Runtime(f) => f(start, end, incr, &mut s, &mut e),
            RealStart::Chunked(f, chunk) => f(start, end, incr, chunk, &mut s, &mut e),
        }
    };
    got.then_some((s, e))
}

/// Loop instances the first arrivals took and forwarded, process-wide, on
/// lines of their own: a decider writes one at every loop, and the
/// library's other statics (the cached addresses of libgomp's functions,
/// the `omp_set_schedule` mirror) are read by every thread at every loop.
pub(crate) static COUNTS: OwnLines<Counts> = OwnLines(Counts {
    taken: std::sync::atomic::AtomicU64::new(0),
    forwarded: std::sync::atomic::AtomicU64::new(0),
});

/// See [`COUNTS`].
pub(crate) struct Counts {
    pub(crate) taken: std::sync::atomic::AtomicU64,
    pub(crate) forwarded: std::sync::atomic::AtomicU64,
}

/// The states the legacy region entries (`GOMP_parallel_start`, ...) set
/// aside, each with the level of the thread that started the region.
struct Legacy {
    saved: ThreadState,
    level: i32,
}

thread_local! {
    static LEGACY: RefCell<Vec<Legacy>> = const { RefCell::new(Vec::new()) };
}

/// GCC before 4.9 starts a region with `GOMP_parallel_start` (or a
/// `GOMP_parallel_*_start`), then the encountering thread runs the body
/// itself and ends with `GOMP_parallel_end`. Those teams are not wrapped,
/// so their loops are forwarded; the encountering thread's own state (it
/// may be inside a loop Keel runs for an outer team) is set aside here so
/// that the inner team's loops neither see nor end it. Called before
/// libgomp starts the region, at the encountering level.
pub(crate) fn legacy_region_start() {
    let level = level();
    let fresh = ThreadState {
        member: None,
        current: Current::Libgomp,
        spare: None,
    };
    if let Some(saved) = with_state(|st| std::mem::replace(st, fresh)) {
        let _ = LEGACY.try_with(|l| l.borrow_mut().push(Legacy { saved, level }));
    }
}

/// The end of a legacy region, called after libgomp's `GOMP_parallel_end`
/// (back at the encountering level): restores what its start set aside.
/// An end that no wrapped start matches restores nothing.
pub(crate) fn legacy_region_end() {
    let here = level();
    let saved = LEGACY
        .try_with(|l| {
            let mut l = l.borrow_mut();
            (l.last().map(|top| top.level) == Some(here))
                .then(|| l.pop())
                .flatten()
        })
        .ok()
        .flatten();
    if let Some(Legacy { saved, .. }) = saved {
        let inner = with_state(|st| std::mem::replace(st, saved));
        drop(inner);
    }
}
