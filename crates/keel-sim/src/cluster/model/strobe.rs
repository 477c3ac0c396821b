//! The strobe: the gang clock's move to the next matrix row and, for each
//! process of the slot that just ended, FCS's Algorithm 2.

use keel_policy::cosched::FcsParams;

use super::{class_index, Event, JobPhase, Sim};
use crate::cluster::run::ClassChange;
use crate::error::SimError;

impl Sim<'_> {
    pub(super) fn strobe(&mut self) -> Result<(), SimError> {
        self.strobe_pending = false;
        if self.matrix.is_empty() {
            self.row = None;
            return Ok(());
        }
        self.strobes += 1;
        if let Some(params) = self.fcs {
            for pe in 0..self.pes.len() {
                self.settle(pe);
            }
            for j in std::mem::take(&mut self.slot_jobs) {
                if self.jobs[j].phase != JobPhase::Active {
                    continue;
                }
                let first = self.jobs[j].first;
                for p in first..first + self.jobs[j].spec.processes {
                    if self.active(p) {
                        self.end_of_slot(p, &params)?;
                    }
                }
            }
        }
        let row = match self.row {
            None => 0,
            Some(r) => self.matrix.next_row(r),
        };
        self.row = Some(row);
        self.slot_jobs = self
            .matrix
            .jobs_in_row(row)
            .into_iter()
            .map(|j| j as usize)
            .collect();
        for pe in 0..self.pes.len() {
            let slot = self.slot_for(row, pe);
            let decision = self.policy.decide(&slot);
            self.apply(pe, decision)?;
        }
        self.q.schedule(self.now + self.slice, Event::Strobe);
        self.strobe_pending = true;
        Ok(())
    }

    /// Algorithm 2 for process `p` whose assigned slot just ended.
    pub(super) fn end_of_slot(&mut self, p: usize, params: &FcsParams) -> Result<(), SimError> {
        let now = self.now;
        let proc = &mut self.procs[p];
        let stats = proc.counters.since(&proc.base)?;
        let before = proc.sched.class;
        let outcome = proc.sched.finish_slot(&stats, params);
        if outcome.resets_stats() {
            proc.base = proc.counters;
        }
        let after = proc.sched.class;
        if after != before {
            proc.class_time[class_index(before)] += now - proc.class_since;
            proc.class_since = now;
            self.changes.push(ClassChange {
                time: now,
                job: proc.job,
                rank: proc.rank,
                from: before.as_str(),
                to: after.as_str(),
            });
        }
        Ok(())
    }
}
