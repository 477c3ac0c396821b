//! `rr`: round-robin dispatch, FastFlow's default emitter policy and the
//! paper's RRS (FastFlow ARRS paper §II; in FastFlow's `ff/lb.hpp`,
//! `selectworker()` returns
//! `++nextw % running`, and `schedule_task` moves on to the next worker when
//! a bounded queue is full). With unbounded queues the order is strict.

use super::{next_with_room, Decision, Dispatch, FarmConfig, FarmError, QueueView};
use crate::spec::Spec;

/// Round-robin over the workers whose queue has room.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoundRobin {
    workers: usize,
    last: usize,
}

impl RoundRobin {
    /// Round-robin; worker 0 gets the first item.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds `rr` (it takes no parameters).
    pub fn from_spec(spec: &Spec) -> Result<Self, FarmError> {
        spec.check_keys(&[])?;
        Ok(Self::new())
    }
}

impl Dispatch for RoundRobin {
    fn spec(&self) -> Spec {
        Spec::named("rr")
    }

    fn start(&mut self, config: &FarmConfig) -> Result<(), FarmError> {
        let config = FarmConfig::new(config.workers, config.capacity)?;
        self.workers = config.workers;
        // The first `next` moves to `last + 1`, i.e. worker 0.
        self.last = config.workers - 1;
        Ok(())
    }

    #[inline]
    fn next(&mut self, view: &dyn QueueView) -> Decision {
        match next_with_room(view, self.last, self.workers) {
            Some(w) => {
                self.last = w;
                Decision::Send(w)
            }
            None => Decision::WaitForRoom,
        }
    }
}
