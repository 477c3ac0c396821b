//! `fcs`: Flexible CoScheduling (FCS paper §2): gang scheduling over the
//! Ousterhout matrix in which each node
//! manager may overrule the slot by process class — Algorithm 1 at every
//! multi-context-switch ([`super::context_switch`]) and Algorithm 2 at the
//! end of each process's assigned slot ([`super::ProcessSched::finish_slot`]),
//! with Table 2's constants ([`FcsParams`]).

use super::{
    context_switch, CoschedError, CoschedPolicy, FcsParams, PeDecision, PeSlot, ProcessClass,
    TimeSharing, WaitMode,
};
use crate::spec::{Spec, SpecValue};

/// Flexible CoScheduling.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Fcs {
    params: FcsParams,
}

impl Fcs {
    /// FCS with `params`, validated.
    pub fn new(params: FcsParams) -> Result<Self, CoschedError> {
        params.validate()?;
        Ok(Fcs { params })
    }

    /// Builds `fcs` from `fcs[:t-slice=..,t-spin=..,cslots-min=..,
    /// dc-thresh=..,cs-thresh=..,f-thresh=..,tslots-max=..]` (Table 2
    /// defaults; see [`FcsParams::from_spec`]).
    pub fn from_spec(spec: &Spec) -> Result<Self, CoschedError> {
        Fcs::new(FcsParams::from_spec(spec)?)
    }

    /// Its constants.
    pub fn params(&self) -> &FcsParams {
        &self.params
    }
}

impl CoschedPolicy for Fcs {
    fn name(&self) -> &'static str {
        "fcs"
    }

    fn spec(&self) -> Spec {
        Spec {
            name: "fcs".into(),
            params: self
                .params
                .spec_params()
                .into_iter()
                .map(|(k, v)| (k.to_string(), SpecValue::Token(v)))
                .collect(),
        }
    }

    fn time_sharing(&self) -> TimeSharing {
        TimeSharing::Gang
    }

    fn time_slice(&self) -> Option<f64> {
        Some(self.params.t_slice)
    }

    fn decide(&self, pe: &PeSlot) -> PeDecision {
        context_switch(pe, &self.params)
    }

    /// CS polls in its own slot; F and DC spin-block for T_spin.
    fn wait_mode(&self, class: ProcessClass) -> WaitMode {
        match class {
            ProcessClass::Cs => WaitMode::Poll,
            ProcessClass::F | ProcessClass::Dc => WaitMode::SpinBlock {
                spin: self.params.t_spin,
            },
        }
    }

    fn fcs_params(&self) -> Option<&FcsParams> {
        Some(&self.params)
    }
}
