//! `wavefront`: a sweep over an `m × m` grid in which cell `(r, c)` needs
//! its upper and left neighbours, `(r − 1, c)` and `(r, c − 1)`, as in a
//! Gauss–Seidel sweep, a dynamic-programming table (Smith–Waterman) or a
//! transport sweep. The cells of one anti-diagonal `r + c = d` are
//! independent, so each step runs one loop call per anti-diagonal,
//! `d = 0 … 2m − 2`, of `min(d + 1, 2m − 1 − d)` iterations: 1, 2, …, m,
//! …, 2, 1. Every call is the same loop (`diagonal`), whose iteration count
//! changes from one instance to the next throughout the step, and a cell
//! costs a small fixed `work` spin units, so each instance is balanced but
//! short, and the short ones (a few cells) cannot use two threads at all.
//!
//! Cell `(r, c)` stores `(up + left) / 2 + spin(work)`, where a neighbour
//! off the grid reads the step number (the boundary condition): the values
//! flow along the sweep, so the dependency is real. The grid is a vector of
//! `AtomicU64` written with relaxed stores: within a call each cell is one
//! iteration's alone, and a call reads only the previous diagonal, whose
//! stores the runtime's join of that call ordered before this call's fork.
//! Run out of program order, the values would differ but nothing would be
//! unsound.

use std::sync::atomic::{AtomicU64, Ordering};

use keel_policy::Spec;

use super::{spin, LoopCall, SteppedWorkload};
use crate::error::WorkloadError;
use crate::params::count;

/// An anti-diagonal wavefront sweep.
#[derive(Debug)]
pub struct Wavefront {
    m: usize,
    work: u64,
    steps: usize,
    /// Row-major `m × m` cell values (f64 bits).
    grid: Vec<AtomicU64>,
}

impl Wavefront {
    /// The spec name.
    pub const NAME: &'static str = "wavefront";

    /// The loop's name: every anti-diagonal is an instance of it.
    pub const DIAGONAL: &'static str = "diagonal";

    /// Builds from `wavefront[:m=96,work=200,steps=100]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, WorkloadError> {
        spec.check_keys(&["m", "work", "steps"])?;
        let m = count(spec, "m", 96, 1, 1 << 13)?;
        Ok(Wavefront {
            m,
            work: count(spec, "work", 200, 1, 1 << 20)? as u64,
            steps: count(spec, "steps", 100, 1, 1 << 20)?,
            grid: (0..m * m).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    /// The first row of anti-diagonal `d` (its iteration 0).
    fn first_row(&self, d: usize) -> usize {
        d.saturating_sub(self.m - 1)
    }

    /// Cells on anti-diagonal `d`.
    pub fn cells(&self, d: usize) -> usize {
        assert!(d < 2 * self.m - 1, "diagonal {d} of {}", 2 * self.m - 1);
        (d + 1).min(2 * self.m - 1 - d)
    }

    /// Cell `(r, c)` as last stored.
    pub fn cell(&self, r: usize, c: usize) -> f64 {
        f64::from_bits(self.grid[r * self.m + c].load(Ordering::Relaxed))
    }
}

impl SteppedWorkload for Wavefront {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn spec(&self) -> String {
        format!(
            "{}:m={},work={},steps={}",
            Self::NAME,
            self.m,
            self.work,
            self.steps
        )
    }

    fn steps(&self) -> usize {
        self.steps
    }

    fn calls(&self, _step: usize) -> Vec<LoopCall> {
        (0..2 * self.m - 1)
            .map(|d| LoopCall {
                name: Self::DIAGONAL,
                iterations: self.cells(d),
            })
            .collect()
    }

    fn run(&self, step: usize, d: usize, i: usize) -> f64 {
        assert!(step < self.steps && i < self.cells(d));
        let r = self.first_row(d) + i;
        let c = d - r;
        let boundary = step as f64;
        let up = if r > 0 { self.cell(r - 1, c) } else { boundary };
        let left = if c > 0 { self.cell(r, c - 1) } else { boundary };
        let v = 0.5 * (up + left) + spin(self.work, (r * self.m + c) as u64);
        self.grid[r * self.m + c].store(v.to_bits(), Ordering::Relaxed);
        v
    }

    fn balanced(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sweep(w: &Wavefront, step: usize) -> f64 {
        let mut sum = 0.0;
        for (d, call) in w.calls(step).iter().enumerate() {
            for i in 0..call.iterations {
                sum += w.run(step, d, i);
            }
        }
        sum
    }

    #[test]
    fn golden_defaults_and_the_diagonals() {
        let w = Wavefront::from_spec(&Spec::parse("wavefront").unwrap()).unwrap();
        assert_eq!(w.spec(), "wavefront:m=96,work=200,steps=100");
        let calls = w.calls(0);
        assert_eq!(calls.len(), 191);
        assert!(calls.iter().all(|c| c.name == "diagonal"));
        let counts: Vec<usize> = calls.iter().map(|c| c.iterations).collect();
        assert_eq!(&counts[..3], [1, 2, 3]);
        assert_eq!(counts[95], 96);
        assert_eq!(&counts[188..], [3, 2, 1]);
        assert_eq!(counts.iter().sum::<usize>(), 96 * 96);
        assert_eq!(w.calls(99), calls);
    }

    #[test]
    fn golden_cells_of_a_small_sweep() {
        let w =
            Wavefront::from_spec(&Spec::parse("wavefront:m=4,work=3,steps=2").unwrap()).unwrap();
        let counts: Vec<usize> = w.calls(0).iter().map(|c| c.iterations).collect();
        assert_eq!(counts, [1, 2, 3, 4, 3, 2, 1]);
        // Diagonal 4's first iteration is cell (1, 3): rows start past 0
        // once the diagonal leaves the first row's end.
        assert_eq!(w.first_row(4), 1);
        sweep(&w, 1);
        // Cell (0, 0) at step 1: both neighbours are the boundary, 1.
        assert_eq!(w.cell(0, 0), 1.0 + spin(3, 0));
        assert_eq!(
            w.cell(1, 1),
            0.5 * (w.cell(0, 1) + w.cell(1, 0)) + spin(3, 5)
        );
        // A sweep recomputes every cell from the boundary: the same step
        // twice gives the same grid.
        let once = sweep(&w, 1);
        let corner = w.cell(3, 3);
        assert_eq!(sweep(&w, 1), once);
        assert_eq!(w.cell(3, 3), corner);
        assert!((corner - 6.812_550_937_484_719).abs() < 1e-12, "{corner}");
    }
}
