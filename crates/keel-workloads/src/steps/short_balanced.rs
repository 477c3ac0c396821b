//! `short-balanced`: many short balanced loop calls per step, the shape of
//! a solver's inner kernels on a small mesh (a dot product, an AXPY, a
//! small stencil, each a parallel loop of microseconds, hundreds of them per
//! time step). Every call is the same loop (`short`) with the same
//! `iterations`, each iteration `work` spin units: 6,144 units an instance
//! by default, about 10 µs of work on one core here, so that an instance on
//! two threads takes about 10 µs with its fork and join. Those, and
//! whatever a schedule or a selection method does per instance, are a
//! visible part of it, and a schedule that claims many chunks pays per
//! chunk too.

use keel_policy::Spec;

use super::{spin, LoopCall, SteppedWorkload};
use crate::error::WorkloadError;
use crate::params::count;

/// Many short balanced loop calls per step.
#[derive(Clone, Debug, PartialEq)]
pub struct ShortBalanced {
    calls: usize,
    iterations: usize,
    work: u64,
    steps: usize,
}

impl ShortBalanced {
    /// The spec name.
    pub const NAME: &'static str = "short-balanced";

    /// The loop's name: every call of every step is an instance of it.
    pub const SHORT: &'static str = "short";

    /// Builds from `short-balanced[:calls=200,iterations=256,work=24,steps=100]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, WorkloadError> {
        spec.check_keys(&["calls", "iterations", "work", "steps"])?;
        Ok(ShortBalanced {
            calls: count(spec, "calls", 200, 1, 1 << 16)?,
            iterations: count(spec, "iterations", 256, 1, 1 << 24)?,
            work: count(spec, "work", 24, 1, 1 << 20)? as u64,
            steps: count(spec, "steps", 100, 1, 1 << 20)?,
        })
    }
}

impl SteppedWorkload for ShortBalanced {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn spec(&self) -> String {
        format!(
            "{}:calls={},iterations={},work={},steps={}",
            Self::NAME,
            self.calls,
            self.iterations,
            self.work,
            self.steps
        )
    }

    fn steps(&self) -> usize {
        self.steps
    }

    fn calls(&self, _step: usize) -> Vec<LoopCall> {
        vec![
            LoopCall {
                name: Self::SHORT,
                iterations: self.iterations,
            };
            self.calls
        ]
    }

    fn run(&self, step: usize, call: usize, i: usize) -> f64 {
        assert!(step < self.steps && call < self.calls && i < self.iterations);
        spin(self.work, (call * self.iterations + i) as u64)
    }

    fn balanced(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_defaults() {
        let w = ShortBalanced::from_spec(&Spec::parse("short-balanced").unwrap()).unwrap();
        assert_eq!(
            w.spec(),
            "short-balanced:calls=200,iterations=256,work=24,steps=100"
        );
        let calls = w.calls(0);
        assert_eq!(calls.len(), 200);
        assert!(calls.iter().all(|c| *c
            == LoopCall {
                name: "short",
                iterations: 256
            }));
        assert_eq!(w.calls(99), calls);
        assert_eq!(w.run(0, 0, 0), spin(24, 0));
        assert_eq!(w.run(5, 199, 255), spin(24, 199 * 256 + 255));
    }
}
