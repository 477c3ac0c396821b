//! `keel cosched run`: the real scheduler's verification scenarios, in
//! their quick form (a few seconds, too short for the paper's results).

use assert_cmd::Command;

#[test]
fn quick_run_prints_every_table_as_json() {
    let out = Command::cargo_bin("keel")
        .unwrap()
        .args([
            "cosched",
            "run",
            "--quick",
            "--iterations",
            "20",
            "--quiet",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tables = v["tables"].as_array().unwrap();
    let names: Vec<&str> = tables
        .iter()
        .map(|t| t["scenario"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["fine-grained", "load-imbalanced", "complementing"]);
    for t in tables {
        let rows = t["rows"].as_array().unwrap();
        let policies: Vec<&str> = rows.iter().map(|r| r["policy"].as_str().unwrap()).collect();
        assert_eq!(policies, ["fcfs", "local", "gs", "sb", "fcs"]);
        let jobs = t["job_names"].as_array().unwrap().len();
        for r in rows {
            let times = r["jobs"].as_array().unwrap();
            assert_eq!(times.len(), jobs);
            // Every job completed, and Max is the latest termination.
            let max = r["max"].as_f64().expect("every job completed");
            let latest = times
                .iter()
                .map(|x| x.as_f64().unwrap())
                .fold(0.0, f64::max);
            assert!((max - latest).abs() < 1e-9, "{r}");
        }
    }
    assert_eq!(v["params"]["iterations"], 20);
}

#[test]
fn bad_arguments_are_usage_errors() {
    Command::cargo_bin("keel")
        .unwrap()
        .args(["cosched", "run", "--scenario", "bogus"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "fine-grained, load-imbalanced, complementing",
        ));
    Command::cargo_bin("keel")
        .unwrap()
        .args(["cosched", "run", "--policy", "lottery"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("fcfs, local, gs, sb, fcs"));
}
