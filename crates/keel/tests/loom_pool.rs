//! Loom model of the pool's fork/join handshake (`src/pool/README.md`):
//! the same words, operations and orderings as `src/pool/mod.rs`, one or
//! two workers, two regions, waiting reduced to its sleeping path (loom
//! explores every interleaving; the spinning path is the same checks
//! without `park`). Loom fails the test on a data race over the job or
//! result cells (broken publication) or when every thread is parked (a lost
//! wake-up). Keep it in step with `pool/mod.rs`.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p keel --test
//! loom_pool --release` (bound 3 explores in seconds; 4 takes about a minute;
//! unbounded, the two-worker model does not finish).
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;

/// `state`: epoch in the high bits, parked-worker count in the low bits.
const EPOCH_ONE: u64 = 1 << 20;
const SLEEPERS: u64 = EPOCH_ONE - 1;
/// `join`: remaining workers × 2, plus 1 while the caller sleeps.
const CALLER_SLEEPS: usize = 1;

struct Shared {
    state: AtomicU64,
    join: AtomicUsize,
    /// Stands for the job pointer the caller publishes.
    job: UnsafeCell<u64>,
    /// What each worker's job writes, read by the caller after the join.
    results: Vec<UnsafeCell<u64>>,
    /// Where a sleeping caller waits for the last worker.
    caller_wake: (Mutex<()>, Condvar),
}

const REGIONS: u64 = 2;

fn worker(shared: &Shared, index: usize) {
    let mut seen = 0;
    for _ in 0..REGIONS {
        seen = loop {
            let state = shared.state.load(Ordering::Acquire);
            if state / EPOCH_ONE != seen {
                break state / EPOCH_ONE;
            }
            if shared
                .state
                .compare_exchange(state, state + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                thread::park();
                shared.state.fetch_sub(1, Ordering::AcqRel);
            }
        };
        let job = shared.job.with(|j| unsafe { *j });
        shared.results[index].with_mut(|r| unsafe { *r = job * 10 });
        if shared.join.fetch_sub(2, Ordering::AcqRel) == 2 | CALLER_SLEEPS {
            let (lock, wake) = &shared.caller_wake;
            drop(lock.lock().unwrap());
            wake.notify_one();
        }
    }
}

fn region(shared: &Shared, workers: &[thread::Thread], job: u64) {
    shared.job.with_mut(|j| unsafe { *j = job });
    shared.join.store(2 * workers.len(), Ordering::Relaxed);
    let before = shared.state.fetch_add(EPOCH_ONE, Ordering::AcqRel);
    if before & SLEEPERS != 0 {
        for worker in workers {
            worker.unpark();
        }
    }
    loop {
        let join = shared.join.load(Ordering::Acquire);
        if join / 2 == 0 {
            break;
        }
        if join & CALLER_SLEEPS != 0
            || shared
                .join
                .compare_exchange(
                    join,
                    join | CALLER_SLEEPS,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
        {
            let (lock, wake) = &shared.caller_wake;
            let mut guard = lock.lock().unwrap();
            while shared.join.load(Ordering::Acquire) / 2 != 0 {
                guard = wake.wait(guard).unwrap();
            }
            break;
        }
    }
    for result in &shared.results {
        let value = result.with(|r| unsafe { *r });
        assert_eq!(
            value,
            job * 10,
            "every worker's write is visible after the join"
        );
    }
}

fn model(workers: usize) {
    loom::model(move || {
        let shared = Arc::new(Shared {
            state: AtomicU64::new(0),
            join: AtomicUsize::new(0),
            job: UnsafeCell::new(0),
            results: (0..workers).map(|_| UnsafeCell::new(0)).collect(),
            caller_wake: (Mutex::new(()), Condvar::new()),
        });
        let handles: Vec<_> = (0..workers)
            .map(|index| {
                let shared = Arc::clone(&shared);
                thread::spawn(move || worker(&shared, index))
            })
            .collect();
        let threads: Vec<thread::Thread> = handles.iter().map(|h| h.thread().clone()).collect();
        for job in 1..=REGIONS {
            region(&shared, &threads, job);
        }
        for handle in handles {
            handle.join().unwrap();
        }
    });
}

#[test]
fn one_worker_never_loses_a_wake_up_and_sees_the_job() {
    model(1);
}

#[test]
fn two_workers_never_lose_a_wake_up_and_see_the_job() {
    model(2);
}
