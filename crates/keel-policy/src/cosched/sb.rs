//! `sb`: local scheduling with spin-block waits, the paper's stand-in for
//! implicit coscheduling (FCS paper §3: a process waiting for synchronous
//! communication polls for a fixed 100 µs and then blocks; implicit
//! coscheduling is Arpaci-Dusseau, Culler and Mainwaring's, SIGMETRICS 1998). Every job is
//! resident and OS-scheduled; blocking hands the CPU to a process whose
//! peers are running, so jobs tend to self-synchronise.

use super::{
    all_resident, kebab_keys, positive_seconds, CoschedError, CoschedPolicy, PeDecision, PeSlot,
    ProcessClass, TimeSharing, WaitMode,
};
use crate::spec::{Spec, SpecValue};

/// The paper's SB spin time: 100 µs (§3), equal to FCS's T_spin.
pub const DEFAULT_SB_SPIN: f64 = 100e-6;

/// Local scheduling with spin-block waits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpinBlocking {
    spin: f64,
}

impl Default for SpinBlocking {
    fn default() -> Self {
        SpinBlocking {
            spin: DEFAULT_SB_SPIN,
        }
    }
}

impl SpinBlocking {
    /// Spin-block with `spin` seconds of polling (finite, > 0).
    pub fn new(spin: f64) -> Result<Self, CoschedError> {
        if !(spin.is_finite() && spin > 0.0) {
            return Err(CoschedError::Parameter {
                key: "spin",
                value: crate::error::compact(spin),
                expected: "a finite number of seconds > 0",
            });
        }
        Ok(SpinBlocking { spin })
    }

    /// Builds `sb` from `sb[:spin=S]` (default 100 µs).
    pub fn from_spec(spec: &Spec) -> Result<Self, CoschedError> {
        let spec = kebab_keys(spec);
        spec.check_keys(&["spin"])?;
        SpinBlocking::new(positive_seconds(&spec, "spin")?.unwrap_or(DEFAULT_SB_SPIN))
    }

    /// The spin time (s).
    pub fn spin(&self) -> f64 {
        self.spin
    }
}

impl CoschedPolicy for SpinBlocking {
    fn name(&self) -> &'static str {
        "sb"
    }

    fn spec(&self) -> Spec {
        let mut spec = Spec::named("sb");
        if self.spin != DEFAULT_SB_SPIN {
            spec.params
                .push(("spin".into(), SpecValue::Token(self.spin.to_string())));
        }
        spec
    }

    fn time_sharing(&self) -> TimeSharing {
        TimeSharing::Uncoordinated
    }

    fn time_slice(&self) -> Option<f64> {
        None
    }

    /// Every resident process, OS-scheduled, spin-blocking.
    fn decide(&self, pe: &PeSlot) -> PeDecision {
        all_resident(pe, self.wait_mode(ProcessClass::Cs), None)
    }

    fn wait_mode(&self, _class: ProcessClass) -> WaitMode {
        WaitMode::SpinBlock { spin: self.spin }
    }
}
