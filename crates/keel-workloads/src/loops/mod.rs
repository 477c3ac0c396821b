//! Loop workloads: parallel loops whose iterations cost different amounts,
//! with the exact cost of every iteration *and* a body that performs it.
//!
//! The generators in [`generate`](mod@crate::generate) only describe costs. A loop
//! schedule, though, is judged by running it (Auto4OMP measures `T_par` and
//! LIB on real loops), so each workload here also carries
//! [`LoopWorkload::run`]: a deterministic busy computation whose amount of
//! work is exactly [`LoopWorkload::work`] units for that iteration (no
//! sleeping, no clock). The cost model and the body are the same code path,
//! so the model is exact by construction and the tests check it.
//!
//! | name | iterations | unit | imbalance |
//! |---|---|---|---|
//! | [`mandelbrot`](Mandelbrot) | image columns (or rows) | escape-time iterations | heavy band contiguous: the cardioid's columns (the middle rows) |
//! | [`lavamd`](LavaMd) | boxes of a 3-D grid | particle-pair interactions | exponential particles per box, scattered |
//!
//! Built from spec strings with the policies' grammar, e.g.
//! `mandelbrot:width=256,height=256,max-iter=1000,axis=columns`, `lavamd:boxes1d=11,gamma=0.2`;
//! every parameter has a fixed, documented default that the golden tests at
//! the bottom of each file pin.
//!
//! ```
//! use keel_workloads::loops::loop_workload;
//! let w = loop_workload("mandelbrot:width=32,height=16,max-iter=50").unwrap();
//! assert_eq!(w.iterations(), 32); // one iteration per pixel column
//! // The body does exactly the work the model says.
//! assert_eq!(w.run(7), w.work()[7] as f64);
//! ```

pub mod lavamd;
pub mod mandelbrot;

pub use lavamd::LavaMd;
pub use mandelbrot::{Axis, Mandelbrot};

use keel_policy::Spec;

use crate::error::WorkloadError;

/// A loop whose iteration `i` costs `work()[i]` units and is performed by
/// `run(i)`.
pub trait LoopWorkload: Send + Sync {
    /// The workload's spec name (`mandelbrot`, `lavamd`).
    fn name(&self) -> &'static str;

    /// The spec string that rebuilds exactly this workload, every parameter
    /// spelled out.
    fn spec(&self) -> String;

    /// What one unit of work is, e.g. `escape-time iterations`.
    fn unit(&self) -> &'static str;

    /// Number of iterations of the loop.
    fn iterations(&self) -> usize {
        self.work().len()
    }

    /// The exact work of every iteration, in [`LoopWorkload::unit`]s.
    fn work(&self) -> &[u64];

    /// Total work of the loop.
    fn total_work(&self) -> u64 {
        self.work().iter().sum()
    }

    /// Performs iteration `i` and returns a checksum of its result (return
    /// it through `std::hint::black_box` so that the work is not optimised
    /// away). Deterministic; reads no clock; safe to call from any thread.
    ///
    /// # Panics
    /// If `i >= self.iterations()`.
    fn run(&self, i: usize) -> f64;
}

/// A named loop workload.
#[derive(Clone, Copy, Debug)]
pub struct LoopGenerator {
    /// Its kebab-case name.
    pub name: &'static str,
    /// One line saying what it models.
    pub summary: &'static str,
    /// Its parameters with their defaults.
    pub params: &'static str,
    build: fn(&Spec) -> Result<Box<dyn LoopWorkload>, WorkloadError>,
}

impl LoopGenerator {
    /// Builds the workload `spec` describes; `spec.name` is not checked.
    pub fn build(&self, spec: &Spec) -> Result<Box<dyn LoopWorkload>, WorkloadError> {
        (self.build)(spec)
    }
}

static LOOP_GENERATORS: [LoopGenerator; 3] = [
    LoopGenerator {
        name: Mandelbrot::NAME,
        summary: "Mandelbrot escape time, one iteration per pixel column (or row); the columns through the cardioid are a heavy contiguous band",
        params: "width=256, height=256, max-iter=1000, x-min=-2, x-max=0.5, y-min=-1.25, y-max=1.25, axis=columns",
        build: |s| Ok(Box::new(Mandelbrot::from_spec(s)?)),
    },
    LoopGenerator {
        name: Mandelbrot::EDGE_NAME,
        summary: "the Mandelbrot loop by rows over the upper half-plane: row 0 is the real axis, so the costly rows are contiguous at the start of the range",
        params: "width=128, height=1000, max-iter=500, x-min=-2, x-max=0.5, y-min=0, y-max=1.25, axis=rows",
        build: |s| Ok(Box::new(Mandelbrot::from_spec_with(s, &mandelbrot::EDGE_VIEW)?)),
    },
    LoopGenerator {
        name: LavaMd::NAME,
        summary: "LavaMD-like: one iteration per box, particles per box exponential (rate gamma), cost n^2 (neighbours + 1)",
        params: "boxes1d=11, gamma=0.2, particles-per-unit=2, seed=2019",
        build: |s| Ok(Box::new(LavaMd::from_spec(s)?)),
    },
];

/// Every loop workload, in a stable order.
pub fn loop_generators() -> &'static [LoopGenerator] {
    &LOOP_GENERATORS
}

/// Builds the loop workload named by a spec string.
pub fn loop_workload(spec: &str) -> Result<Box<dyn LoopWorkload>, WorkloadError> {
    let spec = Spec::parse(spec)?;
    LOOP_GENERATORS
        .iter()
        .find(|g| g.name == spec.name)
        .ok_or_else(|| WorkloadError::UnknownWorkload {
            name: spec.name.clone(),
            valid: LOOP_GENERATORS.iter().map(|g| g.name.to_string()).collect(),
        })?
        .build(&spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parameters_and_errors() {
        let names: Vec<&str> = loop_generators().iter().map(|g| g.name).collect();
        assert_eq!(names, ["mandelbrot", "mandelbrot-edge", "lavamd"]);
        let err = loop_workload("mandel").err().unwrap();
        assert_eq!(
            err.to_string(),
            "unknown workload `mandel`; valid names: mandelbrot, mandelbrot-edge, lavamd"
        );
        for bad in [
            "mandelbrot:width=0",
            "mandelbrot:max-iter=0",
            "mandelbrot:x-min=1,x-max=0",
            "mandelbrot:y-max=nan",
            "mandelbrot:axis=diagonal",
            "lavamd:boxes1d=0",
            "lavamd:gamma=0",
            "lavamd:gamma=-1",
            "lavamd:particles-per-unit=0",
            "lavamd:seed=x",
        ] {
            let err = loop_workload(bad).err().unwrap();
            assert!(
                matches!(err, WorkloadError::InvalidParameter { .. }),
                "{bad}: {err}"
            );
            assert!(err.to_string().contains("expected"), "{bad}: {err}");
        }
        let err = loop_workload("lavamd:colour=red").err().unwrap();
        assert!(
            matches!(err, WorkloadError::UnknownParameter { .. }),
            "{err}"
        );
    }

    #[test]
    fn specs_round_trip() {
        for spec in [
            "mandelbrot:width=40,height=24,max-iter=64",
            "lavamd:boxes1d=3",
        ] {
            let w = loop_workload(spec).unwrap();
            let again = loop_workload(&w.spec()).unwrap();
            assert_eq!(w.work(), again.work(), "{spec} -> {}", w.spec());
            assert_eq!(w.spec(), again.spec());
        }
    }
}
