//! Table 1's MPI-level measurements of one process, kept the way the real
//! monitoring layer keeps them: monotonic totals since the process
//! started, from which the node manager subtracts a baseline snapshot at
//! every reset (a class change, or Algorithm 2's periodic reset).
//!
//! - `T_cpu` is CPU time spent computing, or under the model's
//!   `CpuClock::Elapsed` the wall time from leaving one communication to
//!   entering the next; either way spinning in a wait is counted apart and
//!   never added (§2.6: spin time "is accounted for and subtracted from
//!   T_cpu").
//! - `T_comm` is the time from entering a blocking communication to
//!   leaving it: while the process is scheduled (running, runnable or
//!   blocked), or all wall time, as the model's `CommClock` says.
//! - `C_comm` counts blocking communications, a call that follows the
//!   previous one with less than `merge_epsilon` of computation in between
//!   counting as the same event (§2.6).
//!
//! Back-to-back communication counts as one event; the statistics are
//! taken against a snapshot:
//!
//! ```
//! use keel_sim::cluster::CommCounters;
//! let mut c = CommCounters::default();
//! let base = c;
//! c.computed(0.010);
//! assert!(c.communicated(0.002, 50e-6));
//! assert!(!c.communicated(0.001, 50e-6)); // no computation in between: merged
//! let stats = c.since(&base).unwrap();
//! assert_eq!(stats.t_cpu(), 0.010);
//! assert!((stats.t_comm() - 0.003).abs() < 1e-15);
//! ```

use keel_policy::cosched::CommStats;

use crate::error::SimError;

/// Monotonic per-process totals.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CommCounters {
    /// CPU seconds computing (spin excluded).
    pub t_cpu: f64,
    /// Wall seconds inside blocking communication.
    pub t_comm: f64,
    /// Blocking communication events, back-to-back calls merged.
    pub c_comm: u64,
    /// CPU seconds spent spinning (polling) in waits.
    pub spin: f64,
    /// Computation since the last communication ended.
    since_comm: f64,
}

impl CommCounters {
    /// Adds `dt` CPU seconds of computation.
    pub fn computed(&mut self, dt: f64) {
        self.t_cpu += dt;
        self.since_comm += dt;
    }

    /// Adds `dt` CPU seconds of spinning.
    pub fn spun(&mut self, dt: f64) {
        self.spin += dt;
    }

    /// A blocking communication that waited `waited` wall seconds has
    /// completed; returns whether it counted as a new event (false when it
    /// merged with the previous one).
    pub fn communicated(&mut self, waited: f64, merge_epsilon: f64) -> bool {
        self.t_comm += waited.max(0.0);
        let new_event = self.c_comm == 0 || self.since_comm >= merge_epsilon;
        if new_event {
            self.c_comm += 1;
        }
        self.since_comm = 0.0;
        new_event
    }

    /// The statistics since `base` (a snapshot of these counters), for
    /// Algorithm 2.
    pub fn since(&self, base: &CommCounters) -> Result<CommStats, SimError> {
        CommStats::new(
            (self.t_cpu - base.t_cpu).max(0.0),
            (self.t_comm - base.t_comm).max(0.0),
            self.c_comm.saturating_sub(base.c_comm),
        )
        .map_err(|e| SimError::Policy(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_to_back_calls_count_once_and_spin_stays_out_of_t_cpu() {
        let mut c = CommCounters::default();
        c.computed(0.004);
        assert!(c.communicated(0.001, 50e-6));
        // No computation in between: the same event.
        assert!(!c.communicated(0.002, 50e-6));
        c.computed(10e-6);
        assert!(!c.communicated(0.0, 50e-6));
        c.computed(0.004);
        c.spun(0.5);
        assert!(c.communicated(0.001, 50e-6));
        assert_eq!(c.c_comm, 2);
        assert!((c.t_comm - 0.004).abs() < 1e-15);
        assert!((c.t_cpu - 0.00801).abs() < 1e-15);
        let base = CommCounters {
            t_cpu: 0.004,
            t_comm: 0.001,
            c_comm: 1,
            ..Default::default()
        };
        let s = c.since(&base).unwrap();
        assert_eq!(s.c_comm(), 1);
        assert!((s.avg_cpu() - 0.00401).abs() < 1e-12);
        assert!((s.granularity() - 0.00701).abs() < 1e-12);
        // The first call counts even with no computation before it.
        let mut first = CommCounters::default();
        assert!(first.communicated(0.0, 50e-6));
    }
}
