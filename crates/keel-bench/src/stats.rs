//! Medians and ranges: how every number of the report is summarised
//! (`docs/conventions.md#measuring`: medians over repeated runs, with their
//! range).

use serde::Serialize;

/// Median, minimum and maximum of a set of samples.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// The median (the mean of the middle two for an even count).
    pub median: f64,
    /// The smallest sample.
    pub min: f64,
    /// The largest sample.
    pub max: f64,
    /// How many samples.
    pub n: usize,
}

impl Summary {
    /// Summarises `samples`; `None` when there are none (NaNs are dropped).
    pub fn of(samples: &[f64]) -> Option<Summary> {
        let mut v: Vec<f64> = samples.iter().copied().filter(|x| !x.is_nan()).collect();
        if v.is_empty() {
            return None;
        }
        // Sorts `v`, so its ends are the range.
        let median = keel::policy::stats::median(&mut v);
        let n = v.len();
        Some(Summary {
            median,
            min: v[0],
            max: v[n - 1],
            n,
        })
    }

    /// Every field multiplied by `factor` (a change of unit).
    pub fn scaled(self, factor: f64) -> Summary {
        Summary {
            median: self.median * factor,
            min: self.min * factor,
            max: self.max * factor,
            n: self.n,
        }
    }
}

/// `a / b` of two medians, when `b` is positive (an overhead that noise
/// made zero or negative has no meaningful ratio).
pub fn ratio(a: Option<Summary>, b: Option<Summary>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b.median > 0.0 => Some(a.median / b.median),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_ranges() {
        let s = Summary::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (2.0, 1.0, 3.0, 3));
        let s = Summary::of(&[4.0, 1.0, 2.0, 3.0, f64::NAN]).unwrap();
        assert_eq!((s.median, s.n), (2.5, 4));
        assert!(Summary::of(&[]).is_none());
        assert_eq!(s.scaled(2.0).median, 5.0);
        assert_eq!(ratio(Some(s), Some(s)), Some(1.0));
        let zero = Summary::of(&[0.0]);
        assert_eq!(ratio(Some(s), zero), None);
    }
}
