//! Every subcommand, found by walking `keel --help` recursively: its help
//! prints, describes it, and offers `--json` and `--quiet`; a quick form of
//! it with `--json` prints one JSON document. A subcommand added without a
//! quick form here fails the walk. The exit statuses (0, 1, 2) are pinned
//! at the end.

use std::collections::BTreeMap;

use assert_cmd::Command;
use tempfile::TempDir;

fn keel() -> Command {
    Command::cargo_bin("keel").unwrap()
}

/// The subcommands a help text lists, with their one-line descriptions
/// (`help` itself left out).
fn subcommands(help: &str) -> Vec<(String, String)> {
    help.lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| {
            let l = l.trim();
            let (name, about) = l.split_once(char::is_whitespace)?;
            (name != "help").then(|| (name.to_string(), about.trim().to_string()))
        })
        .collect()
}

fn help_of(path: &[String]) -> String {
    let output = keel().args(path).arg("--help").output().unwrap();
    assert!(output.status.success(), "keel {path:?} --help failed");
    String::from_utf8(output.stdout).unwrap()
}

/// Every leaf command reachable from `keel --help`, with its help text.
fn leaves(path: Vec<String>, found: &mut BTreeMap<String, String>) {
    let help = help_of(&path);
    let children = subcommands(&help);
    if children.is_empty() {
        found.insert(path.join(" "), help);
        return;
    }
    for (name, about) in children {
        assert!(about.len() > 10, "`keel {path:?} {name}` is not described");
        let mut child = path.clone();
        child.push(name);
        leaves(child, found);
    }
}

/// A quick form of each leaf, run with `--json` appended (seconds in all
/// in a debug build). `cosched run` starts real jobs under a gang
/// scheduler for tens of seconds even with `--quick`: its JSON is checked
/// by `tests/cosched.rs`, and here only its help.
fn quick_forms(dir: &TempDir) -> BTreeMap<&'static str, Option<Vec<String>>> {
    let loads = dir.path().join("loads.csv");
    std::fs::write(&loads, "id,load\na,3\nb,2\nc,1\n").unwrap();
    let swf = dir.path().join("log.swf");
    std::fs::write(&swf, "1 0 0 10 2 -1 -1 2 10 -1 1 1 1 -1 1 -1 -1 -1\n").unwrap();
    let trace = dir.path().join("trace.csv");
    let mut text = String::from("step,cost_us\n");
    for i in 0..40 {
        text.push_str(&format!("0,{}\n", i % 7 + 1));
    }
    std::fs::write(&trace, text).unwrap();
    let omp_report = dir.path().join("report.jsonl");
    std::fs::write(
        &omp_report,
        r#"{"format":"keel-omp-report","version":1,"program":"/bin/app","pid":1,"taken":3,"forwarded":0,"loops":[{"object":null,"offset":null,"name":"omp:app+0x10","instances":3,"total_time":0.25,"mean_lib_percent":4.0,"threads":2,"iterations":100,"schedules":[{"schedule":"gss","instances":3}],"schedule_runs_dropped":0,"selection":null}]}"#,
    )
    .unwrap();
    let path = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let form = |args: &[&str]| Some(args.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    BTreeMap::from([
        ("map", form(&["map", "--pus", "2", "-i", &path(&loads)])),
        ("policies", form(&["policies"])),
        ("demo", form(&["demo", "lb-test"])),
        (
            "bench loops",
            form(&[
                "bench",
                "loops",
                "--reps",
                "1",
                "-s",
                "static",
                "-w",
                "mandelbrot:width=16,height=8,max-iter=20",
            ]),
        ),
        (
            "bench farm",
            form(&["bench", "farm", "--quick", "--runs", "1", "-e", "overhead"]),
        ),
        (
            "bench auto",
            form(&[
                "bench",
                "auto",
                "--reps",
                "1",
                "--quiet",
                "-w",
                "phase-change:iterations=400,steps=2,switch=1",
            ]),
        ),
        (
            "bench objects",
            form(&["bench", "objects", "--quick", "--reps", "1"]),
        ),
        (
            "sim calibrate",
            form(&["sim", "calibrate", "--repeats", "1", "--iterations", "1000"]),
        ),
        (
            "sim validate",
            form(&[
                "sim",
                "validate",
                "--quiet",
                "--reps",
                "1",
                "-s",
                "static",
                "-w",
                "mandelbrot:width=16,height=8,max-iter=20",
            ]),
        ),
        (
            "sim loops",
            form(&[
                "sim",
                "loops",
                "--quiet",
                "--input",
                &path(&trace),
                "--trace-threads",
                "2",
                "-s",
                "static",
            ]),
        ),
        (
            "sim hybrid",
            form(&[
                "sim",
                "hybrid",
                "--quiet",
                "--ranks",
                "2",
                "--threads",
                "2",
                "--workload",
                "sphynx:particles=400,short-particles=200,steps=2",
            ]),
        ),
        (
            "sim rank-scale",
            form(&[
                "sim",
                "rank-scale",
                "--quiet",
                "--ranks",
                "16",
                "--objects",
                "8",
            ]),
        ),
        (
            "sim perf",
            form(&[
                "sim",
                "perf",
                "--quiet",
                "--iterations",
                "1000",
                "--threads",
                "16",
                "--reps",
                "1",
            ]),
        ),
        (
            "sim farm",
            form(&["sim", "farm", "--threads", "4", "--tasks", "100"]),
        ),
        (
            "sim objects",
            form(&[
                "sim",
                "objects",
                "--nodes",
                "2",
                "--pus-per-node",
                "2",
                "--period",
                "5",
                "--periods",
                "5",
            ]),
        ),
        (
            "sim cosched verify",
            form(&[
                "sim",
                "cosched",
                "--quick",
                "--quiet",
                "verify",
                "--scenario",
                "fine-grained",
            ]),
        ),
        (
            "sim cosched fig5",
            form(&[
                "sim",
                "cosched",
                "--quick",
                "--quiet",
                "fig5",
                "--granularities",
                "0.004",
                "--variabilities",
                "0",
                "--patterns",
                "nn",
            ]),
        ),
        (
            "sim cosched apps",
            form(&[
                "sim", "cosched", "--quick", "--quiet", "apps", "--mix", "sage",
            ]),
        ),
        (
            "sim cosched swf",
            form(&[
                "sim",
                "cosched",
                "--quick",
                "--quiet",
                "swf",
                "--input",
                &path(&swf),
                "--nodes",
                "2",
                "--pes-per-node",
                "2",
            ]),
        ),
        ("cosched run", None),
        // Needs root, MPICH and a Slurm cluster: CI's Slurm step runs its
        // quick form against scripts/slurm-local.sh's two nodes.
        ("cosched cluster", None),
        // Runs another program and prints nothing of its own: no --json
        // or --quiet; tested by `tests/omp.rs`.
        ("omp run", None),
        // Needs gcc and libkeel_omp.so beside keel; `tests/omp.rs` runs
        // its quick form where both are there.
        ("omp bench", None),
        ("omp report", form(&["omp", "report", &path(&omp_report)])),
        // Needs MPICH and keel-mpi-bench (feature mpi); keel-mpi's MPI tests
        // run its driver, `tests/mpi.rs` here its refusals.
        ("mpi bench", None),
    ])
}

#[test]
fn every_subcommand_has_help_json_and_quiet_and_a_quick_json_form() {
    let mut found = BTreeMap::new();
    leaves(Vec::new(), &mut found);
    let dir = TempDir::new().unwrap();
    let forms = quick_forms(&dir);
    let names: Vec<&str> = found.keys().map(String::as_str).collect();
    let expected: Vec<&str> = forms.keys().copied().collect();
    assert_eq!(names, expected, "a subcommand without a quick form here");
    for (name, help) in &found {
        if name == "omp run" {
            continue;
        }
        for flag in ["--json", "--quiet"] {
            assert!(help.contains(flag), "`keel {name}` has no {flag}:\n{help}");
        }
        let Some(args) = &forms[name.as_str()] else {
            continue;
        };
        let output = keel().args(args).arg("--json").output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "keel {args:?} --json: {stderr}");
        let doc: serde_json::Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|e| panic!("keel {args:?} --json is not one JSON document: {e}"));
        let empty = match &doc {
            serde_json::Value::Object(o) => o.is_empty(),
            serde_json::Value::Array(a) => a.is_empty(),
            _ => true,
        };
        assert!(!empty, "keel {args:?} --json: {doc}");
    }
}

#[test]
fn policies_json_has_every_family() {
    let output = keel().args(["policies", "--json"]).output().unwrap();
    assert!(output.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    for (family, member) in [
        ("mapping", "greedy"),
        ("loop_schedules", "awf-b"),
        ("auto_methods", "exhaustive"),
        ("farm_dispatch", "arrs"),
        ("exposure", "history-idle"),
        ("cosched", "fcs"),
        ("generators", "lb-test"),
    ] {
        let entries = doc[family]["entries"]
            .as_array()
            .unwrap_or_else(|| panic!("no family `{family}`: {doc}"));
        let entry = entries
            .iter()
            .find(|e| e["name"] == member)
            .unwrap_or_else(|| panic!("`{member}` missing from `{family}`: {doc}"));
        assert!(
            entry["summary"].as_str().is_some_and(|s| !s.is_empty()),
            "{entry}"
        );
    }
}

/// 0 when everything ran; 2 for a usage error (clap's or ours) before any
/// work; 1 for a runtime failure, after printing what could run.
#[test]
fn exit_statuses_are_pinned() {
    let dir = TempDir::new().unwrap();
    let loads = dir.path().join("loads.csv");
    std::fs::write(&loads, "load\n3\n2\n1\n").unwrap();
    let loads = loads.to_str().unwrap();
    let missing = dir.path().join("missing.csv");
    let missing = missing.to_str().unwrap();

    keel()
        .args(["map", "--pus", "2", "-i", loads])
        .assert()
        .code(0);
    // Usage: clap's own, a bad schedule (refused before any run: nothing on
    // stdout), an unknown policy name.
    keel().args(["map", "--frobnicate"]).assert().code(2);
    keel()
        .args(["bench", "loops", "-s", "bogus"])
        .assert()
        .code(2)
        .stdout("");
    keel()
        .args(["map", "--pus", "2", "-p", "nope", "-i", loads])
        .assert()
        .code(2);
    // Runtime: a named file that cannot be read; a policy that cannot run
    // on this input, after the rows that could.
    keel()
        .args(["map", "--pus", "2", "-i", missing])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("cannot read"));
    keel()
        .args([
            "map", "--pus", "2", "-p", "greedy", "-p", "refine", "-i", loads,
        ])
        .assert()
        .code(1)
        .stdout(predicates::str::contains("greedy"));
}
