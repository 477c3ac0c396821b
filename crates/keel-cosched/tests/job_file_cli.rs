//! Malformed job files are refused before anything runs, with the file
//! and line in the message.

mod common;

use std::process::Command;

use common::manager_binary;

#[test]
fn a_malformed_job_file_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let jobs = dir.path().join("bad.txt");
    std::fs::write(&jobs, "# ok so far\na 1 -- true\nb two -- true\n").unwrap();
    let out = Command::new(manager_binary())
        .arg("run")
        .arg(&jobs)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "{}:3: job `b`: ranks `two` is not an integer >= 1",
            jobs.display()
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
    let dir = tempfile::tempdir().unwrap();
    let jobs = dir.path().join("wide.txt");
    // Once an abort: one entry per rank was allocated before admission.
    std::fs::write(&jobs, "a 1 -- true\nx 1000000000000 -- true\n").unwrap();
    let out = Command::new(manager_binary())
        .arg("run")
        .arg(&jobs)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "{}:2: job `x`: ranks is 1000000000000, over the limit of 4096 (MAX_RANKS)",
            jobs.display()
        )),
        "{err}"
    );
}
