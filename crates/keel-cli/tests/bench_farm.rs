//! `keel bench farm` and the demo's farm section, end to end: flags, exit
//! codes, the JSON document and the demo's table. The report's contents
//! are asserted in keel-experiments' `tests/bench_farm.rs`.

use assert_cmd::Command;

fn keel() -> Command {
    Command::cargo_bin("keel").unwrap()
}

#[test]
fn bench_farm_rejects_bad_arguments() {
    keel()
        .args(["bench", "farm", "-e", "z"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("valid: a, b, c, d, e, overhead"));
    keel()
        .args(["bench", "farm", "--runs", "0"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("--runs"));
    // `--workers` is the older spelling of `--threads`.
    for flag in ["--threads", "--workers"] {
        keel()
            .args(["bench", "farm", flag, "0"])
            .assert()
            .code(2)
            .stderr(predicates::str::contains("--threads"));
    }
}

#[test]
fn bench_farm_json_is_one_document_with_the_report() {
    // The report's contents are asserted in keel-experiments'
    // `tests/bench_farm.rs`; here, that `--json` prints it whole.
    let output = keel()
        .args([
            "bench", "farm", "--quick", "--runs", "1", "-e", "overhead", "--json",
        ])
        .output()
        .unwrap();
    assert!(output.status.success());
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["runs"], 1);
    assert_eq!(json["overhead"].as_array().unwrap().len(), 4);
    assert!(json["experiments"].as_array().unwrap().is_empty());
    assert!(json.get("background_load").is_some(), "{json}");
}

#[test]
fn bench_farm_plots_s_against_tasks_per_policy() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("farm.svg");
    let output = keel()
        .args([
            "bench", "farm", "--quick", "--runs", "1", "-e", "d", "--svg",
        ])
        .arg(&svg)
        .output()
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("background load"), "{text}");
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(plot.starts_with("<svg"));
    for name in ["rr", "arrs-adaptive", "tasks", "S = "] {
        assert!(plot.contains(name), "{name} missing from the plot");
    }
    // Only the per-item cost: nothing to plot, a typed error after the table.
    let output = keel()
        .args([
            "bench", "farm", "--quick", "--runs", "1", "-e", "overhead", "--svg",
        ])
        .arg(&svg)
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("nothing to plot"));
}

#[test]
fn the_demo_has_a_farm_section() {
    let output = keel().args(["demo", "farm"]).output().unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    for p in ["rr", "arrs", "arrs-adaptive", "on-demand", "shortest-queue"] {
        assert!(
            text.lines().any(|l| l.trim_start().starts_with(p)),
            "{p}: {text}"
        );
    }
}
