//! The statistics the studies and benchmarks use to judge runs: the mean
//! with its standard error, Student's t quantile and the interval it
//! gives, and Kendall's τ between two rankings (the medians are
//! `keel_policy::stats`', which selection policies use too).
//!
//! ```
//! use keel_experiments::evaluation::stats;
//! let (mean, se) = stats::mean_se(&[1.0, 2.0, 3.0]);
//! assert_eq!((mean, se), (2.0, (1.0f64 / 3.0).sqrt()));
//! assert_eq!(stats::kendall_tau(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), -1.0);
//! ```

/// The mean of `values` and its standard error: the sample standard
/// deviation (n − 1 in the denominator) over √n. The error is 0 for fewer
/// than two values; the mean is NaN for none.
///
/// ```
/// let (mean, se) = keel_experiments::evaluation::stats::mean_se(&[2.0, 4.0]);
/// assert_eq!((mean, se), (3.0, 1.0));
/// assert_eq!(keel_experiments::evaluation::stats::mean_se(&[5.0]), (5.0, 0.0));
/// ```
pub fn mean_se(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if values.len() < 2 {
        return (mean, 0.0);
    }
    let var = values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

/// Two-sided 95 % quantiles of Student's t, t(0.975, df), for df = 1 … 30
/// (the standard table, three decimals).
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// Student's t quantile t(0.975, df): the factor of a two-sided 95 %
/// interval of a mean from `df + 1` samples. The table's value for df ≤ 30;
/// beyond, the Cornish–Fisher expansion around the normal quantile
/// z = 1.96 to the 1/df² term, z + (z³ + z)/(4 df) + (5z⁵ + 16z³ + 3z)/(96 df²),
/// which stays within 0.001 of the exact quantile there. `None` for df = 0
/// (one sample has no interval).
///
/// ```
/// use keel_experiments::evaluation::stats::student_t975;
/// assert_eq!(student_t975(1), Some(12.706));
/// assert_eq!(student_t975(4), Some(2.776));
/// assert_eq!(student_t975(0), None);
/// assert!((student_t975(120).unwrap() - 1.9799).abs() < 0.001);
/// ```
pub fn student_t975(df: usize) -> Option<f64> {
    match df {
        0 => None,
        1..=30 => Some(T975[df - 1]),
        _ => {
            let z: f64 = 1.96;
            let d = df as f64;
            let first = (z.powi(3) + z) / 4.0;
            let second = (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / 96.0;
            Some(z + first / d + second / (d * d))
        }
    }
}

/// t(0.975, df) from the same table for df ≤ 30, and the normal quantile
/// 1.96 beyond: the variant `keel bench auto`'s intervals use, so that its
/// published tables stay comparable run to run (narrower than
/// [`student_t975`] past the table, by 4 % at df = 31 and under 1 % past
/// df = 120). `None` for df = 0.
///
/// ```
/// use keel_experiments::evaluation::stats::student_t975_normal_tail;
/// assert_eq!(student_t975_normal_tail(2), Some(4.303));
/// assert_eq!(student_t975_normal_tail(31), Some(1.96));
/// ```
pub fn student_t975_normal_tail(df: usize) -> Option<f64> {
    match df {
        0 => None,
        1..=30 => Some(T975[df - 1]),
        _ => Some(1.96),
    }
}

/// The mean of `values` and the half-width of its two-sided 95 % Student
/// interval, t(0.975, n − 1) · standard error; `None` for fewer than two
/// values.
///
/// ```
/// let (mean, half) = keel_experiments::evaluation::stats::student_interval(&[2.0, 4.0]).unwrap();
/// assert_eq!((mean, half), (3.0, 12.706));
/// assert!(keel_experiments::evaluation::stats::student_interval(&[1.0]).is_none());
/// ```
pub fn student_interval(values: &[f64]) -> Option<(f64, f64)> {
    let t = student_t975(values.len().checked_sub(1)?)?;
    let (mean, se) = mean_se(values);
    Some((mean, t * se))
}

/// Kendall's τ-a between two scorings of the same items: (concordant −
/// discordant) / pairs, over the first `min(a.len(), b.len())` items; a tie
/// (or a NaN) in either scoring counts as neither. 1 for fewer than two
/// items (nothing is misranked).
///
/// ```
/// use keel_experiments::evaluation::stats::kendall_tau;
/// assert_eq!(kendall_tau(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]), 1.0);
/// assert_eq!(kendall_tau(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), -1.0);
/// ```
pub fn kendall_tau(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    if n < 2 {
        return 1.0;
    }
    let mut score = 0i64;
    for i in 0..n {
        for j in i + 1..n {
            let x = (a[i] - a[j]).partial_cmp(&0.0).map_or(0, |o| o as i64);
            let y = (b[i] - b[j]).partial_cmp(&0.0).map_or(0, |o| o as i64);
            score += x * y;
        }
    }
    score as f64 / (n * (n - 1) / 2) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_standard_error() {
        let (m, se) = mean_se(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(m, 2.5);
        // Sample variance 5/3, over n = 4.
        assert!((se - (5.0f64 / 3.0 / 4.0).sqrt()).abs() < 1e-15);
        assert!(mean_se(&[]).0.is_nan());
        assert_eq!(mean_se(&[]).1, 0.0);
    }

    #[test]
    fn student_quantiles_match_the_table() {
        let table = [
            (1, 12.706),
            (2, 4.303),
            (5, 2.571),
            (10, 2.228),
            (30, 2.042),
        ];
        for (df, t) in table {
            assert_eq!(student_t975(df), Some(t), "df = {df}");
        }
        // Exact: t(0.975, 31) = 2.0395, 40 → 2.0211, 60 → 2.0003, 1000 → 1.9623.
        for (df, t) in [(31, 2.0395), (40, 2.0211), (60, 2.0003), (1000, 1.9623)] {
            let got = student_t975(df).unwrap();
            assert!((got - t).abs() < 0.001, "df = {df}: {got}");
        }
        // Decreasing in df, towards 1.96.
        let ts: Vec<f64> = (1..200).map(|d| student_t975(d).unwrap()).collect();
        assert!(ts.windows(2).all(|w| w[0] > w[1]));
        assert!(ts.iter().all(|&t| t > 1.96));
    }

    #[test]
    fn kendall_tau_of_known_rankings() {
        assert_eq!(kendall_tau(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]), 1.0);
        assert_eq!(kendall_tau(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), -1.0);
        // One swap of three pairs: (2 − 1)/3.
        assert!((kendall_tau(&[1.0, 2.0, 3.0], &[1.0, 3.0, 2.0]) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(kendall_tau(&[1.0], &[2.0]), 1.0);
        // A tie counts as neither concordant nor discordant.
        assert_eq!(kendall_tau(&[1.0, 1.0], &[1.0, 2.0]), 0.0);
    }
}
