//! From the rounds' times to the report: medians, paired per-round ratios
//! with their 95 % interval, the held-out Oracle and the goals' verdicts.

use serde::Serialize;

use keel_policy::stats::median_of;

/// A ratio: the median of paired per-round ratios and, with enough rounds,
/// the order-statistic 95 % interval of that median.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Ratio {
    /// Median of the per-round ratios.
    pub median: f64,
    /// `[low, high]`, or `None` with fewer than 6 rounds (no pair of order
    /// statistics then covers the median with 95 % confidence).
    pub interval: Option<(f64, f64)>,
}

impl Ratio {
    /// The ratio of `a` over `b`, paired round by round.
    pub fn paired(a: &[f64], b: &[f64]) -> Option<Ratio> {
        let ratios: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
        Some(Ratio {
            median: median_of(&ratios)?,
            interval: median_interval95(&ratios),
        })
    }
}

/// The distribution-free 95 % interval of a median: `[x_(k), x_(n+1-k)]`
/// of the sorted values, `k` the largest rank with P(Binomial(n, ½) < k)
/// ≤ 2.5 %, so that it covers the true median with probability ≥ 95 %
/// whatever the distribution. `None` below 6 values (or with a NaN).
pub fn median_interval95(values: &[f64]) -> Option<(f64, f64)> {
    let n = values.len();
    if n < 6 || values.iter().any(|v| v.is_nan()) {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    // P(B ≤ j) for B ~ Binomial(n, 1/2), accumulated in f64 (n is a round
    // count, far below where the binomial coefficients lose precision).
    let mut coefficient = 1.0f64;
    let mut below = 0.0f64; // P(B ≤ k - 1)
    let total = 2f64.powi(n as i32);
    let mut k = 0;
    for j in 0..n {
        below += coefficient / total;
        if below > 0.025 {
            break;
        }
        k = j + 1;
        coefficient = coefficient * (n - j) as f64 / (j + 1) as f64;
    }
    (k >= 1).then(|| (sorted[k - 1], sorted[n - k]))
}

/// Oracle held out, round by round: for each round `r`, the fixed schedule
/// with the smallest median over the *other* rounds, timed in round `r`
/// (`keel bench auto`'s held-out Oracle with the whole run as the one loop
/// instance: `crate::evaluation::oracle::held_out_oracle`). Returns each
/// round's time and the schedule (index into `fixed`) chosen for it; `None`
/// with fewer than two rounds.
pub fn held_out_oracle(fixed: &[&[f64]]) -> Option<(Vec<f64>, Vec<usize>)> {
    let rounds = fixed.first()?.len();
    if rounds < 2 || fixed.iter().any(|t| t.len() != rounds) {
        return None;
    }
    let mut times = Vec::with_capacity(rounds);
    let mut chosen = Vec::with_capacity(rounds);
    for r in 0..rounds {
        let mut best: Option<(usize, f64)> = None;
        for (s, t) in fixed.iter().enumerate() {
            let others: Vec<f64> = t
                .iter()
                .enumerate()
                .filter(|&(q, _)| q != r)
                .map(|(_, &x)| x)
                .collect();
            let m = median_of(&others)?;
            if best.is_none_or(|(_, b)| m < b) {
                best = Some((s, m));
            }
        }
        let (s, _) = best?;
        times.push(fixed[s][r]);
        chosen.push(s);
    }
    Some((times, chosen))
}

/// A goal's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Met by the figure.
    Met,
    /// Missed by the figure.
    NotMet,
    /// The goal applies only when a condition holds, and it does not.
    NotApplicable,
    /// Too few rounds (or a configuration missing) for a figure.
    NoFigure,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Met => "met",
            Verdict::NotMet => "NOT met",
            Verdict::NotApplicable => "not applicable",
            Verdict::NoFigure => "no figure",
        })
    }
}

/// One goal of the benchmark, its figure and verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Goal {
    /// What is asked, in words.
    pub goal: String,
    /// The ratio it is judged on.
    pub ratio: Option<Ratio>,
    /// The outcome.
    pub verdict: Verdict,
    /// Why, when the verdict needs it (the condition that did not hold).
    pub note: Option<String>,
}

/// `a / b ≤ limit`, judged on the median.
pub fn at_most(goal: String, ratio: Option<Ratio>, limit: f64) -> Goal {
    let verdict = match ratio {
        Some(r) if r.median <= limit => Verdict::Met,
        Some(_) => Verdict::NotMet,
        None => Verdict::NoFigure,
    };
    Goal {
        goal,
        ratio,
        verdict,
        note: None,
    }
}

/// "No slower beyond noise": missed only when the whole interval lies
/// above 1.
pub fn not_slower(goal: String, ratio: Option<Ratio>) -> Goal {
    let verdict = match ratio.and_then(|r| r.interval) {
        Some((low, _)) if low <= 1.0 => Verdict::Met,
        Some(_) => Verdict::NotMet,
        None => Verdict::NoFigure,
    };
    Goal {
        goal,
        ratio,
        verdict,
        note: None,
    }
}

/// "Faster than the default where the default trails its best by more than
/// noise": applies when `default_over_best`'s interval lies above 1; met
/// when `ratio`'s interval lies below 1.
pub fn faster_where_trailing(
    goal: String,
    native: &str,
    ratio: Option<Ratio>,
    default_over_best: Option<Ratio>,
) -> Goal {
    let trailing = default_over_best.and_then(|r| r.interval);
    let (verdict, note) = match (trailing, ratio.and_then(|r| r.interval)) {
        (None, _) | (_, None) => (Verdict::NoFigure, None),
        (Some((low, high)), _) if low <= 1.0 => (
            Verdict::NotApplicable,
            Some(format!(
                "{native}'s default is within noise of its best ({low:.3} … {high:.3})"
            )),
        ),
        (Some(_), Some((_, high))) if high < 1.0 => (Verdict::Met, None),
        (Some(_), Some(_)) => (Verdict::NotMet, None),
    };
    Goal {
        goal,
        ratio,
        verdict,
        note,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_interval_takes_the_binomial_ranks() {
        // n = 6: P(B ≤ 0) = 1/64 ≤ 2.5 %, P(B ≤ 1) = 7/64 > 2.5 %: k = 1.
        let v = [6.0, 1.0, 5.0, 2.0, 4.0, 3.0];
        assert_eq!(median_interval95(&v), Some((1.0, 6.0)));
        // n = 9: P(B ≤ 1) = 10/512 ≤ 2.5 %, P(B ≤ 2) = 46/512: k = 2.
        let v: Vec<f64> = (1..=9).map(f64::from).collect();
        assert_eq!(median_interval95(&v), Some((2.0, 8.0)));
        // n = 20: k = 6 (P(B ≤ 5) = 2.07 %, P(B ≤ 6) = 5.77 %).
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(median_interval95(&v), Some((6.0, 15.0)));
        assert_eq!(median_interval95(&v[..5]), None);
        assert_eq!(
            median_interval95(&[1.0, 2.0, 3.0, 4.0, 5.0, f64::NAN]),
            None
        );
    }

    #[test]
    fn ratios_are_paired_round_by_round() {
        let a = [2.0, 4.0, 6.0];
        let b = [1.0, 4.0, 2.0];
        let r = Ratio::paired(&a, &b).unwrap();
        assert_eq!(r.median, 2.0); // 2, 1, 3
        assert_eq!(r.interval, None);
        assert_eq!(Ratio::paired(&[], &[]), None);
    }

    #[test]
    fn the_held_out_oracle_matches_keel_bench_autos() {
        let fixed: [&[f64]; 3] = [
            &[1.0, 5.0, 1.2, 1.1],
            &[1.1, 1.0, 1.0, 3.0],
            &[2.0, 2.0, 2.0, 2.0],
        ];
        let (times, chosen) = held_out_oracle(&fixed).unwrap();
        // Round 0: medians of the others 1.2 / 1.0 / 2 → schedule 1.
        // Round 1: 1.1 / 1.1 / 2 → schedule 0 (first of the tie).
        // Round 3: 1.2 / 1.0 / 2 → schedule 1, timed at its worst.
        assert_eq!(chosen, [1, 0, 0, 1]);
        assert_eq!(times, [1.1, 5.0, 1.2, 3.0]);
        // The same reading as keel bench auto's, with one loop instance.
        let repeats: Vec<Vec<Vec<f64>>> = (0..4)
            .map(|r| fixed.iter().map(|t| vec![t[r]]).collect())
            .collect();
        let theirs = crate::evaluation::oracle::held_out_oracle(&repeats)
            .unwrap()
            .unwrap();
        let mut ours = times.clone();
        assert_eq!(theirs, [keel_policy::stats::median(&mut ours)]);
        assert_eq!(held_out_oracle(&[&[1.0]]), None);
        assert_eq!(held_out_oracle(&[&[1.0, 2.0], &[1.0]]), None);
    }

    #[test]
    fn verdicts_follow_the_intervals() {
        let r = |median, low, high| {
            Some(Ratio {
                median,
                interval: Some((low, high)),
            })
        };
        assert_eq!(
            at_most("g".into(), r(1.02, 0.9, 1.1), 1.03).verdict,
            Verdict::Met
        );
        assert_eq!(
            at_most("g".into(), r(1.04, 1.0, 1.1), 1.03).verdict,
            Verdict::NotMet
        );
        assert_eq!(at_most("g".into(), None, 1.03).verdict, Verdict::NoFigure);
        assert_eq!(
            not_slower("g".into(), r(1.05, 0.99, 1.1)).verdict,
            Verdict::Met
        );
        assert_eq!(
            not_slower("g".into(), r(1.05, 1.01, 1.1)).verdict,
            Verdict::NotMet
        );
        let no_interval = Some(Ratio {
            median: 1.0,
            interval: None,
        });
        assert_eq!(
            not_slower("g".into(), no_interval).verdict,
            Verdict::NoFigure
        );
        let trailing = r(1.3, 1.2, 1.4);
        let even = r(1.0, 0.98, 1.03);
        assert_eq!(
            faster_where_trailing("g".into(), "libgomp", r(0.8, 0.7, 0.9), trailing).verdict,
            Verdict::Met
        );
        assert_eq!(
            faster_where_trailing("g".into(), "libgomp", r(0.95, 0.9, 1.01), trailing).verdict,
            Verdict::NotMet
        );
        assert_eq!(
            faster_where_trailing("g".into(), "libgomp", r(0.8, 0.7, 0.9), even).verdict,
            Verdict::NotApplicable
        );
        assert_eq!(
            faster_where_trailing("g".into(), "libgomp", no_interval, trailing).verdict,
            Verdict::NoFigure
        );
    }
}
