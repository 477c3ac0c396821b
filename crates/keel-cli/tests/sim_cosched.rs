//! `keel sim cosched` end to end, on scaled-down scenarios (`--quick`):
//! the paper's table shapes, JSON, Fig. 5's tables, findings and plots, the
//! application mixes, an SWF replay, and bad input ending in exit code 2.

use assert_cmd::Command;
use tempfile::TempDir;

fn keel() -> Command {
    Command::cargo_bin("keel").unwrap()
}

fn stdout_of(args: &[&str]) -> String {
    let output = keel().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    String::from_utf8(output.stdout).unwrap()
}

fn fails(args: &[&str]) -> String {
    let output = keel().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.starts_with("error:"), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    stderr
}

#[test]
fn verify_prints_the_three_tables_under_five_schedulers() {
    let out = stdout_of(&["sim", "cosched", "verify", "--quick", "--quiet"]);
    for title in ["§3.2.1", "§3.2.2", "§3.2.3"] {
        assert!(out.contains(title), "{title} missing:\n{out}");
    }
    for header in ["Algorithm", "Job 0", "Job 1", "Job 3", "Max", "paper Max"] {
        assert!(out.contains(header), "{header} missing:\n{out}");
    }
    for row in ["FCFS", "Local", "GS", "SB", "FCS"] {
        assert_eq!(
            out.lines()
                .filter(|l| {
                    l.trim_start().starts_with(row)
                        && !l.contains("FCS class")
                        && !l.contains(" vs ")
                })
                .count(),
            3,
            "{row} rows:\n{out}"
        );
    }
    assert!(
        out.contains("FCS classes (held longest): job 0: DC DC F F"),
        "{out}"
    );
    assert!(out.contains("pairs agree"), "{out}");
}

#[test]
fn verify_scaled_prints_the_real_runs_table_shape() {
    let out = stdout_of(&["sim", "cosched", "verify", "--scaled", "--quick", "--quiet"]);
    for title in ["§3.2.1 scaled", "§3.2.2 scaled", "§3.2.3 scaled"] {
        assert!(out.contains(title), "{title} missing:\n{out}");
    }
    // `keel cosched run`'s header: Algorithm, Job 0..n, Max; no paper column.
    let header = out
        .lines()
        .find(|l| l.starts_with("Algorithm") && l.contains("Job 3"))
        .unwrap_or_else(|| panic!("no 4-job header:\n{out}"));
    let header: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(
        header.join(" "),
        "Algorithm Job 0 Job 1 Job 2 Job 3 Max (s)"
    );
    assert!(!out.contains("paper Max"), "{out}");
    for row in ["FCFS", "LOCAL", "GS", "SB", "FCS"] {
        let rows = out
            .lines()
            .filter(|l| l.split_whitespace().next() == Some(row) && !l.contains("classes"))
            .count();
        assert_eq!(rows, 3, "{row} rows:\n{out}");
    }
    assert_eq!(out.matches("FCS final classes: ").count(), 3, "{out}");
    assert_eq!(
        out.lines().filter(|l| l.ends_with('*')).count(),
        3,
        "one best Max per table:\n{out}"
    );
    assert!(out.contains("2 nodes × 1 PE"), "{out}");

    let err = fails(&["sim", "cosched", "verify", "--scaled", "--scenario", "nope"]);
    assert!(err.contains("scaled-fine-grained"), "{err}");
}

#[test]
fn the_kernel_is_the_papers_unless_told_and_a_bad_name_is_refused() {
    let paper = stdout_of(&["sim", "cosched", "verify", "--quick", "--quiet"]);
    assert!(
        paper.contains("kernel linux-2.4: OS time slice 39.55 ms"),
        "{paper}"
    );
    let host = stdout_of(&[
        "sim",
        "cosched",
        "verify",
        "--quick",
        "--quiet",
        "--scenario",
        "fine-grained",
        "--os",
        "host",
    ]);
    assert!(
        host.contains("kernel host: OS time slice 4.00 ms"),
        "{host}"
    );
    let scaled = stdout_of(&[
        "sim",
        "cosched",
        "verify",
        "--scaled",
        "--quick",
        "--quiet",
        "--os",
        "linux-2.4",
    ]);
    assert!(scaled.contains("kernel linux-2.4"), "{scaled}");
    let err = fails(&["sim", "cosched", "verify", "--quick", "--os", "linux-2.6"]);
    assert!(err.contains("linux-2.4") && err.contains("host"), "{err}");
}

#[test]
fn verify_json_is_one_document_with_the_report() {
    // The rows and cells are asserted in keel-experiments'
    // `tests/sim_cosched.rs`; here, that `--json` prints the report whole.
    let out = stdout_of(&[
        "sim",
        "cosched",
        "verify",
        "--quick",
        "--json",
        "--scenario",
        "load-imbalanced",
        "-p",
        "gs",
        "-p",
        "fcs:cs-thresh=0.02",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["tables"][0]["rows"].as_array().unwrap().len(), 2);
    assert_eq!(v["setup"]["scale"], 0.02);
}

#[test]
fn fig5_prints_tables_findings_and_plots() {
    let dir = TempDir::new().unwrap();
    let svg = dir.path().join("plots");
    let out = stdout_of(&[
        "sim",
        "cosched",
        "fig5",
        "--quick",
        "--quiet",
        "--granularities",
        "0.004,0.256",
        "--variabilities",
        "0,1",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(out.contains("nn pattern, variability ±100 %"), "{out}");
    assert!(out.contains("barrier pattern, variability ±0 %"), "{out}");
    assert!(out.contains("The paper's observations"), "{out}");
    assert_eq!(out.matches("FCS converges to GS").count(), 2, "{out}");
    for p in ["nn", "barrier"] {
        let text = std::fs::read_to_string(svg.join(format!("fig5-{p}.svg"))).unwrap();
        assert!(text.starts_with("<svg"), "{p}");
        assert!(text.contains("variability"), "{p}");
    }
}

#[test]
fn apps_print_the_mixes_with_the_papers_max() {
    let out = stdout_of(&[
        "sim", "cosched", "apps", "--scale", "0.005", "--quiet", "--mix", "sweep3d",
    ]);
    assert!(out.contains("SWEEP3D-like"), "{out}");
    assert!(out.contains("193.03"), "the paper's FCFS Max:\n{out}");
}

#[test]
fn swf_logs_replay_under_every_policy() {
    let dir = TempDir::new().unwrap();
    let log = dir.path().join("tiny.swf");
    std::fs::write(
        &log,
        "; Version: 2.2\n; MaxProcs: 8\n\
         1 0 0 20 4 -1 -1 4 -1 -1 1 1 1 -1 1 -1 -1 -1\n\
         2 5 0 10 2 -1 -1 2 -1 -1 1 1 1 -1 1 -1 -1 -1\n\
         3 6 0 10 64 -1 -1 64 -1 -1 1 1 1 -1 1 -1 -1 -1\n",
    )
    .unwrap();
    let path = log.to_str().unwrap();
    let out = stdout_of(&[
        "sim",
        "cosched",
        "swf",
        "--file",
        path,
        "--nodes",
        "2",
        "--pes-per-node",
        "4",
        "--quiet",
    ]);
    assert!(out.contains("2 jobs replayed (1 skipped)"), "{out}");
    for row in ["FCFS", "GS", "SB", "FCS"] {
        assert!(out.contains(row), "{row}:\n{out}");
    }
    let e = fails(&[
        "sim",
        "cosched",
        "swf",
        "--file",
        path,
        "--nodes",
        "2",
        "--pes-per-node",
        "4",
        "--reject-wide",
    ]);
    assert!(e.contains("64"), "{e}");
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let e = fails(&["sim", "cosched", "verify", "--quick", "-p", "lottery"]);
    assert!(e.contains("fcfs, gs, local, sb, fcs"), "{e}");
    let e = fails(&["sim", "cosched", "verify", "--scenario", "nope"]);
    assert!(e.contains("fine-grained"), "{e}");
    fails(&["sim", "cosched", "verify", "--scale", "0"]);
    fails(&["sim", "cosched", "verify", "--quick", "--latency", "-1"]);
    let e = fails(&["sim", "cosched", "verify", "--quick", "--comm-clock", "cpu"]);
    assert!(e.contains("scheduled, wall"), "{e}");
    let e = fails(&["sim", "cosched", "fig5", "--quick", "--patterns", "star"]);
    assert!(e.contains("ring, nn, barrier"), "{e}");
    fails(&["sim", "cosched", "fig5", "--quick", "--variabilities", "3"]);
    fails(&["sim", "cosched", "fig5", "--quick", "--granularities", "0"]);
    fails(&["sim", "cosched", "apps", "--mix", "lulesh"]);
    let e = fails(&["sim", "cosched", "swf", "--file", "/nonexistent/log.swf"]);
    assert!(e.contains("log.swf"), "{e}");
    fails(&[
        "sim",
        "cosched",
        "swf",
        "--file",
        "x.swf",
        "--granularity",
        "0",
    ]);
}

#[test]
fn verify_scaled_against_real_runs_counts_pairs_ordered_alike() {
    let dir = TempDir::new().unwrap();
    // Real runs where GS beat everything by far and SB came last: the
    // simulation orders it the other way, and the runs are apart.
    let real = serde_json::json!({
        "tables": [{
            "scenario": "imbalanced",
            "rows": [
                {"policy": "gs", "max": 1.0, "runs": [{"makespan": 0.9}, {"makespan": 1.0}, {"makespan": 1.1}]},
                {"policy": "sb", "max": 5.0, "runs": [{"makespan": 4.9}, {"makespan": 5.0}]},
                {"policy": "fcs", "max": 4.0, "runs": [{"makespan": 3.0}, {"makespan": 5.5}]},
                {"policy": "local", "max": null, "runs": []}
            ]
        }]
    });
    let file = dir.path().join("real.json");
    std::fs::write(&file, real.to_string()).unwrap();
    let path = file.to_str().unwrap();
    let args = [
        "sim",
        "cosched",
        "verify",
        "--scaled",
        "--scale",
        "0.2",
        "--quiet",
        "--scenario",
        "imbalanced",
        "--against",
        path,
    ];
    let out = stdout_of(&args);
    assert!(
        out.contains("scaled-load-imbalanced: simulated against the real runs"),
        "{out}"
    );
    // fcfs has no real row and local no Max: three schedulers, three pairs.
    // Apart: gs–sb and gs–fcs; fcs's runs overlap sb's. SB beats GS in
    // the model of this scenario by a quarter.
    assert!(
        out.contains("/3; of the 2 pairs whose real runs do not overlap:"),
        "{out}"
    );
    assert!(
        out.contains("GS vs SB: ordered differently (the real runs are apart)"),
        "{out}"
    );

    // The pair counts of the report are asserted in keel-experiments'
    // `tests/sim_cosched.rs`.
    std::fs::write(&file, "{ not json").unwrap();
    let err = fails(&args);
    assert!(err.contains("not JSON"), "{err}");
    std::fs::write(
        &file,
        r#"{"tables": [{"scenario": "fine-grained", "rows": []}]}"#,
    )
    .unwrap();
    let err = fails(&args);
    assert!(err.contains("no `load-imbalanced` scenario"), "{err}");
    let err = fails(&["sim", "cosched", "verify", "--against", path]);
    assert!(err.contains("--scaled"), "{err}");
}
