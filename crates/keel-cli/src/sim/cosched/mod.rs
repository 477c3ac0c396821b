//! `keel sim cosched`: the FCS paper's experiments ("Flexible
//! CoScheduling: Mitigating Load Imbalance and Improving Utilization of
//! Heterogeneous Resources", §3) in the cluster model
//! (`keel_sim::cluster`), under the unchanged `keel_policy::cosched`
//! policies.
//!
//! | subcommand | paper | what it prints |
//! |---|---|---|
//! | `verify` | §3.2 | the three verification tables (fine-grained, load-imbalanced, complementing jobs) under fcfs, local, gs, sb, fcs: each job's termination time and the Max, the paper's Max beside it, FCS's gap to the best, the order against the paper's, FCS's classes |
//! | `verify --scaled` | §3.2 at half width | the same three scenarios as `keel cosched run` runs them for real (2 nodes × 1 PE, 2-rank jobs of 500 × 6 ms, 25 ms slice), in that command's table shape, so the two can be compared |
//! | `fig5` | §3.3, Fig. 5 | the parameter space: granularity 4 ms – 1.024 s × variability 0 – 100 % × nearest-neighbour / barrier under gs, fcfs, fcs, sb, as tables of normalised turnaround (1 = the jobs' CPU work perfectly packed), the paper's five observations checked, and SVG plots with `--svg DIR` |
//! | `apps` | §3.4 | the SWEEP3D-like and SAGE-like mixes under fcfs, gs, sb, fcs, with the paper's tables |
//! | `swf` | — | a Standard Workload Format log replayed for a throughput study: each job arrives at its submit time with its processors, its run time becoming iterations of `--granularity` seconds |
//!
//! Every scenario's parameters are fixed in `keel_workloads::bsp` and the
//! model's constants in `keel_sim::cluster::params`. `--scale` multiplies
//! every job's iterations (`--quick` = 0.02, for smoke tests); `--json`
//! prints one JSON document; a progress bar on stderr (hidden by
//! `--quiet`, and when stderr is not a terminal) follows long sweeps.

use std::io::Write;
use std::path::PathBuf;

use keel_experiments::sim::cosched::{CoschedSetup, TablesReport, SWF_GRANULARITY};
use keel_sim::cluster::scenarios::ScenarioTable;
use keel_workloads::bsp;

use super::bounds;
use super::with_progress;
use crate::error::CliError;

mod fig5;
mod swf;
mod tables;
mod verify;

pub use verify::demo;

use fig5::fig5;
use swf::swf_run;
use tables::{apps, write_setup};
use verify::verify;

/// `keel sim cosched`.
#[derive(Debug, clap::Args)]
pub struct CoschedArgs {
    /// Which experiment.
    #[command(subcommand)]
    pub command: CoschedCommand,

    /// Options every experiment takes.
    #[command(flatten)]
    pub common: Common,
}

/// The experiments.
#[derive(Debug, clap::Subcommand)]
pub enum CoschedCommand {
    /// §3.2's verification tables: fine-grained, load-imbalanced and
    /// complementing jobs under fcfs, local, gs, sb and fcs.
    Verify(VerifyArgs),
    /// §3.3's Fig. 5: granularity × variability × pattern under gs, fcfs,
    /// fcs and sb.
    Fig5(Fig5Args),
    /// §3.4's SWEEP3D-like and SAGE-like mixes under fcfs, gs, sb and fcs.
    Apps(AppsArgs),
    /// Replay a Standard Workload Format log (throughput study).
    Swf(SwfArgs),
}

/// Options shared by the experiments.
#[derive(Debug, Clone, clap::Args)]
pub struct Common {
    /// Policy specs to compare (repeatable; default: the paper's
    /// schedulers for the experiment), e.g. `-p gs -p fcs:cs-thresh=0.02`.
    #[arg(short, long = "policy", value_name = "SPEC", global = true)]
    pub policies: Vec<String>,

    /// Seed of the OS schedulers' phases and jitter.
    #[arg(long, default_value_t = 1, global = true)]
    pub seed: u64,

    /// Multiply every job's iterations by this (1 = the paper's jobs).
    #[arg(long, default_value_t = 1.0, global = true, value_parser = bounds::scale)]
    pub scale: f64,

    /// Shorthand for `--scale 0.02`: seconds instead of minutes.
    #[arg(long, global = true)]
    pub quick: bool,

    /// Print one JSON document instead of tables.
    #[arg(long, global = true)]
    pub json: bool,

    /// No progress bar.
    #[arg(long, global = true)]
    pub quiet: bool,

    /// What FCS's T_comm counts: `scheduled` (wait time while the node
    /// manager lets the process run, §2.3) or `wall` (suspensions
    /// included).
    #[arg(long, default_value = "scheduled", global = true)]
    pub comm_clock: String,

    /// What FCS's T_cpu counts: `cpu` (CPU seconds computing, Table 1) or
    /// `elapsed` (wall time between communications, as a layer that only
    /// timestamps its hooks measures it).
    #[arg(long, default_value = "cpu", global = true)]
    pub cpu_clock: String,

    /// Message and barrier latency, seconds (default: the model's 20 µs).
    #[arg(long, global = true, value_parser = bounds::cost)]
    pub latency: Option<f64>,

    /// Context-switch cost, seconds (default: the model's 10 µs).
    #[arg(long, global = true, value_parser = bounds::cost)]
    pub context_switch: Option<f64>,

    /// The nodes' kernel: `linux-2.4` (the paper's: 39.6 ms time slice,
    /// tick 488 µs) or `host` (the kernel the real runs used here: Linux
    /// 6.18 at HZ = 250, one-tick turns of 4 ms). Default: `host` for
    /// `verify --scaled` (it stands for the real runs), `linux-2.4`
    /// elsewhere.
    #[arg(long, global = true)]
    pub os: Option<String>,

    /// The local OS scheduler's time slice, seconds (overrides `--os`).
    #[arg(long, global = true, value_parser = bounds::quantum)]
    pub os_quantum: Option<f64>,

    /// The local OS scheduler's tick, seconds (overrides `--os`).
    #[arg(long, global = true, value_parser = bounds::quantum)]
    pub os_tick: Option<f64>,

    /// Wake-up cost of a blocked process, seconds (default: 10 µs).
    #[arg(long, global = true, value_parser = bounds::cost)]
    pub wakeup: Option<f64>,
}

impl Common {
    /// The library's setup: every option but the output's.
    fn setup(&self) -> CoschedSetup {
        CoschedSetup {
            policies: self.policies.clone(),
            seed: self.seed,
            scale: self.scale,
            quick: self.quick,
            comm_clock: self.comm_clock.clone(),
            cpu_clock: self.cpu_clock.clone(),
            latency: self.latency,
            context_switch: self.context_switch,
            os: self.os.clone(),
            os_quantum: self.os_quantum,
            os_tick: self.os_tick,
            wakeup: self.wakeup,
        }
    }
}

/// `keel sim cosched verify`.
#[derive(Debug, Clone, clap::Args)]
pub struct VerifyArgs {
    /// Which scenario: `all`, `fine-grained`, `load-imbalanced` or
    /// `complementing`.
    #[arg(long, default_value = "all")]
    pub scenario: String,

    /// Run the scenarios scaled to two PEs exactly as `keel cosched run`
    /// runs them for real (2 nodes × 1 PE, 2-rank jobs, 6 ms steps, 500
    /// supersteps, 25 ms slice) and print that command's table shape.
    /// `--scenario` then takes `fine-grained`, `load-imbalanced` or
    /// `complementing` (or the `scaled-` names).
    #[arg(long)]
    pub scaled: bool,

    /// With `--scaled`: compare with the real runs in this JSON file
    /// (`keel cosched run --json-file`): each scheduler's Max beside the
    /// real one, and whether the two order every pair of schedulers alike.
    #[arg(long, value_name = "FILE", requires = "scaled")]
    pub against: Option<PathBuf>,
}

/// `keel sim cosched fig5`.
#[derive(Debug, Clone, clap::Args)]
pub struct Fig5Args {
    /// Compute granularities, seconds.
    #[arg(long, value_delimiter = ',', default_values_t = bsp::FIG5_GRANULARITIES)]
    pub granularities: Vec<f64>,

    /// Variabilities (1 = ±100 %).
    #[arg(long, value_delimiter = ',', default_values_t = bsp::FIG5_VARIABILITIES)]
    pub variabilities: Vec<f64>,

    /// Patterns: `nn`, `barrier` (or `ring`).
    #[arg(long, value_delimiter = ',', default_values_t = ["nn".to_string(), "barrier".to_string()])]
    pub patterns: Vec<String>,

    /// Write one plot per pattern: a FILE ending in `.svg` gets
    /// `-<pattern>` before its extension (`--svg fig5.svg` writes
    /// `fig5-nn.svg`, `fig5-barrier.svg`); any other path is a directory
    /// that gets `fig5-<pattern>.svg` files.
    #[arg(long, value_name = "FILE", alias = "svg-dir")]
    pub svg: Option<PathBuf>,
}

/// `keel sim cosched apps`.
#[derive(Debug, Clone, clap::Args)]
pub struct AppsArgs {
    /// Which mix: `all`, `sweep3d` or `sage`.
    #[arg(long, default_value = "all")]
    pub mix: String,
}

/// `keel sim cosched swf`.
#[derive(Debug, Clone, clap::Args)]
pub struct SwfArgs {
    /// The log (Standard Workload Format 2.2).
    #[arg(long = "input", alias = "file", value_name = "FILE")]
    pub file: PathBuf,

    /// Compute seconds per iteration: a job's run time in the log becomes
    /// round(run time / granularity) iterations (at least 1).
    #[arg(long, default_value_t = SWF_GRANULARITY, value_parser = bounds::quantum)]
    pub granularity: f64,

    /// Variability of every job's compute phases (1 = ±100 %).
    #[arg(long, default_value_t = 0.0)]
    pub variability: f64,

    /// Communication pattern of every job: `barrier`, `nn` or `ring`.
    #[arg(long, default_value = "barrier")]
    pub pattern: String,

    /// Replay only the first N usable jobs (0: all).
    #[arg(long, default_value_t = 100)]
    pub limit: usize,

    /// Nodes of the simulated cluster.
    #[arg(long, default_value_t = bsp::CLUSTER_NODES, value_parser = bounds::count)]
    pub nodes: usize,

    /// PEs per node.
    #[arg(long, default_value_t = bsp::PES_PER_NODE, value_parser = bounds::count)]
    pub pes_per_node: usize,

    /// Fail on jobs wider than the cluster instead of skipping them.
    #[arg(long)]
    pub reject_wide: bool,
}

/// `keel sim cosched ...`.
pub fn run(args: &CoschedArgs, out: &mut dyn Write) -> Result<(), CliError> {
    match &args.command {
        CoschedCommand::Verify(a) => verify(a, &args.common, out),
        CoschedCommand::Fig5(a) => fig5(a, &args.common, out),
        CoschedCommand::Apps(a) => apps(a, &args.common, out),
        CoschedCommand::Swf(a) => swf_run(a, &args.common, out),
    }
}

/// How a table is printed as text.
type TableWriter = fn(&mut dyn Write, &ScenarioTable) -> Result<(), CliError>;

fn tables(
    report: &TablesReport,
    common: &Common,
    write: TableWriter,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    if common.json {
        serde_json::to_writer(&mut *out, report)?;
        writeln!(out)?;
        return Ok(());
    }
    write_setup(out, &report.setup)?;
    for t in &report.tables {
        writeln!(out)?;
        write(out, t)?;
    }
    Ok(())
}
