//! The text report of `keel omp bench`: per workload, each configuration's
//! median time and paired ratio (and each loop's median, for the programs
//! that time their loops), the held-out Oracle, the per-loop best and the
//! goals.

use std::io::Write;

use crate::error::CliError;
use crate::report;
use keel_experiments::bench::omp::{BenchReport, PerLoopReport, Ratio};

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
    for s in &r.skipped {
        writeln!(
            out,
            "skipped under {}: {} ({})",
            r.compiler.command(),
            s.workload,
            s.reason
        )?;
    }
    for w in &r.workloads {
        writeln!(out)?;
        writeln!(out, "{} ({}; checksum {})", w.name, w.sizes, w.checksum)?;
        // One column per loop where a program has more than one (a single
        // loop's median is the whole program's).
        let loops: Vec<&str> = w
            .configs
            .first()
            .filter(|c| c.loops.len() > 1)
            .map(|c| c.loops.iter().map(|l| l.name.as_str()).collect())
            .unwrap_or_default();
        let mut header = vec![
            "configuration".to_string(),
            "median time".to_string(),
            format!("÷ {}", w.reference),
        ];
        header.extend(loops.iter().map(|l| format!("loop {l}")));
        let mut rows = vec![header];
        for c in &w.configs {
            let mut row = vec![
                c.name.clone(),
                report::duration(c.median),
                ratio_words(c.ratio),
            ];
            if !loops.is_empty() {
                row.extend(c.loops.iter().map(|l| report::duration(l.median)));
            }
            rows.push(row);
        }
        if let Some(o) = &w.oracle_held_out {
            rows.push(vec![
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
        if let Some(p) = &w.per_loop {
            write_per_loop(out, p, r.openmp_runtime)?;
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

/// Each loop's best fixed configuration and `auto` against it, then the
/// sum over loops of the best.
fn write_per_loop(out: &mut dyn Write, p: &PerLoopReport, native: &str) -> Result<(), CliError> {
    let mut rows = vec![vec![
        "loop".to_string(),
        "best fixed (smallest median)".to_string(),
        "best held out".to_string(),
        "keel auto".to_string(),
        "auto ÷ best held out".to_string(),
        format!("auto ÷ {native} static"),
    ]];
    for l in &p.loops {
        let held_out = keel_policy::stats::median_of(&l.held_out).unwrap_or(f64::NAN);
        rows.push(vec![
            l.name.clone(),
            format!("{} {}", l.best_fixed, report::duration(l.best_fixed_median)),
            report::duration(held_out),
            l.auto_median.map_or("-".into(), report::duration),
            ratio_words(l.auto_over_best),
            ratio_words(l.auto_over_static),
        ]);
    }
    writeln!(
        out,
        "  per loop (best held out: per round, the fixed configuration with the best median over the other rounds, timed in that round):"
    )?;
    for line in report::align(&rows) {
        writeln!(out, "  {line}")?;
    }
    let s = &p.sum_of_best;
    let median = |v: &[f64]| keel_policy::stats::median_of(v).unwrap_or(f64::NAN);
    writeln!(
        out,
        "  sum over loops of the best fixed: of medians {}, held out {} (median of rounds), lucky {} (each round's fastest per loop)",
        report::duration(s.medians),
        report::duration(median(&s.held_out)),
        report::duration(median(&s.lucky)),
    )?;
    writeln!(
        out,
        "  keel auto ÷ that sum: held out {}; of medians {}; lucky {}",
        ratio_words(s.auto_over_held_out),
        s.auto_over_medians
            .map_or("-".into(), |r| format!("{r:.3}")),
        ratio_words(s.auto_over_lucky),
    )?;
    Ok(())
}
