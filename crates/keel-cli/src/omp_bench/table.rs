//! The text report of `keel omp bench`: per workload, each configuration's
//! median time and paired ratio, the held-out Oracle and the goals.

use std::io::Write;

use super::summary::Ratio;
use super::BenchReport;
use crate::error::CliError;
use crate::report;

/// `1.023 [0.998, 1.051]`, or the median alone without an interval.
fn ratio_words(ratio: Option<Ratio>) -> String {
    match ratio {
        Some(Ratio {
            median,
            interval: Some((low, high)),
        }) => format!("{median:.3} [{low:.3}, {high:.3}]"),
        Some(Ratio {
            median,
            interval: None,
        }) => format!("{median:.3} [no interval: under 6 rounds]"),
        None => "-".into(),
    }
}

/// The tables.
pub fn write_report(out: &mut dyn Write, r: &BenchReport) -> Result<(), CliError> {
    writeln!(
        out,
        "keel omp bench: programs built by {} ({}), {} threads, {} round(s), each configuration one process per round, in rotating order; ratios are medians of paired per-round ratios [95 % interval of the median]",
        r.compiler.command(),
        r.openmp_runtime,
        r.threads,
        r.rounds
    )?;
    for w in &r.workloads {
        writeln!(out)?;
        writeln!(out, "{} ({}; checksum {})", w.name, w.sizes, w.checksum)?;
        let mut rows = vec![[
            "configuration".to_string(),
            "median time".to_string(),
            format!("÷ {}", w.reference),
        ]];
        for c in &w.configs {
            rows.push([
                c.name.clone(),
                report::duration(c.median),
                ratio_words(c.ratio),
            ]);
        }
        if let Some(o) = &w.oracle_held_out {
            rows.push([
                "Oracle held out".to_string(),
                report::duration(o.median),
                String::new(),
            ]);
        }
        for line in report::align(&rows) {
            writeln!(out, "  {line}")?;
        }
        if let Some(o) = &w.oracle_held_out {
            writeln!(
                out,
                "  Oracle held out (per round, the Keel fixed schedule with the best median over the other rounds): {}",
                o.chosen.join(", ")
            )?;
        }
        for g in &w.goals {
            let note = g
                .note
                .as_ref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default();
            writeln!(
                out,
                "  goal: {}: {}: {}{note}",
                g.goal,
                ratio_words(g.ratio),
                g.verdict
            )?;
        }
    }
    Ok(())
}
