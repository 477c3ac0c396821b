use super::*;
use crate::local::LocalRanks;
use keel::objects::StepContext;
use serde::Deserialize;
use std::collections::BTreeMap;

/// An object whose state records every step it ran: a counter and a
/// checksum of (id, step), so that a lost, duplicated or stale object is
/// seen in its state, not only in its id.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Cell {
    id: u64,
    steps: u64,
    checksum: u64,
    /// Spin units per step: rank 0's objects are heavy.
    work: u32,
}

impl Object for Cell {
    fn step(&mut self, ctx: &StepContext<'_>) {
        let mut x = self.id;
        for _ in 0..self.work {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        std::hint::black_box(x);
        self.steps += 1;
        self.checksum = self
            .checksum
            .wrapping_mul(31)
            .wrapping_add(self.id ^ (ctx.step() as u64) << 20);
    }
}

/// The state `id` has after `steps` steps wherever it ran.
fn expected(id: u64, steps: u64, work: u32) -> Cell {
    let mut checksum = 0u64;
    for s in 0..steps {
        checksum = checksum.wrapping_mul(31).wrapping_add(id ^ s << 20);
    }
    Cell {
        id,
        steps,
        checksum,
        work,
    }
}

fn cells(rank: usize, n: u64) -> Vec<(u64, Cell)> {
    // Rank 0's objects are heavy enough (about a millisecond a step) that
    // the measured imbalance dwarfs a loaded machine's scheduling noise,
    // which the ranks' measured background loads also carry.
    let work = if rank == 0 { 1_000_000 } else { 200 };
    (0..n)
        .map(|i| {
            let id = rank as u64 * 1_000 + i;
            (
                id,
                Cell {
                    id,
                    steps: 0,
                    checksum: 0,
                    work,
                },
            )
        })
        .collect()
}

fn pool() -> ThreadPool {
    ThreadPool::builder().threads(2).pin(false).build().unwrap()
}

/// Runs 3 ranks × 16 cells (rank 0's heavy) for 12 steps under the
/// builder `configure` makes, checking after every step that the ids
/// across ranks are a partition of all ids, that every object has run
/// every step, and that every rank took the same rank-level decision;
/// at the end, that every state equals its recomputation. Returns the
/// objects moved across ranks and the balancing steps.
fn conserved_every_step(configure: impl Fn() -> DistributedBuilder + Sync) -> (usize, usize) {
    let ranks = 3;
    let steps = 12u64;
    let results = LocalRanks::run(ranks, |comm| {
        let pool = pool();
        let mut run = configure()
            .build(comm, &pool, cells(comm.rank(), 16))
            .map_err(|r| r.error)
            .unwrap();
        let (mut moved, mut balances) = (0, 0);
        for s in 0..steps {
            let step = run.step().unwrap();
            assert_eq!(step.rank_seconds.len(), ranks);
            if let Some(r) = &step.rebalance {
                moved += r.exported;
                balances += 1;
            }
            // Every rank decided alike (the same gathered times and costs).
            let decided = [u8::from(step.decision.balance)];
            let all = comm.all_gather(&decided).unwrap();
            assert!(all.iter().all(|d| d[..] == decided), "step {s}: {all:?}");
            // Every step: the ids across ranks are a partition of all ids,
            // and every object has run exactly s + 1 steps.
            let mut mine = Vec::new();
            run.visit(|id, cell| {
                assert_eq!(cell.id, id);
                assert_eq!(cell.steps, s + 1, "object {id} after step {s}");
                mine.extend_from_slice(&id.to_le_bytes());
            });
            let all = comm.all_gather(&mine).unwrap();
            let mut ids: Vec<u64> = all
                .iter()
                .flat_map(|b| {
                    b.chunks_exact(8)
                        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                })
                .collect();
            ids.sort_unstable();
            let want: Vec<u64> = (0..ranks as u64)
                .flat_map(|r| (0..16).map(move |i| r * 1_000 + i))
                .collect();
            assert_eq!(ids, want, "after step {s}");
        }
        (moved, balances, run.into_objects())
    });
    let (mut moved_total, mut balances_seen) = (0, 0);
    let mut all = BTreeMap::new();
    for r in results {
        let (moved, balances, objects) = r.unwrap();
        moved_total += moved;
        balances_seen = balances;
        for (id, cell) in objects {
            assert!(all.insert(id, cell).is_none());
        }
    }
    assert_eq!(all.len(), ranks * 16);
    for (&id, cell) in &all {
        assert_eq!(cell, &expected(id, steps, cell.work));
    }
    (moved_total, balances_seen)
}

#[test]
fn objects_and_their_state_are_conserved_across_migrations_every_step() {
    let (moved, balances) =
        conserved_every_step(|| DistributedObjects::builder().period(3).local_period(2));
    assert!(moved > 0, "rank 0's heavy objects should have moved");
    // After steps 3, 6, 9 and 12 (`step` does not know which is the last).
    assert_eq!(balances, 4);
}

#[test]
fn a_plan_decided_in_a_tree_conserves_every_object_too() {
    let (moved, balances) = conserved_every_step(|| {
        DistributedObjects::builder()
            .plan_shape(crate::PlanShape::Tree { group: 2 })
            .period(3)
    });
    assert!(
        moved > 0 && balances == 4,
        "{balances} balances, {moved} moved"
    );
}

#[test]
fn the_adaptive_default_balances_when_it_pays_and_conserves_every_object() {
    let (moved, balances) = conserved_every_step(|| {
        DistributedObjects::builder().local_invocation(Invocation::Adaptive)
    });
    // Rank 0 carries about a millisecond a step more than the others: the
    // loss repays a balancing step within the first few steps.
    assert!(
        balances >= 1 && moved > 0,
        "{balances} balances, {moved} moved"
    );
    let default = DistributedObjects::builder();
    assert_eq!(default.invocation, None, "unset: the adaptive default");
}

#[test]
fn rank_balancing_lowers_the_imbalance_between_ranks() {
    let results = LocalRanks::run(2, |comm| {
        let pool = pool();
        let mut run = DistributedObjects::builder()
            .rank_policy("greedy")
            .build(comm, &pool, cells(comm.rank(), 12))
            .map_err(|r| r.error)
            .unwrap();
        run.run(2).unwrap();
        run.rebalance().unwrap()
    });
    let r0 = results[0].as_ref().unwrap();
    let r1 = results[1].as_ref().unwrap();
    assert_eq!(r0.metrics, r1.metrics);
    assert!(
        r0.metrics.lambda_after < r0.metrics.lambda_before,
        "{:?}",
        r0.metrics
    );
    assert_eq!(r0.exported, r1.imported);
    assert_eq!(r1.exported, r0.imported);
    assert!(r0.bytes_sent > 0);
}

#[test]
fn one_rank_gives_the_shared_memory_runtimes_results() {
    let steps = 6;
    let distributed = LocalRanks::run(1, |comm| {
        let pool = pool();
        let mut run = DistributedObjects::builder()
            .period(2)
            .build(comm, &pool, cells(0, 10))
            .map_err(|r| r.error)
            .unwrap();
        let reports = run.run(steps).unwrap();
        for r in reports.iter().filter_map(|s| s.rebalance.as_ref()) {
            assert_eq!((r.exported, r.imported, r.metrics.migrations), (0, 0, 0));
        }
        run.into_objects()
    })
    .pop()
    .unwrap()
    .unwrap();
    let pool = pool();
    let (ids, objects): (Vec<u64>, Vec<Cell>) = cells(0, 10).into_iter().unzip();
    let mut shared = keel::objects::Objects::builder()
        .build(&pool, objects)
        .unwrap();
    shared.run(steps).unwrap();
    let shared: Vec<(u64, Cell)> = ids.into_iter().zip(shared.into_objects()).collect();
    assert_eq!(distributed, shared);
}

#[test]
fn a_bad_configuration_or_duplicate_id_is_one_error_and_hands_the_objects_back() {
    let results = LocalRanks::run(3, |comm| {
        let pool = pool();
        let builder = if comm.rank() == 2 {
            DistributedObjects::builder().local_policy("no-such-policy")
        } else {
            DistributedObjects::builder()
        };
        match builder.build(comm, &pool, cells(comm.rank(), 4)) {
            Ok(_) => panic!("built"),
            Err(refused) => (refused.error, refused.objects.len()),
        }
    });
    for r in results {
        let (e, back) = r.unwrap();
        assert!(
            matches!(&e, DistributedError::Rank { rank: 2, reason } if reason.contains("no-such-policy")),
            "{e}"
        );
        assert_eq!(back, 4);
    }
    let results = LocalRanks::run(2, |comm| {
        let pool = pool();
        let mut mine = cells(comm.rank(), 3);
        if comm.rank() == 1 {
            mine[2].0 = 1;
        }
        match DistributedObjects::builder().build(comm, &pool, mine) {
            Ok(_) => None,
            Err(refused) => Some((refused.error, refused.objects.len())),
        }
    });
    for r in results {
        assert_eq!(
            r.unwrap(),
            Some((
                DistributedError::DuplicateId {
                    id: 1,
                    first: 0,
                    second: 1
                },
                3
            ))
        );
    }
}

/// Serialises on rank 0 and fails on the second object it packs.
#[derive(Debug, Deserialize, PartialEq)]
struct Fragile {
    id: u64,
    steps: u64,
}

impl Serialize for Fragile {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.id == 3 {
            return Err(serde::ser::Error::custom("object 3 refuses to travel"));
        }
        (self.id, self.steps).serialize(s)
    }
}

impl Object for Fragile {
    fn step(&mut self, _: &StepContext<'_>) {
        self.steps += 1;
    }
}

#[test]
fn a_failed_migration_leaves_every_object_where_it_was() {
    for shape in [PlanShape::OneLevel, PlanShape::Tree { group: 2 }] {
        a_failed_migration_leaves_every_object_where_it_was_in(shape);
    }
}

fn a_failed_migration_leaves_every_object_where_it_was_in(shape: PlanShape) {
    let results = LocalRanks::run(2, |comm| {
        let pool = pool();
        let objects: Vec<(u64, Fragile)> = if comm.rank() == 0 {
            (0..8).map(|id| (id, Fragile { id, steps: 0 })).collect()
        } else {
            Vec::new()
        };
        // Round-robin sends object i to rank i mod 2 whatever the measured
        // loads, so object 3 always has to travel.
        let mut run = DistributedObjects::builder()
            .rank_policy("round-robin")
            .plan_shape(shape)
            .build(comm, &pool, objects)
            .map_err(|r| r.error)
            .unwrap();
        run.run(1).unwrap();
        let err = run.rebalance().unwrap_err();
        // The run goes on with every object where it was.
        run.run(1).unwrap();
        (err, run.into_objects())
    });
    let (e0, objects0) = results[0].as_ref().unwrap();
    let (e1, objects1) = results[1].as_ref().unwrap();
    assert_eq!(e0, e1);
    assert!(
        e0.to_string()
            .contains("rank 0: object 3 could not be serialised"),
        "{e0}"
    );
    assert_eq!(objects0.len(), 8);
    assert!(objects1.is_empty());
    assert!(objects0.iter().all(|(id, o)| o.id == *id && o.steps == 2));
}

/// One domain of an object workload: its state is the checksum of the
/// work it did, so a lost, repeated or stale step shows in it.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Domain {
    id: usize,
    /// Which of `INVOCATION_WORKLOADS` it belongs to.
    workload: usize,
    steps: usize,
    checksum: f64,
}

static WORK: std::sync::OnceLock<Vec<Box<dyn keel_workloads::objects::ObjectWorkload>>> =
    std::sync::OnceLock::new();

fn workload(name: &str) -> &'static dyn keel_workloads::objects::ObjectWorkload {
    let all = WORK.get_or_init(|| {
        keel_workloads::objects::INVOCATION_WORKLOADS
            .iter()
            .map(|w| {
                keel_workloads::objects::object_workload(&format!("{w}:pus=3,steps=40,scale=0.02"))
                    .unwrap()
            })
            .collect()
    });
    let i = keel_workloads::objects::INVOCATION_WORKLOADS
        .iter()
        .position(|w| *w == name)
        .unwrap();
    all[i].as_ref()
}

/// The work of `id` in `step` of `w`, as `Domain::step` does it.
fn domain_work(w: &dyn keel_workloads::objects::ObjectWorkload, id: usize, step: usize) -> f64 {
    use keel_workloads::objects::run_units;
    let mut sum = run_units(w.serial_units(id, step), id as u64);
    for c in 0..w.cells(id) {
        sum += run_units(w.cell_units(id, step, c), c as u64);
    }
    sum
}

impl Object for Domain {
    fn step(&mut self, ctx: &StepContext<'_>) {
        let w = workload(keel_workloads::objects::INVOCATION_WORKLOADS[self.workload]);
        let (id, step) = (self.id, ctx.step());
        assert_eq!(step, self.steps, "domain {id} stepped out of order");
        // The cells run as a potential task (stolen or not), summed in id
        // order afterwards so that the checksum does not depend on who ran
        // which chunk.
        let parts: Vec<std::sync::Mutex<f64>> = (0..w.cells(id))
            .map(|_| std::sync::Mutex::new(0.0))
            .collect();
        ctx.for_each(0..w.cells(id), |c| {
            *parts[c].lock().unwrap() =
                keel_workloads::objects::run_units(w.cell_units(id, step, c), c as u64);
        });
        let mut sum = keel_workloads::objects::run_units(w.serial_units(id, step), id as u64);
        for p in &parts {
            sum += *p.lock().unwrap();
        }
        self.checksum += sum;
        self.steps += 1;
    }
}

#[test]
fn every_workload_under_adaptive_balancing_in_both_shapes_keeps_every_domain_once() {
    use keel_workloads::objects::INVOCATION_WORKLOADS;
    for (k, name) in INVOCATION_WORKLOADS.iter().enumerate() {
        let w = workload(name);
        let n = w.objects();
        for shape in [PlanShape::OneLevel, PlanShape::Tree { group: 2 }] {
            let results = LocalRanks::run(3, |comm| {
                let pool = ThreadPool::builder().threads(1).pin(false).build().unwrap();
                let block = n.div_ceil(3);
                let mine: Vec<(u64, Domain)> = (comm.rank() * block
                    ..((comm.rank() + 1) * block).min(n))
                    .map(|id| {
                        let d = Domain {
                            id,
                            workload: k,
                            steps: 0,
                            checksum: 0.0,
                        };
                        (id as u64, d)
                    })
                    .collect();
                let mut run = DistributedObjects::builder()
                    .rank_policy("greedy")
                    .plan_shape(shape)
                    .local_invocation(Invocation::Adaptive)
                    .stealing("history-idle")
                    .build(comm, &pool, mine)
                    .map_err(|r| r.error)
                    .unwrap();
                let mut balances = 0;
                for s in 0..w.steps() {
                    let step = run.step().unwrap();
                    balances += usize::from(step.rebalance.is_some());
                    let mut mine = Vec::new();
                    run.visit(|id, d| {
                        assert_eq!((d.id as u64, d.steps), (id, s + 1));
                        mine.extend_from_slice(&id.to_le_bytes());
                    });
                    let all = comm.all_gather(&mine).unwrap();
                    let held: usize = all.iter().map(|b| b.len() / 8).sum();
                    assert_eq!(held, n, "{name}, {shape:?}, after step {s}");
                }
                (balances, run.into_objects())
            });
            let mut seen = vec![false; n];
            for r in results {
                let (balances, objects) = r.unwrap();
                // The band that stays on the first ranks is balanced.
                if *name == "persistent" {
                    assert!(balances > 0, "{shape:?}: no balancing step");
                }
                for (id, d) in objects {
                    assert!(
                        !std::mem::replace(&mut seen[id as usize], true),
                        "{id} twice"
                    );
                    let want: f64 = (0..w.steps()).map(|s| domain_work(w, d.id, s)).sum();
                    assert_eq!(d.checksum, want, "{name}, {shape:?}: domain {id}");
                }
            }
            assert!(
                seen.iter().all(|&s| s),
                "{name}, {shape:?}: a domain was lost"
            );
        }
    }
}
