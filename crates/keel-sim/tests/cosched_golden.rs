//! Golden values of the FCS paper's scenarios (`keel_workloads::bsp`): the
//! parameters fixed from the paper before any simulation ran, and the
//! variability stream under them. A change here changes every figure of
//! `keel sim cosched` and must be made on purpose.

use keel_sim::cluster::CoschedModel;
use keel_workloads::bsp::{self, BspJob, Pattern};

fn shape(job: &BspJob) -> (usize, f64, u64, Pattern, f64) {
    (
        job.processes,
        job.granularity,
        job.iterations,
        job.pattern,
        job.variability,
    )
}

#[test]
fn verification_scenarios_are_the_papers() {
    let block = (4, 0.005, 12_000, Pattern::Ring, 0.0);

    let s = bsp::fine_grained();
    assert_eq!((s.nodes, s.pes_per_node), (2, 2));
    assert_eq!(s.jobs.len(), 2);
    for job in &s.jobs {
        assert_eq!(shape(job), block);
        assert!(job.weights.is_empty() && job.pes.is_none());
        assert_eq!(job.arrival, 0.0);
        assert_eq!(job.dedicated_time(0.0), 60.0);
    }

    let s = bsp::load_imbalanced();
    assert_eq!((s.nodes, s.pes_per_node), (2, 2));
    assert_eq!(s.jobs.len(), 2);
    assert_eq!(s.jobs[0].weights, [2.0, 2.0, 1.0, 1.0]);
    assert_eq!(s.jobs[1].weights, [1.0, 1.0, 2.0, 2.0]);
    for job in &s.jobs {
        assert_eq!(shape(job), block);
    }

    let s = bsp::complementing();
    assert_eq!((s.nodes, s.pes_per_node), (2, 2));
    assert_eq!(s.jobs.len(), 4);
    assert_eq!(shape(&s.jobs[0]), block);
    assert_eq!(s.jobs[0].weights, [4.0, 4.0, 1.0, 1.0]);
    assert_eq!(s.jobs[0].pes.as_deref(), Some(&[0, 1, 2, 3][..]));
    assert_eq!(s.jobs[0].dedicated_time(0.0), 240.0);
    for job in &s.jobs[1..] {
        assert_eq!(shape(job), (2, 0.005, 12_000, Pattern::Ring, 0.0));
        assert_eq!(job.pes.as_deref(), Some(&[2, 3][..]));
    }
}

/// The scaled scenarios are `keel cosched run`'s (`keel_cosched::scenario`,
/// `ScenarioParams::full`): 2 nodes × 1 PE, 6 ms steps, 500 supersteps,
/// ring; 2:1 / 1:2 imbalance; a 4:1 job on PEs 0–1 beside three 1-rank
/// fillers on PE 1.
#[test]
fn scaled_verification_scenarios_are_the_real_runs() {
    let block = (2, 0.006, 500, Pattern::Ring, 0.0);
    let all = bsp::scaled_verification();
    let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "scaled-fine-grained",
            "scaled-load-imbalanced",
            "scaled-complementing"
        ]
    );
    for s in &all {
        assert_eq!((s.nodes, s.pes_per_node), (2, 1));
        assert!(s.jobs.iter().all(|j| j.arrival == 0.0));
    }

    let s = bsp::scaled_fine_grained();
    assert_eq!(s.jobs.len(), 2);
    for job in &s.jobs {
        assert_eq!(shape(job), block);
        assert!(job.weights.is_empty() && job.pes.is_none());
        assert!((job.dedicated_time(0.0) - 3.0).abs() < 1e-12);
    }

    let s = bsp::scaled_load_imbalanced();
    assert_eq!(s.jobs.len(), 2);
    assert_eq!(s.jobs[0].weights, [2.0, 1.0]);
    assert_eq!(s.jobs[1].weights, [1.0, 2.0]);
    for job in &s.jobs {
        assert_eq!(shape(job), block);
        assert!(job.pes.is_none());
    }

    let s = bsp::scaled_complementing();
    assert_eq!(s.jobs.len(), 4);
    assert_eq!(shape(&s.jobs[0]), block);
    assert_eq!(s.jobs[0].weights, [4.0, 1.0]);
    assert_eq!(s.jobs[0].pes.as_deref(), Some(&[0, 1][..]));
    assert!((s.jobs[0].dedicated_time(0.0) - 12.0).abs() < 1e-12);
    for job in &s.jobs[1..] {
        assert_eq!(shape(job), (1, 0.006, 500, Pattern::Ring, 0.0));
        assert!(job.weights.is_empty());
        assert_eq!(job.pes.as_deref(), Some(&[1][..]));
        assert!(!job.communicates());
    }
}

#[test]
fn fig5_grid_is_the_papers() {
    assert_eq!(
        bsp::FIG5_GRANULARITIES,
        [0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024]
    );
    assert_eq!(bsp::FIG5_VARIABILITIES, [0.0, 0.25, 0.5, 0.75, 1.0]);
    assert_eq!(
        bsp::FIG5_PATTERNS,
        [Pattern::NearestNeighbour, Pattern::Barrier]
    );
    assert_eq!(bsp::FIG5_WORK_S, 16.0);
    let s = bsp::fig5(0.004, 1.0, Pattern::NearestNeighbour).unwrap();
    assert_eq!((s.nodes, s.pes_per_node), (32, 2));
    assert_eq!(s.jobs.len(), 4);
    for (k, job) in s.jobs.iter().enumerate() {
        assert_eq!(
            shape(job),
            (64, 0.004, 4000, Pattern::NearestNeighbour, 1.0)
        );
        assert_eq!(job.seed, k as u64);
    }
    assert_eq!(
        bsp::fig5(1.024, 0.0, Pattern::Barrier).unwrap().jobs[0].iterations,
        16
    );
    assert_eq!(
        bsp::fig5(0.064, 0.5, Pattern::Barrier).unwrap().jobs[3].iterations,
        250
    );
}

#[test]
fn application_mixes_are_pinned() {
    let s = bsp::sweep3d_mix();
    assert_eq!((s.nodes, s.pes_per_node), (32, 2));
    assert_eq!(s.jobs.len(), 4);
    for job in &s.jobs {
        assert_eq!(
            shape(job),
            (64, 0.0035, 13_714, Pattern::NearestNeighbour, 0.0)
        );
        assert!(job.weights.is_empty());
    }

    let s = bsp::sage_mix();
    assert_eq!((s.nodes, s.pes_per_node), (32, 2));
    let iterations: Vec<u64> = s.jobs.iter().map(|j| j.iterations).collect();
    assert_eq!(iterations, [785, 1722, 1896]);
    for (k, job) in s.jobs.iter().enumerate() {
        assert_eq!(job.processes, 64);
        assert_eq!(job.granularity, 0.05);
        assert_eq!(job.pattern, Pattern::Barrier);
        let light = 1.0 - [0.1, 0.2, 0.3][k];
        for (r, &w) in job.weights.iter().enumerate() {
            let heavy = 3 * r / 64 == k;
            assert_eq!(w, if heavy { 1.0 } else { light }, "job {k} rank {r}");
        }
    }
}

#[test]
fn variability_stream_is_pinned() {
    let job = &bsp::fig5(0.004, 1.0, Pattern::Barrier).unwrap().jobs[2];
    let got: Vec<f64> = (0..4).map(|i| job.compute(5, i)).collect();
    let again: Vec<f64> = (0..4).map(|i| job.clone().compute(5, i)).collect();
    assert_eq!(got, again);
    let sum: f64 = (0..4000).map(|i| job.compute(17, i)).sum();
    assert!((sum - 16.0).abs() < 0.3, "{sum}");
    assert_eq!(got, PINNED_DRAWS);
}

/// `fig5(4 ms, 100 %, barrier)`'s job 2, rank 5, iterations 0–3.
const PINNED_DRAWS: [f64; 4] = [
    0.006442376484580062,
    0.004478739852192047,
    0.005494245290194471,
    0.005618768182886033,
];

#[test]
fn model_constants_are_the_documented_ones() {
    let m = CoschedModel::new(2, 2).unwrap();
    assert_eq!(m.net.latency, 20e-6);
    assert_eq!(m.cluster.context_switch, 10e-6);
    assert_eq!(m.cluster.time_slice, 0.025);
    assert_eq!(m.os.quantum, 81.0 / 2048.0);
    assert_eq!(m.os.tick, 1.0 / 2048.0);
    assert_eq!(m.os.quantum_jitter, 0.1);
    assert_eq!(m.os.wakeup, 10e-6);
    assert_eq!(m.monitor_cost, 2e-6);
    assert_eq!(m.merge_epsilon, 50e-6);
}
