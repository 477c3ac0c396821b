//! The `keel` binary end to end: the demo, `map` on files and generated
//! workloads with hand-checked numbers, JSON output, and every kind of bad
//! input ending with a message and no panic: exit code 2 for a bad command
//! line, 1 for a file or a decision that fails.

use std::path::PathBuf;

use assert_cmd::Command;
use predicates::prelude::*;
use tempfile::TempDir;

fn keel() -> Command {
    Command::cargo_bin("keel").unwrap()
}

fn file(dir: &TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs `keel args...`, expects a usage error (exit code 2, nothing on
/// stdout), and returns stderr.
fn fails(args: &[&str]) -> String {
    let output = keel().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.starts_with("error:"), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    assert!(output.stdout.is_empty(), "{args:?} wrote to stdout");
    stderr
}

/// Runs `keel args...`, expects a runtime failure (exit code 1), and
/// returns stdout (what could run) and stderr.
fn fails_at_runtime(args: &[&str]) -> (String, String) {
    let output = keel().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
    assert!(stderr.starts_with("error:"), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    (String::from_utf8_lossy(&output.stdout).to_string(), stderr)
}

fn json_of(args: &[&str]) -> serde_json::Value {
    let output = keel().args(args).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("--json prints one JSON document")
}

#[test]
fn demo_prints_every_section_and_policy() {
    let assert = keel().arg("demo").assert().success();
    let out = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    for section in [
        "lb-test",
        "lb-test-drift",
        "leanmd",
        "hotspot",
        "loops",
        "auto",
        "farm",
        "objects",
        "cosched",
    ] {
        assert!(
            out.contains(&format!("== {section}: ")),
            "{section} missing:\n{out}"
        );
    }
    assert_eq!(out.matches("Look for: ").count(), 9);
    for method in [
        "auto,keel",
        "auto,expert",
        "auto,exhaustive",
        "auto,random",
        "ManualBest",
    ] {
        assert!(
            out.contains(method),
            "{method} missing from the auto section"
        );
    }
    for policy in [
        "block",
        "round-robin",
        "greedy",
        "binlpt",
        "binlpt:cut=faithful",
        "refine",
        "greedy-refine",
        "hier:nodes=4,outer=(greedy),inner=refine",
    ] {
        let rows = out
            .lines()
            .filter(|l| l.trim_start().starts_with(&format!("{policy} ")))
            .count();
        assert_eq!(rows, 4, "{policy} should have one row per section:\n{out}");
    }
}

#[test]
fn demo_runs_chosen_sections_and_rejects_unknown_ones() {
    keel()
        .args(["demo", "hotspot"])
        .assert()
        .success()
        .stdout(predicate::str::contains("== hotspot: "))
        .stdout(predicate::str::contains("== leanmd: ").not());
    let err = fails(&["demo", "nope"]);
    assert!(
        err.contains("valid sections: lb-test, lb-test-drift, leanmd, hotspot, loops"),
        "{err}"
    );
}

#[test]
fn map_csv_matches_a_hand_checked_case() {
    // Loads 3 3 2 2 2 on 2 PUs. Greedy (LPT): 3→0, 3→1, 2→0, 2→1, 2→0, so
    // PU times 7 and 5: makespan 7, mean 6, λ = 1/6 (16.67 %), LIB = (1 − 6/7)·100,
    // bound max(12/2, 3) = 6, so 116.67%; placement 0 1 0 1 0 has 4 splits.
    // Block: 3 3 2 | 2 2, times 8 and 4, λ = 1/3, 1 split.
    let dir = TempDir::new().unwrap();
    let tasks = file(&dir, "loads.csv", "load\n3\n3\n2\n2\n2\n");
    let assert = keel()
        .args([
            "map", "--pus", "2", "--policy", "greedy", "--policy", "block", "--tasks",
        ])
        .arg(&tasks)
        .assert()
        .success();
    let out = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    let row = |name: &str| -> Vec<String> {
        out.lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} row:\n{out}"))
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    let greedy = row("greedy");
    assert_eq!(
        greedy[..8],
        ["greedy", "7.000", "6.000", "16.67", "14.29", "116.67", "-", "4"],
        "{out}"
    );
    let block = row("block");
    assert_eq!(
        block[..8],
        ["block", "8.000", "6.000", "33.33", "25.00", "133.33", "-", "1"],
        "{out}"
    );
    assert!(
        out.contains("5 tasks, 2 PUs (2 available), total load 12.00"),
        "{out}"
    );
    assert!(out.contains("current mapping: none"), "{out}");
}

#[test]
fn map_json_trace_refines_from_its_current_mapping() {
    // Current 3 3 2 | 2 2: times 8 and 4, average 6, refine's limit 6.3.
    // PU 0 gives its largest task that fits on PU 1: a 3 would make 7, a 2
    // makes 6, so one migration and both PUs at 6.
    let dir = TempDir::new().unwrap();
    let tasks = file(
        &dir,
        "trace.json",
        r#"{"task_loads": [3, 3, 2, 2, 2], "num_pus": 2, "current_mapping": [0, 0, 0, 1, 1]}"#,
    );
    let path = tasks.to_str().unwrap();
    let report = json_of(&["map", "--tasks", path, "--policy", "refine", "--json"]);
    assert_eq!(report["source"], path);
    assert_eq!(report["tasks"], 5);
    assert_eq!(report["pus"], 2);
    assert_eq!(report["total_load"], 12.0);
    assert_eq!(report["current"]["metrics"]["makespan"], 8.0);
    let refine = &report["results"][0];
    assert_eq!(refine["policy"], "refine");
    assert_eq!(refine["metrics"]["makespan"], 6.0);
    assert_eq!(refine["metrics"]["mean"], 6.0);
    assert_eq!(refine["metrics"]["migrations"], 1);
    assert_eq!(refine["metrics"]["lower_bound"], 6.0);
    assert_eq!(refine["percent_of_bound"], 100.0);
    assert_eq!(refine["metrics"]["pu_times"], serde_json::json!([6.0, 6.0]));
    assert!(refine["decision_seconds"].as_f64().unwrap() >= 0.0);
    assert!(
        refine.get("mapping").is_none(),
        "mapping only with --show-mapping"
    );

    let report = json_of(&[
        "map",
        "--tasks",
        path,
        "--policy",
        "refine",
        "--json",
        "--show-mapping",
    ]);
    assert_eq!(
        report["results"][0]["mapping"],
        serde_json::json!([0, 0, 1, 1, 1])
    );
}

#[test]
fn map_with_a_pu_file_uses_speeds_and_availability() {
    let dir = TempDir::new().unwrap();
    let tasks = file(&dir, "t.csv", "load\n4\n4\n4\n");
    let pus = file(&dir, "p.csv", "speed,available\n2,true\n1,false\n1,true\n");
    let report = json_of(&[
        "map",
        "--json",
        "--show-mapping",
        "--tasks",
        tasks.to_str().unwrap(),
        "--pu-file",
        pus.to_str().unwrap(),
    ]);
    let greedy = &report["results"][0];
    assert_eq!(greedy["policy"], "greedy");
    // PU 1 is unavailable; PU 0 at speed 2 takes two tasks in time 4.
    assert_eq!(greedy["mapping"], serde_json::json!([0, 2, 0]));
    assert_eq!(greedy["metrics"]["makespan"], 4.0);
}

#[test]
fn map_generates_built_in_workloads() {
    let report = json_of(&[
        "map",
        "--generate",
        "ramp:tasks=100,pus=4",
        "--policy",
        "block",
        "--policy",
        "binlpt:chunks=4",
        "--json",
    ]);
    assert_eq!(report["tasks"], 100);
    assert_eq!(report["results"][0]["metrics"]["migrations"], 0);
    assert_eq!(report["results"][1]["metrics"]["splits"], 3);
    keel()
        .args(["map", "-g", "lb-test:tasks=500,pus=8", "--show-mapping"])
        .assert()
        .success()
        .stdout(predicate::str::contains("mapping of greedy: "));
}

#[test]
fn policies_lists_policies_and_generators() {
    let assert = keel().arg("policies").assert().success();
    let out = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    for name in [
        "block",
        "round-robin",
        "greedy",
        "binlpt",
        "refine",
        "greedy-refine",
        "hier",
        "lb-test",
        "leanmd",
        "ramp",
        "hotspot",
    ] {
        assert!(
            out.lines().any(|l| l.trim_start().starts_with(name)),
            "{name}:\n{out}"
        );
    }
}

#[test]
fn bad_policies_and_specs_are_clear_errors() {
    let err = fails(&["map", "-g", "ramp", "--policy", "gredy"]);
    assert!(
        err.contains("unknown mapping policy `gredy`; valid names: block, round-robin, greedy, lpt-eft, binlpt, refine, greedy-refine, hier"),
        "{err}"
    );
    let err = fails(&["map", "-g", "ramp", "--policy", "binlpt:chunks="]);
    assert!(err.contains("malformed spec `binlpt:chunks=`"), "{err}");
    let err = fails(&["map", "-g", "ramp", "--policy", "binlpt:chunks=0"]);
    assert!(err.contains("`chunks`") && err.contains("1..="), "{err}");
    let err = fails(&["map", "-g", "ramp", "--policy", "hier:nodes=2,outer=(nope)"]);
    assert!(err.contains("unknown mapping policy `nope`"), "{err}");
    // A valid spec that cannot map this input: the command ran, the policy
    // refused.
    let (_, err) = fails_at_runtime(&["map", "-g", "ramp:pus=2", "--policy", "hier:nodes=4"]);
    assert!(err.contains("hier") && err.contains("nodes"), "{err}");
    let err = fails(&["map", "-g", "lb_test"]);
    assert!(
        err.contains("unknown workload `lb_test`; valid names: lb-test, leanmd, ramp, hotspot"),
        "{err}"
    );
    let err = fails(&["map", "-g", "lb-test:tasks=10,colour=red"]);
    assert!(
        err.contains("workload `lb-test` has no parameter `colour`"),
        "{err}"
    );
    let err = fails(&["map", "-g", "lb-test:pus=0"]);
    assert!(err.contains("`pus` = `0`"), "{err}");
}

#[test]
fn bad_trace_files_are_clear_errors() {
    let dir = TempDir::new().unwrap();
    let path = |name: &str, text: &str| file(&dir, name, text).to_str().unwrap().to_string();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                path("nan.csv", "load\n1\nNaN\n"),
                "--pus".into(),
                "2".into(),
            ],
            "nan.csv:3, column 1: `load` = `NaN` is invalid",
        ),
        (
            vec![path("neg.json", r#"{"task_loads":[1,-1],"num_pus":1}"#)],
            "`task_loads[1]` = `-1` is invalid",
        ),
        (
            vec![path("zero.csv", "load\n1\n"), "--pus".into(), "0".into()],
            "there are no PUs",
        ),
        (
            vec![
                path("t.csv", "load\n1\n"),
                "--pu-file".into(),
                path("off.csv", "available\nfalse\nfalse\n"),
            ],
            "all 2 PUs are unavailable",
        ),
        (
            vec![path(
                "len.json",
                r#"{"task_loads":[1,2],"migratable":[true],"num_pus":1}"#,
            )],
            "`migratable` has 1 entries but there are 2 tasks",
        ),
        (
            vec![path(
                "pus.json",
                r#"{"task_loads":[1],"num_pus":2,"pu_loads":[0]}"#,
            )],
            "disagree on the number of PUs",
        ),
        (
            vec![path("nopus.csv", "load\n1\n")],
            "does not say how many PUs there are",
        ),
        (
            vec![
                dir.path().join("missing.csv").to_str().unwrap().to_string(),
                "--pus".into(),
                "1".into(),
            ],
            "cannot read",
        ),
        (
            vec![
                path("rows.csv", "load,migratable\n1,true\n2\n"),
                "--pus".into(),
                "1".into(),
            ],
            "rows.csv:3: this row has 1 fields but the header has 2",
        ),
        (
            vec![path("cols.csv", "weight\n1\n"), "--pus".into(), "1".into()],
            "unknown column `weight`",
        ),
        (
            vec![
                path("miss.csv", "migratable\ntrue\n"),
                "--pus".into(),
                "1".into(),
            ],
            "missing column `load`",
        ),
        (
            vec![path("empty.csv", ""), "--pus".into(), "1".into()],
            "is empty",
        ),
        (
            vec![path("bad.json", "{\"task_loads\": [1,")],
            "bad.json: EOF while parsing",
        ),
        (
            vec![
                path("range.csv", "load,current_pu\n1,7\n"),
                "--pus".into(),
                "2".into(),
            ],
            "range.csv:2: task 0 is placed on PU 7",
        ),
        (vec![path("loads.txt", "load\n1\n")], "unknown trace format"),
    ];
    for (args, needle) in cases {
        let mut all = vec!["map".to_string(), "--tasks".to_string()];
        all.extend(args);
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        // A file that does not read or parse is a runtime failure.
        let (stdout, err) = fails_at_runtime(&all);
        assert!(stdout.is_empty(), "{all:?}: {stdout}");
        assert!(
            err.contains(needle),
            "{all:?}: expected `{needle}` in: {err}"
        );
    }
}

#[test]
fn refine_without_a_current_mapping_names_the_missing_input() {
    let dir = TempDir::new().unwrap();
    let tasks = file(&dir, "t.csv", "load\n1\n2\n");
    let tasks = tasks.to_str().unwrap();
    // greedy still gets its row; refine is reported after it, saying what
    // to add; the command exits 1.
    let args = [
        "map", "--pus", "2", "-p", "greedy", "-p", "refine", "-i", tasks,
    ];
    let (out, err) = fails_at_runtime(&args);
    assert!(
        out.lines().any(|l| l.trim_start().starts_with("greedy")),
        "{out}"
    );
    assert!(!out.contains("refine"), "{out}");
    assert!(
        err.contains("1 of 2 policies failed")
            && err.contains("refine: policy `refine` requires current mapping")
            && err.contains("add a `current_pu` column to the task CSV"),
        "{err}"
    );
    // The JSON document has greedy's result and refine's failure.
    let output = keel().args(args).arg("--json").output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["results"][0]["policy"], "greedy");
    assert_eq!(json["results"].as_array().unwrap().len(), 1);
    assert_eq!(json["failed"][0]["policy"], "refine");
    // A generated workload is told what to add to its spec.
    let (_, err) = fails_at_runtime(&["map", "-g", "ramp:current=none", "-p", "refine"]);
    assert!(
        err.contains("add `current=block` to the workload spec"),
        "{err}"
    );
}

#[test]
fn map_carries_task_ids_to_the_mapping() {
    let dir = TempDir::new().unwrap();
    let ids = file(&dir, "ids.csv", "task,load\nalpha,3\nbeta,2\ngamma,1\n");
    let ids = ids.to_str().unwrap();
    let assert = keel()
        .args([
            "map",
            "--pus",
            "2",
            "-p",
            "greedy",
            "--show-mapping",
            "--input",
            ids,
        ])
        .assert()
        .success();
    let out = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    // greedy: alpha (3) alone, beta + gamma (3) on the other PU.
    assert!(
        out.contains("mapping of greedy: alpha=0 beta=1 gamma=1"),
        "{out}"
    );
    let json = json_of(&["map", "--pus", "2", "--show-mapping", "--json", "-i", ids]);
    assert_eq!(
        json["task_ids"],
        serde_json::json!(["alpha", "beta", "gamma"])
    );
    assert_eq!(json["results"][0]["mapping"], serde_json::json!([0, 1, 1]));
    // `id` works too; ids must be unique and non-empty; other columns stay errors.
    let cases = [
        (
            "dup.csv",
            "id,load\na,1\na,2\n",
            "dup.csv:3: task id `a` appears twice (first at",
        ),
        (
            "both.csv",
            "id,task,load\na,b,1\n",
            "columns `id` and `task` both name the task",
        ),
        (
            "blank.csv",
            "id,load\n,1\n",
            "`id` = `` is invalid: expected a non-empty task id",
        ),
        (
            "other.csv",
            "id,load,owner\na,1,me\n",
            "unknown column `owner`",
        ),
    ];
    for (name, text, needle) in cases {
        let path = file(&dir, name, text);
        let (_, err) = fails_at_runtime(&["map", "--pus", "1", "-i", path.to_str().unwrap()]);
        assert!(err.contains(needle), "{name}: {err}");
    }
    let json = json_of(&[
        "map",
        "--pus",
        "1",
        "--json",
        "--show-mapping",
        "-i",
        &file(&dir, "id.csv", "id,load\n7,1\n").to_string_lossy(),
    ]);
    assert_eq!(json["task_ids"], serde_json::json!(["7"]));
}

#[test]
fn usage_errors_exit_2() {
    let err = fails(&["map"]);
    assert!(
        err.contains("--tasks") || err.contains("--generate"),
        "{err}"
    );
    let err = fails(&["map", "-g", "ramp", "--pus", "3"]);
    assert!(err.contains("--pus"), "{err}");
    let err = fails(&["map", "-g", "ramp", "--tasks", "x.csv"]);
    assert!(err.contains("cannot be used with"), "{err}");
    fails(&["frobnicate"]);
    keel().arg("--help").assert().success();
}
