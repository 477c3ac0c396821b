//! `keel sim cosched`: the FCS paper's experiments
//! (`papers/flexible-coscheduling-fcs.txt` §3) in the cluster model
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
use std::path::{Path, PathBuf};

use keel_cosched::scenario::{self as real, ScenarioParams};
use keel_sim::cluster::scenarios::{
    self, fig5_findings, fig5_sweep, run_table, Fig5Point, Finding, ScenarioTable, APP_POLICIES,
    FCS_GOAL, VERIFY_POLICIES,
};
use keel_sim::cluster::{simulate_spec, CommClock, CoschedModel, CpuClock, OsModel};
use keel_sim::SimError;
use keel_workloads::bsp::{self, BspJob, BspScenario, Pattern};
use keel_workloads::swf::{self, WideJobs};
use serde::Serialize;

use super::bounds;
use crate::error::CliError;
use crate::report;

/// The iteration scale of `--quick`.
pub const QUICK_SCALE: f64 = 0.02;

/// Default compute seconds per iteration of a job replayed from an SWF log:
/// coarse enough that a job of hours stays cheap to simulate, fine enough
/// that jobs synchronise hundreds of times per time-slice rotation.
pub const SWF_GRANULARITY: f64 = 0.1;

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
    fn scale(&self) -> Result<f64, CliError> {
        let scale = if self.quick { QUICK_SCALE } else { self.scale };
        if !(scale.is_finite() && scale > 0.0) {
            return Err(CliError::Usage(format!(
                "--scale {} is invalid: expected a finite number > 0",
                bounds::shown(scale)
            )));
        }
        Ok(scale)
    }

    /// The model for a `nodes` × `pes_per_node` machine on the kernel
    /// `--os` names (else `default_os`), with every override applied,
    /// validated.
    fn model(
        &self,
        nodes: usize,
        pes_per_node: usize,
        default_os: OsModel,
    ) -> Result<CoschedModel, CliError> {
        let mut m = CoschedModel::new(nodes, pes_per_node)
            .map_err(sim_error)?
            .with_seed(self.seed);
        m.os = match &self.os {
            Some(name) => OsModel::named(name).map_err(sim_error)?,
            None => default_os,
        };
        m.comm_clock = CommClock::parse(&self.comm_clock).map_err(sim_error)?;
        m.cpu_clock = CpuClock::parse(&self.cpu_clock).map_err(sim_error)?;
        if let Some(v) = self.latency {
            m.net.latency = v;
        }
        if let Some(v) = self.context_switch {
            m.cluster.context_switch = v;
        }
        if let Some(v) = self.os_quantum {
            m.os.quantum = v;
        }
        if let Some(v) = self.os_tick {
            m.os.tick = v;
        }
        if let Some(v) = self.wakeup {
            m.os.wakeup = v;
        }
        m.validate().map_err(sim_error)?;
        Ok(m)
    }

    /// The specs to run, each checked before any simulation starts.
    fn specs(&self, defaults: &[&str]) -> Result<Vec<String>, CliError> {
        let specs: Vec<String> = if self.policies.is_empty() {
            defaults.iter().map(|s| s.to_string()).collect()
        } else {
            self.policies.iter().map(|s| s.trim().to_string()).collect()
        };
        for spec in &specs {
            keel_policy::cosched::parse(spec)
                .map_err(|e| CliError::Usage(format!("cosched policy `{spec}`: {e}")))?;
        }
        Ok(specs)
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
    /// `--scenario` then takes `fine-grained`, `imbalanced` or
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

    /// Write `fig5-<pattern>.svg` plots into this directory.
    #[arg(long, value_name = "DIR")]
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
    #[arg(long, value_name = "FILE")]
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

/// The model's constants, as reported.
#[derive(Debug, Clone, Serialize)]
pub struct Setup {
    /// Seed.
    pub seed: u64,
    /// Iteration scale.
    pub scale: f64,
    /// The model (machine of the first scenario; the constants are shared).
    pub model: CoschedModel,
}

/// `verify` and `apps`.
#[derive(Debug, Clone, Serialize)]
pub struct TablesReport {
    /// Constants.
    pub setup: Setup,
    /// One table per scenario.
    pub tables: Vec<ScenarioTable>,
}

/// `fig5`.
#[derive(Debug, Clone, Serialize)]
pub struct Fig5Report {
    /// Constants.
    pub setup: Setup,
    /// Every point.
    pub points: Vec<Fig5Point>,
    /// The paper's observations, checked.
    pub findings: Vec<Finding>,
}

/// One policy on an SWF log.
#[derive(Debug, Clone, Serialize)]
pub struct SwfRow {
    /// The policy's registry name.
    pub policy: String,
    /// First submission to last completion, seconds.
    pub makespan: f64,
    /// Mean turnaround, seconds.
    pub mean_turnaround: f64,
    /// Mean of turnaround over the job's dedicated time.
    pub mean_slowdown: f64,
    /// Fraction of PE time spent computing.
    pub utilisation: f64,
}

/// `swf`.
#[derive(Debug, Clone, Serialize)]
pub struct SwfReport {
    /// Constants.
    pub setup: Setup,
    /// The log.
    pub file: String,
    /// Jobs replayed.
    pub jobs: usize,
    /// Jobs the log had that could not be replayed (unknown width or run
    /// time, width 0, wider than the cluster) or were past `--limit`.
    pub skipped: usize,
    /// One row per policy.
    pub rows: Vec<SwfRow>,
}

fn sim_error(e: SimError) -> CliError {
    CliError::Usage(format!("sim cosched: {e}"))
}

fn scaled(s: BspScenario, scale: f64) -> Result<BspScenario, CliError> {
    s.scaled(scale).map_err(CliError::from)
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

fn pick(name: &str, all: Vec<BspScenario>, flag: &str) -> Result<Vec<BspScenario>, CliError> {
    if name == "all" {
        return Ok(all);
    }
    let valid: Vec<String> = all.iter().map(|s| s.name.clone()).collect();
    let chosen: Vec<BspScenario> = all.into_iter().filter(|s| s.name == name).collect();
    if chosen.is_empty() {
        return Err(CliError::Usage(format!(
            "{flag} `{name}` is unknown; valid: all, {}",
            valid.join(", ")
        )));
    }
    Ok(chosen)
}

/// How a table is printed as text.
type TableWriter = fn(&mut dyn Write, &ScenarioTable) -> Result<(), CliError>;

fn tables(
    scenarios: Vec<BspScenario>,
    defaults: &[&str],
    default_os: OsModel,
    common: &Common,
    what: &str,
    write: TableWriter,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let report = compute_tables(scenarios, defaults, default_os, common, what)?;
    if common.json {
        serde_json::to_writer(&mut *out, &report)?;
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

/// Simulates every scenario under every policy.
fn compute_tables(
    scenarios: Vec<BspScenario>,
    defaults: &[&str],
    default_os: OsModel,
    common: &Common,
    what: &str,
) -> Result<TablesReport, CliError> {
    let scale = common.scale()?;
    let specs = common.specs(defaults)?;
    common.model(1, 1, default_os)?;
    let scenarios = scenarios
        .into_iter()
        .map(|s| scaled(s, scale))
        .collect::<Result<Vec<_>, _>>()?;
    let bar = super::progress((scenarios.len() * specs.len()) as u64, what, common.quiet);
    let mut done = Vec::new();
    let mut model = None;
    for s in &scenarios {
        let m = common.model(s.nodes, s.pes_per_node, default_os)?;
        let table = run_table(s, &m, &specs, &mut || bar.inc(1));
        done.push(table.map_err(sim_error)?);
        model.get_or_insert(m);
    }
    bar.finish_and_clear();
    let Some(model) = model else {
        return Err(CliError::Usage("no scenario to run".into()));
    };
    Ok(TablesReport {
        setup: Setup {
            seed: common.seed,
            scale,
            model,
        },
        tables: done,
    })
}

fn verify(a: &VerifyArgs, common: &Common, out: &mut dyn Write) -> Result<(), CliError> {
    if a.scaled {
        return verify_scaled(a, common, out);
    }
    let chosen = pick(
        &a.scenario,
        scenarios::verification_scenarios(),
        "--scenario",
    )?;
    tables(
        chosen,
        &VERIFY_POLICIES,
        OsModel::linux_2_4(),
        common,
        "sim cosched verify",
        write_table,
        out,
    )
}

/// The real runs' policy specs: `keel cosched run`'s five schedulers with
/// its time slice.
fn scaled_policies() -> Vec<String> {
    let slice = ScenarioParams::full().time_slice;
    real::POLICIES
        .iter()
        .map(|p| real::policy_spec(p, slice))
        .collect()
}

/// `verify --scaled`: the real runs' scenarios in the model.
fn verify_scaled(a: &VerifyArgs, common: &Common, out: &mut dyn Write) -> Result<(), CliError> {
    let name = match a.scenario.as_str() {
        "all" => "all".to_string(),
        "imbalanced" | "load-imbalanced" => "scaled-load-imbalanced".to_string(),
        n if n.starts_with("scaled-") => n.to_string(),
        n => format!("scaled-{n}"),
    };
    let chosen = pick(&name, bsp::scaled_verification(), "--scenario")?;
    let defaults = scaled_policies();
    let defaults: Vec<&str> = defaults.iter().map(String::as_str).collect();
    let what = "sim cosched verify --scaled";
    if let Some(file) = &a.against {
        // Read the real runs first: a bad file fails before minutes of
        // simulation.
        let real_runs = read_real_runs(file)?;
        let report = compute_tables(chosen, &defaults, OsModel::host(), common, what)?;
        let against = report
            .tables
            .iter()
            .map(|t| compare_with_real(t, &real_runs))
            .collect::<Result<Vec<_>, _>>()?;
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
    tables(
        chosen,
        &defaults,
        OsModel::host(),
        common,
        what,
        write_real_table,
        out,
    )?;
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

/// One scheduler of a scaled scenario, simulated and run for real.
#[derive(Debug, Clone, Serialize)]
pub struct AgainstRow {
    /// The scheduler.
    pub policy: String,
    /// The real Max (the median run's), seconds.
    pub real_max: f64,
    /// Every real run's makespan, seconds.
    pub real_runs: Vec<f64>,
    /// The simulated Max, seconds.
    pub simulated_max: f64,
    /// (simulated − real) / real · 100.
    pub error_percent: f64,
}

/// A scaled scenario's simulation against its real runs.
#[derive(Debug, Clone, Serialize)]
pub struct AgainstTable {
    /// The simulated scenario's name.
    pub scenario: String,
    /// One row per scheduler both ran.
    pub rows: Vec<AgainstRow>,
    /// Pairs of schedulers.
    pub pairs: usize,
    /// Pairs the simulation orders as the real runs do.
    pub pairs_alike: usize,
    /// Pairs whose real runs do not overlap (every run of one scheduler
    /// ended before every run of the other): the orderings noise cannot
    /// explain.
    pub separated_pairs: usize,
    /// Of those, the pairs ordered alike.
    pub separated_alike: usize,
    /// The pairs ordered differently, `(a, b, separated)`.
    pub disagreements: Vec<(String, String, bool)>,
}

/// Per real scenario name, each scheduler's Max and run makespans.
type RealRuns = Vec<(String, Vec<(String, f64, Vec<f64>)>)>;

/// Reads a `keel cosched run --json-file` document.
fn read_real_runs(file: &Path) -> Result<RealRuns, CliError> {
    let bad = |why: String| CliError::Usage(format!("--against {}: {why}", file.display()));
    let text = std::fs::read_to_string(file).map_err(|e| bad(e.to_string()))?;
    let doc: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        bad(format!(
            "not JSON ({e}); expected `keel cosched run --json-file` output"
        ))
    })?;
    let tables = doc["tables"].as_array().ok_or_else(|| {
        bad("no `tables` array; expected `keel cosched run --json-file` output".into())
    })?;
    let mut out = Vec::new();
    for t in tables {
        let scenario = t["scenario"]
            .as_str()
            .ok_or_else(|| bad("a table without a `scenario` name".into()))?;
        let mut rows = Vec::new();
        for r in t["rows"].as_array().into_iter().flatten() {
            let policy = r["policy"]
                .as_str()
                .ok_or_else(|| bad(format!("{scenario}: a row without a `policy`")))?;
            // A scheduler whose runs did not all complete has no Max.
            let Some(max) = r["max"].as_f64() else {
                continue;
            };
            let runs = r["runs"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|run| run["makespan"].as_f64())
                .collect();
            rows.push((policy.to_string(), max, runs));
        }
        out.push((scenario.to_string(), rows));
    }
    Ok(out)
}

/// The simulated table `t` against its real runs.
fn compare_with_real(t: &ScenarioTable, real_runs: &RealRuns) -> Result<AgainstTable, CliError> {
    let name = real_scenario(&t.scenario).name();
    let (_, real_rows) = real_runs.iter().find(|(s, _)| s == name).ok_or_else(|| {
        CliError::Usage(format!(
            "--against: the real runs have no `{name}` scenario (run `keel cosched run` with it)"
        ))
    })?;
    let rows: Vec<AgainstRow> = t
        .rows
        .iter()
        .filter_map(|r| {
            let (_, real_max, runs) = real_rows.iter().find(|(p, _, _)| *p == r.policy)?;
            Some(AgainstRow {
                policy: r.policy.clone(),
                real_max: *real_max,
                real_runs: runs.clone(),
                simulated_max: r.max,
                error_percent: (r.max - real_max) / real_max * 100.0,
            })
        })
        .collect();
    let range = |r: &AgainstRow| {
        let lo = r.real_runs.iter().copied().fold(r.real_max, f64::min);
        let hi = r.real_runs.iter().copied().fold(r.real_max, f64::max);
        (lo, hi)
    };
    let mut against = AgainstTable {
        scenario: t.scenario.clone(),
        rows: Vec::new(),
        pairs: 0,
        pairs_alike: 0,
        separated_pairs: 0,
        separated_alike: 0,
        disagreements: Vec::new(),
    };
    for (i, a) in rows.iter().enumerate() {
        for b in &rows[i + 1..] {
            let alike = (a.real_max < b.real_max) == (a.simulated_max < b.simulated_max);
            let (a_lo, a_hi) = range(a);
            let (b_lo, b_hi) = range(b);
            let separated = a_hi < b_lo || b_hi < a_lo;
            against.pairs += 1;
            against.pairs_alike += usize::from(alike);
            against.separated_pairs += usize::from(separated);
            against.separated_alike += usize::from(separated && alike);
            if !alike {
                against
                    .disagreements
                    .push((a.policy.clone(), b.policy.clone(), separated));
            }
        }
    }
    against.rows = rows;
    Ok(against)
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

/// The real scenario a scaled simulated one stands for.
fn real_scenario(name: &str) -> real::Scenario {
    match name.trim_start_matches("scaled-") {
        "fine-grained" => real::Scenario::FineGrained,
        "complementing" => real::Scenario::Complementing,
        _ => real::Scenario::Imbalanced,
    }
}

/// A simulated table in `keel cosched run`'s form (FCS's classes are the
/// ones each rank held longest).
fn as_real_table(t: &ScenarioTable) -> real::Table {
    real::Table {
        scenario: real_scenario(&t.scenario),
        title: t.title.clone(),
        job_names: t.jobs.clone(),
        rows: t
            .rows
            .iter()
            .map(|r| real::Row {
                policy: r.policy.clone(),
                jobs: r.ends.iter().map(|&e| Some(e)).collect(),
                max: Some(r.max),
                classes: r
                    .classes
                    .iter()
                    .map(|c| c.iter().map(|x| x.to_string()).collect())
                    .collect(),
                notes: Vec::new(),
                runs: Vec::new(),
            })
            .collect(),
    }
}

fn write_real_table(out: &mut dyn Write, t: &ScenarioTable) -> Result<(), CliError> {
    write!(out, "{}", real::format_table(&as_real_table(t)))?;
    Ok(())
}

/// The policies of the demo's coscheduling section.
const DEMO_POLICIES: [&str; 3] = ["gs", "sb", "fcs"];

/// `keel demo cosched`: the scaled load-imbalanced scenario (the one
/// `keel cosched run` runs for real) simulated under GS, SB and FCS.
pub fn demo(out: &mut dyn Write) -> Result<(), CliError> {
    let scenario = bsp::scaled_load_imbalanced();
    // The seed `keel sim cosched verify --scaled` uses by default, so the
    // demo's numbers are that table's.
    let mut model = CoschedModel::new(scenario.nodes, scenario.pes_per_node)
        .map_err(sim_error)?
        .with_seed(1);
    model.os = OsModel::host();
    let slice = ScenarioParams::full().time_slice;
    let specs: Vec<String> = DEMO_POLICIES
        .iter()
        .map(|p| real::policy_spec(p, slice))
        .collect();
    let table = run_table(&scenario, &model, &specs, &mut || {}).map_err(sim_error)?;
    write_real_table(out, &table)?;
    writeln!(
        out,
        "Perfect packing: {:.2} s (500 × 18 ms of compute per PE); each job alone: {:.2} s.",
        scenarios::ideal_time(&scenario.jobs, scenario.pes()),
        scenario.jobs[0].dedicated_time(0.0)
    )?;
    Ok(())
}

fn apps(a: &AppsArgs, common: &Common, out: &mut dyn Write) -> Result<(), CliError> {
    let chosen = pick(&a.mix, scenarios::application_scenarios(), "--mix")?;
    tables(
        chosen,
        &APP_POLICIES,
        OsModel::linux_2_4(),
        common,
        "sim cosched apps",
        write_table,
        out,
    )
}

fn write_setup(out: &mut dyn Write, s: &Setup) -> Result<(), CliError> {
    let m = &s.model;
    writeln!(
        out,
        "keel sim cosched: latency {}, context switch {}, kernel {}: OS time slice {} (±{:.0} %), tick {}, wake-up {}, monitoring {} per call, T_comm clock {}, T_cpu clock {}; seed {}, iterations × {}",
        report::duration(m.net.latency),
        report::duration(m.cluster.context_switch),
        m.os.kernel,
        report::duration(m.os.quantum),
        m.os.quantum_jitter * 100.0,
        report::duration(m.os.tick),
        report::duration(m.os.wakeup),
        report::duration(m.monitor_cost),
        m.comm_clock.name(),
        m.cpu_clock.name(),
        s.seed,
        s.scale
    )?;
    if s.scale != 1.0 {
        writeln!(
            out,
            "(iterations scaled: a smoke run, not the paper's jobs; FCS needs ten assigned slots per process before it classifies)"
        )?;
    }
    Ok(())
}

/// The paper's spelling of a policy's name.
fn label(policy: &str) -> String {
    match policy {
        "fcfs" | "gs" | "sb" | "fcs" => policy.to_uppercase(),
        "local" => "Local".into(),
        other => other.into(),
    }
}

fn write_table(out: &mut dyn Write, t: &ScenarioTable) -> Result<(), CliError> {
    writeln!(out, "{}", t.title)?;
    let mut header = vec!["Algorithm".to_string()];
    header.extend(t.jobs.iter().map(|j| {
        let mut s = j.clone();
        if let Some(c) = s.get_mut(0..1) {
            c.make_ascii_uppercase();
        }
        s
    }));
    header.extend(["Max".into(), "paper Max".into(), "util".into()]);
    let mut rows = vec![header];
    for r in &t.rows {
        let name = match r.spec.split_once(':') {
            Some((_, params)) => format!("{}:{params}", label(&r.policy)),
            None => label(&r.policy),
        };
        let best = t.rows.iter().map(|x| x.max).fold(f64::INFINITY, f64::min);
        let mut row = vec![if r.max == best {
            format!("{name} *")
        } else {
            name
        }];
        row.extend(r.ends.iter().map(|e| format!("{e:.2}")));
        row.push(format!("{:.2}", r.max));
        row.push(r.paper_max.map_or("–".into(), |p| format!("{p:.2}")));
        row.push(format!("{:.3}", r.utilisation));
        rows.push(row);
    }
    for line in report::align(&rows) {
        writeln!(out, "{line}")?;
    }
    if let (Some(gap), Some(met)) = (t.fcs_gap, t.fcs_goal_met) {
        writeln!(
            out,
            "  best (*): {}; FCS {:+.2} % from the best (goal ≤ {:.0} %: {})",
            label(&t.best),
            gap * 100.0,
            FCS_GOAL * 100.0,
            if met { "met" } else { "NOT met" }
        )?;
    } else {
        writeln!(out, "  best (*): {}", label(&t.best))?;
    }
    if let Some(o) = &t.ordering {
        writeln!(
            out,
            "  order by Max — paper: {}; here: {}; {}/{} pairs agree",
            o.paper
                .iter()
                .map(|p| label(p))
                .collect::<Vec<_>>()
                .join(" < "),
            o.ours
                .iter()
                .map(|p| label(p))
                .collect::<Vec<_>>()
                .join(" < "),
            o.concordant,
            o.pairs
        )?;
        for (a, b, paper, ours) in &o.discordant {
            writeln!(
                out,
                "    {} vs {}: paper {:+.2} %, here {:+.2} %",
                label(a),
                label(b),
                paper,
                ours
            )?;
        }
    }
    if let Some(fcs) = t.rows.iter().find(|r| r.policy == "fcs") {
        let classes: Vec<String> = fcs
            .classes
            .iter()
            .enumerate()
            .map(|(j, c)| format!("job {j}: {}", summarise_classes(c)))
            .collect();
        writeln!(out, "  FCS classes (held longest): {}", classes.join("; "))?;
        writeln!(
            out,
            "  FCS class timeline: {}",
            timeline(&fcs.class_changes)
        )?;
    }
    Ok(())
}

/// Class changes grouped by time, job and change, the first few spelled
/// out: `0.475 s job 0 ranks 0-1 CS→DC; …`.
fn timeline(changes: &[keel_sim::cluster::ClassChange]) -> String {
    const SHOWN: usize = 6;
    let mut groups: Vec<(f64, usize, &str, &str, Vec<usize>)> = Vec::new();
    for c in changes {
        match groups.last_mut() {
            Some(g) if g.0 == c.time && g.1 == c.job && g.2 == c.from && g.3 == c.to => {
                g.4.push(c.rank)
            }
            _ => groups.push((c.time, c.job, c.from, c.to, vec![c.rank])),
        }
    }
    let mut parts: Vec<String> = groups
        .iter()
        .take(SHOWN)
        .map(|(t, job, from, to, ranks)| {
            let ranks = match (ranks.first(), ranks.last()) {
                (Some(a), Some(b)) if ranks.len() > 1 && b - a + 1 == ranks.len() => {
                    format!("ranks {a}-{b}")
                }
                _ => format!(
                    "rank{} {}",
                    if ranks.len() > 1 { "s" } else { "" },
                    ranks
                        .iter()
                        .map(|r| r.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                ),
            };
            format!("{t:.3} s job {job} {ranks} {from}→{to}")
        })
        .collect();
    if groups.len() > SHOWN {
        parts.push(format!("… ({} changes in all)", changes.len()));
    }
    if parts.is_empty() {
        "no change (every process kept its first class)".into()
    } else {
        parts.join("; ")
    }
}

/// `CS CS F F`, or `64 × DC` / `60 CS + 4 F` for wide jobs.
fn summarise_classes(c: &[&str]) -> String {
    if c.len() <= 8 {
        return c.join(" ");
    }
    let mut parts = Vec::new();
    for class in ["CS", "F", "DC"] {
        let n = c.iter().filter(|&&x| x == class).count();
        if n > 0 {
            parts.push(format!("{n} {class}"));
        }
    }
    parts.join(" + ")
}

// ---------------------------------------------------------------------
// Fig. 5.

fn fig5(a: &Fig5Args, common: &Common, out: &mut dyn Write) -> Result<(), CliError> {
    let scale = common.scale()?;
    let specs = common.specs(&scenarios_fig5_policies())?;
    let patterns = a
        .patterns
        .iter()
        .map(|p| Pattern::parse(p))
        .collect::<Result<Vec<_>, _>>()?;
    if a.granularities.is_empty() || a.variabilities.is_empty() || patterns.is_empty() {
        return Err(CliError::Usage(
            "fig5 needs at least one granularity, variability and pattern".into(),
        ));
    }
    // Checked before the sweep: a bad value fails at once, not an hour in.
    for &g in &a.granularities {
        bsp::fig5(g, 0.0, Pattern::Barrier)?;
    }
    for &v in &a.variabilities {
        bsp::fig5(0.004, v, Pattern::Barrier)?;
    }
    let model = common.model(bsp::CLUSTER_NODES, bsp::PES_PER_NODE, OsModel::linux_2_4())?;
    let total = patterns.len() * a.granularities.len() * a.variabilities.len() * specs.len();
    let bar = super::progress(total as u64, "sim cosched fig5", common.quiet);
    let points = fig5_sweep(
        &patterns,
        &a.granularities,
        &a.variabilities,
        &specs,
        &model,
        scale,
        &mut || bar.inc(1),
    );
    bar.finish_and_clear();
    let points = points.map_err(sim_error)?;
    let findings = fig5_findings(&points);
    let report = Fig5Report {
        setup: Setup {
            seed: common.seed,
            scale,
            model,
        },
        points,
        findings,
    };
    // The tables come first, the plots after: a plot that cannot be
    // written must not throw away what was computed; its failure is still
    // the command's error, naming the path.
    let plots = |out: &mut dyn Write| -> Result<(), CliError> {
        let Some(dir) = &a.svg else {
            return Ok(());
        };
        out.flush()?;
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::Usage(format!("svg {}: {e}", dir.display())))?;
        for p in &patterns {
            plot_fig5(
                &dir.join(format!("fig5-{}.svg", p.name())),
                p.name(),
                a,
                &specs,
                &report.points,
            )?;
        }
        Ok(())
    };
    if common.json {
        serde_json::to_writer(&mut *out, &report)?;
        writeln!(out)?;
        return plots(out);
    }
    write_setup(out, &report.setup)?;
    writeln!(
        out,
        "§3.3 Fig. 5: 4 jobs × 64 processes on 32 nodes × 2 PEs, {:.0} s of compute per job (× scale); cells: turnaround / (CPU work / PEs)",
        bsp::FIG5_WORK_S
    )?;
    for p in &patterns {
        for &v in &a.variabilities {
            writeln!(out)?;
            writeln!(out, "{} pattern, variability ±{:.0} %", p.name(), v * 100.0)?;
            let mut header = vec!["granularity".to_string()];
            header.extend(specs.iter().map(|s| label(&policy_name(s))));
            header.push("FCS classes CS/F/DC".into());
            let mut rows = vec![header];
            for &g in &a.granularities {
                let mut row = vec![report::duration(g)];
                let mut classes = "–".to_string();
                for s in &specs {
                    let name = policy_name(s);
                    let pt = report.points.iter().find(|x| {
                        x.pattern == p.name()
                            && x.granularity == g
                            && x.variability == v
                            && x.policy == name
                    });
                    row.push(pt.map_or("–".into(), |x| format!("{:.3}", x.normalised)));
                    if let Some(share) = pt.and_then(|x| x.class_share) {
                        classes = format!(
                            "{:.0}/{:.0}/{:.0} %",
                            share[0] * 100.0,
                            share[1] * 100.0,
                            share[2] * 100.0
                        );
                    }
                }
                row.push(classes);
                rows.push(row);
            }
            for line in report::align(&rows) {
                writeln!(out, "{line}")?;
            }
        }
    }
    writeln!(out)?;
    writeln!(out, "The paper's observations (§3.3):")?;
    for f in &report.findings {
        let verdict = match f.holds {
            Some(true) => "holds",
            Some(false) => "does NOT hold",
            None => "not checked (points missing)",
        };
        writeln!(
            out,
            "  [{}] {}: {} — {}",
            f.pattern, f.claim, verdict, f.detail
        )?;
    }
    plots(out)?;
    if let Some(dir) = &a.svg {
        writeln!(out, "plots: {}", dir.display())?;
    }
    Ok(())
}

fn scenarios_fig5_policies() -> [&'static str; 4] {
    ["gs", "fcfs", "fcs", "sb"]
}

fn policy_name(spec: &str) -> String {
    spec.split(':').next().unwrap_or(spec).trim().to_string()
}

fn plot_fig5(
    path: &Path,
    pattern: &str,
    a: &Fig5Args,
    specs: &[String],
    points: &[Fig5Point],
) -> Result<(), CliError> {
    use plotters::prelude::*;
    let svg_error =
        |e: &dyn std::fmt::Display| CliError::Usage(format!("svg {}: {e}", path.display()));
    let panels = a.variabilities.len();
    let root = SVGBackend::new(path, (900, 300 * panels as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| svg_error(&e))?;
    let gmin = a
        .granularities
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min);
    let gmax = a.granularities.iter().copied().fold(0.0, f64::max);
    let (x0, x1) = if gmax > gmin {
        (gmin / 1.2, gmax * 1.2)
    } else {
        (gmin / 2.0, gmin * 2.0)
    };
    let ymax = points
        .iter()
        .filter(|p| p.pattern == pattern)
        .map(|p| p.normalised)
        .fold(1.0, f64::max)
        * 1.05;
    let title = if pattern == "nn" {
        "Nearest neighbour"
    } else {
        "Barrier"
    };
    for (area, &v) in root.split_evenly((panels, 1)).iter().zip(&a.variabilities) {
        let mut chart = ChartBuilder::on(area)
            .caption(
                format!("{title}, variability ±{:.0} %", v * 100.0),
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d((x0..x1).log_scale(), 0.9f64..ymax)
            .map_err(|e| svg_error(&e))?;
        chart
            .configure_mesh()
            .x_desc("granularity (s)")
            .y_desc("turnaround / ideal")
            .draw()
            .map_err(|e| svg_error(&e))?;
        for (i, spec) in specs.iter().enumerate() {
            let name = policy_name(spec);
            let color = Palette99::pick(i).to_rgba();
            let mut series: Vec<(f64, f64)> = points
                .iter()
                .filter(|p| p.pattern == pattern && p.variability == v && p.policy == name)
                .map(|p| (p.granularity, p.normalised))
                .collect();
            series.sort_by(|x, y| x.0.total_cmp(&y.0));
            chart
                .draw_series(LineSeries::new(series, color.stroke_width(2)))
                .map_err(|e| svg_error(&e))?
                .label(label(&name))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .draw()
            .map_err(|e| svg_error(&e))?;
    }
    root.present().map_err(|e| svg_error(&e))?;
    Ok(())
}

// ---------------------------------------------------------------------
// SWF.

fn swf_run(a: &SwfArgs, common: &Common, out: &mut dyn Write) -> Result<(), CliError> {
    let scale = common.scale()?;
    let specs = common.specs(&APP_POLICIES)?;
    let pattern = Pattern::parse(&a.pattern)?;
    let model = common.model(a.nodes, a.pes_per_node, OsModel::linux_2_4())?;
    let log = swf::read_swf(&a.file).map_err(|e| CliError::Usage(e.to_string()))?;
    let wide = if a.reject_wide {
        WideJobs::Reject
    } else {
        WideJobs::Drop
    };
    let stream = swf::arrivals(&log.jobs, model.cluster.pes(), wide)
        .map_err(|e| CliError::Usage(format!("{}: {e}", a.file.display())))?;
    let mut arrivals = stream.jobs;
    let mut skipped = stream.dropped.len();
    if a.limit > 0 && arrivals.len() > a.limit {
        skipped += arrivals.len() - a.limit;
        arrivals.truncate(a.limit);
    }
    let jobs = bsp::from_swf(&arrivals, a.granularity, a.variability, pattern)?
        .into_iter()
        .map(|mut j| {
            j.iterations = ((j.iterations as f64 * scale).round() as u64).max(1);
            j
        })
        .collect::<Vec<BspJob>>();
    if jobs.is_empty() {
        return Err(CliError::Usage(format!(
            "{}: no job of the log can run on {} PEs",
            a.file.display(),
            model.cluster.pes()
        )));
    }
    // Refused before the first policy runs: a log's run time of 10⁹ s
    // would otherwise be 10¹⁰ iterations per process.
    keel_sim::cluster::check_work(&jobs).map_err(|e| {
        CliError::Usage(format!(
            "{}: {e}; raise --granularity, lower --scale or replay fewer jobs with --limit",
            a.file.display()
        ))
    })?;
    let bar = super::progress(specs.len() as u64, "sim cosched swf", common.quiet);
    let mut rows = Vec::new();
    for spec in &specs {
        let run = simulate_spec(&model, spec, &jobs);
        bar.inc(1);
        let run = run.map_err(sim_error)?;
        let slowdowns: Vec<f64> = run
            .jobs
            .iter()
            .map(|j| j.turnaround / j.dedicated.max(1e-9))
            .collect();
        rows.push(SwfRow {
            policy: policy_name(spec),
            makespan: run.makespan,
            mean_turnaround: run.mean_turnaround(),
            mean_slowdown: slowdowns.iter().sum::<f64>() / slowdowns.len() as f64,
            utilisation: run.utilisation(),
        });
    }
    bar.finish_and_clear();
    let report = SwfReport {
        setup: Setup {
            seed: common.seed,
            scale,
            model,
        },
        file: a.file.display().to_string(),
        jobs: jobs.len(),
        skipped,
        rows,
    };
    if common.json {
        serde_json::to_writer(&mut *out, &report)?;
        writeln!(out)?;
        return Ok(());
    }
    write_setup(out, &report.setup)?;
    writeln!(
        out,
        "{}: {} jobs replayed ({} skipped) on {} × {} PEs, {} pattern, granularity {}",
        report.file,
        report.jobs,
        report.skipped,
        a.nodes,
        a.pes_per_node,
        pattern.name(),
        report::duration(a.granularity)
    )?;
    let mut table = vec![[
        "Algorithm".to_string(),
        "makespan".into(),
        "mean turnaround".into(),
        "mean slowdown".into(),
        "util".into(),
    ]];
    for r in &report.rows {
        table.push([
            label(&r.policy),
            format!("{:.2}", r.makespan),
            format!("{:.2}", r.mean_turnaround),
            format!("{:.3}", r.mean_slowdown),
            format!("{:.3}", r.utilisation),
        ]);
    }
    for line in report::align(&table) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}
