use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::Workshare;
use crate::loops::{record, LoopError, LoopId, LoopSummary};

/// Runs one instance of `n` iterations under `spec` on `threads` plain
/// threads, the later ones arriving late, and returns each iteration's
/// execution count and the participants' results.
fn drive(
    spec: &str,
    id: &str,
    n: u64,
    threads: usize,
) -> (Vec<u32>, Vec<Result<Option<LoopSummary>, LoopError>>) {
    let counts: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
    let body = |_: usize, from: u64, to: u64| {
        for i in from..to {
            counts[i as usize].fetch_add(1, Ordering::Relaxed);
        }
    };
    let schedule = spec.parse().unwrap();
    let work =
        Workshare::new(LoopId::named(id.to_string()), &schedule, n, threads, &body).recorded();
    let results = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|me| {
                let work = &work;
                std::thread::Builder::new()
                    .spawn_scoped(s, move || {
                        std::thread::sleep(Duration::from_micros(200 * me as u64));
                        work.participate(me)
                    })
                    .unwrap()
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let counts = counts.into_iter().map(AtomicU32::into_inner).collect();
    (counts, results)
}

#[test]
fn foreign_threads_run_every_iteration_once_and_the_last_records() {
    for spec in ["static", "static,5", "dynamic,3", "guided", "af", "awf-b"] {
        let id = format!("foreign/{spec}");
        for instance in 1..=2u64 {
            let (counts, results) = drive(spec, &id, 1000, 4);
            assert!(counts.iter().all(|&c| c == 1), "{spec}: {counts:?}");
            let summaries: Vec<LoopSummary> =
                results.into_iter().filter_map(|r| r.unwrap()).collect();
            assert_eq!(summaries.len(), 1, "{spec}: one participant finishes");
            assert_eq!(summaries[0].iterations, 1000);
            assert_eq!(summaries[0].threads, 4);
            assert!(
                summaries[0].lib_percent.is_some_and(f64::is_finite),
                "{spec}"
            );
            let rec = record(LoopId::named(id.clone())).unwrap();
            assert_eq!(rec.instances, instance, "{spec}");
            assert_eq!(rec.last.thread_iterations.iter().sum::<u64>(), 1000);
            assert_eq!(rec.last.total_chunks(), summaries[0].chunks);
        }
    }
}

#[test]
fn a_participant_index_out_of_range_or_twice_is_an_error() {
    let body = |_: usize, _: u64, _: u64| {};
    let schedule = "dynamic".parse().unwrap();
    let work = Workshare::new(LoopId::named("foreign/bad-index"), &schedule, 10, 2, &body);
    assert_eq!(
        work.participate(2).unwrap_err(),
        LoopError::Participant {
            index: 2,
            threads: 2
        }
    );
    // Participant 0 runs everything left, participant 1 finishes.
    assert_eq!(work.participate(0), Ok(None));
    assert!(work.participate(0).is_err());
    let summary = work.participate(1).unwrap().unwrap();
    assert_eq!(summary.chunks, 10);
}

#[test]
fn a_schedule_that_cannot_plan_is_an_error_for_every_participant() {
    let body = |_: usize, _: u64, _: u64| panic!("nothing runs");
    let schedule = "binlpt".parse().unwrap();
    let work = Workshare::new(LoopId::named("foreign/no-hints"), &schedule, 10, 2, &body);
    assert!(matches!(
        work.participate(0),
        Err(LoopError::Schedule { .. })
    ));
    assert!(matches!(
        work.participate(1),
        Err(LoopError::Schedule { .. })
    ));
    let schedule = "static".parse().unwrap();
    let empty_team = Workshare::new(LoopId::named("foreign/none"), &schedule, 10, 0, &body);
    assert!(empty_team.participate(0).is_err());
}

/// Many instances whose participants arrive together (a barrier releases
/// them at once), so that preparing, claiming and leaving race: every
/// iteration runs once and exactly one participant gets the summary.
#[test]
fn stress_simultaneous_arrivals() {
    const THREADS: usize = 4;
    for spec in ["dynamic,1", "guided", "af", "static-steal"] {
        let schedule = spec.parse().unwrap();
        for _ in 0..100 {
            let n = 257u64;
            let counts: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
            let body = |_: usize, from: u64, to: u64| {
                for i in from..to {
                    counts[i as usize].fetch_add(1, Ordering::Relaxed);
                }
            };
            let id = LoopId::named(format!("foreign-stress/{spec}"));
            let work = Workshare::new(id, &schedule, n, THREADS, &body);
            let barrier = std::sync::Barrier::new(THREADS);
            let finished = std::thread::scope(|s| {
                let handles: Vec<_> = (0..THREADS)
                    .map(|me| {
                        let (work, barrier) = (&work, &barrier);
                        s.spawn(move || {
                            barrier.wait();
                            work.participate(me).unwrap().is_some()
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap())
                    .filter(|&last| last)
                    .count()
            });
            assert_eq!(finished, 1, "{spec}");
            assert!(
                counts.iter().all(|c| c.load(Ordering::Relaxed) == 1),
                "{spec}"
            );
        }
    }
}

/// Runs one pulled instance on `threads` plain threads that arrive
/// together; returns each iteration's count and how many participants got
/// the summary.
fn drive_pulled(spec: &str, id: &str, n: u64, threads: usize, recorded: bool) -> (Vec<u32>, usize) {
    let counts: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
    let schedule = spec.parse().unwrap();
    let mut work = super::Workshare::pulled(LoopId::named(id.to_string()), &schedule, n, threads);
    if recorded {
        work = work.recorded();
    }
    let work = std::sync::Arc::new(work);
    let barrier = std::sync::Barrier::new(threads);
    let finished = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|me| {
                let (work, barrier, counts) = (std::sync::Arc::clone(&work), &barrier, &counts);
                s.spawn(move || {
                    barrier.wait();
                    let mut cursor = work.join(me).unwrap();
                    while let Some(chunk) = cursor.next() {
                        assert!(chunk.start < chunk.end && chunk.end <= n, "{chunk:?}");
                        for i in chunk {
                            counts[i as usize].fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    // A cursor past its end stays there.
                    assert_eq!(cursor.next(), None);
                    cursor.leave().is_some()
                })
            })
            .collect();
        handles
            .into_iter()
            .filter(|_| true)
            .map(|h| h.join().unwrap())
            .filter(|&l| l)
            .count()
    });
    (
        counts.into_iter().map(AtomicU32::into_inner).collect(),
        finished,
    )
}

#[test]
fn pulled_participants_claim_every_iteration_once() {
    for spec in [
        "static",
        "static,7",
        "dynamic,1",
        "dynamic,3",
        "guided",
        "gss-llvm",
        "gac",
        "tss",
        "fac2",
        "mfac2",
        "static-steal",
        "af",
        "maf",
        "awf-b",
        "awf-e",
        "awf",
        "fsc",
        "tap",
        "bold",
        "auto",
        "auto,expert",
    ] {
        for (n, threads) in [(0u64, 3usize), (1, 3), (1000, 4), (257, 1)] {
            for round in 0..3 {
                let id = format!("pulled/{spec}");
                let (counts, finished) = drive_pulled(spec, &id, n, threads, round == 1);
                assert_eq!(finished, 1, "{spec} n={n} P={threads}");
                assert!(counts.iter().all(|&c| c == 1), "{spec} n={n}: {counts:?}");
            }
        }
    }
}

#[test]
fn a_recorded_pulled_instance_is_recorded_once_by_the_last() {
    let id = "pulled-record/dynamic";
    let (counts, finished) = drive_pulled("dynamic,5", id, 500, 3, true);
    assert_eq!((counts.len(), finished), (500, 1));
    let rec = record(LoopId::named(id)).unwrap();
    assert_eq!(rec.instances, 1);
    assert_eq!(rec.last.thread_iterations.iter().sum::<u64>(), 500);
    assert_eq!(rec.last.total_chunks(), 100);
}

#[test]
fn a_cursor_may_leave_early_or_be_dropped_and_the_last_still_records() {
    let schedule = "dynamic,2".parse().unwrap();
    let work = std::sync::Arc::new(
        super::Workshare::pulled(LoopId::named("pulled/early"), &schedule, 10, 3).recorded(),
    );
    let mut a = std::sync::Arc::clone(&work).join(0).unwrap();
    assert_eq!(a.next(), Some(0..2));
    assert_eq!(a.leave(), None, "cancelled: leaves after one chunk");
    assert!(matches!(
        std::sync::Arc::clone(&work).join(0),
        Err(LoopError::Participant {
            index: 0,
            threads: 3
        })
    ));
    drop(std::sync::Arc::clone(&work).join(1).unwrap());
    let mut c = std::sync::Arc::clone(&work).join(2).unwrap();
    let mut rest = 0;
    while let Some(chunk) = c.next() {
        rest += chunk.end - chunk.start;
    }
    assert_eq!(rest, 8);
    let summary = c.leave().expect("the last to leave records");
    assert_eq!(summary.iterations, 10);
    assert_eq!(summary.chunks, 5);
}

#[test]
fn a_renewed_workshare_runs_its_next_instance_exactly_once() {
    let schedules = ["static-steal", "af", "dynamic,3", "guided", "auto"];
    let first = "static".parse().unwrap();
    let mut work = super::Workshare::pulled(LoopId::named("pulled/renew"), &first, 100, 3);
    for (round, spec) in schedules.iter().cycle().take(15).enumerate() {
        let n = 50 + round as u64 * 37;
        work.renew(LoopId::named("pulled/renew"), &spec.parse().unwrap(), n);
        let shared = std::sync::Arc::new(work);
        let counts: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
        let last = std::thread::scope(|s| {
            let handles: Vec<_> = (0..3)
                .map(|me| {
                    let (shared, counts) = (std::sync::Arc::clone(&shared), &counts);
                    s.spawn(move || {
                        let mut cursor = shared.join(me).unwrap();
                        while let Some(chunk) = cursor.next() {
                            for i in chunk {
                                counts[i as usize].fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        cursor.leave().is_some()
                    })
                })
                .collect();
            handles
                .into_iter()
                .filter(|_| true)
                .map(|h| h.join().unwrap())
                .filter(|&l| l)
                .count()
        });
        assert_eq!(last, 1, "{spec}");
        assert!(
            counts.iter().all(|c| c.load(Ordering::Relaxed) == 1),
            "{spec} n={n}"
        );
        work = std::sync::Arc::into_inner(shared).expect("every cursor is gone");
        assert_eq!(work.threads(), 3);
    }
}

/// The interposer's way with a call site's workshare: cursors made in
/// boxes their threads keep and dropped when out of chunks, then
/// `renew_same_loop` for the next instance — the same size and schedule
/// (which keeps the preparation and plan), another size, another
/// schedule. Every instance runs each iteration once, and a participant
/// that joins twice in a renewed instance is refused as in a fresh one.
#[test]
fn a_workshare_renewed_for_the_same_loop_runs_each_instance_exactly_once() {
    let id = LoopId::named("pulled/renew-same");
    let steal = "static-steal".parse().unwrap();
    let dynamic = "dynamic,2".parse().unwrap();
    let rounds = [
        (&steal, 90),
        (&steal, 90),
        (&steal, 90),
        (&steal, 61),
        (&dynamic, 61),
        (&dynamic, 61),
        (&steal, 61),
    ];
    let mut work = super::Workshare::pulled(id, &steal, 90, 3);
    let mut boxes: Vec<Box<Option<super::Cursor>>> = (0..3).map(|_| Box::new(None)).collect();
    for (round, &(schedule, n)) in rounds.iter().enumerate() {
        work.renew_same_loop(schedule, n);
        let shared = std::sync::Arc::new(work);
        let counts: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
        std::thread::scope(|s| {
            for (me, place) in boxes.iter_mut().enumerate() {
                let (shared, counts) = (std::sync::Arc::clone(&shared), &counts);
                s.spawn(move || {
                    super::Workshare::join_into(shared, me, place).unwrap();
                    let cursor = (**place).as_mut().unwrap();
                    while let Some(chunk) = cursor.next_final_last() {
                        for i in chunk {
                            counts[i as usize].fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    **place = None;
                });
            }
        });
        assert!(
            counts.iter().all(|c| c.load(Ordering::Relaxed) == 1),
            "round {round}: {counts:?}"
        );
        assert_eq!(
            std::sync::Arc::clone(&shared).join(1).unwrap_err(),
            LoopError::Participant {
                index: 1,
                threads: 3
            },
            "round {round}: participant 1 already joined"
        );
        work = std::sync::Arc::into_inner(shared).expect("every cursor is gone");
    }
}

/// Two lean cursors under `dynamic,k`, taking turns on one thread: every
/// iteration is handed out once, the chunk that ends the loop is the last
/// its cursor hands out (`next_final_last`, as `lastprivate` needs), a
/// cursor past its end stays there, and the summary counts every chunk.
#[test]
fn lean_dynamic_cursors_end_at_the_chunk_that_ends_the_loop() {
    for (n, k) in [(10u64, 3u64), (9, 3), (7, 1), (1, 1), (1, 4), (0, 2)] {
        let schedule = format!("dynamic,{k}").parse().unwrap();
        let work = std::sync::Arc::new(super::Workshare::pulled(
            LoopId::named("pulled/lean-dynamic"),
            &schedule,
            n,
            2,
        ));
        let mut cursors = [
            std::sync::Arc::clone(&work).join(0).unwrap(),
            std::sync::Arc::clone(&work).join(1).unwrap(),
        ];
        let mut counts = vec![0u32; n as usize];
        let mut handed: [Vec<std::ops::Range<u64>>; 2] = [Vec::new(), Vec::new()];
        let mut done = [false, false];
        while !done.iter().all(|&d| d) {
            for (me, cursor) in cursors.iter_mut().enumerate() {
                match cursor.next_final_last() {
                    Some(chunk) => {
                        assert!(!done[me], "n={n} k={k}: a chunk after the end");
                        assert!(chunk.start < chunk.end && chunk.end <= n, "{chunk:?}");
                        for i in chunk.clone() {
                            counts[i as usize] += 1;
                        }
                        handed[me].push(chunk);
                    }
                    None => done[me] = true,
                }
            }
        }
        assert!(counts.iter().all(|&c| c == 1), "n={n} k={k}: {counts:?}");
        for (me, chunks) in handed.iter().enumerate() {
            if let Some(at) = chunks.iter().position(|c| c.end == n) {
                assert_eq!(at, chunks.len() - 1, "n={n} k={k}: participant {me}");
            }
        }
        for cursor in &mut cursors {
            assert_eq!(cursor.next_final_last(), None);
            assert_eq!(cursor.next(), None);
        }
        let [a, b] = cursors;
        assert!(a.leave().is_none());
        let summary = b.leave().expect("the last to leave gets the summary");
        assert_eq!(summary.iterations, n);
        assert_eq!(summary.chunks, n.div_ceil(k));
    }
}

/// An `auto` loop of a few microseconds renewed the interposer's way: its
/// exploited choice is leased, the leased instances run from the kept
/// preparation, and every iteration of every instance runs once; the
/// selection's timeline counts every instance once.
#[test]
fn leased_auto_instances_of_a_renewed_workshare_run_exactly_once() {
    let id = LoopId::named("pulled/leased-auto");
    let schedule: crate::loops::Schedule = "auto".parse().unwrap();
    let mut work = super::Workshare::pulled(id.clone(), &schedule, 16, 2);
    let instances = 600u64;
    for round in 0..instances {
        if round > 0 {
            // One size change midway ends the lease in force.
            let n = if round == instances / 2 { 17 } else { 16 };
            work.renew_same_loop(&schedule, n);
        }
        let n = if round == instances / 2 { 17 } else { 16 };
        let shared = std::sync::Arc::new(work);
        let counts: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
        std::thread::scope(|s| {
            for me in 0..2 {
                let (shared, counts) = (std::sync::Arc::clone(&shared), &counts);
                s.spawn(move || {
                    let mut cursor = shared.join(me).unwrap();
                    while let Some(chunk) = cursor.next() {
                        for i in chunk {
                            counts[i as usize].fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    drop(cursor.leave());
                });
            }
        });
        assert!(
            counts.iter().all(|c| c.load(Ordering::Relaxed) == 1),
            "instance {round}"
        );
        work = std::sync::Arc::into_inner(shared).expect("every cursor is gone");
    }
    let line = crate::loops::report()
        .into_iter()
        .find(|l| l.name == "pulled/leased-auto")
        .expect("auto keeps a timeline");
    let selection = line.selection.expect("auto");
    let counted: u64 = selection.runs.iter().map(|r| r.instances).sum();
    assert_eq!(counted, instances, "{:?}", selection.runs);
    let cost = selection.cost.expect("kept");
    // Instances of tens of microseconds (two threads spawned for each)
    // are measured once in a few once the search has settled; a search
    // whose budget one slow thread spawn spent holds its best schedule so
    // far, measured at every instance. Either way each instance is
    // measured or leased.
    let holding = selection
        .runs
        .last()
        .is_some_and(|r| r.reason == "provisional");
    assert!(
        cost.unmeasured_instances > 0 || holding,
        "{cost:?} {:?}",
        selection.runs
    );
    assert_eq!(
        line.instances + cost.unmeasured_instances,
        instances,
        "{cost:?}"
    );
}
