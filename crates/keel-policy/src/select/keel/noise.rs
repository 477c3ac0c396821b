//! `auto,keel`'s robust noise scales: medians of absolute deviations,
//! raised by one standard error of their estimate.

use super::{MAD_RELATIVE_SD, MAD_TO_SIGMA, NOISE_FLOOR, PORTFOLIO_LEN, ROUNDS, WARMUP};

/// 1.4826 × the median of `abs_deviations` (reordered), raised by one
/// standard error of that estimate (`× (1 + 1.17/√m)` for `m` values), so a
/// short window cannot under-estimate the noise and make a detector
/// trigger-happy. Both of `auto,keel`'s noise scales are this.
pub(super) fn robust_sigma(abs_deviations: &mut [f64]) -> f64 {
    let inflation = 1.0 + MAD_RELATIVE_SD / (abs_deviations.len() as f64).sqrt();
    // Selection, not a sort: this runs on the noise window at every
    // exploited instance.
    MAD_TO_SIGMA * crate::stats::median_unordered(abs_deviations) * inflation
}

/// A robust noise scale of a short series that may drift: the MAD of its
/// successive differences (1.4826 × median |dᵢ − median d|) ÷ √2 (a
/// difference of two independent samples has √2 times their deviation),
/// raised by one standard error of the estimate, at least [`NOISE_FLOOR`].
/// A linear drift shifts every difference alike and so drops out, where
/// deviations from the series' median would count its whole range as noise.
pub(super) fn difference_noise(series: &[f64; WARMUP as usize]) -> f64 {
    let mut diffs = [0.0; WARMUP as usize - 1];
    for (d, pair) in diffs.iter_mut().zip(series.windows(2)) {
        *d = pair[1] - pair[0];
    }
    noise_of_differences(&mut diffs)
}

/// The noise scale behind `differences` of pairs of samples (overwritten):
/// 1.4826 × median |dᵢ − median d| ÷ √2, raised by one standard error of
/// the estimate, at least [`NOISE_FLOOR`]. Centring on the median takes out
/// a common drift; the median of the deviations, a few large differences
/// (a level shift, a change of order).
pub(super) fn noise_of_differences(differences: &mut [f64]) -> f64 {
    let mut scratch = [0.0; PORTFOLIO_LEN * ROUNDS];
    let copy = &mut scratch[..differences.len()];
    copy.copy_from_slice(differences);
    let centre = crate::stats::median_unordered(copy);
    for d in differences.iter_mut() {
        *d = (*d - centre).abs();
    }
    (robust_sigma(differences) / std::f64::consts::SQRT_2).max(NOISE_FLOOR)
}
