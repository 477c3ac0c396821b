//! The paper's scenarios (§3.2–3.4): every machine, job and constant of
//! the verification runs, their scaled form, Fig. 5's parameter space and
//! the application mixes.

use super::{invalid, BspJob, BspScenario, Pattern};
use crate::error::WorkloadError;

// ---------------------------------------------------------------------
// §3.2: the verification scenarios.

/// §3.2's machine: "using only 2 of the cluster's nodes", of two PEs each.
pub const VERIFY_NODES: usize = 2;
/// The cluster's nodes have two Pentium-III processors each (§3.1).
pub const PES_PER_NODE: usize = 2;
/// The building block's processes: "four processes (running on two nodes)".
pub const BLOCK_PROCESSES: usize = 4;
/// The building block's compute per iteration: "communicating in a ring
/// pattern every 5ms".
pub const BLOCK_GRANULARITY: f64 = 0.005;
/// The building block's iterations: "in isolation takes approximately
/// 60s" at 5 ms per iteration.
pub const BLOCK_ITERATIONS: u64 = 12_000;

pub(super) fn block(k: usize) -> Result<BspJob, WorkloadError> {
    Ok(BspJob::new(
        BLOCK_PROCESSES,
        BLOCK_GRANULARITY,
        BLOCK_ITERATIONS,
        Pattern::Ring,
    )?
    .named(format!("job {k}"))
    .with_seed(k as u64))
}

fn verify(name: &str, title: &str, jobs: Vec<BspJob>) -> BspScenario {
    BspScenario {
        name: name.into(),
        title: title.into(),
        nodes: VERIFY_NODES,
        pes_per_node: PES_PER_NODE,
        jobs,
    }
}

/// §3.2.1: two identical fine-grained building blocks.
pub fn fine_grained() -> BspScenario {
    let jobs = (0..2)
        .map(|k| block(k).expect("the building block is valid"))
        .collect();
    verify(
        "fine-grained",
        "§3.2.1 fine-grained jobs: two 4-process ring jobs, 5 ms, 12,000 iterations",
        jobs,
    )
}

/// §3.2.2's weights: "processes 0 and 1 of job 0 compute twice as much per
/// iteration as processes 2 and 3, while for job 1 the situation is
/// reversed".
pub const IMBALANCED_WEIGHTS: [[f64; 4]; 2] = [[2.0, 2.0, 1.0, 1.0], [1.0, 1.0, 2.0, 2.0]];

/// §3.2.2, Fig. 3: two complementary load-imbalanced blocks.
pub fn load_imbalanced() -> BspScenario {
    let jobs = (0..2)
        .map(|k| {
            block(k)
                .and_then(|j| j.with_weights(IMBALANCED_WEIGHTS[k].to_vec()))
                .expect("the imbalanced blocks are valid")
        })
        .collect();
    verify(
        "load-imbalanced",
        "§3.2.2 load-imbalanced jobs (Fig. 3): ranks 0-1 of job 0 and 2-3 of job 1 compute 10 ms",
        jobs,
    )
}

/// §3.2.3's heavy job: "processes 0 and 1 of the first job compute four
/// times as much per iteration".
pub const COMPLEMENTING_WEIGHTS: [f64; 4] = [4.0, 4.0, 1.0, 1.0];
/// §3.2.3's fillers: "three two-process jobs running on PEs 2 and 3".
pub const COMPLEMENTING_FILLER_PES: [usize; 2] = [2, 3];

/// §3.2.3, Fig. 4: one heavy 4-process block and three 2-process blocks
/// pinned to PEs 2 and 3 (the heavy job on PEs 0–3, rank r on PE r).
pub fn complementing() -> BspScenario {
    let mut jobs = vec![block(0)
        .and_then(|j| j.with_weights(COMPLEMENTING_WEIGHTS.to_vec()))
        .and_then(|j| j.on_pes(vec![0, 1, 2, 3]))
        .expect("the heavy job is valid")];
    for k in 1..4 {
        let filler = BspJob::new(2, BLOCK_GRANULARITY, BLOCK_ITERATIONS, Pattern::Ring)
            .and_then(|j| j.on_pes(COMPLEMENTING_FILLER_PES.to_vec()))
            .expect("the fillers are valid")
            .named(format!("job {k}"))
            .with_seed(k as u64);
        jobs.push(filler);
    }
    verify(
        "complementing",
        "§3.2.3 complementing jobs (Fig. 4): ranks 0-1 of job 0 compute 20 ms; jobs 1-3 fill PEs 2-3",
        jobs,
    )
}

// ---------------------------------------------------------------------
// §3.2 scaled to two PEs: the real runs' scenarios (`keel cosched run`).

/// The scaled machine's nodes: the real scheduler's two CPUs, each a node.
pub const SCALED_NODES: usize = 2;
/// The scaled machine's PEs per node: one.
pub const SCALED_PES_PER_NODE: usize = 1;
/// The scaled jobs' width: the building block at half the paper's width.
pub const SCALED_PROCESSES: usize = 2;
/// The scaled base step: `keel-cosched`'s 6 ms (`ScenarioParams::full`),
/// one step above the paper's 5 ms so that the imbalanced jobs' 12 ms and
/// the fast ranks' 6 ms sit 20 % clear of Table 2's CS_thresh = 10 ms and
/// F_thresh = 7.5 ms.
pub const SCALED_GRANULARITY: f64 = 0.006;
/// The scaled supersteps: `keel-cosched`'s 500 (a job alone: 3 s).
pub const SCALED_ITERATIONS: u64 = 500;
/// The scaled imbalanced jobs' weights (`--scale 2,1` and `--scale 1,2`):
/// each PE carries one slow and one fast rank.
pub const SCALED_IMBALANCED_WEIGHTS: [[f64; 2]; 2] = [[2.0, 1.0], [1.0, 2.0]];
/// The scaled heavy job's weights (`--scale 4,1`), on PEs 0 and 1.
pub const SCALED_COMPLEMENTING_WEIGHTS: [f64; 2] = [4.0, 1.0];
/// The scaled fillers' PE: three one-rank jobs on PE 1, the light one.
pub const SCALED_FILLER_PE: usize = 1;
/// The scaled fillers.
pub const SCALED_FILLERS: usize = 3;

fn scaled_block(k: usize, processes: usize) -> Result<BspJob, WorkloadError> {
    Ok(BspJob::new(
        processes,
        SCALED_GRANULARITY,
        SCALED_ITERATIONS,
        Pattern::Ring,
    )?
    .named(format!("job {k}"))
    .with_seed(k as u64))
}

fn scaled_verify(name: &str, title: &str, jobs: Vec<BspJob>) -> BspScenario {
    BspScenario {
        name: name.into(),
        title: title.into(),
        nodes: SCALED_NODES,
        pes_per_node: SCALED_PES_PER_NODE,
        jobs,
    }
}

/// §3.2.1 scaled to 2 nodes × 1 PE: two identical 2-rank ring jobs of
/// 500 × 6 ms (`keel cosched run`'s `fine-grained`).
pub fn scaled_fine_grained() -> BspScenario {
    let jobs = (0..2)
        .map(|k| scaled_block(k, SCALED_PROCESSES).expect("the scaled block is valid"))
        .collect();
    scaled_verify(
        "scaled-fine-grained",
        "§3.2.1 scaled to 2 × 1 PE: two 2-rank ring jobs, 6 ms, 500 iterations",
        jobs,
    )
}

/// §3.2.2 scaled to 2 nodes × 1 PE: rank 0 of job 0 and rank 1 of job 1
/// compute 12 ms, the others 6 ms (`keel cosched run`'s `imbalanced`).
pub fn scaled_load_imbalanced() -> BspScenario {
    let jobs = (0..2)
        .map(|k| {
            scaled_block(k, SCALED_PROCESSES)
                .and_then(|j| j.with_weights(SCALED_IMBALANCED_WEIGHTS[k].to_vec()))
                .expect("the scaled imbalanced jobs are valid")
        })
        .collect();
    scaled_verify(
        "scaled-load-imbalanced",
        "§3.2.2 scaled to 2 × 1 PE: ranks computing 2:1 and 1:2 (12 ms / 6 ms)",
        jobs,
    )
}

/// §3.2.3 scaled to 2 nodes × 1 PE: a 2-rank job on PEs 0 and 1 whose
/// rank 0 computes 4×, and three 1-rank fillers pinned to PE 1
/// (`keel cosched run`'s `complementing`; at one rank the fillers do not
/// communicate).
pub fn scaled_complementing() -> BspScenario {
    let mut jobs = vec![scaled_block(0, SCALED_PROCESSES)
        .and_then(|j| j.with_weights(SCALED_COMPLEMENTING_WEIGHTS.to_vec()))
        .and_then(|j| j.on_pes(vec![0, 1]))
        .expect("the scaled heavy job is valid")];
    for k in 1..=SCALED_FILLERS {
        jobs.push(
            scaled_block(k, 1)
                .and_then(|j| j.on_pes(vec![SCALED_FILLER_PE]))
                .expect("the scaled fillers are valid"),
        );
    }
    scaled_verify(
        "scaled-complementing",
        "§3.2.3 scaled to 2 × 1 PE: a 2-rank job (4:1) and three 1-rank fillers on PE 1",
        jobs,
    )
}

/// The three scaled verification scenarios, in the paper's order.
pub fn scaled_verification() -> Vec<BspScenario> {
    vec![
        scaled_fine_grained(),
        scaled_load_imbalanced(),
        scaled_complementing(),
    ]
}

// ---------------------------------------------------------------------
// §3.3: Fig. 5's parameter space.

/// The full cluster: "32 nodes/64 processors" (§3.3, §3.4).
pub const CLUSTER_NODES: usize = 32;
/// "4 identical jobs were executed on all 32 nodes/64 processors".
pub const FIG5_JOBS: usize = 4;
/// Fig. 5's granularities: 4 ms to 1.024 s, doubling (§3.3).
pub const FIG5_GRANULARITIES: [f64; 9] = [
    0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024,
];
/// Fig. 5's variabilities: "from 0 to ±100 %", in quarters.
pub const FIG5_VARIABILITIES: [f64; 5] = [0.0, 0.25, 0.5, 0.75, 1.0];
/// Fig. 5's patterns: nearest-neighbour grid and barrier.
pub const FIG5_PATTERNS: [Pattern; 2] = [Pattern::NearestNeighbour, Pattern::Barrier];
/// Mean compute seconds of each Fig. 5 job (the paper does not give its
/// jobs' length): 16 s, long enough for 16 iterations at the coarsest
/// granularity and 640 time slices per job, short enough for the 360-run
/// sweep to take a minute of simulation. Iterations = round(16 s / g).
pub const FIG5_WORK_S: f64 = 16.0;

/// One point of Fig. 5: four identical 64-process jobs of `granularity`
/// seconds, `variability` and `pattern` (seeds differ per job).
pub fn fig5(
    granularity: f64,
    variability: f64,
    pattern: Pattern,
) -> Result<BspScenario, WorkloadError> {
    let processes = CLUSTER_NODES * PES_PER_NODE;
    if !(granularity.is_finite() && granularity > 0.0) {
        return Err(invalid(
            "granularity",
            granularity,
            "a finite number of seconds > 0",
        ));
    }
    let iterations = ((FIG5_WORK_S / granularity).round() as u64).max(1);
    let jobs = (0..FIG5_JOBS)
        .map(|k| {
            Ok(BspJob::new(processes, granularity, iterations, pattern)?
                .with_variability(variability)?
                .named(format!("job {k}"))
                .with_seed(k as u64))
        })
        .collect::<Result<Vec<_>, WorkloadError>>()?;
    Ok(BspScenario {
        name: format!(
            "fig5-{}-g{granularity}-v{variability}",
            pattern.name()
        ),
        title: format!(
            "§3.3 Fig. 5: 4 jobs × 64 processes, {} pattern, granularity {} ms, variability ±{:.0} %",
            pattern.name(),
            granularity * 1e3,
            variability * 100.0
        ),
        nodes: CLUSTER_NODES,
        pes_per_node: PES_PER_NODE,
        jobs,
    })
}

// ---------------------------------------------------------------------
// §3.4: application mixes.

/// SWEEP3D's compute step: "each compute step takes ≈ 3.5 ms" (§3.4).
pub const SWEEP3D_GRANULARITY: f64 = 0.0035;
/// SWEEP3D's steps: "the total runtime of the application is ≈ 48 s",
/// 48 s / 3.5 ms.
pub const SWEEP3D_ITERATIONS: u64 = 13_714;
/// "Our workload consists of four concurrent copies of SWEEP3D".
pub const SWEEP3D_COPIES: usize = 4;

/// §3.4's SWEEP3D-like mix: four copies of a fine-grained, balanced,
/// nearest-neighbour job on all 64 PEs ("characterized by a fine
/// granularity and a nearest-neighbor communication stencil"; the same
/// input, so no variability).
pub fn sweep3d_mix() -> BspScenario {
    let processes = CLUSTER_NODES * PES_PER_NODE;
    let jobs = (0..SWEEP3D_COPIES)
        .map(|k| {
            BspJob::new(
                processes,
                SWEEP3D_GRANULARITY,
                SWEEP3D_ITERATIONS,
                Pattern::NearestNeighbour,
            )
            .expect("the SWEEP3D-like job is valid")
            .named(format!("sweep3d-{k}"))
            .with_seed(k as u64)
        })
        .collect();
    BspScenario {
        name: "sweep3d".into(),
        title: "§3.4 SWEEP3D-like mix: 4 copies × 64 processes, 3.5 ms nearest-neighbour steps, ≈ 48 s alone".into(),
        nodes: CLUSTER_NODES,
        pes_per_node: PES_PER_NODE,
        jobs,
    }
}

/// SAGE-like compute per superstep of the heaviest rank. The paper gives
/// no figure; FCS beat GS by 10 % on SAGE, which it can only do if SAGE's
/// processes were not classified CS, i.e. their granularity exceeded
/// CS_thresh = 10 ms, and SAGE's cycles contain a handful of collectives
/// each: 50 ms between blocking collectives.
pub const SAGE_GRANULARITY: f64 = 0.050;
/// The three SAGE inputs' run times alone: the paper's FCFS column
/// (39.24, 125.36 − 39.24, 220.16 − 125.36 s).
pub const SAGE_RUNTIMES_S: [f64; 3] = [39.24, 86.12, 94.80];
/// The three inputs' load imbalance: each input refines its mesh in one
/// region, a third of the ranks (input `k`'s region is ranks
/// `r` with `3r / P = k`, so the three regions are disjoint), whose ranks
/// compute a full step while the others compute `1 − a` of it: `2a / 3` of
/// the job's CPU time idles at the barriers. The paper gives no figure,
/// but its SB run reclaims 9 % of FCFS's time, which no scheduler can do
/// unless the jobs' heavy ranks sit on different PEs (a PE that hosts every
/// job's heaviest rank bounds the makespan at FCFS's), and unless the mix
/// idles at least that much: `a` = 0.1, 0.2, 0.3.
pub const SAGE_IMBALANCE: [f64; 3] = [0.1, 0.2, 0.3];

/// §3.4's SAGE-like mix: three 64-process barrier jobs "with three
/// different input files, representing different run times and
/// load-imbalances" ([`SAGE_RUNTIMES_S`], [`SAGE_IMBALANCE`]).
pub fn sage_mix() -> BspScenario {
    let processes = CLUSTER_NODES * PES_PER_NODE;
    let jobs = (0..3)
        .map(|k| {
            let a = SAGE_IMBALANCE[k];
            let weights = (0..processes)
                .map(|r| if 3 * r / processes == k { 1.0 } else { 1.0 - a })
                .collect();
            let iterations = (SAGE_RUNTIMES_S[k] / SAGE_GRANULARITY).round() as u64;
            BspJob::new(processes, SAGE_GRANULARITY, iterations, Pattern::Barrier)
                .and_then(|j| j.with_weights(weights))
                .expect("the SAGE-like job is valid")
                .named(format!("sage-{k}"))
                .with_seed(k as u64)
        })
        .collect();
    BspScenario {
        name: "sage".into(),
        title: "§3.4 SAGE-like mix: 3 jobs × 64 processes, 50 ms barrier steps, a third of the ranks 10/20/30 % heavier, 39/86/95 s alone".into(),
        nodes: CLUSTER_NODES,
        pes_per_node: PES_PER_NODE,
        jobs,
    }
}
