//! Simulated workers: a relative speed, multiplicative noise on every piece of
//! work, and time-varying perturbations (a worker slowed from t₁ to t₂, a core
//! shared with another thread).
//!
//! Work is given in seconds at speed 1. A worker's effective speed is piecewise
//! constant in time (its base speed times the factors of the perturbations
//! active at that time), so a piece of work that straddles a perturbation's
//! boundary is integrated exactly, not sampled at its start.
//!
//! A worker slowed to half speed from 1 s to 2 s: three units of work
//! started at 0 end at 3.5 s.
//!
//! ```
//! use keel_sim::{Noise, Perturbation, WorkerModel};
//! let slowed = Perturbation { from: 1.0, to: 2.0, speed_factor: 0.5 };
//! let worker = WorkerModel::with(1.0, Noise::None, &[slowed]).unwrap();
//! assert_eq!(worker.speed_at(1.5), 0.5);
//! assert!((worker.finish_exact(0.0, 3.0) - 3.5).abs() < 1e-12);
//! ```

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::engine::SimTime;
use crate::error::SimError;

/// Multiplicative noise on each piece of work; every variant has mean 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Noise {
    /// Deterministic durations.
    #[default]
    None,
    /// Factor uniform on [1 − spread, 1 + spread], spread in [0, 1).
    Uniform {
        /// Half-width of the interval.
        spread: f64,
    },
    /// Factor normal with mean 1 and coefficient of variation `cv`, clamped
    /// at 0.01 so a duration is never negative.
    Normal {
        /// Standard deviation over mean.
        cv: f64,
    },
}

impl Noise {
    /// Normal noise of coefficient of variation `cv`, validated (finite,
    /// ≥ 0); 0 is [`Noise::None`]. NaN or a negative `cv` is an error, never
    /// silently noise-free.
    pub fn normal(cv: f64) -> Result<Noise, SimError> {
        let noise = Noise::Normal { cv };
        noise.validate()?;
        Ok(if cv == 0.0 { Noise::None } else { noise })
    }

    fn validate(&self) -> Result<(), SimError> {
        match *self {
            Noise::None => Ok(()),
            Noise::Uniform { spread } if (0.0..1.0).contains(&spread) => Ok(()),
            Noise::Uniform { spread } => Err(SimError::invalid(
                "uniform noise spread",
                spread,
                "must be in [0, 1)",
            )),
            Noise::Normal { cv } if cv.is_finite() && cv >= 0.0 => Ok(()),
            Noise::Normal { cv } => Err(SimError::invalid(
                "normal noise cv",
                cv,
                "must be finite and ≥ 0",
            )),
        }
    }

    /// One draw of the factor.
    pub fn sample(&self, rng: &mut ChaCha8Rng) -> f64 {
        match *self {
            Noise::None => 1.0,
            Noise::Uniform { spread } => {
                if spread == 0.0 {
                    1.0
                } else {
                    rng.gen_range(1.0 - spread..=1.0 + spread)
                }
            }
            Noise::Normal { cv } => {
                // Box–Muller: one normal draw from two uniforms, no extra crate.
                let u1: f64 = rng.gen_range(f64::MIN_POSITIVE..1.0);
                let u2: f64 = rng.gen();
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                (1.0 + cv * z).max(0.01)
            }
        }
    }
}

/// A worker runs at `speed_factor` times its speed during `[from, to)`.
/// A core shared with one other busy thread is a factor of 0.5.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Perturbation {
    /// Start, in simulated seconds.
    pub from: SimTime,
    /// End (exclusive); `f64::INFINITY` for the rest of the run.
    pub to: SimTime,
    /// Multiplier on the worker's speed, > 0.
    pub speed_factor: f64,
}

/// One simulated worker (a thread on a PU).
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerModel {
    speed: f64,
    noise: Noise,
    /// Piecewise-constant effective speed: `(start time, speed)`, sorted by
    /// time, the first at 0.
    segments: Vec<(SimTime, f64)>,
}

impl WorkerModel {
    /// A worker of relative `speed` (1 = the calibrated machine) with no noise.
    pub fn new(speed: f64) -> Result<Self, SimError> {
        Self::with(speed, Noise::None, &[])
    }

    /// A worker with noise and perturbations.
    pub fn with(
        speed: f64,
        noise: Noise,
        perturbations: &[Perturbation],
    ) -> Result<Self, SimError> {
        if !(speed.is_finite() && speed > 0.0) {
            return Err(SimError::invalid(
                "worker speed",
                speed,
                "must be finite and > 0",
            ));
        }
        noise.validate()?;
        for p in perturbations {
            if !(p.speed_factor.is_finite() && p.speed_factor > 0.0) {
                return Err(SimError::invalid(
                    "perturbation speed factor",
                    p.speed_factor,
                    "must be finite and > 0",
                ));
            }
            if !(p.from >= 0.0 && p.to > p.from) {
                return Err(SimError::invalid(
                    "perturbation interval",
                    format!("[{}, {})", p.from, p.to),
                    "needs 0 ≤ from < to",
                ));
            }
        }
        let mut cuts: Vec<SimTime> = vec![0.0];
        for p in perturbations {
            cuts.push(p.from);
            if p.to.is_finite() {
                cuts.push(p.to);
            }
        }
        cuts.sort_by(f64::total_cmp);
        cuts.dedup();
        let mut segments: Vec<(SimTime, f64)> = Vec::with_capacity(cuts.len());
        for &t in &cuts {
            let factor: f64 = perturbations
                .iter()
                .filter(|p| p.from <= t && t < p.to)
                .map(|p| p.speed_factor)
                .product();
            let s = speed * factor;
            if segments.last().is_none_or(|&(_, last)| last != s) {
                segments.push((t, s));
            }
        }
        Ok(WorkerModel {
            speed,
            noise,
            segments,
        })
    }

    /// The worker's base relative speed.
    pub fn speed(&self) -> f64 {
        self.speed
    }

    /// The worker's noise.
    pub fn noise(&self) -> Noise {
        self.noise
    }

    /// The effective speed at time `t`.
    pub fn speed_at(&self, t: SimTime) -> f64 {
        self.segments[self.segment_at(t)].1
    }

    fn segment_at(&self, t: SimTime) -> usize {
        self.segments
            .partition_point(|&(start, _)| start <= t)
            .saturating_sub(1)
    }

    /// When a piece of `work` seconds (at speed 1) started at `start` ends,
    /// noise drawn from `rng`.
    pub fn finish(&self, start: SimTime, work: f64, rng: &mut ChaCha8Rng) -> SimTime {
        let work = work.max(0.0) * self.noise.sample(rng);
        self.finish_exact(start, work)
    }

    /// As [`finish`](Self::finish) without noise: integrates the piecewise speed.
    pub fn finish_exact(&self, start: SimTime, work: f64) -> SimTime {
        let mut remaining = work.max(0.0);
        let mut t = start;
        let mut i = self.segment_at(start);
        loop {
            let speed = self.segments[i].1;
            let end = self.segments.get(i + 1).map_or(f64::INFINITY, |s| s.0);
            let capacity = (end - t) * speed;
            if remaining <= capacity {
                return t + remaining / speed;
            }
            remaining -= capacity;
            t = end;
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn speed_scales_durations() {
        let w = WorkerModel::new(2.0).unwrap();
        assert_eq!(w.finish_exact(1.0, 4.0), 3.0);
    }

    #[test]
    fn work_straddling_a_slowdown_is_integrated() {
        // Half speed on [1, 3): 4 s of work from t = 0 does 1 s, then 2 × 0.5 = 1 s,
        // then the remaining 2 s at full speed: ends at 5.
        let slow = Perturbation {
            from: 1.0,
            to: 3.0,
            speed_factor: 0.5,
        };
        let w = WorkerModel::with(1.0, Noise::None, &[slow]).unwrap();
        assert_eq!(w.finish_exact(0.0, 4.0), 5.0);
        assert_eq!(w.speed_at(2.0), 0.5);
        assert_eq!(w.speed_at(3.0), 1.0);
        // Overlapping perturbations multiply.
        let shared = Perturbation {
            from: 2.0,
            to: f64::INFINITY,
            speed_factor: 0.5,
        };
        let w = WorkerModel::with(1.0, Noise::None, &[slow, shared]).unwrap();
        assert_eq!(w.speed_at(2.5), 0.25);
        assert_eq!(w.speed_at(10.0), 0.5);
    }

    #[test]
    fn noise_has_mean_one_and_is_reproducible() {
        for noise in [Noise::Uniform { spread: 0.3 }, Noise::Normal { cv: 0.2 }] {
            let mut a = ChaCha8Rng::seed_from_u64(7);
            let mut b = ChaCha8Rng::seed_from_u64(7);
            let draws: Vec<f64> = (0..20_000).map(|_| noise.sample(&mut a)).collect();
            let again: Vec<f64> = (0..20_000).map(|_| noise.sample(&mut b)).collect();
            assert_eq!(draws, again);
            let mean = draws.iter().sum::<f64>() / draws.len() as f64;
            assert!((mean - 1.0).abs() < 0.01, "{noise:?}: mean {mean}");
        }
    }

    #[test]
    fn bad_parameters_are_typed_errors() {
        assert!(WorkerModel::new(0.0).is_err());
        assert!(WorkerModel::new(f64::NAN).is_err());
        assert!(WorkerModel::with(1.0, Noise::Uniform { spread: 1.5 }, &[]).is_err());
        for cv in [f64::NAN, -5.0, f64::INFINITY] {
            assert!(Noise::normal(cv).is_err(), "cv {cv}");
        }
        assert_eq!(Noise::normal(0.0), Ok(Noise::None));
        assert_eq!(Noise::normal(0.2), Ok(Noise::Normal { cv: 0.2 }));
        let inverted = Perturbation {
            from: 2.0,
            to: 1.0,
            speed_factor: 0.5,
        };
        assert!(WorkerModel::with(1.0, Noise::None, &[inverted]).is_err());
    }
}
