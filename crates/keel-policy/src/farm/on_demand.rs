//! `on-demand`: FastFlow's on-demand scheduling
//! (`ff_farm::set_scheduling_ondemand(inbufferentries = 1)` in FastFlow's
//! `ff/lb.hpp`): every worker's input queue is bounded
//! at `capacity` slots and the emitter runs its ordinary round-robin, which
//! skips full queues; a busy worker's queue is full, so items go to whoever
//! has taken its last one. The policy is `rr` plus the capacity it asks the
//! context for ([`Dispatch::capacity`]).

use super::{positive, Decision, Dispatch, FarmConfig, FarmError, QueueView, RoundRobin};
use crate::spec::{Spec, SpecValue};

/// FastFlow's default `inbufferentries`.
pub const DEFAULT_ON_DEMAND_CAPACITY: usize = 1;

/// Round-robin over queues bounded at `capacity` slots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OnDemand {
    capacity: usize,
    /// The dispatch itself: the bound, not the order, makes it on-demand.
    rr: RoundRobin,
}

impl OnDemand {
    /// On-demand with queues of `capacity` slots (`>= 1`).
    pub fn new(capacity: usize) -> Result<Self, FarmError> {
        if capacity == 0 {
            return Err(FarmError::ZeroCapacity);
        }
        Ok(OnDemand {
            capacity,
            rr: RoundRobin::new(),
        })
    }

    /// Builds `on-demand[:capacity=N]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, FarmError> {
        spec.check_keys(&["capacity"])?;
        let capacity = positive(spec, "capacity", FarmError::ZeroCapacity)?;
        Self::new(capacity.unwrap_or(DEFAULT_ON_DEMAND_CAPACITY))
    }
}

impl Dispatch for OnDemand {
    fn spec(&self) -> Spec {
        let mut spec = Spec::named("on-demand");
        if self.capacity != DEFAULT_ON_DEMAND_CAPACITY {
            spec.params.push((
                "capacity".into(),
                SpecValue::Token(self.capacity.to_string()),
            ));
        }
        spec
    }

    fn capacity(&self) -> Option<usize> {
        Some(self.capacity)
    }

    fn start(&mut self, config: &FarmConfig) -> Result<(), FarmError> {
        self.rr.start(config)
    }

    #[inline]
    fn next(&mut self, view: &dyn QueueView) -> Decision {
        self.rr.next(view)
    }
}
