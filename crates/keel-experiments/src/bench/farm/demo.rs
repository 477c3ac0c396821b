//! The demo's farm section: experiment (b) in miniature, one run per
//! policy.

use std::time::Instant;

use keel_workloads::farm::Primes;
use serde::Serialize;

use super::harness::{build, fast_speed, primes_run};
use crate::error::Result;

/// One policy's run.
#[derive(Clone, Debug, Serialize)]
pub struct FarmDemoRow {
    /// The policy spec.
    pub policy: String,
    /// Wall time, seconds.
    pub seconds: f64,
    /// S = t_rr / t.
    pub speedup: f64,
    /// Items each worker ran.
    pub per_worker: Vec<u64>,
}

/// The demo's farm section.
#[derive(Clone, Debug, Serialize)]
pub struct FarmDemo {
    /// Tasks of the stream.
    pub tasks: usize,
    /// Eq. 2's S for the fast worker's speed measured now.
    pub model: f64,
    /// One row per policy, `rr` first.
    pub rows: Vec<FarmDemoRow>,
}

/// 400 prime-counting tasks on 2 workers, worker 0's tasks cheaper, under
/// every farm policy.
pub fn demo() -> Result<FarmDemo> {
    let w = Primes::parse("primes:tasks=400,fast-workers=1")?;
    let model = w.model_speedup(2, fast_speed(&w));
    let mut rows = Vec::new();
    let mut t_rr = None;
    for policy in ["rr", "arrs", "arrs-adaptive", "on-demand", "shortest-queue"] {
        let mut farm = build(policy, 2, None)?;
        let start = Instant::now();
        let report = primes_run(w)(&mut farm)?;
        let t = start.elapsed().as_secs_f64();
        let rr = *t_rr.get_or_insert(t);
        rows.push(FarmDemoRow {
            policy: policy.into(),
            seconds: t,
            speedup: rr / t,
            per_worker: report.per_worker,
        });
    }
    Ok(FarmDemo {
        tasks: w.tasks,
        model,
        rows,
    })
}
