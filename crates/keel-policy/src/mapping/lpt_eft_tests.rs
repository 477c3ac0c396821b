use proptest::prelude::*;

use super::*;
use crate::concept::{Concept, Origin};
use crate::mapping::{registry, runtime_context, Greedy};
use crate::metrics::evaluate;
use crate::NO_PU;

fn with_speeds<'a>(loads: &'a [f64], bg: &'a [f64], speeds: &'a [f64]) -> MappingInput<'a> {
    MappingInput::new(loads, bg)
        .unwrap()
        .with_speeds(speeds)
        .unwrap()
}

fn makespan(input: &MappingInput<'_>, placement: &[usize]) -> f64 {
    let mapping = Mapping::new(placement.to_vec(), input.npus()).unwrap();
    evaluate(input, &mapping).makespan
}

/// The rule by its definition: an O(P) scan per task over every available
/// PU, earliest finish, ties to the lower index.
fn reference(input: &MappingInput<'_>) -> Vec<usize> {
    let (mut placement, mut times) = input.pinned_start();
    let pus = input.available_pus();
    let order = crate::mapping::lpt_order(input.task_loads(), |t| input.is_migratable(t));
    for task in order {
        let w = input.task_loads()[task];
        let mut best = pus[0];
        for &p in &pus[1..] {
            if times[p] + w / input.speed(p) < times[best] + w / input.speed(best) {
                best = p;
            }
        }
        times[best] += w / input.speed(best);
        placement[task] = best;
    }
    placement
}

/// Every task on exactly one available PU; unmigratable tasks where they were.
fn assert_exactly_once(input: &MappingInput<'_>, placement: &[usize]) {
    assert_eq!(placement.len(), input.ntasks());
    for (task, &pu) in placement.iter().enumerate() {
        assert!(pu != NO_PU && pu < input.npus(), "task {task} unplaced");
        assert!(input.is_available(pu), "task {task} on unavailable PU {pu}");
        if !input.is_migratable(task) {
            assert_eq!(Some(pu), input.current(task), "pinned task {task} moved");
        }
    }
}

#[test]
fn fast_and_slow_pu_all_on_the_fast_one() {
    let (loads, bg, speeds) = ([1.0, 2.0, 3.0], [0.0, 0.0], [1.0, 0.1]);
    let input = with_speeds(&loads, &bg, &speeds);
    let eft = LptEft.decide(&input);
    assert_eq!(eft.as_slice(), &[0, 0, 0]);
    assert_eq!(makespan(&input, eft.as_slice()), 6.0);
    assert_eq!(brute_force_optimum(&loads, &speeds), 6.0);
}

/// GreedyLB's documented behaviour, pinned: the least-loaded PU in
/// normalised time, whatever the task then costs there.
#[test]
fn greedy_keeps_greedylb_choice_and_makespan_20() {
    let (loads, bg, speeds) = ([1.0, 2.0, 3.0], [0.0, 0.0], [1.0, 0.1]);
    let input = with_speeds(&loads, &bg, &speeds);
    let greedy = Greedy.decide(&input);
    assert_eq!(greedy.as_slice(), &[0, 1, 0]);
    assert!((makespan(&input, greedy.as_slice()) - 20.0).abs() < 1e-9);
}

#[test]
fn background_pinned_and_unavailable_pus_count() {
    // PU 0 (speed 2) is busy for 3; PU 1 (speed 1) holds pinned task 0;
    // PU 2 (speed 4) is unavailable.
    let loads = [2.0, 4.0, 4.0, 2.0];
    let bg = [3.0, 0.0, 0.0];
    let speeds = [2.0, 1.0, 4.0];
    let input = with_speeds(&loads, &bg, &speeds)
        .with_current(&[1, NO_PU, NO_PU, NO_PU])
        .unwrap()
        .with_migratable(&[false, true, true, true])
        .unwrap()
        .with_availability(&[true, true, false])
        .unwrap();
    // Start: PU 0 at 3, PU 1 at 2. Task 1 (4): PU 0 finishes 5, PU 1 6 ->
    // PU 0. Task 2 (4): 7 vs 6 -> PU 1. Task 3 (2): 6 vs 8 -> PU 0.
    let eft = LptEft.decide(&input);
    assert_eq!(eft.as_slice(), &[1, 0, 1, 0]);
    assert_eq!(eft.as_slice(), reference(&input).as_slice());
    assert_exactly_once(&input, eft.as_slice());
}

#[test]
fn finish_ties_go_to_the_lower_pu_index() {
    // Both PUs finish the task at 2: PU 1 (speed 1, idle) against PU 0
    // (speed 2, busy for 1), and the other way round.
    let input = with_speeds(&[2.0], &[1.0, 0.0], &[2.0, 1.0]);
    assert_eq!(LptEft.decide(&input).as_slice(), &[0]);
    let input = with_speeds(&[2.0], &[0.0, 1.0], &[1.0, 2.0]);
    assert_eq!(LptEft.decide(&input).as_slice(), &[0]);
    // Equal speeds and times: the lower index, as greedy.
    let input = with_speeds(&[1.0; 4], &[0.0; 3], &[0.5; 3]);
    assert_eq!(LptEft.decide(&input).as_slice(), &[0, 1, 2, 0]);
}

#[test]
fn registry_and_direct_call_agree_and_reject_bad_inputs_with_typed_errors() {
    let policy = registry().build("lpt-eft").unwrap();
    assert_eq!(policy.spec().to_string(), "lpt-eft");
    assert!(registry().build("lpt-eft:chunks=2").is_err());
    let loads: Vec<f64> = (0..200).map(|i| ((i * 37) % 23) as f64 * 0.5).collect();
    let bg = [0.0, 2.0, 0.0, 1.0, 0.0];
    let speeds = [1.0, 0.25, 3.0, 1.0, 0.5];
    let avail = [true, true, true, false, true];
    let mut ctx = runtime_context(&loads, &bg);
    ctx.provide_values(Concept::PuSpeed, Origin::Runtime, &speeds[..])
        .provide_flags(Concept::PuAvailability, Origin::Runtime, &avail[..]);
    let via_registry = policy.map(&ctx).unwrap();
    let input = with_speeds(&loads, &bg, &speeds)
        .with_availability(&avail)
        .unwrap();
    assert_eq!(via_registry, LptEft.decide(&input));
    assert_eq!(via_registry.as_slice(), reference(&input).as_slice());
    assert_exactly_once(&input, via_registry.as_slice());

    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let speeds = [1.0, bad];
        let mut ctx = runtime_context(&[1.0, 2.0], &[0.0, 0.0]);
        ctx.provide_values(Concept::PuSpeed, Origin::Runtime, &speeds[..]);
        let err = policy.map(&ctx).unwrap_err();
        assert!(
            matches!(
                err,
                PolicyError::InvalidNumber {
                    what: "PU speed",
                    index: 1,
                    ..
                }
            ),
            "{bad}: {err}"
        );
    }
    let empty: [f64; 0] = [];
    let err = policy.map(&runtime_context(&[1.0], &empty)).unwrap_err();
    assert_eq!(err, PolicyError::NoPus);
    let mut ctx = runtime_context(&[1.0], &[0.0, 0.0]);
    ctx.provide_flags(
        Concept::PuAvailability,
        Origin::Runtime,
        &[false, false][..],
    );
    assert_eq!(policy.map(&ctx).unwrap_err(), PolicyError::NoAvailablePu(2));
    let err = policy
        .map(&runtime_context(&[f64::NAN], &[0.0]))
        .unwrap_err();
    assert!(matches!(err, PolicyError::InvalidNumber { .. }), "{err}");
    // No tasks is a valid, empty decision.
    assert_eq!(
        policy.map(&runtime_context(&[], &[0.0])).unwrap().ntasks(),
        0
    );
}

/// The least makespan over every assignment (`P^n` of them).
fn brute_force_optimum(loads: &[f64], speeds: &[f64]) -> f64 {
    let (n, p) = (loads.len(), speeds.len());
    let mut best = f64::INFINITY;
    let mut assign = vec![0usize; n];
    loop {
        let mut times = vec![0.0; p];
        for (t, &pu) in assign.iter().enumerate() {
            times[pu] += loads[t] / speeds[pu];
        }
        best = best.min(times.iter().copied().fold(0.0, f64::max));
        // Next assignment in base P.
        let mut i = 0;
        while i < n && assign[i] == p - 1 {
            assign[i] = 0;
            i += 1;
        }
        if i == n {
            return best;
        }
        assign[i] += 1;
    }
}

/// Gonzalez, Ibarra and Sahni, "Bounds for LPT schedules on uniform
/// processors": on m uniform processors, all idle at the start, the LPT
/// schedule that puts each task where it finishes earliest has a makespan
/// at most 2m/(m+1) times the optimum; for m = 2 they give the sharper
/// (1 + √17)/4.
fn gis_bound(m: usize) -> f64 {
    let general = 2.0 * m as f64 / (m as f64 + 1.0);
    if m == 2 {
        general.min((1.0 + 17f64.sqrt()) / 4.0)
    } else {
        general
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn within_the_uniform_processor_lpt_bound_of_the_optimum(
        loads in prop::collection::vec(0.01f64..10.0, 1..=8),
        speeds in prop::collection::vec(0.05f64..4.0, 1..=3),
    ) {
        let bg = vec![0.0; speeds.len()];
        let input = with_speeds(&loads, &bg, &speeds);
        let eft = LptEft.decide(&input);
        assert_exactly_once(&input, eft.as_slice());
        let ours = makespan(&input, eft.as_slice());
        let opt = brute_force_optimum(&loads, &speeds);
        let bound = gis_bound(speeds.len());
        prop_assert!(
            ours <= bound * opt * (1.0 + 1e-12),
            "makespan {ours} > {bound} x optimum {opt}"
        );
    }

    /// Loads in halves and speeds in powers of two keep every sum exact,
    /// so the speed classes and the O(P) scan must choose alike.
    #[test]
    fn same_choices_as_the_per_task_scan(
        loads in prop::collection::vec(0u32..40, 0..60),
        shifts in prop::collection::vec(0i32..5, 1..9),
        bg in prop::collection::vec(0u32..8, 9),
        flags in prop::collection::vec(any::<(bool, bool)>(), 60),
    ) {
        let loads: Vec<f64> = loads.iter().map(|&l| l as f64 * 0.5).collect();
        let speeds: Vec<f64> = shifts.iter().map(|&s| 2f64.powi(s - 2)).collect();
        let npus = speeds.len();
        let bg: Vec<f64> = bg[..npus].iter().map(|&b| b as f64).collect();
        let avail: Vec<bool> = (0..npus).map(|p| p == 0 || flags[p].1).collect();
        let pinned: Vec<bool> = (0..loads.len()).map(|t| flags[t].0 && t % 3 == 0).collect();
        let current: Vec<usize> = (0..loads.len()).map(|t| t % npus).collect();
        let migratable: Vec<bool> = pinned
            .iter()
            .zip(&current)
            .map(|(&p, &c)| !(p && avail[c]))
            .collect();
        let input = with_speeds(&loads, &bg, &speeds)
            .with_availability(&avail).unwrap()
            .with_current(&current).unwrap()
            .with_migratable(&migratable).unwrap();
        let eft = LptEft.decide(&input);
        assert_exactly_once(&input, eft.as_slice());
        prop_assert_eq!(eft.into_vec(), reference(&input));
    }

    /// On equal speeds the earliest finish is the least time: greedy's choice.
    #[test]
    fn equal_speeds_decide_as_greedy(
        loads in prop::collection::vec(0.0f64..100.0, 0..80),
        bg in prop::collection::vec(0.0f64..50.0, 1..12),
        speed in 0.1f64..8.0,
    ) {
        let speeds = vec![speed; bg.len()];
        let input = with_speeds(&loads, &bg, &speeds);
        prop_assert_eq!(LptEft.decide(&input), Greedy.decide(&input));
    }
}
