use super::*;
use proptest::prelude::*;

fn rank_loads(loads: &[f64], at: &[usize], ranks: usize) -> Vec<f64> {
    let mut out = vec![0.0; ranks];
    for (o, &r) in at.iter().enumerate() {
        out[r] += loads[o];
    }
    out
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(0.0, f64::max)
}

#[test]
fn lends_move_each_groups_excess_to_the_deficits_and_nothing_within_tolerance() {
    let g = |work| GroupLoad { work, speed: 1.0 };
    // Mean 10: group 0 lends 6, group 1 lends 2, groups 2 and 3 borrow.
    let out = lends(&[g(16.0), g(12.0), g(5.0), g(7.0)]);
    let lent: f64 = out.iter().map(|l| l.work).sum();
    assert!((lent - 8.0).abs() < 1e-12, "{out:?}");
    for l in &out {
        assert!(l.from < 2 && l.to >= 2, "{l:?}");
    }
    // Within 2 % of the share: nothing moves.
    assert!(lends(&[g(10.1), g(9.9)]).is_empty());
    // Speeds set the shares: a group twice as fast takes twice the work.
    let out = lends(&[
        GroupLoad {
            work: 15.0,
            speed: 1.0,
        },
        GroupLoad {
            work: 15.0,
            speed: 2.0,
        },
    ]);
    assert_eq!(
        out,
        vec![Lend {
            from: 0,
            to: 1,
            work: 5.0
        }]
    );
    // Hostile numbers lend nothing rather than NaN.
    assert!(lends(&[g(f64::NAN), g(f64::INFINITY)]).is_empty());
    assert!(lends(&[]).is_empty());
}

#[test]
fn pick_lent_takes_from_the_most_loaded_member_and_keeps_the_unmovable() {
    let o = |load, member, migratable| GroupObject {
        load,
        member,
        migratable,
    };
    let objects = [
        o(5.0, 0, false),
        o(2.0, 0, true),
        o(2.0, 1, true),
        o(1.0, 1, true),
    ];
    // Member 0 (7) is the most loaded, but its 5 cannot move.
    let picked = pick_lent(&objects, &[7.0, 3.0], &[2.0, 1.0]);
    assert_eq!(picked, vec![None, Some(0), None, Some(1)]);
    // Nothing fits: nothing is taken.
    assert_eq!(pick_lent(&[o(10.0, 0, true)], &[10.0], &[1.0]), vec![None]);
}

#[test]
fn errors_are_typed() {
    let loads = [1.0, 2.0];
    assert!(matches!(
        decide(&TreeInput::new(&loads, &[0], 2, 1), "greedy"),
        Err(PolicyError::LengthMismatch { .. })
    ));
    assert!(matches!(
        decide(&TreeInput::new(&loads, &[0, 5], 2, 1), "greedy"),
        Err(PolicyError::PuOutOfRange {
            task: 1,
            pu: 5,
            npus: 2
        })
    ));
    assert!(matches!(
        decide(&TreeInput::new(&loads, &[0, 1], 2, 1), "fastest"),
        Err(PolicyError::UnknownPolicy { .. })
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Every object gets exactly one rank; unmovable objects stay; the
    /// tree's makespan is within 5 % of one-level greedy's plus the
    /// largest object (what any object-granular plan can be off by).
    #[test]
    fn every_object_is_placed_once_and_the_tree_balances_about_as_well_as_greedy(
        ranks in 2usize..24,
        group in 1usize..8,
        per_rank in 1usize..12,
        seed in any::<u64>(),
        hot in 0usize..4,
    ) {
        let n = ranks * per_rank;
        let mut x = seed | 1;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 1000) as f64 / 100.0 + 0.01
        };
        let loads: Vec<f64> = (0..n)
            .map(|o| if o / per_rank < hot { 10.0 * next() } else { next() })
            .collect();
        let current: Vec<usize> = (0..n).map(|o| o / per_rank).collect();
        let migratable: Vec<bool> = (0..n).map(|o| o % 7 != 3).collect();
        let input = TreeInput {
            migratable: Some(&migratable),
            ..TreeInput::new(&loads, &current, ranks, group)
        };
        let plan = decide(&input, "greedy-refine").unwrap();
        prop_assert_eq!(plan.destinations.len(), n);
        for (o, &r) in plan.destinations.iter().enumerate() {
            prop_assert!(r < ranks);
            if !migratable[o] {
                prop_assert_eq!(r, current[o]);
            }
        }
        let tree = max(&rank_loads(&loads, &plan.destinations, ranks));
        let greedy = crate::mapping::registry().build("greedy-refine").unwrap();
        let pus = vec![0.0; ranks];
        let mut ctx = crate::mapping::runtime_context(&loads, &pus);
        ctx.provide_flags(Concept::TaskMigratable, Origin::Runtime, &migratable[..])
            .provide_placement(Origin::Runtime, &current[..]);
        let one = greedy.map(&ctx).unwrap().into_vec();
        let flat = max(&rank_loads(&loads, &one, ranks));
        let biggest = loads.iter().copied().fold(0.0, f64::max);
        prop_assert!(tree <= 1.05 * flat + biggest, "tree {} vs one level {}", tree, flat);
    }
}
