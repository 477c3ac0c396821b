use super::*;
use crate::ThreadPool;
use std::sync::atomic::AtomicU32;

fn pool(threads: usize) -> ThreadPool {
    ThreadPool::builder()
        .threads(threads)
        .pin(false)
        .build()
        .unwrap()
}

/// Every participant owns potential tasks of varied sizes, then steals
/// until all are done; every index of every task must run exactly once.
fn stress(threads: usize, expose: &str, rounds: usize) -> WorkerStats {
    let pool = pool(threads);
    let tasks = Tasks::new(threads, expose).unwrap();
    let sizes = [0usize, 1, 3, 7, 16, 99, 1000];
    for round in 0..rounds {
        let hits: Vec<Vec<AtomicU32>> = (0..threads * sizes.len())
            .map(|t| {
                (0..sizes[t % sizes.len()])
                    .map(|_| AtomicU32::new(0))
                    .collect()
            })
            .collect();
        let running = AtomicUsize::new(threads);
        pool.region(|team| {
            let worker = tasks.worker(team.index);
            for (k, &n) in sizes.iter().enumerate() {
                let cells = &hits[team.index * sizes.len() + k];
                let chunks = 1 + (round + k) % 11;
                let s = worker.for_each_with_chunks(0..n, chunks, |i| {
                    // Uneven work so that thieves find chunks to take.
                    if (i + team.index).is_multiple_of(5) {
                        std::hint::black_box((0..200).sum::<u64>());
                    }
                    cells[i].fetch_add(1, Ordering::Relaxed);
                });
                assert!(s.stolen <= s.exposed && s.exposed <= s.chunks);
            }
            running.fetch_sub(1, Ordering::AcqRel);
            worker.steal_until(|| running.load(Ordering::Acquire) == 0);
        });
        for (t, cells) in hits.iter().enumerate() {
            for (i, c) in cells.iter().enumerate() {
                assert_eq!(
                    c.load(Ordering::Relaxed),
                    1,
                    "task {t} index {i} round {round}"
                );
            }
        }
    }
    assert_eq!(tasks.idle(), 0);
    tasks.totals()
}

#[test]
fn every_chunk_runs_exactly_once_under_heavy_stealing() {
    for threads in [1, 2, 3, 4] {
        let totals = stress(threads, "all", 40);
        if threads > 1 {
            assert_eq!(totals.exposed, totals.chunks, "`all` exposes everything");
        }
    }
    stress(3, "history-idle", 40);
    stress(2, "idle", 20);
    stress(2, "history:history=2", 20);
}

#[test]
fn one_owner_and_many_thieves_share_a_long_task() {
    let threads = 4;
    let pool = pool(threads);
    let tasks = Tasks::new(threads, "all").unwrap();
    let hits: Vec<AtomicU32> = (0..10_000).map(|_| AtomicU32::new(0)).collect();
    let running = AtomicUsize::new(threads);
    let mut summary = TaskSummary::default();
    let summary_ref = Mutex::new(&mut summary);
    pool.region(|team| {
        let worker = tasks.worker(team.index);
        if team.index == 0 {
            let s = worker.for_each_with_chunks(0..hits.len(), MAX_CHUNKS, |i| {
                std::hint::black_box((0..500).sum::<u64>());
                hits[i].fetch_add(1, Ordering::Relaxed);
            });
            **summary_ref.lock().unwrap() = s;
        }
        running.fetch_sub(1, Ordering::AcqRel);
        worker.steal_until(|| running.load(Ordering::Acquire) == 0);
    });
    assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
    assert_eq!(summary.chunks, MAX_CHUNKS);
    assert_eq!(summary.exposed, MAX_CHUNKS);
    let stats = tasks.take_stats();
    let steals: usize = stats.iter().map(|s| s.steals).sum();
    assert_eq!(steals, summary.stolen);
    assert_eq!(stats[0].stolen_from, summary.stolen);
    assert!(tasks
        .take_stats()
        .iter()
        .all(|s| *s == WorkerStats::default()));
}

#[test]
fn none_exposes_nothing_and_runs_in_order() {
    let tasks = Tasks::new(2, "none").unwrap();
    let worker = tasks.worker(0);
    let seen = Mutex::new(Vec::new());
    let s = worker.for_each(5..25, |i| seen.lock().unwrap().push(i));
    assert_eq!(s.exposed, 0);
    assert_eq!(s.chunks, 2 * DEFAULT_CHUNKS_PER_WORKER);
    assert_eq!(seen.into_inner().unwrap(), (5..25).collect::<Vec<_>>());
    assert_eq!(
        worker.for_each(3..3, |_| panic!("empty")),
        TaskSummary::default()
    );
}

#[test]
fn a_lone_owner_pops_back_its_exposed_chunks() {
    // Nobody steals: the owner runs the exposed chunks itself.
    let tasks = Tasks::new(2, "all").unwrap();
    let worker = tasks.worker(1);
    let sum = AtomicUsize::new(0);
    let s = worker.for_each_with_chunks(0..100, 10, |i| {
        sum.fetch_add(i, Ordering::Relaxed);
    });
    assert_eq!(sum.into_inner(), 4950);
    assert_eq!((s.chunks, s.exposed, s.stolen), (10, 10, 0));
}

#[test]
fn a_panic_in_a_chunk_reaches_the_owner_and_the_pool_stays_usable() {
    let threads = 3;
    let pool = pool(threads);
    let tasks = Tasks::new(threads, "all").unwrap();
    for _ in 0..20 {
        let running = AtomicUsize::new(threads);
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.region(|team| {
                let worker = tasks.worker(team.index);
                // The owner counts down even when its task panics, as
                // `keel::objects` does, so that thieves stop.
                let owned = panic::catch_unwind(AssertUnwindSafe(|| {
                    if team.index == 0 {
                        worker.for_each_with_chunks(0..640, 64, |i| {
                            std::hint::black_box((0..300).sum::<u64>());
                            if i == 600 {
                                panic!("chunk failed");
                            }
                        });
                    }
                }));
                running.fetch_sub(1, Ordering::AcqRel);
                worker.steal_until(|| running.load(Ordering::Acquire) == 0);
                if let Err(payload) = owned {
                    panic::resume_unwind(payload);
                }
            })
        }));
        let payload = result.unwrap_err();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"chunk failed"));
        assert_eq!(tasks.idle(), 0);
    }
    // The pool and the deques still work.
    let sum = AtomicUsize::new(0);
    let running = AtomicUsize::new(threads);
    pool.region(|team| {
        let worker = tasks.worker(team.index);
        worker.for_each(0..100, |i| {
            sum.fetch_add(i, Ordering::Relaxed);
        });
        running.fetch_sub(1, Ordering::AcqRel);
        worker.steal_until(|| running.load(Ordering::Acquire) == 0);
    });
    assert_eq!(sum.into_inner(), threads * 4950);
}

#[test]
fn bad_input_is_typed() {
    assert_eq!(Tasks::new(0, "all").unwrap_err(), TasksError::NoWorkers);
    assert!(matches!(
        Tasks::new(2, "often"),
        Err(TasksError::Expose(PolicyError::UnknownPolicy { .. }))
    ));
}

/// Runs 30 potential tasks whose owner decides before the other worker goes
/// idle (so the first decision of the `idle` scheme exposes nothing);
/// checks every index ran exactly once and returns the chunks exposed.
fn idle_mid_task(expose: &str) -> usize {
    let pool = pool(2);
    let tasks = Tasks::new(2, expose).unwrap();
    let mut exposed = 0;
    for round in 0..30 {
        let n = 64 + round;
        let hits: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
        let started = AtomicU32::new(0);
        let running = AtomicU32::new(2);
        let summary = std::sync::Mutex::new(TaskSummary::default());
        pool.region(|team| {
            let worker = tasks.worker(team.index);
            if team.index == 0 {
                let s = worker.for_each(0..n, |i| {
                    // The decision is made: let the other worker go idle.
                    started.store(1, Ordering::Release);
                    hits[i].fetch_add(1, Ordering::Relaxed);
                    std::thread::sleep(std::time::Duration::from_micros(50));
                });
                *summary.lock().unwrap() = s;
            } else {
                while started.load(Ordering::Acquire) == 0 {
                    std::hint::spin_loop();
                }
            }
            running.fetch_sub(1, Ordering::AcqRel);
            worker.steal_until(|| running.load(Ordering::Acquire) == 0);
        });
        for (i, h) in hits.iter().enumerate() {
            assert_eq!(
                h.load(Ordering::Relaxed),
                1,
                "{expose} round {round}: index {i}"
            );
        }
        let s = *summary.lock().unwrap();
        assert!(s.exposed <= s.chunks && s.stolen <= s.exposed, "{s:?}");
        exposed += s.exposed;
    }
    exposed
}

/// A worker that goes idle after the owner decided still gets work: the
/// owner exposes the idle worker's share of what it still holds between its
/// chunks (late exposure); with `late=off` nothing is ever exposed.
#[test]
fn late_exposure_feeds_a_worker_that_goes_idle_mid_task() {
    assert_eq!(idle_mid_task("idle:late=off"), 0);
    assert!(idle_mid_task("idle") > 0, "late exposure never happened");
}
