//! `local`: local scheduling, the uncoordinated extreme among the paper's
//! baselines (FCS paper §3: "a completely
//! shared, uncoordinated one"). Every job's processes are resident all the
//! time and each node's OS schedules them; a waiting process busy-waits
//! ("gang and locally-scheduled processes always busy-wait"), so it burns
//! its quantum when its peer is descheduled — why Local does badly on
//! fine-grained jobs (§3.2.1).

use super::{
    all_resident, CoschedError, CoschedPolicy, PeDecision, PeSlot, ProcessClass, TimeSharing,
    WaitMode,
};
use crate::spec::Spec;

/// Local (uncoordinated) scheduling with busy-waiting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Local;

impl Local {
    /// Builds `local` (it takes no parameters).
    pub fn from_spec(spec: &Spec) -> Result<Self, CoschedError> {
        spec.check_keys(&[])?;
        Ok(Local)
    }
}

impl CoschedPolicy for Local {
    fn name(&self) -> &'static str {
        "local"
    }

    fn spec(&self) -> Spec {
        Spec::named("local")
    }

    fn time_sharing(&self) -> TimeSharing {
        TimeSharing::Uncoordinated
    }

    fn time_slice(&self) -> Option<f64> {
        None
    }

    /// Every resident process, OS-scheduled, none favoured; the matrix's
    /// assignment is ignored (listed first only because it is resident).
    fn decide(&self, pe: &PeSlot) -> PeDecision {
        all_resident(pe, WaitMode::Poll, None)
    }

    fn wait_mode(&self, _class: ProcessClass) -> WaitMode {
        WaitMode::Poll
    }
}
