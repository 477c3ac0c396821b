//! The medians every Keel selection policy and report uses: of a set,
//! in place or not, and percentiles. Pure functions on slices, no I/O:
//! the policies (selection's medians of repeats) and the contexts' reports
//! summarise numbers the same way. The statistics only studies use (means
//! with their errors, Student's t, Kendall's τ) are
//! `keel_experiments::evaluation::stats`.
//!
//! ```
//! use keel_policy::stats;
//! let mut times = [3.0, 1.0, 2.0, 10.0];
//! assert_eq!(stats::median(&mut times), 2.5);
//! assert_eq!(stats::median_of(&[5.0, 1.0, 3.0]), Some(3.0));
//! ```

/// The median of `values`, sorting them in place: the middle value for an
/// odd count, the mean of the middle two for an even count, NaN for none.
/// NaNs sort after every number ([`f64::total_cmp`]).
///
/// ```
/// let mut v = [4.0, 1.0, 3.0];
/// assert_eq!(keel_policy::stats::median(&mut v), 3.0);
/// assert_eq!(v, [1.0, 3.0, 4.0]);
/// assert!(keel_policy::stats::median(&mut []).is_nan());
/// ```
pub fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_unstable_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// [`median`]'s value — the same bits — found by selection instead of a
/// full sort: `values` are left partly reordered (the middle one in its
/// sorted place, smaller ones before it, larger after). Linear in the
/// count, for a median taken again and again over a window.
///
/// ```
/// use keel_policy::stats;
/// let mut a = [4.0, 1.0, 3.0, 2.0];
/// let mut b = a;
/// assert_eq!(stats::median_unordered(&mut a), stats::median(&mut b));
/// assert!(stats::median_unordered(&mut []).is_nan());
/// ```
pub fn median_unordered(values: &mut [f64]) -> f64 {
    let n = values.len();
    if n == 0 {
        return f64::NAN;
    }
    let (below, &mut middle, _) = values.select_nth_unstable_by(n / 2, f64::total_cmp);
    if n % 2 == 1 {
        return middle;
    }
    // The largest of the lower half is the sorted order's value n/2 − 1.
    let lower = below
        .iter()
        .copied()
        .max_by(f64::total_cmp)
        .expect("an even count above zero leaves a lower half");
    (lower + middle) / 2.0
}

/// The median of `values` without touching them, `None` for none: a copy
/// sorted by [`median`].
///
/// ```
/// assert_eq!(keel_policy::stats::median_of(&[2.0, 8.0]), Some(5.0));
/// assert_eq!(keel_policy::stats::median_of(&[]), None);
/// ```
pub fn median_of(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    Some(median(&mut values.to_vec()))
}

/// The `percent`-th percentile of `values` by the lower nearest rank: the
/// element at index `⌊(n − 1)·percent/100⌋` of a sorted copy (integer
/// arithmetic, so the rank is exact); `None` for no values. The 50th is
/// the lower median.
///
/// ```
/// use keel_policy::stats::percentile;
/// let v = [5.0, 1.0, 4.0, 2.0, 3.0];
/// assert_eq!(percentile(&v, 0), Some(1.0));
/// assert_eq!(percentile(&v, 50), Some(3.0));
/// assert_eq!(percentile(&v, 90), Some(4.0));
/// assert_eq!(percentile(&v, 100), Some(5.0));
/// assert_eq!(percentile(&[], 50), None);
/// ```
pub fn percentile(values: &[f64], percent: usize) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    let index = (sorted.len() - 1) * percent.min(100) / 100;
    Some(sorted[index])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_of_odd_even_and_empty_sets() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&mut []).is_nan());
        assert_eq!(median_of(&[7.0]), Some(7.0));
        // NaN sorts last: it is the median only when it is the middle.
        assert_eq!(median(&mut [f64::NAN, 1.0, 2.0]), 2.0);
    }

    proptest::proptest! {
        /// Selection gives the sort's median bit for bit, NaNs, signed
        /// zeros and ties included.
        #[test]
        fn the_selected_median_is_the_sorted_one(
            values in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::num::f64::ANY,
                    proptest::sample::select(vec![0.0, -0.0, 1.0, f64::NAN, f64::INFINITY]),
                ],
                0..80,
            )
        ) {
            let mut sorted = values.clone();
            let mut selected = values;
            let want = median(&mut sorted);
            let got = median_unordered(&mut selected);
            proptest::prop_assert_eq!(got.to_bits(), want.to_bits());
        }
    }
}
