//! `hotspot`: light tasks with one contiguous band of heavy ones, like the
//! rows of a Mandelbrot image that cross the set, or the cells near a moving
//! front. Task `i` (at position `x = (i + ½)/n`) costs
//! `base + (peak − base)·exp(−½((x − center)/width)²)` µs, times a uniform
//! jitter factor in `[1 − jitter, 1 + jitter)` drawn from ChaCha8(`seed`).
//!
//! A block mapping puts the whole band on a few PUs; greedy balances it but
//! scatters neighbours everywhere; BinLPT balances with few contiguous
//! chunks, which is what it was designed for.

use keel_policy::Spec;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{check_keys, count, number, pus, seed, Start, MAX_TASKS, SECONDS_PER_US};
use crate::error::WorkloadError;
use crate::MappingProblem;

/// A hot spot over a light base.
#[derive(Clone, Debug, PartialEq)]
pub struct Hotspot {
    /// Number of tasks.
    pub tasks: usize,
    /// Number of PUs.
    pub pus: usize,
    /// Load far from the hot spot, µs.
    pub base_us: f64,
    /// Load at the hot spot's centre, µs.
    pub peak_us: f64,
    /// Centre of the hot spot, as a fraction of the task range.
    pub center: f64,
    /// Standard deviation of the bump, as a fraction of the task range.
    pub width: f64,
    /// Relative amplitude of the uniform noise, in `[0, 1)`.
    pub jitter: f64,
    /// Seed of the noise.
    pub seed: u64,
    /// The mapping the tasks start from.
    pub start: Start,
}

impl Default for Hotspot {
    fn default() -> Self {
        Hotspot {
            tasks: 8192,
            pus: 32,
            base_us: 20.0,
            peak_us: 2000.0,
            center: 0.3,
            width: 0.05,
            jitter: 0.1,
            seed: 1,
            start: Start::Block,
        }
    }
}

impl Hotspot {
    /// The generator's name.
    pub const NAME: &'static str = "hotspot";

    /// Builds from `hotspot[:tasks=N,pus=P,base-us=A,peak-us=B,center=C,width=W,jitter=J,seed=S,current=...]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, WorkloadError> {
        check_keys(
            spec,
            &[
                "tasks", "base-us", "peak-us", "center", "width", "jitter", "seed",
            ],
        )?;
        let d = Hotspot::default();
        let width = number(spec, "width", d.width, 0.0, f64::INFINITY)?;
        if width <= 0.0 {
            return Err(spec
                .invalid("width", &width.to_string(), "a finite number > 0")
                .into());
        }
        Ok(Hotspot {
            tasks: count(spec, "tasks", d.tasks, 0, MAX_TASKS)?,
            pus: pus(spec, d.pus)?,
            base_us: number(spec, "base-us", d.base_us, 0.0, f64::INFINITY)?,
            peak_us: number(spec, "peak-us", d.peak_us, 0.0, f64::INFINITY)?,
            center: number(spec, "center", d.center, 0.0, 1.0)?,
            width,
            jitter: match number(spec, "jitter", d.jitter, 0.0, 1.0)? {
                j if j < 1.0 => j,
                j => {
                    return Err(spec
                        .invalid("jitter", &j.to_string(), "a number in [0, 1)")
                        .into())
                }
            },
            seed: seed(spec, "seed")?.unwrap_or(d.seed),
            start: Start::from_spec(spec, Start::Block)?,
        })
    }

    /// The loads, in seconds.
    pub fn loads(&self) -> Vec<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let n = self.tasks as f64;
        (0..self.tasks)
            .map(|i| {
                let z = ((i as f64 + 0.5) / n - self.center) / self.width;
                let us = self.base_us + (self.peak_us - self.base_us) * (-0.5 * z * z).exp();
                let noise = 1.0 + self.jitter * (2.0 * rng.gen::<f64>() - 1.0);
                us * noise * SECONDS_PER_US
            })
            .collect()
    }

    /// The mapping problem.
    pub fn problem(&self) -> Result<MappingProblem, WorkloadError> {
        self.start.problem(self.loads(), None, self.pus)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peak_sits_at_the_centre_and_the_edges_stay_near_base() {
        let spot = Hotspot {
            jitter: 0.0,
            ..Hotspot::default()
        };
        let loads = spot.loads();
        let heaviest = (0..loads.len())
            .max_by(|&a, &b| loads[a].total_cmp(&loads[b]))
            .unwrap();
        assert!((heaviest as f64 / loads.len() as f64 - 0.3).abs() < 0.001);
        assert!((loads[heaviest] - 2000e-6).abs() < 1e-6);
        assert!((loads[loads.len() - 1] - 20e-6).abs() < 1e-9);
    }
}
