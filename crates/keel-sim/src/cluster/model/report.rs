//! The report: the run's results from the engine's final state.

use super::{Sim, CLASSES};
use crate::cluster::run::{CoschedRun, JobResult, PeUsage, ProcessResult};

impl Sim<'_> {
    pub(super) fn finish(self) -> CoschedRun {
        let latency = self.model.net.latency;
        let first_arrival = self
            .jobs
            .iter()
            .map(|j| j.spec.arrival)
            .fold(f64::INFINITY, f64::min);
        let last_end = self.jobs.iter().map(|j| j.end).fold(0.0, f64::max);
        let makespan = if self.jobs.is_empty() {
            0.0
        } else {
            last_end - first_arrival
        };
        let jobs = self
            .jobs
            .iter()
            .map(|j| JobResult {
                name: j.spec.name.clone(),
                arrival: j.spec.arrival,
                start: j.start,
                end: j.end,
                turnaround: j.end - j.spec.arrival,
                runtime: j.end - j.start,
                dedicated: j.spec.dedicated_time(latency),
            })
            .collect();
        let classifies = self.fcs.is_some();
        let processes = self
            .procs
            .iter()
            .map(|p| {
                let dominant = (0..3)
                    .max_by(|&a, &b| p.class_time[a].total_cmp(&p.class_time[b]).then(b.cmp(&a)))
                    .map(|i| CLASSES[i].as_str());
                ProcessResult {
                    job: p.job,
                    rank: p.rank,
                    pe: p.pe,
                    iterations: p.iterations,
                    cpu: p.cpu,
                    spin: p.counters.spin,
                    comm_wait: p.counters.t_comm,
                    comm_events: p.counters.c_comm,
                    blocks: p.blocks,
                    final_class: classifies.then(|| p.sched.class.as_str()),
                    dominant_class: if classifies { dominant } else { None },
                    class_time: p.class_time,
                }
            })
            .collect();
        let pes = self
            .pes
            .iter()
            .map(|pe| {
                let busy = pe.compute + pe.spin + pe.overhead;
                PeUsage {
                    compute: pe.compute,
                    spin: pe.spin,
                    overhead: pe.overhead,
                    idle: (makespan - busy).max(0.0),
                }
            })
            .collect();
        CoschedRun {
            policy: self.policy.spec().to_string(),
            makespan,
            jobs,
            processes,
            pes,
            class_changes: self.changes,
            strobes: self.strobes,
            context_switches: self.switches,
            events: self.q.events_processed(),
            segments: self.segments,
        }
    }
}
