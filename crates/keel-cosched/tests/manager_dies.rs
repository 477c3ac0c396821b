//! When the manager is SIGKILLed while jobs are suspended, no job process
//! is left stopped: every one is gone (the guardians resume and kill them;
//! `PR_SET_PDEATHSIG` usually gets there first). Checked for both suspend
//! methods, and with the parent-death signal off so that the guardians
//! alone are tested.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{gone, long_bsp, manager_binary, suspended, wait_until, KillOnDrop};
use keel_cosched::sys::{self, Pid};

fn kill_manager_while_suspended(suspend: &str, pdeathsig: bool) {
    if suspend == "freezer"
        && keel_cosched::suspend::Suspender::new(keel_cosched::SuspendChoice::Freezer).is_err()
    {
        eprintln!("skipped: no usable cgroup v2 freezer here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let jobs = dir.path().join("jobs.txt");
    // Two jobs in two rows of GS: at any time one of them is suspended.
    std::fs::write(
        &jobs,
        format!("{}\n{}\n", long_bsp("a", 2, ""), long_bsp("b", 2, "")),
    )
    .unwrap();
    let mut cmd = Command::new(manager_binary());
    cmd.args([
        "run",
        "--policy",
        "gs:t-slice=0.05",
        "--suspend",
        suspend,
        "--verbose",
    ])
    .arg(&jobs)
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    if !pdeathsig {
        cmd.arg("--no-pdeathsig");
    }
    let mut guard = KillOnDrop::default();
    let mut manager = cmd.spawn().unwrap();
    let stderr = manager.stderr.take().unwrap();
    let manager_pid = manager.id() as Pid;
    guard.children.push(manager);
    // Collect the job pids from the manager's event lines.
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(pid) = line
                .split_whitespace()
                .find_map(|w| w.strip_prefix("pid="))
                .and_then(|p| p.parse::<Pid>().ok())
            {
                let _ = tx.send(pid);
            }
        }
    });
    let mut pids = Vec::new();
    while pids.len() < 4 {
        let pid = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the manager started four processes");
        pids.push(pid);
        guard.pids.push(pid);
    }
    // Let a few slots switch (50 ms each) before checking.
    std::thread::sleep(Duration::from_millis(150));
    assert!(
        wait_until(Duration::from_secs(10), || pids
            .iter()
            .filter(|&&p| suspended(p))
            .count()
            == 2),
        "two processes (one job) are suspended at a time"
    );
    if suspend == "signals" {
        assert_eq!(
            pids.iter()
                .filter(|&&p| sys::proc_state(p) == Some('T'))
                .count(),
            2
        );
    }
    sys::kill(manager_pid, libc::SIGKILL).unwrap();
    let status = guard.children[0].wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );
    let all_gone = wait_until(Duration::from_secs(10), || pids.iter().all(|&p| gone(p)));
    let states: Vec<_> = pids.iter().map(|&p| (p, sys::proc_state(p))).collect();
    assert!(
        !states.iter().any(|(_, s)| *s == Some('T')),
        "a job process was left stopped: {states:?}"
    );
    assert!(all_gone, "job processes outlived their manager: {states:?}");
    // The guardians also removed the pages and the cgroups.
    let ours = |name: &str| {
        name.strip_prefix(&format!("keel-cosched-{}-", sys::getuid()))
            .and_then(|rest| rest.split('-').next())
            .and_then(|job| job.parse::<u64>().ok())
            .is_some_and(|job| job / 10_000 == manager_pid as u64)
    };
    assert!(
        wait_until(Duration::from_secs(5), || std::fs::read_dir("/dev/shm")
            .unwrap()
            .flatten()
            .all(|e| !ours(&e.file_name().to_string_lossy()))),
        "pages left behind"
    );
    let run_prefix = format!("keel-cosched-{manager_pid}-");
    assert!(
        wait_until(Duration::from_secs(5), || std::fs::read_dir(
            std::env::temp_dir()
        )
        .unwrap()
        .flatten()
        .all(|e| !e.file_name().to_string_lossy().starts_with(&run_prefix))),
        "the run directory was left behind"
    );
    if suspend == "freezer" {
        let own = common::cgroup2_dir(sys::getpid()).unwrap();
        let prefix = format!("keel-cosched-{manager_pid}-");
        assert!(
            wait_until(Duration::from_secs(5), || std::fs::read_dir(&own)
                .unwrap()
                .flatten()
                .all(|e| !e.file_name().to_string_lossy().starts_with(&prefix))),
            "the manager's cgroup was left behind"
        );
    }
}

#[test]
fn sigkill_with_signals_leaves_no_stopped_process() {
    kill_manager_while_suspended("signals", true);
}

#[test]
fn sigkill_with_signals_and_guardians_only() {
    kill_manager_while_suspended("signals", false);
}

#[test]
fn sigkill_with_the_freezer_leaves_no_frozen_process() {
    kill_manager_while_suspended("freezer", true);
}

#[test]
fn sigkill_with_the_freezer_and_guardians_only() {
    kill_manager_while_suspended("freezer", false);
}
