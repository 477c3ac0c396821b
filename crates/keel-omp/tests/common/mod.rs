//! What the interposer's integration tests share: building the C, C++ and
//! Fortran programs of `tests/programs` with an OpenMP compiler into a
//! private temporary folder, running them with and without
//! `LD_PRELOAD=libkeel_omp.so` in a clean environment, and reading what
//! they print (`all ok`, `taken=N forwarded=M`).
//!
//! A test whose compiler is missing prints `SKIPPED:` on stderr, unless
//! `KEEL_TESTS_REQUIRE` names it (CI as root), in which case it fails.

#![allow(dead_code)] // each test file uses its own part

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

pub use keel_testkit::can_run;

/// The preload library cargo built beside this test.
pub fn library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    [deps, deps.parent().unwrap()]
        .iter()
        .map(|dir| dir.join("libkeel_omp.so"))
        .find(|lib| lib.exists())
        .unwrap_or_else(|| panic!("libkeel_omp.so not found beside {}", exe.display()))
}

/// This test binary's private scratch folder (created once, removed at
/// exit).
pub fn scratch() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

/// Builds `tests/programs/<source>` with `compiler -fopenmp -O2 extra..`;
/// `None` when the compiler or its OpenMP runtime is missing here.
pub fn build(compiler: &str, source: &str, extra: &[&str]) -> Option<PathBuf> {
    let out = scratch().join(format!("{compiler}-{source}").replace(['.', '+'], "_"));
    let built = Command::new(compiler)
        .args(["-fopenmp", "-O2"])
        .args(extra)
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/programs")
                .join(source),
        )
        .arg("-o")
        .arg(&out)
        .arg("-ldl")
        .output()
        .ok()?;
    if !built.status.success() {
        let _ = writeln!(
            std::io::stderr().lock(),
            "{compiler} {source}: {}",
            String::from_utf8_lossy(&built.stderr)
        );
        return None;
    }
    Some(out)
}

/// Runs `bin args` with `env` (every variable Keel, OpenMP or OMPT reads
/// cleared first; threads sleep at barriers, since the tests share their
/// CPUs), preloaded or not.
pub fn run(bin: &Path, args: &[&str], env: &[(&str, &str)], preload: bool) -> Output {
    let mut cmd = Command::new(bin);
    cmd.args(args);
    for var in [
        "KEEL_SCHEDULE",
        "OMP_SCHEDULE",
        "KEEL_OMP_TAKE",
        "OMP_NUM_THREADS",
        "OMP_CANCELLATION",
        "OMP_TOOL",
        "OMP_TOOL_LIBRARIES",
        "LD_PRELOAD",
        "KEEL_TRACE",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("OMP_WAIT_POLICY", "passive");
    cmd.envs(env.iter().copied());
    if preload {
        cmd.env("LD_PRELOAD", library());
    }
    cmd.output().unwrap()
}

/// What a test program printed.
pub struct Report {
    /// It exited with success and printed `all ok`.
    pub ok: bool,
    /// Loop instances the interposer took (`-1` without it; `i64::MIN`
    /// when the program printed no count).
    pub taken: i64,
    /// Loop instances it left to the OpenMP runtime.
    pub forwarded: i64,
    pub stdout: String,
    pub stderr: String,
    /// Both streams, for failure messages.
    pub text: String,
}

pub fn report(out: &Output) -> Report {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let field = |name: &str| {
        stdout
            .split_whitespace()
            .find_map(|w| w.strip_prefix(name)?.parse().ok())
            .unwrap_or(i64::MIN)
    };
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    Report {
        ok: out.status.success() && stdout.lines().any(|l| l == "all ok"),
        taken: field("taken="),
        forwarded: field("forwarded="),
        text: format!("{stdout}{stderr}"),
        stdout,
        stderr,
    }
}
