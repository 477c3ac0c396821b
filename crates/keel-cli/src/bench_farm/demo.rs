//! The demo's farm section.

use std::io::Write;

use keel_experiments::bench::farm;

use crate::error::CliError;
use crate::report;

/// The demo's farm section: (b) in miniature, one run per policy.
pub fn demo(out: &mut dyn Write) -> Result<(), CliError> {
    let d = farm::demo()?;
    let model = d.model;
    let mut rows = vec![[
        "policy".to_string(),
        "time".into(),
        "S vs rr".into(),
        "% of model".into(),
        "items per worker".into(),
    ]];
    // S against rr's own run, as the report computes it.
    let rr = d.rows.first().map_or(1.0, |r| r.seconds);
    for r in &d.rows {
        let items: Vec<String> = r.per_worker.iter().map(u64::to_string).collect();
        rows.push([
            r.policy.clone(),
            report::duration(r.seconds),
            format!("{:.2}", rr / r.seconds),
            format!("{:.0}", 100.0 * rr / r.seconds / model),
            items.join("/"),
        ]);
    }
    writeln!(
        out,
        "{} tasks on 2 workers, worker 0's tasks {:.1}× cheaper; model S = {model:.2}; one run each (keel bench farm repeats)",
        d.tasks,
        2.0 * model - 1.0
    )?;
    for line in report::align(&rows) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}
