//! The experiments (a)–(e) and the per-item overhead.

use std::hint::black_box;
use std::time::Instant;

use keel::farm::Farm;
use keel_workloads::farm::{Material, MdPairs, Primes};

use super::harness::{
    build, build_labelled, compare, compare_farms, farm_error, fast_speed, primes_run,
    primes_run_timed, sizes,
};
use keel_policy::farm::known_split::{KnownSpeedSplit, KNOWN_SPLIT};
use keel_policy::stats::median;

use super::{Experiment, Overhead, Plan};
use crate::error::Result;

/// The earliest-finish-time dispatch on measured speeds.
const EFT_MEASURED: &str = "eft:capacity=4";

/// Its row label when the farm is told the measured speed ratio.
const EFT_TOLD: &str = "eft (told speeds)";

/// (a) uniform tasks.
pub fn experiment_a(plan: &Plan) -> Result<Experiment> {
    let policies = ["rr", "arrs", "arrs-adaptive", "on-demand", EFT_MEASURED];
    let mut rows = Vec::new();
    for n in sizes(plan, &[1000, 4000], &[1000, 2000, 4000, 8000, 16000]) {
        let w = Primes::parse(&format!("primes:tasks={n}"))?;
        rows.extend(compare(
            plan,
            n,
            &policies,
            plan.workers,
            None,
            None,
            primes_run(w),
        )?);
    }
    Ok(Experiment {
        id: "a".into(),
        title: format!(
            "uniform tasks (primes up to 7,500), {} workers: ARRS should cost nothing (Fig. 6)",
            plan.workers
        ),
        workers: plan.workers,
        workload: Primes::default().spec(),
        notes: vec![],
        rows,
    })
}

/// (b) one fast worker, against Eq. 2.
pub fn experiment_b(plan: &Plan) -> Result<Experiment> {
    let policies = [
        "rr",
        "arrs",
        "arrs-adaptive",
        "on-demand",
        "shortest-queue",
        EFT_MEASURED,
    ];
    let base = Primes::parse("primes:fast-workers=1")?;
    let s = fast_speed(&base);
    let p = plan.workers;
    let model = base.model_speedup(p, s);
    let mut rows = Vec::new();
    for n in sizes(plan, &[1000, 4000], &[1000, 2000, 4000, 8000, 16000]) {
        let w = Primes { tasks: n, ..base };
        let mut farms = build_labelled(&policies, p, None)?;
        // Worker 0 is the fast one (`fast-workers=1`).
        let speeds: Vec<f64> = (0..p).map(|w| if w == 0 { s } else { 1.0 }).collect();
        let split = Farm::builder()
            .workers(p)
            .dispatch(Box::new(KnownSpeedSplit::new(vec![s, 1.0])))
            .build()
            .map_err(farm_error)?;
        farms.push((KNOWN_SPLIT.into(), split));
        // `eft` told the same speeds, on the farm's unbounded queues.
        let told = Farm::builder()
            .workers(p)
            .policy("eft")
            .speeds(speeds.clone())
            .build()
            .map_err(farm_error)?;
        farms.push((EFT_TOLD.into(), told));
        rows.extend(compare_farms(plan, n, farms, Some(model), |farm| {
            primes_run_timed(w, farm)
        })?);
    }
    Ok(Experiment {
        id: "b".into(),
        title: format!("{p} workers, worker 0 counts primes only to 2,000: S against the model Σsᵢ/(p·s₁) (Figs. 7–8)"),
        workers: p,
        workload: base.spec(),
        notes: vec![
            if p > 1 {
                format!(
                    "fast task measured {s:.2}× cheaper here; model S = ({s:.2} + {})/{p} = {model:.3}",
                    p - 1
                )
            } else {
                format!("fast task measured {s:.2}× cheaper here; one worker gets every item: model S = 1")
            },
            format!(
                "{KNOWN_SPLIT}: a baseline told the speeds in advance (worker 0 gets {s:.2}/({s:.2} + {}) of the items, spread evenly): the S balancing can reach on this machine",
                p - 1
            ),
            format!("{EFT_MEASURED}: earliest finish time on speeds measured as the farm runs (queues bounded at 4 so that items are placed while workers run); {EFT_TOLD}: the same rule told the speeds above, unbounded queues"),
            "busy %: each worker's time in tasks over the run's wall time (mean of the runs); the model assumes solo task speeds, so busy workers below the model ran slower tasks, not idle ones".into(),
        ],
        rows,
    })
}

/// (c) three workers, two sharing core 0.
pub fn experiment_c(plan: &Plan) -> Result<Experiment> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pin = (cores >= 2).then(|| vec![0, 0, 1]);
    let policies = ["rr", "arrs", "arrs-adaptive", "on-demand"];
    let mut rows = Vec::new();
    for n in sizes(plan, &[1500, 6000], &[1500, 3000, 6000, 12000]) {
        let w = Primes::parse(&format!("primes:tasks={n}"))?;
        rows.extend(compare(
            plan,
            n,
            &policies,
            3,
            pin.clone(),
            None,
            primes_run(w),
        )?);
    }
    let note = if pin.is_some() {
        "workers 0 and 1 pinned to core 0, worker 2 to core 1; the emitter is not pinned"
    } else {
        "fewer than 2 cores visible: workers not pinned"
    };
    Ok(Experiment {
        id: "c".into(),
        title: "three workers, two pinned to one core, uniform tasks (Fig. 10)".into(),
        workers: 3,
        workload: Primes::default().spec(),
        notes: vec![note.into()],
        rows,
    })
}

/// (d) very short uniform tasks.
pub fn experiment_d(plan: &Plan) -> Result<Experiment> {
    let policies = ["rr", "arrs", "arrs-adaptive"];
    let mut rows = Vec::new();
    for n in sizes(plan, &[68_000], &[68_000, 136_000, 272_000]) {
        let md = MdPairs::new(n, 4096, 16.0, 2015);
        let run = |farm: &mut Farm| {
            let mut sum = 0.0;
            let report = farm
                .run_collect(0..md.pairs, |_, i| md.run(i), |f| sum += f)
                .map_err(farm_error);
            black_box(sum);
            report
        };
        rows.extend(compare(plan, n, &policies, plan.workers, None, None, run)?);
    }
    Ok(Experiment {
        id: "d".into(),
        title: format!(
            "very short uniform tasks: MD-like pair forces, {} workers, with a collector (Fig. 11)",
            plan.workers
        ),
        workers: plan.workers,
        workload: MdPairs::default().spec(),
        notes: vec![],
        rows,
    })
}

/// (e) the feedback farm.
pub fn experiment_e(plan: &Plan) -> Result<Experiment> {
    let policies = ["rr", "arrs", "arrs-adaptive", "on-demand"];
    let tasks = if plan.quick { 300 } else { 1000 };
    let mut rows = Vec::new();
    for pool in sizes(plan, &[8, 32], &[4, 8, 16, 32, 64]) {
        let spec = keel_policy::Spec::parse(&format!("material:pool={pool},tasks={tasks}"))
            .map_err(keel_workloads::WorkloadError::from)?;
        let m = Material::from_spec(&spec)?;
        let run = |farm: &mut Farm| {
            let mut search = m.search();
            let report = farm
                .run_feedback(
                    m.initial(),
                    |me, s| m.improve(me.index, s),
                    |s, fb| {
                        if let Some(next) = search.collect(s) {
                            fb.send(next);
                        }
                    },
                )
                .map_err(farm_error);
            black_box(search.best);
            report
        };
        rows.extend(compare(plan, pool, &policies, 2, None, None, run)?);
    }
    Ok(Experiment {
        id: "e".into(),
        title: format!("material optimisation with feedback, {tasks} tasks, 2 workers of strategy cost 1 and 4; size = pool (Fig. 13)"),
        workers: 2,
        workload: Material::default().spec(),
        notes: vec![],
        rows,
    })
}

/// Per-item cost with empty tasks: `rr` and `arrs` alternate run by run
/// (this machine's speed drifts by tens of percent within minutes), and
/// `arrs`'s ratio to `rr` is the median of the ratios of paired runs.
pub fn overhead(plan: &Plan) -> Result<Vec<Overhead>> {
    let items = if plan.quick { 300_000 } else { 2_000_000 };
    let reps = plan.runs.max(3);
    let policies = ["rr", "arrs"];
    let mut out = Vec::new();
    let mut worker_counts = vec![1, plan.workers];
    worker_counts.dedup();
    for workers in worker_counts {
        let mut farms: Vec<Farm> = policies
            .iter()
            .map(|p| build(p, workers, None))
            .collect::<Result<_, _>>()?;
        let mut ns = vec![Vec::with_capacity(reps); policies.len()];
        for _ in 0..reps {
            for (i, farm) in farms.iter_mut().enumerate() {
                let t = Instant::now();
                farm.run(0..items, |_, i| {
                    black_box(i);
                })
                .map_err(farm_error)?;
                ns[i].push(t.elapsed().as_secs_f64() * 1e9 / items as f64);
            }
        }
        let mut ratios: Vec<f64> = ns[1].iter().zip(&ns[0]).map(|(x, rr)| x / rr).collect();
        for (i, policy) in policies.iter().enumerate() {
            let mut sorted = ns[i].clone();
            sorted.sort_by(f64::total_cmp);
            out.push(Overhead {
                policy: policy.to_string(),
                workers,
                items,
                ns_per_item: sorted[sorted.len() / 2],
                range: (sorted[0], sorted[sorted.len() - 1]),
                vs_rr: (i > 0).then(|| median(&mut ratios)),
            });
        }
    }
    Ok(out)
}
