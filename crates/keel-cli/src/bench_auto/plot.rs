//! `keel bench auto --svg`: per workload, each loop instance's time under
//! every method and Oracle over the program, and below it the portfolio
//! schedule each method selected (as in Auto4OMP's figures).

use std::path::Path;

use keel_experiments::bench::auto::AutoReport;
use keel_policy::dls::AUTO4OMP_PORTFOLIO;

use crate::error::CliError;
use crate::plot::{self, Panel, Series};

/// Two panels per workload: times (ms) and selected schedule indices.
pub fn panels(report: &AutoReport) -> Vec<Panel> {
    let mut panels = Vec::new();
    let indexed = |times: &[f64]| -> Vec<(f64, f64)> {
        times
            .iter()
            .enumerate()
            .map(|(i, t)| (i as f64, t * 1e3))
            .collect()
    };
    for w in &report.workloads {
        // Oracle is colour 0 and method k colour k + 1 in both panels.
        let mut times = vec![Series {
            name: "Oracle".into(),
            points: indexed(&w.oracle_instance_times_s),
            color: 0,
            reference: false,
        }];
        times.extend(w.methods.iter().enumerate().map(|(k, m)| Series {
            name: m.result.config.clone(),
            points: indexed(&m.instance_times_s),
            color: k + 1,
            reference: false,
        }));
        let name = w.spec.split(':').next().unwrap_or(&w.spec);
        panels.push(Panel {
            title: format!("{name}: time per loop instance"),
            x_label: "loop instance (program order)".into(),
            y_label: "time (ms)".into(),
            series: times,
            ..Panel::default()
        });
        let selected = w
            .methods
            .iter()
            .enumerate()
            .map(|(k, m)| Series {
                name: m.result.config.clone(),
                color: k + 1,
                reference: false,
                points: m
                    .selected_per_instance
                    .iter()
                    .enumerate()
                    .filter_map(|(i, s)| s.map(|s| (i as f64, s as f64)))
                    .collect(),
            })
            .collect();
        panels.push(Panel {
            title: format!(
                "{name}: selected schedule (0 = {} … {} = {})",
                AUTO4OMP_PORTFOLIO[0],
                AUTO4OMP_PORTFOLIO.len() - 1,
                AUTO4OMP_PORTFOLIO[AUTO4OMP_PORTFOLIO.len() - 1]
            ),
            x_label: "loop instance (program order)".into(),
            y_label: "portfolio index".into(),
            series: selected,
            ..Panel::default()
        });
    }
    panels
}

/// Writes the plot to `path`.
pub fn write(path: &Path, report: &AutoReport) -> Result<(), CliError> {
    plot::write_svg(path, &panels(report))
}
