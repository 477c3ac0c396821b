//! Messages: an iteration's messages and barrier releases arriving, and
//! the processes they complete.

use super::{Phase, Sim};
use crate::error::SimError;

impl Sim<'_> {
    pub(super) fn deliver(&mut self, p: usize, iter: u64) -> Result<(), SimError> {
        let proc = &mut self.procs[p];
        proc.arrived[(iter % 2) as usize] += 1;
        let waiting = proc.iter == iter && matches!(proc.phase, Phase::Wait);
        if waiting && self.complete(p) {
            self.notify(p)?;
        }
        Ok(())
    }

    pub(super) fn complete(&self, p: usize) -> bool {
        let proc = &self.procs[p];
        proc.arrived[(proc.iter % 2) as usize] >= proc.need
    }

    /// Process `p`'s wait has become complete.
    pub(super) fn notify(&mut self, p: usize) -> Result<(), SimError> {
        let pe = self.procs[p].pe;
        if self.pes[pe].running == Some(p) {
            return self.service(pe);
        }
        if !self.procs[p].blocked {
            // Runnable or suspended while spinning: it sees its messages
            // when it next runs.
            return Ok(());
        }
        self.procs[p].blocked = false;
        self.procs[p].woken = true;
        if !self.procs[p].eligible {
            return Ok(());
        }
        self.enqueue_front(pe, p);
        self.contend(pe, p);
        self.service(pe)
    }

    /// Process `p` has just become runnable on `pe` while another runs:
    /// the OS preempts that one at the next tick if `p` has a larger
    /// counter, at once if `p` is boosted (the caller services the PE).
    pub(super) fn contend(&mut self, pe: usize, p: usize) {
        self.settle(pe);
        let st = &self.pes[pe];
        let Some(r) = st.running else {
            return;
        };
        let at = if st.boosted == Some(p) {
            Some(self.now)
        } else if r != p
            && st.boosted != Some(r)
            && !st.exclusive
            && self.procs[p].counter > self.procs[r].counter
        {
            Some(self.next_tick(pe))
        } else {
            None
        };
        if let Some(at) = at {
            let st = &mut self.pes[pe];
            st.preempt_at = Some(st.preempt_at.map_or(at, |t: f64| t.min(at)));
        }
    }

    pub(super) fn next_tick(&self, pe: usize) -> f64 {
        let tick = self.model.os.tick;
        let phase = self.pes[pe].tick_phase;
        let k = ((self.now - phase) / tick).ceil();
        (phase + k * tick).max(self.now)
    }
}
