//! The control socket checks peer credentials: only the user who submitted
//! a job may control it. The test runs as root; the other user is nobody
//! (65534), whose requests are made by a child process that drops to that
//! uid before it connects (`Command::uid`: fork, setuid, exec, connect).
//! What nobody runs (the client, the BSP job) is copied into the test's
//! 0755 directory first, since the checkout may be where nobody cannot
//! go; the test needs root and says whether it ran (`common::can_run`).

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::{
    binaries_for_other_users, can_run_as_root, gone, long_bsp, suspended, wait_until, KillOnDrop,
};
use keel_cosched::sys::{self, Pid};

const NOBODY: u32 = 65534;

/// One request through the manager binary's client (`manager`), as `uid`.
fn ctl_as(manager: &Path, socket: &Path, uid: u32, request: &str) -> (Output, String) {
    let mut cmd = Command::new(manager);
    cmd.arg("ctl")
        .arg(socket)
        .args(request.split_whitespace())
        .current_dir("/");
    if uid != sys::getuid() {
        cmd.uid(uid).gid(uid);
    }
    let out = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out, text)
}

/// The pids listed in a `status` reply.
fn pids_of(status: &str) -> Vec<Pid> {
    status
        .split_whitespace()
        .find_map(|w| w.strip_prefix("pids="))
        .map(|p| p.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_default()
}

#[test]
fn only_the_submitting_user_controls_a_job() {
    if !can_run_as_root("only_the_submitting_user_controls_a_job") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bins = binaries_for_other_users(dir.path());
    let ctl = |socket: &Path, uid: u32, request: &str| ctl_as(&bins.manager, socket, uid, request);
    let socket = dir.path().join("ctl.sock");
    let jobs = dir.path().join("jobs.txt");
    // Two 1-rank jobs sharing PE 0 under GS: one is always suspended.
    std::fs::write(
        &jobs,
        format!(
            "{}\n{}\n",
            long_bsp("a", 1, "pes=0"),
            long_bsp("b", 1, "pes=0")
        ),
    )
    .unwrap();
    let mut guard = KillOnDrop::default();
    let mut manager = Command::new(&bins.manager)
        .current_dir(dir.path())
        .arg("run")
        .arg("--bsp")
        .arg(&bins.bsp)
        .args([
            "--policy",
            "gs:t-slice=0.05",
            "--serve",
            "--verbose",
            "--control",
        ])
        .arg(&socket)
        .arg(&jobs)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = manager.stderr.take().unwrap();
    guard.children.push(manager);
    std::thread::spawn(move || for _ in BufReader::new(stderr).lines() {});
    assert!(wait_until(Duration::from_secs(20), || socket.exists()));

    // Root owns both jobs.
    let (out, list) = ctl(&socket, 0, "list");
    assert!(out.status.success(), "{list}");
    let ids: Vec<u64> = list
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    assert_eq!(ids.len(), 2, "{list}");
    assert!(wait_until(Duration::from_secs(20), || ids.iter().all(
        |id| pids_of(&ctl(&socket, 0, &format!("status {id}")).1).len() == 1
    )));
    let pid_a = pids_of(&ctl(&socket, 0, &format!("status {}", ids[0])).1)[0];
    let pid_b = pids_of(&ctl(&socket, 0, &format!("status {}", ids[1])).1)[0];
    guard.pids.extend([pid_a, pid_b]);

    // nobody may neither kill nor inspect root's job, and sees none of them.
    let (out, reply) = ctl(&socket, NOBODY, &format!("kill {}", ids[0]));
    assert!(!out.status.success());
    assert!(reply.starts_with("error: permission denied"), "{reply}");
    assert!(
        reply.contains("uid 0") && reply.contains("uid 65534"),
        "{reply}"
    );
    let (_, reply) = ctl(&socket, NOBODY, &format!("status {}", ids[0]));
    assert!(reply.starts_with("error: permission denied"), "{reply}");
    let (out, reply) = ctl(&socket, NOBODY, "list");
    assert!(out.status.success());
    assert_eq!(reply, "ok", "nobody lists no job of root's");
    let (_, reply) = ctl(&socket, NOBODY, "shutdown");
    assert!(reply.starts_with("error: permission denied"), "{reply}");
    std::thread::sleep(Duration::from_millis(100));
    assert!(!gone(pid_a) && !gone(pid_b), "the refused kill did nothing");

    // nobody submits a job of its own: it runs as nobody, and root may not
    // control it either (no root exemption).
    let (out, reply) = ctl(
        &socket,
        NOBODY,
        "submit c 1 pes=1 -- @bsp --iterations 1000000 --granularity-ms 5",
    );
    assert!(out.status.success(), "{reply}");
    let id_c: u64 = reply.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(wait_until(Duration::from_secs(20), || pids_of(
        &ctl(&socket, NOBODY, &format!("status {id_c}")).1
    )
    .len()
        == 1));
    let pid_c = pids_of(&ctl(&socket, NOBODY, &format!("status {id_c}")).1)[0];
    guard.pids.push(pid_c);
    let uid_line = std::fs::read_to_string(format!("/proc/{pid_c}/status"))
        .unwrap()
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .unwrap()
        .to_string();
    assert!(
        uid_line.split_whitespace().nth(1) == Some("65534"),
        "{uid_line}"
    );
    let (_, reply) = ctl(&socket, 0, &format!("kill {id_c}"));
    assert!(reply.starts_with("error: permission denied"), "{reply}");
    let (out, reply) = ctl(&socket, NOBODY, &format!("kill {id_c}"));
    assert!(out.status.success(), "{reply}");
    assert!(wait_until(Duration::from_secs(10), || gone(pid_c)));

    // The owner kills a job while it is suspended: it is resumed and
    // reaped, and the other one runs on.
    assert!(wait_until(Duration::from_secs(10), || suspended(pid_a)));
    let (out, reply) = ctl(&socket, 0, &format!("kill {}", ids[0]));
    assert!(out.status.success(), "{reply}");
    assert!(wait_until(Duration::from_secs(10), || gone(pid_a)));
    assert_eq!(sys::proc_state(pid_a).filter(|s| *s == 'T'), None);
    // The manager records the end once the node manager has reaped it.
    assert!(
        wait_until(Duration::from_secs(10), || ctl(
            &socket,
            0,
            &format!("status {}", ids[0])
        )
        .1
        .contains(" killed ")),
        "the killed job is reported killed"
    );

    // A job whose program does not exist ended failed, and says so as the
    // final report does.
    let (out, reply) = ctl(&socket, 0, "submit ghost 1 pes=1 -- /nonexistent/program");
    assert!(out.status.success(), "{reply}");
    let ghost: u64 = reply.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || ctl(
            &socket,
            0,
            &format!("status {ghost}")
        )
        .1
        .contains(" failed ")),
        "{}",
        ctl(&socket, 0, &format!("status {ghost}")).1
    );
    assert!(ctl(&socket, 0, "list").1.contains(" ghost failed "));

    // Shutting down ends the rest and the daemon.
    let (out, reply) = ctl(&socket, 0, "shutdown");
    assert!(out.status.success(), "{reply}");
    assert!(wait_until(Duration::from_secs(10), || gone(pid_b)));
    let status = guard.children[0].wait().unwrap();
    // The daemon reports that not every job completed.
    assert_eq!(status.code(), Some(2));
    assert!(!socket.exists(), "the socket file is removed");
}
