use proptest::prelude::*;

use super::*;
use crate::error::PolicyError;
use crate::farm::{parse, registry, ScriptedQueues};
use crate::mapping::{LptEft, MappingInput};

fn started(text: &str, workers: usize) -> Box<dyn Dispatch> {
    let mut policy = parse(text).unwrap();
    let capacity = policy.capacity();
    policy
        .start(&FarmConfig::new(workers, capacity).unwrap())
        .unwrap();
    policy
}

/// Sends `costs` in order with the queues never drained (a stream
/// dispatched at once) and returns each item's worker.
fn dispatch_at_once(policy: &mut dyn Dispatch, speeds: &[f64], costs: &[f64]) -> Vec<usize> {
    let mut view = ScriptedQueues::new(speeds.len());
    view.speeds = Some(speeds.to_vec());
    costs
        .iter()
        .map(|&c| {
            view.cost = Some(c);
            view.apply(policy.next(&view)).expect("unbounded queues")
        })
        .collect()
}

fn makespan(speeds: &[f64], costs: &[f64], placement: &[usize]) -> f64 {
    let mut time = vec![0.0; speeds.len()];
    for (&c, &w) in costs.iter().zip(placement) {
        time[w] += c / speeds[w];
    }
    time.into_iter().fold(0.0, f64::max)
}

#[test]
fn slow_worker_gets_the_item_only_when_it_finishes_first() {
    // Speeds [1, 0.1], costs 3, 2, 1: every item finishes earliest on
    // the fast worker (makespan 6), where round-robin gives 20.
    let (speeds, costs) = ([1.0, 0.1], [3.0, 2.0, 1.0]);
    let eft = dispatch_at_once(started("eft", 2).as_mut(), &speeds, &costs);
    assert_eq!(eft, [0, 0, 0]);
    assert_eq!(makespan(&speeds, &costs, &eft), 6.0);
    let rr = dispatch_at_once(started("rr", 2).as_mut(), &speeds, &costs);
    assert_eq!(rr, [0, 1, 0]);
    assert!((makespan(&speeds, &costs, &rr) - 20.0).abs() < 1e-9);
}

#[test]
fn without_speeds_or_hints_it_is_the_shortest_queue() {
    let mut eft = started("eft", 3);
    let mut view = ScriptedQueues::new(3);
    view.levels = vec![2, 0, 1];
    assert_eq!(eft.next(&view), Decision::Send(1));
    // Worker 1 now holds the item just sent, worker 2 is empty.
    view.levels = vec![2, 1, 0];
    assert_eq!(eft.next(&view), Decision::Send(2));
}

#[test]
fn drained_queues_lose_their_time() {
    let mut eft = started("eft", 2);
    let mut view = ScriptedQueues::new(2);
    view.speeds = Some(vec![1.0, 1.0]);
    view.cost = Some(5.0);
    assert_eq!(view.apply(eft.next(&view)), Some(0));
    view.cost = Some(1.0);
    assert_eq!(view.apply(eft.next(&view)), Some(1));
    assert_eq!(view.apply(eft.next(&view)), Some(1));
    // Worker 0 has taken its 5-unit item out of its queue. Not known to
    // be finished, it is in service and still counts: 5 against 2.
    view.levels[0] = 0;
    assert_eq!(eft.next(&view), Decision::Send(1));
    // Known finished, worker 0 is free: 0 against 2 (the 3rd unit sent to
    // worker 1 above is in its queue, as the level below says).
    view.levels[1] = 3;
    view.done = Some(vec![1, 0]);
    assert_eq!(eft.next(&view), Decision::Send(0));
}

#[test]
fn bad_hints_and_speeds_count_as_unknown() {
    // Hints: a NaN, negative or infinite hint costs the mean valid hint.
    let mut eft = Eft::new();
    eft.start(&FarmConfig::new(2, None).unwrap()).unwrap();
    assert_eq!(eft.cost(None), 1.0);
    assert_eq!(eft.cost(Some(4.0)), 4.0);
    assert_eq!(eft.cost(Some(2.0)), 2.0);
    for bad in [f64::NAN, -1.0, f64::INFINITY] {
        assert_eq!(eft.cost(Some(bad)), 3.0);
    }
    // Speeds: a worker with a bad speed runs at the mean of the good ones.
    let mut view = ScriptedQueues::new(3);
    for bad in [f64::NAN, 0.0, -2.0, f64::INFINITY] {
        view.speeds = Some(vec![bad, 2.0, 4.0]);
        eft.start(&FarmConfig::new(3, None).unwrap()).unwrap();
        eft.read_speeds(&view);
        assert_eq!(eft.speeds, [3.0, 2.0, 4.0], "{bad}");
    }
    view.speeds = None;
    eft.read_speeds(&view);
    assert_eq!(eft.speeds, [1.0, 1.0, 1.0]);
}

#[test]
fn bounded_form_asks_for_its_capacity_and_waits_when_all_are_full() {
    let mut eft = started("eft:capacity=2", 2);
    assert_eq!(eft.capacity(), Some(2));
    assert!(eft.reads_speeds());
    let mut view = ScriptedQueues::new(2);
    view.capacity = Some(2);
    view.speeds = Some(vec![1.0, 0.1]);
    // The fast queue fills; the slow worker would finish the next item at
    // 10, the fast one at 3 once it has room: wait.
    assert_eq!(view.apply(eft.next(&view)), Some(0));
    assert_eq!(view.apply(eft.next(&view)), Some(0));
    assert_eq!(eft.next(&view), Decision::WaitForRoom);
    view.levels[0] = 1;
    view.done = Some(vec![1, 0]);
    assert_eq!(view.apply(eft.next(&view)), Some(0));
    // With 10 units ahead on the fast worker the slow one finishes first
    // (the tie at 9 goes to the lower index).
    view.capacity = Some(20);
    for _ in 0..8 {
        assert_eq!(view.apply(eft.next(&view)), Some(0));
    }
    assert_eq!(view.apply(eft.next(&view)), Some(1));
    // Both full: wait.
    view.levels = vec![20, 20];
    assert_eq!(eft.next(&view), Decision::WaitForRoom);
}

#[test]
fn bad_parameters_are_typed_errors() {
    assert_eq!(
        parse("eft:capacity=0").unwrap_err(),
        FarmError::ZeroCapacity
    );
    assert_eq!(Eft::bounded(0).unwrap_err(), FarmError::ZeroCapacity);
    assert!(matches!(
        parse("eft:capacity=x"),
        Err(FarmError::Spec(PolicyError::InvalidParameter { .. }))
    ));
    assert!(matches!(
        parse("eft:chunk=3"),
        Err(FarmError::Spec(PolicyError::UnknownParameter { .. }))
    ));
    assert!(matches!(
        registry().build("eft:capacity=0"),
        Err(PolicyError::InvalidParameter { .. })
    ));
    let mut eft = Eft::new();
    let bad = FarmConfig {
        workers: 0,
        capacity: None,
    };
    assert_eq!(eft.start(&bad).unwrap_err(), FarmError::ZeroWorkers);
}

/// Exactly once: on randomly draining bounded queues every item is sent
/// to one existing worker with room, and nothing is sent while all are
/// full.
#[test]
fn every_item_goes_to_exactly_one_worker_with_room() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for p in [1, 2, 5] {
        let mut eft = started("eft:capacity=3", p);
        let mut view = ScriptedQueues::new(p);
        view.capacity = Some(3);
        view.speeds = Some((0..p).map(|w| 1.0 / (1 + w) as f64).collect());
        let mut received = vec![0usize; p];
        let (mut sent, mut waits) = (0, 0);
        while sent < 500 {
            view.cost = Some((rand() % 7) as f64);
            match eft.next(&view) {
                Decision::Send(w) => {
                    assert!(w < p && view.levels[w] < 3, "p={p}: sent to {w}");
                    view.levels[w] += 1;
                    received[w] += 1;
                    sent += 1;
                }
                Decision::WaitForRoom => {
                    // Only behind a full queue.
                    assert!(view.levels.contains(&3));
                    waits += 1;
                }
                other => panic!("eft decided {other:?}"),
            }
            // Workers take items at random.
            let w = (rand() % p as u64) as usize;
            view.levels[w] = view.levels[w].saturating_sub(1);
        }
        assert_eq!(received.iter().sum::<usize>(), 500);
        assert!(p == 1 || waits > 0, "p={p}: the bound was never reached");
    }
}

proptest! {
    /// A stream dispatched at once, heaviest first, with the speeds known:
    /// every item lands where the `lpt-eft` mapping puts its task.
    #[test]
    fn at_once_and_sorted_it_is_the_lpt_eft_mapping(
        mut costs in prop::collection::vec(0.0f64..100.0, 1..60),
        speeds in prop::collection::vec(
            prop::sample::select(vec![0.1, 0.25, 0.5, 1.0, 1.5, 3.0]), 1..7),
    ) {
        costs.sort_by(|a, b| b.total_cmp(a));
        let farm = dispatch_at_once(started("eft", speeds.len()).as_mut(), &speeds, &costs);
        let background = vec![0.0; speeds.len()];
        let input = MappingInput::new(&costs, &background).unwrap().with_speeds(&speeds).unwrap();
        let mapping = LptEft.decide(&input);
        prop_assert_eq!(farm.as_slice(), mapping.as_slice());
    }
}
