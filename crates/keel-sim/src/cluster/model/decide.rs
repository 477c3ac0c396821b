//! Policy decisions: asking the policy for a PE's slot and enacting the
//! decision (resume its runnable processes, suspend every other one).

use keel_policy::cosched::{JobId, PeDecision, PeSlot, ProcRef, ProcessClass, TimeSharing};

use super::{Phase, Sim};
use crate::error::SimError;

impl Sim<'_> {
    pub(super) fn class_of(&self, job: JobId, rank: usize) -> ProcessClass {
        let first = self.jobs.get(job as usize).map_or(usize::MAX, |j| j.first);
        self.procs
            .get(first.wrapping_add(rank))
            .map_or(ProcessClass::Cs, |p| p.sched.class)
    }

    pub(super) fn slot_for(&self, row: usize, pe: usize) -> PeSlot {
        self.matrix.pe_slot(row, pe, |j, r| self.class_of(j, r))
    }

    /// Asks the policy again for `pe` outside a strobe (a job started or
    /// ended there).
    pub(super) fn redecide(&mut self, pe: usize) -> Result<(), SimError> {
        let row = match self.sharing {
            TimeSharing::Batch => 0,
            // No assigned process: every resident is the OS's to schedule.
            TimeSharing::Uncoordinated => usize::MAX,
            TimeSharing::Gang => self.row.unwrap_or(0),
        };
        let slot = self.slot_for(row, pe);
        let decision = self.policy.decide(&slot);
        self.apply(pe, decision)
    }

    pub(super) fn pid(&self, r: &ProcRef) -> Option<usize> {
        let job = self.jobs.get(r.job as usize)?;
        (r.rank < job.spec.processes).then_some(job.first + r.rank)
    }

    pub(super) fn active(&self, p: usize) -> bool {
        matches!(self.procs[p].phase, Phase::Compute { .. } | Phase::Wait)
    }

    pub(super) fn apply(&mut self, pe: usize, d: PeDecision) -> Result<(), SimError> {
        if self.pes[pe].last.as_ref() == Some(&d) {
            return Ok(());
        }
        self.settle(pe);
        let mut new: Vec<usize> = Vec::with_capacity(d.runnable.len());
        for r in &d.runnable {
            let p = self.pid(r).ok_or_else(|| {
                SimError::Policy(format!(
                    "policy `{}` named an unknown process (job {}, rank {})",
                    self.policy.name(),
                    r.job,
                    r.rank
                ))
            })?;
            if self.procs[p].pe != pe {
                return Err(SimError::Policy(format!(
                    "policy `{}` made job {} rank {} runnable on PE {pe}, but it lives on PE {}",
                    self.policy.name(),
                    r.job,
                    r.rank,
                    self.procs[p].pe
                )));
            }
            if self.active(p) && !new.contains(&p) {
                new.push(p);
            }
        }
        let old = std::mem::take(&mut self.pes[pe].eligible);
        for &p in &old {
            if !new.contains(&p) {
                self.procs[p].eligible = false;
                if matches!(self.procs[p].phase, Phase::Wait | Phase::Compute { .. }) {
                    self.procs[p].suspended_at = Some(self.now);
                }
                self.dequeue(pe, p);
                if self.pes[pe].running == Some(p) {
                    self.stop_running(pe);
                }
            }
        }
        let mut resumed = Vec::new();
        for &p in &new {
            self.procs[p].eligible = true;
            if let Some(at) = self.procs[p].suspended_at.take() {
                self.procs[p].suspended_in_phase += self.now - at;
            }
            if !self.procs[p].blocked && self.pes[pe].running != Some(p) && !self.procs[p].queued {
                self.enqueue_back(pe, p);
                resumed.push(p);
            }
        }
        let boosted = d.boosted.as_ref().and_then(|r| self.pid(r));
        let st = &mut self.pes[pe];
        st.eligible = new;
        st.exclusive = d.exclusive;
        st.boosted = boosted.filter(|b| st.eligible.contains(b));
        st.wait = d.wait;
        st.last = Some(d);
        // The node manager raises the boosted process's priority at the
        // switch itself: it takes the CPU now if it can run.
        if let (Some(b), Some(r)) = (st.boosted, st.running) {
            if b != r && self.procs[b].queued {
                self.preempt(pe);
            }
        }
        // A resumed process is a woken one to the OS scheduler.
        for p in resumed {
            self.contend(pe, p);
        }
        self.service(pe)
    }
}
