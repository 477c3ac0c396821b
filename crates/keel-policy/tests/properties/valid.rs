//! Valid inputs: the contract, exactly once above all, for every spec.

use super::*;

// ---------------------------------------------------------------------------
// Valid inputs
// ---------------------------------------------------------------------------

/// A valid mapping problem, owned, as a context would hold it.
#[derive(Clone, Debug)]
pub(crate) struct Case {
    pub(crate) loads: Vec<f64>,
    pub(crate) pu_loads: Vec<f64>,
    pub(crate) speeds: Option<Vec<f64>>,
    pub(crate) available: Option<Vec<bool>>,
    pub(crate) migratable: Option<Vec<bool>>,
    pub(crate) current: Option<Vec<usize>>,
    /// Task loads described as static (user hints) rather than dynamic.
    pub(crate) static_model: bool,
    /// Task loads registered with user origin.
    pub(crate) user_origin: bool,
}

impl Case {
    pub(crate) fn npus(&self) -> usize {
        self.pu_loads.len()
    }

    pub(crate) fn is_available(&self, pu: usize) -> bool {
        self.available.as_ref().is_none_or(|a| a[pu])
    }

    pub(crate) fn is_migratable(&self, task: usize) -> bool {
        self.migratable.as_ref().is_none_or(|m| m[task])
    }

    /// The handler a runtime would build over its own buffers.
    pub(crate) fn context(&self) -> ContextHandler<'_> {
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
    pub(crate) fn input(&self) -> MappingInput<'_> {
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
    pub(crate) fn makespan(&self, placement: &[usize]) -> f64 {
        self.input()
            .loads_of(placement)
            .into_iter()
            .fold(0.0, f64::max)
    }
}

/// Task loads with zeros and many duplicates.
pub(crate) fn task_load() -> impl Strategy<Value = f64> {
    prop_oneof![
        2 => Just(0.0),
        2 => Just(1.0),
        1 => Just(7.5),
        6 => (0u32..200).prop_map(|x| f64::from(x) / 4.0),
        3 => 0.0f64..100.0,
    ]
}

/// Speeds in (0.25, 4], with the reference speed and the top end common.
pub(crate) fn speed() -> impl Strategy<Value = f64> {
    prop_oneof![
        2 => Just(1.0),
        1 => Just(4.0),
        3 => (0.25f64..=4.0).prop_map(|s| if s > 0.25 { s } else { 4.0 }),
    ]
}

/// Random valid cases with `0..80` tasks on `1..9` PUs. With `complete`, the
/// current mapping always exists and places every task on an available PU.
pub(crate) fn case_with(complete: bool) -> impl Strategy<Value = Case> {
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

pub(crate) fn case() -> impl Strategy<Value = Case> {
    case_with(false)
}

/// The contract every mapping satisfies: each task assigned exactly once to
/// an existing, available PU; unmigratable tasks where they were.
pub(crate) fn check_contract(case: &Case, map: &Mapping) -> Result<(), TestCaseError> {
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
