//! `ramp`: loads growing linearly with the task index, so the heavy work is
//! contiguous at the end — a triangular loop (`for i { for j < i }`), where
//! OpenMP's `static` leaves the last thread with most of the work.

use keel_policy::Spec;

use super::{check_keys, count, number, pus, Start, MAX_TASKS, SECONDS_PER_US};
use crate::error::WorkloadError;
use crate::MappingProblem;

/// A linear ramp of loads.
#[derive(Clone, Debug, PartialEq)]
pub struct Ramp {
    /// Number of tasks.
    pub tasks: usize,
    /// Number of PUs.
    pub pus: usize,
    /// Load of the first task, µs.
    pub min_us: f64,
    /// Load of the last task, µs.
    pub max_us: f64,
    /// The mapping the tasks start from.
    pub start: Start,
}

impl Default for Ramp {
    fn default() -> Self {
        Ramp {
            tasks: 10_000,
            pus: 16,
            min_us: 1.0,
            max_us: 1000.0,
            start: Start::Block,
        }
    }
}

impl Ramp {
    /// The generator's name.
    pub const NAME: &'static str = "ramp";

    /// Builds from `ramp[:tasks=N,pus=P,min-us=A,max-us=B,current=...]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, WorkloadError> {
        check_keys(spec, &["tasks", "min-us", "max-us"])?;
        let d = Ramp::default();
        Ok(Ramp {
            tasks: count(spec, "tasks", d.tasks, 0, MAX_TASKS)?,
            pus: pus(spec, d.pus)?,
            min_us: number(spec, "min-us", d.min_us, 0.0, f64::INFINITY)?,
            max_us: number(spec, "max-us", d.max_us, 0.0, f64::INFINITY)?,
            start: Start::from_spec(spec, Start::Block)?,
        })
    }

    /// The loads, in seconds.
    pub fn loads(&self) -> Vec<f64> {
        let last = self.tasks.saturating_sub(1).max(1) as f64;
        (0..self.tasks)
            .map(|i| {
                let us = self.min_us + (self.max_us - self.min_us) * i as f64 / last;
                us * SECONDS_PER_US
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
    fn the_ramp_runs_from_min_to_max() {
        let ramp = Ramp {
            tasks: 5,
            min_us: 1.0,
            max_us: 5.0,
            ..Ramp::default()
        };
        let us: Vec<f64> = ramp.loads().iter().map(|l| (l * 1e6).round()).collect();
        assert_eq!(us, vec![1.0, 2.0, 3.0, 4.0, 5.0]);
        let one = Ramp { tasks: 1, ..ramp };
        assert_eq!(one.loads().len(), 1);
    }
}
