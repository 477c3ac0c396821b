//! What stepping and remapping objects measured (seconds, monotonic clock).

use keel_policy::invoke::Verdict;
use serde::Serialize;

use crate::tasks::WorkerStats;

/// One remap (a Charm++ load-balancing step).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rebalance {
    /// Steps completed when it ran.
    pub step: usize,
    /// The policy's canonical spec.
    pub policy: String,
    /// Objects moved.
    pub migrations: usize,
    /// λ of the measured PU loads under the old mapping (available PUs).
    pub lambda_before: f64,
    /// λ the same measured loads would have under the new mapping.
    pub lambda_after: f64,
    /// Seconds inside the policy's `map`.
    pub decision_s: f64,
    /// Seconds moving objects between PUs.
    pub migration_s: f64,
    /// Seconds for the whole remap (gathering, decision, checks, moves).
    pub total_s: f64,
    /// Why it ran: the invocation's reason, or
    /// [`REQUESTED`](super::REQUESTED).
    pub reason: String,
}

/// One step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepReport {
    /// The step's index (0 for the first).
    pub step: usize,
    /// Wall time of the step, barrier included, remap excluded.
    pub wall_s: f64,
    /// Each PU's time in its objects' steps.
    pub pu_objects_s: Vec<f64>,
    /// Each PU's busy time: its objects' steps, less the time their owners
    /// only waited for thieves, plus the stolen chunks it ran.
    pub pu_busy_s: Vec<f64>,
    /// What the invocation decided after the step, and why.
    pub decision: Verdict,
    /// The remap that followed the step, if any.
    pub rebalance: Option<Rebalance>,
}

/// A run of steps.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunReport {
    /// Steps run.
    pub steps: usize,
    /// Wall time of the run: steps plus remaps.
    pub wall_s: f64,
    /// Time in steps.
    pub steps_s: f64,
    /// Each step's wall time, barrier included, remap excluded (sums to
    /// `steps_s`).
    pub step_s: Vec<f64>,
    /// Time in remaps.
    pub balance_s: f64,
    /// λ over the run at the PU level: Σ_t max_p busy / Σ_t mean_p busy − 1
    /// over available PUs (`metrics::stepped_lambda`).
    pub lambda: f64,
    /// Each PU's busy time over the run.
    pub pu_busy_s: Vec<f64>,
    /// Σ of all PUs' busy time: the measured work.
    pub busy_s: f64,
    /// Every remap.
    pub rebalances: Vec<Rebalance>,
    /// Potential-task counters, summed over workers.
    pub tasks: WorkerStats,
}

impl RunReport {
    /// Objects moved over the run.
    pub fn migrations(&self) -> usize {
        self.rebalances.iter().map(|r| r.migrations).sum()
    }
}
