//! Malformed job files are refused before anything runs, with the file
//! and line in the message.

mod common;

use std::process::Command;

use common::manager_binary;

/// Runs the manager on a job file holding `text`; it must refuse the file
/// with a usage error (exit 2). Returns the file's path and stderr.
fn refused_job_file(text: &str) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let jobs = dir.path().join("jobs.txt");
    std::fs::write(&jobs, text).unwrap();
    let out = Command::new(manager_binary())
        .arg("run")
        .arg(&jobs)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (jobs.display().to_string(), err)
}

#[test]
fn a_malformed_job_file_names_its_line() {
    let (jobs, err) = refused_job_file("# ok so far\na 1 -- true\nb two -- true\n");
    assert!(
        err.contains(&format!(
            "{jobs}:3: job `b`: ranks `two` is not an integer >= 1"
        )),
        "{err}"
    );
}

#[test]
fn a_job_file_runs_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let jobs = dir.path().join("jobs.txt");
    std::fs::write(
        &jobs,
        "a 1 -- @bsp --iterations 3 --granularity-ms 1\nb 1 -- /bin/true\n",
    )
    .unwrap();
    let out = Command::new(manager_binary())
        .args(["run", "--policy", "sb", "--json"])
        .arg(&jobs)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["policy"], "sb");
    assert_eq!(v["jobs"][0]["outcome"]["kind"], "completed");
    assert_eq!(v["jobs"][1]["outcome"]["kind"], "completed");
}

#[test]
fn a_job_file_over_a_limit_is_refused_naming_it() {
    // Refused before anything is allocated per rank.
    let (jobs, err) = refused_job_file("a 1 -- true\nx 1000000000000 -- true\n");
    assert!(
        err.contains(&format!(
            "{jobs}:2: job `x`: ranks is 1000000000000, over the limit of 4096 (MAX_RANKS)"
        )),
        "{err}"
    );
}
