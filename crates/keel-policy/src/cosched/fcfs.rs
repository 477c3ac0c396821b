//! `fcfs`: first-come-first-served batch scheduling, the dedicated
//! extreme among the paper's baselines (FCS paper §3: "a completely dedicated job
//! assignment"; §1: space slicing, nodes dedicated for the duration of the
//! run). Jobs start in arrival order, each on its own PEs, and run to
//! completion with no time slicing; a waiting process busy-waits, as it
//! has the PE to itself.

use super::{
    exclusive, CoschedError, CoschedPolicy, PeDecision, PeSlot, ProcessClass, TimeSharing, WaitMode,
};
use crate::spec::Spec;

/// First-come-first-served batch scheduling.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fcfs;

impl Fcfs {
    /// Builds `fcfs` (it takes no parameters).
    pub fn from_spec(spec: &Spec) -> Result<Self, CoschedError> {
        spec.check_keys(&[])?;
        Ok(Fcfs)
    }
}

impl CoschedPolicy for Fcfs {
    fn name(&self) -> &'static str {
        "fcfs"
    }

    fn spec(&self) -> Spec {
        Spec::named("fcfs")
    }

    fn time_sharing(&self) -> TimeSharing {
        TimeSharing::Batch
    }

    fn time_slice(&self) -> Option<f64> {
        None
    }

    /// The running job's process alone (the context assigns it); a PE no
    /// running job uses idles. Anything else resident stays suspended: it
    /// belongs to a job that has not started.
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

/// Nothing runs on the PE this slot.
pub(crate) fn idle() -> PeDecision {
    PeDecision {
        runnable: Vec::new(),
        exclusive: false,
        boosted: None,
        wait: WaitMode::Poll,
    }
}
