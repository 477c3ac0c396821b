//! The text tables of `keel bench farm`.

use std::io::Write;

use crate::error::CliError;
use crate::report;
use keel_experiments::bench::farm::{Experiment, Overhead};

/// One experiment's header and table.
pub fn write_experiment(out: &mut dyn Write, e: &Experiment) -> Result<(), CliError> {
    writeln!(out, "({}) {}", e.id, e.title)?;
    writeln!(out, "  workload {}", e.workload)?;
    for note in &e.notes {
        writeln!(out, "  {note}")?;
    }
    let has_model = e.rows.iter().any(|r| r.model.is_some());
    let has_busy = e.rows.iter().any(|r| r.busy_percent.is_some());
    let size = if e.id == "e" { "pool" } else { "tasks" };
    let mut rows = vec![[
        size.to_string(),
        "policy".into(),
        "⟨t⟩".into(),
        "± se".into(),
        "S".into(),
        "± se".into(),
        "med. round rr/X".into(),
        if has_model {
            "S ÷ model (%)".into()
        } else {
            String::new()
        },
        "items per worker".into(),
        if has_busy {
            "busy per worker (%)".into()
        } else {
            String::new()
        },
    ]];
    for r in &e.rows {
        let items: Vec<String> = r.per_worker.iter().map(u64::to_string).collect();
        rows.push([
            r.size.to_string(),
            r.policy.clone(),
            report::duration(r.mean_s),
            report::duration(r.se_s),
            format!("{:.3}", r.speedup),
            format!("{:.3}", r.speedup_se),
            format!("{:.3}", r.median_round_ratio),
            r.model
                .map_or(String::new(), |m| format!("{:.1}", 100.0 * r.speedup / m)),
            items.join("/"),
            r.busy_percent.as_ref().map_or(String::new(), |busy| {
                let each: Vec<String> = busy.iter().map(|b| format!("{b:.0}")).collect();
                each.join("/")
            }),
        ]);
    }
    for line in report::align(&rows) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

pub(super) fn write_overhead(out: &mut dyn Write, rows: &[Overhead]) -> Result<(), CliError> {
    writeln!(
        out,
        "(overhead) per-item cost with empty tasks, no collector, rr and arrs alternating run by run (median); targets: rr ≤ 50 ns/item, arrs ≤ 1.2 × rr"
    )?;
    let mut table = vec![[
        "policy".to_string(),
        "workers".into(),
        "items".into(),
        "ns/item".into(),
        "range (ns/item)".into(),
        "÷ rr (paired)".into(),
    ]];
    for r in rows {
        table.push([
            r.policy.clone(),
            r.workers.to_string(),
            r.items.to_string(),
            format!("{:.1}", r.ns_per_item),
            format!("{:.1}–{:.1}", r.range.0, r.range.1),
            r.vs_rr.map_or(String::new(), |x| format!("{x:.3}")),
        ]);
    }
    for line in report::align(&table) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}
