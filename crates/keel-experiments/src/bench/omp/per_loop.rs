//! The per-loop goals of the workloads that time each loop:
//! `auto` against the sum over loops of each loop's best fixed
//! configuration, each loop against its own best, and each loop against
//! the runtime's `static`.
//!
//! A loop's best fixed configuration is the one with the smallest median
//! time for that loop over every fixed configuration of the run (the
//! runtime's and Keel's). Taking the smallest of many noisy medians
//! flatters the reference, so the goals are judged *held out*: for each
//! round, each loop's configuration is the one with the best median over
//! the other rounds, timed in that round (`summary::held_out_oracle`, loop
//! by loop). The round-paired minimum (each round, each loop's fastest
//! configuration of that round) is reported beside it: a lucky reference
//! no schedule chosen in advance could reach.

use serde::Serialize;

use super::summary::{self, Goal, Ratio};
use keel_policy::stats::median_of;

/// One loop's figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoopReport {
    /// The loop's name (`loop.<name>=` in the program's output).
    pub name: String,
    /// Its best fixed configuration: the smallest median.
    pub best_fixed: String,
    /// That median.
    pub best_fixed_median: f64,
    /// The held-out best, per round: the time in that round of the
    /// configuration with the best median over the other rounds.
    pub held_out: Vec<f64>,
    /// The configuration chosen for each round.
    pub held_out_chosen: Vec<String>,
    /// The loop's median time under `keel auto`.
    pub auto_median: Option<f64>,
    /// `keel auto` ÷ the held-out best, paired by round.
    pub auto_over_best: Option<Ratio>,
    /// `keel auto` ÷ the runtime's `static`, paired by round.
    pub auto_over_static: Option<Ratio>,
}

/// The sum over loops of each loop's best fixed configuration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SumOfBest {
    /// Σ over loops of the best median.
    pub medians: f64,
    /// Σ over loops of the held-out best, per round.
    pub held_out: Vec<f64>,
    /// Σ over loops of the round's fastest configuration, per round.
    pub lucky: Vec<f64>,
    /// `keel auto`'s median whole time ÷ `medians`.
    pub auto_over_medians: Option<f64>,
    /// `keel auto` ÷ `held_out`, paired by round (the goal's figure).
    pub auto_over_held_out: Option<Ratio>,
    /// `keel auto` ÷ `lucky`, paired by round.
    pub auto_over_lucky: Option<Ratio>,
}

/// A workload's per-loop report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PerLoopReport {
    /// Each loop, in the program's order.
    pub loops: Vec<LoopReport>,
    /// The sum of the loops' best.
    pub sum_of_best: SumOfBest,
}

/// The times of one workload's run.
pub struct Times<'a> {
    /// The configurations' names, in the tables' order.
    pub configs: &'a [String],
    /// The loops' names.
    pub loops: &'a [String],
    /// Whole-program seconds, `[config][round]`.
    pub whole: &'a [Vec<f64>],
    /// Per-loop seconds, `[config][loop][round]`.
    pub per_loop: &'a [Vec<Vec<f64>>],
}

/// The per-loop report and goals: `fixed` indexes the fixed
/// configurations, `auto` and `native_static` the configurations the goals
/// name. `None` with fewer than two rounds or no fixed configuration.
pub fn summarise(
    t: &Times,
    fixed: &[usize],
    auto: Option<usize>,
    native_static: Option<usize>,
) -> Option<(PerLoopReport, Vec<Goal>)> {
    let rounds = t.whole.first()?.len();
    let median = |v: &[f64]| median_of(v).unwrap_or(f64::NAN);
    let mut loops = Vec::with_capacity(t.loops.len());
    let mut held_out_sum = vec![0.0; rounds];
    let mut lucky = vec![0.0; rounds];
    let mut medians = 0.0;
    for (l, name) in t.loops.iter().enumerate() {
        let tables: Vec<&[f64]> = fixed.iter().map(|&c| &t.per_loop[c][l][..]).collect();
        let (best, best_median) = fixed
            .iter()
            .map(|&c| (c, median(&t.per_loop[c][l])))
            .min_by(|a, b| a.1.total_cmp(&b.1))?;
        let (held_out, chosen) = summary::held_out_oracle(&tables)?;
        for r in 0..rounds {
            held_out_sum[r] += held_out[r];
            lucky[r] += tables
                .iter()
                .map(|t| t[r])
                .min_by(f64::total_cmp)
                .unwrap_or(f64::NAN);
        }
        medians += best_median;
        let of = |c: Option<usize>| c.map(|c| &t.per_loop[c][l][..]);
        loops.push(LoopReport {
            name: name.clone(),
            best_fixed: t.configs[best].clone(),
            best_fixed_median: best_median,
            auto_median: of(auto).map(median),
            auto_over_best: of(auto).and_then(|a| Ratio::paired(a, &held_out)),
            auto_over_static: of(auto)
                .zip(of(native_static))
                .and_then(|(a, s)| Ratio::paired(a, s)),
            held_out_chosen: chosen
                .iter()
                .map(|&k| t.configs[fixed[k]].clone())
                .collect(),
            held_out,
        });
    }
    let auto_whole = auto.map(|a| &t.whole[a][..]);
    let sum_of_best = SumOfBest {
        medians,
        auto_over_medians: auto_whole.map(|a| median(a) / medians),
        auto_over_held_out: auto_whole.and_then(|a| Ratio::paired(a, &held_out_sum)),
        auto_over_lucky: auto_whole.and_then(|a| Ratio::paired(a, &lucky)),
        held_out: held_out_sum,
        lucky,
    };
    let static_name = native_static.map_or("the runtime's static", |s| &t.configs[s]);
    let mut goals = vec![summary::at_most(
        "keel auto (whole program) within 3 % of the sum over loops of each loop's best fixed configuration (held out)".into(),
        sum_of_best.auto_over_held_out,
        1.03,
    )];
    for l in &loops {
        goals.push(summary::at_most(
            format!(
                "loop {}: keel auto within 5 % of its best fixed configuration (held out)",
                l.name
            ),
            l.auto_over_best,
            1.05,
        ));
        goals.push(summary::not_slower(
            format!(
                "loop {}: keel auto no slower than {static_name} beyond noise",
                l.name
            ),
            l.auto_over_static,
        ));
    }
    Some((PerLoopReport { loops, sum_of_best }, goals))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::omp::summary::Verdict;

    /// A hand-made run: three fixed configurations, `auto`, two loops,
    /// three rounds.
    #[test]
    fn the_sum_of_per_loop_best_is_held_out_loop_by_loop() {
        let configs: Vec<String> = ["gomp static", "gomp dynamic", "keel guided", "keel auto"]
            .map(String::from)
            .to_vec();
        let loops: Vec<String> = vec!["a".into(), "b".into()];
        // [config][loop][round]
        let per_loop = vec![
            // static: best on loop a (medians 1.0 / 4.0)
            vec![vec![1.0, 1.0, 1.5], vec![4.0, 4.0, 4.0]],
            // dynamic: best on loop b (medians 2.0 / 2.0), but slow on b in round 1
            vec![vec![2.0, 2.0, 2.0], vec![2.0, 3.0, 2.0]],
            // guided: the lucky one in places (medians 3.0 / 2.5)
            vec![vec![0.5, 3.0, 3.0], vec![2.5, 1.0, 2.5]],
            // auto
            vec![vec![1.1, 1.0, 1.2], vec![2.2, 2.2, 2.0]],
        ];
        let whole: Vec<Vec<f64>> = per_loop
            .iter()
            .map(|c| (0..3).map(|r| c[0][r] + c[1][r]).collect())
            .collect();
        let t = Times {
            configs: &configs,
            loops: &loops,
            whole: &whole,
            per_loop: &per_loop,
        };
        let (report, goals) = summarise(&t, &[0, 1, 2], Some(3), Some(0)).unwrap();
        let a = &report.loops[0];
        assert_eq!(a.best_fixed, "gomp static");
        assert_eq!(a.best_fixed_median, 1.0);
        // Loop a, held out: round 0 from rounds 1, 2 (medians 1.25 / 2 /
        // 3): static, 1.0; round 1 from 0, 2 (1.25 / 2 / 1.75): static,
        // 1.0; round 2 from 0, 1 (1.0 / 2 / 1.75): static, 1.5.
        assert_eq!(a.held_out, [1.0, 1.0, 1.5]);
        assert_eq!(a.held_out_chosen, ["gomp static"; 3]);
        let b = &report.loops[1];
        assert_eq!(b.best_fixed, "gomp dynamic");
        // Loop b: round 0 from 1, 2 (4 / 2.5 / 1.75): guided, 2.5;
        // round 1 from 0, 2 (4 / 2 / 2.5): dynamic, 3.0; round 2 from 0, 1
        // (4 / 2.5 / 1.75): guided, 2.5.
        assert_eq!(b.held_out, [2.5, 3.0, 2.5]);
        assert_eq!(
            b.held_out_chosen,
            ["keel guided", "gomp dynamic", "keel guided"]
        );
        let sum = &report.sum_of_best;
        assert_eq!(sum.medians, 3.0);
        assert_eq!(sum.held_out, [3.5, 4.0, 4.0]);
        // Lucky: round 0 0.5 + 2.0, round 1 1.0 + 1.0, round 2 1.5 + 2.0.
        assert_eq!(sum.lucky, [2.5, 2.0, 3.5]);
        // Auto's whole: 3.3, 3.2, 3.2 (median 3.2).
        assert!((sum.auto_over_medians.unwrap() - 3.2 / 3.0).abs() < 1e-12);
        let r = sum.auto_over_held_out.unwrap();
        // 3.3 / 3.5, 3.2 / 4, 3.2 / 4: median 0.8.
        assert!((r.median - 0.8).abs() < 1e-12);
        assert_eq!(r.interval, None);
        // 3.3 / 2.5, 1.6, 3.2 / 3.5: median 1.32.
        assert!((sum.auto_over_lucky.unwrap().median - 1.32).abs() < 1e-12);
        // Loop a: auto ÷ held out 1.1, 1.0, 0.8: median 1.0; ÷ static the same.
        assert!((a.auto_over_best.unwrap().median - 1.0).abs() < 1e-12);
        assert!((a.auto_over_static.unwrap().median - 1.0).abs() < 1e-12);
        assert_eq!(a.auto_median, Some(1.1));
        // Loop b: 2.2 / 2.5, 2.2 / 3, 2 / 2.5: median 0.8.
        assert!((b.auto_over_best.unwrap().median - 0.8).abs() < 1e-12);
        // Goals: the sum, then per loop (best, static).
        assert_eq!(goals.len(), 5);
        assert_eq!(goals[0].verdict, Verdict::Met);
        assert!(goals[1].goal.starts_with("loop a:"), "{}", goals[1].goal);
        assert_eq!(goals[1].verdict, Verdict::Met);
        assert!(goals[2].goal.contains("gomp static"), "{}", goals[2].goal);
        // Three rounds give no interval: no figure for "beyond noise".
        assert_eq!(goals[2].verdict, Verdict::NoFigure);
        assert!(goals[3].goal.starts_with("loop b:"));
        // Without auto there is a reference but no figure.
        let (report, goals) = summarise(&t, &[0, 1, 2], None, Some(0)).unwrap();
        assert_eq!(report.sum_of_best.held_out, [3.5, 4.0, 4.0]);
        assert!(goals.iter().all(|g| g.verdict == Verdict::NoFigure));
        assert_eq!(summarise(&t, &[], Some(3), Some(0)), None);
    }

    #[test]
    fn a_loop_slower_than_its_best_misses_every_goal() {
        // One loop, six rounds: auto 1.1x the best on every round.
        let configs: Vec<String> = vec!["s".into(), "d".into(), "auto".into()];
        let loops: Vec<String> = vec!["only".into()];
        let rounds = 6;
        let per_loop = vec![
            vec![vec![1.0; rounds]],
            vec![vec![2.0; rounds]],
            vec![vec![1.1; rounds]],
        ];
        let whole: Vec<Vec<f64>> = per_loop.iter().map(|c| c[0].clone()).collect();
        let t = Times {
            configs: &configs,
            loops: &loops,
            whole: &whole,
            per_loop: &per_loop,
        };
        let (_, goals) = summarise(&t, &[0, 1], Some(2), Some(0)).unwrap();
        let verdicts: Vec<Verdict> = goals.iter().map(|g| g.verdict).collect();
        assert_eq!(
            verdicts,
            [Verdict::NotMet, Verdict::NotMet, Verdict::NotMet]
        );
    }
}
