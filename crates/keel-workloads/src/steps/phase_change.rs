//! `phase-change`: a loop whose best schedule changes half-way through the
//! run (the case Auto4OMP's re-selection exists for). For the first
//! `switch` steps its `iterations` are uniform and fine (`fine` spin units
//! each, about 20 ns): any schedule that hands out many chunks pays its
//! per-chunk overhead on every one, and `static` wins. From step `switch`
//! on, the first `head` fraction of the iterations costs `heavy` times
//! more: `static` and `guided`'s first big chunks leave one thread with the
//! whole head, and fine-grained dynamic schedules win. No fixed schedule is
//! best in both phases.

use keel_policy::Spec;

use super::{spin, LoopCall, SteppedWorkload};
use crate::error::WorkloadError;
use crate::params::{count, number};

/// A loop whose best schedule changes mid-run.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseChange {
    iterations: usize,
    steps: usize,
    switch: usize,
    fine: u64,
    head: f64,
    heavy: u64,
}

impl PhaseChange {
    /// The spec name.
    pub const NAME: &'static str = "phase-change";

    /// Builds from `phase-change[:iterations=2000000,steps=100,switch=50,fine=16,head=0.05,heavy=20]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, WorkloadError> {
        spec.check_keys(&["iterations", "steps", "switch", "fine", "head", "heavy"])?;
        let steps = count(spec, "steps", 100, 1, 1 << 20)?;
        Ok(PhaseChange {
            iterations: count(spec, "iterations", 2_000_000, 1, 1 << 30)?,
            steps,
            switch: count(spec, "switch", steps / 2, 0, steps)?,
            fine: count(spec, "fine", 16, 1, 1 << 20)? as u64,
            head: number(spec, "head", 0.05, (0.0, false), 1.0)?,
            heavy: count(spec, "heavy", 20, 1, 1 << 20)? as u64,
        })
    }

    /// Spin units of iteration `i` at `step`.
    pub fn cost(&self, step: usize, i: usize) -> u64 {
        let in_head = (i as f64) < self.head * self.iterations as f64;
        if step >= self.switch && in_head {
            self.fine * self.heavy
        } else {
            self.fine
        }
    }
}

impl SteppedWorkload for PhaseChange {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn spec(&self) -> String {
        format!(
            "{}:iterations={},steps={},switch={},fine={},head={},heavy={}",
            Self::NAME,
            self.iterations,
            self.steps,
            self.switch,
            self.fine,
            self.head,
            self.heavy
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
        assert!(step < self.steps && call == 0 && i < self.iterations);
        spin(self.cost(step, i), i as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_defaults_and_the_switch() {
        let w = PhaseChange::from_spec(&Spec::parse("phase-change").unwrap()).unwrap();
        assert_eq!(
            w.spec(),
            "phase-change:iterations=2000000,steps=100,switch=50,fine=16,head=0.05,heavy=20"
        );
        assert_eq!(w.cost(49, 0), 16);
        assert_eq!(w.cost(50, 0), 320);
        assert_eq!(w.cost(50, 99_999), 320);
        assert_eq!(w.cost(50, 100_000), 16);
        let total = |step: usize| (0..2_000_000).map(|i| w.cost(step, i)).sum::<u64>();
        assert_eq!(total(0), 32_000_000);
        assert_eq!(total(99), 62_400_000);
    }
}
