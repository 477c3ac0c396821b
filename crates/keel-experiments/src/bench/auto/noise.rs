//! The noise of a paired difference: Student's 95 % interval over the
//! repeats, and the verdict of `auto,keel` against another method.

use crate::evaluation::stats;

use super::VersusKeel;

/// Half-width of the 95 % interval of the mean of `samples` (`None` for
/// fewer than two). With three repeats t is 4.3: an interval from so few
/// runs is wide, and says so, rather than calling a difference real.
pub(super) fn interval_95(samples: &[f64]) -> Option<f64> {
    let n = samples.len();
    if n < 2 {
        return None;
    }
    let t = stats::student_t975_normal_tail(n - 1)?;
    Some(t * stats::mean_se(samples).1)
}

/// The verdict on `difference` (points, negative when `auto,keel` is
/// faster) against the interval of the paired per-repeat differences.
pub(super) fn versus_keel(difference: f64, paired: &[f64]) -> VersusKeel {
    let noise = interval_95(paired);
    let verdict = match noise {
        None => "no noise estimate",
        Some(half) if difference.abs() <= half => "within noise",
        Some(_) if difference < 0.0 => "ahead",
        Some(_) => "behind",
    };
    VersusKeel {
        difference_points: difference,
        noise_points: noise,
        verdict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_noise_interval_is_students_by_hand() {
        // Mean 2, sample sd 1, n = 3: t(0.975, 2) · 1/√3.
        let half = interval_95(&[1.0, 2.0, 3.0]).unwrap();
        assert!((half - 4.303 / 3f64.sqrt()).abs() < 1e-9, "{half}");
        // n = 2: t(0.975, 1) · sd/√2 with sd = √2 → 12.706.
        assert!((interval_95(&[0.0, 2.0]).unwrap() - 12.706).abs() < 1e-9);
        // Past the table: the normal quantile.
        let many: Vec<f64> = (0..40).map(|k| (k % 2) as f64).collect();
        let sd = (10.0f64 / 39.0).sqrt();
        assert!((interval_95(&many).unwrap() - 1.96 * sd / 40f64.sqrt()).abs() < 1e-9);
        assert_eq!(interval_95(&[5.0]), None);
        assert_eq!(interval_95(&[]), None);
    }

    #[test]
    fn a_difference_counts_only_outside_the_paired_noise() {
        // Consistent repeats: keel 2 points faster in each, interval 0.
        let v = versus_keel(-2.0, &[-2.0, -2.0, -2.0]);
        assert_eq!((v.verdict, v.noise_points), ("ahead", Some(0.0)));
        assert_eq!(versus_keel(1.5, &[1.0, 1.5, 2.0]).verdict, "behind");
        // The same difference among scattered repeats is noise.
        let v = versus_keel(-2.0, &[-12.0, 3.0, 3.0]);
        assert_eq!(v.verdict, "within noise");
        assert!(v.noise_points.unwrap() > 2.0);
        assert_eq!(versus_keel(-2.0, &[-2.0]).verdict, "no noise estimate");
    }
}
