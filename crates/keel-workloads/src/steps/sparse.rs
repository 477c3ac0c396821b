//! `sparse`: a sparse matrix–vector product `y = A·x` in CSR form, one loop
//! iteration per row, once per step (the inner product of an iterative
//! solver, or one PageRank sweep). Row lengths follow a power law, as the
//! degrees of web and social graphs do: a Pareto draw
//! `⌊min-len · (1 − U)^(−1/alpha)⌋`, capped at `max-len`, with `U` from
//! ChaCha8 seeded with `seed`, one draw per row in row order; each entry's
//! column is a uniform draw from the same stream. With the defaults
//! (`alpha = 1.5`, the degree exponent 2.5 of many scale-free graphs) a row
//! has 11.4 entries on average, the longest 1 % of the rows hold 21.5 % of
//! the entries and the longest 8,762: a few heavy rows scattered among many
//! light ones (`static`'s two halves on two threads differ by only 2.5 % of
//! the entries, so the heavy rows cost `static` little, and what the
//! dynamic schedules gain in balance they may pay in claims),
//! and the gathers from `x` make each entry a memory access whose cost the
//! cache decides.
//!
//! `y` is a vector of `AtomicU64` written with relaxed stores (a plain move
//! on x86-64 and AArch64): each row is one iteration's alone. The checksum
//! is the row's product.

use std::sync::atomic::{AtomicU64, Ordering};

use keel_policy::Spec;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{LoopCall, SteppedWorkload};
use crate::error::WorkloadError;
use crate::params::{count, number};

/// A power-law sparse matrix–vector product.
#[derive(Debug)]
pub struct Sparse {
    rows: usize,
    min_len: usize,
    max_len: usize,
    alpha: f64,
    seed: u64,
    steps: usize,
    /// CSR: row `r` is entries `start[r]..start[r + 1]`.
    start: Vec<usize>,
    columns: Vec<u32>,
    values: Vec<f64>,
    x: Vec<f64>,
    y: Vec<AtomicU64>,
}

impl Sparse {
    /// The spec name.
    pub const NAME: &'static str = "sparse";

    /// Builds from `sparse[:rows=200000,min-len=4,max-len=10000,alpha=1.5,seed=37,steps=100]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, WorkloadError> {
        spec.check_keys(&["rows", "min-len", "max-len", "alpha", "seed", "steps"])?;
        let rows = count(spec, "rows", 200_000, 1, 1 << 24)?;
        let min_len = count(spec, "min-len", 4, 1, rows)?;
        let max_len = count(
            spec,
            "max-len",
            default_max_len(min_len, rows),
            min_len,
            rows,
        )?;
        let alpha = number(spec, "alpha", 1.5, (0.0, true), 100.0)?;
        let seed = count(spec, "seed", 37, 0, usize::MAX)? as u64;
        let steps = count(spec, "steps", 100, 1, 1 << 20)?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut start = Vec::with_capacity(rows + 1);
        let mut columns = Vec::new();
        start.push(0);
        for _ in 0..rows {
            let u: f64 = rng.gen();
            // 1 − U is in (0, 1], so the power is finite and ≥ 1.
            let len = (min_len as f64 * (1.0 - u).powf(-1.0 / alpha)).floor();
            let len = (len as usize).clamp(min_len, max_len);
            columns.extend((0..len).map(|_| rng.gen_range(0..rows as u32)));
            start.push(columns.len());
            if columns.len() > 1 << 28 {
                return Err(spec
                    .invalid("rows", &rows.to_string(), "at most 2^28 entries in all")
                    .into());
            }
        }
        let values = (0..columns.len())
            .map(|k| 1.0 + (k % 8) as f64 / 8.0)
            .collect();
        Ok(Sparse {
            rows,
            min_len,
            max_len,
            alpha,
            seed,
            steps,
            start,
            columns,
            values,
            x: (0..rows).map(|i| 1.0 / (1 + i % 16) as f64).collect(),
            y: (0..rows).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    /// Entries of row `r`.
    pub fn row_len(&self, r: usize) -> usize {
        self.start[r + 1] - self.start[r]
    }

    /// Entries of the whole matrix.
    pub fn entries(&self) -> usize {
        self.columns.len()
    }

    /// `y[r]` as last stored.
    pub fn y(&self, r: usize) -> f64 {
        f64::from_bits(self.y[r].load(Ordering::Relaxed))
    }
}

/// `max-len` when the spec gives none: 10,000 within `min_len..=rows`.
fn default_max_len(min_len: usize, rows: usize) -> usize {
    10_000.clamp(min_len, rows)
}

impl SteppedWorkload for Sparse {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn spec(&self) -> String {
        format!(
            "{}:rows={},min-len={},max-len={},alpha={},seed={},steps={}",
            Self::NAME,
            self.rows,
            self.min_len,
            self.max_len,
            self.alpha,
            self.seed,
            self.steps
        )
    }

    fn steps(&self) -> usize {
        self.steps
    }

    fn calls(&self, _step: usize) -> Vec<LoopCall> {
        vec![LoopCall {
            name: Self::NAME,
            iterations: self.rows,
        }]
    }

    fn run(&self, step: usize, call: usize, r: usize) -> f64 {
        assert!(step < self.steps && call == 0);
        let range = self.start[r]..self.start[r + 1];
        let mut sum = 0.0;
        for (&col, &value) in self.columns[range.clone()].iter().zip(&self.values[range]) {
            sum += value * self.x[col as usize];
        }
        self.y[r].store(sum.to_bits(), Ordering::Relaxed);
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_defaults_and_the_power_law() {
        let w = Sparse::from_spec(&Spec::parse("sparse").unwrap()).unwrap();
        assert_eq!(
            w.spec(),
            "sparse:rows=200000,min-len=4,max-len=10000,alpha=1.5,seed=37,steps=100"
        );
        assert_eq!(w.calls(0)[0].iterations, 200_000);
        assert_eq!(w.calls(99), w.calls(0));
        assert_eq!(w.entries(), GOLDEN_ENTRIES);
        let lens: Vec<usize> = (0..200_000).map(|r| w.row_len(r)).collect();
        assert_eq!(&lens[..8], GOLDEN_FIRST_LENS);
        assert_eq!(lens.iter().copied().max(), Some(GOLDEN_LONGEST));
        assert!(lens.iter().all(|&l| (4..=10_000).contains(&l)));
        // Heavy-tailed: the longest 1 % of rows hold GOLDEN_TOP entries.
        let mut sorted = lens.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let top: usize = sorted[..2000].iter().sum();
        assert_eq!(top, GOLDEN_TOP);
        assert_eq!(w.y(0), 0.0);
        let y0 = w.run(0, 0, 0);
        assert_eq!(w.y(0), y0);
        assert_eq!(y0, GOLDEN_Y0);
        let checksum: f64 = (0..200_000).map(|r| w.run(3, 0, r)).sum();
        assert_eq!(checksum, GOLDEN_CHECKSUM);
    }

    const GOLDEN_ENTRIES: usize = 2_282_928;
    const GOLDEN_FIRST_LENS: [usize; 8] = [9, 11, 10, 6, 19, 4, 9, 5];
    const GOLDEN_LONGEST: usize = 8_762;
    /// 21.5 % of the entries.
    const GOLDEN_TOP: usize = 490_742;
    const GOLDEN_Y0: f64 = 1.621_886_273_448_773_3;
    const GOLDEN_CHECKSUM: f64 = 693_397.814_738_890_6;

    #[test]
    fn a_small_matrix_by_hand() {
        let w =
            Sparse::from_spec(&Spec::parse("sparse:rows=3,min-len=1,alpha=2").unwrap()).unwrap();
        assert!(w.spec().contains("max-len=3"));
        // The default cap: 10,000, at most the columns, never below the
        // least length.
        assert_eq!(default_max_len(4, 200_000), 10_000);
        assert_eq!(default_max_len(1, 3), 3);
        assert_eq!(default_max_len(20_000, 30_000), 20_000);
        for r in 0..3 {
            let by_hand: f64 = (w.start[r]..w.start[r + 1])
                .map(|k| (1.0 + (k % 8) as f64 / 8.0) * w.x[w.columns[k] as usize])
                .sum();
            assert_eq!(w.run(0, 0, r), by_hand);
        }
    }
}
