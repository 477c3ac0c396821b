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
use keel_cosched::machine::Config;
use keel_cosched::scenario::{self, Scenario, ScenarioParams, Table, POLICIES};
use keel_cosched::SuspendChoice;
use serde::Serialize;

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
    Run(RunArgs),
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
    /// Only these scenarios: fine-grained, imbalanced, complementing
    /// (default: all three).
    #[arg(long = "scenario", value_name = "NAME")]
    pub scenarios: Vec<String>,
    /// Only these schedulers (default: fcfs, local, gs, sb, fcs).
    #[arg(long = "policy", value_name = "NAME")]
    pub policies: Vec<String>,
    /// Time slice of GS and FCS, ms (Table 2: 25).
    #[arg(long, value_name = "MS")]
    pub slice_ms: Option<f64>,
    /// Base compute per superstep, ms (default 6).
    #[arg(long, value_name = "MS")]
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

#[derive(Serialize)]
struct JsonReport<'a> {
    params: &'a ScenarioParams,
    suspend: String,
    tables: &'a [Table],
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

fn usage(e: impl std::fmt::Display) -> CliError {
    CliError::Usage(format!("cosched: {e}"))
}

fn run_scenarios(a: &RunArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let mut params = if a.quick {
        ScenarioParams {
            retries: 0,
            ..ScenarioParams::quick()
        }
    } else {
        ScenarioParams::full()
    };
    if let Some(ms) = a.slice_ms {
        if !(ms.is_finite() && ms > 0.0) {
            return Err(usage(format!("--slice-ms {ms} is not a positive number")));
        }
        params.time_slice = ms / 1e3;
    }
    if let Some(g) = a.granularity_ms {
        if !(g.is_finite() && g > 0.0) {
            return Err(usage(format!(
                "--granularity-ms {g} is not a positive number"
            )));
        }
        params.granularity_ms = g;
    }
    if let Some(n) = a.iterations {
        if n == 0 {
            return Err(usage("--iterations must be at least 1"));
        }
        params.iterations = n;
    }
    if let Some(r) = a.reps {
        params.reps = r.max(1);
    }
    if let Some(b) = a.max_background {
        if !(0.0..=1.0).contains(&b) {
            return Err(usage(format!(
                "--max-background {b} is not a fraction in [0, 1]"
            )));
        }
        params.max_background = b;
    }
    if let Some(r) = a.retries {
        params.retries = r;
    }
    let scenarios = if a.scenarios.is_empty() {
        Scenario::ALL.to_vec()
    } else {
        a.scenarios
            .iter()
            .map(|s| Scenario::from_name(s).map_err(usage))
            .collect::<Result<Vec<_>, _>>()?
    };
    let policies: Vec<String> = if a.policies.is_empty() {
        POLICIES.iter().map(|s| s.to_string()).collect()
    } else {
        for p in &a.policies {
            if !POLICIES.contains(&p.as_str()) {
                return Err(usage(format!(
                    "unknown scheduler `{p}`; valid: {}",
                    POLICIES.join(", ")
                )));
            }
        }
        a.policies.clone()
    };
    let mut config = Config::new("fcs").map_err(usage)?;
    config
        .split_cpus(2, 1)
        .map_err(|e| usage(format!("{e} (the scenarios need two CPUs)")))?;
    config.suspend = a.suspend;
    config.on_manager_exit = a.on_manager_exit;
    config.bsp_command = match &a.job_binary {
        Some(p) => vec![p.clone().into_os_string()],
        None => vec![
            std::env::current_exe()?.into_os_string(),
            "cosched".into(),
            "bsp-job".into(),
        ],
    };
    let quiet = a.quiet;
    let mut tables = Vec::new();
    let mut suspend = String::new();
    for s in scenarios {
        let table = scenario::run_scenario(s, &params, &policies, &config, |what| {
            if !quiet {
                let _ = writeln!(std::io::stderr(), "keel cosched: {what}");
            }
        })
        .map_err(usage)?;
        if let Some(run) = table.rows.first().and_then(|r| r.runs.first()) {
            suspend = run.suspend.to_string();
        }
        if !a.json {
            writeln!(out, "{}", scenario::format_table(&table))?;
        }
        tables.push(table);
    }
    let doc = JsonReport {
        params: &params,
        suspend: suspend.clone(),
        tables: &tables,
    };
    if let Some(path) = &a.json_file {
        let file = std::fs::File::create(path)
            .map_err(|e| usage(format!("cannot write {}: {e}", path.display())))?;
        serde_json::to_writer_pretty(std::io::BufWriter::new(file), &doc)?;
    }
    if a.json {
        serde_json::to_writer_pretty(&mut *out, &doc)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "Scaled §3.2 on 2 nodes × 1 PE: base step {} ms CPU, {} supersteps, ring, slice {} ms, suspend: {suspend}; \
             times are each job's termination (s since the workload started), median of {} run(s); * = best Max.",
            params.granularity_ms,
            params.iterations,
            params.time_slice * 1e3,
            params.reps
        )?;
    }
    Ok(())
}
