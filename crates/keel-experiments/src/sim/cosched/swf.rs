//! A Standard Workload Format log replayed under each policy (a
//! throughput study).

use std::path::PathBuf;

use keel_sim::cluster::scenarios::APP_POLICIES;
use keel_sim::cluster::{simulate_spec, OsModel};
use keel_workloads::bsp::{BspJob, Pattern};
use keel_workloads::swf::WideJobs;
use keel_workloads::{bsp, swf};

use super::{policy_name, sim_error, CoschedSetup, Setup, SwfReport, SwfRow, SWF_GRANULARITY};
use crate::error::{ExperimentError, Result};
use crate::sim::Progress;

/// What to replay, on which cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct SwfConfig {
    /// The log (Standard Workload Format 2.2).
    pub file: PathBuf,
    /// Compute seconds per iteration: a job's run time becomes
    /// round(run time / granularity) iterations (at least 1).
    pub granularity: f64,
    /// Variability of every job's compute phases (1 = ±100 %).
    pub variability: f64,
    /// Communication pattern of every job: `barrier`, `nn` or `ring`.
    pub pattern: String,
    /// Replay only the first N usable jobs (0: all).
    pub limit: usize,
    /// Nodes of the simulated cluster.
    pub nodes: usize,
    /// PEs per node.
    pub pes_per_node: usize,
    /// Fail on jobs wider than the cluster instead of skipping them.
    pub reject_wide: bool,
}

impl SwfConfig {
    /// The command's defaults for `file`: granularity [`SWF_GRANULARITY`],
    /// no variability, barriers, the first 100 jobs, the paper's cluster.
    pub fn new(file: PathBuf) -> Self {
        SwfConfig {
            file,
            granularity: SWF_GRANULARITY,
            variability: 0.0,
            pattern: "barrier".into(),
            limit: 100,
            nodes: bsp::CLUSTER_NODES,
            pes_per_node: bsp::PES_PER_NODE,
            reject_wide: false,
        }
    }
}

/// Replays the log under each policy; `progress` hears the number of
/// policies, then each.
pub fn swf(
    a: &SwfConfig,
    common: &CoschedSetup,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<SwfReport> {
    let scale = common.scale()?;
    let specs = common.specs(&APP_POLICIES)?;
    let pattern = Pattern::parse(&a.pattern)?;
    let model = common.model(a.nodes, a.pes_per_node, OsModel::linux_2_4())?;
    let log = swf::read_swf(&a.file).map_err(|e| ExperimentError::Invalid(e.to_string()))?;
    let wide = if a.reject_wide {
        WideJobs::Reject
    } else {
        WideJobs::Drop
    };
    let stream = swf::arrivals(&log.jobs, model.cluster.pes(), wide)
        .map_err(|e| ExperimentError::Invalid(format!("{}: {e}", a.file.display())))?;
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
        return Err(ExperimentError::Invalid(format!(
            "{}: no job of the log can run on {} PEs",
            a.file.display(),
            model.cluster.pes()
        )));
    }
    // Refused before the first policy runs: a log's run time of 10⁹ s
    // would otherwise be 10¹⁰ iterations per process.
    keel_sim::cluster::check_work(&jobs).map_err(|e| {
        ExperimentError::Invalid(format!(
            "{}: {e}; raise --granularity, lower --scale or replay fewer jobs with --limit",
            a.file.display()
        ))
    })?;
    progress(Progress::Total(specs.len() as u64));
    let mut rows = Vec::new();
    for spec in &specs {
        let run = simulate_spec(&model, spec, &jobs);
        progress(Progress::Step(""));
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
    Ok(SwfReport {
        setup: Setup {
            seed: common.seed,
            scale,
            model,
        },
        file: a.file.display().to_string(),
        jobs: jobs.len(),
        skipped,
        rows,
    })
}
