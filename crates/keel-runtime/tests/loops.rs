//! The loop context's contract: every iteration exactly once under every
//! schedule, adaptive schedules shift work off a slow worker, panics reach
//! the caller, nesting and oversubscription neither deadlock nor lose work.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use keel::loops::{record, LoopId, Schedule};
use keel::ThreadPool;
use proptest::prelude::*;

mod common;
use common::{counters, not_once, pool, schedules};

fn check_exactly_once(pool: &ThreadPool, schedule: &str, n: u64, chunk: Option<u64>) {
    let hits = counters(n);
    let mut lp = pool
        .parallel(0..n)
        .schedule(schedule.parse().unwrap())
        .id("exactly-once");
    if let Some(k) = chunk {
        lp = lp.chunk(k);
    }
    let summary = lp
        .try_for_each(|i| {
            hits[i as usize].fetch_add(1, Ordering::Relaxed);
        })
        .unwrap_or_else(|e| panic!("{schedule}: {e}"));
    let bad = not_once(&hits);
    assert!(
        bad.is_empty(),
        "{schedule} N={n} k={chunk:?} P={}: {bad:?}",
        pool.threads()
    );
    assert_eq!(summary.iterations, n);
}

#[test]
fn every_schedule_runs_every_iteration_once_on_edge_cases() {
    for threads in [1, 2, 3] {
        let pool = pool(threads);
        for schedule in &schedules(false) {
            for (n, chunk) in [
                (0, None),
                (1, None),
                (2, None),
                (5, Some(1)),
                (7, Some(100)),
                (1000, None),
                (1000, Some(7)),
            ] {
                check_exactly_once(&pool, schedule, n, chunk);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_shapes_run_every_iteration_once(
        schedule in prop::sample::select(schedules(false)),
        n in 0u64..3000,
        threads in 1usize..6,
        chunk in prop::option::of(1u64..64),
    ) {
        let pool = pool(threads);
        check_exactly_once(&pool, &schedule, n, chunk);
    }
}

#[test]
fn ranges_near_the_type_limits() {
    let pool = pool(2);
    let seen = AtomicUsize::new(0);
    pool.parallel(u64::MAX - 100..u64::MAX)
        .schedule("dynamic,7".parse().unwrap())
        .for_each(|i| {
            assert!(i >= u64::MAX - 100);
            seen.fetch_add(1, Ordering::Relaxed);
        });
    assert_eq!(seen.swap(0, Ordering::Relaxed), 100);
    pool.parallel(i64::MIN..i64::MIN + 50)
        .schedule("guided".parse().unwrap())
        .for_each(|i| {
            assert!(i < i64::MIN + 50);
            seen.fetch_add(1, Ordering::Relaxed);
        });
    assert_eq!(seen.swap(0, Ordering::Relaxed), 50);
    pool.parallel(-3i8..4)
        .schedule("static-steal".parse().unwrap())
        .for_each_chunk(|r| {
            seen.fetch_add(r.len(), Ordering::Relaxed);
        });
    assert_eq!(seen.load(Ordering::Relaxed), 7);
}

#[test]
fn bad_input_is_a_typed_error_and_runs_nothing() {
    let pool = pool(2);
    let ran = AtomicUsize::new(0);
    let body = |_: u32| {
        ran.fetch_add(1, Ordering::Relaxed);
    };
    let err = "bogus".parse::<Schedule>().unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("bogus") && message.contains("guided"),
        "{message}"
    );
    let err = pool
        .parallel(0u32..10)
        .schedule("dynamic".parse().unwrap())
        .chunk(0)
        .try_for_each(body)
        .unwrap_err();
    assert!(err.to_string().contains("chunk"), "{err}");
    assert!("dynamic,0".parse::<Schedule>().is_err());
    assert!("dynamic,x".parse::<Schedule>().is_err());
    assert_eq!(ran.load(Ordering::Relaxed), 0);
}

#[test]
fn a_panic_in_the_body_reaches_the_caller_and_the_pool_stays_usable() {
    let pool = pool(3);
    for schedule in ["static", "dynamic", "guided", "static-steal", "af"] {
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.parallel(0..100u32)
                .schedule(schedule.parse().unwrap())
                .for_each(|i| {
                    if i == 42 {
                        panic!("iteration 42");
                    }
                })
        }));
        let payload = result.expect_err(schedule);
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"iteration 42"));
        check_exactly_once(&pool, schedule, 500, None);
    }
}

#[test]
fn a_panic_in_the_body_of_a_try_form_reaches_the_caller_too() {
    let pool = pool(3);
    for schedule in ["static", "dynamic", "guided", "static-steal", "af"] {
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.parallel(0..100u32)
                .schedule(schedule.parse().unwrap())
                .try_for_each_chunk(|r| {
                    if r.contains(&42) {
                        panic!("chunk with 42");
                    }
                })
        }));
        let payload = result.expect_err(schedule);
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"chunk with 42"));
        check_exactly_once(&pool, schedule, 500, None);
    }
}

#[test]
fn code_errors_panic_in_the_plain_forms_with_the_loop_error_message() {
    let pool = pool(2);
    let weights = || {
        pool.parallel(0..100u32)
            .schedule("wf".parse().unwrap())
            .weights(vec![1.0; 5])
    };
    let typed = weights().try_for_each(|_| {}).unwrap_err().to_string();
    let payload = panic::catch_unwind(AssertUnwindSafe(|| weights().for_each(|_| {})))
        .expect_err("weights of the wrong length");
    assert_eq!(payload.downcast_ref::<String>(), Some(&typed));
}

#[test]
fn a_loop_inside_a_loop_runs_inline_and_completes() {
    let pool = pool(3);
    let total = AtomicUsize::new(0);
    pool.parallel(0..6u32)
        .schedule("dynamic".parse().unwrap())
        .for_each(|_| {
            pool.parallel(0..10u32)
                .schedule("guided".parse().unwrap())
                .for_each(|_| {
                    total.fetch_add(1, Ordering::Relaxed);
                });
        });
    assert_eq!(total.load(Ordering::Relaxed), 60);
}

#[test]
fn stress_with_four_times_more_threads_than_cores() {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let pool = ThreadPool::builder().threads(4 * cores).build().unwrap();
    for schedule in [
        "static",
        "dynamic,3",
        "guided",
        "static-steal",
        "awf-c",
        "maf",
    ] {
        for _ in 0..20 {
            check_exactly_once(&pool, schedule, 777, None);
        }
    }
}

#[test]
fn weights_of_the_wrong_length_are_a_typed_error() {
    let pool = pool(2);
    let err = pool
        .parallel(0..10u32)
        .schedule("wf".parse().unwrap())
        .weights(vec![1.0, 2.0, 3.0])
        .try_for_each(|_| {})
        .unwrap_err();
    assert!(err.to_string().contains('3'), "{err}");
    let err = pool
        .parallel(0..10u32)
        .schedule("wf".parse().unwrap())
        .weights(vec![1.0, f64::NAN])
        .try_for_each(|_| {})
        .unwrap_err();
    assert!(err.to_string().to_lowercase().contains("nan"), "{err}");
}

#[test]
fn each_call_site_keeps_its_own_record() {
    let pool = pool(2);
    let a = pool.parallel(0..10u32).for_each(|_| {});
    let b = pool.parallel(0..20u32).for_each(|_| {});
    assert_ne!(a.id, b.id);
    assert_eq!(record(a.id).unwrap().last.iterations, 10);
    assert_eq!(record(b.id).unwrap().last.iterations, 20);
    let named = pool.parallel(0..5u32).id("named").for_each(|_| {});
    assert_eq!(named.id, LoopId::named("named"));
    let rec = record(LoopId::named("named")).unwrap();
    assert_eq!(rec.last.thread_iterations.iter().sum::<u64>(), 5);
    assert_eq!(rec.last.finish.len(), 2);
}

#[test]
fn fixed_schedules_are_recorded_only_when_asked() {
    let pool = pool(2);
    for spec in ["static", "dynamic,2", "guided", "af"] {
        let schedule: keel::Schedule = spec.parse().unwrap();
        let lean_id = format!("lean/{spec}");
        let lean = pool
            .parallel(0..50u32)
            .schedule(schedule.clone())
            .id(lean_id.clone())
            .for_each(|_| {});
        // Nothing needed the record: no clock read, no record kept; the
        // summary still counts.
        assert_eq!(record(LoopId::named(lean_id)), None, "{spec}");
        assert!(lean.lib_percent.is_none() && lean.t_par.is_none(), "{spec}");
        assert!(lean.chunks >= 1, "{spec}: {lean:?}");
        assert_eq!(lean.iterations, 50);

        let kept_id = format!("kept/{spec}");
        for _ in 0..2 {
            let kept = pool
                .parallel(0..50u32)
                .schedule(schedule.clone())
                .id(kept_id.clone())
                .recorded()
                .for_each(|_| {});
            assert!(
                kept.lib_percent.is_some_and(f64::is_finite) && kept.t_par.is_some_and(|t| t > 0.0),
                "{spec}"
            );
        }
        let rec = record(LoopId::named(kept_id)).unwrap();
        assert_eq!(rec.instances, 2, "{spec}");
        assert_eq!(rec.last.schedule, schedule.to_string());
        assert_eq!(rec.last.thread_iterations.iter().sum::<u64>(), 50);
        assert_eq!(rec.last.finish.len(), 2);
        assert!(rec.last.finish.iter().all(|&f| f > 0.0), "{spec}: {rec:?}");
        assert!(rec.last.t_par >= rec.last.finish[1], "{spec}");
    }
}

#[test]
fn schedules_that_read_records_are_always_recorded() {
    let pool = pool(2);
    // `awf` reads its history, `fac` the iteration profile (both kept in
    // the record between instances), `auto` its measured finish times.
    for spec in ["awf", "fac", "auto"] {
        let id = format!("needs/{spec}");
        for _ in 0..3 {
            pool.parallel(0..64u32)
                .schedule(spec.parse().unwrap())
                .id(id.clone())
                .for_each(|_| {});
        }
        let rec = record(LoopId::named(id)).unwrap_or_else(|| panic!("{spec}"));
        assert_eq!(rec.instances, 3, "{spec}");
        assert_eq!(rec.last.finish.len(), 2, "{spec}");
    }
}

#[test]
fn names_with_equal_text_are_one_loop() {
    let pool = pool(2);
    for n in [10u32, 20] {
        let part = "shared";
        pool.parallel(0..n)
            .id(format!("{part}-name"))
            .for_each(|_| {});
    }
    let owned = format!("{}-name", "shared");
    let rec = record(LoopId::named(owned)).unwrap();
    assert_eq!(rec.instances, 2);
    assert_eq!(rec.last.iterations, 20);
    // A literal with the same text names the same loop.
    let summary = pool.parallel(0..30u32).id("shared-name").for_each(|_| {});
    assert_eq!(summary.id, LoopId::named(String::from("shared-name")));
    assert_eq!(record(summary.id).unwrap().instances, 3);
}

/// `for i in 5..2` runs nothing, and so does a parallel loop over it,
/// whatever its schedule.
#[test]
#[allow(clippy::reversed_empty_ranges)]
fn an_inverted_range_runs_nothing_under_every_schedule() {
    let pool = pool(3);
    for schedule in schedules(false) {
        let ran = AtomicUsize::new(0);
        let summary = pool
            .parallel(5u32..2)
            .schedule(schedule.parse().unwrap())
            .try_for_each(|_| {
                ran.fetch_add(1, Ordering::Relaxed);
            })
            .unwrap_or_else(|e| panic!("{schedule}: {e}"));
        assert_eq!(ran.load(Ordering::Relaxed), 0, "{schedule}");
        assert_eq!((summary.iterations, summary.chunks), (0, 0), "{schedule}");
        let chunks = pool
            .parallel(i64::MAX..i64::MIN)
            .schedule(schedule.parse().unwrap())
            .try_for_each_chunk(|r| {
                ran.fetch_add(r.count(), Ordering::Relaxed);
            })
            .unwrap_or_else(|e| panic!("{schedule}: {e}"));
        assert_eq!(ran.load(Ordering::Relaxed), 0, "{schedule}");
        assert_eq!(chunks.iterations, 0, "{schedule}");
    }
    assert_eq!(keel::for_each(10u8..1, |_| panic!("ran")).iterations, 0);
}

/// Iterations run by the slowed participant (the worker thread
/// `keel-worker-1` sleeps in each of its iterations).
fn iterations_of_slowed_worker(pool: &ThreadPool, schedule: &str, id: &'static str) -> u64 {
    let n = 400u64;
    for _ in 0..3 {
        // Several instances: AWF adapts between instances.
        let mut lp = pool
            .parallel(0..n)
            .schedule(schedule.parse().unwrap())
            .id(id)
            .recorded();
        if schedule == "wf" {
            // The user knows worker 1 is slow (LB4OMP's KMP_WEIGHTS).
            lp = lp.weights(vec![1.0, 0.25]);
        }
        lp.for_each(|_| {
            if std::thread::current().name() == Some("keel-worker-1") {
                std::thread::sleep(Duration::from_micros(200));
            } else {
                let until = Instant::now() + Duration::from_micros(20);
                while Instant::now() < until {
                    std::hint::spin_loop();
                }
            }
        });
    }
    record(LoopId::named(id)).unwrap().last.thread_iterations[1]
}

#[test]
fn adaptive_schedules_give_a_slowed_worker_less_than_static() {
    let pool = pool(2);
    let fixed = iterations_of_slowed_worker(&pool, "static", "slow-static");
    assert_eq!(fixed, 200);
    for (schedule, id) in [
        ("wf", "slow-wf"),
        ("awf", "slow-awf"),
        ("awf-b", "slow-awf-b"),
        ("awf-c", "slow-awf-c"),
        ("awf-d", "slow-awf-d"),
        ("awf-e", "slow-awf-e"),
        ("af", "slow-af"),
        ("maf", "slow-maf"),
        ("static-steal", "slow-static-steal"),
        ("bold", "slow-bold"),
    ] {
        let slowed = iterations_of_slowed_worker(&pool, schedule, id);
        assert!(
            slowed < fixed,
            "{schedule}: slowed worker ran {slowed} of 400 (static: {fixed})"
        );
    }
}
