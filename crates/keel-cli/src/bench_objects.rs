//! `keel bench objects`: the Charm++ + OpenMP paper's evaluation
//! (§4.4, §5) on
//! Keel's objects context, on this machine:
//!
//! - **Table 1**: the Lassen-like proxy under No LB, Greedy and Greedy +
//!   stealing (remapping when it pays), No LB + stealing and Greedy every
//!   50 steps: λ at the PU level over the run, total time, and time ÷
//!   ideal (measured busy work ÷ PUs);
//! - **Table 2**: Greedy at periods 20, 50 and 100, time in steps and in
//!   balancing split out;
//! - **Invocation**: hot bands that stay, drift or jump, remapping when it
//!   pays against every 50 steps;
//! - **Fig. 2**: a balanced stencil with and without stealing (the cost of
//!   exposing potential tasks when nobody needs them);
//! - **lb_test**: ring and mesh under every registry mapping policy.
//!
//! Configurations are interleaved run by run; each row is the run with the
//! median total time.

use std::io::Write;

use keel_experiments::bench::objects::{self, ObjectsBenchReport, ObjectsConfig, Table};

use crate::cli::BenchObjectsArgs;
use crate::error::CliError;
use crate::plot::{self, Panel, Series};
use crate::progress;
use crate::report;

fn write_tables(out: &mut dyn Write, tables: &[Table]) -> Result<(), CliError> {
    for t in tables {
        writeln!(out)?;
        writeln!(out, "{}", t.title)?;
        writeln!(out, "  workload: {}", t.workload)?;
        let mut rows: Vec<Vec<String>> = vec![[
            "config",
            "λ PU (%)",
            "total",
            "steps",
            "balancing",
            "÷ ideal",
            "remaps",
            "migrations",
            "stolen",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()];
        for r in &t.rows {
            rows.push(vec![
                r.config.clone(),
                format!("{:.1}", r.lambda * 100.0),
                report::duration(r.total_s),
                report::duration(r.steps_s),
                report::duration(r.balance_s),
                if r.below_ideal {
                    format!("{:.3}!", r.of_ideal)
                } else {
                    format!("{:.3}", r.of_ideal)
                },
                r.rebalances.to_string(),
                r.migrations.to_string(),
                format!("{}/{}", r.stolen, r.exposed),
            ]);
        }
        for line in report::align(&rows) {
            writeln!(out, "{line}")?;
        }
    }
    if tables.iter().flat_map(|t| &t.rows).any(|r| r.below_ideal) {
        writeln!(out)?;
        writeln!(out, "{}", report::BELOW_IDEAL_NOTE)?;
    }
    Ok(())
}

/// `keel bench objects`.
pub fn run_objects(args: &BenchObjectsArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let config = ObjectsConfig {
        threads: args.threads,
        reps: args.reps,
        quick: args.quick,
    };
    let report =
        progress::with_progress("bench objects", args.quiet, |p| objects::run(&config, p))?;
    progress::warn_if_loaded("keel bench objects", report.background_load);
    if args.json {
        serde_json::to_writer(&mut *out, &report)?;
        writeln!(out)?;
    } else {
        write_report(out, &report)?;
    }
    // The tables come first: a plot that cannot be written must not throw
    // away what was measured; its failure is still the command's error.
    out.flush()?;
    if let Some(path) = &args.svg {
        plot::write_svg(path, &plot_panels(&report))?;
        if !args.json {
            writeln!(out, "plot: {}", path.display())?;
        }
    }
    Ok(())
}

/// One panel per table: each configuration's time per step (median run).
fn plot_panels(report: &ObjectsBenchReport) -> Vec<Panel> {
    report
        .tables
        .iter()
        .map(|t| Panel {
            title: t.title.clone(),
            x_label: "step".into(),
            y_label: "time per step (ms)".into(),
            series: t
                .rows
                .iter()
                .enumerate()
                .map(|(k, r)| Series {
                    name: r.config.clone(),
                    color: k,
                    reference: false,
                    points: r
                        .step_times_s
                        .iter()
                        .enumerate()
                        .map(|(k, s)| (k as f64, s * 1e3))
                        .collect(),
                })
                .collect(),
            ..Panel::default()
        })
        .collect()
}

fn write_report(out: &mut dyn Write, report: &ObjectsBenchReport) -> Result<(), CliError> {
    let (pus, reps) = (report.pus, report.reps);
    writeln!(
        out,
        "keel bench objects: {pus} PUs, {reps} run(s) per configuration (median shown); stolen = chunks stolen/exposed; {}",
        progress::load_words(report.background_load)
    )?;
    writeln!(
        out,
        "λ PU = Σ_t max_p busy / Σ_t mean_p busy − 1; ÷ ideal = total / (measured busy work ÷ PUs)"
    )?;
    write_tables(out, &report.tables)
}

/// The demo's section: a short Lassen-like run, Table 1's four rows.
pub fn demo(out: &mut dyn Write) -> Result<(), CliError> {
    write_tables(out, &[objects::demo_table()?])
}
