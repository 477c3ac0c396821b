//! The known-speed split: a dispatch told the workers' speeds in advance.
//! It is a baseline, not a registry policy (no spec builds it): `keel bench
//! farm`'s experiment (b) runs it beside the policies to measure what
//! balancing can reach on a machine whose workers slow each other down.
//!
//! ```
//! use keel_policy::farm::known_split::KnownSpeedSplit;
//! use keel_policy::farm::{Dispatch, FarmConfig, ScriptedQueues};
//! let mut split = KnownSpeedSplit::new(vec![3.0, 1.0]);
//! split.start(&FarmConfig::new(2, None).unwrap()).unwrap();
//! let view = ScriptedQueues::new(2);
//! let sent: Vec<usize> = (0..8).map(|_| split.next(&view).worker().unwrap()).collect();
//! // Worker 0 is three times as fast: 6 of 8 items, spread over the stream.
//! assert_eq!(sent.iter().filter(|&&w| w == 0).count(), 6);
//! ```

use super::{Decision, Dispatch, FarmConfig, FarmError, QueueView};
use crate::Spec;

/// The label of [`KnownSpeedSplit`] in reports.
pub const KNOWN_SPLIT: &str = "known-split";

/// A baseline for (b), not a farm policy: it is told the workers' speeds
/// in advance and sends each worker its share of the items (proportional
/// to its speed) by smooth weighted round-robin, never reading a queue.
/// Eq. 2's model assumes each worker keeps its solo speed; on this machine
/// both workers computing at once may run slower than either alone, so
/// this split's S is what balancing can reach here, measured beside the
/// policies, and the policies' shortfall from the model splits into theirs
/// and the machine's.
#[derive(Debug)]
pub struct KnownSpeedSplit {
    /// Relative speed of each worker (workers past the list count as 1).
    speeds: Vec<f64>,
    /// `speeds` resolved for the stream's workers, and their sum.
    weights: Vec<f64>,
    total: f64,
    credit: Vec<f64>,
}

impl KnownSpeedSplit {
    /// A split for workers of relative `speeds` (workers past the list
    /// count as 1).
    pub fn new(speeds: Vec<f64>) -> Self {
        KnownSpeedSplit {
            speeds,
            weights: Vec::new(),
            total: 0.0,
            credit: Vec::new(),
        }
    }
}

impl Dispatch for KnownSpeedSplit {
    /// A label only: the farm registry does not know this baseline.
    fn spec(&self) -> Spec {
        Spec::named(KNOWN_SPLIT)
    }

    fn start(&mut self, config: &FarmConfig) -> Result<(), FarmError> {
        let config = FarmConfig::new(config.workers, config.capacity)?;
        self.weights = (0..config.workers)
            .map(|w| self.speeds.get(w).copied().unwrap_or(1.0))
            .collect();
        self.total = self.weights.iter().sum();
        self.credit = vec![0.0; config.workers];
        Ok(())
    }

    fn next(&mut self, view: &dyn QueueView) -> Decision {
        // Each item adds every worker's speed to its credit; the richest
        // worker gets the item and pays the total, so worker `w` receives
        // a `speed(w) / Σ speeds` share, evenly spread over the stream.
        let after = |w: usize| self.credit[w] + self.weights[w];
        let mut best = 0;
        for w in 1..self.credit.len() {
            if after(w) > after(best) {
                best = w;
            }
        }
        if !view.has_room(best) {
            return Decision::WaitForRoom;
        }
        for (credit, weight) in self.credit.iter_mut().zip(&self.weights) {
            *credit += weight;
        }
        self.credit[best] -= self.total;
        Decision::Send(best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::farm::ScriptedQueues;

    fn shares(speeds: Vec<f64>, items: usize) -> Vec<usize> {
        let mut split = KnownSpeedSplit::new(speeds);
        let view = ScriptedQueues::new(3);
        split.start(&FarmConfig::new(3, None).unwrap()).unwrap();
        let mut got = vec![0; 3];
        for _ in 0..items {
            let w = split.next(&view).worker().unwrap();
            got[w] += 1;
        }
        got
    }

    #[test]
    fn known_split_gives_each_worker_its_speeds_share_evenly_spread() {
        // Speeds 6.5 : 1 : (unlisted) 1, 85 items = 65 + 10 + 10.
        assert_eq!(shares(vec![6.5, 1.0], 85), vec![65, 10, 10]);
        // Every prefix stays within one item of its share: no worker waits
        // for the end of the stream to get its items.
        let mut split = KnownSpeedSplit::new(vec![6.5, 1.0]);
        let view = ScriptedQueues::new(3);
        split.start(&FarmConfig::new(3, None).unwrap()).unwrap();
        let mut got = [0.0; 3];
        for n in 1..=850 {
            got[split.next(&view).worker().unwrap()] += 1.0;
            for (w, share) in [6.5 / 8.5, 1.0 / 8.5, 1.0 / 8.5].iter().enumerate() {
                assert!(
                    (got[w] - share * n as f64).abs() <= 1.0,
                    "item {n}: {got:?}"
                );
            }
        }
    }

    #[test]
    fn known_split_waits_when_its_worker_is_full() {
        let mut split = KnownSpeedSplit::new(vec![1.0, 1.0]);
        split.start(&FarmConfig::new(2, Some(1)).unwrap()).unwrap();
        let mut view = ScriptedQueues::new(2);
        view.capacity = Some(1);
        view.levels = vec![1, 1];
        assert_eq!(split.next(&view), Decision::WaitForRoom);
        view.levels = vec![0, 0];
        // The wait cost nothing: the first item still goes to worker 0.
        assert_eq!(split.next(&view), Decision::Send(0));
        assert_eq!(split.next(&view), Decision::Send(1));
    }
}
