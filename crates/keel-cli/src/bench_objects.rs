//! `keel bench objects`: the Charm++ + OpenMP paper's evaluation
//! (§4.4, §5) on
//! Keel's objects context, on this machine:
//!
//! - **Table 1**: the Lassen-like proxy under No LB, Greedy, Greedy +
//!   stealing and No LB + stealing: λ at the PU level over the run, total
//!   time, and time ÷ ideal (measured busy work ÷ PUs);
//! - **Table 2**: Greedy at periods 20, 50 and 100, time in steps and in
//!   balancing split out;
//! - **Fig. 2**: a balanced stencil with and without stealing (the cost of
//!   exposing potential tasks when nobody needs them);
//! - **lb_test**: ring and mesh under every registry mapping policy.
//!
//! Configurations are interleaved run by run; each row is the run with the
//! median total time.

use std::io::Write;

use keel_experiments::bench::objects::{self, ObjectsConfig, Table};

use crate::cli::BenchObjectsArgs;
use crate::error::CliError;
use crate::report;

fn write_tables(out: &mut dyn Write, tables: &[Table]) -> Result<(), CliError> {
    for t in tables {
        writeln!(out)?;
        writeln!(out, "{}", t.title)?;
        writeln!(out, "  workload: {}", t.workload)?;
        let mut rows: Vec<Vec<String>> = vec![[
            "config",
            "λ PU",
            "total",
            "steps",
            "balancing",
            "÷ ideal",
            "migrations",
            "stolen",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()];
        for r in &t.rows {
            rows.push(vec![
                r.config.clone(),
                format!("{:.1} %", r.lambda * 100.0),
                report::duration(r.total_s),
                report::duration(r.steps_s),
                report::duration(r.balance_s),
                format!("{:.3}", r.of_ideal),
                r.migrations.to_string(),
                format!("{}/{}", r.stolen, r.exposed),
            ]);
        }
        for line in report::align(&rows) {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// `keel bench objects`.
pub fn run_objects(args: &BenchObjectsArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let report = objects::run(&ObjectsConfig {
        threads: args.threads,
        reps: args.reps,
        quick: args.quick,
    })?;
    if args.json {
        serde_json::to_writer(&mut *out, &report)?;
        writeln!(out)?;
        return Ok(());
    }
    let (pus, reps) = (report.pus, report.reps);
    writeln!(
        out,
        "keel bench objects: {pus} PUs, {reps} run(s) per configuration (median shown); stolen = chunks stolen/exposed"
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
