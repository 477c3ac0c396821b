//! Time-stepping workloads for schedule selection (Auto4OMP §4: the
//! selection methods are judged over the time steps of whole applications,
//! where a loop runs once or more per step and its best schedule may change).
//!
//! A [`SteppedWorkload`] is a program: `steps()` time steps, each a list of
//! loop calls ([`LoopCall`]) run in order, each call a parallel loop whose
//! iteration `i` is performed by [`SteppedWorkload::run`]. A loop is named,
//! so a runtime keys its records (and its selection state) by that name, and
//! the same loop may run more than once per step with different sizes.
//!
//! | name | loops per step | what makes schedules differ |
//! |---|---|---|
//! | [`mandelbrot-zoom`](MandelbrotZoom) | 1 | a zoom into seahorse valley: the heavy columns move and grow step by step |
//! | [`lavamd-steps`](LavaMdSteps) | 1 | exponential particles per box (5³ boxes), few boxes per thread: static's halves differ (1.40× the ideal on 2 threads) |
//! | [`sphynx`](Sphynx) | 3 (`density` twice: short, long; `forces`) | neighbour counts peak in a region that drifts across the particles |
//! | [`gromacs`](Gromacs) | 1 | none by design: a balanced, memory-bound stream (the selection's cost shows) |
//! | [`phase-change`](PhaseChange) | 1 | fine uniform iterations for half the run, then a heavy head: the best schedule changes |
//!
//! Every parameter has a fixed default, chosen before any selection goal was
//! measured and pinned by the golden tests of each file; the bench runs the
//! defaults.
//!
//! A small zoom into the Mandelbrot set: one loop call per step.
//!
//! ```
//! use keel_workloads::steps::stepped_workload;
//! let w = stepped_workload("mandelbrot-zoom:width=16,height=8,max-iter=20,steps=3").unwrap();
//! assert_eq!(w.steps(), 3);
//! let call = &w.calls(0)[0];
//! assert_eq!(call.iterations, 16);
//! assert!(w.run(0, 0, 0) >= 0.0);
//! ```

mod gromacs;
mod lavamd_steps;
mod mandelbrot_zoom;
mod phase_change;
mod sphynx;

pub use gromacs::Gromacs;
pub use lavamd_steps::LavaMdSteps;
pub use mandelbrot_zoom::MandelbrotZoom;
pub use phase_change::PhaseChange;
pub use sphynx::Sphynx;

use keel_policy::Spec;

use crate::error::WorkloadError;

/// One parallel loop call inside a time step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopCall {
    /// The loop's name: the same name in every step is the same loop.
    pub name: &'static str,
    /// Its iterations in this call.
    pub iterations: usize,
}

/// A time-stepping program of parallel loops.
pub trait SteppedWorkload: Send + Sync {
    /// The workload's spec name.
    fn name(&self) -> &'static str;

    /// The spec string that rebuilds exactly this workload.
    fn spec(&self) -> String;

    /// Time steps.
    fn steps(&self) -> usize;

    /// The loop calls of `step`, in program order.
    fn calls(&self, step: usize) -> Vec<LoopCall>;

    /// Performs iteration `i` of call `call` of `step` and returns a
    /// checksum (pass it to `std::hint::black_box`). Deterministic, reads no
    /// clock, callable from any thread.
    ///
    /// # Panics
    /// If the step, call or iteration does not exist.
    fn run(&self, step: usize, call: usize, i: usize) -> f64;

    /// Whether the workload is balanced by design (its schedules differ by
    /// overhead only), so it is exempt from the 20 % discrimination rule.
    fn balanced(&self) -> bool {
        false
    }
}

/// A named stepped workload.
#[derive(Clone, Copy, Debug)]
pub struct SteppedGenerator {
    /// Its kebab-case name.
    pub name: &'static str,
    /// One line saying what it models.
    pub summary: &'static str,
    build: fn(&Spec) -> Result<Box<dyn SteppedWorkload>, WorkloadError>,
}

static STEPPED: [SteppedGenerator; 5] = [
    SteppedGenerator {
        name: MandelbrotZoom::NAME,
        summary: "Mandelbrot per column, zooming into seahorse valley by a fixed factor per step",
        build: |s| Ok(Box::new(MandelbrotZoom::from_spec(s)?)),
    },
    SteppedGenerator {
        name: LavaMdSteps::NAME,
        summary: "LavaMD-like boxes with exponential particle counts (gamma = 0.2), every step",
        build: |s| Ok(Box::new(LavaMdSteps::from_spec(s)?)),
    },
    SteppedGenerator {
        name: Sphynx::NAME,
        summary: "SPHYNX-like: density twice per step (short, long), forces over drifting neighbour counts",
        build: |s| Ok(Box::new(Sphynx::from_spec(s)?)),
    },
    SteppedGenerator {
        name: Gromacs::NAME,
        summary: "GROMACS-like balanced memory-bound stream (a = b + s c over blocks)",
        build: |s| Ok(Box::new(Gromacs::from_spec(s)?)),
    },
    SteppedGenerator {
        name: PhaseChange::NAME,
        summary: "uniform fine-grained iterations, then a heavy head: the best schedule changes mid-run",
        build: |s| Ok(Box::new(PhaseChange::from_spec(s)?)),
    },
];

/// Every stepped workload, in a stable order.
pub fn stepped_generators() -> &'static [SteppedGenerator] {
    &STEPPED
}

/// Builds the stepped workload a spec string names.
pub fn stepped_workload(spec: &str) -> Result<Box<dyn SteppedWorkload>, WorkloadError> {
    let spec = Spec::parse(spec)?;
    let generator = STEPPED
        .iter()
        .find(|g| g.name == spec.name)
        .ok_or_else(|| WorkloadError::UnknownWorkload {
            name: spec.name.clone(),
            valid: STEPPED.iter().map(|g| g.name.to_string()).collect(),
        })?;
    (generator.build)(&spec)
}

/// `units` of dependent floating-point work (a multiply-add chain, about a
/// nanosecond per unit on the machines here), seeded so that no two calls
/// fold into one. The synthetic workloads' unit of cost.
#[inline]
pub fn spin(units: u64, seed: u64) -> f64 {
    let mut x = 1.0 + (seed % 1024) as f64 * 1e-6;
    for _ in 0..units {
        x = x * 0.999_999_9 + 1e-7;
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_errors_and_round_trips() {
        let names: Vec<&str> = stepped_generators().iter().map(|g| g.name).collect();
        assert_eq!(
            names,
            [
                "mandelbrot-zoom",
                "lavamd-steps",
                "sphynx",
                "gromacs",
                "phase-change"
            ]
        );
        assert!(matches!(
            stepped_workload("zoom"),
            Err(WorkloadError::UnknownWorkload { .. })
        ));
        for name in names {
            let w = stepped_workload(name).unwrap();
            let again = stepped_workload(&w.spec()).unwrap();
            assert_eq!(w.spec(), again.spec());
            assert!(w.steps() >= 100, "{name}: {} steps", w.steps());
            for step in [0, w.steps() - 1] {
                assert!(!w.calls(step).is_empty());
            }
            assert!(matches!(
                stepped_workload(&format!("{name}:bogus=1")),
                Err(WorkloadError::UnknownParameter { .. })
            ));
            assert!(stepped_workload(&format!("{name}:steps=0")).is_err());
        }
        assert_eq!(
            stepped_generators()
                .iter()
                .filter(|g| stepped_workload(g.name).unwrap().balanced())
                .count(),
            1
        );
    }

    #[test]
    fn spin_is_deterministic_and_does_the_work() {
        assert_eq!(spin(1000, 3), spin(1000, 3));
        assert_ne!(spin(1000, 3), spin(1001, 3));
        assert_eq!(spin(0, 5), 1.0 + 5e-6);
    }
}
