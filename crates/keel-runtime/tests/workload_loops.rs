//! Workload-aware loops (ARTful §5.1.3, §5.3.2): `binlpt` and `greedy` as
//! loop schedules from the user's per-iteration hints, their assignment
//! computed once and reused until the hints change (multiloop support).

use std::sync::atomic::{AtomicU64, Ordering};

use keel::loops::{record, LoopError, LoopId};
use keel::ThreadPool;
use proptest::prelude::*;

mod common;
use common::{counters, not_once, pool};

fn hits_once(pool: &ThreadPool, schedule: &str, hints: &[f64], chunk: Option<u64>) {
    let n = hints.len() as u64;
    let hits = counters(n);
    let mut lp = pool
        .parallel(0..n)
        .schedule(schedule.parse().unwrap())
        .id("workload-exactly-once")
        .workload(hints);
    if let Some(k) = chunk {
        lp = lp.chunk(k);
    }
    lp.try_for_each(|i| {
        hits[i as usize].fetch_add(1, Ordering::Relaxed);
    })
    .unwrap_or_else(|e| panic!("{schedule}: {e}"));
    let bad = not_once(&hits);
    assert!(
        bad.is_empty(),
        "{schedule} N={n} k={chunk:?} P={}: {bad:?}",
        pool.threads()
    );
}

const WORKLOAD_SCHEDULES: [&str; 4] = ["binlpt", "binlpt:chunks=7", "greedy", "binlpt,3"];

#[test]
fn every_iteration_runs_once_on_edge_cases() {
    for threads in [1, 2, 3] {
        let pool = pool(threads);
        for schedule in WORKLOAD_SCHEDULES {
            for (n, chunk) in [
                (0, None),
                (1, None),
                (2, None),
                (7, Some(100)),
                (500, Some(7)),
            ] {
                let hints: Vec<f64> = (0..n).map(|i| ((i * 37) % 11) as f64).collect();
                hits_once(&pool, schedule, &hints, chunk);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_hints_run_every_iteration_once(
        schedule in prop::sample::select(&WORKLOAD_SCHEDULES[..]),
        hints in prop::collection::vec(0.0f64..100.0, 0..600),
        threads in 1usize..5,
        chunk in prop::option::of(1u64..40),
    ) {
        hits_once(&pool(threads), schedule, &hints, chunk);
    }
}

/// Runs loop `id` once with `hints` and returns its record's assignment count.
fn run(pool: &ThreadPool, schedule: &str, id: &str, hints: &[f64]) -> u64 {
    pool.parallel(0..hints.len())
        .schedule(schedule.parse().unwrap())
        .id(id.to_string())
        .workload(hints)
        .for_each(|_| {});
    record(LoopId::named(id.to_string())).unwrap().assignments
}

#[test]
fn the_assignment_is_reused_until_the_hints_change() {
    let pool = pool(2);
    for schedule in ["binlpt:chunks=16", "greedy"] {
        let id = &format!("reuse-{schedule}");
        let mut hints: Vec<f64> = (0..200).map(|i| (i % 13) as f64).collect();
        for _ in 0..5 {
            assert_eq!(run(&pool, schedule, id, &hints), 1, "{schedule}");
        }
        // Changed in place: same buffer, new values, new assignment.
        hints[3] += 1.0;
        assert_eq!(run(&pool, schedule, id, &hints), 2, "{schedule}");
        assert_eq!(run(&pool, schedule, id, &hints), 2, "{schedule}");
        // A different chunk is a different assignment.
        pool.parallel(0..200usize)
            .schedule(schedule.parse().unwrap())
            .id(id.clone())
            .chunk(4)
            .workload(&hints)
            .for_each(|_| {});
        assert_eq!(record(LoopId::named(id.clone())).unwrap().assignments, 3);
    }
}

/// Iteration 0 weighs as much as 100 others, and the hints say so: a
/// workload-aware schedule balances the *load*, so the thread holding it
/// runs far fewer iterations; `static` would split by count.
#[test]
fn the_hints_steer_the_assignment() {
    let pool = pool(2);
    let hints: Vec<f64> = (0..200).map(|i| if i == 0 { 100.0 } else { 1.0 }).collect();
    for schedule in ["binlpt:chunks=40", "greedy"] {
        let load = [AtomicU64::new(0), AtomicU64::new(0)];
        let iterations = [AtomicU64::new(0), AtomicU64::new(0)];
        let id = format!("steer-{schedule}");
        pool.parallel(0..200usize)
            .schedule(schedule.parse().unwrap())
            .id(id)
            .workload(&hints)
            .for_each_chunk(|range| {
                // Which thread runs a chunk: the assignment is static, so
                // each range belongs to one participant; record its loads.
                let me = usize::from(std::thread::current().name() == Some("keel-worker-1"));
                for i in range {
                    load[me].fetch_add(hints[i] as u64, Ordering::Relaxed);
                    iterations[me].fetch_add(1, Ordering::Relaxed);
                }
            });
        let (l0, l1) = (
            load[0].load(Ordering::Relaxed),
            load[1].load(Ordering::Relaxed),
        );
        assert_eq!(l0 + l1, 299);
        assert!(l0.abs_diff(l1) <= 10, "{schedule}: loads {l0} vs {l1}");
        let (i0, i1) = (
            iterations[0].load(Ordering::Relaxed),
            iterations[1].load(Ordering::Relaxed),
        );
        assert!(i0.abs_diff(i1) >= 80, "{schedule}: iterations {i0} vs {i1}");
    }
}

#[test]
fn missing_or_bad_hints_are_typed_errors_and_run_nothing() {
    let pool = pool(2);
    let ran = AtomicU64::new(0);
    let body = |_: u64| {
        ran.fetch_add(1, Ordering::Relaxed);
    };
    let no_hints = pool
        .parallel(0..10u64)
        .schedule("binlpt".parse().unwrap())
        .try_for_each(body);
    let message = no_hints.unwrap_err().to_string();
    assert!(message.contains(".workload("), "{message}");
    let short = [1.0; 9];
    let nan = [1.0, f64::NAN, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
    let negative = [1.0, 1.0, -2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
    for hints in [&short[..], &nan, &negative] {
        for schedule in ["binlpt", "greedy"] {
            let result = pool
                .parallel(0..10u64)
                .schedule(schedule.parse().unwrap())
                .workload(hints)
                .try_for_each(body);
            assert!(
                matches!(result, Err(LoopError::Schedule { .. })),
                "{schedule} {hints:?}: {result:?}"
            );
        }
    }
    assert_eq!(ran.load(Ordering::Relaxed), 0);
    // Other schedules ignore hints.
    pool.parallel(0..10u64)
        .schedule("dynamic".parse().unwrap())
        .workload(&short)
        .for_each(body);
    assert_eq!(ran.load(Ordering::Relaxed), 10);
}
