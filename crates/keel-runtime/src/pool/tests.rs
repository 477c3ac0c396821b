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
