use super::*;
use std::sync::atomic::AtomicU64;

use keel_policy::mapping;

fn pool(threads: usize) -> ThreadPool {
    ThreadPool::builder()
        .threads(threads)
        .pin(false)
        .build()
        .unwrap()
}

/// An object that checks it is stepped once per step, in order, with its
/// own state, and does uneven work (some of it as a potential task).
struct Probe {
    id: usize,
    steps: usize,
    checksum: u64,
    cells: u64,
}

impl Probe {
    fn new(id: usize) -> Self {
        Probe {
            id,
            steps: 0,
            checksum: 0,
            cells: 0,
        }
    }
}

/// `n` steps of work the optimiser cannot fold into a formula (a sum of
/// squares would be one, and a release build would time nothing).
fn spin(n: u64) -> u64 {
    (0..n).fold(0u64, |a, b| std::hint::black_box(a.wrapping_add(b * b)))
}

impl Object for Probe {
    fn step(&mut self, ctx: &StepContext<'_>) {
        assert_eq!(ctx.object(), self.id, "state belongs to its object");
        assert_eq!(
            self.steps,
            ctx.step(),
            "object {} skipped or repeated",
            self.id
        );
        self.steps += 1;
        self.checksum += (self.id * 1000 + ctx.step()) as u64;
        // Load changes with time so that remaps move objects.
        let heavy = (self.id + ctx.step() / 3).is_multiple_of(7);
        spin(if heavy { 20_000 } else { 500 });
        let cells = AtomicU64::new(0);
        ctx.for_each(0..(10 + self.id % 13), |_| {
            spin(300);
            cells.fetch_add(1, Ordering::Relaxed);
        });
        self.cells += cells.into_inner();
    }
}

fn expected(id: usize, steps: usize) -> (u64, u64) {
    let checksum = (0..steps).map(|s| (id * 1000 + s) as u64).sum();
    (checksum, (steps * (10 + id % 13)) as u64)
}

fn policy_specs() -> Vec<String> {
    mapping::registry()
        .names()
        .into_iter()
        .map(|n| {
            if n == "hier" {
                "hier:nodes=1".into()
            } else {
                n
            }
        })
        .collect()
}

#[test]
fn every_object_steps_once_per_step_under_every_policy_and_migration() {
    let pool = pool(3);
    let steps = 12;
    for spec in policy_specs() {
        for stealing in ["none", "all", "history-idle"] {
            let objects: Vec<Probe> = (0..40).map(Probe::new).collect();
            let mut run = Objects::builder()
                .policy(spec.as_str())
                .period(3)
                .stealing(stealing)
                .build(&pool, objects)
                .unwrap();
            let report = run.run(steps).unwrap();
            assert_eq!(report.steps, steps);
            assert_eq!(report.rebalances.len(), 3, "{spec}: after steps 3, 6, 9");
            for r in &report.rebalances {
                assert!(r.lambda_before >= 0.0 && r.lambda_after >= 0.0);
                assert!(r.decision_s >= 0.0 && r.total_s >= r.decision_s);
            }
            if spec == "greedy" {
                assert!(report.migrations() > 0, "greedy moves objects");
            }
            if stealing == "none" {
                assert_eq!(report.tasks.exposed, 0);
            }
            assert!(report.lambda >= 0.0 && report.busy_s > 0.0);
            let placement = run.placement().to_vec();
            let mut seen = 0;
            run.visit(|id, pu, _| {
                assert_eq!(placement[id], pu);
                seen += 1;
            });
            assert_eq!(seen, 40);
            for (id, p) in run.into_objects().into_iter().enumerate() {
                assert_eq!(p.id, id);
                assert_eq!(p.steps, steps, "{spec}/{stealing}: object {id}");
                assert_eq!((p.checksum, p.cells), expected(id, steps), "{spec}");
            }
        }
    }
}

#[test]
fn declared_speeds_turn_measured_times_into_work_for_lpt_eft() {
    use keel_policy::mapping::{Greedy, LptEft, Mapping, MappingInput};
    struct Fixed;
    impl Object for Fixed {
        fn step(&mut self, _: &StepContext<'_>) {
            spin(2_000_000);
        }
    }
    let pool = pool(2);
    let speeds = vec![1.0, 0.01];
    let mut run = Objects::builder()
        .policy("lpt-eft")
        .stealing("none")
        .speeds(speeds.clone())
        .build(&pool, (0..8).map(|_| Fixed).collect())
        .unwrap();
    assert_eq!(run.speeds(), Some(&speeds[..]));
    run.run(2).unwrap();
    let current = run.placement().to_vec();
    let work: Vec<f64> = run
        .object_loads()
        .iter()
        .zip(&current)
        .map(|(&t, &pu)| t * speeds[pu])
        .collect();
    let background = run.pu_background().to_vec();
    let r = run.rebalance().unwrap();
    assert_eq!(r.policy, "lpt-eft");
    let input = MappingInput::new(&work, &background)
        .unwrap()
        .with_speeds(&speeds)
        .unwrap()
        .with_current(&current)
        .unwrap();
    let eft = LptEft.decide(&input);
    assert_eq!(run.placement(), eft.as_slice(), "the remap decided on work");
    // GreedyLB's rule sends a heavy object to the 100x slower PU as soon
    // as the fast one holds one; the earliest finish keeps them all fast.
    let makespan = |m: &Mapping| metrics::evaluate(&input, m).makespan;
    let greedy = Greedy.decide(&input);
    assert!(
        makespan(&eft) * 10.0 < makespan(&greedy),
        "lpt-eft {} vs greedy {}",
        makespan(&eft),
        makespan(&greedy)
    );
    let bad = |speeds| {
        Objects::builder()
            .speeds(speeds)
            .build(&pool, (0..2).map(|_| Fixed).collect())
            .unwrap_err()
    };
    assert_eq!(
        bad(vec![1.0, 0.0]),
        ObjectsError::InvalidSpeed { pu: 1, speed: 0.0 }
    );
    assert!(matches!(
        bad(vec![f64::NAN, 1.0]),
        ObjectsError::InvalidSpeed { pu: 0, .. }
    ));
    assert!(matches!(
        bad(vec![1.0]),
        ObjectsError::LengthMismatch { what: "speeds", .. }
    ));
}

/// An object whose every step spins a fixed amount.
struct Fixed(u64);

impl Object for Fixed {
    fn step(&mut self, _: &StepContext<'_>) {
        spin(self.0);
    }
}

/// Eight objects, the first four heavy: block mapping puts them all on
/// PU 0 of 2, about 2 ms lost per step.
fn four_heavy_objects() -> Vec<Fixed> {
    (0..8)
        .map(|i| Fixed(if i < 4 { 200_000 } else { 1_000 }))
        .collect()
}

#[test]
fn a_measured_remap_moves_load_off_the_hot_pu() {
    let pool = pool(2);
    let objects = four_heavy_objects();
    let mut run = Objects::builder()
        .policy("greedy")
        .stealing("none")
        .invocation(keel_policy::invoke::Invocation::Never)
        .build(&pool, objects)
        .unwrap();
    assert_eq!(run.placement(), &[0, 0, 0, 0, 1, 1, 1, 1]);
    run.step().unwrap();
    run.step().unwrap();
    let loads = run.object_loads();
    assert!(loads.iter().all(|&l| l > 0.0));
    let r = run.rebalance().unwrap();
    // Two heavy objects move when the measurements are clean; a heavy step
    // preempted on a busy machine measures heavier, and LPT may then move
    // that one alone (1 or 3 heavy left on PU 0), never none or all.
    assert!(r.migrations >= 1, "{r:?}");
    assert!(r.lambda_after < r.lambda_before, "{r:?}");
    let heavy_on_0 = run.placement()[..4].iter().filter(|&&p| p == 0).count();
    assert!((1..=3).contains(&heavy_on_0), "{:?}", run.placement());
    assert!(
        run.object_loads().iter().all(|&l| l == 0.0),
        "database cleared"
    );
    assert!(run.pu_background().iter().all(|&b| b == 0.0));
}

#[test]
fn remaps_respect_unmigratable_objects_and_unavailable_pus() {
    let pool = pool(3);
    for spec in policy_specs() {
        let n = 30;
        // Objects 0..5 start on PU 0 (block) and may not move.
        let migratable: Vec<bool> = (0..n).map(|i| i >= 5).collect();
        let mut run = Objects::builder()
            .policy(spec.as_str())
            .period(2)
            .available(vec![true, true, false])
            .migratable(migratable.clone())
            .build(&pool, (0..n).map(Probe::new).collect())
            .unwrap();
        let start = run.placement().to_vec();
        assert!(start.iter().all(|&p| p != 2), "{spec}: {start:?}");
        for _ in 0..6 {
            run.step().unwrap();
            assert!(run.placement().iter().all(|&p| p != 2), "{spec}");
            assert_eq!(
                &run.placement()[..5],
                &start[..5],
                "{spec}: unmigratable moved"
            );
        }
        // PU 1 goes away: everything migratable on it must leave.
        run.set_available(1, false).unwrap();
        run.rebalance().unwrap();
        assert!(
            run.placement().iter().all(|&p| p == 0),
            "{spec}: {:?}",
            run.placement()
        );
        run.set_available(2, true).unwrap();
        run.step().unwrap();
        for p in run.into_objects() {
            assert_eq!(p.steps, 7);
        }
    }
}

#[test]
fn an_unmigratable_object_on_an_unavailable_pu_is_a_typed_error() {
    let pool = pool(2);
    let mut run = Objects::builder()
        .policy("greedy")
        .migratable(vec![false, true, true, false])
        .build(&pool, (0..4).map(Probe::new).collect())
        .unwrap();
    run.step().unwrap();
    run.set_available(1, false).unwrap();
    let e = run.rebalance().unwrap_err();
    assert!(matches!(e, ObjectsError::Decision { .. }), "{e}");
    assert_eq!(run.placement(), &[0, 0, 1, 1], "nothing moved");
    assert!(matches!(
        run.set_available(0, false),
        Err(ObjectsError::NoAvailablePu { pus: 2 })
    ));
    assert!(matches!(
        run.set_available(5, true),
        Err(ObjectsError::PuOutOfRange { pu: 5, pus: 2 })
    ));
}

#[test]
fn panics_in_a_step_or_a_potential_task_reach_the_caller() {
    struct Bomb {
        id: usize,
        in_task: bool,
        armed: bool,
        steps: usize,
    }
    impl Object for Bomb {
        fn step(&mut self, ctx: &StepContext<'_>) {
            self.steps += 1;
            let fire = self.armed && self.id == 5;
            if fire && !self.in_task {
                panic!("step failed");
            }
            ctx.for_each_with_chunks(0..64, 16, |i| {
                spin(2_000);
                if fire && i == 50 {
                    panic!("task failed");
                }
            });
        }
    }
    let pool = pool(3);
    for (in_task, message) in [(false, "step failed"), (true, "task failed")] {
        let objects: Vec<Bomb> = (0..12)
            .map(|id| Bomb {
                id,
                in_task,
                armed: true,
                steps: 0,
            })
            .collect();
        let mut run = Objects::builder()
            .policy("greedy")
            .stealing("all")
            .build(&pool, objects)
            .unwrap();
        for _ in 0..3 {
            let err = panic::catch_unwind(AssertUnwindSafe(|| run.step())).unwrap_err();
            assert_eq!(err.downcast_ref::<&str>(), Some(&message));
        }
        // Disarm and go on: the pool and the objects still work.
        let mut objects = run.into_objects();
        for o in &mut objects {
            o.armed = false;
        }
        let mut run = Objects::builder()
            .policy("greedy")
            .period(1)
            .build(&pool, objects)
            .unwrap();
        run.run(2).unwrap();
        for o in run.into_objects() {
            assert!(o.steps >= 2);
        }
    }
    // The pool itself is fine.
    let count = AtomicUsize::new(0);
    pool.region(|_| {
        count.fetch_add(1, Ordering::Relaxed);
    });
    assert_eq!(count.into_inner(), 3);
}

#[test]
fn bad_input_is_typed() {
    let pool = pool(2);
    let build = |b: ObjectsBuilder| b.build(&pool, (0..4).map(Probe::new).collect());
    assert_eq!(
        build(Objects::builder().period(0)).unwrap_err(),
        ObjectsError::ZeroPeriod
    );
    assert!(matches!(
        build(Objects::builder().migratable(vec![true])).unwrap_err(),
        ObjectsError::LengthMismatch {
            what: "migratable",
            expected: 4,
            found: 1,
            ..
        }
    ));
    assert!(matches!(
        build(Objects::builder().available(vec![true; 3])).unwrap_err(),
        ObjectsError::LengthMismatch {
            what: "available",
            ..
        }
    ));
    assert_eq!(
        build(Objects::builder().available(vec![false, false])).unwrap_err(),
        ObjectsError::NoAvailablePu { pus: 2 }
    );
    let e = build(Objects::builder().policy("greedier")).unwrap_err();
    assert!(
        matches!(e, ObjectsError::Policy { origin: "code", .. }),
        "{e}"
    );
    assert!(e.to_string().contains("greedy"), "lists valid names: {e}");
    assert!(matches!(
        build(Objects::builder().policy("greedy").stealing("sometimes")).unwrap_err(),
        ObjectsError::Tasks(_)
    ));
    assert!(matches!(
        build(Objects::builder().policy("greedy").initial("nope")).unwrap_err(),
        ObjectsError::Policy {
            origin: "initial",
            ..
        }
    ));
}

#[test]
fn stepping_inside_a_region_of_the_same_pool_is_refused() {
    let pool = pool(2);
    let run = Mutex::new(
        Objects::builder()
            .policy("block")
            .build(&pool, (0..4).map(Probe::new).collect())
            .unwrap(),
    );
    let refused = AtomicUsize::new(0);
    pool.region(|_| {
        if let Err(ObjectsError::NestedRegion { pus: 2 }) = run.lock().unwrap().step() {
            refused.fetch_add(1, Ordering::Relaxed);
        }
    });
    assert_eq!(refused.into_inner(), 2);
}

#[test]
fn keel_lb_names_the_policy_when_code_does_not() {
    // The only test in this binary that builds without `.policy(..)`.
    std::env::set_var(ENV_LB, "round-robin");
    let pool = pool(2);
    let run = Objects::builder()
        .build(&pool, (0..4).map(Probe::new).collect())
        .unwrap();
    assert_eq!(run.policy(), "round-robin");
    std::env::set_var(ENV_LB, "no-such-policy");
    let e = Objects::builder()
        .build(&pool, (0..4).map(Probe::new).collect())
        .unwrap_err();
    std::env::remove_var(ENV_LB);
    assert!(
        matches!(
            e,
            ObjectsError::Policy {
                origin: "KEEL_LB",
                ..
            }
        ),
        "{e}"
    );
}

/// An object whose step is a potential task of `iterations` sleeps of
/// `sleep`: its work is known whichever PU runs the chunks.
struct Sleeper {
    iterations: usize,
    sleep: std::time::Duration,
}

impl Object for Sleeper {
    fn step(&mut self, ctx: &StepContext<'_>) {
        let sleep = self.sleep;
        ctx.for_each(0..self.iterations, |_| std::thread::sleep(sleep));
    }
}

#[test]
fn an_objects_load_counts_the_chunks_thieves_ran_for_it() {
    let pool = pool(2);
    let sleep = std::time::Duration::from_micros(500);
    // Block mapping: the heavy object alone on PU 0, an empty one on PU 1,
    // whose PU steals as soon as it is done.
    let objects = vec![
        Sleeper {
            iterations: 32,
            sleep,
        },
        Sleeper {
            iterations: 0,
            sleep,
        },
    ];
    // The database is read after the run: no remap may clear it.
    let mut run = Objects::builder()
        .policy("block")
        .stealing("all")
        .invocation(Invocation::Never)
        .build(&pool, objects)
        .unwrap();
    let report = run.run(3).unwrap();
    assert!(report.tasks.stolen_from > 0, "PU 1 should have stolen");
    let work = 3.0 * 32.0 * sleep.as_secs_f64();
    let loads = run.object_loads();
    // The owner's wall time alone is about half the work once chunks are
    // stolen; the load database must see all of it.
    assert!(
        loads[0] >= 0.95 * work,
        "load {:.4} s of {:.4} s of work",
        loads[0],
        work
    );
    assert!(loads[0] < 3.0 * work, "load {:.4} s", loads[0]);
}

#[test]
fn with_stealing_each_pu_runs_its_lightest_objects_first() {
    let pool = pool(2);
    let sleep = std::time::Duration::from_micros(500);
    // Every object on PU 0 (PU 1 unavailable), heaviest first by id, each a
    // quarter of the one before (32, 8, 2 and 0.5 ms): a stall of this
    // shared machine (a few ms at times) must not reorder them, as it did
    // at 3.2 / 2.4 / 1.6 / 0.8 ms.
    let objects: Vec<Sleeper> = (0..4u32)
        .map(|k| Sleeper {
            iterations: 4usize.pow(3 - k),
            sleep,
        })
        .collect();
    let mut run = Objects::builder()
        .policy("block")
        .available(vec![true, false])
        .stealing("history-idle")
        .build(&pool, objects)
        .unwrap();
    let mut order = Vec::new();
    run.visit(|id, _, _| order.push(id));
    assert_eq!(order, [0, 1, 2, 3], "id order before anything is measured");
    run.run(1).unwrap();
    order.clear();
    run.visit(|id, _, _| order.push(id));
    assert_eq!(order, [3, 2, 1, 0], "lightest first after one step");
}

#[test]
fn by_default_a_persistent_imbalance_is_remapped_when_it_pays_and_said_why() {
    let pool = pool(2);
    // About 2 ms lost per step against a remap of some 100 µs.
    let objects = four_heavy_objects();
    let mut run = Objects::builder()
        .policy("greedy")
        .stealing("none")
        .build(&pool, objects)
        .unwrap();
    assert_eq!(run.invocation(), Invocation::Adaptive);
    let mut reports = Vec::new();
    for _ in 0..30 {
        reports.push(run.step().unwrap());
    }
    let remaps: Vec<&StepReport> = reports.iter().filter(|r| r.rebalance.is_some()).collect();
    let first = remaps.first().expect("the imbalance is remapped");
    // After the fewest steps the trigger measures (a preempted step may
    // delay it by one).
    assert!(first.step <= keel_policy::invoke::MIN_STEPS, "{first:?}");
    assert!(first.decision.balance);
    let r = first.rebalance.as_ref().unwrap();
    assert!(r.reason.contains("≥"), "{r:?}");
    assert!(r.lambda_after < r.lambda_before, "{r:?}");
    // Then the loads are even: measurement noise alone may trigger a few
    // remaps, each futile one doubling what the next must repay.
    assert!(remaps.len() <= 6, "{} remaps", remaps.len());
    let skipped = reports.iter().filter(|r| !r.decision.balance).count();
    assert!(skipped >= 24);
    // Every skip says why.
    assert!(reports.iter().filter(|r| r.rebalance.is_none()).all(|r| !r
        .decision
        .reason
        .to_string()
        .is_empty()));
}
