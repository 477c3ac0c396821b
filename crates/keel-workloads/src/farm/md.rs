//! `md`: very short uniform tasks, after the CMD molecular-dynamics code of
//! the paper's §III-E.1 (Fig. 11: 68K molecule pairs, one task per pair).
//! Molecules sit at deterministic positions drawn from ChaCha8 with `seed`
//! in a cube of side `box`; task `i` is the Lennard-Jones force between the
//! pair `(i mod m, (i·7 + 1) mod m)` (`m` molecules, σ = ε = 1, cut-off
//! 2.5σ), tens of nanoseconds of arithmetic.
//!
//! Pair `i` is `(i mod m, (i·7 + 1) mod m)`, and a task's force is deterministic:
//!
//! ```
//! use keel_workloads::farm::MdPairs;
//! let md = MdPairs::new(100, 16, 4.0, 1);
//! assert_eq!(md.pair(3), (3, 6));
//! assert_eq!(md.run(3), MdPairs::new(100, 16, 4.0, 1).run(3));
//! ```

use keel_policy::Spec;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::WorkloadError;
use crate::params::{count, number};

/// Default pairs (tasks), the paper's 68K.
pub const DEFAULT_PAIRS: usize = 68_000;
/// Default molecules.
pub const DEFAULT_MOLECULES: usize = 4_096;
/// Default side of the cube.
pub const DEFAULT_BOX: f64 = 16.0;
/// Default seed.
pub const DEFAULT_SEED: u64 = 2015;
/// Lennard-Jones cut-off radius, in σ.
pub const CUTOFF: f64 = 2.5;

/// Pair-force tasks.
#[derive(Clone, Debug, PartialEq)]
pub struct MdPairs {
    /// Number of tasks.
    pub pairs: usize,
    /// Side of the cube.
    pub side: f64,
    /// Seed of the positions.
    pub seed: u64,
    positions: Vec<[f64; 3]>,
}

impl Default for MdPairs {
    /// 68,000 pairs among 4,096 molecules in a cube of side 16, seed 2015.
    fn default() -> Self {
        MdPairs::new(DEFAULT_PAIRS, DEFAULT_MOLECULES, DEFAULT_BOX, DEFAULT_SEED)
    }
}

impl MdPairs {
    /// The workload's name.
    pub const NAME: &'static str = "md";

    /// Draws the molecules.
    ///
    /// # Panics
    /// If `molecules < 2` or `side` is not positive and finite.
    pub fn new(pairs: usize, molecules: usize, side: f64, seed: u64) -> Self {
        assert!(molecules >= 2 && side.is_finite() && side > 0.0);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let positions = (0..molecules)
            .map(|_| {
                [
                    rng.gen::<f64>() * side,
                    rng.gen::<f64>() * side,
                    rng.gen::<f64>() * side,
                ]
            })
            .collect();
        MdPairs {
            pairs,
            side,
            seed,
            positions,
        }
    }

    /// `md[:pairs=68000,molecules=4096,box=16,seed=2015]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, WorkloadError> {
        spec.check_keys(&["pairs", "molecules", "box", "seed"])?;
        Ok(MdPairs::new(
            count(spec, "pairs", DEFAULT_PAIRS, 0, usize::MAX)?,
            count(spec, "molecules", DEFAULT_MOLECULES, 2, 1 << 24)?,
            number(spec, "box", DEFAULT_BOX, (0.0, true), 1e9)?,
            spec.parsed::<u64>("seed", "an integer >= 0")?
                .unwrap_or(DEFAULT_SEED),
        ))
    }

    /// The spec that rebuilds this workload.
    pub fn spec(&self) -> String {
        format!(
            "md:pairs={},molecules={},box={},seed={}",
            self.pairs,
            self.positions.len(),
            self.side,
            self.seed
        )
    }

    /// The molecules of pair `i`.
    pub fn pair(&self, i: usize) -> (usize, usize) {
        let m = self.positions.len();
        let a = i % m;
        let mut b = (i.wrapping_mul(7) + 1) % m;
        if b == a {
            b = (b + 1) % m;
        }
        (a, b)
    }

    /// Task `i`: the x component of the Lennard-Jones force on the pair's
    /// first molecule (0 beyond the cut-off), minimum-image distance.
    pub fn run(&self, i: usize) -> f64 {
        let (a, b) = self.pair(i);
        let (pa, pb) = (self.positions[a], self.positions[b]);
        let mut d = [0.0; 3];
        for k in 0..3 {
            let mut x = pa[k] - pb[k];
            x -= self.side * (x / self.side).round();
            d[k] = x;
        }
        let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        if r2 > CUTOFF * CUTOFF || r2 == 0.0 {
            return 0.0;
        }
        let inv2 = 1.0 / r2;
        let inv6 = inv2 * inv2 * inv2;
        // F = 24ε (2(σ/r)¹² − (σ/r)⁶) / r² · d
        24.0 * inv6 * (2.0 * inv6 - 1.0) * inv2 * d[0]
    }
}
