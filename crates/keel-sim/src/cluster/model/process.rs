//! The BSP process: the end of a compute phase, the end of a wait, the
//! next iteration, exit.

use keel_workloads::bsp::Pattern;

use super::{class_index, Event, JobPhase, Phase, Sim};
use crate::cluster::params::{CommClock, CpuClock};

impl Sim<'_> {
    pub(super) fn end_compute(&mut self, p: usize) {
        let now = self.now;
        let latency = self.model.net.latency;
        self.procs[p].iterations += 1;
        if self.model.cpu_clock == CpuClock::Elapsed {
            let elapsed = self.phase_elapsed(p);
            self.procs[p].counters.computed(elapsed);
        }
        let (iter, job) = (self.procs[p].iter, self.procs[p].job);
        if !self.jobs[job].spec.communicates() {
            self.next_iteration(p);
            return;
        }
        self.procs[p].phase = Phase::Wait;
        self.procs[p].phase_since = now;
        self.procs[p].suspended_in_phase = 0.0;
        if self.jobs[job].spec.pattern == Pattern::Barrier {
            let j = &mut self.jobs[job];
            j.barrier += 1;
            if j.barrier == j.spec.processes {
                j.barrier = 0;
                self.q.schedule(now + latency, Event::Release { job, iter });
            }
        } else {
            self.q
                .schedule(now + latency, Event::Delivered { from: p, iter });
        }
    }

    /// Wall seconds of process `p`'s current phase, less its suspensions
    /// where the clock counts only scheduled time.
    pub(super) fn phase_elapsed(&self, p: usize) -> f64 {
        let proc = &self.procs[p];
        let wall = self.now - proc.phase_since;
        match self.model.comm_clock {
            CommClock::Wall => wall,
            CommClock::Scheduled => wall - proc.suspended_in_phase,
        }
    }

    pub(super) fn end_wait(&mut self, p: usize) {
        let merge = self.model.merge_epsilon;
        let waited = self.phase_elapsed(p);
        let proc = &mut self.procs[p];
        proc.counters.communicated(waited, merge);
        let slot = (proc.iter % 2) as usize;
        debug_assert_eq!(proc.arrived[slot], proc.need, "messages of one iteration");
        proc.arrived[slot] = 0;
        self.next_iteration(p);
    }

    pub(super) fn next_iteration(&mut self, p: usize) {
        self.procs[p].iter += 1;
        let (iter, rank, job) = (self.procs[p].iter, self.procs[p].rank, self.procs[p].job);
        let spec = &self.jobs[job].spec;
        if iter >= spec.iterations {
            self.exit(p);
        } else {
            let remaining = spec.compute(rank, iter) + self.monitor;
            self.procs[p].phase = Phase::Compute { remaining };
            self.procs[p].phase_since = self.now;
            self.procs[p].suspended_in_phase = 0.0;
        }
    }

    pub(super) fn exit(&mut self, p: usize) {
        let now = self.now;
        let pe = self.procs[p].pe;
        if self.pes[pe].running == Some(p) {
            self.stop_running(pe);
        }
        self.dequeue(pe, p);
        let proc = &mut self.procs[p];
        proc.phase = Phase::Done;
        proc.eligible = false;
        proc.class_time[class_index(proc.sched.class)] += now - proc.class_since;
        proc.class_since = now;
        self.pes[pe].eligible.retain(|&x| x != p);
        if self.pes[pe].boosted == Some(p) {
            self.pes[pe].boosted = None;
        }
        let k = proc.job;
        let job = &mut self.jobs[k];
        job.alive -= 1;
        if job.alive == 0 {
            job.phase = JobPhase::Finished;
            job.end = now;
            self.finished += 1;
            // Decisions for the freed PEs are taken outside the service
            // loop that is running now.
            self.q.schedule(now, Event::JobDone(k));
        }
    }
}
