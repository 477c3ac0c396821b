//! What a simulated cluster run reports: per-job times, per-process
//! counters and classes, per-PE usage, FCS's class timeline and, when
//! asked, the run segments of every PE.
//!
//! A job alone on its PEs: its turnaround is its runtime, and the PEs compute most of the time.
//!
//! ```
//! use keel_sim::cluster::{simulate_spec, CoschedModel};
//! use keel_workloads::bsp::{BspJob, Pattern};
//! let job = BspJob::new(2, 0.001, 10, Pattern::Ring).unwrap();
//! let run = simulate_spec(&CoschedModel::new(1, 2).unwrap(), "fcfs", &[job]).unwrap();
//! let result = &run.jobs[0];
//! assert_eq!(result.turnaround, result.end - result.arrival);
//! assert_eq!(run.mean_turnaround(), result.turnaround);
//! assert!(run.utilisation() > 0.5 && run.utilisation() <= 1.0);
//! ```

use serde::Serialize;

/// One job's times, seconds since the run started.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobResult {
    /// The job's label.
    pub name: String,
    /// Submission.
    pub arrival: f64,
    /// When the job got its PEs (FCFS) or was placed in the matrix (the
    /// time-sharing policies).
    pub start: f64,
    /// When its last process finished: the paper's "termination time".
    pub end: f64,
    /// `end − arrival`.
    pub turnaround: f64,
    /// `end − start`.
    pub runtime: f64,
    /// Its time alone on dedicated PEs without variability
    /// ([`keel_workloads::bsp::BspJob::dedicated_time`] at the model's
    /// latency).
    pub dedicated: f64,
}

/// One process's counters at the end of the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcessResult {
    /// Its job (index in submission order).
    pub job: usize,
    /// Its rank.
    pub rank: usize,
    /// Its PE.
    pub pe: usize,
    /// Compute phases it completed (must equal the job's iterations).
    pub iterations: u64,
    /// CPU seconds computing.
    pub cpu: f64,
    /// CPU seconds spinning in waits.
    pub spin: f64,
    /// Wall seconds inside blocking communication.
    pub comm_wait: f64,
    /// Blocking communication events (back-to-back merged).
    pub comm_events: u64,
    /// Times it blocked (gave up the CPU in a wait).
    pub blocks: u64,
    /// Its class when it finished (`CS`, `F`, `DC`); `None` unless the
    /// policy classifies.
    pub final_class: Option<&'static str>,
    /// The class it held longest (by wall time); `None` unless the policy
    /// classifies.
    pub dominant_class: Option<&'static str>,
    /// Wall seconds spent in each class `[CS, F, DC]` (zeros unless the
    /// policy classifies).
    pub class_time: [f64; 3],
}

/// One PE's time, seconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PeUsage {
    /// Computing.
    pub compute: f64,
    /// Spinning (busy-waiting) in a wait.
    pub spin: f64,
    /// Switching between processes and waking them.
    pub overhead: f64,
    /// Idle until the makespan.
    pub idle: f64,
}

/// A process changed class (FCS).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassChange {
    /// When (a strobe).
    pub time: f64,
    /// Job index.
    pub job: usize,
    /// Rank.
    pub rank: usize,
    /// Previous class.
    pub from: &'static str,
    /// New class.
    pub to: &'static str,
}

/// A process held a PE from `from` to `to` (switch overhead included).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RunSegment {
    /// The PE.
    pub pe: usize,
    /// Job index.
    pub job: usize,
    /// Rank.
    pub rank: usize,
    /// Start, seconds.
    pub from: f64,
    /// End, seconds.
    pub to: f64,
}

/// A simulated run of one policy on one set of jobs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CoschedRun {
    /// The policy's canonical spec.
    pub policy: String,
    /// From the first arrival to the last completion.
    pub makespan: f64,
    /// Per job, in submission order.
    pub jobs: Vec<JobResult>,
    /// Per process, job by job, rank by rank.
    pub processes: Vec<ProcessResult>,
    /// Per PE.
    pub pes: Vec<PeUsage>,
    /// FCS's class changes in time order (empty for other policies).
    pub class_changes: Vec<ClassChange>,
    /// Global multi-context-switches (strobes).
    pub strobes: u64,
    /// Dispatches of a process other than the one last on its PE.
    pub context_switches: u64,
    /// Events the engine processed.
    pub events: u64,
    /// Run segments, up to the model's `trace_limit` (empty by default).
    pub segments: Vec<RunSegment>,
}

impl CoschedRun {
    /// The termination time of each job (the paper's table cells).
    pub fn ends(&self) -> Vec<f64> {
        self.jobs.iter().map(|j| j.end).collect()
    }

    /// Mean turnaround over the jobs.
    pub fn mean_turnaround(&self) -> f64 {
        if self.jobs.is_empty() {
            return 0.0;
        }
        self.jobs.iter().map(|j| j.turnaround).sum::<f64>() / self.jobs.len() as f64
    }

    /// The dominant class of each rank of `job` (`None` entries unless the
    /// policy classifies).
    pub fn classes_of(&self, job: usize) -> Vec<Option<&'static str>> {
        self.processes
            .iter()
            .filter(|p| p.job == job)
            .map(|p| p.dominant_class)
            .collect()
    }

    /// Fraction of the PEs' time spent computing over the makespan.
    pub fn utilisation(&self) -> f64 {
        if self.makespan <= 0.0 || self.pes.is_empty() {
            return 0.0;
        }
        self.pes.iter().map(|p| p.compute).sum::<f64>() / (self.makespan * self.pes.len() as f64)
    }
}
