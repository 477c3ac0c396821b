//! The SPHYNX-like loop L1 at the Auto4OMP paper's scale (Fig. 1:
//! N = 1,000,000 iterations, P = 20): `keel_workloads`' `sphynx-forces`
//! loop, whose iteration `i` costs `neighbours(step, i)` ×
//! [`FORCES_UNITS`] spin units. In the paper L0 runs twice per time step
//! and L1 once; Keel's SPHYNX-like program calls `sphynx-density` twice per
//! step and `sphynx-forces` once, so L1 is the forces loop.
//!
//! Every parameter is fixed here and pinned by the golden test below, before
//! any curve was measured: 1,000,000 particles, 20 time steps (the dense
//! region drifts from x = 0.1 to 0.9 over them), the bathtub at step 0.
//!
//! One cost per particle at the calibrated spin unit:
//!
//! ```
//! use keel_sim::loops::sphynx_l1::{SphynxL1, BATHTUB_STEP, PARTICLES};
//! let costs = SphynxL1::new().costs(BATHTUB_STEP, 1e-9).unwrap();
//! assert_eq!(costs.len(), PARTICLES as u64);
//! assert!(costs.total() > 0.0);
//! ```

use keel_policy::Spec;
use keel_workloads::steps::Sphynx;

use super::costs::IterationCosts;
use crate::error::SimError;

/// Iterations of L1 (the paper's N).
pub const PARTICLES: usize = 1_000_000;

/// Time steps of the selection experiment.
pub const STEPS: usize = 20;

/// The step whose instance the bathtub curve sweeps.
pub const BATHTUB_STEP: usize = 0;

/// Spin units per neighbour in the forces loop: `keel_workloads`'
/// `sphynx::FORCES_UNITS` (a private constant there; the golden test pins
/// the total so that a change on either side is seen).
pub const FORCES_UNITS: u64 = 16;

/// SPHYNX-like L1.
#[derive(Debug, Clone)]
pub struct SphynxL1 {
    sphynx: Sphynx,
}

impl Default for SphynxL1 {
    fn default() -> Self {
        Self::new()
    }
}

impl SphynxL1 {
    /// The pinned configuration.
    pub fn new() -> Self {
        let spec = Spec::parse(&Self::spec()).expect("the pinned spec parses");
        SphynxL1 {
            sphynx: Sphynx::from_spec(&spec).expect("the pinned spec is valid"),
        }
    }

    /// The `keel_workloads` spec of the program L1 belongs to.
    pub fn spec() -> String {
        format!("sphynx:particles={PARTICLES},short-particles=8000,steps={STEPS},bump=4,width=0.1")
    }

    /// Spin units of every iteration at `step`.
    pub fn units(&self, step: usize) -> Vec<u64> {
        (0..PARTICLES)
            .map(|i| self.sphynx.neighbours(step, i) * FORCES_UNITS)
            .collect()
    }

    /// Costs in seconds at `seconds_per_unit` (the calibrated spin unit).
    pub fn costs(&self, step: usize, seconds_per_unit: f64) -> Result<IterationCosts, SimError> {
        IterationCosts::from_units(&self.units(step), seconds_per_unit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_parameters() {
        let l1 = SphynxL1::new();
        assert_eq!(
            SphynxL1::spec(),
            "sphynx:particles=1000000,short-particles=8000,steps=20,bump=4,width=0.1"
        );
        let first = l1.units(BATHTUB_STEP);
        assert_eq!(first.len(), 1_000_000);
        let total: u64 = first.iter().sum();
        let last: u64 = l1.units(STEPS - 1).iter().sum();
        // Pinned once from this code; any change to the workload shows here.
        assert_eq!((total, last), (GOLDEN_TOTAL_FIRST, GOLDEN_TOTAL_LAST));
    }

    const GOLDEN_TOTAL_FIRST: u64 = 1_322_489_264;
    const GOLDEN_TOTAL_LAST: u64 = 1_322_486_480;
}
