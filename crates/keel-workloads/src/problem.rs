//! [`MappingProblem`]: the owned inputs of one mapping decision.
//!
//! Contexts keep their data in their own buffers and lend it to a
//! [`ContextHandler`]; a workload has no runtime to own its buffers, so this
//! struct owns them and lends them out the same way.

use keel_policy::{Concept, ContextHandler, MappingInput, Model, Origin, PolicyError, Subject};

/// Task loads, PU loads and the optional concepts of one mapping decision.
///
/// Units follow [`MappingInput`]: a task load is work (its time on a PU of
/// speed 1, in seconds for the built-in generators, in the trace's own unit
/// for traces); a PU load is background time already committed on that PU.
#[derive(Clone, Debug, PartialEq)]
pub struct MappingProblem {
    /// Work of each task.
    pub task_loads: Vec<f64>,
    /// Background time of each PU; its length is the number of PUs.
    pub pu_loads: Vec<f64>,
    /// Relative speed of each PU (1.0 is the reference), if not all equal.
    pub pu_speeds: Option<Vec<f64>>,
    /// Whether each PU may receive work; `None` means all may.
    pub pu_available: Option<Vec<bool>>,
    /// Whether each task may move; `None` means all may.
    pub migratable: Option<Vec<bool>>,
    /// Where each task runs now ([`keel_policy::NO_PU`] for unplaced tasks).
    pub current: Option<Vec<usize>>,
    /// Each task's name in the trace it came from (its `id` or `task`
    /// column), unique; `None` for traces without one and for generated
    /// workloads, whose tasks are named by their index. Policies never see
    /// it: it is carried to the output mapping.
    pub task_ids: Option<Vec<String>>,
    /// How the loads were obtained. Generators describe costs from a model
    /// of the application, so they say [`Model::Static`]; traces hold what a
    /// runtime measured, so they say [`Model::Dynamic`]. Every built-in
    /// mapping policy accepts either ([`Concept::TASK_LOADS`] is `Any`); a
    /// policy that insists on one model sees the difference.
    pub model: Model,
}

impl MappingProblem {
    /// `task_loads` on `npus` idle PUs of equal speed, all available, every
    /// task migratable and unplaced.
    pub fn new(task_loads: Vec<f64>, npus: usize, model: Model) -> Self {
        MappingProblem {
            task_loads,
            pu_loads: vec![0.0; npus],
            pu_speeds: None,
            pu_available: None,
            migratable: None,
            current: None,
            task_ids: None,
            model,
        }
    }

    /// Number of tasks.
    pub fn ntasks(&self) -> usize {
        self.task_loads.len()
    }

    /// Number of PUs, available or not.
    pub fn npus(&self) -> usize {
        self.pu_loads.len()
    }

    /// Sum of the task loads.
    pub fn total_load(&self) -> f64 {
        self.task_loads.iter().sum()
    }

    /// A context handler lending every present concept to a policy, each
    /// registered with [`Origin::Runtime`]: the problem stands in for the
    /// runtime that would have measured it.
    pub fn context(&self) -> ContextHandler<'_> {
        let mut ctx = ContextHandler::new();
        let workload = |subject| Concept::Workload {
            subject,
            model: self.model,
        };
        ctx.provide_values(
            workload(Subject::Tasks),
            Origin::Runtime,
            &self.task_loads[..],
        )
        .provide_values(workload(Subject::Pus), Origin::Runtime, &self.pu_loads[..]);
        if let Some(speeds) = &self.pu_speeds {
            ctx.provide_values(Concept::PuSpeed, Origin::Runtime, &speeds[..]);
        }
        if let Some(available) = &self.pu_available {
            ctx.provide_flags(Concept::PuAvailability, Origin::Runtime, &available[..]);
        }
        if let Some(migratable) = &self.migratable {
            ctx.provide_flags(Concept::TaskMigratable, Origin::Runtime, &migratable[..]);
        }
        if let Some(current) = &self.current {
            ctx.provide_placement(Origin::Runtime, &current[..]);
        }
        ctx
    }

    /// The validated inputs, as every mapping policy sees them; this is also
    /// what [`keel_policy::metrics::evaluate`] needs.
    pub fn input(&self) -> Result<MappingInput<'_>, PolicyError> {
        let mut input = MappingInput::new(&self.task_loads, &self.pu_loads)?;
        if let Some(speeds) = &self.pu_speeds {
            input = input.with_speeds(speeds)?;
        }
        if let Some(available) = &self.pu_available {
            input = input.with_availability(available)?;
        }
        if let Some(current) = &self.current {
            input = input.with_current(current)?;
        }
        // Last: the pinned-task checks need the placement and availability.
        if let Some(migratable) = &self.migratable {
            input = input.with_migratable(migratable)?;
        }
        Ok(input)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use keel_policy::NO_PU;

    #[test]
    fn the_context_lends_every_present_concept_and_nothing_else() {
        let mut problem = MappingProblem::new(vec![1.0, 2.0], 2, Model::Static);
        let ctx = problem.context();
        assert_eq!(ctx.components().len(), 2);
        assert!(ctx.placement("test").unwrap().is_none());
        drop(ctx);

        problem.pu_speeds = Some(vec![1.0, 2.0]);
        problem.pu_available = Some(vec![true, false]);
        problem.migratable = Some(vec![true, true]);
        problem.current = Some(vec![0, NO_PU]);
        let ctx = problem.context();
        assert_eq!(ctx.components().len(), 6);
        assert_eq!(ctx.placement("test").unwrap(), Some(&[0, NO_PU][..]));
        let static_loads = Concept::Workload {
            subject: Subject::Tasks,
            model: Model::Static,
        };
        assert!(ctx.values("test", static_loads).unwrap().is_some());
        assert!(problem.input().is_ok());
    }

    #[test]
    fn input_validates_the_whole_problem() {
        let mut problem = MappingProblem::new(vec![1.0, f64::NAN], 2, Model::Dynamic);
        assert!(matches!(
            problem.input(),
            Err(PolicyError::InvalidNumber { index: 1, .. })
        ));
        problem.task_loads[1] = 1.0;
        problem.migratable = Some(vec![false, true]);
        assert_eq!(
            problem.input().unwrap_err(),
            PolicyError::UnplacedUnmigratable { task: 0 }
        );
        problem.current = Some(vec![1, 0]);
        problem.pu_available = Some(vec![true, false]);
        assert_eq!(
            problem.input().unwrap_err(),
            PolicyError::PinnedToUnavailable { task: 0, pu: 1 }
        );
    }
}
