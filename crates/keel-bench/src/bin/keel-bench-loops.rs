//! `keel-bench-loops`: prints the EPCC-style tables of Keel vs libgomp vs
//! rayon (or one JSON document with `--json`). See the `keel_bench` crate
//! docs for the method.
//!
//! libgomp reads `OMP_WAIT_POLICY` when it is loaded, before `main`; when
//! the libgomp column is built in and the variable is not `active`, the
//! program re-executes itself with `OMP_WAIT_POLICY=active` (and
//! `KEEL_WAIT_POLICY=active`, for symmetry; Keel's pool is built with
//! `WaitPolicy::Active` in code anyway).

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;
use keel_bench::{run, Config};

/// Keel vs libgomp vs rayon: EPCC schedbench overheads, empty-loop latency,
/// adaptive schedules and the clock, in one process.
#[derive(Debug, Parser)]
#[command(name = "keel-bench-loops", version, about)]
struct Args {
    /// Print one JSON document instead of tables.
    #[arg(long)]
    json: bool,
    /// A smoke run (seconds, not minutes): tiny loops, 2 rounds.
    #[arg(long)]
    quick: bool,
    /// Recorded rounds (default 31; 2 with --quick).
    #[arg(long)]
    rounds: Option<usize>,
    /// Threads of every runtime.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// EPCC's itersperthr (a power of two keeps rayon's mappings exact).
    #[arg(long)]
    iters_per_thread: Option<u64>,
    /// Target length of one sample, ms.
    #[arg(long)]
    sample_ms: Option<f64>,
    /// Print no progress on stderr.
    #[arg(long)]
    quiet: bool,
}

/// Re-executes with `OMP_WAIT_POLICY=active` unless it is already so.
#[cfg(feature = "libgomp")]
fn ensure_active_libgomp() -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    let active = std::env::var("OMP_WAIT_POLICY")
        .map(|v| v.trim().eq_ignore_ascii_case("active"))
        .unwrap_or(false);
    if active || std::env::var_os("KEEL_BENCH_REEXECUTED").is_some() {
        return Ok(());
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let err = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env("OMP_WAIT_POLICY", "active")
        .env("KEEL_WAIT_POLICY", "active")
        .env("KEEL_BENCH_REEXECUTED", "1")
        .exec();
    Err(format!(
        "cannot re-execute with OMP_WAIT_POLICY=active: {err}"
    ))
}

#[cfg(not(feature = "libgomp"))]
fn ensure_active_libgomp() -> Result<(), String> {
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Err(e) = ensure_active_libgomp() {
        let _ = writeln!(io::stderr(), "error: {e}");
        return ExitCode::from(2);
    }
    let mut config = if args.quick {
        Config::quick()
    } else {
        Config::full()
    };
    config.threads = args.threads;
    if let Some(r) = args.rounds {
        config.rounds = r;
    }
    if let Some(i) = args.iters_per_thread {
        config.iters_per_thread = i;
    }
    if let Some(ms) = args.sample_ms {
        config.sample_seconds = ms / 1000.0;
    }
    let quiet = args.quiet;
    let mut progress = |line: &str| {
        if !quiet {
            let _ = writeln!(io::stderr(), "keel-bench-loops: {line}");
        }
    };
    let report = match run(&config, &mut progress) {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(io::stderr(), "error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut out = io::stdout().lock();
    let written = if args.json {
        serde_json::to_writer_pretty(&mut out, &report)
            .map_err(io::Error::other)
            .and_then(|()| writeln!(out))
    } else {
        report.write_tables(&mut out)
    };
    match written.and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(io::stderr(), "error: {e}");
            ExitCode::from(2)
        }
    }
}
