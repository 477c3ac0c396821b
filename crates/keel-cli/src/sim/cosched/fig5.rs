//! `fig5`: §3.3's Fig. 5, the granularity × variability × pattern sweep,
//! its tables, the paper's observations checked, and the SVG plots.

use std::io::Write;
use std::path::Path;

use keel_experiments::sim::cosched::{self as lab, fig5_policies, policy_name, Fig5Config};
use keel_sim::cluster::scenarios::Fig5Point;
use keel_workloads::bsp;
use keel_workloads::bsp::Pattern;

use super::tables::{label, write_setup};
use super::{with_progress, Common, Fig5Args};
use crate::error::CliError;
use crate::plot::{self, Axis, Panel, Series};
use crate::report;

pub(super) fn fig5(a: &Fig5Args, common: &Common, out: &mut dyn Write) -> Result<(), CliError> {
    let setup = common.setup();
    let config = Fig5Config {
        granularities: a.granularities.clone(),
        variabilities: a.variabilities.clone(),
        patterns: a.patterns.clone(),
    };
    let report = with_progress("sim cosched fig5", common.quiet, |p| {
        lab::fig5(&config, &setup, p)
    })?;
    // Both were checked by the sweep.
    let specs = setup.specs(&fig5_policies())?;
    let patterns = a
        .patterns
        .iter()
        .map(|p| Pattern::parse(p))
        .collect::<Result<Vec<_>, _>>()?;
    // The tables come first, the plots after: a plot that cannot be
    // written must not throw away what was computed; its failure is still
    // the command's error, naming the path.
    let plots = |out: &mut dyn Write| -> Result<(), CliError> {
        let Some(svg) = &a.svg else {
            return Ok(());
        };
        out.flush()?;
        // One plot per pattern: `FILE.svg` gains `-<pattern>` before its
        // extension; any other path is a directory that gets
        // `fig5-<pattern>.svg` files, as `--svg DIR` always did.
        let is_file = svg
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("svg"))
            && !svg.is_dir();
        let is_dir = !is_file;
        let dir = if is_dir {
            svg.as_path()
        } else {
            svg.parent().unwrap_or(Path::new(""))
        };
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir)
                .map_err(|e| CliError::Runtime(format!("svg {}: {e}", dir.display())))?;
        }
        let path_of = |pattern: &str| {
            if is_dir {
                return dir.join(format!("fig5-{pattern}.svg"));
            }
            let stem = svg
                .file_stem()
                .map_or("fig5".into(), |s| s.to_string_lossy());
            dir.join(format!("{stem}-{pattern}.svg"))
        };
        for p in &patterns {
            plot_fig5(&path_of(p.name()), p.name(), a, &specs, &report.points)?;
        }
        Ok(())
    };
    if common.json {
        serde_json::to_writer(&mut *out, &report)?;
        writeln!(out)?;
        return plots(out);
    }
    write_setup(out, &report.setup)?;
    writeln!(
        out,
        "§3.3 Fig. 5: 4 jobs × 64 processes on 32 nodes × 2 PEs, {:.0} s of compute per job (× scale); cells: turnaround / (CPU work / PEs)",
        bsp::FIG5_WORK_S
    )?;
    for p in &patterns {
        for &v in &a.variabilities {
            writeln!(out)?;
            writeln!(out, "{} pattern, variability ±{:.0} %", p.name(), v * 100.0)?;
            let mut header = vec!["granularity".to_string()];
            header.extend(specs.iter().map(|s| label(&policy_name(s))));
            header.push("FCS classes CS/F/DC".into());
            let mut rows = vec![header];
            for &g in &a.granularities {
                let mut row = vec![report::duration(g)];
                let mut classes = "–".to_string();
                for s in &specs {
                    let name = policy_name(s);
                    let pt = report.points.iter().find(|x| {
                        x.pattern == p.name()
                            && x.granularity == g
                            && x.variability == v
                            && x.policy == name
                    });
                    row.push(pt.map_or("–".into(), |x| format!("{:.3}", x.normalised)));
                    if let Some(share) = pt.and_then(|x| x.class_share) {
                        classes = format!(
                            "{:.0}/{:.0}/{:.0} %",
                            share[0] * 100.0,
                            share[1] * 100.0,
                            share[2] * 100.0
                        );
                    }
                }
                row.push(classes);
                rows.push(row);
            }
            for line in report::align(&rows) {
                writeln!(out, "{line}")?;
            }
        }
    }
    writeln!(out)?;
    writeln!(out, "The paper's observations (§3.3):")?;
    for f in &report.findings {
        let verdict = match f.holds {
            Some(true) => "holds",
            Some(false) => "does NOT hold",
            None => "not checked (points missing)",
        };
        writeln!(
            out,
            "  [{}] {}: {} — {}",
            f.pattern, f.claim, verdict, f.detail
        )?;
    }
    plots(out)?;
    if let Some(dir) = &a.svg {
        writeln!(out, "plots: {}", dir.display())?;
    }
    Ok(())
}

fn plot_fig5(
    path: &Path,
    pattern: &str,
    a: &Fig5Args,
    specs: &[String],
    points: &[Fig5Point],
) -> Result<(), CliError> {
    let gmin = a
        .granularities
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min);
    let gmax = a.granularities.iter().copied().fold(0.0, f64::max);
    let x_range = if gmax > gmin {
        (gmin / 1.2, gmax * 1.2)
    } else {
        (gmin / 2.0, gmin * 2.0)
    };
    let ymax = points
        .iter()
        .filter(|p| p.pattern == pattern)
        .map(|p| p.normalised)
        .fold(1.0, f64::max)
        * 1.05;
    let title = if pattern == "nn" {
        "Nearest neighbour"
    } else {
        "Barrier"
    };
    let panels: Vec<Panel> = a
        .variabilities
        .iter()
        .map(|&v| {
            let series = specs
                .iter()
                .enumerate()
                .map(|(i, spec)| {
                    let name = policy_name(spec);
                    let mut line: Vec<(f64, f64)> = points
                        .iter()
                        .filter(|p| p.pattern == pattern && p.variability == v && p.policy == name)
                        .map(|p| (p.granularity, p.normalised))
                        .collect();
                    line.sort_by(|x, y| x.0.total_cmp(&y.0));
                    Series::new(label(&name), i, line)
                })
                .collect();
            Panel {
                title: format!("{title}, variability ±{:.0} %", v * 100.0),
                x_label: "granularity (s)".into(),
                y_label: "turnaround / ideal".into(),
                series,
                x_axis: Axis {
                    log: true,
                    range: Some(x_range),
                },
                y_axis: Axis {
                    log: false,
                    range: Some((0.9, ymax)),
                },
            }
        })
        .collect();
    plot::write_svg(path, &panels)
}
