//! Helpers shared by the integration tests: process clean-up guards and
//! `/proc` probes.

#![allow(dead_code)]

use std::process::Child;
use std::time::{Duration, Instant};

use keel_cosched::sys::{self, Pid};

/// Kills (after a `SIGCONT`) every listed process when dropped, whatever
/// the test did, so that no test leaves a process behind, least of all a
/// stopped one.
#[derive(Default)]
pub struct KillOnDrop {
    /// Processes to kill, by pid.
    pub pids: Vec<Pid>,
    /// Children to kill and reap.
    pub children: Vec<Child>,
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for &p in &self.pids {
            let _ = sys::kill(p, libc::SIGCONT);
            let _ = sys::kill(p, libc::SIGKILL);
        }
        for c in &mut self.children {
            let _ = sys::kill(c.id() as Pid, libc::SIGCONT);
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Polls `cond` every 2 ms until it holds or `timeout` passes.
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < timeout {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    cond()
}

/// A process that is gone or a zombie (dead, waiting for its parent).
pub fn gone(pid: Pid) -> bool {
    matches!(sys::proc_state(pid), None | Some('Z') | Some('X'))
}

/// The process's cgroup v2 directory, if it is in one under a mount.
pub fn cgroup2_dir(pid: Pid) -> Option<std::path::PathBuf> {
    let own = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let rel = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = mountinfo.lines().find_map(|l| {
        let (pre, post) = l.split_once(" - ")?;
        (post.split_whitespace().next()? == "cgroup2")
            .then(|| pre.split_whitespace().nth(4).map(str::to_string))?
    })?;
    Some(std::path::Path::new(&mount).join(rel.trim_start_matches('/')))
}

/// Whether the process is suspended: stopped (`T`) or in a frozen cgroup.
pub fn suspended(pid: Pid) -> bool {
    if sys::proc_state(pid) == Some('T') {
        return true;
    }
    cgroup2_dir(pid)
        .and_then(|d| std::fs::read_to_string(d.join("cgroup.events")).ok())
        .is_some_and(|e| e.lines().any(|l| l.trim() == "frozen 1"))
}

/// A job line running the BSP job for a long time.
pub fn long_bsp(name: &str, ranks: usize, extra: &str) -> String {
    format!("{name} {ranks} {extra} -- @bsp --iterations 1000000 --granularity-ms 5")
}

/// The BSP job binary of this crate.
pub fn bsp_binary() -> std::ffi::OsString {
    env!("CARGO_BIN_EXE_keel-bsp-job").into()
}

/// The manager binary of this crate.
pub fn manager_binary() -> &'static str {
    env!("CARGO_BIN_EXE_keel-cosched")
}

/// Whether a test whose environment needs `what` (root, two CPUs, the
/// cgroup v2 freezer) can run here: `have` says whether it does. A test
/// that cannot run says `SKIPPED:` and returns without asserting, unless
/// `KEEL_TESTS_REQUIRE` (CI: `root`, ...) names `what`.
pub use keel_testkit::can_run;

/// [`can_run`] for tests that act as another user.
pub fn can_run_as_root(test: &str) -> bool {
    can_run(test, "root", sys::geteuid() == 0)
}

/// The fields of `/proc/<pid>/stat` after the command name: state, ppid,
/// pgrp, ...; `None` when the process does not exist.
fn stat_fields(pid: Pid) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// Every live process id, from `/proc`.
fn all_pids() -> Vec<Pid> {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_string_lossy().parse::<Pid>().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The processes whose parent is `pid`.
pub fn children_of(pid: Pid) -> Vec<Pid> {
    all_pids()
        .into_iter()
        .filter(|&p| {
            stat_fields(p).and_then(|f| f.get(1).and_then(|x| x.parse::<Pid>().ok())) == Some(pid)
        })
        .collect()
}

/// The processes of process group `pgid`.
pub fn group_members(pgid: Pid) -> Vec<Pid> {
    all_pids()
        .into_iter()
        .filter(|&p| {
            stat_fields(p).and_then(|f| f.get(2).and_then(|x| x.parse::<Pid>().ok())) == Some(pgid)
        })
        .collect()
}

/// A job line whose command is a shell wrapper that forks the real
/// program (the BSP job, `args`) and waits for it: the job's process is
/// the shell, the work happens in its child.
pub fn wrapped_bsp(name: &str, ranks: usize, args: &str) -> String {
    let bsp = bsp_binary();
    format!(
        "{name} {ranks} -- /bin/sh -c '{} {args} & wait $!'",
        bsp.to_string_lossy()
    )
}

/// Whether the cgroup v2 freezer is usable here (for [`can_run`]).
pub fn have_freezer() -> bool {
    keel_cosched::suspend::Suspender::new(keel_cosched::SuspendChoice::Freezer).is_ok()
}

/// Copies of this crate's binaries that another user can run.
pub struct SharedBinaries {
    /// The manager, `keel-cosched`.
    pub manager: std::path::PathBuf,
    /// The BSP job, `keel-bsp-job` (beside the manager, where the manager
    /// looks by default; pass it as `--bsp` too).
    pub bsp: std::path::PathBuf,
}

/// Copies the manager and BSP job binaries into `dir`, which it makes
/// 0755, with mode 0755: `target/` may lie under a directory other users
/// cannot enter (root's 0700 home), and a test that runs them as nobody
/// must not depend on where the checkout is.
pub fn binaries_for_other_users(dir: &std::path::Path) -> SharedBinaries {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755))
            .unwrap_or_else(|e| panic!("cannot chmod {}: {e}", p.display()))
    };
    mode(dir);
    let copy = |from: &std::path::Path, name: &str| {
        let to = dir.join(name);
        std::fs::copy(from, &to)
            .unwrap_or_else(|e| panic!("cannot copy {} to {}: {e}", from.display(), to.display()));
        mode(&to);
        to
    };
    SharedBinaries {
        manager: copy(std::path::Path::new(manager_binary()), "keel-cosched"),
        bsp: copy(std::path::Path::new(&bsp_binary()), "keel-bsp-job"),
    }
}
