//! `gromacs`: a balanced, memory-bound loop (Auto4OMP §4's GROMACS-like
//! case, where every schedule is about as good and only overhead differs):
//! a STREAM triad `a = b + s·c` over `elements` doubles, one loop iteration
//! per block of `block` elements, once per step. Three arrays of 128 MB by
//! default, far beyond the caches, so the loop streams from memory.

use std::sync::atomic::{AtomicU64, Ordering};

use keel_policy::Spec;

use super::{LoopCall, SteppedWorkload};
use crate::error::WorkloadError;
use crate::params::count;

/// The triad's scalar.
const SCALAR: f64 = 3.0;

/// A balanced memory-bound stream.
#[derive(Debug)]
pub struct Gromacs {
    elements: usize,
    block: usize,
    steps: usize,
    /// Written by the loop: each iteration writes only its own block, so
    /// relaxed atomics (plain moves on x86) make the sharing sound.
    a: Vec<AtomicU64>,
    b: Vec<f64>,
    c: Vec<f64>,
}

impl Gromacs {
    /// The spec name.
    pub const NAME: &'static str = "gromacs";

    /// Builds from `gromacs[:elements=16777216,block=2048,steps=100]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, WorkloadError> {
        spec.check_keys(&["elements", "block", "steps"])?;
        let elements = count(spec, "elements", 1 << 24, 1, 1 << 28)?;
        let block = count(spec, "block", 2048, 1, elements)?;
        Ok(Gromacs {
            elements,
            block,
            steps: count(spec, "steps", 100, 1, 1 << 20)?,
            a: (0..elements).map(|_| AtomicU64::new(0)).collect(),
            b: (0..elements).map(|i| (i % 7) as f64).collect(),
            c: (0..elements).map(|i| (i % 5) as f64).collect(),
        })
    }
}

impl SteppedWorkload for Gromacs {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn spec(&self) -> String {
        format!(
            "{}:elements={},block={},steps={}",
            Self::NAME,
            self.elements,
            self.block,
            self.steps
        )
    }

    fn steps(&self) -> usize {
        self.steps
    }

    fn calls(&self, _step: usize) -> Vec<LoopCall> {
        vec![LoopCall {
            name: Self::NAME,
            iterations: self.elements.div_ceil(self.block),
        }]
    }

    fn run(&self, step: usize, call: usize, i: usize) -> f64 {
        assert!(step < self.steps && call == 0);
        let from = i * self.block;
        let to = (from + self.block).min(self.elements);
        assert!(
            from < to,
            "block {i} of {}",
            self.elements.div_ceil(self.block)
        );
        let s = SCALAR + step as f64;
        for j in from..to {
            self.a[j].store((self.b[j] + s * self.c[j]).to_bits(), Ordering::Relaxed);
        }
        f64::from_bits(self.a[to - 1].load(Ordering::Relaxed))
    }

    fn balanced(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_defaults_and_the_triad() {
        let w = Gromacs::from_spec(&Spec::parse("gromacs").unwrap()).unwrap();
        assert_eq!(w.spec(), "gromacs:elements=16777216,block=2048,steps=100");
        assert_eq!(w.calls(0)[0].iterations, 8192);
        let small =
            Gromacs::from_spec(&Spec::parse("gromacs:elements=10,block=4").unwrap()).unwrap();
        assert_eq!(small.calls(0)[0].iterations, 3);
        // Element 9: b = 2, c = 4, s = 3 + step.
        assert_eq!(small.run(1, 0, 2), 2.0 + 4.0 * 4.0);
    }
}
