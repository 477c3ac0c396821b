//! `keel bench loops`, `keel bench auto` and the demo's loop section, end to
//! end: flags, exit codes, the tables. The reports' contents are asserted
//! on the typed reports in keel-experiments' `tests/bench_reports.rs`.

use assert_cmd::Command;

fn keel() -> Command {
    Command::cargo_bin("keel").unwrap()
}

const SMALL: [&str; 4] = [
    "--workload",
    "mandelbrot:width=32,height=24,max-iter=60",
    "--workload",
    "lavamd:boxes1d=3",
];

#[test]
fn chosen_schedules_and_chunks() {
    let args = [
        "bench",
        "loops",
        "--reps",
        "2",
        "--schedule",
        "dynamic,4",
        "--workload",
        "mandelbrot:width=32,height=24,max-iter=60",
    ];
    // The report's rows are asserted in keel-experiments'
    // `tests/bench_reports.rs`; the table shows them.
    let out = keel().args(args).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("dynamic,4"), "{text}");
    assert!(text.contains("T_serial"), "{text}");
    assert!(text.contains("background load"), "{text}");
    // Both ratios, each against its own round.
    assert!(text.contains("÷ ideal (same round)"), "{text}");
    assert!(text.contains("÷ best"), "{text}");
    assert!(text.contains("2 interleaved rounds"), "{text}");
}

#[test]
fn threads_come_from_keel_num_threads() {
    let json: serde_json::Value = {
        let output = keel()
            .env("KEEL_NUM_THREADS", "1")
            .args([
                "bench",
                "loops",
                "--reps",
                "1",
                "--json",
                "--schedule",
                "static",
            ])
            .args(&SMALL[..2])
            .output()
            .unwrap();
        assert!(output.status.success());
        serde_json::from_slice(&output.stdout).unwrap()
    };
    assert_eq!(json["threads"], 1);
    let row = &json["workloads"][0]["rows"][0];
    // The ratio to a reference measured apart from the rows is not
    // reported; the same-round one and the one to the best are.
    assert!(row.get("ratio_to_ideal").is_none(), "{row}");
    assert!(json["workloads"][0]["t_serial_range"].is_array(), "{json}");
    if row["error"].is_null() {
        assert!(row["ratio_to_ideal_same_round"].is_number(), "{row}");
        assert_eq!(row["ratio_to_best"], 1.0, "the only schedule: {row}");
        assert_eq!(
            row["lib_percent"], 0.0,
            "one thread is never imbalanced: {row}"
        );
    }
}

#[test]
fn threads_flag_sizes_the_pool() {
    let output = keel()
        .env("KEEL_NUM_THREADS", "2")
        .args(["bench", "loops", "--threads", "1", "--reps", "1", "--json"])
        .args(["--schedule", "static"])
        .args(&SMALL[..2])
        .output()
        .unwrap();
    assert!(output.status.success());
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["threads"], 1, "--threads wins over KEEL_NUM_THREADS");
}

#[test]
fn bad_arguments_fail_with_exit_code_2() {
    for args in [
        &["bench", "loops", "--workload", "mandel"][..],
        &["bench", "loops", "--workload", "lavamd:gamma=0"],
        &["bench", "loops", "--reps", "0"],
        &["bench", "loops", "--chunk", "0"],
        &["bench", "loops", "--threads", "0"],
        // Refused before any work: no table on stdout.
        &[
            "bench",
            "loops",
            "-s",
            "dynamic,4",
            "-s",
            "no-such-schedule",
        ],
    ] {
        let output = keel().args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with("error:"), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?} printed a table");
    }
    // `keel bench` alone shows the benchmarks it has, as a usage error.
    let output = keel().arg("bench").output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("loops"));
}

#[test]
fn the_demo_has_a_loop_section() {
    let out = keel().args(["demo", "loops"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("== loops: "), "{text}");
    for schedule in ["static", "dynamic,4", "guided", "fac2", "awf-b", "auto"] {
        assert!(text.contains(schedule), "{schedule} missing:\n{text}");
    }
    assert!(text.contains("T_serial"), "{text}");
}

/// `keel bench auto`'s tables on two tiny stepped workloads, two repeats
/// (the report itself is asserted in keel-experiments'
/// `tests/bench_reports.rs`): the mechanism probe, Oracle held out and the
/// paired comparisons have their columns.
#[test]
fn bench_auto_tables_show_the_repeats_and_the_mechanism_probe() {
    let workloads = [
        "phase-change:iterations=4000,steps=6,switch=3",
        "sphynx:particles=400,short-particles=200,steps=3",
    ];
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("auto.svg");
    let mut args = vec!["bench", "auto", "--reps", "2", "--quiet"];
    for w in &workloads {
        args.extend(["-w", w]);
    }
    let out = keel().args(&args).arg("--svg").arg(&svg).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("background load"), "{text}");
    // The plot: per-instance times of Oracle and every method, and the
    // selected schedules, per workload.
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(plot.starts_with("<svg"), "{plot}");
    for name in [
        "Oracle",
        "auto,keel",
        "auto,random",
        "selected schedule",
        "time (ms)",
    ] {
        assert!(plot.contains(name), "{name} missing from the plot");
    }
    assert!(text.contains("mechanism (pinned static) %"), "{text}");
    assert!(text.contains("Oracle held out %"), "{text}");
    assert!(text.contains("keel − random (points)"), "{text}");
    assert!(
        text.contains("auto:method=keel,expert-chunk=0,pin=static"),
        "{text}"
    );
}

/// `--workloads` takes a comma-separated list whose specs keep their own
/// parameters; the per-loop comparison and both goal lines are in the
/// tables and in the JSON with their values; an unknown `--set` is a usage
/// error.
#[test]
fn bench_auto_lists_workloads_and_prints_the_per_loop_goals() {
    let list = "triangular:iterations=60,steps=4,wavefront:m=4,work=20,steps=3";
    let base = [
        "bench",
        "auto",
        "--reps",
        "2",
        "--quiet",
        "--workloads",
        list,
    ];
    let out = keel().args(base).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "triangular:iterations=60,unit=1,steps=4",
        "wavefront:m=4,work=20,steps=3",
        "goal auto / per-loop best <= 1.03",
        "goal every loop <= 1.05",
        "auto,keel per loop against the loop's best fixed configuration",
        "auto / ManualBest",
        "diagonal",
    ] {
        assert!(text.contains(needle), "{needle} missing:\n{text}");
    }
    let out = keel().args(base).arg("--json").output().unwrap();
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let wavefront = &json["workloads"][1];
    let per_loop = &wavefront["per_loop"];
    assert_eq!(per_loop["loops"][0]["name"], "diagonal");
    assert_eq!(per_loop["loops"][0]["instances"], 21);
    let goals = per_loop["goals"].as_array().unwrap();
    assert_eq!(goals[0]["goal"], "auto / per-loop best <= 1.03");
    assert_eq!(goals[0]["limit"], 1.03);
    assert_eq!(goals[0]["value"], per_loop["program_ratio"]);
    assert_eq!(goals[1]["goal"], "every loop <= 1.05");
    assert!(goals[1]["met"].is_boolean());

    let out = keel()
        .args(["bench", "auto", "--set", "nope", "--quick", "--quiet"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("valid sets: default, characters"), "{err}");
}

#[test]
fn bench_objects_plots_time_per_step_and_reports_the_load() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("objects.svg");
    let out = keel()
        .args(["bench", "objects", "--quick", "--quiet", "--json", "--svg"])
        .arg(&svg)
        .output()
        .unwrap();
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(json.get("background_load").is_some(), "{json}");
    let row = &json["tables"][0]["rows"][0];
    assert!(row["below_ideal"].is_boolean(), "{row}");
    assert!(!row["step_times_s"].as_array().unwrap().is_empty());
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(plot.starts_with("<svg"));
    for name in ["No LB", "time per step (ms)", "greedy-refine"] {
        assert!(plot.contains(name), "{name} missing from the plot");
    }
}
