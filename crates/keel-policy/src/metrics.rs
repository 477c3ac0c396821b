//! Metrics the papers report (`docs/conventions.md#metrics`): λ = max/avg − 1,
//! LIB = (1 − mean/max)·100 (Auto4OMP Eq. 2, without its P/(P−1) factor),
//! makespan, migrations against a previous mapping, and contiguity splits
//! (ARTful paper Fig. 7b). Averages divide by the number of *available* PUs,
//! never by the non-empty ones (the Zoltan2 #578 lesson).
//!
//! One PU at 3 and one at 1: the mean is 2, so λ = 3/2 − 1 and LIB = (1 − 2/3)·100.
//!
//! ```
//! use keel_policy::metrics::{lambda, lib_percent, migrations, splits};
//! assert_eq!(lambda(&[3.0, 1.0]), 0.5);
//! assert!((lib_percent(&[3.0, 1.0]) - 100.0 / 3.0).abs() < 1e-12);
//! assert_eq!(migrations(&[0, 0, 1], &[0, 1, 1]), 1);
//! assert_eq!(splits(&[0, 0, 1, 1, 0]), 2);
//! ```

use serde::Serialize;

use crate::mapping::{Mapping, MappingInput};
use crate::NO_PU;

/// λ = max/avg − 1 (0 for an empty or all-zero load vector).
pub fn lambda(loads: &[f64]) -> f64 {
    let (max, mean) = max_mean(loads);
    if mean > 0.0 {
        max / mean - 1.0
    } else {
        0.0
    }
}

/// LIB = (1 − mean/max)·100 (0 for an empty or all-zero load vector).
pub fn lib_percent(loads: &[f64]) -> f64 {
    let (max, mean) = max_mean(loads);
    if max > 0.0 {
        (1.0 - mean / max) * 100.0
    } else {
        0.0
    }
}

/// λ of a run of steps separated by barriers: `Σ_t max_p L_pt / Σ_t mean_p L_pt − 1`.
///
/// Each step lasts as long as its most loaded PU, so this is the imbalance
/// the run paid for (the step-load-weighted λ); λ of the summed loads would
/// hide a hot spot that visits every PU in turn. Steps are rows of PU loads
/// (available PUs only); 0 for no load.
pub fn stepped_lambda<R: AsRef<[f64]>>(steps: &[R]) -> f64 {
    let (mut max_sum, mut mean_sum) = (0.0, 0.0);
    for row in steps {
        let (max, mean) = max_mean(row.as_ref());
        if row.as_ref().is_empty() {
            continue;
        }
        max_sum += max;
        mean_sum += mean;
    }
    if mean_sum > 0.0 {
        max_sum / mean_sum - 1.0
    } else {
        0.0
    }
}

fn max_mean(loads: &[f64]) -> (f64, f64) {
    if loads.is_empty() {
        return (0.0, 0.0);
    }
    let max = loads.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mean = loads.iter().sum::<f64>() / loads.len() as f64;
    (max, mean)
}

/// Tasks whose PU differs between `previous` and `next`; tasks that had no
/// PU before ([`NO_PU`]) are placements, not migrations.
pub fn migrations(previous: &[usize], next: &[usize]) -> usize {
    previous
        .iter()
        .zip(next)
        .filter(|(&a, &b)| a != NO_PU && a != b)
        .count()
}

/// Number of `i` with tasks `i` and `i + 1` on different PUs (0 = perfectly contiguous).
pub fn splits(placement: &[usize]) -> usize {
    placement.windows(2).filter(|w| w[0] != w[1]).count()
}

/// Everything `keel map` reports about one mapping.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MappingMetrics {
    /// Largest PU time (background plus tasks over speed).
    pub makespan: f64,
    /// Mean PU time over the available PUs.
    pub mean: f64,
    /// Smallest PU time over the available PUs.
    pub min: f64,
    /// λ = makespan/mean − 1.
    pub lambda: f64,
    /// LIB in percent.
    pub lib_percent: f64,
    /// Lower bound on any mapping's makespan, `max(ideal, max task time)`,
    /// for "percent of ideal" (the classic list-scheduling bound that
    /// greedy/LPT results are measured against).
    pub lower_bound: f64,
    /// Tasks moved from the input's current mapping, when it had one.
    pub migrations: Option<usize>,
    /// Contiguity splits.
    pub splits: usize,
    /// Each PU's time, unavailable PUs included.
    pub pu_times: Vec<f64>,
}

impl MappingMetrics {
    /// Makespan as a percentage of the lower bound (100 = provably optimal).
    pub fn percent_of_bound(&self) -> f64 {
        if self.lower_bound > 0.0 {
            self.makespan / self.lower_bound * 100.0
        } else {
            100.0
        }
    }
}

/// Evaluates `mapping` against the inputs it was computed from.
pub fn evaluate(input: &MappingInput<'_>, mapping: &Mapping) -> MappingMetrics {
    let pu_times = input.loads_of(mapping.as_slice());
    let pus = input.available_pus();
    let available: Vec<f64> = pus.iter().map(|&p| pu_times[p]).collect();
    let (makespan, mean) = max_mean(&available);
    let makespan = makespan.max(pu_times.iter().copied().fold(0.0, f64::max));
    let total_speed: f64 = pus.iter().map(|&p| input.speed(p)).sum();
    let fastest = pus.iter().map(|&p| input.speed(p)).fold(0.0, f64::max);
    let work: f64 = input.task_loads().iter().sum::<f64>()
        + pus
            .iter()
            .map(|&p| input.pu_loads()[p] * input.speed(p))
            .sum::<f64>();
    let max_task = input.task_loads().iter().copied().fold(0.0, f64::max);
    MappingMetrics {
        makespan,
        mean,
        min: available.iter().copied().fold(f64::INFINITY, f64::min),
        lambda: lambda(&available),
        lib_percent: lib_percent(&available),
        lower_bound: (work / total_speed).max(max_task / fastest),
        migrations: input
            .current_mapping()
            .map(|prev| migrations(prev, mapping.as_slice())),
        splits: splits(mapping.as_slice()),
        pu_times,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lambda_and_lib_follow_the_conventions() {
        let loads = [4.0, 2.0, 2.0, 0.0];
        assert_eq!(lambda(&loads), 1.0); // max 4 / avg 2 - 1
        assert_eq!(lib_percent(&loads), 50.0); // (1 - 2/4) * 100
        assert_eq!(lambda(&[3.0, 3.0]), 0.0);
        assert_eq!(lambda(&[]), 0.0);
        assert_eq!(lib_percent(&[0.0, 0.0]), 0.0);
    }

    #[test]
    fn migrations_ignore_unplaced_tasks() {
        assert_eq!(migrations(&[0, 1, NO_PU, 2], &[0, 2, 1, 1]), 2);
    }

    #[test]
    fn splits_count_boundaries() {
        assert_eq!(splits(&[0, 0, 1, 1, 0]), 2);
        assert_eq!(splits(&[]), 0);
    }

    #[test]
    fn evaluate_averages_over_available_pus_only() {
        let loads = [2.0, 2.0];
        let input = MappingInput::new(&loads, &[0.0, 0.0, 0.0])
            .unwrap()
            .with_availability(&[true, true, false])
            .unwrap()
            .with_current(&[0, 0])
            .unwrap();
        let m = evaluate(&input, &Mapping::new(vec![0, 0], 3).unwrap());
        assert_eq!(m.makespan, 4.0);
        assert_eq!(m.mean, 2.0);
        assert_eq!(m.lambda, 1.0);
        assert_eq!(m.lower_bound, 2.0);
        assert_eq!(m.migrations, Some(0));
        assert_eq!(m.percent_of_bound(), 200.0);
    }

    #[test]
    fn stepped_lambda_weights_each_step_by_its_load() {
        // A hot spot that visits each PU in turn: summed loads are balanced,
        // but every step ran at twice the mean.
        let steps = [[2.0, 0.0], [0.0, 2.0]];
        assert_eq!(lambda(&[2.0, 2.0]), 0.0);
        assert_eq!(stepped_lambda(&steps), 1.0);
        assert_eq!(stepped_lambda(&[[1.0, 1.0], [3.0, 1.0]]), 4.0 / 3.0 - 1.0);
        assert_eq!(stepped_lambda::<[f64; 0]>(&[]), 0.0);
        assert_eq!(stepped_lambda(&[[0.0, 0.0]]), 0.0);
    }
}
