//! Taking charge of a process someone else started: a Slurm task that
//! registered itself through the SPANK plugin (see `cluster::register`).
//!
//! The task's launcher (slurmstepd) stays its parent, wires it (PMI) and
//! ends it; the node manager creates its page, pins it to its PE, suspends
//! and resumes it through its pidfd, and watches the pidfd for its end.
//! Its guardian resumes it and leaves it running if the node manager dies:
//! a task is never killed by Keel.

use std::path::PathBuf;
use std::sync::mpsc::Sender;

use keel_policy::cosched::JobId;

use super::{Handle, NodeEvent, NodeManager, Owner, Proc};
use crate::guardian::{Guarded, Guardian, ManagerExit};
use crate::shm::Page;
use crate::sys::{self, CpuSet, Pid};

/// A process to adopt.
#[derive(Debug)]
pub struct Adopt {
    /// Its job.
    pub job: JobId,
    /// Its rank.
    pub rank: usize,
    /// The node-local PE it runs on.
    pub pe: usize,
    /// Its pid: the caller checked that this very process asked (its
    /// socket's peer credentials) and that it is still waiting for the
    /// answer, so the pid cannot have been reused.
    pub pid: Pid,
    /// Its user.
    pub owner: Owner,
    /// The page to create for it.
    pub page: PathBuf,
    /// Where the outcome goes.
    pub done: Sender<Result<(), String>>,
}

impl NodeManager {
    pub(super) fn adopt(&mut self, a: Adopt) {
        let (job, rank, pid, pe) = (a.job, a.rank, a.pid, a.pe);
        let outcome = self.take_charge(&a);
        let ok = outcome.is_ok();
        let _ = a.done.send(outcome);
        if ok {
            self.event(NodeEvent::Started { job, rank, pid });
            self.enact(pe);
        }
    }

    fn take_charge(&mut self, a: &Adopt) -> Result<(), String> {
        if self.procs.contains_key(&(a.job, a.rank)) {
            return Err(format!(
                "job {} rank {} is registered already",
                a.job, a.rank
            ));
        }
        let cpu = *self
            .cfg
            .cpus
            .get(a.pe)
            .ok_or_else(|| format!("node {} has no PE {}", self.cfg.id, a.pe))?;
        let pidfd = sys::pidfd_open(a.pid).map_err(|e| format!("pid {}: {e}", a.pid))?;
        let watch = pidfd
            .try_clone()
            .map_err(|e| format!("cannot duplicate the pidfd: {e}"))?;
        let foreign = a.owner.uid != sys::geteuid();
        let page = Page::create(&a.page, foreign.then_some((a.owner.uid, a.owner.gid)))
            .map_err(|e| e.to_string())?;
        page.set_pid(a.pid as u32);
        // Before `exec` the task has one thread: the threads it starts
        // later inherit the mask.
        CpuSet::of(&[cpu])
            .ok_or(format!("CPU {cpu} is out of range"))?
            .apply(a.pid)
            .map_err(|e| format!("cannot pin pid {} to CPU {cpu}: {e}", a.pid))?;
        let guardian = Guardian::spawn(
            Guarded {
                pid: a.pid,
                group_leader: false,
                on_exit: ManagerExit::Resume,
            },
            None,
            &[&a.page],
            // The run directory goes with the last page, should the node
            // manager be gone by then.
            &a.page.parent().into_iter().collect::<Vec<_>>(),
        )
        .map_err(|e| format!("cannot start the guardian: {e}"))?;
        let mut proc = Proc::new(
            (a.job, a.rank, a.pe),
            a.pid,
            Handle::Adopted(pidfd),
            page,
            None,
            None,
        );
        proc.guardian = Some(guardian);
        if let Err(e) = self.exits.watch(watch, self.inbox.clone(), a.job, a.rank) {
            // Unwatched, its end would never be seen: leave it alone.
            proc.let_go(&self.suspender);
            return Err(format!("cannot watch the task's end: {e}"));
        }
        self.procs.insert((a.job, a.rank), proc);
        Ok(())
    }
}
