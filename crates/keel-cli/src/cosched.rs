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
    /// The same scenarios on a Slurm cluster: MPICH BSP jobs launched by
    /// `srun --keel-cosched` across two nodes under each scheduler, beside
    /// Slurm's own gang scheduling; then the switch skew between nodes.
    /// Needs root and the cluster of `scripts/slurm-local.sh up 2`.
    Cluster(Box<ClusterArgs>),
    /// The synthetic BSP job (started by `run`; see `keel-bsp-job --help`).
    #[command(hide = true)]
    BspJob {
        /// The job's arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
}

/// The flags `run` and `cluster` share word for word. The other flags
/// both take (`--quick`, `--scenario`, `--policy`, `--slice`, ...) stay in
/// each command's own struct: their help, type or validation differ
/// between the two. `--help` lists flags in declaration order, so where a
/// command flattens this struct is where these two appear.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// No progress lines on stderr.
    #[arg(long)]
    pub quiet: bool,
    /// Print one JSON document instead of tables.
    #[arg(long)]
    pub json: bool,
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
    #[command(flatten)]
    pub output: OutputArgs,
    /// Also write the JSON document (every run's full report) to this file.
    #[arg(long, value_name = "PATH")]
    pub json_file: Option<PathBuf>,
}

/// `keel cosched cluster`.
#[derive(Debug, Args)]
pub struct ClusterArgs {
    /// A short version (40 supersteps).
    #[arg(long)]
    pub quick: bool,
    /// Only these scenarios (default: all three).
    #[arg(long = "scenario", value_name = "NAME")]
    pub scenarios: Vec<String>,
    /// Only these schedulers (default: fcfs, local, gs, sb, fcs); add
    /// `slurm-gang` for Slurm's own gang scheduling (PreemptMode=GANG; see
    /// docs/cluster.md for what it can run).
    #[arg(long = "policy", value_name = "NAME")]
    pub policies: Vec<String>,
    /// Time slice of GS and FCS, and slot of the others, seconds (0.025).
    #[arg(long, value_name = "SECONDS", value_parser = positive_seconds)]
    pub slice: Option<f64>,
    /// Base compute per superstep, seconds (0.006).
    #[arg(long, value_name = "SECONDS", value_parser = positive_seconds)]
    pub granularity: Option<f64>,
    /// Supersteps per rank (500, 40 with --quick).
    #[arg(long, value_name = "N")]
    pub iterations: Option<u64>,
    /// Where the cluster's plugstack loads Keel's SPANK plugin from.
    #[arg(long, default_value = "/run/keel-slurm/keel_cosched_spank.so")]
    pub plugin: PathBuf,
    /// The node managers' registration sockets (`%n`: the node).
    #[arg(long, default_value = "/run/keel-slurm/nm-%n.sock")]
    pub sockets: String,
    /// The script that turns Slurm's gang scheduling on and off.
    #[arg(long, default_value = "scripts/slurm-local.sh")]
    pub slurm_local: PathBuf,
    /// Slots of the switch-skew run (0: none).
    #[arg(long, default_value_t = 1000)]
    pub skew_slots: u64,
    /// Runs of each cell, interleaved across the schedulers; cells are
    /// medians.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub reps: u64,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Also write the JSON report to this file.
    #[arg(long, value_name = "PATH")]
    pub json_file: Option<PathBuf>,
}

fn run_cluster(a: &ClusterArgs, out: &mut dyn Write) -> Result<(), CliError> {
    use keel_cosched::cluster::bench::{run_cluster_bench, ClusterBench};
    let mut params = if a.quick {
        scenario::ScenarioParams::quick()
    } else {
        scenario::ScenarioParams::full()
    };
    if let Some(s) = a.slice {
        params.time_slice = s;
    }
    if let Some(g) = a.granularity {
        params.granularity_ms = g * 1e3;
    }
    if let Some(n) = a.iterations {
        if n == 0 {
            return Err(CliError::Usage(
                "cosched cluster: --iterations must be at least 1".into(),
            ));
        }
        params.iterations = n;
    }
    let scenarios = if a.scenarios.is_empty() {
        scenario::Scenario::ALL.to_vec()
    } else {
        a.scenarios
            .iter()
            .map(|s| scenario::Scenario::from_name(s).map_err(CliError::Usage))
            .collect::<Result<_, _>>()?
    };
    let policies = if a.policies.is_empty() {
        scenario::POLICIES.iter().map(|p| p.to_string()).collect()
    } else {
        a.policies.clone()
    };
    let bench = ClusterBench {
        scenarios,
        policies,
        params,
        plugin: a.plugin.clone(),
        sockets: a.sockets.clone(),
        slurm_local: a.slurm_local.clone(),
        skew_slots: a.skew_slots,
        reps: a.reps as usize,
    };
    let quiet = a.output.quiet;
    let report = run_cluster_bench(&bench, &mut |what| {
        if !quiet {
            let _ = writeln!(std::io::stderr(), "keel cosched cluster: {what}");
        }
    })
    .map_err(|e| CliError::Runtime(e.to_string()))?;
    if let Some(path) = &a.json_file {
        let file = std::fs::File::create(path).map_err(|e| {
            CliError::Runtime(format!(
                "cosched cluster: cannot write {}: {e}",
                path.display()
            ))
        })?;
        serde_json::to_writer_pretty(std::io::BufWriter::new(file), &report)?;
    }
    if a.output.json {
        serde_json::to_writer_pretty(&mut *out, &report)?;
        writeln!(out)?;
        return Ok(());
    }
    for t in &report.tables {
        writeln!(out, "{}", scenario::format_table(t))?;
    }
    writeln!(
        out,
        "Scaled §3.2 on Slurm nodes {}: MPICH BSP jobs launched by srun, base step {} ms CPU, {} supersteps, ring, slice {} ms; \
         times are each job's termination (s since submission), median of {} run(s); * = best Max{}.",
        report.nodes.join(", "),
        report.params.granularity_ms,
        report.params.iterations,
        report.params.time_slice * 1e3,
        a.reps,
        if bench_has_gang(&report) {
            "; SLURM-GANG: Slurm's own gang scheduling (PreemptMode=GANG)"
        } else {
            ""
        }
    )?;
    if let Some(s) = &report.skew {
        writeln!(
            out,
            "switch skew over {} slots of {} ms, {} nodes: latest enactment − switch time: median {:.3} ms, p99 {:.3} ms, max {:.3} ms (estimated clocks){}",
            s.slots,
            report.params.time_slice * 1e3,
            s.nodes,
            s.estimated.median * 1e3,
            s.estimated.p99 * 1e3,
            s.estimated.max * 1e3,
            s.true_clock.map_or(String::new(), |t| format!(
                "; true clock: median {:.3} ms, p99 {:.3} ms, max {:.3} ms",
                t.median * 1e3,
                t.p99 * 1e3,
                t.max * 1e3
            ))
        )?;
    }
    Ok(())
}

fn bench_has_gang(report: &keel_cosched::cluster::bench::ClusterReport) -> bool {
    report
        .runs
        .iter()
        .any(|r| r.policy == keel_cosched::cluster::bench::SLURM_GANG)
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
        CoschedCommand::Cluster(a) => run_cluster(a, out),
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
    let quiet = a.output.quiet;
    let mut tables = Vec::new();
    // Each table is printed as its scenario ends: a full run takes minutes.
    for &s in &prepared.scenarios {
        let table = prepared.run(s, &mut |what| {
            if !quiet {
                let _ = writeln!(std::io::stderr(), "keel cosched: {what}");
            }
        })?;
        if !a.output.json {
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
    if a.output.json {
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
