//! The PE: accounting, the local OS scheduler (counters, run queue,
//! preemption, dispatch) and the running process.

use keel_policy::cosched::WaitMode;
use rand::Rng;

use super::{Event, Phase, Sim};
use crate::cluster::params::CpuClock;
use crate::cluster::run::RunSegment;
use crate::error::SimError;

impl Sim<'_> {
    pub(super) fn settle(&mut self, pe: usize) {
        let now = self.now;
        let cpu_clock = self.model.cpu_clock;
        let st = &mut self.pes[pe];
        if let Some(p) = st.running {
            st.overhead += (now.min(st.busy_until) - st.settled).max(0.0);
            let from = st.settled.max(st.busy_until);
            if now > from {
                let dt = now - from;
                let proc = &mut self.procs[p];
                if !st.exclusive {
                    proc.counter = (proc.counter - dt).max(0.0);
                }
                match &mut proc.phase {
                    Phase::Compute { remaining } => {
                        *remaining = (*remaining - dt * st.speed).max(0.0);
                        proc.cpu += dt;
                        if cpu_clock == CpuClock::Cpu {
                            proc.counters.computed(dt);
                        }
                        st.compute += dt;
                    }
                    Phase::Wait => {
                        proc.counters.spun(dt);
                        st.spin += dt;
                    }
                    Phase::Idle | Phase::Done => {}
                }
            }
        }
        st.settled = now;
    }

    /// One time slice: the quantum with its jitter.
    pub(super) fn refill(&mut self) -> f64 {
        let os = self.model.os;
        if os.quantum_jitter == 0.0 {
            os.quantum
        } else {
            os.quantum * (1.0 + os.quantum_jitter * self.rng.gen_range(-1.0..=1.0))
        }
    }

    /// Every runnable counter on `pe` is spent: every process placed there
    /// gets `counter / 2 + quantum` (Linux 2.4's recalculation, which also
    /// credits sleeping and suspended processes).
    pub(super) fn recalculate(&mut self, pe: usize) {
        for i in 0..self.pes[pe].members.len() {
            let p = self.pes[pe].members[i];
            if self.active(p) {
                let refill = self.refill();
                let proc = &mut self.procs[p];
                proc.counter = proc.counter / 2.0 + refill;
            }
        }
    }

    pub(super) fn enqueue_back(&mut self, pe: usize, p: usize) {
        if self.procs[p].queued {
            return;
        }
        self.procs[p].queued = true;
        self.pes[pe].queue.push_back(p);
    }

    pub(super) fn enqueue_front(&mut self, pe: usize, p: usize) {
        if self.procs[p].queued {
            self.dequeue(pe, p);
        }
        self.procs[p].queued = true;
        self.pes[pe].queue.push_front(p);
    }

    pub(super) fn dequeue(&mut self, pe: usize, p: usize) {
        if self.procs[p].queued {
            self.procs[p].queued = false;
            let q = &mut self.pes[pe].queue;
            if let Some(i) = q.iter().position(|&x| x == p) {
                q.remove(i);
            }
        }
    }

    pub(super) fn end_segment(&mut self, pe: usize, p: usize) {
        if self.segments.len() < self.model.trace_limit {
            let proc = &self.procs[p];
            self.segments.push(RunSegment {
                pe,
                job: proc.job,
                rank: proc.rank,
                from: self.pes[pe].segment_start,
                to: self.now,
            });
        }
    }

    /// The running process leaves the CPU without rejoining the queue
    /// (suspended, blocked or exited).
    pub(super) fn stop_running(&mut self, pe: usize) {
        self.settle(pe);
        if let Some(p) = self.pes[pe].running.take() {
            self.end_segment(pe, p);
        }
    }

    /// The running process goes back to the queue.
    pub(super) fn preempt(&mut self, pe: usize) {
        self.settle(pe);
        let Some(p) = self.pes[pe].running.take() else {
            return;
        };
        self.end_segment(pe, p);
        self.procs[p].queued = true;
        self.pes[pe].queue.push_back(p);
    }

    /// The next process to run: the boosted one if it is queued, else the
    /// queued process with the largest counter (the first on ties), after a
    /// recalculation if every queued counter is spent.
    pub(super) fn pick(&mut self, pe: usize) -> Option<usize> {
        let tol = self.tol();
        let boosted = self.pes[pe].boosted.filter(|&b| self.procs[b].queued);
        let best = |sim: &Self| {
            let q = &sim.pes[pe].queue;
            let mut best: Option<(usize, f64)> = None;
            for (i, &p) in q.iter().enumerate() {
                let c = sim.procs[p].counter;
                if best.is_none_or(|(_, b)| c > b) {
                    best = Some((i, c));
                }
            }
            best
        };
        let index = match boosted {
            Some(b) => self.pes[pe].queue.iter().position(|&x| x == b)?,
            None => {
                let (mut i, c) = best(self)?;
                if c <= tol {
                    self.recalculate(pe);
                    i = best(self)?.0;
                }
                i
            }
        };
        let p = self.pes[pe].queue.remove(index)?;
        self.procs[p].queued = false;
        Some(p)
    }

    pub(super) fn dispatch(&mut self, pe: usize, p: usize) {
        let now = self.now;
        let mut cost = 0.0;
        if self.pes[pe].loaded != Some(p) {
            cost += self.model.cluster.context_switch;
            self.switches += 1;
        }
        if std::mem::replace(&mut self.procs[p].woken, false) {
            cost += self.model.os.wakeup;
        }
        let st = &mut self.pes[pe];
        st.running = Some(p);
        st.loaded = Some(p);
        st.busy_until = now + cost;
        st.settled = now;
        st.segment_start = now;
    }

    pub(super) fn block(&mut self, p: usize) {
        let pe = self.procs[p].pe;
        self.procs[p].blocked = true;
        self.procs[p].blocks += 1;
        self.stop_running(pe);
    }

    /// Everything due on `pe` now, then the next timer.
    pub(super) fn service(&mut self, pe: usize) -> Result<(), SimError> {
        self.settle(pe);
        let tol = self.tol();
        let now = self.now;
        if let Some(t) = self.pes[pe].preempt_at {
            if t <= now + tol {
                self.pes[pe].preempt_at = None;
                if self.pes[pe].running.is_some() && !self.pes[pe].queue.is_empty() {
                    self.preempt(pe);
                }
            }
        }
        loop {
            let Some(p) = self.pes[pe].running else {
                if let Some(next) = self.pick(pe) {
                    self.dispatch(pe, next);
                    continue;
                }
                break;
            };
            if now + tol < self.pes[pe].busy_until {
                break;
            }
            match self.procs[p].phase {
                Phase::Compute { remaining } => {
                    if remaining <= tol * self.pes[pe].speed {
                        self.end_compute(p);
                    } else {
                        break;
                    }
                }
                Phase::Wait => {
                    if self.complete(p) {
                        self.end_wait(p);
                    } else {
                        match self.pes[pe].wait {
                            WaitMode::Poll => break,
                            WaitMode::SpinBlock { spin } => {
                                if now + tol >= self.procs[p].phase_since + spin {
                                    self.block(p);
                                } else {
                                    break;
                                }
                            }
                            WaitMode::Block => self.block(p),
                        }
                    }
                }
                Phase::Idle | Phase::Done => self.stop_running(pe),
            }
        }
        // The time slice: a spent counter hands the CPU to the best queued
        // process (possibly the same one again, after a recalculation).
        let st = &self.pes[pe];
        if let Some(r) = st.running {
            if !st.exclusive
                && st.boosted != Some(r)
                && self.procs[r].counter <= tol
                && now + tol >= st.busy_until
            {
                self.preempt(pe);
                if let Some(next) = self.pick(pe) {
                    self.dispatch(pe, next);
                }
                // A dispatched process may have something due at once (its
                // messages came while it was queued): the timer below fires
                // at `busy_until`, which is now at the earliest.
            }
        }
        self.arm(pe);
        Ok(())
    }

    pub(super) fn arm(&mut self, pe: usize) {
        let now = self.now;
        let st = &self.pes[pe];
        let mut t = f64::INFINITY;
        if let Some(p) = st.running {
            let start = st.busy_until.max(now);
            match self.procs[p].phase {
                Phase::Compute { remaining } => t = start + remaining / st.speed,
                Phase::Wait => {
                    if self.complete(p) {
                        t = start;
                    } else {
                        match st.wait {
                            WaitMode::Poll => {}
                            WaitMode::SpinBlock { spin } => {
                                t = (self.procs[p].phase_since + spin).max(start)
                            }
                            WaitMode::Block => t = start,
                        }
                    }
                }
                Phase::Idle | Phase::Done => t = now,
            }
            if !st.exclusive && st.boosted != Some(p) {
                t = t.min(start + self.procs[p].counter);
            }
        }
        if let Some(at) = st.preempt_at {
            t = t.min(at.max(now));
        }
        let st = &mut self.pes[pe];
        st.gen += 1;
        if t.is_finite() {
            let gen = st.gen;
            self.q.schedule(t, Event::Pe { pe, gen });
        }
    }
}
