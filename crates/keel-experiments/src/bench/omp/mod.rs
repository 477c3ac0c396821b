//! The drop-in OpenMP goals as a benchmark (`keel omp bench`). C programs
//! with `schedule(runtime)` loops (shipped in `crates/keel-experiments/programs`) are
//! compiled with `gcc -fopenmp -O2` (libgomp) or `clang -fopenmp -O2`
//! (LLVM's libomp), or their Fortran versions with `gfortran -fopenmp -O2`
//! (libgomp), into a private temporary folder and run, one process
//! per configuration and round, in an order that rotates from round to
//! round: the OpenMP runtime's own schedules (`OMP_SCHEDULE`, no preload)
//! and Keel's (`libkeel_omp.so` preloaded, `KEEL_SCHEDULE`). Each
//! program prints the time inside its loops and a checksum that every
//! configuration must reproduce (an iteration run twice or skipped changes
//! it); the `unseen` workloads also print each loop's time, and their goals
//! are per loop (`per_loop.rs`). Ratios are medians of paired per-round
//! ratios with their 95 % interval (docs/conventions.md, Measuring).

mod per_loop;
mod programs;
mod summary;
mod unseen;

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::Serialize;
use wait_timeout::ChildExt;

use super::Progress;
use crate::error::ExperimentError;
use programs::{Program, RunOutput};

pub use per_loop::PerLoopReport;
pub use summary::{Goal, Ratio, Verdict};

/// What `keel omp bench` runs.
#[derive(Clone, Debug)]
pub struct OmpBenchConfig {
    /// Rounds: every configuration runs once per round (2 to 1000; 6 or
    /// more for 95 % intervals); `None`: 9, or 2 when `quick`.
    pub rounds: Option<usize>,
    /// The workloads by name, `unseen` or `all` (empty: the original four).
    pub workloads: Vec<String>,
    /// OpenMP threads (`OMP_NUM_THREADS`), 1 to 1024.
    pub threads: usize,
    /// The programs' compiler.
    pub compiler: Compiler,
    /// Two steps per program and 2 rounds unless `rounds` is given.
    pub quick: bool,
}

/// Which compiler builds the programs, and so which OpenMP runtime runs
/// their loops when Keel does not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Compiler {
    /// `gcc -fopenmp`: GCC's libgomp.
    Gcc,
    /// `clang -fopenmp`: LLVM's libomp.
    Clang,
    /// `gfortran -fopenmp`: GCC's libgomp, running the Fortran versions.
    Gfortran,
}

impl Compiler {
    /// The compiler's command.
    pub fn command(self) -> &'static str {
        match self {
            Compiler::Gcc => "gcc",
            Compiler::Clang => "clang",
            Compiler::Gfortran => "gfortran",
        }
    }

    /// The OpenMP runtime its `-fopenmp` links.
    pub fn runtime(self) -> &'static str {
        match self {
            Compiler::Gcc | Compiler::Gfortran => "libgomp",
            Compiler::Clang => "libomp",
        }
    }

    /// What the runtime runs a `schedule(runtime)` loop under when
    /// `OMP_SCHEDULE` is unset: libgomp's `run-sched-var` starts as
    /// `dynamic,1`, libomp's as `static` (`kmp_sch_default`).
    pub fn default_schedule(self) -> &'static str {
        match self {
            Compiler::Gcc | Compiler::Gfortran => "dynamic,1",
            Compiler::Clang => "static",
        }
    }
}

/// Who runs a program's `schedule(runtime)` loops.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "runtime", content = "schedule", rename_all = "snake_case")]
pub enum Runtime {
    /// The OpenMP runtime alone (libgomp or libomp), with `OMP_SCHEDULE`
    /// set to this (unset: `None`, the runtime's default).
    Native(Option<Cow<'static, str>>),
    /// The runtime with `libkeel_omp.so` preloaded and `KEEL_SCHEDULE` set.
    Keel(Cow<'static, str>),
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

const fn native(schedule: &'static str) -> Runtime {
    Runtime::Native(Some(Cow::Borrowed(schedule)))
}

const fn keel(schedule: &'static str) -> Runtime {
    Runtime::Keel(Cow::Borrowed(schedule))
}

/// The runtime's fixed schedules the goals compare with.
static NATIVE_FIXED: [Runtime; 3] = [native("static"), native("dynamic"), native("guided")];

/// Keel's fixed schedules Oracle chooses from: OpenMP's three and the
/// adaptive subset of the portfolio chosen before measuring (AF and
/// AWF-B, the adaptive families `auto` selects among most often).
static KEEL_FIXED: [Runtime; 5] = [
    keel("static"),
    keel("dynamic"),
    keel("guided"),
    keel("af"),
    keel("awf-b"),
];

static NATIVE_DEFAULT: Runtime = Runtime::Native(None);
static KEEL_AUTO: Runtime = keel("auto");

/// The configurations a workload runs under: for the `unseen` workloads
/// also the runtime's `dynamic,k`, `k` from the program's largest loop
/// instance and the thread count (`unseen::chunk`).
fn configurations(program: &Program, threads: usize) -> Vec<Runtime> {
    match program.name {
        "balanced" => vec![NATIVE_FIXED[0].clone(), KEEL_FIXED[0].clone()],
        "short-loops" => vec![NATIVE_FIXED[1].clone(), KEEL_FIXED[1].clone()],
        _ => {
            let mut all = NATIVE_FIXED.to_vec();
            if let Some(largest) = program.largest_instance {
                let k = unseen::chunk(largest, threads);
                all.insert(2, Runtime::Native(Some(format!("dynamic,{k}").into())));
            }
            all.push(NATIVE_DEFAULT.clone());
            all.extend(KEEL_FIXED.iter().cloned());
            all.push(KEEL_AUTO.clone());
            all
        }
    }
}

/// The workloads `--workloads` names, in report order: the original four
/// when none is named, `unseen` standing for the seven others and `all`
/// for the eleven.
fn chosen_workloads(names: &[String]) -> Result<Vec<&'static str>, ExperimentError> {
    let every: Vec<&'static str> = programs::WORKLOADS
        .iter()
        .chain(&unseen::WORKLOADS)
        .copied()
        .collect();
    if names.is_empty() {
        return Ok(programs::WORKLOADS.to_vec());
    }
    for name in names {
        if !(name == "all" || name == "unseen" || every.contains(&name.as_str())) {
            return Err(ExperimentError::Invalid(format!(
                "--workloads: unknown workload `{name}`; valid: {}, or unseen (the last seven), or all",
                every.join(", ")
            )));
        }
    }
    let asked = |w: &str| {
        names
            .iter()
            .any(|n| n == w || n == "all" || (n == "unseen" && unseen::WORKLOADS.contains(&w)))
    };
    Ok(every.into_iter().filter(|w| asked(w)).collect())
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
    /// Each loop's times, for the programs that time their loops one by
    /// one (empty otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub loops: Vec<LoopTimes>,
}

/// One loop's times under one configuration.
#[derive(Clone, Debug, Serialize)]
pub struct LoopTimes {
    /// The loop's name.
    pub name: String,
    /// Seconds per round.
    pub seconds: Vec<f64>,
    /// Their median.
    pub median: f64,
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
    /// Per loop, for the programs that time their loops: each loop's best
    /// fixed configuration and `auto` against it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_loop: Option<per_loop::PerLoopReport>,
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
    /// The workloads asked for and not run, and why (under gfortran, those
    /// without a Fortran version).
    pub skipped: Vec<Skipped>,
}

/// A workload not run.
#[derive(Clone, Debug, Serialize)]
pub struct Skipped {
    /// Its name.
    pub workload: String,
    /// Why.
    pub reason: String,
}

/// Runs the benchmark: compiles the programs into a private folder, runs
/// every configuration once per round in rotating order, and summarises.
/// `library` locates `libkeel_omp.so` once the configuration is known to
/// be valid; `progress` hears the number of runs, then one step per run.
pub fn run(
    args: &OmpBenchConfig,
    library: &dyn Fn() -> Result<PathBuf, ExperimentError>,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<BenchReport, ExperimentError> {
    let rounds = args.rounds.unwrap_or(if args.quick { 2 } else { 9 });
    if !(2..=1000).contains(&rounds) {
        return Err(ExperimentError::Invalid(format!(
            "--rounds {rounds}: between 2 and 1000 (the held-out Oracle needs two)"
        )));
    }
    if !(1..=1024).contains(&args.threads) {
        return Err(ExperimentError::Invalid(format!(
            "--threads {}: between 1 and 1024",
            args.threads
        )));
    }
    let chosen = chosen_workloads(&args.workloads)?;
    let (programs, skipped): (Vec<Program>, Vec<Program>) = programs::programs(args.quick)?
        .into_iter()
        .chain(unseen::programs(args.quick))
        .filter(|p| chosen.contains(&p.name))
        .partition(|p| args.compiler != Compiler::Gfortran || p.fortran.is_some());
    let skipped: Vec<Skipped> = skipped
        .into_iter()
        .map(|p| Skipped {
            workload: p.name.to_string(),
            reason: format!("no Fortran version of {}.c", p.stem),
        })
        .collect();
    if programs.is_empty() {
        let fortran: Vec<&str> = programs::programs(false)?
            .into_iter()
            .chain(unseen::programs(false))
            .filter(|p| p.fortran.is_some())
            .map(|p| p.name)
            .collect();
        return Err(ExperimentError::Invalid(format!(
            "--compiler gfortran: none of the workloads asked has a Fortran version; those that do: {}",
            fortran.join(", ")
        )));
    }
    let library = library()?;
    // A private folder (mode 0700, unpredictable name): the benchmark may
    // run as root, and the executables it runs must be the ones it built.
    let dir = tempfile::Builder::new()
        .prefix("keel-omp-bench")
        .tempdir()
        .map_err(|e| ExperimentError::Failed(format!("cannot make a private folder: {e}")))?;
    let executables = programs::compile(&programs, dir.path(), args.compiler)?;
    let native = args.compiler.runtime();
    let total: usize = programs
        .iter()
        .map(|p| configurations(p, args.threads).len() * rounds)
        .sum();
    progress(Progress::Total(total as u64));
    let mut workloads = Vec::new();
    for (program, exe) in programs.iter().zip(&executables) {
        let configs = configurations(program, args.threads);
        let mut times = vec![Vec::with_capacity(rounds); configs.len()];
        // [config][loop][round], the loops named by the first run.
        let mut loop_names: Option<Vec<String>> = None;
        let mut loop_times: Vec<Vec<Vec<f64>>> = vec![Vec::new(); configs.len()];
        let mut checksum = None;
        for round in 0..rounds {
            for k in 0..configs.len() {
                let c = (round + k) % configs.len();
                let got = run_once(exe, program, &configs[c], args.threads, &library, native)?;
                match checksum {
                    None => checksum = Some(got.checksum),
                    Some(sum) if sum != got.checksum => {
                        return Err(ExperimentError::Failed(format!(
                            "{} under {}: checksum {} differs from {sum}: some iterations ran twice or not at all",
                            program.name,
                            configs[c].name(native),
                            got.checksum
                        )))
                    }
                    Some(_) => {}
                }
                let names: Vec<String> = got.loops.iter().map(|(n, _)| n.clone()).collect();
                let expected = loop_names.get_or_insert_with(|| names.clone());
                if *expected != names {
                    return Err(ExperimentError::Failed(format!(
                        "{} under {}: printed loops {names:?}, another run {expected:?}",
                        program.name,
                        configs[c].name(native)
                    )));
                }
                loop_times[c].resize(names.len(), Vec::with_capacity(rounds));
                for (l, (_, seconds)) in got.loops.iter().enumerate() {
                    loop_times[c][l].push(*seconds);
                }
                times[c].push(got.seconds);
                progress(Progress::Step(&format!(
                    "{} {}",
                    program.name,
                    configs[c].name(native)
                )));
            }
        }
        workloads.push(summarise(
            program,
            &configs,
            &times,
            (loop_names.as_deref().unwrap_or(&[]), &loop_times),
            checksum.unwrap_or(0),
            args.compiler,
        ));
    }
    Ok(BenchReport {
        compiler: args.compiler,
        openmp_runtime: native,
        threads: args.threads,
        rounds,
        workloads,
        skipped,
    })
}

/// Runs `exe` once under `runtime`.
fn run_once(
    exe: &Path,
    program: &Program,
    runtime: &Runtime,
    threads: usize,
    library: &Path,
    native: &str,
) -> Result<RunOutput, ExperimentError> {
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
            command.env("OMP_SCHEDULE", s.as_ref());
        }
        Runtime::Native(None) => {}
        Runtime::Keel(s) => {
            command
                .env("LD_PRELOAD", library)
                .env("KEEL_SCHEDULE", s.as_ref());
        }
    }
    let what = format!("{} under {}", program.name, runtime.name(native));
    let output = output_within(&mut command, RUN_LIMIT)
        .map_err(|e| ExperimentError::Failed(format!("{what}: {e}")))?;
    if !output.status.success() {
        return Err(ExperimentError::Failed(format!(
            "{what} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    programs::parse_output(&String::from_utf8_lossy(&output.stdout))
        .map_err(|e| ExperimentError::Failed(format!("{what}: {e}")))
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

/// Medians, ratios, Oracle and goals of one workload; `loops` holds the
/// loops' names and their times `[config][loop][round]` (none for the
/// programs that do not time their loops).
fn summarise(
    program: &Program,
    configs: &[Runtime],
    times: &[Vec<f64>],
    loops: (&[String], &[Vec<Vec<f64>>]),
    checksum: u64,
    compiler: Compiler,
) -> WorkloadReport {
    let native = compiler.runtime();
    let find = |r: &Runtime| configs.iter().position(|c| c == r);
    let median = |t: &[f64]| keel_policy::stats::median_of(t).unwrap_or(f64::NAN);
    let fixed: Vec<usize> = KEEL_FIXED.iter().filter_map(find).collect();
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
    let (loop_names, loop_times) = loops;
    let config_reports = configs
        .iter()
        .zip(times)
        .zip(loop_times)
        .map(|((c, t), per_loop)| ConfigReport {
            name: c.name(native),
            runtime: c.clone(),
            seconds: t.clone(),
            median: median(t),
            ratio: Ratio::paired(t, &reference),
            loops: loop_names
                .iter()
                .zip(per_loop)
                .map(|(name, seconds)| LoopTimes {
                    name: name.clone(),
                    median: median(seconds),
                    seconds: seconds.clone(),
                })
                .collect(),
        })
        .collect();
    let ratio = |a: &Runtime, b: &Runtime| Ratio::paired(&times[find(a)?], &times[find(b)?]);
    let mut goals = Vec::new();
    let mut per_loop_report = None;
    match program.name {
        _ if program.largest_instance.is_some() => {
            // Every fixed configuration, the runtime's and Keel's: all but
            // auto.
            let names: Vec<String> = configs.iter().map(|c| c.name(native)).collect();
            let auto = find(&KEEL_AUTO);
            let fixed: Vec<usize> = (0..configs.len()).filter(|&k| Some(k) != auto).collect();
            if let Some((report, loop_goals)) = per_loop::summarise(
                &per_loop::Times {
                    configs: &names,
                    loops: loop_names,
                    whole: times,
                    per_loop: loop_times,
                },
                &fixed,
                auto,
                find(&NATIVE_FIXED[0]),
            ) {
                per_loop_report = Some(report);
                goals = loop_goals;
            }
        }
        "balanced" => goals.push(summary::at_most(
            format!("keel static (preloaded) within 2 % of {native} static"),
            ratio(&KEEL_FIXED[0], &NATIVE_FIXED[0]),
            1.02,
        )),
        "short-loops" => goals.push(summary::at_most(
            format!("keel dynamic (preloaded) at most 1.2x {native} dynamic"),
            ratio(&KEEL_FIXED[1], &NATIVE_FIXED[1]),
            1.2,
        )),
        _ => {
            let auto = find(&KEEL_AUTO).map(|k| times[k].as_slice());
            goals.push(summary::at_most(
                "keel auto within 3 % of Oracle held out".into(),
                auto.zip(oracle.as_ref())
                    .and_then(|(a, o)| Ratio::paired(a, &o.seconds)),
                1.03,
            ));
            let best = NATIVE_FIXED
                .iter()
                .filter_map(|r| Some((r, median(&times[find(r)?]))))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(r, _)| r);
            if let Some(best) = best {
                goals.push(summary::not_slower(
                    format!(
                        "keel auto no slower than {native}'s best fixed ({}) beyond noise",
                        best.name(native)
                    ),
                    ratio(&KEEL_AUTO, best),
                ));
                goals.push(summary::faster_where_trailing(
                    format!(
                        "keel auto faster than {native} default ({}) where it trails its best beyond noise",
                        compiler.default_schedule()
                    ),
                    native,
                    ratio(&KEEL_AUTO, &NATIVE_DEFAULT),
                    ratio(&NATIVE_DEFAULT, best),
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
        per_loop: per_loop_report,
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
