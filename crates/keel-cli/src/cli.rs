//! The command-line grammar.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Keel: portable load-balancing policies, run on your loads or on built-in workloads.
#[derive(Debug, Parser)]
#[command(name = "keel", version, about, long_about = None, after_help = EXIT_STATUS)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The exit statuses, shown under `keel --help` (and in the README).
const EXIT_STATUS: &str = "\
Exit status:
  0  everything asked for ran
  1  a runtime failure: an input file that does not read or parse, output
     that cannot be written, a policy or experiment that failed on valid
     input, or some rows that could not run (printed after the others)
  2  a usage error: an unknown flag or name, a bad value or spec; nothing ran

Every command that prints results takes --json (one JSON document on
stdout) and --quiet (no progress lines on stderr).";

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Map tasks to PUs with one or more policies and compare the results.
    Map(MapArgs),
    /// List every policy family (mapping, loop schedules and `auto`
    /// methods, farm dispatch, stealing exposure, co-scheduling) and the
    /// workload generators.
    Policies(crate::policies::PoliciesArgs),
    /// A tour on built-in workloads: every mapping policy, then loops,
    /// `auto`, farms, objects and co-scheduling in short.
    Demo(DemoArgs),
    /// Benchmarks on this machine's threads: loop schedules, farms, `auto`
    /// selection and over-decomposed objects.
    Bench(BenchArgs),
    /// The discrete-event simulator: calibrate, validate, and run loops,
    /// farms and objects at scales this machine cannot reach.
    Sim(crate::sim::SimArgs),
    /// The real gang scheduler on this machine: run the FCS paper's
    /// verification scenarios under fcfs, local, gs, sb and fcs.
    Cosched(crate::cosched::CoschedArgs),
    /// OpenMP programs (GCC / gfortran) with their loops dispatched by
    /// Keel: `keel omp run [--schedule S] -- ./app args`.
    Omp(crate::omp::OmpArgs),
    /// Objects across MPI ranks: `keel mpi bench` runs the Lassen-like
    /// proxy as distributed objects under `mpiexec`.
    Mpi(crate::mpi_bench::MpiArgs),
    /// Write the man pages and shell completions (`scripts/install.sh`
    /// puts them under the prefix's `share/`).
    #[command(hide = true)]
    InstallDocs(crate::install_docs::InstallDocsArgs),
}

/// `keel map`.
#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("source").required(true).args(["tasks", "generate"]))]
pub struct MapArgs {
    /// A mapping policy spec, e.g. `greedy`, `binlpt:chunks=80`,
    /// `hier:nodes=4,outer=(greedy),inner=refine`; repeat for one row each.
    #[arg(short, long = "policy", value_name = "SPEC", default_value = "greedy")]
    pub policies: Vec<String>,

    /// Task loads: a .json trace or a .csv table (column `load`, optional
    /// `migratable`, `current_pu`, and a task id column `id` or `task`).
    #[arg(
        short = 'i',
        long = "input",
        short_alias = 't',
        alias = "tasks",
        value_name = "FILE"
    )]
    pub tasks: Option<PathBuf>,

    /// PUs as a .csv table (optional columns `background`, `speed`, `available`).
    #[arg(long, value_name = "FILE", conflicts_with = "generate")]
    pub pu_file: Option<PathBuf>,

    /// Number of PUs, when the trace does not say.
    #[arg(long, value_name = "N", conflicts_with = "generate")]
    pub pus: Option<usize>,

    /// A built-in workload spec instead of a file, e.g. `lb-test:tasks=16000,pus=80`.
    #[arg(short, long, value_name = "SPEC", conflicts_with = "tasks")]
    pub generate: Option<String>,

    /// Print one JSON document instead of a table.
    #[arg(long)]
    pub json: bool,

    /// Include each policy's task-to-PU mapping in the output (keyed by the
    /// trace's task ids when it has an `id` or `task` column).
    #[arg(long)]
    pub show_mapping: bool,

    /// No progress on stderr (this command prints none; accepted so that
    /// `--quiet` works on every command).
    #[arg(long)]
    pub quiet: bool,
}

/// `keel demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Run only these sections (default: all), e.g. `lb-test hotspot`.
    #[arg(value_name = "SECTION")]
    pub sections: Vec<String>,

    /// Print one JSON document: each section's name, title, what to look
    /// for and its text.
    #[arg(long)]
    pub json: bool,

    /// No progress on stderr (this command prints none; accepted so that
    /// `--quiet` works on every command).
    #[arg(long)]
    pub quiet: bool,
}

/// `keel bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Which benchmark.
    #[command(subcommand)]
    pub command: BenchCommand,
}

/// The benchmarks.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Run the loop workloads (Mandelbrot, LavaMD-like) with every loop
    /// schedule on the global pool; compare with the ideal T_serial / P.
    ///
    /// Each workload runs --reps interleaved rounds: a round runs the body
    /// sequentially once (the reference T_serial) and one instance per
    /// schedule, the order rotating from round to round, so that the
    /// reference sees the same machine phases (frequency, neighbours) as
    /// the schedules. The headline "÷ ideal (same round)" is the median
    /// over rounds of T_par / (T_serial / P) with the round's own
    /// T_serial: 1.00 is perfect, and below 0.97 is flagged as a
    /// measurement artefact. "÷ best" is the median over rounds of T_par
    /// over the fastest schedule of the same round, at least 1 by
    /// construction. In --json: ratio_to_ideal_same_round and
    /// ratio_to_best per row, t_serial and t_serial_range per workload.
    Loops(BenchLoopsArgs),
    /// The FastFlow ARRS paper's farm experiments (a)–(e) and the per-item
    /// cost of dispatch; S = ⟨t_rr⟩/⟨t_X⟩ with its standard error.
    Farm(BenchFarmArgs),
    /// Auto4OMP's evaluation: every portfolio schedule (default and expert
    /// chunk), Oracle, ManualBest and the four selection methods on the
    /// time-stepping workloads, as % degradation relative to Oracle.
    Auto(BenchAutoArgs),
    /// The Charm++ + OpenMP paper's tables on over-decomposed objects:
    /// Lassen-like under No LB, Greedy, stealing and both; Greedy's period;
    /// a balanced stencil; lb_test under every mapping policy.
    Objects(BenchObjectsArgs),
}

/// `keel bench objects`.
#[derive(Debug, Args)]
pub struct BenchObjectsArgs {
    /// Worker threads, one PU each (default 2).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,

    /// Runs per configuration (default 3, 1 with --quick).
    #[arg(long, value_name = "N")]
    pub reps: Option<usize>,

    /// Scaled-down work (seconds in all).
    #[arg(long)]
    pub quick: bool,

    /// No progress bar on stderr (none is drawn when stderr is not a terminal).
    #[arg(long)]
    pub quiet: bool,

    /// Also write a plot to FILE (SVG): each table's total time per configuration, one line per run.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,

    /// Print one JSON document instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// `keel bench auto`.
#[derive(Debug, Args)]
pub struct BenchAutoArgs {
    /// A stepped workload spec (`mandelbrot-zoom`, `lavamd-steps`, `sphynx`,
    /// `gromacs`, `phase-change`, `stream`, `triangular`, `wavefront`,
    /// `short-balanced`, `sparse`, `multi-loop`, with `:key=value`
    /// parameters); repeat for several (default: the set `default`, the first
    /// five with their pinned defaults).
    #[arg(short, long = "workload", value_name = "SPEC")]
    pub workloads: Vec<String>,

    /// Workloads as one comma-separated list (`stream,wavefront`); a
    /// `key=value` after a comma continues the spec before it
    /// (`stream:elements=100000,steps=20,sparse`). Run after --set's and -w's.
    #[arg(long = "workloads", value_name = "LIST")]
    pub workload_lists: Vec<String>,

    /// A named set of workloads: `default` (the five the selection was built
    /// on, about 35 minutes) or `characters` (stream, triangular, wavefront,
    /// short-balanced, sparse, phase-change, multi-loop: about 15 minutes);
    /// with --quick, their small versions.
    #[arg(long, value_name = "NAME")]
    pub set: Option<String>,

    /// Repeats of every configuration (Oracle takes per-instance medians;
    /// default 3, 1 with --quick).
    #[arg(long, value_name = "N")]
    pub reps: Option<usize>,

    /// Two small workloads, one repeat, short timelines (seconds; `keel demo`).
    #[arg(long)]
    pub quick: bool,

    /// No progress bar on stderr (none is drawn when stderr is not a terminal).
    #[arg(long)]
    pub quiet: bool,

    /// Also write a plot to FILE (SVG): per workload, each loop instance's time under every method and Oracle, and the schedule auto,keel selected.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,

    /// Print one JSON document instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// `keel bench farm`.
#[derive(Debug, Args)]
pub struct BenchFarmArgs {
    /// Fewer sizes and smaller task sets (about a minute on 2 cores).
    #[arg(long)]
    pub quick: bool,

    /// Runs per point (the paper averages at least 10).
    #[arg(long, value_name = "N")]
    pub runs: Option<usize>,

    /// Run only these experiments: a, b, c, d, e, overhead (default: all).
    #[arg(short, long = "experiment", value_name = "ID")]
    pub experiments: Vec<String>,

    /// Worker threads of (a), (b), (d) and the per-item cost (default 2,
    /// the paper's setting here); (c) and (e) keep their own layouts. With
    /// more, (b) keeps one fast worker and its model becomes (s + p − 1)/p.
    #[arg(long = "threads", alias = "workers", value_name = "N")]
    pub workers: Option<usize>,

    /// No progress bar on stderr (none is drawn when stderr is not a terminal).
    #[arg(long)]
    pub quiet: bool,

    /// Also write a plot to FILE (SVG): S against tasks per policy, one panel per experiment.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,

    /// Print one JSON document instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// A thread count Keel's pool accepts: 1 to [`keel::pool::MAX_THREADS`].
fn pool_threads(text: &str) -> Result<usize, String> {
    let max = keel::pool::MAX_THREADS;
    match text.parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!(
            "expected a thread count from 1 to MAX_THREADS = {max}"
        )),
    }
}

/// `keel bench loops`.
#[derive(Debug, Args)]
pub struct BenchLoopsArgs {
    /// A loop schedule in KEEL_SCHEDULE syntax (`static`, `dynamic,4`,
    /// `awf-b`, …); repeat for one row each (default: every schedule).
    #[arg(short, long = "schedule", value_name = "SPEC")]
    pub schedules: Vec<String>,

    /// A loop workload spec, e.g. `mandelbrot:width=512,max-iter=2000` or
    /// `lavamd:boxes1d=11,gamma=0.2`; repeat for several (default: both
    /// with their defaults).
    #[arg(short, long = "workload", value_name = "SPEC")]
    pub workloads: Vec<String>,

    /// Threads of Keel's global pool the loops run on (default:
    /// `KEEL_NUM_THREADS`, else the cores); sets `KEEL_NUM_THREADS` for
    /// this run.
    #[arg(long, value_name = "N", value_parser = pool_threads)]
    pub threads: Option<usize>,

    /// Interleaved rounds, each one sequential run and one instance per
    /// schedule; medians over rounds are shown.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub reps: usize,

    /// The chunk parameter for every schedule (exact for static,k and
    /// dynamic,k, a minimum for the others).
    #[arg(long, value_name = "K")]
    pub chunk: Option<u64>,

    /// No progress bar on stderr (none is drawn when stderr is not a terminal).
    #[arg(long)]
    pub quiet: bool,

    /// Print one JSON document instead of tables.
    #[arg(long)]
    pub json: bool,
}
