//! `lavamd-steps`: the LavaMD-like box loop of [`crate::loops::LavaMd`]
//! (exponential particles per box, rate γ = 0.2, the ARTful paper's §5.2.2
//! configuration) run once per time step, as LavaMD's time loop does. The
//! boxes do not change between steps; what a selection method must find is
//! a schedule that copes with a few very heavy boxes scattered among light
//! ones, on a grid small enough that `static`'s two halves differ.

use keel_policy::Spec;

use super::{LoopCall, SteppedWorkload};
use crate::error::WorkloadError;
use crate::loops::{lavamd, LavaMd, LoopWorkload};
use crate::params::{count, number};

/// LavaMD's box loop over time steps.
#[derive(Clone, Debug, PartialEq)]
pub struct LavaMdSteps {
    boxes: LavaMd,
    steps: usize,
}

impl LavaMdSteps {
    /// The spec name.
    pub const NAME: &'static str = "lavamd-steps";

    /// Builds from `lavamd-steps[:boxes1d=6,gamma=0.2,particles-per-unit=4,seed=2019,steps=100]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, WorkloadError> {
        spec.check_keys(&["boxes1d", "gamma", "particles-per-unit", "seed", "steps"])?;
        let boxes1d = count(spec, "boxes1d", 6, 1, lavamd::MAX_BOXES1D)?;
        let gamma = number(spec, "gamma", lavamd::DEFAULT_GAMMA, (0.0, true), 1e6)?;
        let ppu = count(
            spec,
            "particles-per-unit",
            4,
            1,
            lavamd::MAX_PARTICLES_PER_UNIT,
        )?;
        let seed = count(spec, "seed", 2019, 0, usize::MAX)? as u64;
        Ok(LavaMdSteps {
            boxes: LavaMd::new(boxes1d, gamma, ppu, seed),
            steps: count(spec, "steps", 100, 1, 1 << 20)?,
        })
    }

    /// The box loop (its exact work per box, and the body).
    pub fn boxes(&self) -> &LavaMd {
        &self.boxes
    }
}

impl SteppedWorkload for LavaMdSteps {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn spec(&self) -> String {
        let inner = self.boxes.spec();
        let params = inner.split_once(':').map_or("", |(_, p)| p);
        format!("{}:{params},steps={}", Self::NAME, self.steps)
    }

    fn steps(&self) -> usize {
        self.steps
    }

    fn calls(&self, _step: usize) -> Vec<LoopCall> {
        vec![LoopCall {
            name: Self::NAME,
            iterations: self.boxes.iterations(),
        }]
    }

    fn run(&self, step: usize, call: usize, i: usize) -> f64 {
        assert!(step < self.steps && call == 0);
        self.boxes.run(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_defaults() {
        let w = LavaMdSteps::from_spec(&Spec::parse("lavamd-steps").unwrap()).unwrap();
        assert_eq!(
            w.spec(),
            "lavamd-steps:boxes1d=6,gamma=0.2,particles-per-unit=4,seed=2019,steps=100"
        );
        let work = w.boxes().work();
        assert_eq!(work.len(), 216);
        assert_eq!(work.iter().sum::<u64>(), 2_832_352);
        // Static's two halves differ: the point of the small grid.
        let (a, b) = work.split_at(108);
        let (a, b) = (a.iter().sum::<u64>() as f64, b.iter().sum::<u64>() as f64);
        assert!((a - b).abs() / a.max(b) > 0.1, "{a} vs {b}");
    }
}
