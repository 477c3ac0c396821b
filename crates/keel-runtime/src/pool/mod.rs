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
use std::mem::MaybeUninit;
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

/// Bytes of the fork block that carry a region's job by value (see
/// [`Broadcast`]): with the epoch word and the job's entry point they fill
/// the 128-byte block `CachePadded` gives the fork on x86-64 (an adjacent
/// line pair, which the spatial prefetcher moves together).
const BROADCAST_BYTES: usize = 112;

/// The job's bytes in the fork block, 16-aligned (a plan may hold `u128`s).
type Args = [MaybeUninit<u128>; BROADCAST_BYTES / 16];

/// A region's entry point, monomorphised per job type: runs participant
/// `team`'s share of the job stored in the args and returns its tally.
type Entry = unsafe fn(*const Args, Team) -> u64;

/// A region's job, carried by value in the fork's own cache lines, so that
/// a worker finds everything it reads at the fork in the lines that tell it
/// to start: a region whose job holds no pointer into the caller's frame
/// moves no other line from the caller to a worker.
///
/// The job is copied bit for bit into the pool (hence `Copy`: it owns
/// nothing to drop) and read by every participant by shared reference
/// (hence `Sync`). It must fit in [`BROADCAST_BYTES`] bytes, with an
/// alignment of at most 16, which [`ThreadPool::region_with`] checks at
/// compile time.
pub(crate) trait Broadcast: Copy + Sync {
    /// Participant `team.index`'s share; the returned tallies of all
    /// participants are summed for the caller.
    fn run(&self, team: Team) -> u64;
}

/// [`Entry`] for jobs of type `J`.
///
/// # Safety
///
/// `args` holds a `J` written by [`ThreadPool::region_with`], alive for the
/// whole call.
unsafe fn entry<J: Broadcast>(args: *const Args, team: Team) -> u64 {
    // SAFETY: as the function's contract says; `Args` is 8-aligned and at
    // least as large as `J` (checked where it was written).
    let job = unsafe { &*args.cast::<J>() };
    job.run(team)
}

/// [`ThreadPool::region`]'s closure as a [`Broadcast`] job: only its
/// address travels.
struct ClosureJob<F>(*const F);

impl<F> Clone for ClosureJob<F> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<F> Copy for ClosureJob<F> {}

// SAFETY: the pointer is to an `F: Sync`, alive for the region (the caller
// does not return before the join).
unsafe impl<F: Sync> Sync for ClosureJob<F> {}

impl<F: Fn(Team) + Sync> Broadcast for ClosureJob<F> {
    fn run(&self, team: Team) -> u64 {
        // SAFETY: see the `Sync` impl.
        unsafe { (*self.0)(team) };
        0
    }
}

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
    /// What a worker reads to start a region, in one cache-line block.
    fork: CachePadded<Fork>,
    /// Running workers × 2, plus [`CALLER_SLEEPS`]; and the tallies.
    join: CachePadded<Join>,
    /// Set by the pool's drop before its last epoch; apart from the fork
    /// block, which the caller writes on every region, so that a worker's
    /// read of it finds a line it already holds.
    shutdown: AtomicBool,
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

/// The epoch word and the job it publishes share a cache-line block, so a
/// worker that sees a new epoch already holds the job.
struct Fork {
    /// Epoch and parked-worker count (see [`EPOCH_ONE`]).
    state: AtomicU64,
    /// The current region's entry point; written by the caller under
    /// `region` before a new epoch publishes it, read by workers after they
    /// see that epoch.
    entry: UnsafeCell<Option<Entry>>,
    /// The current region's job, by value; written and read as `entry`.
    args: UnsafeCell<Args>,
}

/// The join word and the participants' summed tallies, on one line: a
/// worker that adds its tally already owns the line for its decrement.
struct Join {
    /// Running workers × 2, plus [`CALLER_SLEEPS`].
    running: AtomicUsize,
    /// The sum of the workers' tallies in this region.
    tally: AtomicU64,
}

// SAFETY: `entry` and `args` are written only by the thread holding
// `region` before it publishes them with the epoch increment (AcqRel), and
// read only by workers after they observe that epoch (Acquire) and before
// they decrement `join`, which the writer waits to see at zero before
// writing again. Everything else is atomic or behind a mutex.
unsafe impl Sync for Shared {}
// SAFETY: the job's pointers are only dereferenced during the region that
// owns it (see above); the rest is Send.
unsafe impl Send for Shared {}

/// A pool of persistent worker threads.
pub struct ThreadPool {
    shared: Arc<Shared>,
    handles: Vec<JoinHandle<()>>,
    /// What the loop running in a region shares (one region at a time, so
    /// one set suffices).
    pub(crate) loop_area: Box<crate::loops::LoopArea>,
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
                entry: UnsafeCell::new(None),
                args: UnsafeCell::new([MaybeUninit::uninit(); BROADCAST_BYTES / 16]),
            }),
            join: CachePadded::new(Join {
                running: AtomicUsize::new(0),
                tally: AtomicU64::new(0),
            }),
            shutdown: AtomicBool::new(false),
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
                        loop_area: Box::new(crate::loops::LoopArea::new(0)),
                    };
                    drop(partial);
                    return Err(e);
                }
            }
        }
        let _ = shared
            .workers
            .set(handles.iter().map(|h| h.thread().clone()).collect());
        Ok(ThreadPool {
            shared,
            handles,
            loop_area: Box::new(crate::loops::LoopArea::new(threads)),
        })
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
        self.region_with(ClosureJob(&f), || {}, |_| {});
    }

    /// Runs `job.run(team)` once on each of the
    /// [`ThreadPool::team_size_here`] participants, as [`ThreadPool::region`]
    /// runs its closure, with the job itself carried in the fork's lines;
    /// returns what `join` makes of the sum of the participants' tallies.
    /// `setup` runs first and `join` after the participants joined, both on
    /// the caller while no other region of this pool runs: where state the
    /// participants share is made ready for this region and read after it.
    /// Neither runs when the region runs inline on one participant, nor
    /// `join` when a participant panicked.
    pub(crate) fn region_with<J: Broadcast, R>(
        &self,
        job: J,
        setup: impl FnOnce(),
        join: impl FnOnce(u64) -> R,
    ) -> R {
        const {
            assert!(
                size_of::<J>() <= size_of::<Args>(),
                "a broadcast job must fit the fork block"
            );
            assert!(
                align_of::<J>() <= align_of::<Args>(),
                "a broadcast job must be at most 16-aligned"
            );
        }
        let size = self.team_size_here();
        if size == 1 {
            return join(job.run(Team { index: 0, size: 1 }));
        }
        let shared = &*self.shared;
        let _region = shared
            .caller_side
            .region
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        setup();
        // SAFETY: we hold `region`; workers are all waiting for the next
        // epoch, so nobody reads `entry` or `args` now (README: Fork). `J`
        // fits `Args` (checked above) and is `Copy`, so overwriting the
        // previous job's bytes drops nothing.
        shared.fork.args.with_mut(|args| unsafe {
            args.cast::<J>().write(job);
        });
        // SAFETY: as above.
        shared
            .fork
            .entry
            .with_mut(|entry| unsafe { *entry = Some(entry_of::<J>()) });
        shared.join.tally.store(0, Ordering::Relaxed);
        shared.join.running.store(2 * (size - 1), Ordering::Relaxed);
        // Publishes the job and join (Release), and tells whether any worker
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
        // The caller runs its own copy of the job: the fork block is the
        // workers' to read now.
        let own = run_caught(shared, || job.run(Team { index: 0, size }));
        IN_POOL.with(|p| p.set(outer));
        self.wait_for_workers();

        // Relaxed: `join`'s Acquire above already ordered the panicking
        // participant's store before this load.
        if !shared.caller_side.panicked.load(Ordering::Relaxed) {
            // Relaxed: each worker added its tally before its Release
            // decrement of `join`, which `wait_for_workers` acquired.
            return join(own.wrapping_add(shared.join.tally.load(Ordering::Relaxed)));
        }
        shared.caller_side.panicked.store(false, Ordering::Relaxed);
        let payload = shared
            .panic
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        drop(_region);
        // `panicked` is set only after a payload is stored, and only the
        // caller takes it: a payload is there.
        panic::resume_unwind(payload.unwrap_or_else(|| Box::new("a participant panicked")))
    }

    fn wait_for_workers(&self) {
        let shared = &*self.shared;
        let mut spins = 0u32;
        loop {
            // Acquire: makes every worker's writes in the region visible.
            let join = shared.join.running.load(Ordering::Acquire);
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
                    .running
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
                while shared.join.running.load(Ordering::Acquire) / 2 != 0 {
                    guard = wake.wait(guard).unwrap_or_else(|e| e.into_inner());
                }
                return;
            }
        }
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::Relaxed);
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
        if shared.shutdown.load(Ordering::Relaxed) {
            return;
        }
        // SAFETY: the new epoch published `entry` and `args` (README:
        // Fork); the caller keeps whatever the job points to alive until
        // we decrement `join` below.
        let entry = shared
            .fork
            .entry
            .with(|entry| unsafe { *entry })
            .expect("a published region has a job");
        let team = Team {
            index,
            size: shared.threads,
        };
        // SAFETY: as above; `args` holds the job `entry` was made for.
        let tally = shared
            .fork
            .args
            .with(|args| run_caught(shared, || unsafe { entry(args, team) }));
        if tally != 0 {
            // Relaxed: published by the decrement below (Release).
            shared.join.tally.fetch_add(tally, Ordering::Relaxed);
        }
        if shared.join.running.fetch_sub(2, Ordering::AcqRel) == 2 | CALLER_SLEEPS {
            // The caller sleeps on the pool's condition variable, which
            // outlives the region: nothing of the region is touched here.
            let (lock, wake) = &shared.caller_wake;
            drop(lock.lock().unwrap_or_else(|e| e.into_inner()));
            wake.notify_one();
        }
    }
}

/// [`entry`] for `J`, as a plain function pointer.
fn entry_of<J: Broadcast>() -> Entry {
    entry::<J>
}

/// Runs one participant's share under `catch_unwind`: a panic is kept for
/// the caller to resume after the join (the first one wins), and its tally
/// is 0.
fn run_caught(shared: &Shared, share: impl FnOnce() -> u64) -> u64 {
    match panic::catch_unwind(AssertUnwindSafe(share)) {
        Ok(tally) => tally,
        Err(payload) => {
            let mut slot = shared.panic.lock().unwrap_or_else(|e| e.into_inner());
            slot.get_or_insert(payload);
            shared.caller_side.panicked.store(true, Ordering::Relaxed);
            0
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
mod tests;
