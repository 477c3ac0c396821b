//! `leanmd`: the compute objects of LeanMD, the Lennard-Jones mini-app that
//! mimics NAMD's short-range forces (nikela/leanmd, a Charm++ benchmark).
//!
//! Space is a periodic `x × y × z` grid of cells. Cell `id = cx + cy·x +
//! cz·x·y` holds `100 + id·150 / (x·y·z)` particles (integer division, as in
//! LeanMD's `Cell` constructor): the designed imbalance grows linearly with
//! the cell id. With `KAWAY = (2, 2, 1)` each cell sees a 5×5×3 block of 75
//! cells, itself included, and owns the 38 computes of LeanMD's
//! `createComputes` (neighbour numbers 37..75): one for its own particles
//! and 37 pairing it with a neighbour at a lexicographically later offset,
//! wrapping around the grid. Grids smaller than 5×5×3 pair some cells twice,
//! as LeanMD does.
//!
//! A compute's load is its number of particle-pair interactions times
//! `ns-per-pair` (default [`DEFAULT_NS_PER_PAIR`]): `n₁·n₂` for two cells,
//! `n·(n−1)/2` for a cell with itself (LeanMD's self compute visits each
//! unordered pair once). Tasks are ordered by owning cell, then by neighbour
//! number, so the heavy computes sit at the end like a ramp.

use keel_policy::Spec;

use super::{check_keys, count, number, pus, Start, MAX_TASKS};
use crate::error::WorkloadError;
use crate::MappingProblem;

/// Particles in cell 0 (LeanMD's `PARTICLES_PER_CELL_START`).
pub const PARTICLES_START: usize = 100;
/// The bound particle counts approach at the last cell (`PARTICLES_PER_CELL_END`).
pub const PARTICLES_END: usize = 250;
/// Neighbour reach in cells along x, y, z (LeanMD's `KAWAY_X/Y/Z`).
pub const KAWAY: [usize; 3] = [2, 2, 1];
/// Computes each cell owns: half of the 75 neighbour slots, plus itself.
pub const COMPUTES_PER_CELL: usize = 38;
/// Cost of one Lennard-Jones pair interaction, ns. About 20 floating-point
/// operations with a cutoff test; 10 ns puts a 175×175-particle compute near
/// 0.3 ms, the grain LeanMD is run at. Only ratios matter to a mapping.
pub const DEFAULT_NS_PER_PAIR: f64 = 10.0;

/// A LeanMD grid.
#[derive(Clone, Debug, PartialEq)]
pub struct LeanMd {
    /// Cells along x.
    pub x: usize,
    /// Cells along y.
    pub y: usize,
    /// Cells along z.
    pub z: usize,
    /// Number of PUs.
    pub pus: usize,
    /// Cost of one pair interaction, ns.
    pub ns_per_pair: f64,
    /// The mapping the computes start from.
    pub start: Start,
}

impl Default for LeanMd {
    fn default() -> Self {
        LeanMd {
            x: 8,
            y: 8,
            z: 8,
            pus: 64,
            ns_per_pair: DEFAULT_NS_PER_PAIR,
            start: Start::Block,
        }
    }
}

impl LeanMd {
    /// The generator's name.
    pub const NAME: &'static str = "leanmd";

    /// Builds from `leanmd[:x=X,y=Y,z=Z,pus=P,ns-per-pair=C,current=...]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, WorkloadError> {
        check_keys(spec, &["x", "y", "z", "ns-per-pair"])?;
        let d = LeanMd::default();
        let max_cells = MAX_TASKS / COMPUTES_PER_CELL;
        let leanmd = LeanMd {
            x: count(spec, "x", d.x, 1, max_cells)?,
            y: count(spec, "y", d.y, 1, max_cells)?,
            z: count(spec, "z", d.z, 1, max_cells)?,
            pus: pus(spec, d.pus)?,
            ns_per_pair: number(spec, "ns-per-pair", d.ns_per_pair, 0.0, f64::INFINITY)?,
            start: Start::from_spec(spec, Start::Block)?,
        };
        let cells = leanmd
            .x
            .checked_mul(leanmd.y)
            .and_then(|c| c.checked_mul(leanmd.z));
        if cells.is_none_or(|c| c > max_cells) {
            let dims = format!("{}x{}x{}", leanmd.x, leanmd.y, leanmd.z);
            let expected = format!("at most {max_cells} cells ({MAX_TASKS} computes) in all");
            return Err(spec.invalid("x", &dims, &expected).into());
        }
        Ok(leanmd)
    }

    /// Number of cells.
    pub fn cells(&self) -> usize {
        self.x * self.y * self.z
    }

    /// Particles in cell `id`.
    pub fn particles(&self, id: usize) -> usize {
        PARTICLES_START + id * (PARTICLES_END - PARTICLES_START) / self.cells()
    }

    /// Each compute's `(owning cell, partner cell)`, in task order.
    pub fn computes(&self) -> Vec<(usize, usize)> {
        let dims = [self.x, self.y, self.z];
        let nbrs = KAWAY.map(|k| 2 * k + 1);
        let slots = nbrs[0] * nbrs[1] * nbrs[2];
        let mut computes = Vec::with_capacity(self.cells() * COMPUTES_PER_CELL);
        for id in 0..self.cells() {
            let cell = [id % self.x, (id / self.x) % self.y, id / (self.x * self.y)];
            for num in slots / 2..slots {
                let slot = [
                    num / (nbrs[1] * nbrs[2]),
                    (num % (nbrs[1] * nbrs[2])) / nbrs[2],
                    num % nbrs[2],
                ];
                // offset = slot - KAWAY; wrap with + KAWAY·dim to stay unsigned.
                let partner: [usize; 3] = std::array::from_fn(|d| {
                    (cell[d] + slot[d] + KAWAY[d] * dims[d] - KAWAY[d]) % dims[d]
                });
                let partner_id = partner[0] + partner[1] * self.x + partner[2] * self.x * self.y;
                computes.push((id, partner_id));
            }
        }
        computes
    }

    /// Each compute's load, in seconds.
    pub fn loads(&self) -> Vec<f64> {
        let seconds_per_pair = self.ns_per_pair * 1e-9;
        self.computes()
            .into_iter()
            .map(|(a, b)| {
                let (na, nb) = (self.particles(a) as f64, self.particles(b) as f64);
                let pairs = if a == b {
                    na * (na - 1.0) / 2.0
                } else {
                    na * nb
                };
                pairs * seconds_per_pair
            })
            .collect()
    }

    /// The mapping problem.
    pub fn problem(&self) -> Result<MappingProblem, WorkloadError> {
        self.start.problem(self.loads(), None, self.pus)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cell_owns_38_computes_and_every_neighbour_pair_appears_once() {
        let md = LeanMd::default();
        let computes = md.computes();
        assert_eq!(computes.len(), 512 * COMPUTES_PER_CELL);
        // On a grid of at least 5×5×3 each unordered pair of cells within
        // reach is computed exactly once, and each cell computes itself once.
        let mut seen = std::collections::HashSet::new();
        for &(a, b) in &computes {
            assert!(seen.insert((a.min(b), a.max(b))), "pair {a},{b} twice");
        }
        let selfs = computes.iter().filter(|(a, b)| a == b).count();
        assert_eq!(selfs, 512);
        // Each cell takes part in 1 self compute and 74 pair computes.
        let mut degree = vec![0; 512];
        for &(a, b) in &computes {
            degree[a] += 1;
            if a != b {
                degree[b] += 1;
            }
        }
        assert!(degree.iter().all(|&d| d == 75));
    }

    #[test]
    fn particle_counts_grow_from_100_toward_250() {
        let md = LeanMd::default();
        assert_eq!(md.particles(0), 100);
        assert_eq!(md.particles(511), 100 + 511 * 150 / 512);
        assert!(md.particles(511) < 250);
    }
}
