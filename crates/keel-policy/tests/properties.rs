//! Property tests of the mapping family's contract, exactly once above all, over
//! grids and random inputs; the protocols that enact it are tested apart.
//!
//! 1. Exactly once, on available PUs, pinned tasks stay — every built-in
//!    policy and parameter variant in [`SPECS`], on random valid inputs built
//!    through a [`ContextHandler`] (optional speeds, availability,
//!    migratability and current mapping, NO_PU entries included); plus
//!    determinism and a spec round trip through the registry.
//! 2. `greedy` is within Graham's LPT bound `(4/3 − 1/(3m))·OPT` of an
//!    exhaustive optimum on small inputs.
//! 3. `refine` from a complete mapping never raises the makespan and leaves a
//!    mapping already within tolerance alone; BinLPT's cuts cover `0..n`
//!    (improved: exactly `min(K, n)` non-empty contiguous chunks).
//! 4. Robustness: arbitrary numbers, lengths, flags, placements and component
//!    shapes give `Ok` or a typed error with a message, never a panic; so do
//!    garbage spec strings; unknown names are `UnknownPolicy`.
//! 5. The registry + context handler path equals the direct `decide` path
//!    (and `Greedy::map_direct`), on known answers and random inputs.

use std::borrow::Cow;

use keel_policy::mapping::{
    self, runtime_context, BinLpt, BinLptCut, Block, Greedy, GreedyRefine, Hier, MappingPolicy,
    Refine, RoundRobin,
};
use keel_policy::metrics;
use keel_policy::{
    Component, ComponentData, Concept, ContextHandler, Mapping, MappingInput, Model, Origin,
    PolicyError, Registry, Spec, Subject, NO_PU,
};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use proptest::sample::Index;

/// Every built-in policy and the parameter variants worth telling apart, with
/// the fewest PUs each accepts (`hier` needs at least `nodes` PUs).
const SPECS: &[(&str, usize)] = &[
    ("block", 1),
    ("round-robin", 1),
    ("greedy", 1),
    ("binlpt", 1),
    ("binlpt:cut=faithful", 1),
    ("binlpt:cut=improved", 1),
    ("binlpt:chunks=1", 1),
    ("binlpt:chunks=3", 1),
    ("binlpt:chunks=3,cut=faithful", 1),
    ("binlpt:chunks=1000", 1),
    // K > n for every case; not 1000: the faithful cut's exchange sort is
    // O(K²) whatever n is, which dominates a debug-build run.
    ("binlpt:chunks=100,cut=faithful", 1),
    ("refine", 1),
    ("refine:tolerance=1.0", 1),
    ("refine:tolerance=1.5", 1),
    ("greedy-refine", 1),
    ("greedy-refine:tolerance=1.0", 1),
    ("greedy-refine:tolerance=2", 1),
    ("hier:nodes=1", 1),
    ("hier:nodes=2,outer=greedy,inner=refine", 2),
    ("hier:nodes=3,outer=(binlpt:chunks=5),inner=round-robin", 3),
    (
        "hier:nodes=2,outer=(refine:tolerance=1.0),inner=(greedy-refine)",
        2,
    ),
    (
        "hier:nodes=2,outer=(hier:nodes=2,outer=block,inner=greedy),inner=(binlpt:cut=faithful)",
        2,
    ),
];

/// `cases` random inputs per property. No regression files: integration
/// tests have no `lib.rs` beside them for proptest to anchor them to.
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn registry() -> Registry<dyn MappingPolicy> {
    mapping::registry()
}

fn build(registry: &Registry<dyn MappingPolicy>, spec: &str) -> Box<dyn MappingPolicy> {
    registry
        .build(spec)
        .unwrap_or_else(|e| panic!("`{spec}` must build: {e}"))
}

fn needs_current(policy: &dyn MappingPolicy) -> bool {
    policy
        .requirements()
        .iter()
        .any(|r| r.concept == Concept::CurrentMapping && !r.optional)
}

// ---------------------------------------------------------------------------
// Valid inputs
// ---------------------------------------------------------------------------

/// A valid mapping problem, owned, as a context would hold it.
#[derive(Clone, Debug)]
struct Case {
    loads: Vec<f64>,
    pu_loads: Vec<f64>,
    speeds: Option<Vec<f64>>,
    available: Option<Vec<bool>>,
    migratable: Option<Vec<bool>>,
    current: Option<Vec<usize>>,
    /// Task loads described as static (user hints) rather than dynamic.
    static_model: bool,
    /// Task loads registered with user origin.
    user_origin: bool,
}

impl Case {
    fn npus(&self) -> usize {
        self.pu_loads.len()
    }

    fn is_available(&self, pu: usize) -> bool {
        self.available.as_ref().is_none_or(|a| a[pu])
    }

    fn is_migratable(&self, task: usize) -> bool {
        self.migratable.as_ref().is_none_or(|m| m[task])
    }

    /// The handler a runtime would build over its own buffers.
    fn context(&self) -> ContextHandler<'_> {
        let model = if self.static_model {
            Model::Static
        } else {
            Model::Dynamic
        };
        let origin = if self.user_origin {
            Origin::User
        } else {
            Origin::Runtime
        };
        let mut ctx = ContextHandler::new();
        ctx.provide_values(
            Concept::Workload {
                subject: Subject::Tasks,
                model,
            },
            origin,
            &self.loads[..],
        )
        .provide_values(
            Concept::Workload {
                subject: Subject::Pus,
                model: Model::Dynamic,
            },
            Origin::Runtime,
            &self.pu_loads[..],
        );
        if let Some(speeds) = &self.speeds {
            ctx.provide_values(Concept::PuSpeed, Origin::Runtime, &speeds[..]);
        }
        if let Some(available) = &self.available {
            ctx.provide_flags(Concept::PuAvailability, Origin::Runtime, &available[..]);
        }
        if let Some(migratable) = &self.migratable {
            ctx.provide_flags(Concept::TaskMigratable, Origin::Runtime, &migratable[..]);
        }
        if let Some(current) = &self.current {
            ctx.provide_placement(Origin::Runtime, &current[..]);
        }
        ctx
    }

    /// The same inputs through `MappingInput`'s builders, for `decide`.
    /// Availability and the current mapping go before migratability, which
    /// is validated against them.
    fn input(&self) -> MappingInput<'_> {
        let mut input = MappingInput::new(&self.loads, &self.pu_loads).unwrap();
        if let Some(speeds) = &self.speeds {
            input = input.with_speeds(speeds).unwrap();
        }
        if let Some(available) = &self.available {
            input = input.with_availability(available).unwrap();
        }
        if let Some(current) = &self.current {
            input = input.with_current(current).unwrap();
        }
        if let Some(migratable) = &self.migratable {
            input = input.with_migratable(migratable).unwrap();
        }
        input
    }

    /// Largest PU time under `placement` (background included).
    fn makespan(&self, placement: &[usize]) -> f64 {
        self.input()
            .loads_of(placement)
            .into_iter()
            .fold(0.0, f64::max)
    }
}

/// Task loads with zeros and many duplicates.
fn task_load() -> impl Strategy<Value = f64> {
    prop_oneof![
        2 => Just(0.0),
        2 => Just(1.0),
        1 => Just(7.5),
        6 => (0u32..200).prop_map(|x| f64::from(x) / 4.0),
        3 => 0.0f64..100.0,
    ]
}

/// Speeds in (0.25, 4], with the reference speed and the top end common.
fn speed() -> impl Strategy<Value = f64> {
    prop_oneof![
        2 => Just(1.0),
        1 => Just(4.0),
        3 => (0.25f64..=4.0).prop_map(|s| if s > 0.25 { s } else { 4.0 }),
    ]
}

/// Random valid cases with `0..80` tasks on `1..9` PUs. With `complete`, the
/// current mapping always exists and places every task on an available PU.
fn case_with(complete: bool) -> impl Strategy<Value = Case> {
    (0usize..80, 1usize..9)
        .prop_flat_map(move |(n, p)| {
            (
                vec(task_load(), n),
                prop_oneof![
                    Just(vec![0.0; p]),
                    vec(prop_oneof![3 => Just(0.0), 1 => 0.0f64..50.0], p),
                ],
                option::of(vec(speed(), p)),
                option::of((vec(any::<bool>(), p), any::<Index>())),
                // (has a current mapping, has migratable flags, flags, choices)
                (
                    any::<bool>(),
                    any::<bool>(),
                    vec(prop::bool::weighted(0.75), n),
                    vec(any::<u32>(), n),
                ),
                any::<bool>(),
                any::<bool>(),
            )
        })
        .prop_map(
            move |(loads, pu_loads, speeds, availability, placement, static_model, user_origin)| {
                let p = pu_loads.len();
                let available = availability.map(|(mut flags, forced)| {
                    flags[forced.index(p)] = true;
                    flags
                });
                let avail: Vec<usize> = (0..p)
                    .filter(|&q| available.as_ref().is_none_or(|a| a[q]))
                    .collect();
                let (has_current, has_flags, flags, choices) = placement;
                let (current, migratable) = if complete {
                    let current = choices
                        .iter()
                        .map(|&c| avail[c as usize % avail.len()])
                        .collect();
                    (Some(current), has_flags.then_some(flags))
                } else if has_current {
                    let migratable = has_flags.then_some(flags);
                    let current = choices
                        .iter()
                        .enumerate()
                        .map(|(t, &c)| {
                            if migratable.as_ref().is_some_and(|m| !m[t]) {
                                // Pinned tasks sit on an available PU.
                                avail[c as usize % avail.len()]
                            } else {
                                // Anywhere, unavailable PUs included, or nowhere.
                                match c as usize % (p + 2) {
                                    q if q < p => q,
                                    _ => NO_PU,
                                }
                            }
                        })
                        .collect();
                    (Some(current), migratable)
                } else {
                    (None, None)
                };
                Case {
                    loads,
                    pu_loads,
                    speeds,
                    available,
                    migratable,
                    current,
                    static_model,
                    user_origin,
                }
            },
        )
}

fn case() -> impl Strategy<Value = Case> {
    case_with(false)
}

/// The contract every mapping satisfies: each task assigned exactly once to
/// an existing, available PU; unmigratable tasks where they were.
fn check_contract(case: &Case, map: &Mapping) -> Result<(), TestCaseError> {
    let npus = case.npus();
    prop_assert_eq!(map.ntasks(), case.loads.len());
    prop_assert_eq!(map.npus(), npus);
    prop_assert_eq!(map.counts().iter().sum::<usize>(), case.loads.len());
    for (task, &pu) in map.as_slice().iter().enumerate() {
        prop_assert!(pu < npus, "task {task} on PU {pu} of {npus}");
        prop_assert!(case.is_available(pu), "task {task} on unavailable PU {pu}");
        if !case.is_migratable(task) {
            let home = case.current.as_ref().unwrap()[task];
            prop_assert_eq!(pu, home, "unmigratable task {} moved", task);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(256))]

    /// Property 1: every policy, every valid input.
    #[test]
    fn every_policy_maps_every_task_once_onto_available_pus(case in case()) {
        let registry = registry();
        let ctx = case.context();
        for &(spec, min_pus) in SPECS {
            let policy = build(&registry, spec);
            let result = policy.map(&ctx);
            if needs_current(policy.as_ref()) && case.current.is_none() {
                let unmet_current = matches!(
                    result,
                    Err(PolicyError::UnmetRequirement { requirement: Concept::CurrentMapping, .. })
                );
                prop_assert!(unmet_current, "{}: {:?}", spec, result);
                continue;
            }
            if case.npus() < min_pus {
                let too_few = matches!(
                    &result,
                    Err(PolicyError::HierNodes { machine, .. }) if *machine == case.npus()
                );
                prop_assert!(too_few, "{}: {:?}", spec, result);
                continue;
            }
            let map = match result {
                Ok(map) => map,
                Err(e) => return Err(TestCaseError::fail(format!("{spec}: {e}"))),
            };
            check_contract(&case, &map).map_err(|e| TestCaseError::fail(format!("{spec}: {e}")))?;
            // Pure: the same inputs give the same decision.
            prop_assert_eq!(&policy.map(&ctx).unwrap(), &map, "{} is not deterministic", spec);
            // The canonical spec rebuilds an equivalent policy.
            let canonical = policy.spec().to_string();
            let rebuilt = build(&registry, &canonical);
            prop_assert_eq!(&rebuilt.map(&ctx).unwrap(), &map, "{} -> {}", spec, canonical);
        }
    }
}

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

// ---------------------------------------------------------------------------
// Robustness
// ---------------------------------------------------------------------------

/// Any f64, with the awkward ones over-represented.
fn wild_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(-1.0),
        Just(-0.0),
        Just(0.0),
        Just(f64::MAX),
        Just(1e308),
        Just(f64::MIN_POSITIVE),
        Just(5e-324),
        0.0f64..10.0,
    ]
}

/// Finite, non-negative but extreme: sums and quotients overflow to infinity
/// or underflow to zero.
fn extreme_load() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        Just(-0.0),
        Just(f64::MAX),
        Just(1e308),
        Just(f64::MIN_POSITIVE),
        Just(5e-324),
        0.0f64..10.0,
        0.0f64..f64::MAX,
    ]
}

fn extreme_speed() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(5e-324),
        Just(f64::MIN_POSITIVE),
        Just(f64::MAX),
        Just(1.0),
        0.001f64..1000.0,
    ]
}

fn placement_entry() -> impl Strategy<Value = usize> {
    prop_oneof![Just(NO_PU), 0usize..10, any::<usize>()]
}

/// A length that usually matches `n` and sometimes does not.
fn length_near(n: usize) -> impl Strategy<Value = usize> {
    prop_oneof![3 => Just(n), 1 => 0usize..12]
}

/// Components as a careless or hostile context might register them.
#[derive(Clone, Debug)]
struct Wild {
    loads: Option<Vec<f64>>,
    pu_loads: Option<Vec<f64>>,
    speeds: Option<Vec<f64>>,
    available: Option<Vec<bool>>,
    migratable: Option<Vec<bool>>,
    current: Option<Vec<usize>>,
    /// Which wrong-shaped component to register first (0: none).
    bogus: u8,
}

impl Wild {
    fn context(&self) -> ContextHandler<'_> {
        let mut ctx = ContextHandler::new();
        let wrong = |concept, data| Component {
            concept,
            origin: Origin::Runtime,
            name: Cow::Borrowed("bogus"),
            data,
        };
        match self.bogus {
            1 => {
                ctx.register(wrong(
                    Concept::Workload {
                        subject: Subject::Tasks,
                        model: Model::Static,
                    },
                    ComponentData::Flags(vec![true; 3].into()),
                ));
            }
            2 => {
                ctx.register(wrong(
                    Concept::PuSpeed,
                    ComponentData::Placement(vec![0; 2].into()),
                ));
            }
            3 => {
                ctx.register(wrong(
                    Concept::CurrentMapping,
                    ComponentData::Values(vec![0.0; 2].into()),
                ));
            }
            4 => {
                ctx.register(wrong(
                    Concept::TaskMigratable,
                    ComponentData::Values(vec![1.0].into()),
                ));
            }
            5 => {
                // A PU workload described as `Any` meets an `Any` requirement
                // (ARTful Listing 2), so it is a real input: give it data of
                // the wrong kind, which must be a typed error.
                ctx.register(wrong(
                    Concept::Workload {
                        subject: Subject::Pus,
                        model: Model::Any,
                    },
                    ComponentData::Flags(vec![true].into()),
                ));
            }
            _ => {}
        }
        let dynamic = |subject| Concept::Workload {
            subject,
            model: Model::Dynamic,
        };
        if let Some(v) = &self.loads {
            ctx.provide_values(dynamic(Subject::Tasks), Origin::Runtime, &v[..]);
        }
        if let Some(v) = &self.pu_loads {
            ctx.provide_values(dynamic(Subject::Pus), Origin::User, &v[..]);
        }
        if let Some(v) = &self.speeds {
            ctx.provide_values(Concept::PuSpeed, Origin::User, &v[..]);
        }
        if let Some(v) = &self.available {
            ctx.provide_flags(Concept::PuAvailability, Origin::Runtime, &v[..]);
        }
        if let Some(v) = &self.migratable {
            ctx.provide_flags(Concept::TaskMigratable, Origin::Runtime, &v[..]);
        }
        if let Some(v) = &self.current {
            ctx.provide_placement(Origin::Runtime, &v[..]);
        }
        ctx
    }
}

fn wild() -> impl Strategy<Value = Wild> {
    (0usize..40, 0usize..7)
        .prop_flat_map(|(n, p)| {
            (
                option::weighted(0.95, length_near(n).prop_flat_map(|l| vec(wild_f64(), l))),
                option::weighted(0.95, length_near(p).prop_flat_map(|l| vec(wild_f64(), l))),
                option::of(length_near(p).prop_flat_map(|l| vec(wild_f64(), l))),
                option::of(length_near(p).prop_flat_map(|l| vec(any::<bool>(), l))),
                option::of(length_near(n).prop_flat_map(|l| vec(any::<bool>(), l))),
                option::of(length_near(n).prop_flat_map(|l| vec(placement_entry(), l))),
                prop_oneof![3 => Just(0u8), 1 => 1u8..=5],
            )
        })
        .prop_map(
            |(loads, pu_loads, speeds, available, migratable, current, bogus)| Wild {
                loads,
                pu_loads,
                speeds,
                available,
                migratable,
                current,
                bogus,
            },
        )
}

/// Consistent lengths, valid flags and placements, extreme finite numbers.
fn extreme() -> impl Strategy<Value = Wild> {
    (0usize..40, 1usize..7)
        .prop_flat_map(|(n, p)| {
            (
                vec(extreme_load(), n),
                prop_oneof![Just(vec![0.0; p]), vec(extreme_load(), p)],
                option::of(vec(extreme_speed(), p)),
                vec(0usize..p, n),
            )
        })
        .prop_map(|(loads, pu_loads, speeds, current)| Wild {
            loads: Some(loads),
            pu_loads: Some(pu_loads),
            speeds,
            available: None,
            migratable: None,
            current: Some(current),
            bogus: 0,
        })
}

/// Ok with a well-formed mapping, or a typed error that says something.
fn check_outcome(
    spec: &str,
    wild: &Wild,
    result: Result<Mapping, PolicyError>,
) -> Result<(), TestCaseError> {
    match result {
        Ok(map) => {
            let npus = wild.pu_loads.as_ref().map_or(0, Vec::len);
            let ntasks = wild.loads.as_ref().map_or(0, Vec::len);
            prop_assert_eq!(map.ntasks(), ntasks, "{}", spec);
            prop_assert!(
                map.as_slice().iter().all(|&p| p < npus),
                "{spec}: {map:?} on {npus} PUs"
            );
        }
        Err(e) => prop_assert!(!e.to_string().is_empty(), "{spec}: empty message for {e:?}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(300))]

    /// Property 4a: arbitrary components through every policy: no panic.
    #[test]
    fn arbitrary_inputs_give_a_mapping_or_a_typed_error(wild in wild()) {
        let registry = registry();
        let ctx = wild.context();
        for &(spec, _) in SPECS {
            check_outcome(spec, &wild, build(&registry, spec).map(&ctx))?;
        }
    }

    /// Property 4b: valid but extreme numbers (overflowing sums, denormal and
    /// huge speeds) through every policy: no panic, every mapping complete.
    #[test]
    fn extreme_finite_inputs_give_a_mapping_or_a_typed_error(wild in extreme()) {
        let registry = registry();
        let ctx = wild.context();
        for &(spec, _) in SPECS {
            check_outcome(spec, &wild, build(&registry, spec).map(&ctx))?;
        }
    }
}

/// Pieces that make spec strings almost right more often than random text.
const SPEC_PIECES: &[&str] = &[
    "greedy",
    "binlpt",
    "refine",
    "greedy-refine",
    "hier",
    "block",
    "round-robin",
    "Greedy",
    "static",
    ":",
    "=",
    ",",
    "(",
    ")",
    " ",
    "\t",
    "chunks",
    "cut",
    "faithful",
    "improved",
    "tolerance",
    "nodes",
    "outer",
    "inner",
    "0",
    "1",
    "2",
    "3",
    "-1",
    "1.05",
    "0.5",
    "nan",
    "inf",
    "1e400",
    "99999999999999999999999",
    "é",
    "🦀",
    "_",
    ".",
];

fn garbage_spec() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        vec(prop::sample::select(SPEC_PIECES), 0..14).prop_map(|p| p.concat()),
    ]
}

proptest! {
    #![proptest_config(config(512))]

    /// Property 4c: garbage specs give a typed error or a registered policy
    /// that then maps without panicking.
    #[test]
    fn garbage_specs_never_panic(text in garbage_spec()) {
        let registry = registry();
        match registry.build(&text) {
            Err(e) => prop_assert!(!e.to_string().is_empty()),
            Ok(policy) => {
                let name = Spec::parse(&text).unwrap().name;
                prop_assert!(registry.names().contains(&name), "{text} built unregistered {name}");
                let loads = [3.0, 1.0, 2.0, 0.0, 5.0];
                let pu_loads = [0.0; 3];
                let current = [0, 1, 2, NO_PU, 0];
                let mut ctx = runtime_context(&loads, &pu_loads);
                ctx.provide_placement(Origin::Runtime, &current[..]);
                if let Err(e) = policy.map(&ctx) {
                    prop_assert!(!e.to_string().is_empty());
                }
            }
        }
    }

    /// Property 4d: a well-formed name nobody registered is `UnknownPolicy`
    /// and the message lists every valid name.
    #[test]
    fn unknown_names_are_rejected_with_the_valid_ones(name in "[a-z][a-z0-9-]{0,12}") {
        let registry = registry();
        prop_assume!(!registry.names().contains(&name));
        let err = registry.build(&name).unwrap_err();
        let unknown = matches!(&err, PolicyError::UnknownPolicy { name: n, .. } if *n == name);
        prop_assert!(unknown, "{:?}", err);
        let message = err.to_string();
        for valid in registry.names() {
            prop_assert!(message.contains(&valid), "{message}");
        }
    }
}

/// Regression: the parser once advanced one *byte* per whitespace *char*, so
/// multi-byte whitespace (U+00A0, U+3000, ...) split a UTF-8 sequence and
/// panicked. Whatever the verdict (skipped or rejected), no panic.
#[test]
fn non_ascii_whitespace_in_a_spec_is_an_error_not_a_panic() {
    let registry = registry();
    for text in [
        "\u{a0}greedy",
        "greedy:\u{3000}",
        "refine:tolerance=\u{2003}1.1",
    ] {
        // Whatever the verdict (whitespace skipped or rejected), no panic.
        let _ = Spec::parse(text);
        let _ = registry.build(text);
    }
}

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
