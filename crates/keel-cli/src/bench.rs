//! `keel bench loops`: the loop workloads of `keel-workloads` run with every
//! loop schedule on the global pool, against their own sequential time.
//!
//! Each workload runs `--reps` interleaved rounds; a round runs the body
//! sequentially once (the reference) and one instance per schedule, in an
//! order that rotates from round to round. A row shows the median `T_par`,
//! the headline `÷ ideal (same round)` (the median over rounds of `T_par /
//! (T_serial / P)` with the round's own `T_serial`; 1.00 is perfect), `÷
//! best` (the median over rounds of `T_par` over the round's fastest
//! schedule, at least 1), the LIB of the last instance from the loop's
//! record, and the chunks it ran (`keel_experiments::bench::loops` says
//! why). A schedule that does not parse is a usage error before any work;
//! one that fails while running is a row with its error, the others still
//! run, and the command exits 1 after printing.

use std::io::Write;

use keel_experiments::bench::loops::{self, LoopsConfig, WorkloadResult};

use crate::cli::BenchLoopsArgs;
use crate::error::CliError;
use crate::progress;
use crate::report;

/// `keel bench loops`.
pub fn run_loops(args: &BenchLoopsArgs, out: &mut dyn Write) -> Result<(), CliError> {
    if let Some(n) = args.threads {
        // The global pool reads its size from the environment when it is
        // first used, which is below: nothing has started it, and no other
        // thread runs yet to read the environment concurrently.
        std::env::set_var("KEEL_NUM_THREADS", n.to_string());
    }
    let config = LoopsConfig {
        schedules: args.schedules.clone(),
        workloads: args.workloads.clone(),
        reps: args.reps,
        chunk: args.chunk,
    };
    let report = progress::with_progress("bench loops", args.quiet, |p| loops::run(&config, p))?;
    progress::warn_if_loaded("keel bench loops", report.background_load);
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &report)?;
        writeln!(out)?;
        return failed_rows(&report);
    }
    writeln!(
        out,
        "keel bench loops: {} threads (Keel's global pool), {} interleaved rounds (the sequential reference and one instance per schedule each, order rotating), medians over rounds{}; {}",
        report.threads,
        report.reps,
        report
            .chunk
            .map_or(String::new(), |k| format!(", chunk parameter {k}")),
        progress::load_words(report.background_load)
    )?;
    writeln!(
        out,
        "÷ ideal (same round) = T_par / (T_serial / P), T_serial from the same round, 1.00 is perfect; ÷ best = T_par / the round's fastest schedule, ≥ 1; LIB = (1 − mean/max finish)·100 %; chunks and LIB of the last instance; binlpt and greedy get the exact per-iteration work as hints"
    )?;
    for w in &report.workloads {
        writeln!(out)?;
        write_workload(out, w)?;
    }
    let flagged = report
        .workloads
        .iter()
        .flat_map(|w| &w.rows)
        .any(|r| r.below_ideal);
    if flagged {
        writeln!(out)?;
        writeln!(out, "{}", report::BELOW_IDEAL_NOTE)?;
    }
    failed_rows(&report)
}

/// [`CliError::Partial`] when some schedule failed on some workload (its
/// row was printed with the error); `Ok` when every row ran.
fn failed_rows(report: &loops::BenchReport) -> Result<(), CliError> {
    let rows = report.workloads.iter().flat_map(|w| {
        w.rows
            .iter()
            .map(move |r| (format!("{} on {}", r.schedule, w.spec), &r.error))
    });
    let total = rows.clone().count();
    let failed: Vec<String> = rows
        .filter_map(|(name, e)| e.as_ref().map(|e| format!("{name}: {e}")))
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(CliError::Partial {
            what: "schedule runs",
            total,
            failed,
        })
    }
}

/// One workload's header and table.
pub fn write_workload(out: &mut dyn Write, w: &WorkloadResult) -> Result<(), CliError> {
    writeln!(
        out,
        "{}: {} iterations, {} {}; T_serial {} ({} – {}), ideal {}",
        w.spec,
        w.iterations,
        w.total_work,
        w.unit,
        report::duration(w.t_serial),
        report::duration(w.t_serial_range.0),
        report::duration(w.t_serial_range.1),
        report::duration(w.ideal)
    )?;
    let mut rows = vec![[
        "schedule".to_string(),
        "T_par".to_string(),
        "÷ ideal (same round)".to_string(),
        "÷ best".to_string(),
        "LIB (%)".to_string(),
        "chunks".to_string(),
    ]];
    let mut errors = Vec::new();
    for r in &w.rows {
        match &r.error {
            Some(e) => errors.push((r.schedule.clone(), e.clone())),
            None => rows.push([
                r.schedule.clone(),
                r.t_par.map_or("–".into(), report::duration),
                r.ratio_to_ideal_same_round
                    .map_or("–".into(), |x| report::ratio(x, r.below_ideal)),
                r.ratio_to_best
                    .map_or("–".into(), |x| report::ratio(x, false)),
                r.lib_percent.map_or("–".into(), |x| format!("{x:.1}")),
                r.chunks.map_or("–".into(), |c| c.to_string()),
            ]),
        }
    }
    for line in report::align(&rows) {
        writeln!(out, "{line}")?;
    }
    for (schedule, e) in errors {
        writeln!(out, "  {schedule}: error: {e}")?;
    }
    Ok(())
}
