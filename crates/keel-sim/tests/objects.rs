//! The objects model: conservation, determinism, what a remap may do,
//! stealing inside nodes only, errors.

use keel_sim::objects::{simulate, Balancing, ObjectCosts, ObjectsModel, WorkloadCosts};
use keel_sim::{Noise, SimError};
use keel_workloads::objects::{LassenLike, LbTestObjects, ObjectWorkload, Topology};

/// A small Lassen-like front: 4 nodes × 4 PUs, 16 domains per PU, 40 steps.
fn small_lassen() -> LassenLike {
    LassenLike {
        steps: 40,
        ..LassenLike::for_pus(16)
    }
}

fn model(noise: Noise) -> ObjectsModel {
    ObjectsModel::new(4, 4, noise).unwrap()
}

const HIER: &str = "hier:nodes=4,outer=(greedy),inner=(greedy)";

#[test]
fn every_object_steps_once_per_step_across_migrations() {
    let w = small_lassen();
    let costs = WorkloadCosts::uniform_cells(&w);
    for b in [
        Balancing::none("none"),
        Balancing::none("history-idle"),
        Balancing::periodic(HIER, 5, "none").unwrap(),
        Balancing::periodic("greedy", 3, "history-idle").unwrap(),
        Balancing::periodic("refine", 7, "all").unwrap(),
    ] {
        let run = simulate(&model(Noise::Uniform { spread: 0.1 }), &costs, &b).unwrap();
        assert_eq!(run.object_steps.len(), w.objects());
        assert!(
            run.object_steps.iter().all(|&s| s as usize == w.steps),
            "{b:?}"
        );
        assert_eq!(run.step_s.len(), w.steps);
        // Every chunk ran once: by its owner or by a thief.
        assert_eq!(
            run.tasks.owned + run.tasks.stolen,
            run.tasks.chunks,
            "{b:?}"
        );
        assert!(run.tasks.stolen <= run.tasks.exposed);
        if b.stealing == "none" {
            assert_eq!(run.tasks.exposed, 0);
        }
        if b.invocation.period().is_some() {
            assert!(run.migrations > 0, "{b:?}");
        }
        let sum: f64 = run.step_s.iter().sum();
        assert!((sum - run.steps_s).abs() < 1e-9);
        assert!((run.total_s - run.steps_s - run.balance_s).abs() < 1e-9);
    }
}

#[test]
fn same_seed_same_result() {
    let w = small_lassen();
    let costs = WorkloadCosts::uniform_cells(&w);
    let b = Balancing::periodic(HIER, 10, "history-idle").unwrap();
    let run = |seed| {
        let mut m = model(Noise::Normal { cv: 0.1 });
        m.seed = seed;
        simulate(&m, &costs, &b).unwrap()
    };
    assert_eq!(run(3), run(3));
    assert_ne!(run(3).total_s, run(4).total_s);
}

#[test]
fn without_noise_or_stealing_a_step_lasts_as_long_as_its_busiest_pu() {
    // lb_test objects have no potential task: each PU's step is the sum of
    // its objects' loads, and the step is the largest plus the barrier.
    let lb = LbTestObjects::new(Topology::Ring, 64, 16, 4, 40, 10.0, 3000.0, 12345, 1.0);
    let costs = WorkloadCosts::new(&lb);
    let m = model(Noise::None);
    let run = simulate(&m, &costs, &Balancing::none("none")).unwrap();
    for (k, &t) in run.step_s.iter().enumerate() {
        let mut per_pu = [0.0; 16];
        for o in 0..64 {
            per_pu[o / 4] += costs.serial(o, k);
        }
        let max = per_pu.iter().copied().fold(0.0, f64::max);
        assert!((t - max - m.barrier_cost).abs() < 1e-12, "step {k}");
    }
}

#[test]
fn stealing_stays_inside_a_node() {
    // One node holds all the work; stealing can spread it over that node's
    // PUs only, so the step cannot get shorter than the node's work ÷ its PUs.
    let w = LassenLike {
        steps: 1,
        ..LassenLike::for_pus(16)
    };
    let costs = WorkloadCosts::uniform_cells(&w);
    let m = model(Noise::None);
    let plain = simulate(&m, &costs, &Balancing::none("none")).unwrap();
    let steal = simulate(&m, &costs, &Balancing::none("all")).unwrap();
    assert!(steal.tasks.stolen > 0);
    assert!(steal.total_s < plain.total_s);
    // Step 0: only domain 0 is hot; it sits on PU 0 of node 0.
    let hot = costs.potential(0, 0) + costs.serial(0, 0);
    assert!(
        steal.total_s >= hot / 4.0,
        "{} < {}",
        steal.total_s,
        hot / 4.0
    );
}

#[test]
fn a_remap_never_moves_an_unmigratable_object_nor_uses_an_unavailable_pu() {
    let w = small_lassen();
    let costs = WorkloadCosts::uniform_cells(&w);
    let mut m = model(Noise::Uniform { spread: 0.2 });
    m.available[5] = false;
    m.available[15] = false;
    let pinned: Vec<bool> = (0..w.objects()).map(|o| o % 5 != 0).collect();
    m.migratable = Some(pinned.clone());
    for policy in [
        "greedy",
        "refine",
        "greedy-refine",
        HIER,
        "binlpt:chunks=32",
    ] {
        let b = Balancing::periodic(policy, 4, "history-idle").unwrap();
        let run = simulate(&m, &costs, &b).unwrap();
        assert!(!run.remaps.is_empty());
        // The initial placement is block over the available PUs.
        let mut before: Option<Vec<usize>> = None;
        for r in &run.remaps {
            assert!(r.placement.iter().all(|&p| m.available[p]), "{policy}");
            if let Some(prev) = &before {
                for (o, (&a, &b)) in prev.iter().zip(&r.placement).enumerate() {
                    assert!(pinned[o] || a == b, "{policy} moved pinned object {o}");
                }
            }
            before = Some(r.placement.clone());
        }
        assert!(run.object_steps.iter().all(|&s| s as usize == w.steps));
    }
}

#[test]
fn bad_parameters_are_typed_errors() {
    let w = small_lassen();
    let costs = WorkloadCosts::uniform_cells(&w);
    let m = model(Noise::None);
    let err = |m: &ObjectsModel, b: &Balancing| simulate(m, &costs, b).unwrap_err();
    assert!(matches!(
        err(&m, &Balancing::periodic("fastest", 5, "none").unwrap()),
        SimError::Policy(s) if s.contains("greedy")
    ));
    assert!(matches!(
        Balancing::periodic("greedy", 0, "none").unwrap_err(),
        SimError::InvalidParameter { .. }
    ));
    assert!(matches!(
        err(&m, &Balancing::none("sometimes")),
        SimError::Policy(s) if s.contains("history-idle")
    ));
    // hier with more nodes than PUs: the policy refuses at the first remap.
    assert!(matches!(
        err(
            &m,
            &Balancing::periodic("hier:nodes=99", 5, "none").unwrap()
        ),
        SimError::Policy(_)
    ));
    let mut bad = m.clone();
    bad.available = vec![false; 16];
    assert!(matches!(
        err(&bad, &Balancing::none("none")),
        SimError::InvalidParameter { .. }
    ));
    let mut bad = m.clone();
    bad.migratable = Some(vec![true; 3]);
    assert!(matches!(
        err(&bad, &Balancing::none("none")),
        SimError::InvalidParameter { .. }
    ));
    let mut bad = m.clone();
    bad.steal_cost = -1.0;
    assert!(err(&bad, &Balancing::none("none"))
        .to_string()
        .contains("steal"));
    let mut bad = m;
    bad.migration.bandwidth = 0.0;
    assert!(matches!(
        err(&bad, &Balancing::none("none")),
        SimError::InvalidParameter { .. }
    ));
    assert!(ObjectsModel::new(0, 16, Noise::None).is_err());
    assert!(ObjectsModel::new(4, 0, Noise::None).is_err());
}

/// One hot object (a 2 ms potential task over 64 cells) and one light
/// serial one, on a node of 2 PUs: block placement gives each PU one.
struct HotAndLight;

impl ObjectCosts for HotAndLight {
    fn objects(&self) -> usize {
        2
    }
    fn steps(&self) -> usize {
        5
    }
    fn serial(&self, object: usize, _: usize) -> f64 {
        if object == 0 {
            0.0
        } else {
            200e-6
        }
    }
    fn cells(&self, object: usize) -> usize {
        if object == 0 {
            64
        } else {
            0
        }
    }
    fn potential(&self, object: usize, _: usize) -> f64 {
        if object == 0 {
            2e-3
        } else {
            0.0
        }
    }
    fn chunk_costs(&self, object: usize, step: usize, chunks: usize, out: &mut Vec<f64>) {
        let each = self.potential(object, step) / chunks as f64;
        out.extend(std::iter::repeat_n(each, chunks));
    }
}

#[test]
fn late_exposure_lets_a_pu_that_ran_dry_help_a_task_already_under_way() {
    // The history starts at 0 and nobody is idle when the hot task starts,
    // so the start-of-task decision exposes nothing; only a look between
    // the owner's chunks, once the light PU ran dry, can share the task.
    let m = ObjectsModel::new(1, 2, Noise::None).unwrap();
    let run = |stealing: &str| simulate(&m, &HotAndLight, &Balancing::none(stealing)).unwrap();
    for on in ["idle", "history-idle:initial=0"] {
        let late = run(on);
        assert!(late.tasks.stolen > 0, "{on}: {:?}", late.tasks);
        assert!(late.tasks.exposed >= late.tasks.stolen);
        assert_eq!(late.tasks.owned + late.tasks.stolen, late.tasks.chunks);
        // Each step: the light PU's 200 µs, then about half of the rest of
        // the hot task, so well under the hot task's 2 ms.
        assert!(
            late.step_s.iter().all(|&s| s < 1.5e-3),
            "{on}: {:?}",
            late.step_s
        );
    }
    for off in ["idle:late=off", "history-idle:initial=0,late=off"] {
        let never = run(off);
        assert_eq!(never.tasks.exposed, 0, "{off}");
        assert_eq!(never.tasks.stolen, 0, "{off}");
        assert!(never.step_s.iter().all(|&s| s >= 2e-3), "{off}");
    }
}

#[test]
fn machines_past_max_pus_are_refused_naming_the_limit() {
    // 2³² × 2³² overflows usize: the error must say so, not "at least 1".
    for (nodes, pus) in [
        (1usize << 32, 1usize << 32),
        (1 << 20, 2),
        (100_000, 100_000),
    ] {
        let e = ObjectsModel::new(nodes, pus, Noise::None).unwrap_err();
        assert!(matches!(e, SimError::OverLimit { .. }), "{e}");
        assert!(e.to_string().contains("MAX_PUS = 1048576"), "{e}");
    }
    let e = ObjectsModel::new(1 << 32, 1 << 32, Noise::None).unwrap_err();
    assert!(e.to_string().contains("18446744073709551616 PUs"), "{e}");
    assert!(ObjectsModel::new(keel_sim::objects::MAX_PUS, 1, Noise::None).is_ok());
}

/// Half of every node's PUs at a quarter speed, on persistent lb_test
/// loads (drawn once): the remap is told the speeds, and `lpt-eft`
/// (earliest finish) against `greedy` (GreedyLB's least normalised time)
/// decides on the same measured work.
#[test]
fn on_slow_pus_lpt_eft_finishes_sooner_than_greedy() {
    use keel_policy::mapping::{registry, LptEft, MappingInput};
    use keel_sim::objects::{decide, RemapInput};
    use keel_sim::WorkerModel;
    // Period 100 > 2 x 40 steps: the loads are never re-drawn.
    let w = LbTestObjects::new(Topology::Ring, 64, 16, 40, 100, 10.0, 3000.0, 7, 1.0);
    let costs = WorkloadCosts::new(&w);
    let mut m = model(Noise::None);
    for (p, pu) in m.pus.iter_mut().enumerate() {
        if p % 4 >= 2 {
            *pu = WorkerModel::new(0.25).unwrap();
        }
    }
    let run =
        |spec: &str| simulate(&m, &costs, &Balancing::periodic(spec, 10, "none").unwrap()).unwrap();
    let (greedy, eft) = (run("greedy"), run("lpt-eft"));
    for r in [&greedy, &eft] {
        assert!(r.object_steps.iter().all(|&s| s as usize == w.steps));
        assert!(r.migrations > 0);
    }
    // After the first remap each step lasts as the busiest PU's work.
    let after = |r: &keel_sim::objects::ObjectsRun| r.step_s[10..].iter().sum::<f64>();
    assert!(
        after(&eft) < 0.9 * after(&greedy),
        "lpt-eft {} s vs greedy {} s",
        after(&eft),
        after(&greedy)
    );

    // The remap turns measured seconds into work at the PU's speed.
    let speeds = [1.0, 0.5];
    let loads = [2.0, 1.0, 4.0];
    let current = [0, 0, 1];
    let policy = registry().build("lpt-eft").unwrap();
    let d = decide(
        policy.as_ref(),
        &RemapInput {
            loads: &loads,
            background: &[0.0, 0.0],
            migratable: &[true; 3],
            available: &[true; 2],
            current: &current,
            speeds: Some(&speeds),
        },
    )
    .unwrap();
    let work = [2.0, 1.0, 2.0];
    let input = MappingInput::new(&work, &[0.0, 0.0])
        .unwrap()
        .with_speeds(&speeds)
        .unwrap();
    assert_eq!(d.mapping, LptEft.decide(&input));
    assert_eq!(d.mapping.as_slice(), &[0, 1, 0]);
}
