//! `keel omp run`: runs a program compiled with GCC's, gfortran's or
//! clang's `-fopenmp` with `libkeel_omp.so` preloaded, so that its
//! `schedule(runtime)` loops (and, with `--take`, its `dynamic` and
//! `guided` loops) run under Keel's schedules (docs/openmp-interposer.md).

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::{Args, Subcommand};

use crate::error::CliError;

/// `keel omp`.
#[derive(Debug, Args)]
pub struct OmpArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: OmpCommand,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum OmpCommand {
    /// Run an OpenMP program (GCC / gfortran / clang: libgomp or libomp) with its loops
    /// dispatched by Keel: `keel omp run [--schedule S] -- ./app args`.
    /// The program's exit status is keel's.
    Run(RunArgs),
    /// The drop-in goals as a benchmark: C programs with `schedule(runtime)`
    /// loops, compiled with `gcc -fopenmp -O2`, run under libgomp's
    /// schedules and under Keel's (preloaded), round by round.
    Bench(crate::omp_bench::BenchArgs),
    /// Print the per-loop report of programs run with `keel omp run
    /// --report-file FILE` (or `KEEL_OMP_REPORT=FILE`): per loop (call
    /// site, with its symbol), instances, total time, mean LIB and the
    /// schedules it ran over time.
    Report(crate::omp_report::ReportArgs),
}

/// `keel omp run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The schedule of the loops Keel takes (`KEEL_SCHEDULE`): `auto`,
    /// `auto,expert`, `static`, `dynamic,4`, `af`, ... (default: the
    /// program's runtime schedule, else `auto`).
    #[arg(long, value_name = "SPEC")]
    pub schedule: Option<String>,
    /// Also take these loop kinds (`KEEL_OMP_TAKE`): `dynamic`, `guided`,
    /// or both, comma-separated.
    #[arg(long, value_name = "KINDS")]
    pub take: Option<String>,
    /// Record every loop Keel takes and print the per-loop report (on
    /// standard error) when the program ends.
    #[arg(long)]
    pub report: bool,
    /// Record every loop Keel takes and write the report to FILE (one
    /// JSON line per process; `keel omp report FILE` prints it). The
    /// file is created afresh.
    #[arg(long, value_name = "FILE")]
    pub report_file: Option<PathBuf>,
    /// Write Keel's trace of every chunk to FILE (`KEEL_TRACE`; Chrome's
    /// trace format, which ui.perfetto.dev and chrome://tracing open).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// The preload library (default: `libkeel_omp.so` next to this
    /// executable, or in its `deps/` folder).
    #[arg(long, value_name = "PATH")]
    pub library: Option<PathBuf>,
    /// The program and its arguments.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub program: Vec<OsString>,
}

const LIBRARY: &str = "libkeel_omp.so";

/// Runs the program; returns its exit status for keel to end with.
pub fn run(args: &RunArgs) -> Result<u8, CliError> {
    if let Some(spec) = &args.schedule {
        spec.parse::<keel::Schedule>()
            .map_err(|e| CliError::Usage(format!("--schedule {spec:?}: {e}")))?;
    }
    if let Some(take) = &args.take {
        for word in take.split(',').map(str::trim) {
            if !matches!(word, "dynamic" | "guided" | "runtime") {
                return Err(CliError::Usage(format!(
                    "--take: {word:?} is not a loop kind (dynamic, guided, runtime)"
                )));
            }
        }
    }
    let library = library(args.library.as_deref())?;
    let (program, rest) = args
        .program
        .split_first()
        .ok_or_else(|| CliError::Usage("no program to run".into()))?;
    let mut command = Command::new(program);
    command.args(rest);
    command.env(
        "LD_PRELOAD",
        preload_list(&library, std::env::var_os("LD_PRELOAD").as_deref()),
    );
    if let Some(spec) = &args.schedule {
        command.env("KEEL_SCHEDULE", spec);
    }
    if let Some(take) = &args.take {
        command.env("KEEL_OMP_TAKE", take);
    }
    if let Some(trace) = &args.trace {
        command.env("KEEL_TRACE", trace);
    }
    // A private folder (mode 0700) holds the report that is only printed.
    let private = match (&args.report_file, args.report) {
        (None, true) => Some(tempfile::Builder::new().prefix("keel-omp-").tempdir()?),
        _ => None,
    };
    let report_file = match (&args.report_file, &private) {
        (Some(file), _) => {
            keel::output::create_regular_file(file, "the loop report")
                .map_err(|e| CliError::Runtime(format!("--report-file {}: {e}", file.display())))?;
            Some(std::path::absolute(file)?)
        }
        (None, Some(dir)) => Some(dir.path().join("report.jsonl")),
        (None, None) => None,
    };
    if let Some(file) = &report_file {
        command.env("KEEL_OMP_REPORT", file);
    }
    let status = command.status().map_err(|e| {
        CliError::Runtime(format!("cannot run {}: {e}", Path::new(program).display()))
    })?;
    if let (true, Some(file)) = (args.report, &report_file) {
        print_report(file);
    }
    Ok(exit_code(status))
}

/// The report on standard error, after the program's own output; a
/// program that took no loop (or did not exit normally) gets a line
/// saying so instead.
fn print_report(file: &Path) {
    let mut err = std::io::stderr().lock();
    if !file.exists() {
        let _ = writeln!(
            err,
            "keel omp report: no loop report: no process under libkeel_omp.so took a loop and exited normally"
        );
        return;
    }
    let printed = crate::omp_report::read_reports(file).and_then(|mut reports| {
        crate::omp_report::name_call_sites(&mut reports);
        writeln!(err, "keel omp report:")?;
        crate::omp_report::write_tables(&reports, &mut err)
    });
    if let Err(e) = printed {
        let _ = writeln!(err, "keel omp report: {e}");
    }
}

/// The preload library: `given` if it is a file, else `libkeel_omp.so`
/// beside this executable; made absolute, as `LD_PRELOAD` needs.
pub(crate) fn library(given: Option<&Path>) -> Result<PathBuf, CliError> {
    let library = match given {
        Some(path) if path.is_file() => path.to_path_buf(),
        Some(path) => {
            return Err(CliError::Runtime(format!(
                "--library {}: no such file",
                path.display()
            )))
        }
        None => beside_executable()?,
    };
    Ok(std::fs::canonicalize(&library).unwrap_or(library))
}

/// `libkeel_omp.so` where cargo puts it beside the `keel` binary, or
/// where `scripts/install.sh` puts it (`PREFIX/lib`, beside `PREFIX/bin`).
fn beside_executable() -> Result<PathBuf, CliError> {
    let exe = std::env::current_exe()
        .map_err(|e| CliError::Runtime(format!("cannot find this executable: {e}")))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    // Beside it as cargo builds it; `lib/` beside `bin/` as installed.
    [
        dir.join(LIBRARY),
        dir.join("deps").join(LIBRARY),
        dir.join("../lib").join(LIBRARY),
    ]
        .into_iter()
        .find(|p| p.is_file())
        .ok_or_else(|| {
            CliError::Runtime(format!(
                "{LIBRARY} is not next to {} (build it with `cargo build --release -p keel-omp`, or pass --library)",
                exe.display()
            ))
        })
}

/// The library first, then whatever the environment preloaded already.
fn preload_list(library: &Path, existing: Option<&OsStr>) -> OsString {
    let mut list = library.as_os_str().to_owned();
    if let Some(existing) = existing.filter(|e| !e.is_empty()) {
        list.push(" ");
        list.push(existing);
    }
    list
}

/// The child's status as a shell reports it: its exit code, or 128 plus
/// the signal that ended it.
fn exit_code(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code & 0xff).unwrap_or(1),
        (None, Some(signal)) => u8::try_from((128 + signal) & 0xff).unwrap_or(1),
        (None, None) => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_goes_first_in_ld_preload() {
        let lib = Path::new("/x/libkeel_omp.so");
        assert_eq!(preload_list(lib, None), OsString::from("/x/libkeel_omp.so"));
        assert_eq!(
            preload_list(lib, Some(OsStr::new(""))),
            OsString::from("/x/libkeel_omp.so")
        );
        assert_eq!(
            preload_list(lib, Some(OsStr::new("liba.so"))),
            OsString::from("/x/libkeel_omp.so liba.so")
        );
    }
}
