//! `keel omp run`: the program's exit status is keel's, a bad schedule is
//! a usage error before anything runs, a missing library a runtime error.

use assert_cmd::Command;

fn keel() -> Command {
    Command::cargo_bin("keel").unwrap()
}

/// Whether `libkeel_omp.so` sits where `keel omp run` looks for it (it does
/// when the workspace, or keel-omp, was built into the same target folder).
fn library_beside_keel() -> bool {
    let keel = assert_cmd::cargo::cargo_bin("keel");
    let dir = keel.parent().unwrap();
    dir.join("libkeel_omp.so").is_file() || dir.join("deps/libkeel_omp.so").is_file()
}

#[test]
fn a_bad_schedule_or_kind_is_a_usage_error_and_runs_nothing() {
    let out = keel()
        .args([
            "omp",
            "run",
            "--schedule",
            "bogus",
            "--",
            "sh",
            "-c",
            "echo ran",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bogus"));
    let out = keel()
        .args(["omp", "run", "--take", "static", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = keel().args(["omp", "run"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "no program");
}

#[test]
fn a_missing_library_is_a_runtime_error() {
    let out = keel()
        .args([
            "omp",
            "run",
            "--library",
            "/nonexistent/libkeel_omp.so",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such file"));
}

#[test]
fn the_program_runs_preloaded_and_its_status_is_keels() {
    if !library_beside_keel() {
        // `keel omp run` says where the library should be instead.
        let out = keel().args(["omp", "run", "--", "true"]).output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stderr).contains("libkeel_omp.so"));
        eprintln!("SKIPPED: the_program_runs_preloaded_and_its_status_is_keels needs libkeel_omp.so beside keel");
        return;
    }
    let out = keel()
        .args(["omp", "run", "--schedule", "af", "--take", "dynamic", "--"])
        .args([
            "sh",
            "-c",
            "echo \"$LD_PRELOAD|$KEEL_SCHEDULE|$KEEL_OMP_TAKE\"; exit 3",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("libkeel_omp.so|af|dynamic"), "{stdout}");
}

/// Whether `gcc -fopenmp` builds a program here.
fn gcc_openmp() -> bool {
    let dir = tempfile::TempDir::new().unwrap();
    let src = dir.path().join("t.c");
    std::fs::write(
        &src,
        "#include <omp.h>\nint main(void) { return omp_get_max_threads() < 1; }\n",
    )
    .unwrap();
    std::process::Command::new("gcc")
        .args(["-fopenmp", "-o"])
        .arg(dir.path().join("t"))
        .arg(&src)
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn omp_bench_quick_prints_every_workload_configuration_and_goal() {
    let test = "omp_bench_quick_prints_every_workload_configuration_and_goal";
    if !gcc_openmp() {
        // As keel-omp's tests: CI, which installs gcc, names it in
        // KEEL_TESTS_REQUIRE and a missing compiler fails there.
        let required = std::env::var("KEEL_TESTS_REQUIRE").unwrap_or_default();
        assert!(
            !required.split(',').any(|r| r.trim() == "gcc -fopenmp"),
            "{test} needs gcc -fopenmp, and KEEL_TESTS_REQUIRE says this environment has it"
        );
        eprintln!("SKIPPED: {test} needs gcc -fopenmp");
        return;
    }
    if !library_beside_keel() {
        eprintln!("SKIPPED: {test} needs libkeel_omp.so beside keel");
        return;
    }
    let out = keel()
        .args(["omp", "bench", "--quick", "--quiet", "--json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["threads"], 2);
    assert_eq!(doc["rounds"], 2);
    let workloads = doc["workloads"].as_array().unwrap();
    let names: Vec<&str> = workloads
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["mandelbrot-zoom", "lavamd-steps", "balanced", "short-loops"]
    );
    for w in workloads {
        let configs = w["configs"].as_array().unwrap();
        let expected = match w["name"].as_str().unwrap() {
            "balanced" | "short-loops" => 2,
            _ => 10,
        };
        assert_eq!(configs.len(), expected, "{w}");
        for c in configs {
            let seconds = c["seconds"].as_array().unwrap();
            assert_eq!(seconds.len(), 2, "one time per round: {c}");
            assert!(seconds.iter().all(|s| s.as_f64().unwrap() > 0.0), "{c}");
        }
        let goals = w["goals"].as_array().unwrap();
        assert_eq!(goals.len(), if expected == 2 { 1 } else { 3 }, "{w}");
        for g in goals {
            let verdict = g["verdict"].as_str().unwrap();
            assert!(
                ["met", "not_met", "not_applicable", "no_figure"].contains(&verdict),
                "{g}"
            );
        }
        // Two rounds give a held-out Oracle but no 95 % intervals.
        if expected == 10 {
            assert_eq!(w["oracle_held_out"]["seconds"].as_array().unwrap().len(), 2);
            assert_eq!(w["goals"][1]["verdict"], "no_figure");
        }
    }
    // The text form: one block per workload, each with its goals.
    let out = keel()
        .args([
            "omp",
            "bench",
            "--quick",
            "--quiet",
            "--workloads",
            "balanced,short-loops",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("keel omp bench: 2 threads, 2 round(s)"),
        "{text}"
    );
    assert!(text.contains("\nbalanced ("), "{text}");
    assert!(text.contains("\nshort-loops ("), "{text}");
    assert!(!text.contains("mandelbrot-zoom"), "{text}");
    assert_eq!(text.matches("  goal: ").count(), 2, "{text}");
}

#[test]
fn omp_bench_refuses_bad_arguments_before_running_anything() {
    for args in [
        &["--rounds", "1"][..],
        &["--threads", "0"],
        &["--workloads", "nbody"],
    ] {
        let out = keel()
            .args(["omp", "bench", "--quiet"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}
