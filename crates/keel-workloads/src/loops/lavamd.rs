//! `lavamd`: a LavaMD-like loop with an exponential cost per box, after the
//! configuration of the ARTful paper (§5.2.2), which recreates Penna et al.'s BinLPT experiments: "113 cubes"
//! (11³ boxes; the superscript was lost in the text) each holding "a random
//! number of particles generated through an exponential distribution with
//! γ = 0.2".
//!
//! **What γ means here.** The papers do not define it. Their benchmark
//! repository (ECLScheduling/MOGSLib-libgomp-benchmark, `random/rng.cpp`,
//! input `exp_02-*.workload`) draws the per-box numbers with C++'s
//! `std::exponential_distribution(γ)`, rounded to the nearest integer, so γ
//! is the **rate** λ of the exponential: density `γ·e^{−γx}`, mean `1/γ` = 5,
//! standard deviation 5; a box gets 0 with probability `1 − e^{−γ/2}` ≈ 9.5 %.
//! Keel does the same: `units = round(−ln(1 − U)/γ)` with `U` uniform in
//! `[0, 1)` from ChaCha8 seeded with `seed`, one draw per box in box order.
//!
//! **Boxes and cost.** Boxes are numbered `l = x + y·B + z·B²` on a
//! `B × B × B` grid (`B = boxes1d`), as in Rodinia's LavaMD. Box `l` holds
//! `n_l = units_l × particles-per-unit` particles (LavaMD's `NPARTICLES`
//! multiplier) and has `nn_l` neighbours: the boxes at offsets in
//! `{−1, 0, 1}³ ∖ {0}` that lie inside the grid (no wrap-around; 7 to 26).
//! Penna's kernel visits, for the home box and each neighbour, `n_l × n_l`
//! particle pairs, and its BinLPT workload hint is `n_l²·(nn_l + 1)`; that is
//! this workload's exact work per iteration, in pair interactions.
//!
//! **The body.** [`LavaMd::run`] performs those interactions: for each of the
//! `nn_l + 1` boxes `b` (home first), every home particle `i < n_l` meets the
//! `n_l` particles that start at `b`'s first particle in the global particle
//! array (wrapping around it; Penna's kernel reads the same window without
//! the wrap), with LavaMD's force law (`r² = v_i + v_j − r_i·r_j`,
//! `u² = α²r²`, `v = e^{−u²}`, `f += q_j·(v, 2v·d)`, α = 0.5). Particle data
//! are drawn once, like LavaMD's `kernel_init`, as multiples of 0.1 in
//! `[0.1, 1]`. The forces are summed locally and returned as a checksum.
//!
//! The heavy boxes are scattered (unlike Mandelbrot's band), and a box's
//! cost grows with the *square* of an exponential draw: a few boxes dominate.
//!
//! A 2×2×2 grid of boxes: one cost per box, each box with all seven others as neighbours.
//!
//! ```
//! use keel_workloads::loops::lavamd::LavaMd;
//! let lava = LavaMd::new(2, 0.2, 10, 1);
//! assert_eq!(lava.units().len(), 8);
//! assert_eq!(lava.neighbour_count(0), 7);
//! ```

use keel_policy::Spec;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::LoopWorkload;
use crate::error::WorkloadError;
use crate::params::{count, number};

/// LavaMD's α.
pub const ALPHA: f64 = 0.5;

/// The largest grid side (so that a typo does not allocate the world).
pub const MAX_BOXES1D: usize = 64;

/// The most particles per unit.
pub const MAX_PARTICLES_PER_UNIT: usize = 100;

/// The default rate γ of the exponential (the ARTful paper's).
pub const DEFAULT_GAMMA: f64 = 0.2;

/// A LavaMD-like box loop.
#[derive(Clone, Debug, PartialEq)]
pub struct LavaMd {
    /// Boxes along each axis `B`; the loop has `B³` iterations.
    pub boxes1d: usize,
    /// Rate of the exponential number of units per box (mean `1/γ`).
    pub gamma: f64,
    /// Particles per unit (LavaMD's `NPARTICLES`).
    pub particles_per_unit: usize,
    /// Seed of the draws.
    pub seed: u64,
    /// Units drawn per box.
    units: Vec<u64>,
    /// First particle of each box in the global array.
    offset: Vec<usize>,
    /// Neighbours of each box (home excluded), as box numbers.
    neighbours: Vec<Vec<u32>>,
    /// Particle positions `(v, x, y, z)` and charges.
    position: Vec<[f64; 4]>,
    charge: Vec<f64>,
    work: Vec<u64>,
}

impl Default for LavaMd {
    /// 11³ boxes, γ = 0.2, 2 particles per unit, seed 2019.
    fn default() -> Self {
        LavaMd::new(11, DEFAULT_GAMMA, 2, 2019)
    }
}

impl LavaMd {
    /// The workload's name.
    pub const NAME: &'static str = "lavamd";

    /// Draws the boxes and particles.
    ///
    /// # Panics
    /// If `boxes1d` is 0 or above [`MAX_BOXES1D`], `gamma` is not a positive
    /// finite number, or `particles_per_unit` is 0 or above
    /// [`MAX_PARTICLES_PER_UNIT`]; [`LavaMd::from_spec`] reports these as
    /// errors instead.
    pub fn new(boxes1d: usize, gamma: f64, particles_per_unit: usize, seed: u64) -> Self {
        assert!((1..=MAX_BOXES1D).contains(&boxes1d));
        assert!(gamma.is_finite() && gamma > 0.0);
        assert!((1..=MAX_PARTICLES_PER_UNIT).contains(&particles_per_unit));
        let b = boxes1d;
        let nboxes = b * b * b;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let units: Vec<u64> = (0..nboxes)
            .map(|_| {
                let u: f64 = rng.gen();
                // Inverse CDF of Exp(γ); 1 − U is in (0, 1], so ln is finite.
                (-(1.0 - u).ln() / gamma).round() as u64
            })
            .collect();
        let mut offset = Vec::with_capacity(nboxes);
        let mut total = 0usize;
        for &u in &units {
            offset.push(total);
            total += u as usize * particles_per_unit;
        }
        let neighbours: Vec<Vec<u32>> = (0..nboxes)
            .map(|l| {
                let (x, y, z) = (l % b, (l / b) % b, l / (b * b));
                let mut near = Vec::with_capacity(26);
                for dz in -1i64..=1 {
                    for dy in -1i64..=1 {
                        for dx in -1i64..=1 {
                            if (dx, dy, dz) == (0, 0, 0) {
                                continue;
                            }
                            let (nx, ny, nz) = (x as i64 + dx, y as i64 + dy, z as i64 + dz);
                            let inside = |c: i64| (0..b as i64).contains(&c);
                            if inside(nx) && inside(ny) && inside(nz) {
                                near.push((nx + ny * b as i64 + nz * (b * b) as i64) as u32);
                            }
                        }
                    }
                }
                near
            })
            .collect();
        // LavaMD's kernel_init: (rand() % 10 + 1) / 10 for every field.
        let mut tenth = || f64::from(rng.gen_range(1u8..=10)) / 10.0;
        let position: Vec<[f64; 4]> = (0..total)
            .map(|_| [tenth(), tenth(), tenth(), tenth()])
            .collect();
        let charge: Vec<f64> = (0..total).map(|_| tenth()).collect();
        let work = units
            .iter()
            .zip(&neighbours)
            .map(|(&u, near)| {
                let n = u * particles_per_unit as u64;
                n * n * (near.len() as u64 + 1)
            })
            .collect();
        LavaMd {
            boxes1d,
            gamma,
            particles_per_unit,
            seed,
            units,
            offset,
            neighbours,
            position,
            charge,
            work,
        }
    }

    /// Builds from `lavamd[:boxes1d=B,gamma=G,particles-per-unit=K,seed=S]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, WorkloadError> {
        spec.check_keys(&["boxes1d", "gamma", "particles-per-unit", "seed"])?;
        let d = (11, DEFAULT_GAMMA, 2, 2019);
        Ok(LavaMd::new(
            count(spec, "boxes1d", d.0, 1, MAX_BOXES1D)?,
            number(spec, "gamma", d.1, (0.0, true), f64::MAX)?,
            count(spec, "particles-per-unit", d.2, 1, MAX_PARTICLES_PER_UNIT)?,
            spec.parsed::<u64>("seed", "an integer in 0..=18446744073709551615")?
                .unwrap_or(d.3),
        ))
    }

    /// Units drawn for each box (particles are `units × particles_per_unit`).
    pub fn units(&self) -> &[u64] {
        &self.units
    }

    /// Number of in-grid neighbours of box `l` (home excluded).
    pub fn neighbour_count(&self, l: usize) -> usize {
        self.neighbours[l].len()
    }

    /// Particles in box `l`.
    pub fn particles(&self, l: usize) -> usize {
        self.units[l] as usize * self.particles_per_unit
    }

    /// Computes the forces on box `l`'s particles; returns their sum and
    /// the number of pair interactions computed.
    fn forces(&self, l: usize) -> (f64, u64) {
        let n = self.particles(l);
        let total = self.position.len();
        let mut pairs = 0u64;
        if n == 0 {
            return (0.0, pairs);
        }
        let home = &self.position[self.offset[l]..self.offset[l] + n];
        let mut sum = 0.0;
        for b in std::iter::once(l as u32).chain(self.neighbours[l].iter().copied()) {
            let first = self.offset[b as usize];
            for a in home {
                let mut f = [0.0f64; 4];
                for j in 0..n {
                    // first < total and j < n <= total: one subtraction wraps.
                    let mut k = first + j;
                    if k >= total {
                        k -= total;
                    }
                    let (r, q) = (&self.position[k], self.charge[k]);
                    let r2 = a[0] + r[0] - (a[1] * r[1] + a[2] * r[2] + a[3] * r[3]);
                    let u2 = ALPHA * ALPHA * r2;
                    let v = (-u2).exp();
                    let fs = 2.0 * v;
                    f[0] += q * v;
                    f[1] += q * fs * (a[1] - r[1]);
                    f[2] += q * fs * (a[2] - r[2]);
                    f[3] += q * fs * (a[3] - r[3]);
                }
                pairs += n as u64;
                sum += f[0] + f[1] + f[2] + f[3];
            }
        }
        (sum, pairs)
    }
}

impl LoopWorkload for LavaMd {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn spec(&self) -> String {
        format!(
            "{}:boxes1d={},gamma={},particles-per-unit={},seed={}",
            Self::NAME,
            self.boxes1d,
            self.gamma,
            self.particles_per_unit,
            self.seed
        )
    }

    fn unit(&self) -> &'static str {
        "particle-pair interactions"
    }

    fn work(&self) -> &[u64] {
        &self.work
    }

    fn run(&self, i: usize) -> f64 {
        self.forces(i).0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbours_are_those_inside_the_grid() {
        let m = LavaMd::new(3, 0.2, 1, 1);
        assert_eq!(m.neighbour_count(0), 7); // a corner
        assert_eq!(m.neighbour_count(1), 11); // an edge
        assert_eq!(m.neighbour_count(4), 17); // a face
        assert_eq!(m.neighbour_count(13), 26); // the centre
        let one = LavaMd::new(1, 0.2, 1, 1);
        assert_eq!(one.neighbour_count(0), 0);
    }

    #[test]
    fn work_is_particles_squared_times_boxes_visited() {
        let m = LavaMd::new(4, 0.2, 3, 7);
        for l in 0..64 {
            let n = m.particles(l) as u64;
            assert_eq!(m.work()[l], n * n * (m.neighbour_count(l) as u64 + 1));
        }
    }

    /// The body performs exactly `work` pair interactions (it counts the
    /// inner loop's trips as it goes).
    #[test]
    fn the_body_computes_exactly_the_modelled_pairs() {
        let m = LavaMd::new(3, 0.2, 2, 5);
        for l in 0..27 {
            let n = m.particles(l) as u64;
            let (f, pairs) = m.forces(l);
            assert_eq!(pairs, m.work()[l], "box {l}");
            assert!(f.is_finite());
            assert_eq!(f == 0.0, n == 0, "box {l}");
            assert_eq!(m.run(l).to_bits(), f.to_bits(), "deterministic");
        }
    }

    #[test]
    fn units_follow_the_exponential_with_rate_gamma() {
        // 32³ draws: the sample mean of Exp(0.2) rounded is 5 ± 0.03 (3 σ).
        let m = LavaMd::new(32, 0.2, 1, 11);
        let u = m.units();
        let mean = u.iter().sum::<u64>() as f64 / u.len() as f64;
        assert!((mean - 5.0).abs() < 0.06, "mean {mean}");
        let zeros = u.iter().filter(|&&x| x == 0).count() as f64 / u.len() as f64;
        let expected = 1.0 - (-0.1f64).exp(); // P(X < 0.5)
        assert!((zeros - expected).abs() < 0.01, "zeros {zeros}");
        let fast = LavaMd::new(16, 1.0, 1, 11);
        let mean1 = fast.units().iter().sum::<u64>() as f64 / 4096.0;
        assert!((mean1 - 1.0).abs() < 0.1, "mean {mean1}");
    }

    /// Golden values of the default workload: retuning it must be on purpose.
    #[test]
    fn golden_default() {
        let m = crate::loops::loop_workload("lavamd").unwrap();
        assert_eq!(
            m.spec(),
            "lavamd:boxes1d=11,gamma=0.2,particles-per-unit=2,seed=2019"
        );
        assert_eq!(m.iterations(), 1331);
        let w = m.work();
        for (box_, work) in GOLDEN_BOXES {
            assert_eq!(w[box_], work, "box {box_}");
        }
        assert_eq!(m.total_work(), GOLDEN_TOTAL);
        assert_eq!(m.work().iter().max().copied(), Some(GOLDEN_MAX));
    }

    const GOLDEN_BOXES: [(usize, u64); 5] =
        [(0, 2048), (1, 1200), (100, 0), (665, 972), (1330, 5408)];
    const GOLDEN_TOTAL: u64 = 5_514_552;
    const GOLDEN_MAX: u64 = 124_848;
}
