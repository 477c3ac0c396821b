//! `triangular`: the loop of a triangular solve or of an outer loop over
//! `j > i` pairs: iteration `i` of `n` costs `unit · (n − i)` spin units
//! (dependent multiply-adds, [`spin`]), so the cost falls linearly from the
//! first iteration to the last. On two threads `static`'s first half holds
//! three quarters of the work (makespan 1.5× the ideal); schedules whose
//! chunks shrink (`guided`, factoring) or that hand out small chunks to the
//! end balance it. The same loop runs once per step, unchanged.

use keel_policy::Spec;

use super::{spin, LoopCall, SteppedWorkload};
use crate::error::WorkloadError;
use crate::params::count;

/// A loop with linearly decreasing iteration costs.
#[derive(Clone, Debug, PartialEq)]
pub struct Triangular {
    iterations: usize,
    unit: u64,
    steps: usize,
}

impl Triangular {
    /// The spec name.
    pub const NAME: &'static str = "triangular";

    /// Builds from `triangular[:iterations=3000,unit=1,steps=100]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, WorkloadError> {
        spec.check_keys(&["iterations", "unit", "steps"])?;
        Ok(Triangular {
            iterations: count(spec, "iterations", 3000, 1, 1 << 20)?,
            unit: count(spec, "unit", 1, 1, 1 << 20)? as u64,
            steps: count(spec, "steps", 100, 1, 1 << 20)?,
        })
    }

    /// Spin units of iteration `i`.
    pub fn units(&self, i: usize) -> u64 {
        assert!(i < self.iterations, "iteration {i} of {}", self.iterations);
        self.unit * (self.iterations - i) as u64
    }
}

impl SteppedWorkload for Triangular {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn spec(&self) -> String {
        format!(
            "{}:iterations={},unit={},steps={}",
            Self::NAME,
            self.iterations,
            self.unit,
            self.steps
        )
    }

    fn steps(&self) -> usize {
        self.steps
    }

    fn calls(&self, _step: usize) -> Vec<LoopCall> {
        vec![LoopCall {
            name: Self::NAME,
            iterations: self.iterations,
        }]
    }

    fn run(&self, step: usize, call: usize, i: usize) -> f64 {
        assert!(step < self.steps && call == 0);
        spin(self.units(i), (step * self.iterations + i) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_defaults_and_the_triangle() {
        let w = Triangular::from_spec(&Spec::parse("triangular").unwrap()).unwrap();
        assert_eq!(w.spec(), "triangular:iterations=3000,unit=1,steps=100");
        assert_eq!(w.calls(0)[0].iterations, 3000);
        assert_eq!(w.calls(99), w.calls(0));
        assert_eq!((w.units(0), w.units(1), w.units(2999)), (3000, 2999, 1));
        let total: u64 = (0..3000).map(|i| w.units(i)).sum();
        assert_eq!(total, 3000 * 3001 / 2);
        // Static's first half on two threads over the ideal.
        let first: u64 = (0..1500).map(|i| w.units(i)).sum();
        assert!((first as f64 / (total as f64 / 2.0) - 1.5).abs() < 1e-3);
        assert_eq!(w.run(0, 0, 2999), spin(1, 2999));
        assert_eq!(w.run(1, 0, 0), spin(3000, 3000));
    }
}
