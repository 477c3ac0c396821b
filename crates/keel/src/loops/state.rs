//! What Keel keeps per loop across its instances: the parsed schedule, the
//! measurements ([`LoopRecord`]), and what its schedules read of them
//! ([`LoopMemory`]: profile, AWF history, iteration assignment). One
//! [`LoopState`] per [`LoopId`], behind its own mutex, so loops never
//! contend with each other and a loop's instances take two short
//! uncontended locks (before the fork and after the join).
//!
//! Finding a loop's state must cost next to nothing in an empty loop (a
//! few hundred nanoseconds for fork + join is the aim), so each thread
//! keeps its most recently used states in a small cache keyed by the
//! `&'static Location` pointer (or name pointer) and reaches the global map —
//! a hashed lookup under a lock — only on a miss.
//!
//! The state's lock is part of an instance's protocol (a `Workshare`'s
//! last participant records while another team's first may already be
//! preparing the next instance), so it comes from the `sync` facade. Under
//! loom the registry lives for one execution (loom's `lazy_static`), since
//! no loom lock may outlive the execution that made it, and the per-thread
//! cache is skipped: it is a thread-local memo of the registry, not a
//! protocol between threads.

#[cfg(not(loom))]
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use keel_policy::concept::Concept;
use keel_policy::dls::{LoopMemory, LoopSchedule};
use keel_policy::select::{AutoSpec, LoopSelector};

use super::record::LoopRecord;
use super::LoopId;
use crate::sync::{Mutex, MutexGuard};

/// A schedule parsed from a spec text, with the spec's chunk and its
/// canonical spec text; shared by one `Arc`, so an instance takes one
/// reference count, not one per field.
pub(crate) struct ParsedSchedule {
    pub(crate) schedule: Box<dyn LoopSchedule>,
    pub(crate) chunk: Option<u64>,
    pub(crate) canonical: String,
    /// Whether planning reads what the loop's state keeps: an iteration
    /// profile, AWF's history, or a cached iteration assignment. Instances
    /// of other fixed schedules need the state only to be recorded.
    pub(crate) reads_state: bool,
}

impl ParsedSchedule {
    /// `schedule` with the spec's chunk, shared.
    pub(crate) fn new(schedule: Box<dyn LoopSchedule>, chunk: Option<u64>) -> Parsed {
        let reads_state = schedule.as_workload().is_some()
            || schedule.requirements().iter().any(|r| {
                matches!(
                    r.concept,
                    Concept::IterationProfile | Concept::ThreadHistory
                )
            });
        Arc::new(ParsedSchedule {
            canonical: schedule.spec().to_string(),
            schedule,
            chunk,
            reads_state,
        })
    }
}

pub(crate) type Parsed = Arc<ParsedSchedule>;

/// What a schedule text resolves to for one loop.
pub(crate) enum Resolved {
    /// One schedule for every instance.
    Fixed(Parsed),
    /// `auto[,method]`: the loop's own selection state (Auto4OMP keeps one
    /// per loop, so loops that interleave never disturb each other).
    Auto(Box<Selection>),
}

/// A loop's selection method and its state machine.
pub(crate) struct Selection {
    pub(crate) spec: AutoSpec,
    pub(crate) selector: LoopSelector,
}

/// Everything kept about one loop.
#[derive(Default)]
pub(crate) struct LoopState {
    /// The last schedule text seen and what it resolved to.
    pub(crate) resolved: Option<(String, Resolved)>,
    pub(crate) record: LoopRecord,
    /// What the loop's schedules read of its past instances.
    pub(crate) memory: LoopMemory,
    /// Under `auto`, the unmeasured instances the selector leased to the
    /// loop's current shape.
    pub(crate) lease: Option<Lease>,
}

/// Instances of one loop shape that may run an exploited `auto` choice
/// without asking the selector ([`keel_policy::select::Choice::lease`]).
pub(crate) struct Lease {
    pub(crate) parsed: Parsed,
    pub(crate) chunk: Option<u64>,
    pub(crate) iterations: u64,
    pub(crate) threads: usize,
    pub(crate) method: &'static str,
    /// Instances left, shared with the workshare that keeps the
    /// preparation of one of them (it takes its instances from here too).
    pub(crate) left: LeaseCount,
}

/// A lease's count of instances left.
pub(crate) type LeaseCount = std::sync::Arc<std::sync::atomic::AtomicU32>;

/// Takes one instance from a lease; false once none is left.
pub(crate) fn take_leased(left: &LeaseCount) -> bool {
    left.fetch_update(
        std::sync::atomic::Ordering::Relaxed,
        std::sync::atomic::Ordering::Relaxed,
        |n| n.checked_sub(1),
    )
    .is_ok()
}

/// A loop's state lives as long as the program, like the code of the loop
/// it describes (LLVM keeps its per-loop records the same way): it is
/// leaked once per distinct loop, so that finding it costs no reference
/// count. The registry never forgets a loop (`clear_records` empties the
/// records, not the map), so the leak holds nothing the map would not
/// hold anyway: one state per distinct call site or name.
pub(crate) type SharedState = &'static Mutex<LoopState>;

type Registry = Mutex<HashMap<LoopId, SharedState>>;

#[cfg(not(loom))]
fn states() -> &'static Registry {
    static STATES: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();
    STATES.get_or_init(Default::default)
}

/// One registry per loom execution. Its states are leaked as without loom
/// (a model makes a handful per execution).
#[cfg(loom)]
fn states() -> &'static Registry {
    loom::lazy_static! {
        static ref STATES: Registry = Default::default();
    }
    &STATES
}

/// Per-thread cache size: loops a thread alternates between without a miss.
#[cfg(not(loom))]
const RECENT: usize = 8;

/// A thread's recently used states, and the slot the next miss replaces.
#[cfg(not(loom))]
type Recent = ([Option<(LoopId, SharedState)>; RECENT], usize);

#[cfg(not(loom))]
thread_local! {
    static RECENT_STATES: RefCell<Recent> = RefCell::new((Default::default(), 0));
}

/// Pointer equality for call sites: one call site's `Location` is one
/// static, so the cache almost always hits on it; value equality in the
/// map covers a site whose location the compiler duplicated (generic code
/// in several units). Names compare by text, since an owned name is a new
/// allocation on every instance.
#[cfg(not(loom))]
fn same(a: &LoopId, b: &LoopId) -> bool {
    match (a, b) {
        (LoopId::Site(x), LoopId::Site(y)) => std::ptr::eq(*x, *y),
        (LoopId::Named(x), LoopId::Named(y)) => x == y,
        _ => false,
    }
}

/// The state of loop `id`, created on first use.
#[cfg(not(loom))]
pub(crate) fn state_of(id: &LoopId) -> SharedState {
    RECENT_STATES.with(|recent| {
        let mut recent = recent.borrow_mut();
        let (slots, next) = &mut *recent;
        if let Some(&(_, state)) = slots.iter().flatten().find(|(k, _)| same(k, id)) {
            return state;
        }
        let state = registered(id);
        slots[*next] = Some((id.clone(), state));
        *next = (*next + 1) % RECENT;
        state
    })
}

/// The state of loop `id`, created on first use (no per-thread cache: see
/// the module notes).
#[cfg(loom)]
pub(crate) fn state_of(id: &LoopId) -> SharedState {
    registered(id)
}

/// Loop `id`'s state from the registry, created on first use.
fn registered(id: &LoopId) -> SharedState {
    let mut map = states().lock().unwrap_or_else(|e| e.into_inner());
    match map.get(id) {
        Some(&state) => state,
        None => {
            let state: SharedState = Box::leak(Box::default());
            map.insert(id.clone(), state);
            state
        }
    }
}

/// Locks a loop's state. A panic never happens while it is held (user code
/// runs outside), but a poisoned lock is recovered all the same.
pub(crate) fn lock(state: &Mutex<LoopState>) -> MutexGuard<'_, LoopState> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` on every loop's state.
pub(crate) fn for_each_state(mut f: impl FnMut(&LoopId, &mut LoopState)) {
    let map = states().lock().unwrap_or_else(|e| e.into_inner());
    for (id, state) in map.iter() {
        f(id, &mut lock(state));
    }
}

/// The state of `id` if the loop has been seen.
pub(crate) fn existing(id: &LoopId) -> Option<SharedState> {
    states()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(id)
        .copied()
}
