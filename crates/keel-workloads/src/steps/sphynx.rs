//! `sphynx`: a SPHYNX-like smoothed-particle step (Auto4OMP §4's SPHYNX
//! Evrard collapse, modelled on its loop structure, not its physics).
//! Particles are numbered along space, so consecutive iterations are
//! neighbours in space, and a particle's cost is proportional to its
//! neighbour count. Each step runs three loop calls:
//!
//! 1. `sphynx-density` over the first `short-particles` particles (a short
//!    instance, about 20 ms here);
//! 2. `sphynx-density` again over all `particles` (the long instance, about
//!    40 ms at the bench's size; SPHYNX at full size takes about a second,
//!    which `particles=400000` approaches);
//! 3. `sphynx-forces` over all particles.
//!
//! The same loop thus alternates between a short and a long instance, which
//! a per-loop selection method must not confuse with a change of the loop.
//! Neighbour counts are `n_i(t) = b_i·(1 + bump·exp(−((x_i − c(t))/width)²))`
//! with `x_i = i / particles`, a fixed per-particle base `b_i` in 40..=60
//! (a hash of `i`), and a dense region whose centre `c(t)` drifts linearly
//! from 0.1 to 0.9 over the run: the heavy block of iterations moves.

use keel_policy::Spec;

use super::{spin, LoopCall, SteppedWorkload};
use crate::error::WorkloadError;
use crate::params::{count, number};

/// Spin units per neighbour in the density loop.
pub const DENSITY_UNITS: u64 = 33;

/// Spin units per neighbour in the forces loop (half the density's: the
/// bench keeps a step near 80 ms on two threads).
pub const FORCES_UNITS: u64 = 16;

/// A SPHYNX-like time-stepping program.
#[derive(Clone, Debug, PartialEq)]
pub struct Sphynx {
    particles: usize,
    short_particles: usize,
    steps: usize,
    bump: f64,
    width: f64,
}

impl Sphynx {
    /// The spec name.
    pub const NAME: &'static str = "sphynx";
    /// The density loop's name (it runs twice per step).
    pub const DENSITY: &'static str = "sphynx-density";
    /// The forces loop's name.
    pub const FORCES: &'static str = "sphynx-forces";

    /// Builds from `sphynx[:particles=16000,short-particles=8000,steps=100,bump=4,width=0.1]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, WorkloadError> {
        spec.check_keys(&["particles", "short-particles", "steps", "bump", "width"])?;
        let particles = count(spec, "particles", 16_000, 1, 1 << 26)?;
        let short_particles = count(spec, "short-particles", 8_000, 1, particles)?;
        Ok(Sphynx {
            particles,
            short_particles,
            steps: count(spec, "steps", 100, 1, 1 << 20)?,
            bump: number(spec, "bump", 4.0, (0.0, false), 1e3)?,
            width: number(spec, "width", 0.1, (0.0, true), 10.0)?,
        })
    }

    /// Spin units particle `i` costs in loop call `call` (0, 1: density;
    /// 2: forces) of `step`: what [`SteppedWorkload::run`] spins, for a
    /// simulator that costs the same iterations without running them.
    ///
    /// ```
    /// use keel_workloads::steps::{Sphynx, SteppedWorkload};
    /// let s = Sphynx::from_spec(&"sphynx".parse().unwrap()).unwrap();
    /// assert_eq!(s.units(0, 0, 5), 2 * s.units(0, 2, 5) + s.neighbours(0, 5));
    /// ```
    pub fn units(&self, step: usize, call: usize, i: usize) -> u64 {
        let per_neighbour = if call == 2 {
            FORCES_UNITS
        } else {
            DENSITY_UNITS
        };
        self.neighbours(step, i) * per_neighbour
    }

    /// Neighbours of particle `i` at `step`.
    pub fn neighbours(&self, step: usize, i: usize) -> u64 {
        // A fixed base in 40..=60 from a multiplicative hash of i.
        let base = 40 + (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) % 21;
        let x = i as f64 / self.particles as f64;
        let centre = 0.1 + 0.8 * step as f64 / (self.steps.max(2) - 1) as f64;
        let d = (x - centre) / self.width;
        (base as f64 * (1.0 + self.bump * (-d * d).exp())).round() as u64
    }
}

impl SteppedWorkload for Sphynx {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn spec(&self) -> String {
        format!(
            "{}:particles={},short-particles={},steps={},bump={},width={}",
            Self::NAME,
            self.particles,
            self.short_particles,
            self.steps,
            self.bump,
            self.width
        )
    }

    fn steps(&self) -> usize {
        self.steps
    }

    fn calls(&self, _step: usize) -> Vec<LoopCall> {
        vec![
            LoopCall {
                name: Self::DENSITY,
                iterations: self.short_particles,
            },
            LoopCall {
                name: Self::DENSITY,
                iterations: self.particles,
            },
            LoopCall {
                name: Self::FORCES,
                iterations: self.particles,
            },
        ]
    }

    fn run(&self, step: usize, call: usize, i: usize) -> f64 {
        assert!(step < self.steps && call < 3 && i < self.particles);
        spin(self.units(step, call, i), i as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_defaults_and_drift() {
        let w = Sphynx::from_spec(&Spec::parse("sphynx").unwrap()).unwrap();
        assert_eq!(
            w.spec(),
            "sphynx:particles=16000,short-particles=8000,steps=100,bump=4,width=0.1"
        );
        let total = |step: usize| (0..16_000).map(|i| w.neighbours(step, i)).sum::<u64>();
        assert_eq!(total(0), 1_322_445);
        assert_eq!(total(50), 1_366_981);
        // The dense region drifts: the heaviest particle moves right.
        let heaviest = |step: usize| {
            (0..16_000)
                .max_by_key(|&i| (w.neighbours(step, i), i))
                .unwrap()
        };
        assert!(heaviest(0) < 3_000 && heaviest(99) > 13_000);
        let calls = w.calls(0);
        assert_eq!(calls[0].name, calls[1].name);
        assert!(calls[0].iterations < calls[1].iterations);
    }
}
