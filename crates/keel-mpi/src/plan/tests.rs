use super::*;
use crate::local::LocalRanks;
use proptest::prelude::*;

/// Runs `plan` on `ranks` ranks, rank r passing `objects[r]` under `spec`.
fn run(
    spec: &str,
    objects: &[Vec<LocalObject>],
    background: &[f64],
) -> Vec<Result<Plan, PlanError>> {
    run_shaped(PlanShape::OneLevel, spec, objects, background)
}

/// [`run`] in the given shape.
fn run_shaped(
    shape: PlanShape,
    spec: &str,
    objects: &[Vec<LocalObject>],
    background: &[f64],
) -> Vec<Result<Plan, PlanError>> {
    LocalRanks::run(objects.len(), |comm| {
        let r = comm.rank();
        plan(
            comm,
            &PlanRequest {
                spec,
                objects: &objects[r],
                background: background.get(r).copied().unwrap_or(0.0),
                speed: 1.0,
                shape,
            },
        )
    })
    .into_iter()
    .map(|r| r.expect("no rank panics"))
    .collect()
}

/// Every object ends on exactly one rank, exports and imports pair up,
/// and every rank agrees on the metrics.
fn check_consistent(objects: &[Vec<LocalObject>], plans: &[Plan]) {
    let ranks = objects.len();
    let mut held: HashMap<u64, usize> = HashMap::new();
    for (r, plan) in plans.iter().enumerate() {
        assert_eq!(plan.destinations.len(), objects[r].len());
        assert_eq!(plan.metrics, plans[0].metrics);
        let exported: Vec<u64> = plan.exports.iter().map(|t| t.id).collect();
        for (o, &to) in objects[r].iter().zip(&plan.destinations) {
            assert!(to < ranks);
            assert_eq!(to != r, exported.contains(&o.id));
            if !o.migratable {
                assert_eq!(to, r, "an unmigratable object moved");
            }
            assert!(held.insert(o.id, to).is_none(), "id {} twice", o.id);
        }
        for t in &plan.exports {
            let back = &plans[t.rank].imports;
            assert!(back.contains(&Transfer {
                id: t.id,
                rank: r,
                size: t.size
            }));
        }
        for t in &plan.imports {
            assert_eq!(held.get(&t.id).copied().unwrap_or(r), r);
        }
    }
    let imports: usize = plans.iter().map(|p| p.imports.len()).sum();
    let exports: usize = plans.iter().map(|p| p.exports.len()).sum();
    assert_eq!(imports, exports);
    assert_eq!(exports, plans[0].metrics.migrations);
    assert_eq!(plans[0].metrics.objects, held.len());
}

fn objects(
    ranks: usize,
    per_rank: usize,
    weight: impl Fn(usize, usize) -> f64,
) -> Vec<Vec<LocalObject>> {
    (0..ranks)
        .map(|r| {
            (0..per_rank)
                .map(|i| LocalObject {
                    id: (r * 1000 + i) as u64,
                    weight: weight(r, i),
                    size: 8 * (i as u64 + 1),
                    migratable: true,
                })
                .collect()
        })
        .collect()
}

#[test]
fn the_decision_is_the_registry_policys_on_the_gathered_problem() {
    let objs = objects(4, 12, |r, i| {
        ((r * 7 + i * 3) % 11) as f64 + if r == 1 { 9.0 } else { 0.5 }
    });
    let background = [0.0, 2.0, 0.0, 5.0];
    for spec in [
        "greedy",
        "greedy-refine",
        "refine",
        "hier:nodes=2,outer=greedy,inner=refine",
    ] {
        let plans: Vec<Plan> = run(spec, &objs, &background)
            .into_iter()
            .map(|p| p.unwrap_or_else(|e| panic!("{spec}: {e}")))
            .collect();
        check_consistent(&objs, &plans);

        let loads: Vec<f64> = objs.iter().flatten().map(|o| o.weight).collect();
        let current: Vec<usize> = objs
            .iter()
            .enumerate()
            .flat_map(|(r, v)| vec![r; v.len()])
            .collect();
        let migratable = vec![true; loads.len()];
        let mut ctx = ContextHandler::new();
        let measured = |subject| Concept::Workload {
            subject,
            model: Model::Dynamic,
        };
        ctx.provide_values(measured(Subject::Tasks), Origin::User, &loads[..])
            .provide_values(measured(Subject::Pus), Origin::User, &background[..])
            .provide_flags(Concept::TaskMigratable, Origin::User, &migratable[..])
            .provide_placement(Origin::User, &current[..]);
        let direct = mapping::registry().build(spec).unwrap().map(&ctx).unwrap();
        let planned: Vec<usize> = plans.iter().flat_map(|p| p.destinations.clone()).collect();
        assert_eq!(planned, direct.as_slice(), "{spec}");
        assert!(
            plans[0].metrics.lambda_after <= plans[0].metrics.lambda_before + 1e-12,
            "{spec}"
        );
    }
}

#[test]
fn one_rank_keeps_everything() {
    let objs = objects(1, 20, |_, i| i as f64);
    let plans: Vec<Plan> = run("greedy", &objs, &[])
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert!(plans[0].exports.is_empty() && plans[0].imports.is_empty());
    assert!(plans[0].destinations.iter().all(|&d| d == 0));
    assert_eq!(plans[0].metrics.migrations, 0);
}

#[test]
fn a_bad_input_on_one_rank_is_the_same_error_on_every_rank() {
    let mut objs = objects(3, 4, |_, _| 1.0);
    objs[2][1].weight = f64::NAN;
    let results = run("greedy", &objs, &[]);
    for r in &results {
        match r {
            Err(PlanError::BadInput { rank: 2, reason }) => {
                assert!(reason.contains("id 2001"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
    }

    let objs = objects(3, 4, |_, _| 1.0);
    let results = run("greedy", &objs, &[0.0, -1.0, 0.0]);
    assert!(results
        .iter()
        .all(|r| matches!(r, Err(PlanError::BadInput { rank: 1, .. }))));

    let results = run("no-such-policy", &objs, &[]);
    assert!(results
        .iter()
        .all(|r| matches!(r, Err(PlanError::BadInput { rank: 0, .. }))));
}

#[test]
fn mismatched_specs_and_duplicate_ids_are_errors_everywhere() {
    let objs = objects(3, 2, |_, _| 1.0);
    let results: Vec<_> = LocalRanks::run(3, |comm| {
        let spec = if comm.rank() == 2 { "refine" } else { "greedy" };
        plan(
            comm,
            &PlanRequest {
                spec,
                ..PlanRequest::new(&objs[comm.rank()])
            },
        )
    });
    for r in results {
        match r.unwrap() {
            Err(PlanError::SpecMismatch {
                rank: 2,
                spec,
                expected,
            }) => {
                assert_eq!((spec.as_str(), expected.as_str()), ("refine", "greedy"))
            }
            other => panic!("{other:?}"),
        }
    }
    let mut dup = objects(3, 2, |_, _| 1.0);
    dup[2][0].id = dup[0][1].id;
    for r in run("greedy", &dup, &[]) {
        assert_eq!(
            r,
            Err(PlanError::DuplicateId {
                id: dup[0][1].id,
                first: 0,
                second: 2
            })
        );
    }
}

#[test]
fn a_rank_that_dies_before_the_call_fails_the_others_instead_of_hanging() {
    let objs = objects(3, 2, |_, _| 1.0);
    let results = LocalRanks::run(3, |comm| {
        if comm.rank() == 1 {
            panic!("rank 1 died");
        }
        plan(comm, &PlanRequest::new(&objs[comm.rank()]))
    });
    assert!(results[1].is_err());
    for r in [&results[0], &results[2]] {
        assert_eq!(
            r.as_ref().unwrap(),
            &Err(PlanError::Comm(CommError::PeerFailed { rank: 1 }))
        );
    }
}

#[test]
fn unmigratable_objects_stay_and_sizes_are_summed() {
    let mut objs = objects(2, 6, |r, _| if r == 0 { 5.0 } else { 0.1 });
    objs[0][0].migratable = false;
    objs[0][1].migratable = false;
    let plans: Vec<Plan> = run("greedy", &objs, &[])
        .into_iter()
        .map(Result::unwrap)
        .collect();
    check_consistent(&objs, &plans);
    assert_eq!(&plans[0].destinations[..2], &[0, 0]);
    let moved: u64 = plans[0].exports.iter().map(|t| t.size).sum::<u64>()
        + plans[1].exports.iter().map(|t| t.size).sum::<u64>();
    assert_eq!(plans[0].metrics.bytes_moved, moved);
    assert!(plans[0].metrics.migrations > 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_object_ends_on_exactly_one_rank(
        weights in proptest::collection::vec(proptest::collection::vec((0.0f64..100.0, any::<bool>()), 0..12), 1..5),
        spec in prop::sample::select(vec!["greedy", "greedy-refine", "refine", "block", "binlpt:chunks=4"]),
    ) {
        let objs: Vec<Vec<LocalObject>> = weights
            .iter()
            .enumerate()
            .map(|(r, v)| v.iter().enumerate().map(|(i, &(w, m))| LocalObject {
                id: (r as u64) << 32 | i as u64,
                weight: w,
                size: i as u64,
                migratable: m,
            }).collect())
            .collect();
        let results = run(spec, &objs, &[]);
        match &results[0] {
            Ok(_) => {
                let plans: Vec<Plan> = results.into_iter().map(Result::unwrap).collect();
                check_consistent(&objs, &plans);
            }
            // A policy may refuse an input (block moves pinned objects, say):
            // then every rank returns the same error.
            Err(e) => prop_assert!(results.iter().all(|r| r.as_ref().err() == Some(e))),
        }
    }
}

/// The tree: every object on exactly one rank, exports and imports paired,
/// the same metrics everywhere, unmigratable objects kept, in every
/// grouping, and a persistent imbalance balanced.
mod in_a_tree {
    use super::*;

    #[test]
    fn a_heavy_group_lends_to_the_light_ones() {
        let objs = objects(6, 8, |r, i| if r < 2 { 4.0 + (i % 3) as f64 } else { 1.0 });
        for group in [1, 2, 3, 4, 6] {
            let plans: Vec<Plan> =
                run_shaped(PlanShape::Tree { group }, "greedy-refine", &objs, &[])
                    .into_iter()
                    .map(|p| p.unwrap_or_else(|e| panic!("groups of {group}: {e}")))
                    .collect();
            check_consistent(&objs, &plans);
            let m = &plans[0].metrics;
            assert!(m.lambda_before > 1.0, "{m:?}");
            assert!(m.lambda_after < 0.15, "groups of {group}: {m:?}");
        }
    }

    #[test]
    fn errors_are_the_same_on_every_rank_in_every_group() {
        let objs = objects(5, 3, |_, _| 1.0);
        let tree = PlanShape::Tree { group: 2 };
        let mut bad = objs.clone();
        bad[3][1].weight = -1.0;
        for r in run_shaped(tree, "greedy", &bad, &[]) {
            assert!(
                matches!(r, Err(PlanError::BadInput { rank: 3, .. })),
                "{r:?}"
            );
        }
        let mut dup = objs.clone();
        dup[4][2].id = dup[1][0].id;
        for r in run_shaped(tree, "greedy", &dup, &[]) {
            assert_eq!(
                r,
                Err(PlanError::DuplicateId {
                    id: dup[1][0].id,
                    first: 1,
                    second: 4
                })
            );
        }
        // A member's spec, and a leader's, unlike rank 0's.
        for odd in [3, 2] {
            let results = LocalRanks::run(5, |comm| {
                let spec = if comm.rank() == odd {
                    "refine"
                } else {
                    "greedy"
                };
                plan(
                    comm,
                    &PlanRequest {
                        spec,
                        shape: tree,
                        ..PlanRequest::new(&objs[comm.rank()])
                    },
                )
            });
            for r in results {
                match r.unwrap() {
                    Err(PlanError::SpecMismatch {
                        rank,
                        spec,
                        expected,
                    }) => {
                        assert_eq!(
                            (rank, spec.as_str(), expected.as_str()),
                            (odd, "refine", "greedy")
                        )
                    }
                    other => panic!("{other:?}"),
                }
            }
        }
        // Ranks that disagree on the shape fail, not wait.
        let results = LocalRanks::run(3, |comm| {
            let shape = if comm.rank() == 1 {
                PlanShape::Tree { group: 3 }
            } else {
                tree
            };
            plan(
                comm,
                &PlanRequest {
                    shape,
                    ..PlanRequest::new(&objs[comm.rank()])
                },
            )
        });
        for r in results {
            assert!(matches!(r.unwrap(), Err(PlanError::ShapeMismatch { .. })));
        }
        let results = LocalRanks::run(2, |comm| {
            let shape = if comm.rank() == 1 {
                PlanShape::OneLevel
            } else {
                tree
            };
            plan(
                comm,
                &PlanRequest {
                    shape,
                    ..PlanRequest::new(&objs[comm.rank()])
                },
            )
        });
        for r in results {
            assert!(r.unwrap().is_err());
        }
        // A rank that dies fails the others.
        let results = LocalRanks::run(4, |comm| {
            if comm.rank() == 3 {
                panic!("rank 3 died");
            }
            plan(
                comm,
                &PlanRequest {
                    shape: tree,
                    ..PlanRequest::new(&objs[comm.rank()])
                },
            )
        });
        for r in &results[..3] {
            assert!(matches!(r.as_ref().unwrap(), Err(PlanError::Comm(_))));
        }
    }

    /// A collective layer that counts the bytes each operation brings
    /// this rank, the sizes `MpiComm` exchanges first included (4 bytes per
    /// rank per variable-size operation).
    struct Counting<'a> {
        inner: &'a crate::LocalComm,
        received: std::cell::Cell<u64>,
    }

    impl Collective for Counting<'_> {
        fn rank(&self) -> usize {
            self.inner.rank()
        }
        fn size(&self) -> usize {
            self.inner.size()
        }
        fn all_gather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, CommError> {
            let all = self.inner.all_gather(mine)?;
            let bytes: usize = all.iter().map(Vec::len).sum::<usize>() - mine.len();
            self.received
                .set(self.received.get() + bytes as u64 + 4 * all.len() as u64);
            Ok(all)
        }
        fn all_to_all(&self, outgoing: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, CommError> {
            let all = self.inner.all_to_all(outgoing)?;
            let bytes: usize = all.iter().map(Vec::len).sum::<usize>() - all[self.rank()].len();
            self.received
                .set(self.received.get() + bytes as u64 + 4 * all.len() as u64);
            Ok(all)
        }
        fn broadcast(&self, root: usize, data: &mut Vec<u8>) -> Result<(), CommError> {
            self.inner.broadcast(root, data)?;
            self.received.set(self.received.get() + data.len() as u64);
            Ok(())
        }
    }

    #[test]
    fn a_rank_that_leads_no_group_receives_its_answer_and_the_summaries_not_every_object() {
        let (ranks, per_rank, group) = (32, 64, 8);
        let objs = objects(ranks, per_rank, |r, i| {
            if r < 8 {
                4.0
            } else {
                1.0 + (i % 2) as f64
            }
        });
        let received = |shape: PlanShape| -> Vec<u64> {
            LocalRanks::run(ranks, |comm| {
                let counting = Counting {
                    inner: comm,
                    received: std::cell::Cell::new(0),
                };
                let request = PlanRequest {
                    shape,
                    ..PlanRequest::new(&objs[comm.rank()])
                };
                plan(&counting, &request).unwrap();
                counting.received.get()
            })
            .into_iter()
            .map(Result::unwrap)
            .collect()
        };
        let one = received(PlanShape::OneLevel);
        let tree = received(PlanShape::Tree { group });
        // One level: every rank receives every other rank's 64 records.
        assert!(one.iter().all(|&b| b > 31 * 64 * 25), "{one:?}");
        // The tree: a non-leader receives the ids hashed to it, the shapes,
        // the summaries, its answer and the sizes of eight operations (4
        // bytes per rank each): about its own objects' worth, not every
        // rank's.
        let non_leader = (0..ranks)
            .filter(|r| r % group != 0)
            .map(|r| tree[r])
            .max()
            .unwrap();
        let sizes = 8 * 4 * ranks as u64;
        assert!(
            non_leader < sizes + 32 * per_rank as u64,
            "{non_leader} bytes"
        );
        assert!(10 * non_leader < one[0], "{non_leader} against {}", one[0]);
        let leader = (0..ranks).step_by(group).map(|r| tree[r]).max().unwrap();
        assert!(leader < one[0], "a leader {leader}, one level {}", one[0]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn every_object_ends_on_exactly_one_rank(
            weights in proptest::collection::vec(proptest::collection::vec((0.0f64..100.0, any::<bool>()), 0..10), 1..8),
            group in 1usize..5,
            spec in prop::sample::select(vec!["greedy", "greedy-refine", "refine", "lpt-eft"]),
        ) {
            let objs: Vec<Vec<LocalObject>> = weights
                .iter()
                .enumerate()
                .map(|(r, v)| v.iter().enumerate().map(|(i, &(w, m))| LocalObject {
                    id: (r as u64) << 32 | i as u64,
                    weight: w,
                    size: i as u64,
                    migratable: m,
                }).collect())
                .collect();
            let results = run_shaped(PlanShape::Tree { group }, spec, &objs, &[]);
            match &results[0] {
                Ok(_) => {
                    let plans: Vec<Plan> = results.into_iter().map(Result::unwrap).collect();
                    check_consistent(&objs, &plans);
                }
                Err(e) => prop_assert!(results.iter().all(|r| r.as_ref().err() == Some(e)), "{:?}", results),
            }
        }
    }
}
