//! A persistent thread pool whose caller takes part in every region, as
//! OpenMP's master thread does. The fork/join protocol, its memory orderings
//! and what nesting does are in `README.md` beside this file.
//!
//! A [`ThreadPool`] of two participants (the caller and one worker) runs a
//! region: the closure runs once per participant, and a region started
//! inside it runs on the calling thread alone. Parallel loops
//! ([`ThreadPool::parallel`]) are regions of this kind.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! let pool = keel::ThreadPool::builder().threads(2).build()?;
//! assert_eq!(pool.threads(), 2);
//! let ran = [AtomicUsize::new(0), AtomicUsize::new(0)];
//! let nested = AtomicUsize::new(0);
//! pool.region(|team| {
//!     assert_eq!(team.size, 2);
//!     ran[team.index].fetch_add(1, Ordering::Relaxed);
//!     // Nesting runs inline: one participant, this thread.
//!     assert_eq!(pool.team_size_here(), 1);
//!     pool.region(|inner| {
//!         assert_eq!((inner.index, inner.size), (0, 1));
//!         nested.fetch_add(1, Ordering::Relaxed);
//!     });
//! });
//! assert!(ran.iter().all(|r| r.load(Ordering::Relaxed) == 1));
//! assert_eq!(nested.into_inner(), 2);
//! # Ok(()) }
//! ```

mod env;
#[cfg(all(loom, test))]
mod loom_tests;

use std::any::Any;
use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::OnceLock;

// Every word, lock, cell and thread operation of the fork/join protocol comes
// from the facade, so that the loom models check this code (`loom_tests.rs`).
use crate::sync::thread::{self, JoinHandle, Thread};
use crate::sync::{hint, Arc, AtomicBool, AtomicU64, AtomicUsize, Condvar, Mutex, Ordering};
use crate::sync::{spin_budget, UnsafeCell};

use crossbeam_utils::CachePadded;

pub use env::{PoolError, WaitPolicy, MAX_THREADS};

/// Spins (each a `spin_loop` hint) before a waiting thread parks, under the
/// default wait policy: long enough to bridge back-to-back loops, short
/// enough not to burn a core for long when idle (waking a parked thread costs
/// 20–50 µs on these two-core machines).
pub const DEFAULT_SPINS: u32 = 1 << 16;
/// A spinning thread yields its core every this many spins, so that spinning
/// stays harmless when threads outnumber cores.
const YIELD_EVERY: u32 = 1 << 8;
/// `state` holds the epoch in its high bits and the number of parked
/// workers in its low bits, so that "announce I sleep unless the epoch
/// moved" and "publish a new epoch and learn who sleeps" are operations on
/// one word (README: Wait).
const EPOCH_ONE: u64 = 1 << 20;
const SLEEPERS: u64 = EPOCH_ONE - 1;
/// `join` holds twice the number of workers still running, plus this bit
/// while the caller sleeps (README: Join).
const CALLER_SLEEPS: usize = 1;

/// A region's closure, type-erased. Called with the participant index.
type Job<'a> = dyn Fn(usize) + Sync + 'a;

#[cfg(not(loom))]
thread_local! {
    /// Id of the pool whose region this thread is running in (0 = none).
    static IN_POOL: Cell<usize> = const { Cell::new(0) };
}
// Loom runs every modelled thread on one OS thread, so a `std` thread-local
// would be shared between them; loom's own is per modelled thread.
#[cfg(loom)]
loom::thread_local! {
    /// Id of the pool whose region this thread is running in (0 = none).
    static IN_POOL: Cell<usize> = Cell::new(0);
}

/// Not part of the protocol (ids only tell pools apart), so `std`'s even
/// under loom, whose atomics cannot live in a `static`.
static NEXT_POOL_ID: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);

/// Participant `index` of a region of `size` participants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Team {
    /// This participant, `0..size` (0 is the caller).
    pub index: usize,
    /// Number of participants.
    pub size: usize,
}

struct Shared {
    id: usize,
    threads: usize,
    spins: u32,
    /// What a worker reads to start a region, in one cache line.
    fork: CachePadded<Fork>,
    /// Running workers × 2, plus [`CALLER_SLEEPS`].
    join: CachePadded<AtomicUsize>,
    /// Where a sleeping caller waits for the last worker (README: Join).
    caller_wake: (Mutex<()>, Condvar),
    /// What only callers write, on a line no worker reads in a clean region
    /// (sharing one would cost a cache miss per lock and unlock).
    caller_side: CachePadded<CallerSide>,
    workers: OnceLock<Vec<Thread>>,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

struct CallerSide {
    /// One region at a time per pool.
    region: Mutex<()>,
    /// Set when a participant panicked, so a clean join skips `panic`'s lock.
    panicked: AtomicBool,
}

/// The epoch word and the job it publishes share a cache line, so a worker
/// that sees a new epoch already holds the job pointer.
struct Fork {
    /// Epoch and parked-worker count (see [`EPOCH_ONE`]).
    state: AtomicU64,
    /// The current region's job; written by the caller under `region` before
    /// a new epoch publishes it, read by workers after they see that epoch.
    job: UnsafeCell<Option<*const Job<'static>>>,
    /// Set by the pool's drop before its last epoch.
    shutdown: AtomicBool,
}

// SAFETY: `job` is written only by the thread holding `region` before it
// publishes it with the epoch increment (AcqRel), and read only by workers
// after they observe that epoch (Acquire) and before they decrement `join`,
// which the writer waits to see at zero before writing again. Everything
// else is atomic or behind a mutex.
unsafe impl Sync for Shared {}
// SAFETY: the raw job pointer is only dereferenced during the region that
// owns it (see above); the rest is Send.
unsafe impl Send for Shared {}

/// A pool of persistent worker threads.
pub struct ThreadPool {
    shared: Arc<Shared>,
    handles: Vec<JoinHandle<()>>,
    /// Per-participant state of the loop running in a region (one region
    /// at a time, so one set suffices).
    loop_slots: Box<[CachePadded<crate::loops::Slot>]>,
}

impl std::fmt::Debug for ThreadPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadPool")
            .field("threads", &self.shared.threads)
            .field("spins", &self.shared.spins)
            .finish()
    }
}

/// Builds a [`ThreadPool`], naming every choice.
#[derive(Clone, Debug, Default)]
pub struct PoolBuilder {
    threads: Option<usize>,
    wait: Option<WaitPolicy>,
    pin: Option<bool>,
}

impl PoolBuilder {
    /// A builder with nothing chosen: unset choices come from the
    /// environment ([`PoolBuilder::build`]) or their defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of participants, the caller included (`KEEL_NUM_THREADS`).
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads);
        self
    }

    /// How waiting threads wait (`KEEL_WAIT_POLICY`).
    pub fn wait_policy(mut self, wait: WaitPolicy) -> Self {
        self.wait = Some(wait);
        self
    }

    /// Pin worker `i` to core `i mod cores` (`KEEL_PIN`).
    pub fn pin(mut self, pin: bool) -> Self {
        self.pin = Some(pin);
        self
    }

    /// Builds the pool; choices not made in code come from `KEEL_NUM_THREADS`,
    /// `KEEL_WAIT_POLICY` and `KEEL_PIN`, else the available cores, a bounded
    /// spin and no pinning. A malformed variable warns once on stderr and
    /// its default is used, as libgomp does; [`PoolBuilder::try_env`] is the
    /// form that returns it as a typed error.
    pub fn build(self) -> Result<ThreadPool, PoolError> {
        let threads = match self.threads {
            Some(t) => t,
            None => env::threads()?
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        };
        if threads == 0 {
            return Err(PoolError::ZeroThreads);
        }
        if threads > MAX_THREADS {
            return Err(PoolError::TooManyThreads { threads });
        }
        let wait = match self.wait {
            Some(w) => w,
            None => env::wait_policy()?.unwrap_or_default(),
        };
        let pin = match self.pin {
            Some(p) => p,
            None => env::pin()?.unwrap_or(false),
        };
        ThreadPool::start(threads, wait.spins(), pin)
    }
}

impl ThreadPool {
    /// A builder.
    pub fn builder() -> PoolBuilder {
        PoolBuilder::new()
    }

    fn start(threads: usize, spins: u32, pin: bool) -> Result<Self, PoolError> {
        let shared = Arc::new(Shared {
            id: NEXT_POOL_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            threads,
            spins: spin_budget(spins),
            fork: CachePadded::new(Fork {
                state: AtomicU64::new(0),
                job: UnsafeCell::new(None),
                shutdown: AtomicBool::new(false),
            }),
            join: CachePadded::new(AtomicUsize::new(0)),
            caller_wake: (Mutex::new(()), Condvar::new()),
            workers: OnceLock::new(),
            caller_side: CachePadded::new(CallerSide {
                region: Mutex::new(()),
                panicked: AtomicBool::new(false),
            }),
            panic: Mutex::new(None),
        });
        // Loom runs every modelled thread on the test's OS thread, so pinning
        // one would pin them all: under loom the pool never pins.
        let cores = if pin && !cfg!(loom) {
            core_affinity::get_core_ids().unwrap_or_default()
        } else {
            Vec::new()
        };
        let mut handles = Vec::with_capacity(threads.saturating_sub(1));
        for index in 1..threads {
            let worker_shared = Arc::clone(&shared);
            let core = (!cores.is_empty()).then(|| cores[index % cores.len()]);
            let handle = thread::Builder::new()
                .name(format!("keel-worker-{index}"))
                .spawn(move || {
                    if let Some(core) = core {
                        // Best effort, as OMP_PROC_BIND: a refused pin only
                        // costs locality.
                        core_affinity::set_for_current(core);
                    }
                    worker_main(&worker_shared, index)
                })
                .map_err(|e| PoolError::Spawn(e.to_string()));
            match handle {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // Stop the workers already started before reporting.
                    let partial = ThreadPool {
                        shared,
                        handles,
                        loop_slots: Box::new([]),
                    };
                    drop(partial);
                    return Err(e);
                }
            }
        }
        let _ = shared
            .workers
            .set(handles.iter().map(|h| h.thread().clone()).collect());
        let loop_slots = (0..threads).map(|_| CachePadded::default()).collect();
        Ok(ThreadPool {
            shared,
            handles,
            loop_slots,
        })
    }

    pub(crate) fn loop_slots(&self) -> &[CachePadded<crate::loops::Slot>] {
        &self.loop_slots
    }

    /// Number of participants of a region started from outside the pool.
    pub fn threads(&self) -> usize {
        self.shared.threads
    }

    /// Participants a region started *here* would get: 1 when this thread
    /// is already inside a region of this pool (nesting runs inline).
    pub fn team_size_here(&self) -> usize {
        if self.is_inside() {
            1
        } else {
            self.shared.threads
        }
    }

    fn is_inside(&self) -> bool {
        IN_POOL.with(|p| p.get() == self.shared.id)
    }

    /// Runs `f(team)` once on each of the [`ThreadPool::team_size_here`]
    /// participants — the caller is participant 0 — and returns when all have
    /// finished. A panic in any participant is resumed here after the others
    /// finish; the pool stays usable. Allocates nothing.
    pub fn region<F>(&self, f: F)
    where
        F: Fn(Team) + Sync,
    {
        let size = self.team_size_here();
        if size == 1 {
            f(Team { index: 0, size: 1 });
            return;
        }
        let shared = &*self.shared;
        let _region = shared
            .caller_side
            .region
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let job = |index: usize| {
            if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| f(Team { index, size })))
            {
                let mut slot = shared.panic.lock().unwrap_or_else(|e| e.into_inner());
                slot.get_or_insert(payload);
                shared.caller_side.panicked.store(true, Ordering::Relaxed);
            }
        };
        let job_ref: &Job<'_> = &job;
        // SAFETY: the lifetime is erased only to store the pointer in the
        // pool; this function does not return before `join` reaches 0,
        // after which no worker dereferences it (README: Join).
        let job_ptr: *const Job<'static> =
            unsafe { std::mem::transmute::<&Job<'_>, &Job<'static>>(job_ref) };
        // SAFETY: we hold `region`; workers are all waiting for the next
        // epoch, so nobody reads `job` now (README: Fork).
        shared
            .fork
            .job
            .with_mut(|job| unsafe { *job = Some(job_ptr) });
        shared.join.store(2 * (size - 1), Ordering::Relaxed);
        // Publishes job and join (Release), and tells whether any worker
        // announced sleep before this epoch: one word, so a worker either
        // saw this epoch or is counted here (README: Wait).
        let before = shared.fork.state.fetch_add(EPOCH_ONE, Ordering::AcqRel);
        if before & SLEEPERS != 0 {
            if let Some(workers) = shared.workers.get() {
                for worker in workers {
                    worker.unpark();
                }
            }
        }

        let outer = IN_POOL.with(|p| p.replace(shared.id));
        job(0);
        IN_POOL.with(|p| p.set(outer));
        self.wait_for_workers();

        // Relaxed: `join`'s Acquire above already ordered the panicking
        // participant's store before this load.
        if !shared.caller_side.panicked.load(Ordering::Relaxed) {
            return;
        }
        shared.caller_side.panicked.store(false, Ordering::Relaxed);
        let payload = shared
            .panic
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(payload) = payload {
            drop(_region);
            panic::resume_unwind(payload);
        }
    }

    fn wait_for_workers(&self) {
        let shared = &*self.shared;
        let mut spins = 0u32;
        loop {
            // Acquire: makes every worker's writes in the region visible.
            let join = shared.join.load(Ordering::Acquire);
            if join / 2 == 0 {
                return;
            }
            if spins < shared.spins {
                spins += 1;
                pause(spins);
                continue;
            }
            // Set the sleep bit only if no worker finished meanwhile; the
            // worker that takes `join` to zero sees the bit and wakes us.
            let asleep = join & CALLER_SLEEPS != 0
                || shared
                    .join
                    .compare_exchange(
                        join,
                        join | CALLER_SLEEPS,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    )
                    .is_ok();
            if asleep {
                // The last worker notifies under this mutex after its
                // decrement, so checking `join` under it cannot miss it.
                let (lock, wake) = &shared.caller_wake;
                let mut guard = lock.lock().unwrap_or_else(|e| e.into_inner());
                while shared.join.load(Ordering::Acquire) / 2 != 0 {
                    guard = wake.wait(guard).unwrap_or_else(|e| e.into_inner());
                }
                return;
            }
        }
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        self.shared.fork.shutdown.store(true, Ordering::Relaxed);
        self.shared
            .fork
            .state
            .fetch_add(EPOCH_ONE, Ordering::AcqRel);
        for handle in &self.handles {
            handle.thread().unpark();
        }
        for handle in self.handles.drain(..) {
            let _ = handle.join();
        }
    }
}

#[inline]
fn pause(spins: u32) {
    if spins.is_multiple_of(YIELD_EVERY) {
        thread::yield_now();
    } else {
        // Under loom this yields to the other modelled threads.
        hint::spin_loop();
    }
}

fn worker_main(shared: &Shared, index: usize) {
    IN_POOL.with(|p| p.set(shared.id));
    let mut seen = 0u64;
    loop {
        seen = wait_for_epoch(shared, seen);
        // Relaxed: the epoch's Acquire ordered the drop's store before it.
        if shared.fork.shutdown.load(Ordering::Relaxed) {
            return;
        }
        // SAFETY: the new epoch published `job` (README: Fork); the caller
        // keeps the closure alive until we decrement `join` below.
        let job = shared
            .fork
            .job
            .with(|job| unsafe { *job })
            .expect("a published region has a job");
        // SAFETY: as above; `job` points to the caller's live closure.
        unsafe { (*job)(index) };
        if shared.join.fetch_sub(2, Ordering::AcqRel) == 2 | CALLER_SLEEPS {
            // The caller sleeps on the pool's condition variable, which
            // outlives the region: nothing of the region is touched here.
            let (lock, wake) = &shared.caller_wake;
            drop(lock.lock().unwrap_or_else(|e| e.into_inner()));
            wake.notify_one();
        }
    }
}

fn wait_for_epoch(shared: &Shared, seen: u64) -> u64 {
    let mut spins = 0u32;
    loop {
        let state = shared.fork.state.load(Ordering::Acquire);
        if state / EPOCH_ONE != seen {
            return state / EPOCH_ONE;
        }
        if spins < shared.spins {
            spins += 1;
            pause(spins);
            continue;
        }
        // Announce sleep only if the epoch has not moved: the caller's
        // epoch increment on the same word then sees us and unparks.
        if shared
            .fork
            .state
            .compare_exchange(state, state + 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            thread::park();
            shared.fork.state.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// The global pool, built on first use from the environment.
pub fn global() -> Result<&'static ThreadPool, PoolError> {
    static GLOBAL: OnceLock<Result<ThreadPool, PoolError>> = OnceLock::new();
    GLOBAL
        .get_or_init(|| PoolBuilder::new().build())
        .as_ref()
        .map_err(Clone::clone)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn pool(threads: usize, wait: WaitPolicy) -> ThreadPool {
        ThreadPool::builder()
            .threads(threads)
            .wait_policy(wait)
            .pin(false)
            .build()
            .unwrap()
    }

    #[test]
    fn every_participant_runs_once_per_region() {
        for wait in [
            WaitPolicy::Active,
            WaitPolicy::Passive,
            WaitPolicy::Spins(10),
        ] {
            let pool = pool(4, wait);
            for _ in 0..200 {
                let hits: Vec<AtomicUsize> = (0..4).map(|_| AtomicUsize::new(0)).collect();
                pool.region(|team| {
                    assert_eq!(team.size, 4);
                    hits[team.index].fetch_add(1, Ordering::Relaxed);
                });
                assert!(
                    hits.iter().all(|h| h.load(Ordering::Relaxed) == 1),
                    "{wait:?}"
                );
            }
        }
    }

    #[test]
    fn zero_threads_is_an_error() {
        assert_eq!(
            ThreadPool::builder().threads(0).build().unwrap_err(),
            PoolError::ZeroThreads
        );
    }

    #[test]
    fn a_single_thread_pool_runs_on_the_caller() {
        let pool = pool(1, WaitPolicy::Bounded);
        let caller = thread::current().id();
        pool.region(|team| {
            assert_eq!(team, Team { index: 0, size: 1 });
            assert_eq!(thread::current().id(), caller);
        });
    }

    #[test]
    fn nested_regions_run_inline_without_deadlock() {
        let pool = pool(3, WaitPolicy::Bounded);
        let inner_runs = AtomicUsize::new(0);
        pool.region(|outer| {
            assert_eq!(pool.team_size_here(), 1);
            pool.region(|inner| {
                assert_eq!(inner.size, 1);
                inner_runs.fetch_add(1, Ordering::Relaxed);
            });
            let _ = outer;
        });
        assert_eq!(inner_runs.load(Ordering::Relaxed), 3);
        assert_eq!(pool.team_size_here(), 3, "the caller leaves the region");
    }

    #[test]
    fn a_panic_reaches_the_caller_and_the_pool_stays_usable() {
        let pool = pool(3, WaitPolicy::Bounded);
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.region(|team| {
                if team.index == 2 {
                    panic!("participant 2 failed");
                }
            })
        }));
        let payload = result.unwrap_err();
        assert_eq!(
            payload.downcast_ref::<&str>(),
            Some(&"participant 2 failed")
        );
        let count = AtomicUsize::new(0);
        pool.region(|_| {
            count.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(count.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn parked_workers_wake_for_the_next_region() {
        let pool = pool(3, WaitPolicy::Passive);
        for _ in 0..20 {
            // Let the workers park, then fork again.
            thread::sleep(std::time::Duration::from_millis(2));
            let count = AtomicUsize::new(0);
            pool.region(|_| {
                count.fetch_add(1, Ordering::Relaxed);
            });
            assert_eq!(count.load(Ordering::Relaxed), 3);
        }
    }

    #[test]
    fn stress_four_times_more_threads_than_cores() {
        let cores = thread::available_parallelism().map_or(2, |n| n.get());
        let pool = pool(4 * cores, WaitPolicy::Bounded);
        let total = AtomicUsize::new(0);
        for _ in 0..300 {
            pool.region(|_| {
                total.fetch_add(1, Ordering::Relaxed);
            });
        }
        assert_eq!(total.load(Ordering::Relaxed), 300 * 4 * cores);
    }

    #[test]
    fn regions_from_several_outside_threads_are_serialised() {
        let pool = pool(2, WaitPolicy::Bounded);
        let total = AtomicUsize::new(0);
        thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..100 {
                        pool.region(|_| {
                            total.fetch_add(1, Ordering::Relaxed);
                        });
                    }
                });
            }
        });
        assert_eq!(total.load(Ordering::Relaxed), 4 * 100 * 2);
    }
}
