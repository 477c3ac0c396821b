//! `keel bench farm --svg`: S against the number of tasks per policy, one
//! panel per experiment, as in the ARRS paper's figures.

use std::path::Path;

use keel_experiments::bench::farm::{Experiment, FarmBenchReport};

use crate::error::CliError;
use crate::plot::{self, Panel, Series};

/// One panel per experiment: a line per policy, and the model where the
/// experiment has one.
pub fn panel(e: &Experiment) -> Panel {
    let mut policies: Vec<&str> = Vec::new();
    for r in &e.rows {
        if !policies.contains(&r.policy.as_str()) {
            policies.push(&r.policy);
        }
    }
    let mut series: Vec<Series> = policies
        .iter()
        .enumerate()
        .map(|(k, &p)| Series {
            name: p.to_string(),
            color: k,
            reference: false,
            points: e
                .rows
                .iter()
                .filter(|r| r.policy == p)
                .map(|r| (r.size as f64, r.speedup))
                .collect(),
        })
        .collect();
    let mut model: Vec<(f64, f64)> = Vec::new();
    for r in &e.rows {
        if let Some(m) = r.model {
            let point = (r.size as f64, m);
            if !model.contains(&point) {
                model.push(point);
            }
        }
    }
    if !model.is_empty() {
        series.push(Series::reference("model", model));
    }
    let size = if e.id == "e" { "pool size" } else { "tasks" };
    Panel {
        title: format!("({}) {}", e.id, e.title),
        x_label: size.into(),
        y_label: "S = ⟨t_rr⟩ / ⟨t⟩".into(),
        series,
        ..Panel::default()
    }
}

/// Writes the plot to `path`.
pub fn write(path: &Path, report: &FarmBenchReport) -> Result<(), CliError> {
    let panels: Vec<Panel> = report.experiments.iter().map(panel).collect();
    plot::write_svg(path, &panels)
}
