//! `keel cosched`: the real gang scheduler (`keel-cosched`) from the
//! command line.
//!
//! `keel cosched run` runs the FCS paper's three verification scenarios
//! (§3.2) for real on this machine — two nodes of one PE each — under
//! fcfs, local, gs, sb and fcs, and prints tables like the paper's
//! (Algorithm × each job's termination time × Max). The jobs are the
//! synthetic BSP job, started as this very executable's hidden
//! `keel cosched bsp-job` (or `--job-binary`), so the command needs no
//! other program installed.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use keel_cosched::scenario;
use keel_cosched::SuspendChoice;
use keel_experiments::cosched::{self, RunConfig};

use crate::error::CliError;

/// `keel cosched`.
#[derive(Debug, Args)]
pub struct CoschedArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: CoschedCommand,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum CoschedCommand {
    /// Run §3.2's verification scenarios for real (two nodes of one PE)
    /// under fcfs, local, gs, sb and fcs and print the paper's tables.
    Run(Box<RunArgs>),
    /// The synthetic BSP job (started by `run`; see `keel-bsp-job --help`).
    #[command(hide = true)]
    BspJob {
        /// The job's arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
}

/// `keel cosched run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// A short version (40 supersteps, no retries): seconds, for smoke
    /// tests; too short for FCS to classify.
    #[arg(long)]
    pub quick: bool,
    /// Only these scenarios: fine-grained, load-imbalanced, complementing
    /// (default: all three).
    #[arg(long = "scenario", value_name = "NAME")]
    pub scenarios: Vec<String>,
    /// Only these schedulers (default: fcfs, local, gs, sb, fcs).
    #[arg(long = "policy", value_name = "NAME")]
    pub policies: Vec<String>,
    /// Time slice of GS and FCS, seconds (Table 2: 0.025).
    #[arg(long, value_name = "SECONDS", value_parser = positive_seconds)]
    pub slice: Option<f64>,
    /// `--slice` in milliseconds (the older spelling).
    #[arg(long, value_name = "MS", hide = true, conflicts_with = "slice")]
    pub slice_ms: Option<f64>,
    /// Base compute per superstep, seconds (default 0.006).
    #[arg(long, value_name = "SECONDS", value_parser = positive_seconds)]
    pub granularity: Option<f64>,
    /// `--granularity` in milliseconds (the older spelling).
    #[arg(long, value_name = "MS", hide = true, conflicts_with = "granularity")]
    pub granularity_ms: Option<f64>,
    /// Supersteps per rank (default 500, 40 with --quick).
    #[arg(long, value_name = "N")]
    pub iterations: Option<u64>,
    /// Repetitions per cell; cells are medians (default 1).
    #[arg(long, value_name = "N")]
    pub reps: Option<usize>,
    /// Rerun a run during which other processes used more than this
    /// fraction of the CPUs (default 0.05) ...
    #[arg(long, value_name = "FRACTION")]
    pub max_background: Option<f64>,
    /// ... up to this many times (default 3, 0 with --quick).
    #[arg(long, value_name = "N")]
    pub retries: Option<usize>,
    /// Suspend method: auto, freezer, signals.
    #[arg(long, default_value = "auto")]
    pub suspend: SuspendChoice,
    /// What happens to the jobs if the manager dies: `resume` (thaw them
    /// and leave them running) or `kill`.
    #[arg(long, default_value = "resume", value_name = "resume|kill")]
    pub on_manager_exit: keel_cosched::machine::ManagerExit,
    /// The BSP job program (default: this executable's `cosched bsp-job`).
    #[arg(long, value_name = "PATH")]
    pub job_binary: Option<PathBuf>,
    /// No progress lines on stderr.
    #[arg(long)]
    pub quiet: bool,
    /// Print one JSON document instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON document (every run's full report) to this file.
    #[arg(long, value_name = "PATH")]
    pub json_file: Option<PathBuf>,
}

/// A duration in seconds that must be finite and positive.
fn positive_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!("`{text}` is not a positive number of seconds")),
    }
}

/// `keel cosched ...`.
pub fn run(args: &CoschedArgs, out: &mut dyn Write) -> Result<(), CliError> {
    match &args.command {
        CoschedCommand::Run(a) => run_scenarios(a, out),
        CoschedCommand::BspJob { args } => {
            let argv = std::iter::once(OsString::from("keel-bsp-job")).chain(args.iter().cloned());
            out.flush()?;
            std::process::exit(keel_cosched::bsp::main_with_args(argv));
        }
    }
}

fn run_scenarios(a: &RunArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let bsp_command = match &a.job_binary {
        Some(p) => vec![p.clone().into_os_string()],
        None => vec![
            std::env::current_exe()?.into_os_string(),
            "cosched".into(),
            "bsp-job".into(),
        ],
    };
    let prepared = cosched::prepare(&RunConfig {
        quick: a.quick,
        scenarios: a.scenarios.clone(),
        policies: a.policies.clone(),
        slice_ms: a.slice.map(|s| s * 1e3).or(a.slice_ms),
        granularity_ms: a.granularity.map(|g| g * 1e3).or(a.granularity_ms),
        iterations: a.iterations,
        reps: a.reps,
        max_background: a.max_background,
        retries: a.retries,
        suspend: a.suspend,
        on_manager_exit: a.on_manager_exit,
        bsp_command,
    })?;
    let quiet = a.quiet;
    let mut tables = Vec::new();
    // Each table is printed as its scenario ends: a full run takes minutes.
    for &s in &prepared.scenarios {
        let table = prepared.run(s, &mut |what| {
            if !quiet {
                let _ = writeln!(std::io::stderr(), "keel cosched: {what}");
            }
        })?;
        if !a.json {
            writeln!(out, "{}", scenario::format_table(&table))?;
        }
        tables.push(table);
    }
    let doc = prepared.report(tables);
    let params = &doc.params;
    if let Some(path) = &a.json_file {
        let file = std::fs::File::create(path).map_err(|e| {
            CliError::Runtime(format!("cosched: cannot write {}: {e}", path.display()))
        })?;
        serde_json::to_writer_pretty(std::io::BufWriter::new(file), &doc)?;
    }
    if a.json {
        serde_json::to_writer_pretty(&mut *out, &doc)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "Scaled §3.2 on 2 nodes × 1 PE: base step {} ms CPU, {} supersteps, ring, slice {} ms, suspend: {}; \
             times are each job's termination (s since the workload started), median of {} run(s); * = best Max.",
            params.granularity_ms,
            params.iterations,
            params.time_slice * 1e3,
            doc.suspend,
            params.reps
        )?;
    }
    Ok(())
}
