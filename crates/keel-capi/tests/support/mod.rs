//! What the example tests and the installed-prefix tests share: the
//! skip rule, the scratch folder, running a program as the examples are
//! run, and the comparison of a program's destinations with the Rust API.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use keel_policy::{Model, NO_PU};
use keel_workloads::MappingProblem;

pub use keel_testkit::can_run;

pub fn has(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

pub fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// This test binary's private scratch folder.
pub fn scratch() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

/// Runs `bin args` with the variables Keel reads cleared; under valgrind
/// (an invalid access or a definite leak makes it exit 99) when asked.
///
/// "Possibly lost" blocks are not errors: the thread runtime keeps one
/// state per loop id for the whole process in a hash table that only an
/// interior pointer reaches, which valgrind counts as possibly lost.
pub fn run(bin: &Path, args: &[&str], valgrind: bool) -> Output {
    let mut cmd = if valgrind {
        let mut c = Command::new("valgrind");
        c.args([
            "--error-exitcode=99",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite,indirect",
            "--quiet",
        ])
        .arg(bin);
        c
    } else {
        Command::new(bin)
    };
    for var in [
        "KEEL_SCHEDULE",
        "KEEL_NUM_THREADS",
        "KEEL_TRACE",
        "KEEL_LOOP_RECORD",
        "LD_PRELOAD",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("KEEL_WAIT_POLICY", "passive");
    cmd.args(args).output().unwrap()
}

pub fn stdout_ok(out: &Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && stdout.lines().any(|l| l == "all ok"),
        "{what}: {:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// A load file of `n` tasks (load and current PU per line) and the same
/// problem for the Rust API.
pub fn load_file(n: usize, pus: usize) -> (PathBuf, MappingProblem) {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut loads = Vec::with_capacity(n);
    let mut current = Vec::with_capacity(n);
    let mut text = String::new();
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Loads with many digits, so the text must carry every bit.
        let load = (x >> 11) as f64 / (1u64 << 53) as f64 * 10.0 + 0.1;
        let pu = (x % pus as u64) as usize;
        text.push_str(&format!("{load} {pu}\n"));
        loads.push(load);
        current.push(pu);
    }
    let path = scratch().join(format!("loads-{n}-{pus}.txt"));
    std::fs::write(&path, text).unwrap();
    let mut problem = MappingProblem::new(loads, pus, Model::Dynamic);
    problem.current = Some(current);
    (path, problem)
}

pub const SPECS: [&str; 4] = [
    "greedy",
    "refine",
    "hier:nodes=2,outer=(greedy),inner=refine",
    "binlpt:chunks=32",
];

/// The `dest <task> <pu>` lines of an example's output.
pub fn destinations(stdout: &str) -> Vec<usize> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("dest "))
        .enumerate()
        .map(|(i, rest)| {
            let (task, pu) = rest.split_once(' ').unwrap();
            assert_eq!(task.parse::<usize>().unwrap(), i);
            pu.trim().parse().unwrap()
        })
        .collect()
}

/// Runs `bin FILE PUS SPEC` for every spec and compares the destinations
/// with the Rust API's.
pub fn compare_with_rust(bin: &Path, valgrind: bool, what: &str) {
    let (path, problem) = load_file(300, 8);
    let registry = keel_policy::mapping::registry();
    for spec in SPECS {
        let out = run(bin, &[path.to_str().unwrap(), "8", spec], valgrind);
        let stdout = stdout_ok(&out, &format!("{what} {spec}"));
        let rust = registry
            .build(spec)
            .unwrap()
            .map(&problem.context())
            .unwrap();
        assert!(!rust.as_slice().contains(&NO_PU));
        assert_eq!(destinations(&stdout), rust.as_slice(), "{what} {spec}");
    }
}
