//! `swf`: a Standard Workload Format log replayed under each policy (a
//! throughput study).

use std::io::Write;

use keel_experiments::sim::cosched::{self as lab, SwfConfig};
use keel_workloads::bsp::Pattern;

use super::tables::{label, write_setup};
use super::{with_progress, Common, SwfArgs};
use crate::error::CliError;
use crate::report;

pub(super) fn swf_run(a: &SwfArgs, common: &Common, out: &mut dyn Write) -> Result<(), CliError> {
    let setup = common.setup();
    let config = SwfConfig {
        file: a.file.clone(),
        granularity: a.granularity,
        variability: a.variability,
        pattern: a.pattern.clone(),
        limit: a.limit,
        nodes: a.nodes,
        pes_per_node: a.pes_per_node,
        reject_wide: a.reject_wide,
    };
    let report = with_progress("sim cosched swf", common.quiet, |p| {
        lab::swf(&config, &setup, p)
    })?;
    // Checked by the replay.
    let pattern = Pattern::parse(&a.pattern)?;
    if common.json {
        serde_json::to_writer(&mut *out, &report)?;
        writeln!(out)?;
        return Ok(());
    }
    write_setup(out, &report.setup)?;
    writeln!(
        out,
        "{}: {} jobs replayed ({} skipped) on {} × {} PEs, {} pattern, granularity {}",
        report.file,
        report.jobs,
        report.skipped,
        a.nodes,
        a.pes_per_node,
        pattern.name(),
        report::duration(a.granularity)
    )?;
    let mut table = vec![[
        "Algorithm".to_string(),
        "makespan".into(),
        "mean turnaround".into(),
        "mean slowdown".into(),
        "util".into(),
    ]];
    for r in &report.rows {
        table.push([
            label(&r.policy),
            format!("{:.2}", r.makespan),
            format!("{:.2}", r.mean_turnaround),
            format!("{:.3}", r.mean_slowdown),
            format!("{:.3}", r.utilisation),
        ]);
    }
    for line in report::align(&table) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}
