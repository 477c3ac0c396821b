//! A real Slurm cluster on this machine (`scripts/slurm-local.sh up`):
//! slurmctld and one slurmd per node n1, n2, ... as separate daemons, jobs
//! launched by `srun` across them. The tests read `SLURM_CONF` (the script
//! prints it); without a cluster they print `SKIPPED:`, unless
//! `KEEL_TESTS_REQUIRE` names `slurm` (CI brings the cluster up), in which
//! case they fail.

mod common;

use std::process::Command;
use std::time::Duration;

/// The nodes `sinfo` reports idle, mixed or allocated, when a cluster is
/// reachable through `SLURM_CONF`.
fn live_nodes() -> Vec<String> {
    if std::env::var_os("SLURM_CONF").is_none() {
        return Vec::new();
    }
    let Ok(out) = Command::new("sinfo")
        .args(["-h", "-N", "-o", "%N %t"])
        .output()
    else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (node, state) = l.split_once(' ')?;
            ["idle", "mix", "alloc"]
                .contains(&state.trim())
                .then(|| node.to_string())
        })
        .collect()
}

/// `srun ARGS` with a deadline, its stdout, or a failure naming what it
/// printed.
fn srun(args: &[&str]) -> String {
    let mut child = Command::new("srun")
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("srun starts");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            assert!(
                status.success(),
                "srun {args:?}: {status}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            return String::from_utf8_lossy(&out.stdout).into_owned();
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("srun {args:?} still ran after 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn srun_launches_one_task_on_each_of_two_nodes() {
    let nodes = live_nodes();
    if !common::can_run(
        "srun_launches_one_task_on_each_of_two_nodes",
        "slurm",
        nodes.len() >= 2,
    ) {
        return;
    }
    let out = srun(&[
        "-N",
        "2",
        "-n",
        "2",
        "sh",
        "-c",
        "echo $SLURMD_NODENAME $SLURM_PROCID $SLURM_STEP_NUM_NODES",
    ]);
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines.len(), 2, "{out}");
    // Two different nodes of the cluster, ranks 0 and 1, a 2-node step.
    let (a, b): (Vec<&str>, Vec<&str>) = (
        lines[0].split_whitespace().collect(),
        lines[1].split_whitespace().collect(),
    );
    assert_ne!(a[0], b[0], "both tasks on one node: {out}");
    assert!(
        nodes.iter().any(|n| n == a[0]) && nodes.iter().any(|n| n == b[0]),
        "{out}"
    );
    let mut ranks = [a[1], b[1]];
    ranks.sort_unstable();
    assert_eq!(ranks, ["0", "1"]);
    assert_eq!((a[2], b[2]), ("2", "2"));
}
