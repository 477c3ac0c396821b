//! The dispatch-overhead model, calibrated from empty-body microbenchmarks
//! (`keel sim calibrate`).
//!
//! A claim costs a local part (the worker computing its chunk, timing it) and a
//! serial part: the shared counter's cache line can be owned by one core at a
//! time, so claims that arrive together queue behind each other. That is how
//! the cost per claim grows with contention — not by a formula in P, but by
//! claims actually colliding in simulated time, as they do on a real machine
//! when chunks are short.
//!
//! Claims serialise on the shared counter: a second claim at the same time waits.
//!
//! ```
//! use keel_sim::{OverheadModel, SharedCounter};
//! let model = OverheadModel { fork_join: 0.0, claim_local: 1e-6, claim_serial: 2e-6 };
//! let mut counter = SharedCounter::new();
//! let a = counter.claim(0.0, &model);
//! let b = counter.claim(0.0, &model);
//! assert!(b > a);
//! assert_eq!(counter.claims(), 2);
//! assert!(counter.waited() > 0.0);
//! ```

use serde::{Deserialize, Serialize};

use crate::engine::SimTime;
use crate::error::SimError;

/// Per-operation costs of the runtime, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OverheadModel {
    /// Forking and joining one parallel loop (or one farm / object step), paid once.
    pub fork_join: f64,
    /// Per claim, paid by the claiming worker alone (chunk arithmetic, timing).
    pub claim_local: f64,
    /// Per claim, holding the shared counter: claims serialise on it.
    pub claim_serial: f64,
}

impl OverheadModel {
    /// No overhead at all: the analytical model (ss with zero overhead equals list scheduling).
    pub const ZERO: OverheadModel = OverheadModel {
        fork_join: 0.0,
        claim_local: 0.0,
        claim_serial: 0.0,
    };

    /// Checks every cost is finite and non-negative.
    pub fn validate(&self) -> Result<(), SimError> {
        for (what, v) in [
            ("fork_join", self.fork_join),
            ("claim_local", self.claim_local),
            ("claim_serial", self.claim_serial),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(SimError::invalid(what, v, "must be finite and ≥ 0 seconds"));
            }
        }
        Ok(())
    }
}

/// The shared claim counter of one loop instance (or one farm queue): a
/// resource that serves one claim at a time.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SharedCounter {
    free_at: SimTime,
    claims: u64,
    waited: f64,
}

impl SharedCounter {
    /// A counter free from time zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// A claim issued at `now`: returns when the claiming worker has its chunk
    /// (after waiting for the counter, holding it, and its local part).
    pub fn claim(&mut self, now: SimTime, model: &OverheadModel) -> SimTime {
        let start = now.max(self.free_at);
        self.waited += start - now;
        self.free_at = start + model.claim_serial;
        self.claims += 1;
        self.free_at + model.claim_local
    }

    /// Claims served so far.
    pub fn claims(&self) -> u64 {
        self.claims
    }

    /// Total time claims spent waiting for the counter (the contention).
    pub fn waited(&self) -> f64 {
        self.waited
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simultaneous_claims_queue_on_the_counter() {
        let model = OverheadModel {
            fork_join: 0.0,
            claim_local: 1.0,
            claim_serial: 2.0,
        };
        let mut c = SharedCounter::new();
        assert_eq!(c.claim(0.0, &model), 3.0);
        // Arrives while the first holds the counter: waits until 2, holds to 4, local to 5.
        assert_eq!(c.claim(0.0, &model), 5.0);
        assert_eq!(c.waited(), 2.0);
        // A late claim does not wait.
        assert_eq!(c.claim(10.0, &model), 13.0);
        assert_eq!(c.claims(), 3);
    }

    #[test]
    fn negative_costs_are_rejected() {
        let bad = OverheadModel {
            claim_serial: -1.0,
            ..OverheadModel::ZERO
        };
        assert!(bad.validate().is_err());
        assert!(OverheadModel::ZERO.validate().is_ok());
    }
}
