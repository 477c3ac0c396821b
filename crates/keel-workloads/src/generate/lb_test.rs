//! `lb-test`: the per-element work of Charm++'s `lb_test`
//! (`tests/charm++/load_balancing/lb_test/` in Charm++).
//!
//! Each element busy-waits `min_us + (max_us - min_us) * U^4` µs with `U`
//! uniform in `[0, 1)`: most elements are light and a few are up to
//! `max_us`. lb_test seeds C's `rand` with 12345; Keel draws `U` from
//! ChaCha8 seeded with `seed` (default 12345), so the values differ from
//! Charm++'s but the distribution is the same and is reproducible anywhere.
//!
//! lb_test's `DYNAMIC_IMBALANCE` mode re-draws the loads halfway between two
//! balancing steps, so the balancer always starts from a mapping made for
//! loads that no longer hold. `redraw-seed=S` reproduces that step: the
//! current mapping is made for the loads drawn from `seed` (by greedy, unless
//! `current` says otherwise), and the task loads are then drawn from `S`.

use keel_policy::Spec;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{check_keys, count, number, pus, seed, Start, MAX_TASKS, SECONDS_PER_US};
use crate::error::WorkloadError;
use crate::MappingProblem;

/// lb_test's elements.
#[derive(Clone, Debug, PartialEq)]
pub struct LbTest {
    /// Number of elements (tasks).
    pub tasks: usize,
    /// Number of PUs.
    pub pus: usize,
    /// Lightest work, µs.
    pub min_us: f64,
    /// Heaviest work, µs (exclusive bound); defaults to `max(3000, min_us)`.
    pub max_us: f64,
    /// Seed of the loads (of the previous loads with `redraw_seed`).
    pub seed: u64,
    /// Seed of the re-drawn loads, for lb_test's dynamic imbalance.
    pub redraw_seed: Option<u64>,
    /// The mapping the elements start from.
    pub start: Start,
}

impl Default for LbTest {
    fn default() -> Self {
        LbTest {
            tasks: 16_000,
            pus: 80,
            min_us: 10.0,
            max_us: 3000.0,
            seed: 12345,
            redraw_seed: None,
            start: Start::Block,
        }
    }
}

impl LbTest {
    /// The generator's name.
    pub const NAME: &'static str = "lb-test";

    /// Builds from `lb-test[:tasks=N,pus=P,min-us=A,max-us=B,seed=S,redraw-seed=R,current=...]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, WorkloadError> {
        check_keys(spec, &["tasks", "min-us", "max-us", "seed", "redraw-seed"])?;
        let d = LbTest::default();
        let min_us = number(spec, "min-us", d.min_us, 0.0, f64::INFINITY)?;
        let max_us = number(spec, "max-us", d.max_us.max(min_us), min_us, f64::INFINITY)?;
        let redraw_seed = seed(spec, "redraw-seed")?;
        let default_start = match redraw_seed {
            Some(_) => Start::Greedy,
            None => Start::Block,
        };
        Ok(LbTest {
            tasks: count(spec, "tasks", d.tasks, 0, MAX_TASKS)?,
            pus: pus(spec, d.pus)?,
            min_us,
            max_us,
            seed: seed(spec, "seed")?.unwrap_or(d.seed),
            redraw_seed,
            start: Start::from_spec(spec, default_start)?,
        })
    }

    /// The loads drawn from `seed`, in seconds.
    pub fn loads(&self, seed: u64) -> Vec<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let span = self.max_us - self.min_us;
        (0..self.tasks)
            .map(|_| {
                let u: f64 = rng.gen();
                (self.min_us + span * u.powi(4)) * SECONDS_PER_US
            })
            .collect()
    }

    /// The mapping problem.
    pub fn problem(&self) -> Result<MappingProblem, WorkloadError> {
        let before = self.loads(self.seed);
        match self.redraw_seed {
            Some(redraw) => self
                .start
                .problem(self.loads(redraw), Some(&before), self.pus),
            None => self.start.problem(before, None, self.pus),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_stay_in_range_and_skew_toward_the_minimum() {
        let lb = LbTest::default();
        let loads = lb.loads(lb.seed);
        assert_eq!(loads.len(), 16_000);
        assert!(loads.iter().all(|&l| (10e-6..3000e-6).contains(&l)));
        // E[U^4] = 1/5: the mean sits near min + span/5.
        let mean = loads.iter().sum::<f64>() / loads.len() as f64;
        assert!(
            (mean - (10.0 + 2990.0 / 5.0) * 1e-6).abs() < 20e-6,
            "{mean}"
        );
        let below_mid = loads.iter().filter(|&&l| l < 1505e-6).count();
        assert!(below_mid > loads.len() * 3 / 4);
    }

    #[test]
    fn redraw_keeps_the_mapping_of_the_old_loads() {
        let spec = Spec::parse("lb-test:tasks=200,pus=4,redraw-seed=7").unwrap();
        let lb = LbTest::from_spec(&spec).unwrap();
        assert_eq!(lb.start, Start::Greedy);
        let problem = lb.problem().unwrap();
        assert_eq!(problem.task_loads, lb.loads(7));
        let old = Start::Greedy.placement(&lb.loads(12345), 4).unwrap();
        assert_eq!(problem.current, old);
    }
}
