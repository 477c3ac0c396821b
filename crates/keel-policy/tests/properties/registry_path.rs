//! The registry + context handler path equals the direct path.

use super::*;

// ---------------------------------------------------------------------------
// Registry path == direct path
// ---------------------------------------------------------------------------

/// The direct (context-free) decision of the policy `spec` names.
fn decide_directly(
    registry: &Registry<dyn MappingPolicy>,
    spec: &str,
    input: &MappingInput<'_>,
) -> Result<Mapping, PolicyError> {
    let parsed = Spec::parse(spec)?;
    Ok(match parsed.name.as_str() {
        "block" => Block::from_spec(&parsed)?.decide(input),
        "round-robin" => RoundRobin::from_spec(&parsed)?.decide(input),
        "greedy" => Greedy::from_spec(&parsed)?.decide(input),
        "binlpt" => BinLpt::from_spec(&parsed)?.decide(input),
        "refine" => Refine::from_spec(&parsed)?.decide(input),
        "greedy-refine" => GreedyRefine::from_spec(&parsed)?.decide(input),
        "hier" => {
            let level = |key: &str| {
                registry.build_spec(&parsed.nested(key).unwrap_or_else(|| Spec::named("greedy")))
            };
            let nodes = parsed.count_at_least("nodes", 1)?.unwrap();
            Hier::new(nodes, level("outer")?, level("inner")?).decide(input)?
        }
        other => panic!("no direct path for {other}"),
    })
}

#[test]
fn known_answers_through_the_registry_equal_the_direct_path() {
    let registry = registry();
    let ctx_map = |spec: &str, loads: &[f64], npus: usize, current: Option<&[usize]>| {
        let pu_loads = vec![0.0; npus];
        let mut ctx = runtime_context(loads, &pu_loads);
        let mut input = MappingInput::new(loads, &pu_loads).unwrap();
        if let Some(c) = current {
            ctx.provide_placement(Origin::Runtime, c);
            input = input.with_current(c).unwrap();
        }
        let portable = build(&registry, spec).map(&ctx).unwrap().into_vec();
        let direct = decide_directly(&registry, spec, &input).unwrap().into_vec();
        assert_eq!(portable, direct, "{spec}");
        portable
    };
    // LPT's textbook example: {5,4,3,3,3} on 2 PUs gives 8 | 10.
    let lpt = [5.0, 4.0, 3.0, 3.0, 3.0];
    assert_eq!(ctx_map("greedy", &lpt, 2, None), [0, 1, 1, 0, 1]);
    assert_eq!(Greedy::map_direct(&lpt, 2), [0, 1, 1, 0, 1]);
    assert_eq!(ctx_map("block", &[1.0; 7], 3, None), [0, 0, 0, 1, 1, 2, 2]);
    assert_eq!(ctx_map("round-robin", &[1.0; 5], 3, None), [0, 1, 2, 0, 1]);
    // BinLPT golden vector (as Penna's libgomp fork and MOGSLib compute it): P = 2, K = 4.
    let desc = [5.0, 4.0, 3.0, 2.0, 1.0];
    assert_eq!(
        ctx_map("binlpt:chunks=4,cut=faithful", &desc, 2, None),
        [0, 0, 1, 1, 1]
    );
    let ten_ones_ten: Vec<f64> = std::iter::once(10.0)
        .chain([1.0; 8])
        .chain([10.0])
        .collect();
    assert_eq!(
        ctx_map("binlpt:chunks=4,cut=faithful", &ten_ones_ten, 2, None),
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
    );
    // Refine moves the one task that fixes the imbalance.
    assert_eq!(
        ctx_map(
            "refine:tolerance=1.0",
            &[4.0, 3.0, 1.0],
            2,
            Some(&[0, 0, 0])
        ),
        [1, 0, 0]
    );
    assert_eq!(
        ctx_map(
            "greedy-refine:tolerance=1.0",
            &[2.0; 4],
            2,
            Some(&[0, 0, 0, 0])
        ),
        [0, 0, 1, 1]
    );
    assert_eq!(
        ctx_map(
            "hier:nodes=2,outer=(block),inner=round-robin",
            &[1.0; 8],
            4,
            None
        ),
        [0, 1, 0, 1, 2, 3, 2, 3]
    );
}

proptest! {
    #![proptest_config(config(128))]

    /// Property 5: for random valid inputs, registry + context handler ==
    /// direct `decide` on a `MappingInput` built from the same slices.
    #[test]
    fn the_registry_path_equals_the_direct_path(case in case()) {
        let registry = registry();
        let ctx = case.context();
        let input = case.input();
        for &(spec, _) in SPECS {
            let portable = build(&registry, spec).map(&ctx);
            let direct = decide_directly(&registry, spec, &input);
            match (portable, direct) {
                (Ok(p), Ok(d)) => prop_assert_eq!(p, d, "{}", spec),
                // Only the missing current mapping may separate them: the
                // registry path requires it, `decide` treats every task as new.
                (Err(PolicyError::UnmetRequirement { requirement, .. }), _) => {
                    prop_assert_eq!(requirement, Concept::CurrentMapping, "{}", spec);
                    prop_assert!(case.current.is_none(), "{}", spec);
                }
                (p, d) => prop_assert_eq!(p, d, "{}", spec),
            }
        }
    }

    /// `Greedy::map_direct` (no handler, no validation) == the registry path.
    #[test]
    fn greedy_map_direct_equals_the_registry_path(
        loads in vec(task_load(), 0..200),
        npus in 1usize..12,
    ) {
        let pu_loads = vec![0.0; npus];
        let portable = build(&registry(), "greedy")
            .map(&runtime_context(&loads, &pu_loads))
            .unwrap();
        let direct = Greedy::map_direct(&loads, npus);
        // Exactly once: one in-range PU per task.
        prop_assert_eq!(direct.len(), loads.len());
        prop_assert!(direct.iter().all(|&pu| pu < npus));
        prop_assert_eq!(portable.into_vec(), direct);
    }
}
