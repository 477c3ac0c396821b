//! One job process as its node manager keeps it: started by the manager
//! (its child, leading its own process group) or adopted (a task some
//! other parent started, a Slurm task, that registered itself).

use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Child;

use keel_policy::cosched::{JobId, ProcRef, ProcessClass, ProcessSched};

use super::ExitKind;
use crate::guardian::Guardian;
use crate::shm::{Counters, Page, PageWaitMode};
use crate::suspend::{ProcCgroup, Suspender};
use crate::sys::{self, Pid};

/// How the manager reaches a process.
pub(super) enum Handle {
    /// Started by this manager, which is its parent and reaps it. It leads
    /// its own process group, so what it forks is signalled with it.
    Child(Child),
    /// Started by someone else (slurmstepd) and registered by itself,
    /// named by its pidfd so that a reused pid is never signalled. Its
    /// group is not its own (the tasks of a Slurm step on a node share
    /// the first task's), so only the process itself is signalled; its
    /// exit status is its parent's to report.
    Adopted(OwnedFd),
}

pub(super) struct Proc {
    pub(super) job: JobId,
    pub(super) rank: usize,
    pub(super) pe: usize,
    pub(super) pid: Pid,
    pub(super) handle: Handle,
    pub(super) page: Page,
    pub(super) cgroup: Option<ProcCgroup>,
    pub(super) guardian: Option<Guardian>,
    /// Its stderr file (a started process's; an adopted one's goes where
    /// its launcher sends it).
    pub(super) stderr: Option<PathBuf>,
    pub(super) suspended: bool,
    pub(super) nice: i32,
    pub(super) mode: Option<PageWaitMode>,
    pub(super) sched: ProcessSched,
    pub(super) baseline: Counters,
    pub(super) dying: bool,
    /// An adopted process with an ending signal pending: its launcher is
    /// cancelling it, so it runs from now on and is never suspended again
    /// (a stopped process would not act on a `SIGTERM` until resumed).
    pub(super) released: bool,
    pub(super) reaped: bool,
}

impl Proc {
    /// A process just started or adopted: running, unboosted, CS, with
    /// zero counters as its baseline; its guardian is handed over after.
    pub(super) fn new(
        (job, rank, pe): (JobId, usize, usize),
        pid: Pid,
        handle: Handle,
        page: Page,
        cgroup: Option<ProcCgroup>,
        stderr: Option<PathBuf>,
    ) -> Proc {
        Proc {
            job,
            rank,
            pe,
            pid,
            handle,
            page,
            cgroup,
            guardian: None,
            stderr,
            suspended: false,
            nice: 0,
            mode: None,
            sched: ProcessSched::new(),
            baseline: Counters::default(),
            dying: false,
            released: false,
            reaped: false,
        }
    }

    pub(super) fn proc_ref(&self, classifies: bool) -> ProcRef {
        ProcRef {
            job: self.job,
            rank: self.rank,
            class: if classifies {
                self.sched.class
            } else {
                ProcessClass::Cs
            },
        }
    }

    pub(super) fn adopted(&self) -> bool {
        matches!(self.handle, Handle::Adopted(_))
    }

    /// Stops the process (and, when started here, what it forked).
    pub(super) fn suspend(&self, suspender: &Suspender) -> io::Result<()> {
        match &self.handle {
            Handle::Child(_) => suspender.suspend(self.pid, self.cgroup.as_ref()),
            Handle::Adopted(fd) => sys::pidfd_send_signal(fd, libc::SIGSTOP),
        }
    }

    /// Continues what [`Proc::suspend`] stopped.
    pub(super) fn resume(&self, suspender: &Suspender) -> io::Result<()> {
        match &self.handle {
            Handle::Child(_) => suspender.resume(self.pid, self.cgroup.as_ref()),
            Handle::Adopted(fd) => sys::pidfd_send_signal(fd, libc::SIGCONT),
        }
    }

    /// Whether an adopted process has a signal pending that its launcher
    /// sends to end it (`scancel`, a time limit).
    pub(super) fn being_cancelled(&self) -> bool {
        self.adopted()
            && sys::pending_signals(self.pid).is_some_and(|m| m & sys::ENDING_SIGNALS != 0)
    }

    /// Resumes and kills the process and what it forked (its group; the
    /// group id stays the process's own until it is reaped by whoever
    /// handles its exit). An adopted process is only resumed: it belongs
    /// to its launcher, which ends it.
    pub(super) fn kill(&mut self, suspender: &Suspender) {
        if self.adopted() {
            let _ = self.resume(suspender);
            self.suspended = false;
            self.released = true;
            return;
        }
        self.dying = true;
        let _ = suspender.resume(self.pid, self.cgroup.as_ref());
        self.suspended = false;
        let _ = self.signal_all(libc::SIGCONT);
        let _ = self.signal_all(libc::SIGKILL);
        if let Some(cg) = &self.cgroup {
            let _ = cg.kill_all();
        }
    }

    /// Sends `sig` to the process's group and to the process itself (which
    /// may have left its group). Only called before the process is reaped,
    /// so both ids are still its own.
    fn signal_all(&self, sig: libc::c_int) -> io::Result<()> {
        match &self.handle {
            Handle::Child(_) => {
                let group = sys::killpg(self.pid, sig);
                sys::kill(self.pid, sig).or(group)
            }
            Handle::Adopted(fd) => sys::pidfd_send_signal(fd, sig),
        }
    }

    /// Reaps the exited process and releases what it held.
    pub(super) fn reap(&mut self) -> ExitKind {
        self.reaped = true;
        if let Some(g) = self.guardian.take() {
            g.dismiss();
        }
        if let Some(cg) = &self.cgroup {
            let _ = cg.remove();
        }
        let Handle::Child(child) = &mut self.handle else {
            // Its parent saw the status (the page goes when `self` drops).
            return ExitKind::Unobserved;
        };
        match child.wait() {
            Ok(s) => match (s.code(), s.signal()) {
                (Some(c), _) => ExitKind::Code(c),
                (None, Some(sig)) => ExitKind::Signal(sig),
                (None, None) => ExitKind::Code(-1),
            },
            Err(_) => ExitKind::Code(-1),
        }
    }

    /// Leaves an adopted process to its launcher, running: resumed, and
    /// its guardian dropped, which then waits for the process to end and
    /// removes its page (as after a manager's death).
    pub(super) fn let_go(&mut self, suspender: &Suspender) {
        let _ = self.resume(suspender);
        self.suspended = false;
        self.reaped = true;
        drop(self.guardian.take());
    }

    fn suspender_free_kill(&mut self) -> io::Result<()> {
        if let Some(cg) = &self.cgroup {
            let _ = cg.set_frozen(false);
            let _ = cg.kill_all();
        }
        let _ = self.signal_all(libc::SIGCONT);
        self.signal_all(libc::SIGKILL)
    }
}

impl Drop for Proc {
    /// A process still alive when its manager drops it (shutdown, panic)
    /// is never left stopped: a started one is resumed and killed, an
    /// adopted one resumed and left to its launcher.
    fn drop(&mut self) {
        if !self.reaped {
            if self.adopted() {
                let _ = self.signal_all(libc::SIGCONT);
                self.reaped = true;
                drop(self.guardian.take());
            } else {
                let _ = self.suspender_free_kill();
                let _ = self.reap();
            }
        }
        if let Some(stderr) = &self.stderr {
            let _ = std::fs::remove_file(stderr);
        }
    }
}
