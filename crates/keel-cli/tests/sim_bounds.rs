//! `keel sim` refuses sizes and values past its limits with exit code 2 and
//! a message naming the limit, quickly (no simulation is started), and an
//! SVG that cannot be written is an error naming its path after the tables
//! are printed.

use std::time::{Duration, Instant};

use assert_cmd::Command;
use tempfile::TempDir;

fn keel() -> Command {
    Command::cargo_bin("keel").unwrap()
}

/// Runs `args`, expecting exit code 2 within a few seconds; returns stderr.
fn fails(args: &[&str]) -> String {
    let started = Instant::now();
    let output = keel()
        .args(args)
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.starts_with("error:"), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{args:?} took {:?}",
        started.elapsed()
    );
    stderr
}

/// A one-job SWF log: job 1 ran `run_time` seconds on 4 processors.
fn swf_log(dir: &TempDir, run_time: &str) -> String {
    let path = dir.path().join("log.swf");
    std::fs::write(
        &path,
        format!("; Version: 2.2\n1 0 0 {run_time} 4 -1 -1 4 -1 -1 1 1 1 -1 1 -1 -1 -1\n"),
    )
    .unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn swf_run_time_of_a_billion_seconds_is_refused_naming_the_work_limit() {
    let dir = TempDir::new().unwrap();
    let log = swf_log(&dir, "1000000000");
    let e = fails(&["sim", "cosched", "--quiet", "swf", "--file", &log]);
    assert!(e.contains("MAX_PROCESS_ITERATIONS = 100000000"), "{e}");
    assert!(e.contains("--granularity"), "{e}");
}

#[test]
fn cosched_granularity_scale_and_os_tick_are_bounded() {
    let dir = TempDir::new().unwrap();
    // 10⁶ iterations of 0.1 s on 4 processes: 4 × 10⁶, × 1000 past the limit.
    let log = swf_log(&dir, "100000");
    let e = fails(&[
        "sim",
        "cosched",
        "swf",
        "--file",
        &log,
        "--granularity",
        "1e-9",
    ]);
    assert!(e.contains("MIN_QUANTUM"), "{e}");
    let e = fails(&["sim", "cosched", "--scale", "1e12", "swf", "--file", &log]);
    assert!(e.contains("MAX_SCALE = 1000"), "{e}");
    // A scale inside MAX_SCALE that still makes too much work hits the
    // simulator's own limit.
    let e = fails(&["sim", "cosched", "--scale", "1000", "swf", "--file", &log]);
    assert!(e.contains("MAX_PROCESS_ITERATIONS"), "{e}");
    for tick in ["1e-12", "NaN", "-1"] {
        let e = fails(&["sim", "cosched", &format!("--os-tick={tick}"), "verify"]);
        assert!(e.contains("--os-tick"), "{e}");
    }
    let e = fails(&["sim", "cosched", "--os-quantum", "1e-12", "verify"]);
    assert!(e.contains("MIN_QUANTUM"), "{e}");
}

#[test]
fn cluster_and_machine_sizes_past_the_limits_are_refused() {
    let dir = TempDir::new().unwrap();
    let log = swf_log(&dir, "100");
    let e = fails(&[
        "sim",
        "cosched",
        "swf",
        "--file",
        &log,
        "--nodes",
        "100000",
        "--pes-per-node",
        "100000",
    ]);
    assert!(e.contains("10000000000 PEs"), "{e}");
    assert!(e.contains("MAX_PES = 1048576"), "{e}");
    // 2³² × 2³² overflows usize: the product is named, not "at least 1".
    let e = fails(&[
        "sim",
        "objects",
        "--nodes",
        "4294967296",
        "--pus-per-node",
        "4294967296",
    ]);
    assert!(e.contains("18446744073709551616 PUs"), "{e}");
    assert!(e.contains("MAX_PUS = 1048576"), "{e}");
    assert!(!e.contains("at least 1"), "{e}");
    let e = fails(&["sim", "farm", "--workers", "100000000", "--tasks", "10"]);
    assert!(e.contains("MAX_FARM_WORKERS"), "{e}");
    let e = fails(&["sim", "farm", "--workers", "4", "--tasks", "100000000000"]);
    assert!(e.contains("MAX_FARM_ITEMS"), "{e}");
    let e = fails(&["sim", "perf", "--iterations", "100000000000", "--reps", "1"]);
    assert!(e.contains("MAX_UNIFORM_ITERATIONS"), "{e}");
}

#[test]
fn counts_and_coefficients_of_variation_refuse_nonsense() {
    let e = fails(&["sim", "farm", "--tasks", "0"]);
    assert!(e.contains("--tasks") && e.contains("at least 1"), "{e}");
    let e = fails(&["sim", "perf", "--reps", "0"]);
    assert!(e.contains("--reps") && e.contains("at least 1"), "{e}");
    for cv in ["NaN", "-5", "inf"] {
        for command in ["farm", "objects", "loops"] {
            let e = fails(&["sim", command, &format!("--noise-cv={cv}")]);
            assert!(e.contains("--noise-cv"), "{command} {cv}: {e}");
            assert!(e.contains("finite number ≥ 0"), "{command} {cv}: {e}");
        }
    }
}

#[test]
fn huge_numbers_in_messages_are_short() {
    let e = fails(&[
        "sim",
        "cosched",
        "--scale",
        "1.7976931348623157e308",
        "verify",
    ]);
    assert!(e.contains("1.7976931348623157e308"), "{e}");
    assert!(e.len() < 300, "{} bytes: {e}", e.len());
    // A value the simulator itself refuses is shown the same way.
    let e = fails(&[
        "sim",
        "farm",
        "--workers",
        "2",
        "--tasks",
        "10",
        "--task-s=-1.7976931348623157e308",
    ]);
    assert!(e.contains("-1.7976931348623157e308"), "{e}");
    assert!(e.len() < 120, "{} bytes: {e}", e.len());
}

#[test]
fn an_unwritable_svg_fails_after_the_tables_naming_its_path() {
    let dir = TempDir::new().unwrap();
    let bad = dir.path().join("missing").join("plot.svg");
    let bad = bad.to_str().unwrap();
    let output = keel()
        .args([
            "sim",
            "farm",
            "--workers",
            "4",
            "--tasks",
            "100",
            "-p",
            "rr",
            "--svg",
            bad,
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // A plot that cannot be written is a runtime failure.
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(bad), "{stderr}");
    assert!(
        stdout.contains("4 workers (model S"),
        "tables lost: {stdout}"
    );
    assert!(!stdout.contains("plot:"), "{stdout}");

    // The same for `sim cosched fig5 --svg DIR` when DIR cannot be made.
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let under_file = file.join("plots");
    let under_file = under_file.to_str().unwrap();
    let output = keel()
        .args([
            "sim",
            "cosched",
            "--quick",
            "--quiet",
            "-p",
            "gs",
            "fig5",
            "--granularities",
            "0.1",
            "--variabilities",
            "0",
            "--patterns",
            "barrier",
            "--svg",
            under_file,
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(under_file), "{stderr}");
    assert!(stdout.contains("barrier pattern"), "tables lost: {stdout}");
}
