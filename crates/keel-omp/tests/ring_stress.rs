//! The team's loop ring under stress: a program built with `gcc -fopenmp`
//! runs thousands of short `nowait` loops on more threads than this
//! machine has CPUs, each loop with a different slow thread, so that fast
//! threads run ahead up to the ring's length and every slot is reused
//! many times; every iteration must run exactly once, and Keel must have
//! taken every loop.
//!
//! Without `gcc -fopenmp` the test prints `SKIPPED:` on stderr, unless
//! `KEEL_TESTS_REQUIRE` names `gcc -fopenmp` (CI), in which case it fails.

use std::path::PathBuf;
use std::process::Command;

/// The preload library cargo built beside this test.
fn library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    [deps, deps.parent().unwrap()]
        .iter()
        .map(|dir| dir.join("libkeel_omp.so"))
        .find(|lib| lib.exists())
        .unwrap_or_else(|| panic!("libkeel_omp.so not found beside {}", exe.display()))
}

/// `nowait_stress.c` built here; `None` when gcc or OpenMP is missing.
fn build(dir: &std::path::Path) -> Option<PathBuf> {
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/programs/nowait_stress.c");
    let out = dir.join("nowait_stress");
    let built = Command::new("gcc")
        .args(["-fopenmp", "-O2"])
        .arg(&source)
        .arg("-o")
        .arg(&out)
        .arg("-ldl")
        .output()
        .ok()?;
    built.status.success().then_some(out)
}

#[test]
fn many_nowait_loops_on_more_threads_than_cpus_run_every_iteration_once() {
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = build(dir.path()) else {
        let required = std::env::var("KEEL_TESTS_REQUIRE").unwrap_or_default();
        assert!(
            !required.split(',').any(|r| r.trim() == "gcc -fopenmp"),
            "this test needs gcc -fopenmp, and KEEL_TESTS_REQUIRE says this environment has it"
        );
        eprintln!("SKIPPED: many_nowait_loops_on_more_threads_than_cpus needs gcc -fopenmp");
        return;
    };
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let threads = (2 * cpus + 1).clamp(5, 33).to_string();
    let loops = 20_000;
    for (schedule, wait) in [
        ("dynamic", "passive"),
        ("static", "active"),
        ("auto", "passive"),
    ] {
        let out = Command::new(&bin)
            .arg(loops.to_string())
            .env_remove("OMP_SCHEDULE")
            .env_remove("KEEL_OMP_TAKE")
            .env_remove("KEEL_TRACE")
            .env("OMP_NUM_THREADS", &threads)
            .env("OMP_WAIT_POLICY", wait)
            .env("KEEL_SCHEDULE", schedule)
            .env("LD_PRELOAD", library())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stdout.lines().any(|l| l == "all ok"),
            "{schedule} on {threads} threads: {stdout}{stderr}"
        );
        let taken: i64 = stdout
            .lines()
            .find_map(|l| {
                l.strip_prefix("taken=")?
                    .split_whitespace()
                    .next()?
                    .parse()
                    .ok()
            })
            .unwrap_or(-1);
        assert_eq!(taken, loops, "{schedule} on {threads} threads: {stdout}");
    }
}
