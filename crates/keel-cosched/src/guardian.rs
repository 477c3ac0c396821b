//! Guardians: no job process outlives its manager stopped.
//!
//! For every job process the node manager forks a small guardian process
//! that holds the read end of a pipe whose only write end stays in the
//! manager. The guardian blocks in `read`:
//!
//! - the manager ends the process normally, writes [`DISMISS`] and closes
//!   the pipe: the guardian exits and does nothing;
//! - the manager dies (exit, panic, `SIGKILL`), so the kernel closes the
//!   write end: `read` returns 0 and the guardian thaws the process's cgroup,
//!   sends `SIGCONT` then `SIGKILL` (through a pidfd, so a reused pid is
//!   never hit), writes `cgroup.kill`, waits for the process to go, removes
//!   the cgroup directory (and the manager's, once empty), unlinks the
//!   shared page and the process's other files, and removes the job's
//!   directories once they are empty.
//!
//! So after a manager's death every job process is gone: none is left
//! stopped or frozen, and none keeps running unscheduled. The job
//! processes also carry `PR_SET_PDEATHSIG = SIGKILL` (see `node`), which
//! usually wins the race; the guardian is what thaws, cleans up and covers
//! a manager that closes without dying.
//!
//! The guardian is forked, not exec'd, from a multi-threaded process, so
//! between `fork` and `_exit` it only makes async-signal-safe system calls
//! on memory prepared before the fork: no allocation, no locks, no Rust
//! I/O types.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;

use crate::suspend::ProcCgroup;
use crate::sys::{self, Pid};

/// The byte that tells a guardian its process ended normally.
pub const DISMISS: u8 = b'D';
/// How long a guardian waits for the killed process to exit, ms.
pub const GUARDIAN_KILL_WAIT_MS: libc::c_int = 2000;
/// How many times a guardian retries removing a busy cgroup, 2 ms apart.
pub const GUARDIAN_RMDIR_TRIES: u32 = 1000;

/// The manager's end of one guardian.
#[derive(Debug)]
pub struct Guardian {
    pid: Pid,
    write_end: Option<OwnedFd>,
}

/// Everything the guardian's post-fork code touches, prepared beforehand.
struct Plan {
    read_fd: RawFd,
    pidfd: RawFd,
    devnull: RawFd,
    freeze: Option<CString>,
    kill: Option<CString>,
    dir: Option<CString>,
    parent: Option<CString>,
    files: Vec<CString>,
    dirs: Vec<CString>,
}

impl Guardian {
    /// Forks the guardian of process `target` (a child of the caller that
    /// has not been reaped), with its cgroup if it has one, the `files` to
    /// unlink (its page, ...) and the `dirs` to remove if empty, in order,
    /// after the process is gone.
    pub fn spawn(
        target: Pid,
        cgroup: Option<&ProcCgroup>,
        files: &[&Path],
        dirs: &[&Path],
    ) -> io::Result<Guardian> {
        let pidfd = sys::pidfd_open(target)?;
        let (read_end, write_end) = sys::pipe_cloexec()?;
        let devnull = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")?;
        let plan = Plan {
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
                .map(|f| sys::cpath(f))
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
    /// close and ends the process, exactly as if the manager had died.
    fn drop(&mut self) {
        if self.write_end.take().is_some() {
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
        let hi = p.read_fd.max(p.pidfd).max(p.devnull) + 1;
        let (rfd, pfd) = (hi, hi + 1);
        libc::dup2(p.read_fd, rfd);
        libc::dup2(p.pidfd, pfd);
        libc::dup2(p.devnull, 0);
        libc::dup2(p.devnull, 1);
        libc::dup2(p.devnull, 2);
        libc::syscall(libc::SYS_close_range, 3u32, (rfd - 1) as u32, 0u32);
        libc::syscall(libc::SYS_close_range, (pfd + 1) as u32, u32::MAX, 0u32);

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
        if let Some(f) = &p.freeze {
            raw_write(f, b"0");
        }
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pfd,
            libc::SIGCONT,
            0usize,
            0u32,
        );
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pfd,
            libc::SIGKILL,
            0usize,
            0u32,
        );
        if let Some(k) = &p.kill {
            raw_write(k, b"1");
        }
        // A pidfd polls readable once its process has exited.
        let mut pfd_poll = libc::pollfd {
            fd: pfd,
            events: libc::POLLIN,
            revents: 0,
        };
        libc::poll(&mut pfd_poll, 1, GUARDIAN_KILL_WAIT_MS);
        if let Some(d) = &p.dir {
            let pause = libc::timespec {
                tv_sec: 0,
                tv_nsec: 2_000_000,
            };
            for _ in 0..GUARDIAN_RMDIR_TRIES {
                if libc::rmdir(d.as_ptr()) == 0 || *libc::__errno_location() == libc::ENOENT {
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
        for f in &p.files {
            libc::unlink(f.as_ptr());
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
        let g = Guardian::spawn(pid, None, &[&page], &[&sub]).unwrap();
        drop(g); // as if the manager had died
        assert!(wait_gone(pid), "the stopped process was not killed");
        let status = child.wait().unwrap();
        assert!(!status.success());
        assert!(!page.exists(), "the guardian unlinks the page");
        assert!(!sub.exists(), "and removes the empty directory");
    }

    #[test]
    fn a_dismissed_guardian_leaves_the_process_alone() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id() as Pid;
        let g = Guardian::spawn(pid, None, &[], &[]).unwrap();
        g.dismiss();
        std::thread::sleep(Duration::from_millis(50));
        assert!(matches!(sys::proc_state(pid), Some('S') | Some('R')));
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
