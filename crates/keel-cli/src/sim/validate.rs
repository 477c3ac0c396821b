//! `keel sim validate`: the simulator against the thread runtime, where both
//! run on this machine. For each loop workload (Mandelbrot and the
//! exponential, LavaMD-like loop by default) and each loop schedule:
//!
//! 0. **Warm-up.** The kernel runs sequentially for a second first: this
//!    machine runs a kernel markedly slower for its first fraction of a
//!    second, which would otherwise land on whatever is measured first.
//! 1. **Costs, sequentially.** Every iteration of the body is timed alone on
//!    this thread, `--reps` passes, and its median (less the clock's own
//!    cost) is its cost in seconds: a sequential per-iteration trace of the
//!    kernel. Nothing is fitted to the parallel runs being validated.
//! 2. **Measured.** The schedule runs `--reps` instances of the loop on a
//!    `--threads` pool; `T_par` (fork to join, the runtime's own figure) is
//!    the median. Each repeat makes one sequential pass of step 1 and then
//!    one instance of every schedule, so that a slow phase of the machine
//!    spreads over the costs and every schedule alike.
//! 3. **Simulated.** The same number of instances, with the same workload
//!    hints for `binlpt`/`greedy`, on `--threads` workers of speed 1 with
//!    the committed calibration (or `--calibration`): instance `r` on the
//!    costs of repeat `r`'s sequential pass. The machine's speed drifts by
//!    up to ±25 % over seconds (a shared VM), so the error is the median of
//!    the per-repeat errors, each instance against the pass taken next to
//!    it; the simulation on the per-iteration medians of all passes, and
//!    its error against the median measurement, are printed beside it.
//!
//! Reported: simulated and measured makespans and the % error per schedule,
//! Kendall's τ between the two rankings, and whether every pair of
//! schedules whose measured times are more than 5 % apart is ranked alike.

use std::io::Write;
use std::path::PathBuf;

use keel_experiments::sim::validate::{self, ValidateConfig, ERROR_GOAL_PERCENT, TAU_GOAL};

use crate::error::CliError;
use crate::report;

/// `keel sim validate`.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Loop workload specs (default: mandelbrot, lavamd with their defaults).
    #[arg(short, long = "workload", value_name = "SPEC")]
    pub workloads: Vec<String>,

    /// Schedules (default: every canonical registry schedule).
    #[arg(short, long = "schedule", value_name = "SPEC")]
    pub schedules: Vec<String>,

    /// Threads of the pool and workers of the simulation.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub threads: usize,

    /// Instances per schedule, and sequential timing passes (medians kept).
    #[arg(long, value_name = "N", default_value_t = 7)]
    pub reps: usize,

    /// A calibration file (default: the committed one).
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,

    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,

    /// Print one JSON document instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// `keel sim validate`.
pub fn run(args: &ValidateArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let config = ValidateConfig {
        workloads: args.workloads.clone(),
        schedules: args.schedules.clone(),
        threads: args.threads,
        reps: args.reps,
        calibration: args.calibration.clone(),
    };
    let report = super::with_progress("sim validate", args.quiet, |progress| {
        validate::run(&config, progress)
    })?;
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &report)?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(
        out,
        "keel sim validate: {} threads, medians of {} instances; costs from a sequential per-iteration timing ({} passes); calibration of {} (fork_join {:.0} ns, claim_local {:.1} ns, claim_serial {:.1} ns)",
        report.threads,
        report.reps,
        report.reps,
        report.calibration_date,
        report.overhead.fork_join * 1e9,
        report.overhead.claim_local * 1e9,
        report.overhead.claim_serial * 1e9
    )?;
    for w in &report.workloads {
        writeln!(out)?;
        writeln!(
            out,
            "{}: {} iterations, sequential {} (Σ per-iteration costs)",
            w.spec,
            w.iterations,
            report::duration(w.sequential_from_costs)
        )?;
        let mut table = vec![[
            "schedule".to_string(),
            "measured".into(),
            "simulated".into(),
            "error % (paired)".into(),
            "sim. on median costs".into(),
            "error %".into(),
        ]];
        for r in &w.rows {
            table.push([
                r.schedule.clone(),
                report::duration(r.measured),
                report::duration(r.simulated),
                format!("{:+.1}", r.error_percent),
                report::duration(r.unpaired_simulated),
                format!("{:+.1}", r.unpaired_error_percent),
            ]);
        }
        for line in report::align(&table) {
            writeln!(out, "{line}")?;
        }
        writeln!(
            out,
            "notes: max |error| {:.1} % ({} the ≤ {ERROR_GOAL_PERCENT} % target); Kendall τ {:.3} (target ≥ {TAU_GOAL}); {} pairs > 5 % apart, {} ranked differently{}: {} the ranking target",
            w.max_abs_error_percent,
            report::meets(w.errors_within_goal),
            w.kendall_tau,
            w.distinct_pairs,
            w.misranked_pairs.len(),
            if w.misranked_pairs.is_empty() {
                String::new()
            } else {
                format!(
                    " ({})",
                    w.misranked_pairs
                        .iter()
                        .map(|(a, b)| format!("{a}/{b}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
            report::meets(w.ranking_goal_met)
        )?;
    }
    Ok(())
}
