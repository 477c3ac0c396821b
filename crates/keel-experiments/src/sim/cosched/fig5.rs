//! §3.3's Fig. 5: the granularity × variability × pattern sweep and the
//! paper's observations checked on it.

use keel_sim::cluster::scenarios::{fig5_findings, fig5_sweep};
use keel_sim::cluster::OsModel;
use keel_workloads::bsp;
use keel_workloads::bsp::Pattern;

use super::{sim_error, CoschedSetup, Fig5Report, Setup};
use crate::error::{ExperimentError, Result};
use crate::sim::Progress;

/// The sweep's axes.
#[derive(Debug, Clone, PartialEq)]
pub struct Fig5Config {
    /// Compute granularities, seconds.
    pub granularities: Vec<f64>,
    /// Variabilities (1 = ±100 %).
    pub variabilities: Vec<f64>,
    /// Patterns: `nn`, `barrier` (or `ring`).
    pub patterns: Vec<String>,
}

impl Default for Fig5Config {
    /// The paper's axes, both patterns.
    fn default() -> Self {
        Fig5Config {
            granularities: bsp::FIG5_GRANULARITIES.to_vec(),
            variabilities: bsp::FIG5_VARIABILITIES.to_vec(),
            patterns: vec!["nn".into(), "barrier".into()],
        }
    }
}

/// The sweep and the paper's observations checked on it; `progress` hears
/// the number of simulations, then each.
pub fn fig5(
    a: &Fig5Config,
    common: &CoschedSetup,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Fig5Report> {
    let scale = common.scale()?;
    let specs = common.specs(&fig5_policies())?;
    let patterns = a
        .patterns
        .iter()
        .map(|p| Pattern::parse(p))
        .collect::<Result<Vec<_>, _>>()?;
    if a.granularities.is_empty() || a.variabilities.is_empty() || patterns.is_empty() {
        return Err(ExperimentError::Invalid(
            "fig5 needs at least one granularity, variability and pattern".into(),
        ));
    }
    // Checked before the sweep: a bad value fails at once, not an hour in.
    for &g in &a.granularities {
        bsp::fig5(g, 0.0, Pattern::Barrier)?;
    }
    for &v in &a.variabilities {
        bsp::fig5(0.004, v, Pattern::Barrier)?;
    }
    let model = common.model(bsp::CLUSTER_NODES, bsp::PES_PER_NODE, OsModel::linux_2_4())?;
    let total = patterns.len() * a.granularities.len() * a.variabilities.len() * specs.len();
    progress(Progress::Total(total as u64));
    let points = fig5_sweep(
        &patterns,
        &a.granularities,
        &a.variabilities,
        &specs,
        &model,
        scale,
        &mut || progress(Progress::Step("")),
    );
    let points = points.map_err(sim_error)?;
    let findings = fig5_findings(&points);
    Ok(Fig5Report {
        setup: Setup {
            seed: common.seed,
            scale,
            model,
        },
        points,
        findings,
    })
}

/// Fig. 5's schedulers.
pub fn fig5_policies() -> [&'static str; 4] {
    ["gs", "fcfs", "fcs", "sb"]
}

/// A spec's policy name (before any `:` parameters).
pub fn policy_name(spec: &str) -> String {
    spec.split(':').next().unwrap_or(spec).trim().to_string()
}
