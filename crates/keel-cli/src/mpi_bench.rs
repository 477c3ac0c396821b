//! `keel mpi bench`: the Charm++ + OpenMP paper's Table 1 across MPI ranks
//! — object workloads (the Lassen-like proxy's fast front; hot bands that
//! stay, drift or jump) as distributed objects under No LB, Greedy and
//! Greedy + stealing balancing when it pays, and Greedy every 50 steps, on
//! 1, 2 and 4 ranks — each run an MPI job of
//! `keel-mpi-bench` (built with `cargo build --release -p keel-mpi
//! --features mpi`, found beside this executable), launched with
//! `mpiexec` (docs/mpi.md).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Subcommand};
use keel_mpi::bench::{self, MpiBenchConfig, MpiBenchReport};

use crate::error::CliError;
use crate::report::{align, duration};

/// `keel mpi`.
#[derive(Debug, Args)]
pub struct MpiArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: MpiCommand,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum MpiCommand {
    /// Object workloads as distributed objects under No LB, Greedy and
    /// Greedy + stealing (balancing when it pays) and Greedy every 50
    /// steps, on several rank counts (`mpiexec -n R`), configurations
    /// rotated round by round.
    Bench(MpiBenchArgs),
}

/// `keel mpi bench`.
#[derive(Debug, Args)]
pub struct MpiBenchArgs {
    /// Workloads, comma-separated: `persistent` (a heavy region that
    /// stays), `drift` (one that drifts slowly), `phase` (one that jumps
    /// half-way), `lassen` (a front crossing the grid in the run).
    #[arg(long = "workload", value_delimiter = ',', default_value = "lassen")]
    pub workloads: Vec<String>,
    /// Rank counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    pub ranks: Vec<usize>,
    /// Worker threads per rank.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Rounds (each configuration once per round).
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// 100 steps at a quarter of the work, one round.
    #[arg(long)]
    pub quick: bool,
    /// The per-rank program (default: `keel-mpi-bench` beside this executable).
    #[arg(long, value_name = "PATH")]
    pub program: Option<PathBuf>,
    /// The MPI launcher.
    #[arg(long, default_value = "mpiexec")]
    pub launcher: String,
    /// Print one JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
    /// No progress lines on stderr.
    #[arg(long)]
    pub quiet: bool,
}

/// A run that takes longer than this is killed and reported.
const RUN_TIMEOUT: Duration = Duration::from_secs(600);

/// Runs `keel mpi bench`.
pub fn run(args: &MpiBenchArgs, out: &mut dyn Write) -> Result<(), CliError> {
    if args.ranks.is_empty() || args.ranks.iter().any(|&r| r == 0 || r > 1024) {
        return Err(CliError::Usage(format!(
            "--ranks {:?}: rank counts from 1 to 1024",
            args.ranks
        )));
    }
    if args.threads == 0 || args.threads > 1024 || args.reps == 0 || args.reps > 1000 {
        return Err(CliError::Usage(
            "--threads from 1 to 1024, --reps from 1 to 1000".into(),
        ));
    }
    let program = match &args.program {
        Some(p) => p.clone(),
        None => beside_executable()?,
    };
    let config = MpiBenchConfig {
        workloads: args.workloads.clone(),
        ranks: args.ranks.clone(),
        threads: args.threads,
        reps: if args.quick { 1 } else { args.reps },
        quick: args.quick,
        program,
        launcher: args.launcher.clone(),
        timeout: RUN_TIMEOUT,
    };
    let quiet = args.quiet;
    let report = bench::run(&config, &mut |line| {
        if !quiet {
            let _ = writeln!(std::io::stderr(), "keel mpi bench: {line}");
        }
    })
    .map_err(|e| CliError::Runtime(e.to_string()))?;
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &report)?;
        writeln!(out)?;
        return Ok(());
    }
    write_table(&report, out)
}

/// `keel-mpi-bench` where cargo puts it beside the `keel` binary.
fn beside_executable() -> Result<PathBuf, CliError> {
    let exe = std::env::current_exe()
        .map_err(|e| CliError::Runtime(format!("cannot find this executable: {e}")))?;
    let path = exe
        .parent()
        .unwrap_or(Path::new("."))
        .join("keel-mpi-bench");
    if path.is_file() {
        return Ok(path);
    }
    Err(CliError::Runtime(format!(
        "keel-mpi-bench is not next to {} (build it with `cargo build --release -p keel-mpi --features mpi` after scripts/install-mpich.sh, or pass --program)",
        exe.display()
    )))
}

fn write_table(report: &MpiBenchReport, out: &mut dyn Write) -> Result<(), CliError> {
    let first = &report.rows[0].median;
    writeln!(
        out,
        "keel mpi bench: {} steps, median of {} round{}, {} CPUs here",
        first.steps,
        report.reps,
        if report.reps == 1 { "" } else { "s" },
        report.cpus
    )?;
    let mut rows = vec![[
        "workload".to_string(),
        "ranks × threads".to_string(),
        "configuration".into(),
        "total".into(),
        "÷ No LB".into(),
        "÷ ideal".into(),
        "λ ranks".into(),
        "balancing".into(),
        "moved".into(),
        "balances".into(),
    ]];
    for r in &report.rows {
        let m = &r.median;
        rows.push([
            r.workload.clone(),
            format!(
                "{} × {}{}",
                r.ranks,
                r.threads,
                if r.oversubscribed { " *" } else { "" }
            ),
            r.config.clone(),
            duration(m.total_s),
            format!("{:.3}", r.vs_no_lb),
            if m.ideal_s > 0.0 {
                format!("{:.3}", m.steps_s / m.ideal_s)
            } else {
                "-".into()
            },
            format!("{:.3}", m.lambda_ranks),
            duration(m.decide_s + m.migrate_s),
            m.migrations.to_string(),
            m.rebalances.to_string(),
        ]);
    }
    for line in align(&rows) {
        writeln!(out, "{line}")?;
    }
    if report.rows.iter().any(|r| r.oversubscribed) {
        writeln!(
            out,
            "* ranks × threads exceed this machine's CPUs: spinning ranks share cores, so these times measure the OS's scheduling, not Keel"
        )?;
    }
    Ok(())
}
