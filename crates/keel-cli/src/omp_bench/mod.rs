//! `keel omp bench`: the drop-in OpenMP goals as a benchmark. C programs
//! with `schedule(runtime)` loops (shipped in `crates/keel-omp/bench`) are
//! compiled with `gcc -fopenmp -O2` (libgomp) or `clang -fopenmp -O2`
//! (LLVM's libomp) into a private temporary folder and run, one process
//! per configuration and round, in an order that rotates from round to
//! round: the OpenMP runtime's own schedules (`OMP_SCHEDULE`, no preload)
//! and Keel's (`libkeel_omp.so` preloaded, `KEEL_SCHEDULE`). Each
//! program prints the time inside its loops and a checksum that every
//! configuration must reproduce (an iteration run twice or skipped changes
//! it). Ratios are medians of paired per-round ratios with their 95 %
//! interval (docs/conventions.md, Measuring).

mod programs;
mod summary;
mod table;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use clap::Args;
use serde::Serialize;
use wait_timeout::ChildExt;

use crate::error::CliError;
use crate::progress;
use programs::{Program, RunOutput};
use summary::{Goal, Ratio};

/// `keel omp bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Rounds: every configuration runs once per round (at least 2; 6 or
    /// more for 95 % intervals) [default: 9, or 2 with --quick].
    #[arg(long)]
    pub rounds: Option<usize>,
    /// Run only these workloads (comma-separated): mandelbrot-zoom,
    /// lavamd-steps, balanced, short-loops (default: all).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub workloads: Vec<String>,
    /// OpenMP threads (`OMP_NUM_THREADS`).
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// The compiler of the programs, which chooses the OpenMP runtime
    /// their loops run on: gcc (libgomp) or clang (LLVM's libomp).
    #[arg(long, value_enum, default_value_t = Compiler::Gcc)]
    pub compiler: Compiler,
    /// A demonstration of the table's form: two steps per program (the
    /// short loops: 1000 instances) and 2 rounds unless --rounds is given.
    #[arg(long)]
    pub quick: bool,
    /// The preload library (default: `libkeel_omp.so` next to this
    /// executable, or in its `deps/` folder).
    #[arg(long, value_name = "PATH")]
    pub library: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// Which compiler builds the programs, and so which OpenMP runtime runs
/// their loops when Keel does not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Compiler {
    /// `gcc -fopenmp`: GCC's libgomp.
    Gcc,
    /// `clang -fopenmp`: LLVM's libomp.
    Clang,
}

impl Compiler {
    /// The compiler's command.
    pub fn command(self) -> &'static str {
        match self {
            Compiler::Gcc => "gcc",
            Compiler::Clang => "clang",
        }
    }

    /// The OpenMP runtime its `-fopenmp` links.
    pub fn runtime(self) -> &'static str {
        match self {
            Compiler::Gcc => "libgomp",
            Compiler::Clang => "libomp",
        }
    }

    /// What the runtime runs a `schedule(runtime)` loop under when
    /// `OMP_SCHEDULE` is unset: libgomp's `run-sched-var` starts as
    /// `dynamic,1`, libomp's as `static` (`kmp_sch_default`).
    pub fn default_schedule(self) -> &'static str {
        match self {
            Compiler::Gcc => "dynamic,1",
            Compiler::Clang => "static",
        }
    }
}

/// Who runs a program's `schedule(runtime)` loops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "runtime", content = "schedule", rename_all = "snake_case")]
pub enum Runtime {
    /// The OpenMP runtime alone (libgomp or libomp), with `OMP_SCHEDULE`
    /// set to this (unset: `None`, the runtime's default).
    Native(Option<&'static str>),
    /// The runtime with `libkeel_omp.so` preloaded and `KEEL_SCHEDULE` set.
    Keel(&'static str),
}

impl Runtime {
    /// The configuration's name in the report, `native` naming the
    /// OpenMP runtime (`libgomp static`, `libomp default`, `keel auto`).
    pub fn name(&self, native: &str) -> String {
        match self {
            Runtime::Native(Some(s)) => format!("{native} {s}"),
            Runtime::Native(None) => format!("{native} default"),
            Runtime::Keel(s) => format!("keel {s}"),
        }
    }
}

/// The runtime's fixed schedules the goals compare with.
const NATIVE_FIXED: [Runtime; 3] = [
    Runtime::Native(Some("static")),
    Runtime::Native(Some("dynamic")),
    Runtime::Native(Some("guided")),
];

/// Keel's fixed schedules Oracle chooses from: OpenMP's three and the
/// adaptive subset of the portfolio chosen before measuring (AF and
/// AWF-B, the adaptive families `auto` selects among most often).
const KEEL_FIXED: [Runtime; 5] = [
    Runtime::Keel("static"),
    Runtime::Keel("dynamic"),
    Runtime::Keel("guided"),
    Runtime::Keel("af"),
    Runtime::Keel("awf-b"),
];

const NATIVE_DEFAULT: Runtime = Runtime::Native(None);
const KEEL_AUTO: Runtime = Runtime::Keel("auto");

/// The configurations a workload runs under.
fn configurations(workload: &str) -> Vec<Runtime> {
    match workload {
        "balanced" => vec![NATIVE_FIXED[0], KEEL_FIXED[0]],
        "short-loops" => vec![NATIVE_FIXED[1], KEEL_FIXED[1]],
        _ => {
            let mut all = NATIVE_FIXED.to_vec();
            all.push(NATIVE_DEFAULT);
            all.extend(KEEL_FIXED);
            all.push(KEEL_AUTO);
            all
        }
    }
}

/// One configuration's times.
#[derive(Clone, Debug, Serialize)]
pub struct ConfigReport {
    /// `libgomp static`, `keel auto`, ...
    pub name: String,
    /// Who ran the loops.
    pub runtime: Runtime,
    /// Seconds inside the loops, per round (round order).
    pub seconds: Vec<f64>,
    /// Their median.
    pub median: f64,
    /// Paired per-round ratio to the workload's reference.
    pub ratio: Option<Ratio>,
}

/// One workload's results.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadReport {
    /// Its name.
    pub name: String,
    /// Its fixed sizes.
    pub sizes: String,
    /// The checksum every configuration printed.
    pub checksum: u64,
    /// What the ratios divide by.
    pub reference: String,
    /// Each configuration.
    pub configs: Vec<ConfigReport>,
    /// Oracle held out per round (for the workloads with Keel's fixed
    /// schedules), and the schedule it chose in each round.
    pub oracle_held_out: Option<OracleReport>,
    /// The goals.
    pub goals: Vec<Goal>,
}

/// The held-out Oracle of a workload.
#[derive(Clone, Debug, Serialize)]
pub struct OracleReport {
    /// Seconds per round.
    pub seconds: Vec<f64>,
    /// Their median.
    pub median: f64,
    /// The configuration chosen for each round.
    pub chosen: Vec<String>,
}

/// The whole report.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// The programs' compiler.
    pub compiler: Compiler,
    /// The OpenMP runtime it links (`libgomp`, `libomp`).
    pub openmp_runtime: &'static str,
    /// OpenMP threads.
    pub threads: usize,
    /// Rounds.
    pub rounds: usize,
    /// The workloads.
    pub workloads: Vec<WorkloadReport>,
}

/// `keel omp bench`.
pub fn run(args: &BenchArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let rounds = args.rounds.unwrap_or(if args.quick { 2 } else { 9 });
    if !(2..=1000).contains(&rounds) {
        return Err(CliError::Usage(format!(
            "--rounds {rounds}: between 2 and 1000 (the held-out Oracle needs two)"
        )));
    }
    if !(1..=1024).contains(&args.threads) {
        return Err(CliError::Usage(format!(
            "--threads {}: between 1 and 1024",
            args.threads
        )));
    }
    for name in &args.workloads {
        if !programs::WORKLOADS.contains(&name.as_str()) {
            return Err(CliError::Usage(format!(
                "--workloads: unknown workload `{name}`; valid: {}",
                programs::WORKLOADS.join(", ")
            )));
        }
    }
    let programs: Vec<Program> = programs::programs(args.quick)?
        .into_iter()
        .filter(|p| args.workloads.is_empty() || args.workloads.iter().any(|w| w == p.name))
        .collect();
    let library = crate::omp::library(args.library.as_deref())?;
    // A private folder (mode 0700, unpredictable name): the benchmark may
    // run as root, and the executables it runs must be the ones it built.
    let dir = tempfile::Builder::new()
        .prefix("keel-omp-bench")
        .tempdir()?;
    let executables = programs::compile(&programs, dir.path(), args.compiler)?;
    let native = args.compiler.runtime();
    let total: usize = programs
        .iter()
        .map(|p| configurations(p.name).len() * rounds)
        .sum();
    let bar = progress::bar(total as u64, "omp bench", args.quiet);
    let mut workloads = Vec::new();
    for (program, exe) in programs.iter().zip(&executables) {
        let configs = configurations(program.name);
        let mut times = vec![Vec::with_capacity(rounds); configs.len()];
        let mut checksum = None;
        for round in 0..rounds {
            for k in 0..configs.len() {
                let c = (round + k) % configs.len();
                bar.set_message(format!("{} {}", program.name, configs[c].name(native)));
                let got = run_once(exe, program, configs[c], args.threads, &library, native)?;
                match checksum {
                    None => checksum = Some(got.checksum),
                    Some(sum) if sum != got.checksum => {
                        return Err(CliError::Runtime(format!(
                            "{} under {}: checksum {} differs from {sum}: some iterations ran twice or not at all",
                            program.name,
                            configs[c].name(native),
                            got.checksum
                        )))
                    }
                    Some(_) => {}
                }
                times[c].push(got.seconds);
                bar.inc(1);
            }
        }
        workloads.push(summarise(
            program,
            &configs,
            &times,
            checksum.unwrap_or(0),
            args.compiler,
        ));
    }
    bar.finish_and_clear();
    let report = BenchReport {
        compiler: args.compiler,
        openmp_runtime: native,
        threads: args.threads,
        rounds,
        workloads,
    };
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &report)?;
        writeln!(out)?;
    } else {
        table::write_report(out, &report)?;
    }
    Ok(())
}

/// Runs `exe` once under `runtime`.
fn run_once(
    exe: &Path,
    program: &Program,
    runtime: Runtime,
    threads: usize,
    library: &Path,
    native: &str,
) -> Result<RunOutput, CliError> {
    let mut command = Command::new(exe);
    command
        .args(&program.args)
        .env("OMP_NUM_THREADS", threads.to_string())
        .env("OMP_DYNAMIC", "false");
    // Nothing inherited may change what runs: each configuration sets
    // exactly its own variables.
    // (libomp's OMPT, through which Keel sees its teams, stays enabled.)
    for var in [
        "LD_PRELOAD",
        "OMP_SCHEDULE",
        "KEEL_SCHEDULE",
        "KEEL_OMP_TAKE",
        "KEEL_TRACE",
        "OMP_TOOL",
        "OMP_TOOL_LIBRARIES",
    ] {
        command.env_remove(var);
    }
    match runtime {
        Runtime::Native(Some(s)) => {
            command.env("OMP_SCHEDULE", s);
        }
        Runtime::Native(None) => {}
        Runtime::Keel(s) => {
            command.env("LD_PRELOAD", library).env("KEEL_SCHEDULE", s);
        }
    }
    let what = format!("{} under {}", program.name, runtime.name(native));
    let output = output_within(&mut command, RUN_LIMIT)
        .map_err(|e| CliError::Runtime(format!("{what}: {e}")))?;
    if !output.status.success() {
        return Err(CliError::Runtime(format!(
            "{what} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    programs::parse_output(&String::from_utf8_lossy(&output.stdout))
        .map_err(|e| CliError::Runtime(format!("{what}: {e}")))
}

/// How long one run of a benchmark program may take: every workload's run
/// is well under a second on a quiet machine, so a run past this bound is
/// a hung program (or a preload that deadlocked), killed and reported.
const RUN_LIMIT: Duration = Duration::from_secs(300);

/// Runs `command` to completion, its output captured, killing it after
/// `limit`.
fn output_within(command: &mut Command, limit: Duration) -> Result<std::process::Output, String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run it: {e}"))?;
    // Drain both pipes while waiting, so that a chatty program cannot
    // block on a full pipe.
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let out = std::thread::spawn(move || {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut buf).map(|_| buf)
    });
    let err = std::thread::spawn(move || {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut stderr, &mut buf).map(|_| buf)
    });
    let status = match child.wait_timeout(limit).map_err(|e| e.to_string())? {
        Some(status) => status,
        None => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "killed after {} s without finishing",
                limit.as_secs()
            ));
        }
    };
    let collect = |h: std::thread::JoinHandle<std::io::Result<Vec<u8>>>| {
        h.join()
            .map_err(|_| "reading its output failed".to_string())?
            .map_err(|e| e.to_string())
    };
    Ok(std::process::Output {
        status,
        stdout: collect(out)?,
        stderr: collect(err)?,
    })
}

/// Medians, ratios, Oracle and goals of one workload.
fn summarise(
    program: &Program,
    configs: &[Runtime],
    times: &[Vec<f64>],
    checksum: u64,
    compiler: Compiler,
) -> WorkloadReport {
    let native = compiler.runtime();
    let find = |r: Runtime| configs.iter().position(|&c| c == r);
    let median = |t: &[f64]| keel_policy::stats::median_of(t).unwrap_or(f64::NAN);
    let fixed: Vec<usize> = KEEL_FIXED.iter().filter_map(|&r| find(r)).collect();
    let oracle = (fixed.len() == KEEL_FIXED.len())
        .then(|| {
            let tables: Vec<&[f64]> = fixed.iter().map(|&k| times[k].as_slice()).collect();
            summary::held_out_oracle(&tables)
        })
        .flatten()
        .map(|(seconds, chosen)| OracleReport {
            median: median(&seconds),
            chosen: chosen
                .iter()
                .map(|&s| configs[fixed[s]].name(native))
                .collect(),
            seconds,
        });
    // The reference every row divides by: the held-out Oracle where there
    // is one, else the first (libgomp) configuration.
    let (reference_name, reference) = match &oracle {
        Some(o) => ("Oracle held out".to_string(), o.seconds.clone()),
        None => (configs[0].name(native), times[0].clone()),
    };
    let config_reports = configs
        .iter()
        .zip(times)
        .map(|(c, t)| ConfigReport {
            name: c.name(native),
            runtime: *c,
            seconds: t.clone(),
            median: median(t),
            ratio: Ratio::paired(t, &reference),
        })
        .collect();
    let ratio = |a: Runtime, b: Runtime| Ratio::paired(&times[find(a)?], &times[find(b)?]);
    let mut goals = Vec::new();
    match program.name {
        "balanced" => goals.push(summary::at_most(
            format!("keel static (preloaded) within 2 % of {native} static"),
            ratio(KEEL_FIXED[0], NATIVE_FIXED[0]),
            1.02,
        )),
        "short-loops" => goals.push(summary::at_most(
            format!("keel dynamic (preloaded) at most 1.2x {native} dynamic"),
            ratio(KEEL_FIXED[1], NATIVE_FIXED[1]),
            1.2,
        )),
        _ => {
            let auto = find(KEEL_AUTO).map(|k| times[k].as_slice());
            goals.push(summary::at_most(
                "keel auto within 3 % of Oracle held out".into(),
                auto.zip(oracle.as_ref())
                    .and_then(|(a, o)| Ratio::paired(a, &o.seconds)),
                1.03,
            ));
            let best = NATIVE_FIXED
                .iter()
                .filter_map(|&r| Some((r, median(&times[find(r)?]))))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(r, _)| r);
            if let Some(best) = best {
                goals.push(summary::not_slower(
                    format!(
                        "keel auto no slower than {native}'s best fixed ({}) beyond noise",
                        best.name(native)
                    ),
                    ratio(KEEL_AUTO, best),
                ));
                goals.push(summary::faster_where_trailing(
                    format!(
                        "keel auto faster than {native} default ({}) where it trails its best beyond noise",
                        compiler.default_schedule()
                    ),
                    native,
                    ratio(KEEL_AUTO, NATIVE_DEFAULT),
                    ratio(NATIVE_DEFAULT, best),
                ));
            }
        }
    }
    WorkloadReport {
        name: program.name.to_string(),
        sizes: program.sizes.clone(),
        checksum,
        reference: reference_name,
        configs: config_reports,
        oracle_held_out: oracle,
        goals,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_past_its_limit_is_killed_and_reported() {
        let start = std::time::Instant::now();
        let err = output_within(
            Command::new("sh").args(["-c", "sleep 30"]),
            Duration::from_millis(200),
        )
        .unwrap_err();
        assert!(err.contains("killed after"), "{err}");
        assert!(start.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_run_within_its_limit_gives_its_output_and_status() {
        let out = output_within(
            Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]),
            Duration::from_secs(60),
        )
        .unwrap();
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
        assert_eq!(out.status.code(), Some(3));
    }
}
