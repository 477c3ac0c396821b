//! What Keel keeps per loop across its instances: the parsed schedule, the
//! measurements ([`LoopRecord`]), and what its schedules read of them
//! ([`LoopMemory`]: profile, AWF history, iteration assignment). One
//! [`LoopState`] per [`LoopId`], behind its own mutex, so loops never
//! contend with each other and a loop's instances take two short
//! uncontended locks (before the fork and after the join). At most
//! [`MAX_LOOP_STATES`] are kept: a program that names a new loop every
//! step runs in bounded memory, and a loop forgotten and met again starts
//! over (its `auto` search included).
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

/// A loop's state, shared by the registry and the instances that use it:
/// a state the registry forgets stays alive until its last instance has
/// recorded.
pub(crate) type SharedState = Arc<Mutex<LoopState>>;

/// Loops whose state the registry keeps at once. A program that names a
/// loop per step (`.id(format!("pass/{step}"))`, `keel_parallel_for_id`)
/// would otherwise grow by one state (about 8 KB) per step; past this
/// bound the half of the states used least recently are forgotten
/// (`docs/conventions.md`, "How long Keel remembers a loop").
pub const MAX_LOOP_STATES: usize = 1024;

/// A state in the registry and when it was last looked up there.
struct Kept {
    state: SharedState,
    used: u64,
}

/// The loops' states by id, with a clock of lookups for eviction.
#[derive(Default)]
struct Table {
    map: HashMap<LoopId, Kept>,
    clock: u64,
}

impl Table {
    /// Forgets the half of the states looked up least recently.
    fn evict_older_half(&mut self) {
        let mut used: Vec<u64> = self.map.values().map(|k| k.used).collect();
        let middle = used.len() / 2;
        let (_, &mut cut, _) = used.select_nth_unstable(middle);
        self.map.retain(|_, k| k.used > cut);
    }
}

type Registry = Mutex<Table>;

#[cfg(not(loom))]
fn states() -> &'static Registry {
    static STATES: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();
    STATES.get_or_init(Default::default)
}

/// One registry per loom execution.
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
        if let Some((_, state)) = slots.iter().flatten().find(|(k, _)| same(k, id)) {
            return Arc::clone(state);
        }
        let state = registered(id);
        slots[*next] = Some((id.clone(), Arc::clone(&state)));
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

/// Loop `id`'s state from the registry, created on first use (the older
/// half of the states forgotten first when [`MAX_LOOP_STATES`] are kept).
fn registered(id: &LoopId) -> SharedState {
    let mut table = states().lock().unwrap_or_else(|e| e.into_inner());
    table.clock += 1;
    let now = table.clock;
    if let Some(kept) = table.map.get_mut(id) {
        kept.used = now;
        return Arc::clone(&kept.state);
    }
    if table.map.len() >= MAX_LOOP_STATES {
        table.evict_older_half();
    }
    let state = SharedState::default();
    table.map.insert(
        id.clone(),
        Kept {
            state: Arc::clone(&state),
            used: now,
        },
    );
    state
}

/// How many loops Keel keeps a state for now: at most
/// [`MAX_LOOP_STATES`], however many distinct loops ran.
///
/// ```
/// for step in 0..3 {
///     keel::parallel(0..8).id(format!("doc-kept/{step}")).for_each(|_| {});
/// }
/// assert!(keel::loops::kept_loop_states() <= keel::loops::MAX_LOOP_STATES);
/// ```
pub fn kept_loop_states() -> usize {
    states().lock().unwrap_or_else(|e| e.into_inner()).map.len()
}

/// Locks a loop's state. A panic never happens while it is held (user code
/// runs outside), but a poisoned lock is recovered all the same.
pub(crate) fn lock(state: &Mutex<LoopState>) -> MutexGuard<'_, LoopState> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` on every loop's state.
pub(crate) fn for_each_state(mut f: impl FnMut(&LoopId, &mut LoopState)) {
    let table = states().lock().unwrap_or_else(|e| e.into_inner());
    for (id, kept) in table.map.iter() {
        f(id, &mut lock(&kept.state));
    }
}

/// The state of `id` if the loop has been seen (and not forgotten).
pub(crate) fn existing(id: &LoopId) -> Option<SharedState> {
    states()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .map
        .get(id)
        .map(|kept| Arc::clone(&kept.state))
}
