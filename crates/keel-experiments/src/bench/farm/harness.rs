//! Building the farms and timing policies against each other: the runs
//! interleaved, the rows with `S` and its standard error, and the prime
//! workload's run closures and speed ratio.
//!
//! ```
//! use keel_experiments::bench::farm::harness::{build, primes_run};
//! use keel_workloads::farm::Primes;
//! let w = Primes::parse("primes:tasks=20,limit=50").unwrap();
//! let mut farm = build("rr", 2, None).unwrap();
//! let report = primes_run(w)(&mut farm).unwrap();
//! assert_eq!(report.per_worker.iter().sum::<u64>(), 20);
//! ```

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use keel::farm::{Farm, FarmReport};
use keel_workloads::farm::{count_primes, Primes};

use super::{Plan, Row};
use crate::evaluation::stats::mean_se;
use keel_policy::stats::median;

use crate::error::{ExperimentError, Result};

/// A farm of `workers` under the registry policy `policy`, pinned to
/// `pin`'s cores when given.
pub fn build(policy: &str, workers: usize, pin: Option<Vec<usize>>) -> Result<Farm> {
    let mut b = Farm::builder().workers(workers).policy(policy);
    if let Some(cores) = pin {
        b = b.pin(cores);
    }
    b.build()
        .map_err(|e| ExperimentError::Invalid(format!("farm `{policy}`: {e}")))
}

/// One farm per policy, labelled with its spec.
pub(crate) fn build_labelled(
    policies: &[&str],
    workers: usize,
    pin: Option<Vec<usize>>,
) -> Result<Vec<(String, Farm)>> {
    policies
        .iter()
        .map(|p| Ok((p.to_string(), build(p, workers, pin.clone())?)))
        .collect()
}

/// Times `policies` on one task set, interleaved run by run; the first
/// policy is the reference (`rr`).
pub(crate) fn compare(
    plan: &Plan,
    size: usize,
    policies: &[&str],
    workers: usize,
    pin: Option<Vec<usize>>,
    model: Option<f64>,
    mut run: impl FnMut(&mut Farm) -> Result<FarmReport>,
) -> Result<Vec<Row>> {
    let farms = build_labelled(policies, workers, pin)?;
    compare_farms(plan, size, farms, model, |farm| {
        Ok(Measured {
            report: run(farm)?,
            busy_s: None,
        })
    })
}

/// One timed run, and where measured, each worker's seconds in tasks.
pub(crate) struct Measured {
    report: FarmReport,
    busy_s: Option<Vec<f64>>,
}

/// [`compare`] over farms already built, each with its row label.
pub(crate) fn compare_farms(
    plan: &Plan,
    size: usize,
    mut farms: Vec<(String, Farm)>,
    model: Option<f64>,
    mut run: impl FnMut(&mut Farm) -> Result<Measured>,
) -> Result<Vec<Row>> {
    let policies: Vec<String> = farms.iter().map(|(label, _)| label.clone()).collect();
    let mut times = vec![Vec::with_capacity(plan.runs); policies.len()];
    let mut last = vec![Vec::new(); policies.len()];
    // Per policy, per worker: the sum over runs of busy / wall.
    let mut busy_sum: Vec<Option<Vec<f64>>> = vec![None; policies.len()];
    for _ in 0..plan.runs {
        for (i, (_, farm)) in farms.iter_mut().enumerate() {
            let start = Instant::now();
            let measured = run(farm)?;
            let wall = start.elapsed().as_secs_f64();
            times[i].push(wall);
            last[i] = measured.report.per_worker;
            if let Some(busy) = measured.busy_s {
                let sum = busy_sum[i].get_or_insert_with(|| vec![0.0; busy.len()]);
                for (acc, b) in sum.iter_mut().zip(busy) {
                    *acc += b / wall;
                }
            }
        }
    }
    let (rr_mean, rr_se) = mean_se(&times[0]);
    Ok(policies
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let (mean, se) = mean_se(&times[i]);
            let s = rr_mean / mean;
            let rel = ((rr_se / rr_mean).powi(2) + (se / mean).powi(2)).sqrt();
            let mut ratios: Vec<f64> = times[0]
                .iter()
                .zip(&times[i])
                .map(|(rr, x)| rr / x)
                .collect();
            Row {
                size,
                policy: p.to_string(),
                median_round_ratio: median(&mut ratios),
                mean_s: mean,
                se_s: se,
                speedup: s,
                speedup_se: if i == 0 { 0.0 } else { s * rel },
                model,
                per_worker: std::mem::take(&mut last[i]),
                busy_percent: busy_sum[i]
                    .take()
                    .map(|sum| sum.iter().map(|b| 100.0 * b / plan.runs as f64).collect()),
            }
        })
        .collect())
}

pub(crate) fn farm_error(e: keel::farm::FarmError) -> ExperimentError {
    ExperimentError::Invalid(format!("farm: {e}"))
}

/// A run of the prime-counting tasks of `w` on a farm.
pub fn primes_run(w: Primes) -> impl FnMut(&mut Farm) -> Result<FarmReport> {
    move |farm| {
        farm.run(0..w.tasks, |me, _| {
            black_box(w.run(me.index));
        })
        .map_err(farm_error)
    }
}

/// [`primes_run`], also timing each worker's tasks (two clock reads per
/// task: under 0.1 % of a 0.14 ms task).
pub(crate) fn primes_run_timed(w: Primes, farm: &mut Farm) -> Result<Measured> {
    let busy_ns: Vec<AtomicU64> = (0..farm.workers()).map(|_| AtomicU64::new(0)).collect();
    let report = farm
        .run(0..w.tasks, |me, _| {
            let start = Instant::now();
            black_box(w.run(me.index));
            let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
            busy_ns[me.index].fetch_add(ns, Ordering::Relaxed);
        })
        .map_err(farm_error)?;
    Ok(Measured {
        report,
        busy_s: Some(
            busy_ns
                .iter()
                .map(|b| b.load(Ordering::Relaxed) as f64 * 1e-9)
                .collect(),
        ),
    })
}

pub(crate) fn sizes(plan: &Plan, quick: &[usize], full: &[usize]) -> Vec<usize> {
    if plan.quick { quick } else { full }.to_vec()
}

/// The fast worker's speed relative to a slow one, measured now: slow and
/// fast batches alternate and the median of the paired ratios is taken, so
/// that a drift of this machine's speed during the measurement (tens of
/// percent within minutes here) does not enter the ratio.
pub fn fast_speed(w: &Primes) -> f64 {
    let batch = |limit: u32| {
        let t = Instant::now();
        for _ in 0..20 {
            black_box(count_primes(black_box(limit)));
        }
        t.elapsed().as_secs_f64()
    };
    let mut ratios: Vec<f64> = (0..21)
        .map(|_| batch(w.limit) / batch(w.fast_limit))
        .collect();
    median(&mut ratios)
}
