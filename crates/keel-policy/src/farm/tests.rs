//! The farm policies on scripted queues: golden dispatch sequences, the
//! level-reading bound, errors, spec round trips, and a virtual-time farm
//! that checks each policy against the paper's model (Eq. 2).

use std::collections::VecDeque;

use super::*;

fn started(text: &str, workers: usize, capacity: Option<usize>) -> Box<dyn Dispatch> {
    let mut policy = parse(text).unwrap();
    policy
        .start(&FarmConfig::new(workers, capacity).unwrap())
        .unwrap();
    policy
}

/// Drives `policy` for `n` items on `view`, markers always reached, and
/// returns the workers chosen.
fn drive(policy: &mut dyn Dispatch, view: &mut ScriptedQueues, n: usize) -> Vec<usize> {
    view.reached = u64::MAX;
    (0..n)
        .map(|_| {
            view.apply(policy.next(view))
                .expect("markers are reached and queues unbounded")
        })
        .collect()
}

#[test]
fn rr_is_strict_round_robin_and_skips_full_queues() {
    let mut rr = started("rr", 3, None);
    let mut view = ScriptedQueues::new(3);
    assert_eq!(drive(rr.as_mut(), &mut view, 7), [0, 1, 2, 0, 1, 2, 0]);
    // Bounded at 2: worker 1 is full, so it is skipped.
    let mut rr = started("rr", 3, Some(2));
    let mut view = ScriptedQueues::new(3);
    view.capacity = Some(2);
    view.levels = vec![0, 2, 1];
    assert_eq!(rr.next(&view), Decision::Send(0));
    assert_eq!(rr.next(&view), Decision::Send(2));
    assert_eq!(rr.next(&view), Decision::Send(0));
    view.levels = vec![2, 2, 2];
    assert_eq!(rr.next(&view), Decision::WaitForRoom);
    assert_eq!(view.level_reads(), 0, "rr never reads levels");
}

#[test]
fn on_demand_asks_for_bounded_queues_and_goes_where_there_is_room() {
    let mut od = started("on-demand", 2, None);
    assert_eq!(od.capacity(), Some(1));
    assert_eq!(parse("on-demand:capacity=2").unwrap().capacity(), Some(2));
    let mut view = ScriptedQueues::new(2);
    view.capacity = Some(1);
    assert_eq!(view.apply(od.next(&view)), Some(0));
    assert_eq!(view.apply(od.next(&view)), Some(1));
    assert_eq!(od.next(&view), Decision::WaitForRoom);
    view.levels[1] = 0; // worker 1 took its item
    assert_eq!(view.apply(od.next(&view)), Some(1));
}

#[test]
fn shortest_queue_reads_every_level_and_rotates_ties() {
    let mut sq = started("shortest-queue", 3, None);
    let mut view = ScriptedQueues::new(3);
    view.levels = vec![5, 2, 2];
    assert_eq!(sq.next(&view), Decision::Send(1));
    assert_eq!(sq.next(&view), Decision::Send(2), "ties rotate");
    view.levels = vec![0, 0, 0];
    assert_eq!(sq.next(&view), Decision::Send(0));
    assert!(view.level_reads() >= 4);
}

/// The golden sequence of Fig. 5 with CHUNK_SIZE 6, NEAR_END 2, two
/// workers: a round-robin first block with its marker after item 4 (two
/// items remain), the throttle, the recorded levels [1, 4] levelled by
/// three items to worker 0, then round-robin again.
#[test]
fn arrs_golden_sequence() {
    let mut arrs = started("arrs:chunk=6,near-end=2", 2, None);
    let mut view = ScriptedQueues::new(2);
    let mut got = Vec::new();
    for _ in 0..7 {
        got.push(arrs.next(&view));
    }
    use Decision::*;
    assert_eq!(
        got,
        [
            Send(0),
            Send(1),
            Send(0),
            Send(1),
            SendAndMark {
                worker: 0,
                block: 1
            },
            Send(1),
            WaitForMarker(1),
        ]
    );
    assert_eq!(
        view.level_reads(),
        0,
        "the first block is plain round-robin"
    );
    assert_eq!(arrs.next(&view), WaitForMarker(1), "still throttled");
    // Worker 0 reached marker 1 with one item left; worker 1 has four.
    view.reached = 1;
    view.levels = vec![1, 4];
    let mut got = Vec::new();
    for _ in 0..7 {
        got.push(arrs.next(&view));
    }
    assert_eq!(
        got,
        [
            Send(0),
            Send(0),
            Send(0),
            Send(1),
            SendAndMark {
                worker: 0,
                block: 2
            },
            Send(1),
            WaitForMarker(2),
        ]
    );
    assert_eq!(view.level_reads(), 2, "one recording: each level once");
}

#[test]
fn arrs_levels_the_recorded_differences_before_round_robin() {
    let mut arrs = started("arrs:chunk=10,near-end=3", 3, None);
    let mut view = ScriptedQueues::new(3);
    view.reached = u64::MAX;
    for _ in 0..10 {
        arrs.next(&view);
    }
    view.levels = vec![6, 2, 0];
    let seq: Vec<usize> = (0..10)
        .map(|_| arrs.next(&view).worker().unwrap())
        .collect();
    // Deficits [0, 4, 6]: worker 2 first, then whichever is lower, ties to
    // the lowest index, until both reach 6; then round-robin after the last.
    // Here the deficits (10) fill the whole block.
    assert_eq!(seq, [2, 2, 1, 2, 1, 2, 1, 2, 1, 2]);
    view.levels = vec![3, 3, 1];
    let seq: Vec<usize> = (0..10)
        .map(|_| arrs.next(&view).worker().unwrap())
        .collect();
    // Deficits [0, 0, 2], then round-robin after worker 2.
    assert_eq!(seq, [2, 2, 0, 1, 2, 0, 1, 2, 0, 1]);
}

#[test]
fn arrs_marker_placement_follows_near_end() {
    for (chunk, near_end, mark_after) in [(300, 8, 292), (10, 10, 0), (10, 50, 0), (5, 1, 4)] {
        let mut arrs = started(&format!("arrs:chunk={chunk},near-end={near_end}"), 2, None);
        let view = ScriptedQueues::new(2);
        let decisions: Vec<Decision> = (0..chunk).map(|_| arrs.next(&view)).collect();
        let marks: Vec<usize> = (0..chunk)
            .filter(|&i| matches!(decisions[i], Decision::SendAndMark { block: 1, .. }))
            .collect();
        assert_eq!(marks, [mark_after], "chunk {chunk} near-end {near_end}");
    }
    // Default NEAR_END is 4 × workers.
    let mut arrs = Arrs::new(300, None).unwrap();
    arrs.start(&FarmConfig::new(5, None).unwrap()).unwrap();
    assert_eq!(arrs.near_end(), 20);
}

#[test]
fn arrs_reads_levels_at_most_n_over_chunk_plus_one_times() {
    for (chunk, workers, n) in [
        (300, 2, 16_000),
        (300, 16, 1_000),
        (7, 3, 100),
        (1, 4, 50),
        (50, 2, 49),
    ] {
        let mut arrs = Arrs::new(chunk, None).unwrap();
        arrs.start(&FarmConfig::new(workers, None).unwrap())
            .unwrap();
        let mut view = ScriptedQueues::new(workers);
        drive(&mut arrs, &mut view, n);
        let sweeps = view.level_reads() / workers as u64;
        assert_eq!(view.level_reads() % workers as u64, 0);
        assert!(
            sweeps <= (n / chunk) as u64 + 1,
            "{sweeps} sweeps for n={n}, chunk={chunk}"
        );
        assert_eq!(sweeps, n.div_ceil(chunk) as u64 - 1);
        assert_eq!(arrs.recordings(), sweeps);
    }
}

#[test]
fn arrs_with_bounded_queues_waits_for_room_without_counting() {
    let mut arrs = started("arrs:chunk=4,near-end=1", 2, Some(1));
    let mut view = ScriptedQueues::new(2);
    view.capacity = Some(1);
    assert_eq!(view.apply(arrs.next(&view)), Some(0));
    assert_eq!(view.apply(arrs.next(&view)), Some(1));
    assert_eq!(arrs.next(&view), Decision::WaitForRoom);
    view.levels = vec![0, 1];
    assert_eq!(arrs.next(&view), Decision::Send(0));
}

#[test]
fn arrs_adaptive_starts_short_and_sizes_blocks_from_ready_items() {
    let mut a = started("arrs-adaptive", 2, None);
    let mut view = ScriptedQueues::new(2);
    view.ready = Some(10_000);
    // First block: min-block = 2 × workers = 4 items, marker on the first
    // (NEAR_END 8 >= 4).
    let first: Vec<Decision> = (0..5).map(|_| a.next(&view)).collect();
    assert_eq!(
        first[0],
        Decision::SendAndMark {
            worker: 0,
            block: 1
        }
    );
    assert_eq!(first[4], Decision::WaitForMarker(1));
    view.reached = u64::MAX;
    // Then blocks double while ready / 8 is larger, up to CHUNK_SIZE: the
    // block numbers of the markers show the sizes 8, 16, ..., 256, 300.
    let mut marks = Vec::new();
    for i in 0..2000 {
        if let Decision::SendAndMark { block, .. } = a.next(&view) {
            marks.push((block, i));
        }
    }
    // Sizes 8, 16, 32, ..., 256, then 300: block k's marker follows its
    // item `size - NEAR_END` (NEAR_END = 8).
    let expected: Vec<(u64, usize)> = vec![
        (2, 0),
        (3, 16),
        (4, 48),
        (5, 112),
        (6, 240),
        (7, 496),
        (8, 796),
        (9, 1096),
    ];
    assert_eq!(&marks[..8], &expected[..]);
    // Few ready items give small blocks again.
    let mut b = ArrsAdaptive::new(300, None, 8, None).unwrap();
    b.start(&FarmConfig::new(2, None).unwrap()).unwrap();
    assert_eq!(b.block_size(Some(10_000), 4), 8);
    assert_eq!(b.block_size(Some(10_000), 200), 300);
    assert_eq!(b.block_size(Some(80), 300), 10);
    assert_eq!(b.block_size(Some(3), 300), 4);
    assert_eq!(b.block_size(None, 300), 300);
}

#[test]
fn bad_parameters_are_typed_errors() {
    assert_eq!(parse("arrs:chunk=0").unwrap_err(), FarmError::ZeroChunk);
    assert_eq!(
        parse("arrs:near-end=0").unwrap_err(),
        FarmError::ZeroNearEnd
    );
    assert_eq!(
        parse("arrs-adaptive:chunk=0").unwrap_err(),
        FarmError::ZeroChunk
    );
    assert_eq!(
        parse("on-demand:capacity=0").unwrap_err(),
        FarmError::ZeroCapacity
    );
    assert_eq!(
        FarmConfig::new(0, None).unwrap_err(),
        FarmError::ZeroWorkers
    );
    assert_eq!(
        FarmConfig::new(2, Some(0)).unwrap_err(),
        FarmError::ZeroCapacity
    );
    let mut rr = parse("rr").unwrap();
    let bad = FarmConfig {
        workers: 0,
        capacity: None,
    };
    assert_eq!(rr.start(&bad).unwrap_err(), FarmError::ZeroWorkers);
    assert!(matches!(
        parse("rr:chunk=3"),
        Err(FarmError::Spec(PolicyError::UnknownParameter { .. }))
    ));
    assert!(matches!(
        parse("arrs:chunk=x"),
        Err(FarmError::Spec(PolicyError::InvalidParameter { .. }))
    ));
    let unknown = parse("fifo").unwrap_err().to_string();
    for name in NAMES {
        assert!(unknown.contains(name), "{unknown}");
    }
    // Through the generic registry the same cases are PolicyErrors.
    let r = registry();
    assert!(matches!(
        r.build("arrs:chunk=0"),
        Err(PolicyError::InvalidParameter { .. })
    ));
    assert!(FarmError::ZeroChunk.to_string().contains("CHUNK_SIZE"));
}

#[test]
fn registry_holds_the_design_names_and_specs_round_trip() {
    let r = registry();
    assert_eq!(r.names(), NAMES.map(String::from));
    for text in [
        "rr",
        "arrs",
        "arrs:chunk=100",
        "arrs:chunk=100,near-end=3",
        "arrs-adaptive",
        "arrs-adaptive:chunk=200,min-block=3,divisor=4,near-end=5",
        "on-demand",
        "on-demand:capacity=2",
        "shortest-queue",
        "eft",
        "eft:capacity=4",
    ] {
        let built = parse(text).unwrap();
        assert_eq!(built.spec().to_string(), text);
        assert_eq!(r.build(text).unwrap().spec().to_string(), text);
    }
}

/// A farm in virtual time: the emitter is instantaneous, worker `w` takes
/// `cost[w]` per item, markers take no time. Returns the makespan.
fn simulate(spec: &str, cost: &[f64], n: usize) -> f64 {
    let p = cost.len();
    let mut policy = parse(spec).unwrap();
    let capacity = policy.capacity();
    policy
        .start(&FarmConfig::new(p, capacity).unwrap())
        .unwrap();
    // `None` = an item, `Some(b)` = marker b.
    let mut queues: Vec<VecDeque<Option<u64>>> = vec![VecDeque::new(); p];
    let mut free_at = vec![0.0f64; p];
    let mut view = ScriptedQueues::new(p);
    view.capacity = capacity;
    let (mut t, mut left) = (0.0f64, n);
    loop {
        // The emitter hands out what it may at time t.
        while left > 0 {
            for (level, q) in view.levels.iter_mut().zip(&queues) {
                *level = q.len();
            }
            view.ready = Some(left);
            let decision = policy.next(&view);
            match decision {
                Decision::Send(w) => queues[w].push_back(None),
                Decision::SendAndMark { worker, block } => {
                    queues[worker].push_back(None);
                    for q in &mut queues {
                        if !q.iter().any(Option::is_some) {
                            q.push_back(Some(block));
                        }
                    }
                }
                Decision::WaitForRoom | Decision::WaitForMarker(_) => break,
            }
            left -= 1;
        }
        // Idle workers take their next item; markers pass at once.
        let mut marker_seen = false;
        for w in 0..p {
            while free_at[w] <= t {
                match queues[w].pop_front() {
                    Some(Some(b)) => {
                        view.reached = view.reached.max(b);
                        marker_seen = true;
                    }
                    Some(None) => free_at[w] = t + cost[w],
                    None => break,
                }
            }
        }
        if marker_seen {
            continue;
        }
        if left == 0 && queues.iter().all(|q| q.iter().all(Option::is_some)) {
            return free_at.iter().copied().fold(t, f64::max);
        }
        let next = free_at
            .iter()
            .copied()
            .filter(|&f| f > t)
            .fold(f64::INFINITY, f64::min);
        assert!(
            next.is_finite(),
            "{spec}: deadlock at t={t} with {left} items left"
        );
        t = next;
    }
}

#[test]
fn virtual_farm_matches_the_model_on_a_fast_worker() {
    // Experiment (b): two workers, one s = 6.5 times faster; Eq. 2 gives
    // S = (1 + 6.5) / 2 = 3.75.
    let cost = [1.0, 1.0 / 6.5];
    let model = (1.0 + 6.5) / 2.0;
    for n in [1000, 4000, 16_000] {
        let t_rr = simulate("rr", &cost, n);
        let s = |spec: &str| t_rr / simulate(spec, &cost, n);
        let (arrs, adaptive, sq) = (s("arrs"), s("arrs-adaptive"), s("shortest-queue"));
        let od = s("on-demand");
        eprintln!(
            "n={n}: arrs {:.3} adaptive {:.3} sq {:.3} od {:.3} of model",
            arrs / model,
            adaptive / model,
            sq / model,
            od / model
        );
        // An emitter that outpaces the workers fills unbounded queues
        // evenly: exact levels at dispatch time are round-robin's counts.
        assert!((sq - 1.0).abs() < 0.05, "shortest-queue {sq}");
        assert!(od > 1.5, "on-demand balances");
        if n >= 4000 {
            assert!(adaptive / model >= 0.90, "n={n}: arrs-adaptive {adaptive}");
        }
        if n >= 16_000 {
            assert!(arrs / model >= 0.90, "n={n}: arrs {arrs}");
            assert!(adaptive / model >= 0.95, "n={n}: arrs-adaptive {adaptive}");
        }
    }
    // Uniform workers: ARRS costs nothing.
    let uniform = [1.0, 1.0, 1.0];
    let t_rr = simulate("rr", &uniform, 3000);
    assert!((t_rr / simulate("arrs", &uniform, 3000) - 1.0).abs() < 1e-9);
}

#[test]
fn every_policy_hands_out_every_item_on_the_virtual_farm() {
    for spec in [
        "rr",
        "arrs",
        "arrs:chunk=7,near-end=30",
        "arrs-adaptive",
        "on-demand",
        "on-demand:capacity=3",
        "shortest-queue",
        "eft",
        "eft:capacity=2",
    ] {
        for p in [1, 2, 5] {
            let cost: Vec<f64> = (0..p).map(|w| 1.0 + w as f64).collect();
            for n in [0, 1, 299, 301, 1000] {
                let t = simulate(spec, &cost, n);
                assert!(t >= 0.0 && t.is_finite(), "{spec} p={p} n={n}");
            }
        }
    }
}
