//! Per-iteration costs of one loop instance, in seconds at speed 1, kept as
//! prefix sums so that the cost of any chunk is one subtraction: the
//! simulator pays O(1) per chunk whatever its size, which is what keeps a run
//! at O(events · log P) rather than O(iterations).
//!
//! Any chunk's cost is one subtraction of prefix sums:
//!
//! ```
//! use keel_sim::loops::IterationCosts;
//! let costs = IterationCosts::new(&[1.0, 2.0, 3.0, 4.0]).unwrap();
//! assert_eq!(costs.range(1..3), 5.0);
//! assert_eq!((costs.cost(3), costs.total(), costs.len()), (4.0, 10.0, 4));
//! ```

use std::ops::Range;

use crate::error::SimError;

/// The most iterations [`IterationCosts::uniform`] builds: 2²⁷ ≈ 134
/// million (the papers' loops have 10⁶), 2 GiB of costs and prefix sums
/// at the peak; past this the allocation alone would abort the process.
pub const MAX_UNIFORM_ITERATIONS: usize = 1 << 27;

/// The costs of the iterations `[0, N)` of one loop instance.
#[derive(Debug, Clone, PartialEq)]
pub struct IterationCosts {
    /// `prefix[i]` = Σ costs of iterations `0..i`; `N + 1` entries.
    prefix: Vec<f64>,
}

impl IterationCosts {
    /// From one cost per iteration, in seconds at speed 1. A NaN, infinite
    /// or negative cost is a typed error naming the iteration.
    pub fn new(costs: &[f64]) -> Result<Self, SimError> {
        let mut prefix = Vec::with_capacity(costs.len() + 1);
        prefix.push(0.0);
        let mut total = 0.0;
        for (i, &c) in costs.iter().enumerate() {
            if !(c.is_finite() && c >= 0.0) {
                return Err(SimError::invalid(
                    "iteration cost",
                    format!("{c} s at iteration {i}"),
                    "must be finite and ≥ 0 seconds",
                ));
            }
            total += c;
            prefix.push(total);
        }
        Ok(IterationCosts { prefix })
    }

    /// `n` iterations of `cost` seconds each, at most
    /// [`MAX_UNIFORM_ITERATIONS`].
    pub fn uniform(n: usize, cost: f64) -> Result<Self, SimError> {
        if n > MAX_UNIFORM_ITERATIONS {
            return Err(SimError::over_limit(
                "loop length",
                format!("{n} iterations"),
                format!("at most MAX_UNIFORM_ITERATIONS = {MAX_UNIFORM_ITERATIONS} iterations"),
            ));
        }
        Self::new(&vec![cost; n])
    }

    /// From work units (a workload's `work()`) at `seconds_per_unit`.
    pub fn from_units(units: &[u64], seconds_per_unit: f64) -> Result<Self, SimError> {
        if !(seconds_per_unit.is_finite() && seconds_per_unit > 0.0) {
            return Err(SimError::invalid(
                "seconds per work unit",
                seconds_per_unit,
                "must be finite and > 0",
            ));
        }
        let costs: Vec<f64> = units.iter().map(|&u| u as f64 * seconds_per_unit).collect();
        Self::new(&costs)
    }

    /// Number of iterations `N`.
    pub fn len(&self) -> u64 {
        (self.prefix.len() - 1) as u64
    }

    /// Whether the loop has no iterations.
    pub fn is_empty(&self) -> bool {
        self.prefix.len() == 1
    }

    /// The cost of iterations `range` (clamped to `[0, N)`), in seconds.
    #[inline]
    pub fn range(&self, range: Range<u64>) -> f64 {
        let n = self.len();
        let (a, b) = (range.start.min(n) as usize, range.end.min(n) as usize);
        if b <= a {
            return 0.0;
        }
        // Rounding can make a difference of prefix sums a hair below 0.
        (self.prefix[b] - self.prefix[a]).max(0.0)
    }

    /// The cost of iteration `i`.
    pub fn cost(&self, i: u64) -> f64 {
        self.range(i..i + 1)
    }

    /// The total cost: the sequential time at speed 1 without overhead.
    pub fn total(&self) -> f64 {
        self.prefix[self.prefix.len() - 1]
    }

    /// Every iteration's cost, recovered from the prefix sums.
    pub fn to_vec(&self) -> Vec<f64> {
        (0..self.len()).map(|i| self.cost(i)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_costs_are_range_sums() {
        let c = IterationCosts::new(&[1.0, 2.0, 4.0, 8.0]).unwrap();
        assert_eq!(c.len(), 4);
        assert_eq!(c.range(1..3), 6.0);
        assert_eq!(c.range(3..10), 8.0);
        assert_eq!(c.range(2..2), 0.0);
        assert_eq!(c.total(), 15.0);
        assert_eq!(c.to_vec(), vec![1.0, 2.0, 4.0, 8.0]);
        assert!(IterationCosts::new(&[]).unwrap().is_empty());
    }

    #[test]
    fn bad_costs_name_the_iteration() {
        for bad in [f64::NAN, -1.0, f64::INFINITY] {
            let err = IterationCosts::new(&[1.0, bad]).unwrap_err().to_string();
            assert!(err.contains("iteration 1"), "{err}");
        }
        assert!(IterationCosts::from_units(&[1, 2], 0.0).is_err());
    }
}
