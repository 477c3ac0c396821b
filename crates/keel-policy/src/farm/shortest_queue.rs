//! `shortest-queue`: the ideal scheduler of the paper's model
//! (FastFlow ARRS paper §III-C, Eq. 2: "the former
//! takes scheduling decisions for each incoming task"): every item goes to
//! the queue with the fewest waiting items, read exactly at every item.
//! Ties go to the first tied worker after the previous choice, so equal
//! queues are served round-robin. Full queues are skipped.

use super::{Decision, Dispatch, FarmConfig, FarmError, QueueView};
use crate::spec::Spec;

/// The shortest queue, with exact levels at every item.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShortestQueue {
    workers: usize,
    last: usize,
}

impl ShortestQueue {
    /// The policy; worker 0 wins the first tie.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds `shortest-queue` (no parameters).
    pub fn from_spec(spec: &Spec) -> Result<Self, FarmError> {
        spec.check_keys(&[])?;
        Ok(Self::new())
    }
}

impl Dispatch for ShortestQueue {
    fn spec(&self) -> Spec {
        Spec::named("shortest-queue")
    }

    fn start(&mut self, config: &FarmConfig) -> Result<(), FarmError> {
        let config = FarmConfig::new(config.workers, config.capacity)?;
        self.workers = config.workers;
        self.last = config.workers - 1;
        Ok(())
    }

    fn next(&mut self, view: &dyn QueueView) -> Decision {
        let mut best: Option<(usize, usize)> = None;
        let mut w = self.last;
        for _ in 0..self.workers {
            w = if w + 1 == self.workers { 0 } else { w + 1 };
            if !view.has_room(w) {
                continue;
            }
            let level = view.level(w);
            if best.is_none_or(|(_, b)| level < b) {
                best = Some((w, level));
                if level == 0 {
                    break;
                }
            }
        }
        match best {
            Some((w, _)) => {
                self.last = w;
                Decision::Send(w)
            }
            None => Decision::WaitForRoom,
        }
    }
}
