//! A node manager's estimate of its clock's offset from the machine
//! manager's, so that a switch time the machine manager names is enacted at
//! the same instant on every node. NTP's on-wire protocol (RFC 5905, §8):
//! the node sends a ping at `t1` by its clock, the manager receives it at
//! `t2` and answers at `t3` by its clock, the node receives the answer at
//! `t4`. The sample's offset (manager minus node) is
//! `((t2 − t1) + (t3 − t4)) / 2`, exact when the two legs take equally
//! long, and wrong by at most half the round trip's network delay
//! `(t4 − t1) − (t3 − t2)` otherwise. Like NTP's clock filter (§10), the
//! estimator keeps the last [`CLOCK_SAMPLES`] samples and believes the one
//! with the least delay: queueing only ever adds delay, so the fastest
//! round trip is the most symmetric one.
//!
//! Pure: the context reads the clocks and sends the pings.
//!
//! ```
//! use keel_policy::cosched::clock::{ClockEstimator, ClockSample};
//! // The manager's clock is 5 s ahead; each leg takes 1 ms, but the
//! // second ping waited 3 ms in a queue on its way out.
//! let mut clock = ClockEstimator::new();
//! clock.add(ClockSample { sent: 100.0, received: 105.001, replied: 105.001, returned: 100.002 });
//! clock.add(ClockSample { sent: 200.0, received: 205.004, replied: 205.004, returned: 200.005 });
//! let estimate = clock.estimate().unwrap();
//! assert!((estimate.offset - 5.0).abs() < 1e-9);
//! assert!((estimate.error_bound - 0.001).abs() < 1e-9);
//! // The manager's switch at 305 s is 300 s by this node's clock.
//! assert!((estimate.to_local(305.0) - 300.0).abs() < 1e-9);
//! ```

use std::collections::VecDeque;

/// Samples the estimator keeps: NTP's clock filter keeps 8.
pub const CLOCK_SAMPLES: usize = 8;

/// One ping and its answer, in seconds: `sent` and `returned` by the
/// node's clock, `received` and `replied` by the manager's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockSample {
    /// When the node sent the ping (`t1`).
    pub sent: f64,
    /// When the manager received it (`t2`).
    pub received: f64,
    /// When the manager answered (`t3`).
    pub replied: f64,
    /// When the node received the answer (`t4`).
    pub returned: f64,
}

impl ClockSample {
    /// The manager's clock minus the node's, by this sample.
    pub fn offset(&self) -> f64 {
        ((self.received - self.sent) + (self.replied - self.returned)) / 2.0
    }

    /// The round trip's time on the network (the manager's own time
    /// between receiving and answering taken out).
    pub fn delay(&self) -> f64 {
        (self.returned - self.sent) - (self.replied - self.received)
    }

    /// Whether the sample can be believed: every time finite, the node's
    /// answer after its ping, the manager's answer not before the ping
    /// reached it, and no negative delay (which clocks running at
    /// different rates can produce on a very short round trip).
    pub fn is_sane(&self) -> bool {
        [self.sent, self.received, self.replied, self.returned]
            .iter()
            .all(|t| t.is_finite())
            && self.returned >= self.sent
            && self.replied >= self.received
            && self.delay() >= 0.0
    }
}

/// What the estimator believes now.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockEstimate {
    /// The manager's clock minus the node's, seconds.
    pub offset: f64,
    /// How far `offset` may be off: half the believed sample's delay.
    pub error_bound: f64,
}

impl ClockEstimate {
    /// A manager's time as this node's clock reads it.
    pub fn to_local(&self, manager_time: f64) -> f64 {
        manager_time - self.offset
    }

    /// This node's time as the manager's clock reads it.
    pub fn to_manager(&self, local_time: f64) -> f64 {
        local_time + self.offset
    }
}

/// The last [`CLOCK_SAMPLES`] sane samples and the estimate they give.
#[derive(Clone, Debug, Default)]
pub struct ClockEstimator {
    samples: VecDeque<ClockSample>,
}

impl ClockEstimator {
    /// No samples yet.
    pub fn new() -> Self {
        ClockEstimator::default()
    }

    /// Adds a sample; returns whether it was sane (an insane one is
    /// dropped, the estimate unchanged).
    pub fn add(&mut self, sample: ClockSample) -> bool {
        if !sample.is_sane() {
            return false;
        }
        if self.samples.len() == CLOCK_SAMPLES {
            self.samples.pop_front();
        }
        self.samples.push_back(sample);
        true
    }

    /// The offset of the least-delayed kept sample, or `None` before the
    /// first sane one.
    pub fn estimate(&self) -> Option<ClockEstimate> {
        self.samples
            .iter()
            .min_by(|a, b| a.delay().total_cmp(&b.delay()))
            .map(|s| ClockEstimate {
                offset: s.offset(),
                error_bound: s.delay() / 2.0,
            })
    }

    /// Forgets every sample (after the manager restarted: its clock may
    /// have another origin).
    pub fn clear(&mut self) {
        self.samples.clear();
    }
}

/// The skew of switches between nodes: for each slot, the latest node's
/// enactment instant minus the earliest's (all in the manager's clock),
/// summarised over the slots.
///
/// ```
/// use keel_policy::cosched::clock::skew_summary;
/// // Two slots on three nodes.
/// let s = skew_summary(&[vec![1.000, 1.0004, 1.0002], vec![2.0, 2.0, 2.003]]).unwrap();
/// assert_eq!(s.slots, 2);
/// assert!((s.max - 0.003).abs() < 1e-12);
/// ```
pub fn skew_summary(enactments: &[Vec<f64>]) -> Option<SkewSummary> {
    let mut spans: Vec<f64> = enactments
        .iter()
        .filter(|slot| slot.len() >= 2 && slot.iter().all(|t| t.is_finite()))
        .map(|slot| {
            let lo = slot.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = slot.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            hi - lo
        })
        .collect();
    if spans.is_empty() {
        return None;
    }
    spans.sort_by(f64::total_cmp);
    let at = |q: f64| spans[((spans.len() - 1) as f64 * q).round() as usize];
    Some(SkewSummary {
        slots: spans.len(),
        median: at(0.5),
        p99: at(0.99),
        max: spans[spans.len() - 1],
    })
}

/// See [`skew_summary`]; seconds.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct SkewSummary {
    /// Slots counted (those enacted on at least two nodes).
    pub slots: usize,
    /// The median slot's skew.
    pub median: f64,
    /// The 99th percentile's.
    pub p99: f64,
    /// The largest.
    pub max: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sample of a node whose clock is `offset` behind the manager's,
    /// with legs of `out` and `back` seconds and `hold` at the manager.
    fn sample(at: f64, offset: f64, out: f64, back: f64, hold: f64) -> ClockSample {
        ClockSample {
            sent: at,
            received: at + offset + out,
            replied: at + offset + out + hold,
            returned: at + out + hold + back,
        }
    }

    #[test]
    fn symmetric_legs_give_the_exact_offset_and_asymmetry_stays_within_the_bound() {
        let s = sample(10.0, -3.25, 0.002, 0.002, 0.0005);
        assert!((s.offset() + 3.25).abs() < 1e-12);
        assert!((s.delay() - 0.004).abs() < 1e-12);
        for (out, back) in [(0.001, 0.009), (0.009, 0.001), (0.0, 0.01)] {
            let s = sample(10.0, 2.0, out, back, 0.0);
            assert!((s.offset() - 2.0).abs() <= s.delay() / 2.0 + 1e-12, "{s:?}");
        }
    }

    #[test]
    fn the_least_delayed_of_the_last_eight_is_believed() {
        let mut c = ClockEstimator::new();
        assert_eq!(c.estimate(), None);
        // A fast round trip first, then nine slow, asymmetric ones: the
        // fast one is believed until it falls out of the window.
        assert!(c.add(sample(0.0, 1.0, 0.0001, 0.0001, 0.0)));
        for k in 1..=9 {
            c.add(sample(k as f64, 1.0, 0.010, 0.001, 0.0));
            let e = c.estimate().unwrap();
            if k < CLOCK_SAMPLES {
                assert!((e.offset - 1.0).abs() < 1e-9, "{k}: {e:?}");
            } else {
                // Only slow samples left: off by their asymmetry, within
                // their bound.
                assert!(
                    (e.offset - 1.0).abs() <= e.error_bound + 1e-12,
                    "{k}: {e:?}"
                );
                assert!(e.error_bound > 0.005);
            }
        }
    }

    #[test]
    fn insane_samples_are_dropped() {
        let mut c = ClockEstimator::new();
        for bad in [
            ClockSample {
                sent: f64::NAN,
                received: 1.0,
                replied: 1.0,
                returned: 2.0,
            },
            ClockSample {
                sent: 2.0,
                received: 1.0,
                replied: 1.0,
                returned: 1.0,
            },
            ClockSample {
                sent: 0.0,
                received: 5.0,
                replied: 4.0,
                returned: 1.0,
            },
            // The manager held it longer than the round trip took.
            ClockSample {
                sent: 0.0,
                received: 5.0,
                replied: 7.0,
                returned: 1.0,
            },
        ] {
            assert!(!c.add(bad), "{bad:?}");
        }
        assert_eq!(c.estimate(), None);
        c.add(sample(0.0, 0.5, 0.001, 0.001, 0.0));
        c.clear();
        assert_eq!(c.estimate(), None);
    }

    #[test]
    fn skew_over_slots() {
        let slots: Vec<Vec<f64>> = (0..1000)
            .map(|k| {
                let t = k as f64 * 0.025;
                // One slot in a hundred has a late node.
                let late = if k % 100 == 7 { 0.004 } else { 0.0002 };
                vec![t, t + late, t + 0.0001]
            })
            .collect();
        let s = skew_summary(&slots).unwrap();
        assert_eq!(s.slots, 1000);
        assert!((s.median - 0.0002).abs() < 1e-9);
        assert!((s.max - 0.004).abs() < 1e-9);
        // Ten late slots in a thousand lie above the 99th percentile.
        assert!((s.p99 - 0.0002).abs() < 1e-9, "{s:?}");
        assert_eq!(skew_summary(&[vec![1.0]]), None);
        assert_eq!(skew_summary(&[vec![f64::NAN, 1.0]]), None);
    }
}
