//! The manager is SIGKILLed while multi-process jobs are suspended: two
//! jobs of two ranks in two rows of GS, each rank a shell wrapper that
//! forks the real program (the BSP job).
//!
//! - While a rank is suspended, what it forked is suspended too (signals:
//!   the rank's process group is stopped; the freezer: its cgroup).
//! - `--on-manager-exit resume` (the default): afterwards no job process,
//!   children included, is stopped or frozen; all keep running and
//!   complete; the guardians then remove pages, cgroups and the run
//!   directory.
//! - `--on-manager-exit kill`: every job process, children included, is
//!   gone (the guardians resume and kill the groups; `PR_SET_PDEATHSIG`
//!   usually gets to the wrappers first, so it is also turned off to test
//!   the guardians alone).
//!
//! The freezer variants say whether they ran (`common::can_run`).

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use common::{
    can_run, children_of, gone, have_freezer, suspended, wait_until, wrapped_bsp, KillOnDrop,
};
use keel_cosched::sys::{self, Pid};

/// The tests are timing-based and each runs a manager on every CPU: one
/// at a time.
static SERIAL: Mutex<()> = Mutex::new(());

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum OnExit {
    Resume,
    Kill,
}

/// Supersteps of a job that must complete after its manager died: a few
/// seconds of work even when both jobs share the CPUs unscheduled.
const RESUMED_ITERATIONS: u64 = 400;

fn kill_manager_while_suspended(test: &str, suspend: &str, on_exit: OnExit, pdeathsig: bool) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if suspend == "freezer" && !can_run(test, "the cgroup v2 freezer", have_freezer()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let jobs = dir.path().join("jobs.txt");
    let iterations = match on_exit {
        OnExit::Resume => RESUMED_ITERATIONS,
        OnExit::Kill => 1_000_000,
    };
    let args = format!("--iterations {iterations} --granularity-ms 5");
    // Two jobs in two rows of GS: at any time one of them is suspended.
    std::fs::write(
        &jobs,
        format!(
            "{}\n{}\n",
            wrapped_bsp("a", 2, &args),
            wrapped_bsp("b", 2, &args)
        ),
    )
    .unwrap();
    let mut cmd = Command::new(common::manager_binary());
    cmd.args([
        "run",
        "--policy",
        "gs:t-slice=0.05",
        "--suspend",
        suspend,
        "--on-manager-exit",
        match on_exit {
            OnExit::Resume => "resume",
            OnExit::Kill => "kill",
        },
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
    let mut wrappers = Vec::new();
    while wrappers.len() < 4 {
        let pid = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the manager started four processes");
        wrappers.push(pid);
        guard.pids.push(pid);
    }
    // Each wrapper forks its program.
    let mut pairs: Vec<(Pid, Pid)> = Vec::new();
    for &w in &wrappers {
        assert!(
            wait_until(Duration::from_secs(10), || children_of(w).len() == 1),
            "wrapper {w} forked its program"
        );
        let child = children_of(w)[0];
        guard.pids.push(child);
        pairs.push((w, child));
    }
    let all: Vec<Pid> = pairs.iter().flat_map(|&(w, c)| [w, c]).collect();
    // Let a few slots switch (50 ms each) before checking.
    std::thread::sleep(Duration::from_millis(150));
    // One job (two ranks) is suspended at a time, and with each rank what
    // it forked: seen consistently between two slot switches.
    let stop_state = |p: Pid| {
        if suspend == "signals" {
            sys::proc_state(p) == Some('T')
        } else {
            suspended(p)
        }
    };
    // One reading of every process per check: two readings could straddle
    // a slot switch.
    let consistent = || {
        let snapshot: Vec<(bool, bool)> = pairs
            .iter()
            .map(|&(w, c)| (stop_state(w), stop_state(c)))
            .collect();
        snapshot.iter().filter(|(w, _)| *w).count() == 2 && snapshot.iter().all(|(w, c)| w == c)
    };
    assert!(
        wait_until(Duration::from_secs(10), consistent),
        "while a rank is suspended its child is too: {:?}",
        pairs
            .iter()
            .map(|&(w, c)| (stop_state(w), stop_state(c)))
            .collect::<Vec<_>>()
    );

    sys::kill(manager_pid, libc::SIGKILL).unwrap();
    let status = guard.children[0].wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );
    let states = || -> Vec<_> { all.iter().map(|&p| (p, sys::proc_state(p))).collect() };
    match on_exit {
        OnExit::Resume => {
            // Resumed, all of them, and still there (the work is not done).
            let resumed = wait_until(Duration::from_secs(5), || {
                all.iter().all(|&p| !gone(p) && !suspended(p))
            });
            assert!(
                resumed,
                "every job process, children included, runs on: {:?}",
                states()
            );
            // They stay resumed and complete on their own.
            let done = wait_until(Duration::from_secs(120), || {
                assert!(
                    !all.iter().any(|&p| suspended(p)),
                    "a job process was stopped again: {:?}",
                    states()
                );
                all.iter().all(|&p| gone(p))
            });
            assert!(done, "the resumed jobs completed: {:?}", states());
        }
        OnExit::Kill => {
            let all_gone = wait_until(Duration::from_secs(10), || all.iter().all(|&p| gone(p)));
            let s = states();
            assert!(
                !s.iter().any(|(_, st)| *st == Some('T')),
                "a job process was left stopped: {s:?}"
            );
            assert!(
                all_gone,
                "job processes (children included) outlived their manager: {s:?}"
            );
        }
    }
    // The guardians also removed the pages, the run directory and the
    // cgroups.
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
fn sigkill_resume_with_signals_leaves_every_job_running() {
    kill_manager_while_suspended(
        "sigkill_resume_with_signals_leaves_every_job_running",
        "signals",
        OnExit::Resume,
        true,
    );
}

#[test]
fn sigkill_resume_with_the_freezer_leaves_every_job_running() {
    kill_manager_while_suspended(
        "sigkill_resume_with_the_freezer_leaves_every_job_running",
        "freezer",
        OnExit::Resume,
        true,
    );
}

#[test]
fn sigkill_kill_with_signals_leaves_no_process() {
    kill_manager_while_suspended(
        "sigkill_kill_with_signals_leaves_no_process",
        "signals",
        OnExit::Kill,
        true,
    );
}

#[test]
fn sigkill_kill_with_signals_and_guardians_only() {
    kill_manager_while_suspended(
        "sigkill_kill_with_signals_and_guardians_only",
        "signals",
        OnExit::Kill,
        false,
    );
}

#[test]
fn sigkill_kill_with_the_freezer_leaves_no_process() {
    kill_manager_while_suspended(
        "sigkill_kill_with_the_freezer_leaves_no_process",
        "freezer",
        OnExit::Kill,
        true,
    );
}

#[test]
fn sigkill_kill_with_the_freezer_and_guardians_only() {
    kill_manager_while_suspended(
        "sigkill_kill_with_the_freezer_and_guardians_only",
        "freezer",
        OnExit::Kill,
        false,
    );
}
