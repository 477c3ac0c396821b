//! `verify` (§3.2's tables), `verify --scaled` (the real runs' scenarios in
//! the model, against their real runs) and `keel demo cosched`.

use std::io::Write;
use std::path::Path;

use keel_cosched::scenario::{self as real, ScenarioParams};
use keel_experiments::sim::cosched::{self as lab, AgainstTable};
use keel_sim::cluster::scenarios::ScenarioTable;

use super::tables::{write_setup, write_table};
use super::{tables, with_progress, Common, VerifyArgs};
use crate::error::CliError;
use crate::report;

pub(super) fn verify(a: &VerifyArgs, common: &Common, out: &mut dyn Write) -> Result<(), CliError> {
    if a.scaled {
        return verify_scaled(a, common, out);
    }
    let setup = common.setup();
    let report = with_progress("sim cosched verify", common.quiet, |p| {
        lab::verify(&a.scenario, &setup, p)
    })?;
    tables(&report, common, write_table, out)
}

/// `verify --scaled`: the real runs' scenarios in the model.
fn verify_scaled(a: &VerifyArgs, common: &Common, out: &mut dyn Write) -> Result<(), CliError> {
    let setup = common.setup();
    let what = "sim cosched verify --scaled";
    if let Some(file) = &a.against {
        let (report, against) = with_progress(what, common.quiet, |p| {
            lab::verify_against(&a.scenario, file, &setup, p)
        })?;
        if common.json {
            serde_json::to_writer(
                &mut *out,
                &serde_json::json!({ "simulated": report, "against": against }),
            )?;
            writeln!(out)?;
            return Ok(());
        }
        write_setup(out, &report.setup)?;
        for c in &against {
            writeln!(out)?;
            write_against(out, c, file)?;
        }
        return Ok(());
    }
    let report = with_progress(what, common.quiet, |p| {
        lab::verify_scaled(&a.scenario, &setup, p)
    })?;
    tables(&report, common, write_real_table, out)?;
    if !common.json {
        let p = ScenarioParams::full();
        writeln!(
            out,
            "Simulated scaled §3.2 on 2 nodes × 1 PE: base step {} ms, {} supersteps, ring, slice {} ms; \
             times are each job's termination (s since the workload started); * = best Max. \
             Compare with `keel cosched run`.",
            p.granularity_ms,
            p.iterations,
            p.time_slice * 1e3
        )?;
    }
    Ok(())
}

fn write_against(out: &mut dyn Write, c: &AgainstTable, file: &Path) -> Result<(), CliError> {
    writeln!(
        out,
        "{}: simulated against the real runs in {}",
        c.scenario,
        file.display()
    )?;
    let mut rows = vec![[
        "Algorithm".to_string(),
        "real Max".into(),
        "real runs".into(),
        "simulated".into(),
        "error %".into(),
    ]];
    for r in &c.rows {
        let runs: Vec<String> = r.real_runs.iter().map(|m| format!("{m:.3}")).collect();
        rows.push([
            r.policy.to_uppercase(),
            format!("{:.3}", r.real_max),
            runs.join(" "),
            format!("{:.3}", r.simulated_max),
            format!("{:+.1}", r.error_percent),
        ]);
    }
    for line in report::align(&rows) {
        writeln!(out, "  {line}")?;
    }
    writeln!(
        out,
        "  pairs ordered alike: {}/{}; of the {} pairs whose real runs do not overlap: {}/{}",
        c.pairs_alike, c.pairs, c.separated_pairs, c.separated_alike, c.separated_pairs
    )?;
    for (a, b, separated) in &c.disagreements {
        writeln!(
            out,
            "    {} vs {}: ordered differently ({})",
            a.to_uppercase(),
            b.to_uppercase(),
            if *separated {
                "the real runs are apart"
            } else {
                "within the real runs' spread"
            }
        )?;
    }
    Ok(())
}

fn write_real_table(out: &mut dyn Write, t: &ScenarioTable) -> Result<(), CliError> {
    write!(out, "{}", real::format_table(&lab::as_real_table(t)))?;
    Ok(())
}

/// `keel demo cosched`: the scaled load-imbalanced scenario (the one
/// `keel cosched run` runs for real) simulated under GS, SB and FCS.
pub fn demo(out: &mut dyn Write) -> Result<(), CliError> {
    let d = lab::demo_table()?;
    write_real_table(out, &d.table)?;
    writeln!(
        out,
        "Perfect packing: {:.2} s (500 × 18 ms of compute per PE); each job alone: {:.2} s.",
        d.perfect_packing, d.alone
    )?;
    Ok(())
}
