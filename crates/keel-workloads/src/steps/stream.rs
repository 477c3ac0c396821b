//! `stream`: the STREAM triad `a[i] = b[i] + s·c[i]` over `elements`
//! doubles, **one loop iteration per element**, once per step. Balanced by
//! design and memory-bound: every iteration moves the same 24 bytes (two
//! loads, one store) and does one multiply-add, so schedules differ only in
//! what their chunks cost. Where [`gromacs`](super::Gromacs) hands out blocks
//! of 2,048 elements (8,192 coarse iterations), this loop has 2,000,000
//! iterations of a few nanoseconds each, the size Auto4OMP's expert chunk
//! is tuned for (N = 10⁶): a schedule that claims one iteration at a time
//! pays a shared-counter update per element.
//!
//! **Why the store is real.** A triad that only returned `b[i] + s·c[i]` as
//! its checksum would read 16 bytes per element and write nothing, a
//! different (read-only) stream. `a` is a vector of `AtomicU64`, each
//! element written by its iteration alone with a relaxed store: the loop
//! hands each index to one participant, so no two stores meet, and a relaxed
//! store of a `u64` is a plain move (no fence, no locked instruction) on
//! x86-64 and AArch64, so the memory traffic is STREAM's own without an
//! `unsafe` disjointness argument. The checksum is the value stored.
//!
//! The three arrays hold 16 MB each by default (48 MB, beyond the last-level
//! caches here); `s = 3 + step` changes every step so that no two steps
//! store the same values.

use std::sync::atomic::{AtomicU64, Ordering};

use keel_policy::Spec;

use super::{LoopCall, SteppedWorkload};
use crate::error::WorkloadError;
use crate::params::count;

/// The triad's scalar at step 0.
const SCALAR: f64 = 3.0;

/// A per-element STREAM triad.
#[derive(Debug)]
pub struct Stream {
    elements: usize,
    steps: usize,
    a: Vec<AtomicU64>,
    b: Vec<f64>,
    c: Vec<f64>,
}

impl Stream {
    /// The spec name.
    pub const NAME: &'static str = "stream";

    /// Builds from `stream[:elements=2000000,steps=100]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, WorkloadError> {
        spec.check_keys(&["elements", "steps"])?;
        let elements = count(spec, "elements", 2_000_000, 1, 1 << 28)?;
        Ok(Stream {
            elements,
            steps: count(spec, "steps", 100, 1, 1 << 20)?,
            a: (0..elements).map(|_| AtomicU64::new(0)).collect(),
            b: (0..elements).map(|i| (i % 7) as f64).collect(),
            c: (0..elements).map(|i| (i % 5) as f64).collect(),
        })
    }

    /// `a[i]` as last stored (0 before any step ran it).
    pub fn a(&self, i: usize) -> f64 {
        f64::from_bits(self.a[i].load(Ordering::Relaxed))
    }
}

impl SteppedWorkload for Stream {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn spec(&self) -> String {
        format!(
            "{}:elements={},steps={}",
            Self::NAME,
            self.elements,
            self.steps
        )
    }

    fn steps(&self) -> usize {
        self.steps
    }

    fn calls(&self, _step: usize) -> Vec<LoopCall> {
        vec![LoopCall {
            name: Self::NAME,
            iterations: self.elements,
        }]
    }

    #[inline]
    fn run(&self, step: usize, call: usize, i: usize) -> f64 {
        assert!(step < self.steps && call == 0);
        let v = self.b[i] + (SCALAR + step as f64) * self.c[i];
        self.a[i].store(v.to_bits(), Ordering::Relaxed);
        v
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
        let w = Stream::from_spec(&Spec::parse("stream").unwrap()).unwrap();
        assert_eq!(w.spec(), "stream:elements=2000000,steps=100");
        assert_eq!(w.steps(), 100);
        assert_eq!(
            w.calls(0),
            [LoopCall {
                name: "stream",
                iterations: 2_000_000
            }]
        );
        assert_eq!(w.calls(99), w.calls(0));
        // Element 1,999,999: b = 1,999,999 mod 7 = 1, c = mod 5 = 4.
        assert_eq!(w.a(1_999_999), 0.0);
        assert_eq!(w.run(0, 0, 1_999_999), 1.0 + 3.0 * 4.0);
        assert_eq!(w.a(1_999_999), 13.0);
        assert_eq!(w.run(99, 0, 1_999_999), 1.0 + 102.0 * 4.0);
        assert_eq!(w.run(2, 0, 0), 0.0);
        assert_eq!(w.run(2, 0, 13), 6.0 + 5.0 * 3.0);
        let step: f64 = (0..2_000_000).map(|i| w.run(1, 0, i)).sum();
        // Σ (i mod 7) = 285,714·21 + 1, Σ (i mod 5) = 400,000·10.
        assert_eq!(step, 5_999_995.0 + 4.0 * 4_000_000.0);
    }

    #[test]
    #[should_panic]
    fn an_element_past_the_end_panics() {
        let w = Stream::from_spec(&Spec::parse("stream:elements=10").unwrap()).unwrap();
        w.run(0, 0, 10);
    }
}
