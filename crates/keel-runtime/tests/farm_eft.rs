//! The thread farm under `eft`: every item exactly once with and without
//! cost hints and told speeds, a slow worker gets less, bad speeds are
//! typed errors.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use keel::farm::{Farm, FarmError, Worker};

#[test]
fn every_item_runs_once_under_eft_hinted_or_not_told_or_measured() {
    for spec in ["eft", "eft:capacity=1", "eft:capacity=3"] {
        for workers in [1, 2, 5] {
            for told in [false, true] {
                for n in [0usize, 1, 7, 99, 1000] {
                    let mut b = Farm::builder().workers(workers).policy(spec);
                    if told {
                        b = b.speeds((0..workers).map(|w| 1.0 / (1 + w) as f64).collect());
                    }
                    let mut farm = b.build().unwrap();
                    let seen: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
                    let what = format!("{spec} p={workers} told={told} n={n}");
                    // Hints of every kind, bad ones included.
                    let hint = |&i: &usize| match i % 5 {
                        0 => f64::NAN,
                        1 => -1.0,
                        2 => f64::INFINITY,
                        k => k as f64,
                    };
                    let report = farm
                        .run_hinted(0..n, hint, |w: Worker, i| {
                            assert!(w.index < workers);
                            seen[i].fetch_add(1, Ordering::Relaxed);
                        })
                        .unwrap();
                    for (i, s) in seen.iter().enumerate() {
                        assert_eq!(s.load(Ordering::Relaxed), 1, "{what}: item {i}");
                    }
                    assert_eq!(report.items, n as u64, "{what}");
                    assert_eq!(report.per_worker.iter().sum::<u64>(), n as u64, "{what}");
                    // The plain forms too.
                    let mut got = Vec::new();
                    farm.run_collect(0..n, |_, i| i, |r| got.push(r)).unwrap();
                    got.sort_unstable();
                    assert_eq!(got, (0..n).collect::<Vec<_>>(), "{what}");
                }
            }
        }
    }
}

#[test]
fn told_speeds_and_hints_keep_the_slow_worker_idle_when_it_finishes_last() {
    // Speeds [1, 0.1], costs 3, 2, 1: the slow worker would finish any of
    // them after 10; the fast one finishes all three by 6.
    let mut farm = Farm::builder()
        .workers(2)
        .policy("eft")
        .speeds(vec![1.0, 0.1])
        .build()
        .unwrap();
    let report = farm
        .run_hinted([3.0, 2.0, 1.0], |&c: &f64| c, |_, _| {})
        .unwrap();
    assert_eq!(report.per_worker, [3, 0]);
    let mut rr = Farm::builder()
        .workers(2)
        .policy("rr")
        .speeds(vec![1.0, 0.1])
        .build()
        .unwrap();
    assert_eq!(
        rr.run([3.0, 2.0, 1.0], |_, _| {}).unwrap().per_worker,
        [2, 1]
    );
}

#[test]
fn measured_speeds_send_less_to_a_slow_worker() {
    // Worker 1 is twenty times slower (sleeps, so that a loaded machine
    // slows both alike). Bounded queues let eft measure while it sends.
    let slow = |w: Worker, _: u32| {
        let sleep = if w.index == 1 { 1000 } else { 50 };
        std::thread::sleep(Duration::from_micros(sleep));
    };
    let mut farm = Farm::builder()
        .workers(2)
        .policy("eft:capacity=2")
        .build()
        .unwrap();
    let eft = farm.run(0..1000u32, slow).unwrap();
    assert!(
        eft.per_worker[0] > 2 * eft.per_worker[1],
        "{:?}",
        eft.per_worker
    );
}

#[test]
fn bad_speeds_are_typed_errors() {
    let build = |speeds: Vec<f64>| {
        Farm::builder()
            .workers(2)
            .policy("eft")
            .speeds(speeds)
            .build()
    };
    assert!(matches!(
        build(vec![1.0, 2.0, 3.0]),
        Err(FarmError::SpeedCount {
            speeds: 3,
            workers: 2
        })
    ));
    for bad in [f64::NAN, 0.0, -1.0, f64::INFINITY] {
        match build(vec![1.0, bad]) {
            Err(FarmError::BadSpeed { worker: 1, speed }) => {
                assert!(speed.is_nan() || speed == bad)
            }
            other => panic!("{bad}: {other:?}"),
        }
    }
    assert!(matches!(
        Farm::builder().workers(2).policy("eft:capacity=0").build(),
        Err(FarmError::ZeroCapacity)
    ));
    assert!(matches!(
        Farm::builder().workers(2).policy("eft:window=2").build(),
        Err(FarmError::Policy(_))
    ));
    let e = build(vec![1.0]).unwrap_err().to_string();
    assert!(e.contains("1 worker speeds given for 2 workers"), "{e}");
}
