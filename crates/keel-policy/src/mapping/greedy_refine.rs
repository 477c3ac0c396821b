//! `greedy-refine`: Charm++ TreeLB's GreedyRefine (after the legacy
//! `GreedyRefineLB.C`).
//! A greedy pre-pass gives the bound `M = greedy makespan × tolerance`; then
//! tasks are placed heaviest first exactly as greedy does, except that a task
//! stays on its current PU whenever that keeps the PU at or under `M`. The
//! bound rises if greedy's choice must exceed it, so the result is never
//! worse than `tolerance ×` greedy's makespan by more than one task, and it
//! migrates far fewer tasks than greedy.

use super::refine::DEFAULT_TOLERANCE;
use super::{
    Greedy, LptOrder, Mapping, MappingInput, MappingPolicy, PuHeap, REFINING_REQUIREMENTS,
};
use crate::concept::Requirement;
use crate::context::ContextHandler;
use crate::error::PolicyError;
use crate::spec::{Spec, SpecValue};

/// The greedy-refine policy.
#[derive(Clone, Copy, Debug)]
pub struct GreedyRefine {
    /// Slack over greedy's makespan within which tasks stay home; `>= 1`.
    pub tolerance: f64,
}

impl Default for GreedyRefine {
    fn default() -> Self {
        GreedyRefine {
            tolerance: DEFAULT_TOLERANCE,
        }
    }
}

impl GreedyRefine {
    /// Builds from `greedy-refine[:tolerance=T]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, PolicyError> {
        spec.check_keys(&["tolerance"])?;
        Ok(GreedyRefine {
            tolerance: spec
                .number_at_least("tolerance", 1.0)?
                .unwrap_or(DEFAULT_TOLERANCE),
        })
    }

    /// The decision on validated inputs.
    pub fn decide(&self, input: &MappingInput<'_>) -> Mapping {
        let pus = input.available_pus();
        let order = LptOrder::movable(input.task_loads(), input.migratable());
        let greedy_times = Greedy.times_in_order(input, &order);
        let greedy_makespan = pus.iter().map(|&p| greedy_times[p]).fold(0.0, f64::max);
        let mut bound = greedy_makespan * self.tolerance;

        let (mut placement, times) = input.pinned_start();
        let mut tree = PuHeap::new(times, pus);
        for (task, load) in order.iter() {
            let home = input.current(task).filter(|&p| tree.contains(p));
            let pu = match home {
                Some(p) if tree.time(p) + load / input.speed(p) <= bound => p,
                _ => tree.least(),
            };
            placement[task] = pu;
            tree.add(pu, load / input.speed(pu));
            bound = bound.max(tree.time(pu));
        }
        Mapping::complete(placement, input.npus())
    }
}

impl MappingPolicy for GreedyRefine {
    fn spec(&self) -> Spec {
        let mut spec = Spec::named("greedy-refine");
        spec.params.push((
            "tolerance".into(),
            SpecValue::Token(self.tolerance.to_string()),
        ));
        spec
    }

    fn requirements(&self) -> &[Requirement] {
        REFINING_REQUIREMENTS
    }

    fn map(&self, ctx: &ContextHandler<'_>) -> Result<Mapping, PolicyError> {
        let input = MappingInput::gather("greedy-refine", ctx, self.requirements())?;
        Ok(self.decide(&input))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics;

    fn run(loads: &[f64], npus: usize, current: &[usize], tolerance: f64) -> Vec<usize> {
        let bg = vec![0.0; npus];
        let input = MappingInput::new(loads, &bg)
            .unwrap()
            .with_current(current)
            .unwrap();
        GreedyRefine { tolerance }.decide(&input).into_vec()
    }

    #[test]
    fn keeps_a_greedy_quality_mapping_in_place() {
        // Current mapping is a permutation of greedy's: nothing needs to move.
        let loads = [5.0, 4.0, 3.0, 3.0, 3.0];
        let current = [1, 0, 0, 1, 0];
        assert_eq!(run(&loads, 2, &current, 1.0), current.to_vec());
    }

    #[test]
    fn moves_only_what_exceeds_the_bound() {
        // All on PU 0; greedy makespan 4 (2+2 | 2+2). Two tasks must move.
        let loads = [2.0; 4];
        let map = run(&loads, 2, &[0, 0, 0, 0], 1.0);
        assert_eq!(map, vec![0, 0, 1, 1]);
        assert_eq!(metrics::migrations(&[0, 0, 0, 0], &map), 2);
    }

    #[test]
    fn migrates_no_more_than_greedy_and_stays_near_its_makespan() {
        let loads: Vec<f64> = (0..200).map(|i| 1.0 + ((i * 7919) % 97) as f64).collect();
        let current: Vec<usize> = (0..200).map(|i| i % 8).collect();
        let bg = vec![0.0; 8];
        let input = MappingInput::new(&loads, &bg)
            .unwrap()
            .with_current(&current)
            .unwrap();
        let refined = GreedyRefine::default().decide(&input);
        let greedy = Greedy.decide(&input);
        let mig = |m: &Mapping| metrics::migrations(&current, m.as_slice());
        assert!(
            mig(&refined) < mig(&greedy) / 2,
            "{} vs {}",
            mig(&refined),
            mig(&greedy)
        );
        let span = |m: &Mapping| metrics::evaluate(&input, m).makespan;
        let max_task = loads.iter().cloned().fold(0.0, f64::max);
        assert!(span(&refined) <= span(&greedy) * 1.05 + max_task);
    }
}
