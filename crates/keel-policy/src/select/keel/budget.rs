//! `auto,keel`'s exploration budget: what trying schedules out has cost a
//! loop beyond the best schedule it knew at the time, against the loop's
//! accumulated time. While the excess exceeds [`EXPLORATION_BUDGET`] of
//! that time, the search pauses and the best schedule so far runs; the
//! loop's further instances refill the budget. A candidate faster than the
//! best so far costs nothing, but refunds nothing either: the best so far
//! may be an outlier (a process's first instance often stalls while a
//! core wakes), and a refund measured against it would fund a whole
//! search.

/// The share of a loop's accumulated time its explorations may spend
/// beyond the best schedule known at the time (2 %).
pub const EXPLORATION_BUDGET: f64 = 0.02;

/// One loop's (one class's) exploration account, in seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    share: f64,
    total: f64,
    spent: f64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget::with_share(EXPLORATION_BUDGET)
    }
}

impl Budget {
    /// An account allowing `share` of the loop's time (`f64::INFINITY`:
    /// unlimited, the search as if it cost nothing).
    pub fn with_share(share: f64) -> Self {
        Budget {
            share: if share.is_nan() {
                EXPLORATION_BUDGET
            } else {
                share.max(0.0)
            },
            total: 0.0,
            spent: 0.0,
        }
    }

    /// Counts an instance's time (measured, or estimated for an
    /// unmeasured one) into the loop's total.
    pub fn add_instance(&mut self, seconds: f64) {
        if seconds.is_finite() && seconds > 0.0 {
            self.total += seconds;
        }
    }

    /// Takes back time counted for instances that never ran (a lease's
    /// unused rest); the total never falls below zero.
    pub fn remove_instances(&mut self, seconds: f64) {
        if seconds.is_finite() && seconds > 0.0 {
            self.total = (self.total - seconds).max(0.0);
        }
    }

    /// Charges an exploration instance's excess over the best schedule
    /// known (nothing when it was faster).
    pub fn charge(&mut self, excess: f64) {
        if excess.is_finite() && excess > 0.0 {
            self.spent += excess;
        }
    }

    /// Whether the search must pause: its excess exceeds the budget.
    pub fn exhausted(&self) -> bool {
        self.spent > self.share * self.total
    }

    /// The loop's accumulated time.
    pub fn total(&self) -> f64 {
        self.total
    }

    /// The explorations' accumulated excess.
    pub fn spent(&self) -> f64 {
        self.spent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excess_past_two_percent_of_the_total_pauses_the_search() {
        let mut b = Budget::default();
        b.add_instance(1.0);
        assert!(!b.exhausted());
        b.charge(0.3);
        b.add_instance(1.3);
        assert!(b.exhausted(), "0.3 s of 2.3 s");
        for _ in 0..13 {
            b.add_instance(1.0);
        }
        assert!(!b.exhausted(), "0.3 s of 15.3 s");
        // A gain refunds nothing.
        b.charge(-0.5);
        assert_eq!(b.spent(), 0.3);
        b.add_instance(f64::NAN);
        b.charge(f64::INFINITY);
        assert!((b.total() - 15.3).abs() < 1e-9);
        let mut unlimited = Budget::with_share(f64::INFINITY);
        unlimited.add_instance(1.0);
        unlimited.charge(1e9);
        assert!(!unlimited.exhausted());
    }
}
