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
//! | [`stream`](Stream) | 1 | none by design: a STREAM triad, one iteration per element (2·10⁶), memory-bound; per-chunk costs show |
//! | [`triangular`](Triangular) | 1 | iteration `i` of `n` costs `n − i`: `static`'s first half holds ¾ of the work |
//! | [`wavefront`](Wavefront) | 2m − 1 (`diagonal`) | none within an instance; one loop whose iteration count climbs 1 … m and falls back every step |
//! | [`short-balanced`](ShortBalanced) | 200 (`short`) | none by design: instances of about 10 µs, so per-instance and per-chunk costs are the difference |
//! | [`sparse`](Sparse) | 1 | SpMV rows of power-law lengths (fixed-seed draws): a few heavy rows scattered among light ones |
//! | [`multi-loop`](MultiLoop) | 3 (`mandel`, `tasks`, `triad`) | contiguous heavy Mandelbrot rows, Pareto task costs, a balanced triad: each loop its own best schedule |
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
mod multi_loop;
mod phase_change;
mod short_balanced;
mod sparse;
mod sphynx;
mod stream;
mod triangular;
mod wavefront;

pub use gromacs::Gromacs;
pub use lavamd_steps::LavaMdSteps;
pub use mandelbrot_zoom::MandelbrotZoom;
pub use multi_loop::MultiLoop;
pub use phase_change::PhaseChange;
pub use short_balanced::ShortBalanced;
pub use sparse::Sparse;
pub use sphynx::Sphynx;
pub use stream::Stream;
pub use triangular::Triangular;
pub use wavefront::Wavefront;

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

static STEPPED: [SteppedGenerator; 11] = [
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
    SteppedGenerator {
        name: Stream::NAME,
        summary: "STREAM triad a = b + s c, one iteration per element (2,000,000): balanced, memory-bound",
        build: |s| Ok(Box::new(Stream::from_spec(s)?)),
    },
    SteppedGenerator {
        name: Triangular::NAME,
        summary: "iteration i of n costs n - i units of dependent multiply-adds",
        build: |s| Ok(Box::new(Triangular::from_spec(s)?)),
    },
    SteppedGenerator {
        name: Wavefront::NAME,
        summary: "anti-diagonal sweep of an m x m grid: one loop call per diagonal, 1 .. m .. 1 cells",
        build: |s| Ok(Box::new(Wavefront::from_spec(s)?)),
    },
    SteppedGenerator {
        name: ShortBalanced::NAME,
        summary: "hundreds of short balanced loop calls per step (about 10 us each on 2 threads)",
        build: |s| Ok(Box::new(ShortBalanced::from_spec(s)?)),
    },
    SteppedGenerator {
        name: Sparse::NAME,
        summary: "SpMV over CSR rows of power-law lengths (fixed-seed Pareto draws)",
        build: |s| Ok(Box::new(Sparse::from_spec(s)?)),
    },
    SteppedGenerator {
        name: MultiLoop::NAME,
        summary: "three loops per step: Mandelbrot rows (heavy first), Pareto-cost tasks, a balanced triad",
        build: |s| Ok(Box::new(MultiLoop::from_spec(s)?)),
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
                "phase-change",
                "stream",
                "triangular",
                "wavefront",
                "short-balanced",
                "sparse",
                "multi-loop"
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
            // Every call of every step has iterations: a loop of none runs
            // nothing, yet it would count as an instance of its loop in a
            // selection's record and in the bench's per-instance times.
            for step in 0..w.steps() {
                let calls = w.calls(step);
                assert!(!calls.is_empty(), "{name}, step {step}");
                assert!(
                    calls.iter().all(|c| c.iterations > 0),
                    "{name}, step {step}: {calls:?}"
                );
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
                .map(|g| g.name)
                .collect::<Vec<_>>(),
            ["gromacs", "stream", "wavefront", "short-balanced"]
        );
    }

    #[test]
    fn spin_is_deterministic_and_does_the_work() {
        assert_eq!(spin(1000, 3), spin(1000, 3));
        assert_ne!(spin(1000, 3), spin(1001, 3));
        assert_eq!(spin(0, 5), 1.0 + 5e-6);
    }
}
