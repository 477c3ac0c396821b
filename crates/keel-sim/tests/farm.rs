//! The farm model: analytical cases, conservation, determinism, errors.

use keel_sim::farm::{simulate, uniform_costs, FarmModel};
use keel_sim::{Noise, SimError, WorkerModel};

const POLICIES: [&str; 8] = [
    "rr",
    "arrs",
    "arrs:chunk=50",
    "arrs-adaptive",
    "on-demand",
    "shortest-queue",
    "eft",
    "eft:capacity=2",
];

#[test]
fn rr_on_uniform_costs_gives_n_c_over_p() {
    for (n, p) in [(1000, 4), (999, 4), (16, 16), (1, 3)] {
        let model = FarmModel::heterogeneous(p, 0, 1.0).unwrap();
        let run = simulate(&model, "rr", &uniform_costs(n, 1e-3).unwrap()).unwrap();
        let expected = n.div_ceil(p) as f64 * 1e-3;
        assert!(
            (run.makespan - expected).abs() < 1e-12,
            "n={n} p={p}: {} vs {expected}",
            run.makespan
        );
    }
}

#[test]
fn shortest_queue_reaches_the_model_with_a_free_emitter() {
    // The reference is the paper's RRS: round-robin on unbounded queues.
    // For a per-item decision to see different levels, items must arrive
    // while workers consume: bounded queues, zero emitter cost.
    for p in [4, 8, 16] {
        let mut model = FarmModel::heterogeneous(p, 1, 5.8).unwrap();
        let costs = uniform_costs(16_000, 0.28e-3).unwrap();
        let rr = simulate(&model, "rr", &costs).unwrap();
        model.capacity = Some(2);
        let sq = simulate(&model, "shortest-queue", &costs).unwrap();
        let s = rr.makespan / sq.makespan;
        let m = model.model_speedup();
        assert!((s / m - 1.0).abs() < 0.01, "p={p}: S={s}, model {m}");
    }
}

#[test]
fn every_item_runs_exactly_once_under_every_policy() {
    for policy in POLICIES {
        for capacity in [None, Some(1), Some(3)] {
            for (n, p) in [(0, 2), (1, 1), (7, 3), (99, 4), (1000, 5)] {
                let mut model = FarmModel::heterogeneous(p, 1, 3.0).unwrap();
                model.capacity = capacity;
                model.emitter_cost = 1e-6;
                let costs: Vec<f64> = (0..n).map(|i| 1e-4 * (1 + i % 7) as f64).collect();
                let run = simulate(&model, policy, &costs).unwrap();
                assert_eq!(run.per_worker.iter().sum::<u64>(), n as u64, "{policy}");
                assert_eq!(run.worker_of.len(), n);
                assert!(run.worker_of.iter().all(|&w| w < p), "{policy}");
                let mut counted = vec![0u64; p];
                for &w in &run.worker_of {
                    counted[w] += 1;
                }
                assert_eq!(counted, run.per_worker, "{policy}");
                if let Some(c) = capacity.or(if policy == "on-demand" { Some(1) } else { None }) {
                    // Markers may go past capacity by one.
                    assert!(run.max_level <= c + 1, "{policy}: level {}", run.max_level);
                }
            }
        }
    }
}

#[test]
fn arrs_throttles_on_its_markers_and_beats_rr_on_a_fast_worker() {
    let model = FarmModel::heterogeneous(4, 1, 5.8).unwrap();
    let costs = uniform_costs(16_000, 0.28e-3).unwrap();
    let rr = simulate(&model, "rr", &costs).unwrap();
    let arrs = simulate(&model, "arrs:chunk=100", &costs).unwrap();
    assert!(arrs.blocks >= 150, "{} blocks", arrs.blocks);
    assert!(arrs.waits_for_marker > 0);
    // One level read per worker at the start of every block but the first.
    assert_eq!(arrs.level_reads, 4 * (arrs.blocks - 1));
    let s = rr.makespan / arrs.makespan;
    assert!(s > 1.5 && s <= model.model_speedup() + 1e-9, "S = {s}");
    assert_eq!(rr.level_reads, 0);
}

#[test]
fn same_seed_same_result_and_noise_matters() {
    let noisy = |seed| {
        let mut model = FarmModel::heterogeneous(4, 1, 2.0).unwrap();
        model.workers = (0..4)
            .map(|w| {
                WorkerModel::with(
                    if w == 0 { 2.0 } else { 1.0 },
                    Noise::Normal { cv: 0.2 },
                    &[],
                )
                .unwrap()
            })
            .collect();
        model.seed = seed;
        model.emitter_cost = 1e-7;
        simulate(&model, "arrs-adaptive", &uniform_costs(2000, 1e-4).unwrap()).unwrap()
    };
    assert_eq!(noisy(7), noisy(7));
    assert_ne!(noisy(7).makespan, noisy(8).makespan);
}

#[test]
fn bad_parameters_are_typed_errors() {
    let model = FarmModel::heterogeneous(2, 0, 1.0).unwrap();
    let costs = uniform_costs(10, 1e-3).unwrap();
    assert!(matches!(
        simulate(&model, "fifo", &costs),
        Err(SimError::Policy(m)) if m.contains("shortest-queue")
    ));
    assert!(matches!(
        simulate(&model, "arrs:chunk=0", &costs),
        Err(SimError::Policy(_))
    ));
    assert!(matches!(
        simulate(&model, "rr", &[1.0, f64::NAN]),
        Err(SimError::InvalidParameter { .. })
    ));
    assert!(FarmModel::heterogeneous(0, 0, 1.0).is_err());
    assert!(FarmModel::heterogeneous(2, 1, -1.0).is_err());
    assert!(uniform_costs(3, -1.0).is_err());
    // No stream, or one past the limit, is a typed error, not 0/0 or an abort.
    assert!(uniform_costs(0, 1e-3).is_err());
    let e = uniform_costs(usize::MAX, 1e-3).unwrap_err();
    assert!(e.to_string().contains("MAX_FARM_ITEMS"), "{e}");
    let e = FarmModel::heterogeneous(usize::MAX, 1, 2.0).unwrap_err();
    assert!(e.to_string().contains("MAX_FARM_WORKERS"), "{e}");
    let mut bounded = model.clone();
    bounded.capacity = Some(0);
    assert!(matches!(
        simulate(&bounded, "rr", &costs),
        Err(SimError::InvalidParameter { .. })
    ));
    let mut slow_emitter = model;
    slow_emitter.emitter_cost = f64::INFINITY;
    assert!(simulate(&slow_emitter, "rr", &costs).is_err());
}
