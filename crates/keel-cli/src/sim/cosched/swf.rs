//! `swf`: a Standard Workload Format log replayed under each policy (a
//! throughput study).

use std::io::Write;

use keel_sim::cluster::scenarios::APP_POLICIES;
use keel_sim::cluster::{simulate_spec, OsModel};
use keel_workloads::bsp::{BspJob, Pattern};
use keel_workloads::swf::WideJobs;
use keel_workloads::{bsp, swf};

use super::fig5::policy_name;
use super::tables::{label, write_setup};
use super::{sim_error, Common, Setup, SwfArgs, SwfReport, SwfRow};
use crate::error::CliError;
use crate::report;

pub(super) fn swf_run(a: &SwfArgs, common: &Common, out: &mut dyn Write) -> Result<(), CliError> {
    let scale = common.scale()?;
    let specs = common.specs(&APP_POLICIES)?;
    let pattern = Pattern::parse(&a.pattern)?;
    let model = common.model(a.nodes, a.pes_per_node, OsModel::linux_2_4())?;
    let log = swf::read_swf(&a.file).map_err(|e| CliError::Usage(e.to_string()))?;
    let wide = if a.reject_wide {
        WideJobs::Reject
    } else {
        WideJobs::Drop
    };
    let stream = swf::arrivals(&log.jobs, model.cluster.pes(), wide)
        .map_err(|e| CliError::Usage(format!("{}: {e}", a.file.display())))?;
    let mut arrivals = stream.jobs;
    let mut skipped = stream.dropped.len();
    if a.limit > 0 && arrivals.len() > a.limit {
        skipped += arrivals.len() - a.limit;
        arrivals.truncate(a.limit);
    }
    let jobs = bsp::from_swf(&arrivals, a.granularity, a.variability, pattern)?
        .into_iter()
        .map(|mut j| {
            j.iterations = ((j.iterations as f64 * scale).round() as u64).max(1);
            j
        })
        .collect::<Vec<BspJob>>();
    if jobs.is_empty() {
        return Err(CliError::Usage(format!(
            "{}: no job of the log can run on {} PEs",
            a.file.display(),
            model.cluster.pes()
        )));
    }
    // Refused before the first policy runs: a log's run time of 10⁹ s
    // would otherwise be 10¹⁰ iterations per process.
    keel_sim::cluster::check_work(&jobs).map_err(|e| {
        CliError::Usage(format!(
            "{}: {e}; raise --granularity, lower --scale or replay fewer jobs with --limit",
            a.file.display()
        ))
    })?;
    let bar = crate::sim::progress(specs.len() as u64, "sim cosched swf", common.quiet);
    let mut rows = Vec::new();
    for spec in &specs {
        let run = simulate_spec(&model, spec, &jobs);
        bar.inc(1);
        let run = run.map_err(sim_error)?;
        let slowdowns: Vec<f64> = run
            .jobs
            .iter()
            .map(|j| j.turnaround / j.dedicated.max(1e-9))
            .collect();
        rows.push(SwfRow {
            policy: policy_name(spec),
            makespan: run.makespan,
            mean_turnaround: run.mean_turnaround(),
            mean_slowdown: slowdowns.iter().sum::<f64>() / slowdowns.len() as f64,
            utilisation: run.utilisation(),
        });
    }
    bar.finish_and_clear();
    let report = SwfReport {
        setup: Setup {
            seed: common.seed,
            scale,
            model,
        },
        file: a.file.display().to_string(),
        jobs: jobs.len(),
        skipped,
        rows,
    };
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
