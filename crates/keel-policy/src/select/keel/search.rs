//! What `auto,keel`'s search decides before each sample: the cost model's
//! verdict, the warm-up, and the exploration budget's pause, with the best
//! schedule so far it then runs.

use super::{KeelSel, Mode, Phase, SettledBy, PORTFOLIO_LEN};
use crate::select::median_in_place;

impl KeelSel {
    /// What a search decides before it samples: schedules the cost model
    /// took out leave it (which may end a round, or the search), and a
    /// spent budget holds the best schedule so far instead of sampling.
    pub(super) fn before_sampling(&mut self) -> Option<(usize, Phase)> {
        if std::mem::take(&mut self.warming) {
            self.holding = true;
            self.held_warmup = true;
            self.current = self.incumbent.unwrap_or(0);
            return Some((self.current, Phase::First));
        }
        let affordable = self.active & self.allowed;
        if affordable != self.active {
            self.active = affordable;
            self.remaining &= affordable;
            if self.active.count_ones() == 1 && self.counts[0] > 0 {
                self.exploit(0, SettledBy::Overhead);
            } else if self.remaining == 0 {
                self.end_round();
            }
            if self.mode == Mode::Exploit {
                self.current = self.winner;
                return Some((self.winner, Phase::Exploit));
            }
        }
        let sampled = self.counts.iter().any(|&c| c > 0);
        if sampled && self.budget.exhausted() {
            if let Some(best) = self.provisional() {
                self.holding = true;
                self.current = best;
                return Some((best, Phase::Provisional));
            }
        }
        None
    }

    /// The median of schedule `j`'s samples in this search.
    pub(super) fn median_sample(&self, j: usize) -> Option<f64> {
        let n = usize::from(self.counts[j]);
        if n == 0 {
            return None;
        }
        let mut s = self.samples[j];
        Some(median_in_place(&mut s[..n]))
    }

    /// The best schedule so far: among the sampled schedules whose median
    /// sample ties the smallest (within [`TIE_MARGIN`](super::TIE_MARGIN)), the cheapest, as
    /// a search ends (one lucky sample of a costlier schedule must not
    /// displace STATIC while the budget holds the search).
    pub(super) fn provisional(&self) -> Option<usize> {
        let sampled = (0..PORTFOLIO_LEN)
            .filter(|&j| self.counts[j] > 0)
            .fold(0u16, |set, j| set | (1 << j));
        (sampled != 0).then(|| self.cheapest_tie(sampled, |j| self.estimate(j)))
    }

    /// Schedule `j`'s time per iteration in this search: its median sample,
    /// averaged with what it took while held, each instance one vote.
    pub(super) fn estimate(&self, j: usize) -> f64 {
        let Some(median) = self.median_sample(j) else {
            return f64::INFINITY;
        };
        let n = f64::from(self.counts[j]);
        let (sum, count) = self.held[j];
        (median * n + sum) / (n + f64::from(count))
    }
}
