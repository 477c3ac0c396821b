//! Guardians: no job process outlives its manager stopped.
//!
//! For every job process the node manager forks a small guardian process
//! that holds the read end of a pipe whose only write end stays in the
//! manager. The guardian blocks in `read`:
//!
//! - the manager ends the process normally, writes [`DISMISS`] and closes
//!   the pipe: the guardian exits and does nothing;
//! - the manager dies (exit, panic, `SIGKILL`), so the kernel closes the
//!   write end: `read` returns 0 and the guardian thaws the process's
//!   cgroup and sends `SIGCONT` to the process's group (the process and
//!   everything it forked). Then, as [`ManagerExit`] says:
//!   - [`ManagerExit::Resume`] (the default): it leaves the job running
//!     and waits for the process to end;
//!   - [`ManagerExit::Kill`]: it sends `SIGKILL` to the group and writes
//!     `cgroup.kill`, and waits for the process to go.
//!
//!   Either way it then removes the cgroup directory (and the manager's,
//!   once empty), unlinks the shared page and the process's other files,
//!   and removes the job's directories once they are empty.
//!
//! So after a manager's death no job process is left stopped or frozen.
//! Under `Kill` the job processes also carry `PR_SET_PDEATHSIG = SIGKILL`
//! (see `node`), which usually wins the race; the guardian is what thaws,
//! cleans up and covers a manager that closes without dying.
//!
//! The process group's id is the job process's pid, and only that process
//! can create a group with that id. While the process lives (even as a
//! zombie; its pidfd tells) the id cannot name anyone else's group, and
//! while any member of its group lives the kernel does not reuse the id.
//! So the group is signalled while the process lives, and under
//! [`ManagerExit::Kill`] also after it died (the parent-death signal
//! usually kills it first, leaving what it forked in the group): the id
//! could then only name a stranger's group if the whole group had ended
//! and the pid space had wrapped round since, in the milliseconds between
//! the manager's death and the guardian's signal.
//!
//! The guardian is forked, not exec'd, from a multi-threaded process, so
//! between `fork` and `_exit` it only makes async-signal-safe system calls
//! on memory prepared before the fork: no allocation, no locks, no Rust
//! I/O types.
//!
//! What happens to the jobs when the manager dies is a setting (resume by default):
//!
//! ```
//! use keel_cosched::guardian::ManagerExit;
//! assert_eq!(ManagerExit::default(), ManagerExit::Resume);
//! assert_eq!("kill".parse::<ManagerExit>(), Ok(ManagerExit::Kill));
//! assert!("stop".parse::<ManagerExit>().is_err());
//! ```

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

use crate::suspend::ProcCgroup;
use crate::sys::{self, Pid};

/// The byte that tells a guardian its process ended normally.
pub const DISMISS: u8 = b'D';
/// How long a guardian waits for the killed process to exit, ms.
pub const GUARDIAN_KILL_WAIT_MS: libc::c_int = 2000;
/// How many times a guardian retries removing a busy cgroup, 2 ms apart.
pub const GUARDIAN_RMDIR_TRIES: u32 = 1000;
/// Under [`ManagerExit::Resume`], how often a guardian retries removing the
/// cgroup of a job whose children outlive its process, ms.
pub const GUARDIAN_RESUME_RMDIR_PERIOD_MS: i64 = 200;

/// What happens to a job's processes when their manager dies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ManagerExit {
    /// Resume every process (thaw, `SIGCONT` to its group) and leave it
    /// running to completion, as Slurm's daemons leave jobs running when
    /// they restart: the job's work is not lost with its scheduler.
    #[default]
    Resume,
    /// Resume and kill every process and everything it forked.
    Kill,
}

impl std::fmt::Display for ManagerExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ManagerExit::Resume => "resume",
            ManagerExit::Kill => "kill",
        })
    }
}

impl std::str::FromStr for ManagerExit {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "resume" => Ok(ManagerExit::Resume),
            "kill" => Ok(ManagerExit::Kill),
            other => Err(format!(
                "unknown manager-exit behaviour `{other}`; valid: resume, kill"
            )),
        }
    }
}

/// What a guardian looks after.
#[derive(Clone, Copy, Debug)]
pub struct Guarded {
    /// The process (a child of the caller that has not been reaped).
    pub pid: Pid,
    /// Whether it leads its own process group (then the group, with
    /// everything the process forked, is signalled, not just the process).
    pub group_leader: bool,
    /// What to do when the manager dies.
    pub on_exit: ManagerExit,
}

/// The manager's end of one guardian.
#[derive(Debug)]
pub struct Guardian {
    pid: Pid,
    write_end: Option<OwnedFd>,
    on_exit: ManagerExit,
}

/// Everything the guardian's post-fork code touches, prepared beforehand.
struct Plan {
    target: Guarded,
    read_fd: RawFd,
    pidfd: RawFd,
    devnull: RawFd,
    freeze: Option<CString>,
    kill: Option<CString>,
    dir: Option<CString>,
    parent: Option<CString>,
    files: Vec<FileToRemove>,
    dirs: Vec<CString>,
}

/// A file the guardian unlinks once its process is gone.
struct FileToRemove {
    path: CString,
    /// An `O_PATH` descriptor on what was there when the guardian was
    /// forked, held for the guardian's life so that its inode cannot be
    /// reused: a root guardian unlinks only that file, never one another
    /// user put at the same name since (the page's name in `/dev/shm` is
    /// predictable). `None` for a file made later by the job itself, in a
    /// directory of the job's user.
    held: Option<OwnedFd>,
}

/// An `O_PATH | O_NOFOLLOW` descriptor on `path`, if something is there.
fn hold(path: &CString) -> Option<OwnedFd> {
    // SAFETY: `path` is NUL-terminated; the flags make open neither follow
    // a link nor touch the file's contents.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    // SAFETY: a descriptor open just returned is ours alone.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

impl Guardian {
    /// Forks the guardian of process `target.pid`, with its cgroup if it
    /// has one, the `files` to unlink (its page, ...) and the `dirs` to
    /// remove if empty, in order, after the process is gone.
    pub fn spawn(
        target: Guarded,
        cgroup: Option<&ProcCgroup>,
        files: &[&Path],
        dirs: &[&Path],
    ) -> io::Result<Guardian> {
        let pidfd = sys::pidfd_open(target.pid)?;
        let (read_end, write_end) = sys::pipe_cloexec()?;
        let devnull = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")?;
        let plan = Plan {
            target,
            read_fd: read_end.as_raw_fd(),
            pidfd: pidfd.as_raw_fd(),
            devnull: devnull.as_raw_fd(),
            freeze: cgroup.map(|c| c.freeze.clone()),
            kill: cgroup.map(|c| c.kill.clone()),
            dir: cgroup.map(|c| c.dir_c.clone()),
            parent: cgroup
                .and_then(|c| c.dir().parent())
                .map(sys::cpath)
                .transpose()?,
            files: files
                .iter()
                .map(|f| {
                    let path = sys::cpath(f)?;
                    let held = hold(&path);
                    Ok(FileToRemove { path, held })
                })
                .collect::<io::Result<_>>()?,
            dirs: dirs
                .iter()
                .map(|d| sys::cpath(d))
                .collect::<io::Result<_>>()?,
        };
        // SAFETY: fork duplicates only this thread; the child runs
        // `guard`, which makes only async-signal-safe calls on `plan`
        // (memory copied by fork) and never returns.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            // SAFETY: we are the freshly forked child, as `guard` requires.
            unsafe { guard(&plan) }
        }
        drop(read_end);
        Ok(Guardian {
            pid,
            write_end: Some(write_end),
            on_exit: target.on_exit,
        })
    }

    /// The guardian's process id.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// The process ended normally and is cleaned up: the guardian exits
    /// without touching anything; it is reaped here.
    pub fn dismiss(mut self) {
        if let Some(w) = self.write_end.take() {
            // SAFETY: one byte from a valid buffer to a descriptor we own.
            unsafe { libc::write(w.as_raw_fd(), [DISMISS].as_ptr().cast(), 1) };
        }
        let _ = sys::waitpid_blocking(self.pid);
    }
}

impl Drop for Guardian {
    /// Dropped without [`Guardian::dismiss`]: the guardian sees the pipe
    /// close and acts exactly as if the manager had died. Under
    /// [`ManagerExit::Kill`] it is reaped here; under
    /// [`ManagerExit::Resume`] it waits for the process to end, which may
    /// take as long as the job, so it is not waited for.
    fn drop(&mut self) {
        if self.write_end.take().is_some() && self.on_exit == ManagerExit::Kill {
            let _ = sys::waitpid_blocking(self.pid);
        }
    }
}

/// The guardian's body, in the forked child.
///
/// # Safety
/// Must run only in a child just forked from [`Guardian::spawn`], and
/// never returns.
unsafe fn guard(p: &Plan) -> ! {
    // SAFETY: (for the whole body) every call below is an async-signal-safe system
    // call on integers, on the descriptors in `p`, or on NUL-terminated
    // strings prepared before the fork; nothing allocates or locks.
    unsafe {
        // Leave the manager's session and process group: signals aimed at
        // the manager's terminal or group must not take the guardian too.
        libc::setsid();
        // Keep only the pipe and the pidfd (moved above every descriptor
        // in use), with stdio on /dev/null: holding the manager's stdout
        // would keep a reader of it waiting.
        let mut hi = p.read_fd.max(p.pidfd).max(p.devnull);
        for f in &p.files {
            if let Some(h) = &f.held {
                hi = hi.max(h.as_raw_fd());
            }
        }
        let (rfd, pfd) = (hi + 1, hi + 2);
        libc::dup2(p.read_fd, rfd);
        libc::dup2(p.pidfd, pfd);
        // The held files' descriptors follow the pidfd, in order.
        let mut next = pfd + 1;
        for f in &p.files {
            if let Some(h) = &f.held {
                libc::dup2(h.as_raw_fd(), next);
                next += 1;
            }
        }
        libc::dup2(p.devnull, 0);
        libc::dup2(p.devnull, 1);
        libc::dup2(p.devnull, 2);
        libc::syscall(libc::SYS_close_range, 3u32, (rfd - 1) as u32, 0u32);
        libc::syscall(libc::SYS_close_range, next as u32, u32::MAX, 0u32);

        let mut byte = 0u8;
        loop {
            let n = libc::read(rfd, (&mut byte as *mut u8).cast(), 1);
            if n == 1 && byte == DISMISS {
                libc::_exit(0);
            }
            if n < 0 && *libc::__errno_location() == libc::EINTR {
                continue;
            }
            break; // EOF (the manager is gone) or anything unexpected.
        }
        let mut pfd_poll = libc::pollfd {
            fd: pfd,
            events: libc::POLLIN,
            revents: 0,
        };
        // A pidfd polls readable once its process has exited.
        let leader_lives = |poll: &mut libc::pollfd, ms: libc::c_int| {
            poll.revents = 0;
            libc::poll(poll, 1, ms) == 0
        };
        let group = p.target.group_leader;
        let killing = p.target.on_exit == ManagerExit::Kill;
        let signal = |sig: libc::c_int| {
            // The group as the module docs say; the process itself
            // through its pidfd, so a reused pid is never hit.
            let mut poll = pfd_poll;
            if group && (killing || leader_lives(&mut poll, 0)) {
                libc::kill(-p.target.pid, sig);
            }
            libc::syscall(libc::SYS_pidfd_send_signal, pfd, sig, 0usize, 0u32);
        };
        if let Some(f) = &p.freeze {
            raw_write(f, b"0");
        }
        signal(libc::SIGCONT);
        match p.target.on_exit {
            ManagerExit::Kill => {
                signal(libc::SIGKILL);
                if let Some(k) = &p.kill {
                    raw_write(k, b"1");
                }
                leader_lives(&mut pfd_poll, GUARDIAN_KILL_WAIT_MS);
            }
            ManagerExit::Resume => {
                // The job runs on; clean up once its process has ended.
                loop {
                    pfd_poll.revents = 0;
                    let r = libc::poll(&mut pfd_poll, 1, -1);
                    if r > 0 || (r < 0 && *libc::__errno_location() != libc::EINTR) {
                        break;
                    }
                }
            }
        }
        if let Some(d) = &p.dir {
            let (pause, tries) = match p.target.on_exit {
                ManagerExit::Kill => (2_000_000, GUARDIAN_RMDIR_TRIES),
                // Children the process forked may run on in the cgroup:
                // its directory goes once they have ended too.
                ManagerExit::Resume => (GUARDIAN_RESUME_RMDIR_PERIOD_MS * 1_000_000, u32::MAX),
            };
            let pause = libc::timespec {
                tv_sec: pause / 1_000_000_000,
                tv_nsec: pause % 1_000_000_000,
            };
            for _ in 0..tries {
                // Only a cgroup that still has tasks (EBUSY) is worth
                // retrying.
                if libc::rmdir(d.as_ptr()) == 0 || *libc::__errno_location() != libc::EBUSY {
                    break;
                }
                libc::nanosleep(&pause, std::ptr::null_mut());
            }
            // The manager's own cgroup goes with its last process's (it
            // fails harmlessly while siblings remain).
            if let Some(parent) = &p.parent {
                libc::rmdir(parent.as_ptr());
            }
        }
        // Iterating over memory allocated before the fork allocates nothing.
        let mut held_fd = pfd + 1;
        for f in &p.files {
            let still_ours = match f.held {
                None => true,
                Some(_) => {
                    let (mut there, mut ours): (libc::stat, libc::stat) =
                        (std::mem::zeroed(), std::mem::zeroed());
                    let same = libc::lstat(f.path.as_ptr(), &mut there) == 0
                        && libc::fstat(held_fd, &mut ours) == 0
                        && there.st_dev == ours.st_dev
                        && there.st_ino == ours.st_ino;
                    held_fd += 1;
                    same
                }
            };
            if still_ours {
                libc::unlink(f.path.as_ptr());
            }
        }
        // Each fails harmlessly while other processes' files remain: the
        // last guardian of a job (or run) removes its directory.
        for d in &p.dirs {
            libc::rmdir(d.as_ptr());
        }
        libc::_exit(0)
    }
}

/// open + write + close with no allocation and no error reporting.
///
/// # Safety
/// Async-signal-safe; `path` must be NUL-terminated (a `CString` is).
unsafe fn raw_write(path: &CString, bytes: &[u8]) {
    // SAFETY: `path` is NUL-terminated; `bytes` is valid for its length.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd >= 0 {
            libc::write(fd, bytes.as_ptr().cast(), bytes.len());
            libc::close(fd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::{Duration, Instant};

    fn wait_gone(pid: Pid) -> bool {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(5) {
            match sys::proc_state(pid) {
                None | Some('Z') => return true,
                _ => std::thread::sleep(Duration::from_millis(2)),
            }
        }
        false
    }

    #[test]
    fn a_dropped_guardian_resumes_and_kills_a_stopped_process() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id() as Pid;
        let dir = tempfile::tempdir().unwrap();
        let page = dir.path().join("page");
        std::fs::write(&page, b"x").unwrap();
        sys::kill(pid, libc::SIGSTOP).unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let target = Guarded {
            pid,
            group_leader: false,
            on_exit: ManagerExit::Kill,
        };
        let g = Guardian::spawn(target, None, &[&page], &[&sub]).unwrap();
        drop(g); // as if the manager had died
        assert!(wait_gone(pid), "the stopped process was not killed");
        let status = child.wait().unwrap();
        assert!(!status.success());
        assert!(!page.exists(), "the guardian unlinks the page");
        assert!(!sub.exists(), "and removes the empty directory");
    }

    #[test]
    fn a_file_replaced_since_the_spawn_is_left_alone() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id() as Pid;
        let dir = tempfile::tempdir().unwrap();
        let page = dir.path().join("page");
        std::fs::write(&page, b"ours").unwrap();
        let target = Guarded {
            pid,
            group_leader: false,
            on_exit: ManagerExit::Kill,
        };
        let g = Guardian::spawn(target, None, &[&page], &[]).unwrap();
        // Someone else's file now has the page's name.
        std::fs::remove_file(&page).unwrap();
        std::fs::write(&page, b"theirs").unwrap();
        drop(g);
        assert!(wait_gone(pid));
        let _ = child.wait();
        assert_eq!(
            std::fs::read(&page).unwrap(),
            b"theirs",
            "the guardian removes only the file it was given"
        );
    }

    /// `sh` in a session of its own that forks `sleep`, as a job's
    /// wrapper would; returns the shell and the sleep's pid.
    #[allow(clippy::zombie_processes)] // the caller waits for the shell
    fn wrapper() -> (std::process::Child, Pid) {
        use std::os::unix::process::CommandExt;
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", "sleep 30 & wait $!"]);
        // SAFETY: setsid is async-signal-safe and touches no memory.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap();
        let pid = child.id() as Pid;
        let t0 = Instant::now();
        loop {
            let kids: Vec<Pid> = std::fs::read_dir("/proc")
                .unwrap()
                .flatten()
                .filter_map(|e| e.file_name().to_string_lossy().parse::<Pid>().ok())
                .filter(|&p| {
                    std::fs::read_to_string(format!("/proc/{p}/stat"))
                        .ok()
                        .and_then(|s| {
                            let rest = s[s.rfind(')')? + 1..].to_string();
                            rest.split_whitespace().nth(1)?.parse::<Pid>().ok()
                        })
                        == Some(pid)
                })
                .collect();
            if let [kid] = kids[..] {
                return (child, kid);
            }
            assert!(t0.elapsed() < Duration::from_secs(5), "sh forked sleep");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    #[test]
    fn resume_leaves_a_stopped_group_running_then_cleans_up() {
        let (mut child, kid) = wrapper();
        let pid = child.id() as Pid;
        let dir = tempfile::tempdir().unwrap();
        let page = dir.path().join("page");
        std::fs::write(&page, b"x").unwrap();
        sys::killpg(pid, libc::SIGSTOP).unwrap();
        let stopped = |p: Pid| sys::proc_state(p) == Some('T');
        let t0 = Instant::now();
        while !(stopped(pid) && stopped(kid)) && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(2));
        }
        let target = Guarded {
            pid,
            group_leader: true,
            on_exit: ManagerExit::Resume,
        };
        drop(Guardian::spawn(target, None, &[&page], &[]).unwrap());
        let t0 = Instant::now();
        while (stopped(pid) || stopped(kid)) && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(2));
        }
        assert!(!stopped(pid) && !stopped(kid), "the group was resumed");
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            !wait_gone_for(pid, 0) && !wait_gone_for(kid, 0),
            "and runs on"
        );
        assert!(page.exists(), "nothing is removed while the job runs");
        sys::killpg(pid, libc::SIGKILL).unwrap();
        child.wait().unwrap();
        let t0 = Instant::now();
        while page.exists() && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(2));
        }
        assert!(!page.exists(), "the page goes once the process has ended");
    }

    #[test]
    fn kill_takes_the_whole_group() {
        let (mut child, kid) = wrapper();
        let pid = child.id() as Pid;
        sys::killpg(pid, libc::SIGSTOP).unwrap();
        let target = Guarded {
            pid,
            group_leader: true,
            on_exit: ManagerExit::Kill,
        };
        drop(Guardian::spawn(target, None, &[], &[]).unwrap());
        child.wait().unwrap();
        assert!(
            wait_gone_for(kid, 5000),
            "the wrapper's child was killed too"
        );
    }

    fn wait_gone_for(pid: Pid, ms: u64) -> bool {
        let t0 = Instant::now();
        loop {
            if matches!(sys::proc_state(pid), None | Some('Z')) {
                return true;
            }
            if t0.elapsed() >= Duration::from_millis(ms) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    #[test]
    fn manager_exit_parses() {
        assert_eq!("resume".parse::<ManagerExit>(), Ok(ManagerExit::Resume));
        assert_eq!("kill".parse::<ManagerExit>(), Ok(ManagerExit::Kill));
        assert_eq!(ManagerExit::default(), ManagerExit::Resume);
        assert!("stop"
            .parse::<ManagerExit>()
            .unwrap_err()
            .contains("resume, kill"));
    }

    #[test]
    fn a_dismissed_guardian_leaves_the_process_alone() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id() as Pid;
        let target = Guarded {
            pid,
            group_leader: false,
            on_exit: ManagerExit::Kill,
        };
        let g = Guardian::spawn(target, None, &[], &[]).unwrap();
        g.dismiss();
        std::thread::sleep(Duration::from_millis(50));
        assert!(matches!(sys::proc_state(pid), Some('S') | Some('R')));
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
