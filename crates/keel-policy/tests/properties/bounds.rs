//! Greedy against an exhaustive optimum (Graham's bound); Refine and BinLPT.

use super::*;

// ---------------------------------------------------------------------------
// Greedy: Graham's bound against an exhaustive optimum
// ---------------------------------------------------------------------------

/// Optimal makespan of `loads` on `m` identical PUs by exhaustive search:
/// heaviest first, a task never opens a PU beyond the first empty one (PUs
/// are interchangeable), branches that reach the best known makespan are cut.
fn optimal_makespan(loads: &[f64], m: usize) -> f64 {
    fn search(loads: &[f64], times: &mut [f64], used: usize, best: &mut f64) {
        let Some((&w, rest)) = loads.split_first() else {
            *best = times.iter().copied().fold(0.0, f64::max).min(*best);
            return;
        };
        for pu in 0..(used + 1).min(times.len()) {
            if times[pu] + w >= *best {
                continue;
            }
            times[pu] += w;
            search(rest, times, used.max(pu + 1), best);
            times[pu] -= w;
        }
    }
    let mut sorted = loads.to_vec();
    sorted.sort_unstable_by(|a, b| b.total_cmp(a));
    // Everything on one PU is feasible; start just above it so it is found.
    let mut best = sorted.iter().sum::<f64>() * (1.0 + 1e-9) + 1e-12;
    search(&sorted, &mut vec![0.0; m], 0, &mut best);
    best
}

fn greedy_makespan(loads: &[f64], m: usize) -> f64 {
    let pu_loads = vec![0.0; m];
    let map = build(&registry(), "greedy")
        .map(&runtime_context(loads, &pu_loads))
        .unwrap();
    MappingInput::new(loads, &pu_loads)
        .unwrap()
        .loads_of(map.as_slice())
        .into_iter()
        .fold(0.0, f64::max)
}

fn graham_bound(m: usize) -> f64 {
    4.0 / 3.0 - 1.0 / (3.0 * m as f64)
}

#[test]
fn optimum_search_and_the_bound_are_tight_on_grahams_example() {
    // m = 2, {3,3,2,2,2}: LPT gives 7 (3+2+2 | 3+2), the optimum is 6 (3+3 | 2+2+2),
    // 7/6 = 4/3 − 1/6 exactly.
    let loads = [3.0, 3.0, 2.0, 2.0, 2.0];
    assert_eq!(optimal_makespan(&loads, 2), 6.0);
    assert_eq!(greedy_makespan(&loads, 2), 7.0);
    assert!((7.0 / 6.0 - graham_bound(2)).abs() < 1e-15);
    assert_eq!(optimal_makespan(&[], 3), 0.0);
    assert_eq!(optimal_makespan(&[5.0, 1.0, 1.0], 4), 5.0);
}

proptest! {
    #![proptest_config(config(256))]

    /// Property 2: greedy ≤ (4/3 − 1/(3m))·OPT.
    #[test]
    fn greedy_is_within_grahams_bound_of_the_optimum(
        loads in vec(prop_oneof![1 => Just(0.0), 2 => (1u32..20).prop_map(f64::from), 4 => 0.0f64..100.0], 0..=9),
        m in 2usize..=4,
    ) {
        let opt = optimal_makespan(&loads, m);
        let lpt = greedy_makespan(&loads, m);
        prop_assert!(lpt >= opt * (1.0 - 1e-12), "greedy {lpt} beat the optimum {opt}");
        prop_assert!(
            lpt <= graham_bound(m) * opt * (1.0 + 1e-12),
            "greedy {lpt} > ({}) x OPT {opt}", graham_bound(m)
        );
    }
}

// ---------------------------------------------------------------------------
// Refine and BinLPT
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(256))]

    /// Property 3a: refine from a complete mapping never raises the makespan,
    /// and leaves a mapping already within tolerance untouched.
    #[test]
    fn refine_never_raises_the_makespan_of_a_complete_mapping(case in case_with(true)) {
        let registry = registry();
        let ctx = case.context();
        let current = case.current.clone().unwrap();
        let before = case.makespan(&current);
        let input = case.input();
        for tolerance in [1.0, 1.05, 1.5] {
            let spec = format!("refine:tolerance={tolerance}");
            let map = build(&registry, &spec).map(&ctx).unwrap();
            check_contract(&case, &map)?;
            let after = case.makespan(map.as_slice());
            // Relative slack for the rounding of `room * speed / speed`.
            prop_assert!(after <= before * (1.0 + 1e-12), "{spec}: {before} -> {after}");

            let within = metrics::evaluate(&input, &Mapping::new(current.clone(), case.npus()).unwrap());
            let pus = input.available_pus();
            let total_speed: f64 = pus.iter().map(|&p| input.speed(p)).sum();
            let average = (case.loads.iter().sum::<f64>()
                + pus.iter().map(|&p| case.pu_loads[p] * input.speed(p)).sum::<f64>())
                / total_speed;
            let busiest = pus.iter().map(|&p| within.pu_times[p]).fold(0.0, f64::max);
            if busiest < tolerance * average * (1.0 - 1e-9) {
                prop_assert_eq!(map.as_slice(), &current[..], "{} moved tasks of a balanced mapping", spec);
            }
        }
    }

    /// Property 3b: BinLPT's cuts cover `0..n`; the improved cut yields exactly
    /// `min(K, n)` non-empty contiguous chunks, and the mapping keeps them whole.
    #[test]
    fn binlpt_cuts_cover_every_task(
        loads in vec(task_load(), 0..80),
        k in 1usize..100,
        npus in 1usize..9,
    ) {
        let n = loads.len();
        let improved = BinLpt { chunks: Some(k), cut: BinLptCut::Improved };
        let bounds = improved.cut_points(&loads, k);
        prop_assert_eq!(bounds.len(), k.min(n) + 1, "{:?}", bounds);
        prop_assert_eq!(bounds[0], 0);
        prop_assert_eq!(*bounds.last().unwrap(), n);
        prop_assert!(bounds.windows(2).all(|w| w[0] < w[1]), "empty chunk: {:?}", bounds);

        let faithful = BinLpt { chunks: Some(k), cut: BinLptCut::Faithful };
        let bounds = faithful.cut_points(&loads, k);
        prop_assert_eq!(bounds.len(), k + 1, "{:?}", bounds);
        prop_assert_eq!(bounds[0], 0);
        prop_assert_eq!(*bounds.last().unwrap(), n);
        prop_assert!(bounds.windows(2).all(|w| w[0] <= w[1]), "not monotone: {:?}", bounds);

        // Each chunk lands on one PU, so the mapping has at most K − 1 splits.
        let pu_loads = vec![0.0; npus];
        let spec = format!("binlpt:chunks={k}");
        let map = build(&registry(), &spec).map(&runtime_context(&loads, &pu_loads)).unwrap();
        prop_assert!(metrics::splits(map.as_slice()) < k.min(n).max(1), "{:?}", map);
    }
}
