//! Many short loop instances back to back, the path whose job rides in the
//! fork's own lines and whose counters and slots the pool keeps between
//! instances: every iteration exactly once in every instance of every
//! schedule, the summary's chunk count equal to the chunks the body saw,
//! recorded and unrecorded instances interleaved, loops from two outside
//! threads on one pool, and a panic in the middle of the stream.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use keel::loops::{record, LoopId, Schedule};
use keel::ThreadPool;

mod common;
use common::{counters, not_once, pool, schedules};

/// Instances per schedule and pool.
const INSTANCES: u64 = 60;

/// One instance of `schedule` over `n` iterations; checks exactly-once and
/// the chunk count, and, when `recorded`, the record's iteration count.
fn one_instance(
    pool: &ThreadPool,
    id: &'static str,
    schedule: &Schedule,
    n: u64,
    hints: &[f64],
    recorded: bool,
) {
    let hits: Vec<AtomicU8> = counters(n);
    let chunks = AtomicU64::new(0);
    let mut lp = pool
        .parallel(0..n)
        .schedule(schedule.clone())
        .workload(hints)
        .id(id);
    if recorded {
        lp = lp.recorded();
    }
    let summary = lp
        .try_for_each_chunk(|range| {
            chunks.fetch_add(1, Ordering::Relaxed);
            for i in range {
                hits[i as usize].fetch_add(1, Ordering::Relaxed);
            }
        })
        .unwrap_or_else(|e| panic!("{schedule}: {e}"));
    let bad = not_once(&hits);
    assert!(
        bad.is_empty(),
        "{schedule} N={n} P={} recorded={recorded}: {bad:?}",
        pool.threads()
    );
    assert_eq!(summary.iterations, n, "{schedule}");
    assert_eq!(
        summary.chunks,
        chunks.load(Ordering::Relaxed),
        "{schedule} N={n} P={} recorded={recorded}",
        pool.threads()
    );
    if recorded {
        assert!(summary.lib_percent.is_some(), "{schedule}");
        let rec = record(LoopId::named(id)).expect("a recorded loop has a record");
        assert_eq!(rec.last.thread_iterations.iter().sum::<u64>(), n);
    }
}

/// Every schedule, `INSTANCES` short instances each (lengths 0 to 40), every
/// seventh recorded, as loop `id`.
fn stream(pool: &ThreadPool, id: &'static str) {
    let hints: Vec<f64> = (0..64).map(|i| f64::from(i % 5 + 1)).collect();
    for name in schedules(true) {
        let schedule: Schedule = name.parse().unwrap();
        for k in 0..INSTANCES {
            let n = (k * 13) % 41;
            one_instance(pool, id, &schedule, n, &hints[..n as usize], k % 7 == 3);
        }
    }
}

#[test]
fn many_short_instances_of_every_schedule_run_each_iteration_once() {
    for threads in [1, 2, 3] {
        stream(&pool(threads), "short-loops");
    }
}

#[test]
fn short_instances_from_two_outside_threads_on_one_pool() {
    let pool = pool(3);
    std::thread::scope(|s| {
        for id in ["short-loops-a", "short-loops-b"] {
            let pool = &pool;
            s.spawn(move || stream(pool, id));
        }
    });
}

#[test]
fn a_panic_between_short_instances_leaves_the_next_ones_whole() {
    let pool = pool(2);
    for name in ["static", "dynamic", "guided", "af", "static-steal", "awf-b"] {
        let schedule: Schedule = name.parse().unwrap();
        for k in 0..20u64 {
            if k % 5 == 2 {
                let result = panic::catch_unwind(AssertUnwindSafe(|| {
                    pool.parallel(0..30u64)
                        .schedule(schedule.clone())
                        .for_each(|i| {
                            if i == 29 {
                                panic!("last iteration");
                            }
                        })
                }));
                let payload = result.expect_err(name);
                assert_eq!(payload.downcast_ref::<&str>(), Some(&"last iteration"));
            }
            one_instance(&pool, "short-panics", &schedule, 17 + k, &[], k % 4 == 0);
        }
    }
}
