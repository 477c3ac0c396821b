//! Object workloads: over-decomposed applications for `keel::objects`
//! (Charm++ + OpenMP paper, §4.4, §5; Charm++'s `lb_test` benchmark and
//! LLNL's Lassen proxy). Each describes, per object and step,
//! work done serially in the step and work done by the object's
//! potential-task loop over its cells, in spin units
//! ([`crate::steps::spin`]); [`run_units`] performs it. Deterministic, no
//! clock, no sleeping.
//!
//! | name | objects | load |
//! |---|---|---|
//! | [`lassen`](LassenLike) | a 2-D grid of domains, 16 per PU (8 × 4 for 2 PUs), block-mapped | 50 µs base per step, plus 2 ms over the cells while a circular front from corner (0, 0), crossing the grid in 300 steps, is within one domain |
//! | [`persistent`](HotBand) | the same grid | 50 µs base, plus 2 ms for the domains of a band of a quarter of the rows that stays on the first rows |
//! | [`drift`](HotBand) | the same grid | the band slides down half the grid over the run |
//! | [`phase`](HotBand) | the same grid | the band on the first rows for half the run, then on the last |
//! | [`lb-test`](LbTestObjects) | a ring or a 2-D mesh | `min + (max − min)·U⁴` µs in [10 µs, 3 ms], re-drawn half-way between balancing steps (every 40) |
//! | [`stencil`](Stencil) | 16 sub-matrices (the paper's Fig. 2) | balanced: every object the same rows of work |
//!
//! Every default is pinned by the golden tests of each file.
//!
//! Every workload is over-decomposed: more objects than PUs.
//!
//! ```
//! use keel_workloads::objects::{object_workload, units_for_us};
//! let w = object_workload("stencil").unwrap();
//! assert!(w.objects() > w.pus());
//! assert_eq!(object_workload(&w.spec()).unwrap().spec(), w.spec());
//! assert_eq!(units_for_us(2.0), 600);
//! ```

mod band;
mod lassen;
mod lb_test;
mod stencil;

pub use band::{HotBand, Motion};
pub use lassen::LassenLike;
pub use lb_test::{LbTestObjects, Topology};
pub use stencil::Stencil;

use keel_policy::Spec;

use crate::error::WorkloadError;

/// Spin units per microsecond: [`crate::steps::spin`] is a chain of
/// dependent multiply-adds, about 8 cycles a unit; 300 units is about a
/// microsecond on the 2.4–3 GHz cores here. Fixed, so that the work is the
/// same everywhere; the benches measure the time it takes.
pub const UNITS_PER_US: f64 = 300.0;

/// Performs `units` spin units; returns a checksum to `black_box`.
#[inline]
pub fn run_units(units: u64, seed: u64) -> f64 {
    crate::steps::spin(units, seed)
}

/// Spin units for `us` microseconds of work.
pub fn units_for_us(us: f64) -> u64 {
    (us * UNITS_PER_US).round() as u64
}

/// An over-decomposed application: objects, steps, and each object's work.
pub trait ObjectWorkload: Send + Sync {
    /// The canonical spec.
    fn spec(&self) -> String;
    /// Number of objects.
    fn objects(&self) -> usize;
    /// Number of PUs it is sized for.
    fn pus(&self) -> usize;
    /// Steps in a run.
    fn steps(&self) -> usize;
    /// The balancing period the application asks for, if any.
    fn period(&self) -> Option<usize>;
    /// Units `object` does serially in `step` (outside its potential task).
    fn serial_units(&self, object: usize, step: usize) -> u64;
    /// Cells the object's potential-task loop visits.
    fn cells(&self, object: usize) -> usize;
    /// Units of `cell` of `object` in `step`.
    fn cell_units(&self, object: usize, step: usize, cell: usize) -> u64;
    /// Neighbouring objects (the communication pattern; informational).
    fn neighbours(&self, object: usize) -> Vec<usize>;
    /// Every unit of `object` in `step`.
    fn units(&self, object: usize, step: usize) -> u64 {
        self.serial_units(object, step)
            + (0..self.cells(object))
                .map(|c| self.cell_units(object, step, c))
                .sum::<u64>()
    }
    /// Every unit of the whole run.
    fn total_units(&self) -> u64 {
        (0..self.steps())
            .map(|s| (0..self.objects()).map(|o| self.units(o, s)).sum::<u64>())
            .sum()
    }
}

/// The object workloads' names.
pub const NAMES: [&str; 6] = [
    "lassen",
    "persistent",
    "drift",
    "phase",
    "lb-test",
    "stencil",
];

/// The workloads whose balancing should and should not pay, for the
/// invocation benches: a heavy region that stays, one that drifts slowly,
/// one that jumps once, and `lassen`'s front that crosses the grid in the
/// run.
pub const INVOCATION_WORKLOADS: [&str; 4] = ["persistent", "drift", "phase", "lassen"];

/// Builds an object workload from its spec, e.g. `lassen:pus=2`,
/// `lb-test:topology=mesh`, `stencil:pus=2,scale=0.1`.
pub fn object_workload(spec: &str) -> Result<Box<dyn ObjectWorkload>, WorkloadError> {
    let spec = Spec::parse(spec)?;
    match spec.name.as_str() {
        "lassen" => Ok(Box::new(LassenLike::from_spec(&spec)?)),
        "persistent" => Ok(Box::new(HotBand::from_spec(Motion::Persistent, &spec)?)),
        "drift" => Ok(Box::new(HotBand::from_spec(Motion::Drift, &spec)?)),
        "phase" => Ok(Box::new(HotBand::from_spec(Motion::Phase, &spec)?)),
        "lb-test" => Ok(Box::new(LbTestObjects::from_spec(&spec)?)),
        "stencil" => Ok(Box::new(Stencil::from_spec(&spec)?)),
        other => Err(WorkloadError::UnknownWorkload {
            name: other.to_string(),
            valid: NAMES.iter().map(|s| s.to_string()).collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_errors() {
        for name in NAMES {
            let w = object_workload(name).unwrap();
            let again = object_workload(&w.spec()).unwrap();
            assert_eq!(w.spec(), again.spec());
            assert!(w.objects() > w.pus(), "{name}: over-decomposed");
            assert!(matches!(
                object_workload(&format!("{name}:bogus=1")),
                Err(WorkloadError::UnknownParameter { .. })
            ));
        }
        assert!(matches!(
            object_workload("lassen2"),
            Err(WorkloadError::UnknownWorkload { .. })
        ));
        assert_eq!(units_for_us(2.0), 600);
        assert_eq!(run_units(10, 1), run_units(10, 1));
    }
}
