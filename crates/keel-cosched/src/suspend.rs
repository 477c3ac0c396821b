//! Suspending and resuming job processes: the cgroup v2 freezer where the
//! daemon may create cgroups, `SIGSTOP`/`SIGCONT` otherwise.
//!
//! The freezer is preferred: it freezes a process and every child it forks,
//! is invisible to the process (no job-control stop, no `SIGCHLD` to its
//! parent) and cannot be undone by the process. Signals go to the job
//! process's own process group, so that what it forks (a shell wrapper's
//! real program) stops and continues with it. Suspension decisions are
//! per process (FCS may run one rank of a job and suspend another on
//! another PE), so every process gets its own cgroup:
//! `<cgroup2 mount><own cgroup>/keel-cosched-<pid>-<n>/job-<id>-<rank>`.
//!
//! A frozen process shows state `S` in `/proc`, not `T`: checks for
//! leftovers must look at `cgroup.events` too (or, as the tests do, check
//! that no job process is left at all).
//!
//! Signals need nothing from the system; `auto` tries the freezer first:
//!
//! ```
//! use keel_cosched::suspend::Suspender;
//! use keel_cosched::{SuspendChoice, SuspendKind};
//! assert_eq!("auto".parse::<SuspendChoice>(), Ok(SuspendChoice::Auto));
//! let suspender = Suspender::new(SuspendChoice::Signals).unwrap();
//! assert_eq!(suspender.kind(), SuspendKind::Signals);
//! ```

use std::ffi::CString;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::sys::{self, Pid};

/// How long removing a process's cgroup waits for its tasks to leave.
pub const CGROUP_REMOVE_WAIT: Duration = Duration::from_secs(2);

/// How processes are suspended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SuspendKind {
    /// `cgroup.freeze` of a per-process cgroup v2.
    Freezer,
    /// `SIGSTOP` / `SIGCONT` to the process.
    Signals,
}

impl fmt::Display for SuspendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SuspendKind::Freezer => "cgroup v2 freezer",
            SuspendKind::Signals => "SIGSTOP/SIGCONT",
        })
    }
}

/// What the user asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SuspendChoice {
    /// The freezer if usable, else signals.
    #[default]
    Auto,
    /// The freezer or an error.
    Freezer,
    /// Signals.
    Signals,
}

impl std::str::FromStr for SuspendChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(SuspendChoice::Auto),
            "freezer" => Ok(SuspendChoice::Freezer),
            "signals" => Ok(SuspendChoice::Signals),
            other => Err(format!(
                "unknown suspend method `{other}`; valid: auto, freezer, signals"
            )),
        }
    }
}

/// The cgroup v2 freezer is unusable here, and why.
#[derive(Debug, thiserror::Error)]
#[error("the cgroup v2 freezer is not usable: {0}")]
pub struct FreezerUnavailable(pub String);

/// Suspends processes the chosen way.
#[derive(Debug)]
pub struct Suspender {
    kind: SuspendKind,
    root: Option<PathBuf>,
    fallback_reason: Option<String>,
}

impl Suspender {
    /// Picks the method: with [`SuspendChoice::Auto`] the freezer when a
    /// cgroup2 hierarchy lets this process create a cgroup with
    /// `cgroup.freeze`, else signals (the reason is kept in
    /// [`Suspender::fallback_reason`]).
    pub fn new(choice: SuspendChoice) -> Result<Suspender, FreezerUnavailable> {
        match choice {
            SuspendChoice::Signals => Ok(Suspender {
                kind: SuspendKind::Signals,
                root: None,
                fallback_reason: None,
            }),
            SuspendChoice::Freezer => Ok(Suspender {
                kind: SuspendKind::Freezer,
                root: Some(create_manager_cgroup()?),
                fallback_reason: None,
            }),
            SuspendChoice::Auto => Ok(match create_manager_cgroup() {
                Ok(root) => Suspender {
                    kind: SuspendKind::Freezer,
                    root: Some(root),
                    fallback_reason: None,
                },
                Err(e) => Suspender {
                    kind: SuspendKind::Signals,
                    root: None,
                    fallback_reason: Some(e.0),
                },
            }),
        }
    }

    /// The method in use.
    pub fn kind(&self) -> SuspendKind {
        self.kind
    }

    /// Why `Auto` fell back to signals, if it did.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback_reason.as_deref()
    }

    /// Creates the cgroup for one process (freezer only).
    pub fn prepare(&self, job: u64, rank: usize) -> io::Result<Option<ProcCgroup>> {
        let Some(root) = &self.root else {
            return Ok(None);
        };
        let dir = root.join(format!("job-{job}-{rank}"));
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        ProcCgroup::at(dir).map(Some)
    }

    /// Suspends one job process and every process it forked: its cgroup,
    /// or with signals its process group (`pid` must lead its own group,
    /// as every job process does; its id is the group's). A process that
    /// moves itself to another group escapes signals, not the freezer.
    pub fn suspend(&self, pid: Pid, cgroup: Option<&ProcCgroup>) -> io::Result<()> {
        match cgroup {
            Some(cg) => cg.set_frozen(true),
            None => sys::killpg(pid, libc::SIGSTOP),
        }
    }

    /// Resumes one job process and what it forked, as [`Suspender::suspend`]
    /// suspended them.
    pub fn resume(&self, pid: Pid, cgroup: Option<&ProcCgroup>) -> io::Result<()> {
        match cgroup {
            Some(cg) => cg.set_frozen(false),
            None => sys::killpg(pid, libc::SIGCONT),
        }
    }
}

impl Drop for Suspender {
    fn drop(&mut self) {
        if let Some(root) = &self.root {
            // Children are removed by their processes' owners; anything left
            // (a process that would not die) keeps the directory, which is
            // then visible to the operator rather than silently lost.
            if let Ok(entries) = std::fs::read_dir(root) {
                for e in entries.flatten() {
                    if e.path().is_dir() {
                        let _ = std::fs::remove_dir(e.path());
                    }
                }
            }
            let _ = std::fs::remove_dir(root);
        }
    }
}

/// One process's cgroup, with its control files as C strings ready for the
/// guardian and `pre_exec` code, which may not allocate.
#[derive(Debug)]
pub struct ProcCgroup {
    dir: PathBuf,
    /// `cgroup.procs`.
    pub procs: CString,
    /// `cgroup.freeze`.
    pub freeze: CString,
    /// `cgroup.kill`.
    pub kill: CString,
    /// The directory.
    pub dir_c: CString,
}

impl ProcCgroup {
    fn at(dir: PathBuf) -> io::Result<ProcCgroup> {
        Ok(ProcCgroup {
            procs: sys::cpath(&dir.join("cgroup.procs"))?,
            freeze: sys::cpath(&dir.join("cgroup.freeze"))?,
            kill: sys::cpath(&dir.join("cgroup.kill"))?,
            dir_c: sys::cpath(&dir)?,
            dir,
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Moves the calling process into this cgroup. Async-signal-safe
    /// (open, write, close), for use between `fork` and `exec`.
    pub fn enter_self(&self) -> io::Result<()> {
        write_raw(&self.procs, b"0")
    }

    /// Freezes (`true`) or thaws the cgroup.
    pub fn set_frozen(&self, frozen: bool) -> io::Result<()> {
        write_raw(&self.freeze, if frozen { b"1" } else { b"0" })
    }

    /// Whether `cgroup.events` reports the cgroup frozen.
    pub fn is_frozen(&self) -> bool {
        std::fs::read_to_string(self.dir.join("cgroup.events"))
            .map(|s| s.lines().any(|l| l.trim() == "frozen 1"))
            .unwrap_or(false)
    }

    /// Kills every process in the cgroup (`cgroup.kill`).
    pub fn kill_all(&self) -> io::Result<()> {
        write_raw(&self.kill, b"1")
    }

    /// Thaws, then removes the directory, waiting up to
    /// [`CGROUP_REMOVE_WAIT`] for exiting tasks to leave it.
    pub fn remove(&self) -> io::Result<()> {
        let _ = self.set_frozen(false);
        let deadline = Instant::now() + CGROUP_REMOVE_WAIT;
        loop {
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) if Instant::now() >= deadline => return Err(e),
                Err(_) => std::thread::sleep(Duration::from_millis(2)),
            }
        }
    }
}

/// open(O_WRONLY) + write + close on a C path: async-signal-safe.
pub fn write_raw(path: &CString, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated and outlives the call.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `bytes` is valid for its length; `fd` is ours until closed.
    let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
    let err = (n < 0).then(io::Error::last_os_error);
    // SAFETY: closes the descriptor opened above exactly once.
    unsafe { libc::close(fd) };
    match err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Distinguishes the cgroups of several managers in one process (tests).
static MANAGER_SEQ: AtomicU64 = AtomicU64::new(0);

/// Where the cgroup2 hierarchy is mounted and this process's cgroup in it.
fn own_cgroup2_dir() -> Result<PathBuf, FreezerUnavailable> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| FreezerUnavailable(format!("cannot read /proc/self/mountinfo: {e}")))?;
    // Fields: id parent major:minor root mountpoint options ... - fstype ...
    let mount = mountinfo
        .lines()
        .find_map(|l| {
            let (pre, post) = l.split_once(" - ")?;
            (post.split_whitespace().next()? == "cgroup2")
                .then(|| pre.split_whitespace().nth(4).map(PathBuf::from))?
        })
        .ok_or_else(|| FreezerUnavailable("no cgroup2 hierarchy is mounted".into()))?;
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| FreezerUnavailable(format!("cannot read /proc/self/cgroup: {e}")))?;
    let rel = own
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or_else(|| FreezerUnavailable("this process has no cgroup2 membership".into()))?;
    Ok(mount.join(rel.trim_start_matches('/')))
}

fn create_manager_cgroup() -> Result<PathBuf, FreezerUnavailable> {
    let base = own_cgroup2_dir()?;
    let dir = base.join(format!(
        "keel-cosched-{}-{}",
        sys::getpid(),
        MANAGER_SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir(&dir)
        .map_err(|e| FreezerUnavailable(format!("cannot create {}: {e}", dir.display())))?;
    if !dir.join("cgroup.freeze").exists() {
        let _ = std::fs::remove_dir(&dir);
        return Err(FreezerUnavailable(format!(
            "{} has no cgroup.freeze (kernel older than 5.2?)",
            dir.display()
        )));
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::process::Command;

    #[test]
    fn choices_parse() {
        assert_eq!("auto".parse::<SuspendChoice>(), Ok(SuspendChoice::Auto));
        assert!("stop"
            .parse::<SuspendChoice>()
            .unwrap_err()
            .contains("auto, freezer, signals"));
    }

    /// Kills the child on drop, whatever the test did to it.
    struct Reap(std::process::Child);
    impl Drop for Reap {
        fn drop(&mut self) {
            let _ = sys::kill(self.0.id() as i32, libc::SIGCONT);
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    /// The ids of the processes in group `pgid`, from `/proc`.
    fn group_members(pgid: i32) -> Vec<i32> {
        let mut out = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            let Some(close) = stat.rfind(')') else {
                continue;
            };
            // After the name: state ppid pgrp ...
            let pgrp = stat[close + 1..].split_whitespace().nth(2);
            if pgrp.and_then(|g| g.parse::<i32>().ok()) == Some(pgid) {
                out.push(pid);
            }
        }
        out
    }

    fn wait_for(mut cond: impl FnMut() -> bool) -> bool {
        let t0 = Instant::now();
        while !cond() && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(1));
        }
        cond()
    }

    #[test]
    fn signals_stop_and_continue_a_process_and_its_children() {
        use std::os::unix::process::CommandExt;
        let s = Suspender::new(SuspendChoice::Signals).unwrap();
        // A wrapper that forks the real program, in its own group as job
        // processes are.
        let child = Reap(
            Command::new("/bin/sh")
                .args(["-c", "sleep 30 & wait"])
                .process_group(0)
                .spawn()
                .unwrap(),
        );
        let pid = child.0.id() as i32;
        assert!(wait_for(|| group_members(pid).len() == 2), "sh and sleep");
        let members = group_members(pid);
        s.suspend(pid, None).unwrap();
        let stopped = || members.iter().all(|&m| sys::proc_state(m) == Some('T'));
        assert!(wait_for(stopped), "the wrapper's child stops too");
        s.resume(pid, None).unwrap();
        assert!(wait_for(|| members
            .iter()
            .all(|&m| sys::proc_state(m) != Some('T'))));
        let _ = sys::killpg(pid, libc::SIGKILL);
    }

    #[test]
    fn the_freezer_freezes_a_process_when_available() {
        let s = match Suspender::new(SuspendChoice::Freezer) {
            Ok(s) => s,
            Err(e) => {
                // On the real stderr, so that `cargo test` shows it.
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "SKIPPED: the_freezer_freezes_a_process_when_available: {e}"
                );
                return;
            }
        };
        let _ = writeln!(
            std::io::stderr().lock(),
            "ran: the_freezer_freezes_a_process_when_available (with the cgroup v2 freezer)"
        );
        let cg = s.prepare(1, 0).unwrap().unwrap();
        let child = Reap(Command::new("sleep").arg("30").spawn().unwrap());
        let pid = child.0.id();
        std::fs::write(cg.dir().join("cgroup.procs"), pid.to_string()).unwrap();
        s.suspend(pid as i32, Some(&cg)).unwrap();
        let t0 = Instant::now();
        while !cg.is_frozen() && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(cg.is_frozen());
        s.resume(pid as i32, Some(&cg)).unwrap();
        while cg.is_frozen() && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(!cg.is_frozen());
        cg.kill_all().unwrap();
        drop(child);
        cg.remove().unwrap();
        assert!(!cg.dir().exists());
    }
}
