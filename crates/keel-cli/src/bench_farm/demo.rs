//! The demo's farm section.

use std::io::Write;
use std::time::Instant;

use keel_workloads::farm::Primes;

use crate::error::CliError;
use crate::report;
use keel_experiments::bench::farm::harness::{build, fast_speed, primes_run};

/// The demo's farm section: (b) in miniature, one run per policy.
pub fn demo(out: &mut dyn Write) -> Result<(), CliError> {
    let w = Primes::parse("primes:tasks=400,fast-workers=1")?;
    let model = w.model_speedup(2, fast_speed(&w));
    let mut rows = vec![[
        "policy".to_string(),
        "time".into(),
        "S vs rr".into(),
        "% of model".into(),
        "items per worker".into(),
    ]];
    let mut t_rr = None;
    for policy in ["rr", "arrs", "arrs-adaptive", "on-demand", "shortest-queue"] {
        let mut farm = build(policy, 2, None)?;
        let start = Instant::now();
        let report = primes_run(w)(&mut farm)?;
        let t = start.elapsed().as_secs_f64();
        let rr = *t_rr.get_or_insert(t);
        let items: Vec<String> = report.per_worker.iter().map(u64::to_string).collect();
        rows.push([
            policy.into(),
            report::duration(t),
            format!("{:.2}", rr / t),
            format!("{:.0}", 100.0 * rr / t / model),
            items.join("/"),
        ]);
    }
    writeln!(
        out,
        "{} tasks on 2 workers, worker 0's tasks {:.1}× cheaper; model S = {model:.2}; one run each (keel bench farm repeats)",
        w.tasks,
        2.0 * model - 1.0
    )?;
    for line in report::align(&rows) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}
