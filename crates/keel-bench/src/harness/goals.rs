//! The loop runtime's cost goals, each a figure taken round by round from
//! samples measured side by side in that round and summarised as the
//! median over rounds (`docs/conventions.md#measuring`): a slow phase of a
//! shared machine then moves both sides of a comparison together.

use keel::policy::concept::Concept;
use keel::policy::dls::{LoopShape, Timing};
use keel::policy::select::{self, Setting};
use keel::policy::ContextHandler;

use super::{delay_index, Harness, Latency, Series};
use crate::report::GoalRow;
use crate::sched::Sched;
use crate::stats::Summary;

/// The libgomp schedules whose per-chunk cost Keel's must stay within
/// 1.1× of, at the shortest delay.
const PER_CHUNK: [Sched; 2] = [Sched::Dynamic(1), Sched::Dynamic(8)];

impl Harness<'_> {
    /// Every goal the measurements allow (the libgomp ones only when it
    /// is built in).
    pub(super) fn goals(&self) -> Vec<GoalRow> {
        let mut rows = Vec::new();
        let lat = |k: Latency| per_round(&self.latency[k as usize], |s| s.seconds * 1e9);
        let keel_loop = lat(Latency::KeelLoop);
        if self.gomp.is_ok() {
            rows.push(GoalRow::at_most(
                "empty static loop: Keel loop / libgomp parallel for",
                zip(&keel_loop, &lat(Latency::GompLoop), ratio),
                0.5,
            ));
        }
        rows.push(GoalRow::at_most(
            "empty static loop: Keel loop − Keel region, ns",
            zip(&keel_loop, &lat(Latency::KeelRegion), |a, b| a - b),
            150.0,
        ));
        if let (Ok(_), Some(&d)) = (&self.gomp, self.config.delays_us.first()) {
            let i = delay_index(&self.delays, d);
            let median = |refs: &[f64]| Summary::of(refs).map_or(f64::NAN, |s| s.median);
            let (rust_ref, c_ref) = (median(&self.ref_rust[i]), median(&self.ref_c[i]));
            for sched in PER_CHUNK {
                let Some(si) = self.config.schedules.iter().position(|s| *s == sched) else {
                    continue;
                };
                let series = &self.overhead[si];
                let per_chunk = |s: &Series, reference: f64| {
                    per_round(s, |x| (x.seconds - reference) / x.chunks)
                };
                rows.push(GoalRow::at_most(
                    &format!(
                        "{} at {d} µs: per-chunk overhead, Keel / libgomp",
                        sched.label()
                    ),
                    zip(
                        &per_chunk(&series[0], rust_ref),
                        &per_chunk(&series[1], c_ref),
                        ratio,
                    ),
                    1.1,
                ));
            }
        }
        rows.extend(self.adaptive_goals());
        rows
    }

    /// Each adaptive schedule's marginal cost per chunk against `ss`'s plus
    /// the clock pairs it reads per chunk (`Instant::now()` and
    /// `elapsed()`, measured in the same round), within 10 %.
    fn adaptive_goals(&self) -> Vec<GoalRow> {
        let schedules = &self.config.adaptive_schedules;
        let na = schedules.len();
        let position = |name: &str| schedules.iter().position(|s| s == name);
        let (Some(st), Some(ss)) = (position("static"), position("dynamic")) else {
            return Vec::new();
        };
        let mut rows = Vec::new();
        for (di, &d) in self.config.adaptive_delays_us.iter().enumerate() {
            let series = |ai: usize| &self.adaptive[di * na + ai];
            let marginal = |ai: usize| {
                let base = series(st);
                series(ai)
                    .samples
                    .iter()
                    .zip(&base.samples)
                    .map(|(c, b)| {
                        let extra = c.chunks - b.chunks;
                        if extra >= 1.0 {
                            (c.seconds - b.seconds) / extra * 1e9
                        } else {
                            f64::NAN
                        }
                    })
                    .collect::<Vec<f64>>()
            };
            let ss_marginal = marginal(ss);
            for (ai, spec) in schedules.iter().enumerate() {
                let Some(pairs) = clock_pairs_per_chunk(spec, self.n, self.p) else {
                    continue;
                };
                if pairs == 0 {
                    continue;
                }
                let budget: Vec<f64> = ss_marginal
                    .iter()
                    .zip(&self.clock_pair)
                    .map(|(s, c)| s + pairs as f64 * c * 1e9)
                    .collect();
                rows.push(GoalRow::at_most(
                    &format!(
                        "{spec} at {d} µs: marginal per chunk / (ss's + {pairs} clock pair{})",
                        if pairs == 1 { "" } else { "s" }
                    ),
                    zip(&marginal(ai), &budget, ratio),
                    1.1,
                ));
            }
        }
        rows
    }
}

/// How many clock pairs (a read before and one after) a chunk of `spec`
/// needs: one for a plan that times chunks or requests, or for a schedule
/// that reads an iteration profile (Keel times its chunks); none else.
/// `None` when `spec` is not a fixed schedule that plans without inputs.
fn clock_pairs_per_chunk(spec: &str, n: u64, p: usize) -> Option<u32> {
    let Ok(Setting::Fixed { schedule, chunk }) = select::parse_setting(spec) else {
        return None;
    };
    let profiled = schedule
        .requirements()
        .iter()
        .any(|r| r.concept == Concept::IterationProfile);
    let shape = LoopShape::new(n, p, chunk).ok()?;
    let ctx = ContextHandler::new();
    let plan = schedule.plan(&shape, &ctx).ok()?;
    Some(u32::from(profiled || plan.timing() != Timing::None))
}

/// `a / b` when both are positive: an overhead that noise made zero or
/// negative, on either side, has no meaningful ratio, and that round
/// gives none.
fn ratio(a: f64, b: f64) -> f64 {
    if a > 0.0 && b > 0.0 {
        a / b
    } else {
        f64::NAN
    }
}

/// `f` of every recorded sample of `series`, one per round.
fn per_round(series: &Series, f: impl Fn(&super::Sample) -> f64) -> Vec<f64> {
    series.samples.iter().map(f).collect()
}

/// `f(a, b)` round by round, summarised; a round missing on either side
/// (an error stopped a series) leaves the rest unpaired, so no figure.
/// Neither is there one when fewer than half the rounds give a finite
/// figure: the median of the rounds that happened to measure a positive
/// overhead would be chosen by the noise.
fn zip(a: &[f64], b: &[f64], f: impl Fn(f64, f64) -> f64) -> Option<Summary> {
    if a.len() != b.len() {
        return None;
    }
    let v: Vec<f64> = a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect();
    let finite = v.iter().filter(|x| x.is_finite()).count();
    if 2 * finite < v.len() {
        return None;
    }
    Summary::of(&v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_pairs_follow_the_plans_timing() {
        for timed in ["af", "maf", "awf-b", "awf-e", "fac"] {
            assert_eq!(clock_pairs_per_chunk(timed, 2048, 2), Some(1), "{timed}");
        }
        for untimed in ["static", "dynamic", "guided", "fac2", "static-steal"] {
            assert_eq!(
                clock_pairs_per_chunk(untimed, 2048, 2),
                Some(0),
                "{untimed}"
            );
        }
        assert_eq!(clock_pairs_per_chunk("auto", 2048, 2), None);
        assert_eq!(clock_pairs_per_chunk("bogus", 2048, 2), None);
    }

    #[test]
    fn figures_pair_rounds_and_drop_meaningless_ratios() {
        let s = zip(&[2.0, 3.0, 4.0, -1.0], &[1.0, 0.0, 2.0, 1.0], ratio).unwrap();
        assert_eq!((s.median, s.n), (2.0, 2));
        // Fewer than half the rounds with a figure: none.
        assert!(zip(&[2.0, 3.0, 4.0], &[1.0, 0.0, -1.0], ratio).is_none());
        assert!(zip(&[-2.0, 3.0, -4.0], &[1.0, 1.0, 1.0], ratio).is_none());
        assert!(zip(&[1.0], &[1.0, 2.0], ratio).is_none());
        let row = GoalRow::at_most("x", zip(&[1.0, 3.0], &[0.0, 0.0], |a, b| a - b), 2.0);
        assert_eq!(row.met, Some(true));
        assert_eq!(GoalRow::at_most("y", None, 1.0).met, None);
    }
}
