//! A manager without privileges still schedules, and says what it could
//! not do: no cgroup of its own (signals instead of the freezer), no
//! `SCHED_FIFO`, and no priority raise for F processes (CAP_SYS_NICE).
//! The test runs the manager as nobody, from copies in its own 0755
//! directory (the checkout may be where nobody cannot go); it needs root
//! and two CPUs and says whether it ran (`common::can_run`).

mod common;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::process::Command;

use common::{binaries_for_other_users, can_run, can_run_as_root};
use keel_cosched::sys;

#[test]
fn an_unprivileged_manager_reports_the_refused_boost() {
    let test = "an_unprivileged_manager_reports_the_refused_boost";
    let cpus = sys::allowed_cpus().map_or(0, |c| c.len());
    if !can_run_as_root(test) || !can_run(test, "two CPUs", cpus >= 2) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bins = binaries_for_other_users(dir.path());
    let jobs = dir.path().join("jobs.txt");
    // The imbalanced pair: FCS makes one rank of each job F and boosts it
    // in its slot, which nobody may not do.
    std::fs::write(
        &jobs,
        "j0 2 -- @bsp --iterations 60 --granularity-ms 6 --scale 2,1\n\
         j1 2 -- @bsp --iterations 60 --granularity-ms 6 --scale 1,2\n",
    )
    .unwrap();
    std::fs::set_permissions(&jobs, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = Command::new(&bins.manager)
        .current_dir(dir.path())
        .arg("run")
        .arg("--bsp")
        .arg(&bins.bsp)
        .args(["--policy", "fcs:cslots-min=3", "--json"])
        .arg(&jobs)
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let notices: Vec<&str> = v["notices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notices
            .iter()
            .any(|n| n.contains("cannot raise F processes' priority")),
        "{notices:?}"
    );
    assert!(
        stderr.contains("cannot raise F processes' priority"),
        "said on stderr too: {stderr}"
    );
    // Said once per node at most, not once per slot.
    assert!(stderr.matches("cannot raise").count() <= 2, "{stderr}");
    assert_eq!(v["jobs"][0]["classes"], serde_json::json!(["DC", "F"]));
}
