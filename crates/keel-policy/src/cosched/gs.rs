//! `gs`: strict gang scheduling over the Ousterhout matrix (FCS paper §3,
//! and footnote 1 of §2.1: "in strict gang scheduling each job is assigned
//! a dedicated timeslot, and can only be run in that slot").
//!
//! Each slot, the process the matrix assigns to a PE runs alone and an
//! empty cell leaves its PE idle: no alternate scheduling fills the holes.
//! That is what the paper measured — in §3.2.3 GS's turnaround (404.72 s)
//! is FCFS's (408.26 s), the sum of the jobs run in isolation, which holes
//! filled by other jobs would have shortened. A waiting process busy-waits
//! (§3: "gang and locally-scheduled processes always busy-wait"): its
//! peers are coscheduled, so its messages come soon, and yielding would
//! hand the CPU to nobody.

use super::{
    exclusive, fcfs::idle, kebab_keys, positive_seconds, CoschedError, CoschedPolicy, PeDecision,
    PeSlot, ProcessClass, TimeSharing, WaitMode, DEFAULT_T_SLICE,
};
use crate::spec::{Spec, SpecValue};

/// Strict gang scheduling.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gang {
    t_slice: f64,
}

impl Default for Gang {
    fn default() -> Self {
        Gang {
            t_slice: DEFAULT_T_SLICE,
        }
    }
}

impl Gang {
    /// Gang scheduling with `t_slice`-second slots (finite, > 0).
    pub fn new(t_slice: f64) -> Result<Self, CoschedError> {
        if !(t_slice.is_finite() && t_slice > 0.0) {
            return Err(CoschedError::Parameter {
                key: "t-slice",
                value: crate::error::compact(t_slice),
                expected: "a finite number of seconds > 0",
            });
        }
        Ok(Gang { t_slice })
    }

    /// Builds `gs` from `gs[:t-slice=S]` (default Table 2's 25 ms, the
    /// slice the paper's GS shares with FCS).
    pub fn from_spec(spec: &Spec) -> Result<Self, CoschedError> {
        let spec = kebab_keys(spec);
        spec.check_keys(&["t-slice"])?;
        Gang::new(positive_seconds(&spec, "t-slice")?.unwrap_or(DEFAULT_T_SLICE))
    }
}

impl CoschedPolicy for Gang {
    fn name(&self) -> &'static str {
        "gs"
    }

    fn spec(&self) -> Spec {
        let mut spec = Spec::named("gs");
        if self.t_slice != DEFAULT_T_SLICE {
            spec.params
                .push(("t-slice".into(), SpecValue::Token(self.t_slice.to_string())));
        }
        spec
    }

    fn time_sharing(&self) -> TimeSharing {
        TimeSharing::Gang
    }

    fn time_slice(&self) -> Option<f64> {
        Some(self.t_slice)
    }

    fn decide(&self, pe: &PeSlot) -> PeDecision {
        match pe.assigned {
            Some(p) => exclusive(p, WaitMode::Poll),
            None => idle(),
        }
    }

    fn wait_mode(&self, _class: ProcessClass) -> WaitMode {
        WaitMode::Poll
    }
}
