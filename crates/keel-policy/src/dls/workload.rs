//! Workload-aware loop schedules: the mapping policies `binlpt` and `greedy`
//! run as loop schedules from per-iteration workload hints the user passes
//! (ARTful paper §5.1.3 and §5.3.2; BinLPT's `omp_set_workload`).
//!
//! The iterations are the tasks and the threads the PUs: the *same* registry
//! policy object `keel map` builds maps them, through a context handler that
//! offers the hints as the task workload. The result is an [`Assignment`]:
//! each thread's contiguous iteration ranges, in iteration order. Computing
//! it is the expensive part (a sort, or BinLPT's cut), and iterative codes run
//! the same loop with the same hints many times, so the context computes it
//! once with [`WorkloadSchedule::assign`], keeps it, and offers it back as
//! the [`Concept::IterationAssignment`] component to every later instance
//! until the hints or the team change — the paper's *multiloop* support.
//! [`LoopSchedule::plan`] then only borrows it: a plan per instance costs
//! nothing, and each thread walks its own ranges without touching a shared
//! counter (a static claim).
//!
//! The chunk parameter keeps its Conventions meaning, a *minimum* chunk:
//! with `k`, blocks of `k` consecutive iterations (hints summed) are the
//! tasks, so no range is shorter than `k` except the loop's last. BinLPT's
//! own `K` is its `chunks` key (`binlpt:chunks=80`), as in `keel map`; by
//! default one chunk per thread.

use std::sync::Arc;

use crate::concept::{Concept, Model, Origin, Requirement, Subject};
use crate::context::ContextHandler;
use crate::error::PolicyError;
use crate::mapping::{self, MappingPolicy};
use crate::spec::{Spec, SpecValue};

pub use crate::assignment::Assignment;

use super::{Chunk, Claim, LoopSchedule, LoopShape, Plan, Rule};

/// The mapping policies that double as loop schedules.
pub const WORKLOAD_SCHEDULES: [&str; 2] = ["binlpt", "greedy"];

/// The user's per-iteration hints (any model: predictions or measurements).
const HINTS: Requirement = Requirement::required(Concept::TASK_LOADS);
const ASSIGNMENT: Requirement = Requirement::optional(Concept::IterationAssignment);

/// `binlpt` or `greedy` as a loop schedule, wrapping the registry policy.
#[derive(Debug)]
pub struct WorkloadSchedule {
    name: &'static str,
    policy: Box<dyn MappingPolicy>,
    chunk: Option<u64>,
}

impl WorkloadSchedule {
    /// Builds from `binlpt[:chunks=K,cut=..,chunk=k]` or `greedy[:chunk=k]`:
    /// `chunk` is the loop's minimum chunk, every other key goes to the
    /// mapping policy of the same name.
    pub fn from_spec(spec: &Spec) -> Result<Self, PolicyError> {
        let name = WORKLOAD_SCHEDULES
            .iter()
            .copied()
            .find(|n| *n == spec.name)
            .ok_or_else(|| PolicyError::UnknownPolicy {
                family: "workload-aware loop schedule",
                name: spec.name.clone(),
                valid: WORKLOAD_SCHEDULES.iter().map(|s| s.to_string()).collect(),
            })?;
        let mut policy_spec = Spec::named(name);
        let mut chunk = None;
        for (key, value) in &spec.params {
            if key == "chunk" {
                chunk = Some(positive_chunk(spec, value)?);
            } else {
                policy_spec.params.push((key.clone(), value.clone()));
            }
        }
        let policy = mapping::registry().build_spec(&policy_spec)?;
        Ok(WorkloadSchedule {
            name,
            policy,
            chunk,
        })
    }

    /// The minimum chunk from the spec (`chunk=k`), if any.
    pub fn chunk(&self) -> Option<u64> {
        self.chunk
    }

    /// The assignment of `shape`'s iterations to its threads from the
    /// hints in `ctx` (the task workload, one value per iteration), made by
    /// the mapping policy through a nested context handler.
    pub fn assign(
        &self,
        shape: &LoopShape,
        ctx: &ContextHandler<'_>,
    ) -> Result<Assignment, PolicyError> {
        let hints = ctx.require_values(self.name, Concept::TASK_LOADS)?;
        if hints.len() as u64 != shape.iterations {
            return Err(PolicyError::LengthMismatch {
                concept: Concept::TASK_LOADS,
                expected: usize::try_from(shape.iterations).unwrap_or(usize::MAX),
                found: hints.len(),
                unit: "iterations",
            });
        }
        let block = shape.chunk.or(self.chunk).unwrap_or(1).max(1);
        let blocks: Vec<f64> = if block == 1 {
            hints.to_vec()
        } else {
            hints
                .chunks(block as usize)
                .map(|b| b.iter().sum())
                .collect()
        };
        let idle = vec![0.0; shape.threads];
        let mut inner = ContextHandler::new();
        inner
            .provide_values(
                Concept::Workload {
                    subject: Subject::Tasks,
                    model: Model::Static,
                },
                Origin::User,
                &blocks[..],
            )
            .provide_values(
                Concept::Workload {
                    subject: Subject::Pus,
                    model: Model::Static,
                },
                Origin::Runtime,
                &idle[..],
            );
        let mapping = self.policy.map(&inner)?;
        Assignment::from_blocks(mapping.as_slice(), block, shape.iterations, shape.threads)
    }
}

fn positive_chunk(spec: &Spec, value: &SpecValue) -> Result<u64, PolicyError> {
    let text = match value {
        SpecValue::Token(t) => t.clone(),
        SpecValue::Nested(nested) => format!("({nested})"),
    };
    text.parse::<u64>()
        .ok()
        .filter(|&k| k >= 1)
        .ok_or_else(|| PolicyError::InvalidParameter {
            policy: spec.name.clone(),
            key: "chunk".to_string(),
            value: text,
            expected: "an integer >= 1".to_string(),
        })
}

impl LoopSchedule for WorkloadSchedule {
    fn spec(&self) -> Spec {
        let mut spec = self.policy.spec();
        if let Some(k) = self.chunk {
            spec.params
                .push(("chunk".to_string(), SpecValue::Token(k.to_string())));
        }
        spec
    }

    fn requirements(&self) -> &[Requirement] {
        &[HINTS, ASSIGNMENT]
    }

    fn plan<'a>(
        &self,
        shape: &LoopShape,
        ctx: &'a ContextHandler<'_>,
    ) -> Result<Plan<'a>, PolicyError> {
        let assignment = ctx.require_assignment(self.name)?;
        if assignment.iterations() != shape.iterations || assignment.threads() != shape.threads {
            return Err(PolicyError::MalformedComponent {
                policy: self.name.to_string(),
                component: Concept::IterationAssignment.label().to_string(),
                problem: format!(
                    "made for {} iterations on {} threads, but the loop has {} on {}",
                    assignment.iterations(),
                    assignment.threads(),
                    shape.iterations,
                    shape.threads
                ),
            });
        }
        Ok(Plan::Assigned(Assigned { assignment }))
    }

    fn as_workload(&self) -> Option<&WorkloadSchedule> {
        Some(self)
    }
}

/// The plan of a workload-aware schedule: each thread walks its ranges.
#[derive(Clone, Copy, Debug)]
pub struct Assigned<'a> {
    assignment: &'a Assignment,
}

impl Rule for Assigned<'_> {
    fn claim(&self) -> Claim {
        Claim::Static
    }

    fn static_block(&self, thread: usize, round: u64) -> Option<Chunk> {
        let round = usize::try_from(round).ok()?;
        self.assignment.thread_ranges(thread).get(round).cloned()
    }
}

/// Shares an assignment between a context's cache and its plans.
pub type SharedAssignment = Arc<Assignment>;

#[cfg(test)]
mod tests {
    use super::*;

    const HINTS: Concept = Concept::Workload {
        subject: Subject::Tasks,
        model: Model::Static,
    };

    fn assign(spec: &str, hints: &[f64], threads: usize, chunk: Option<u64>) -> Assignment {
        let schedule = WorkloadSchedule::from_spec(&spec.parse().unwrap()).unwrap();
        let shape = LoopShape::new(hints.len() as u64, threads, chunk).unwrap();
        let mut ctx = ContextHandler::new();
        ctx.provide_values(HINTS, Origin::User, hints);
        schedule.assign(&shape, &ctx).unwrap()
    }

    fn covered_once(a: &Assignment) {
        let mut seen = vec![0u32; a.iterations() as usize];
        for t in 0..a.threads() {
            for r in a.thread_ranges(t) {
                for i in r.clone() {
                    seen[i as usize] += 1;
                }
            }
        }
        assert!(seen.iter().all(|&c| c == 1), "{a:?}");
    }

    #[test]
    fn greedy_gives_the_heavy_iteration_a_thread_of_its_own() {
        let a = assign("greedy", &[1.0, 1.0, 6.0, 1.0, 1.0, 1.0, 1.0], 2, None);
        covered_once(&a);
        let owner = (0..2)
            .find(|&t| a.thread_ranges(t).contains(&(2..3)))
            .unwrap();
        assert_eq!(a.thread_ranges(owner).len(), 1);
        assert_eq!(a.thread_ranges(owner)[0], 2..3);
        assert_eq!(a.thread_ranges(1 - owner), &[0..2, 3..7]);
    }

    #[test]
    fn binlpt_keeps_chunks_contiguous() {
        let hints: Vec<f64> = (0..100).map(|i| if i < 10 { 10.0 } else { 1.0 }).collect();
        let a = assign("binlpt:chunks=4", &hints, 2, None);
        covered_once(&a);
        assert!(a.len() <= 4, "{a:?}");
        let load = |t: usize| -> f64 {
            a.thread_ranges(t)
                .iter()
                .flat_map(|r| r.clone())
                .map(|i| hints[i as usize])
                .sum()
        };
        assert!((load(0) - load(1)).abs() <= 20.0, "{a:?}");
    }

    #[test]
    fn minimum_chunk_groups_iterations_into_blocks() {
        let hints: Vec<f64> = (0..10).map(|i| i as f64).collect();
        let a = assign("greedy", &hints, 3, Some(4));
        covered_once(&a);
        for t in 0..3 {
            for r in a.thread_ranges(t) {
                assert!(r.end - r.start >= 4 || r.end == 10, "{r:?}");
            }
        }
    }

    #[test]
    fn plan_walks_each_threads_ranges() {
        let a = assign("greedy", &[5.0, 1.0, 1.0, 1.0, 1.0, 1.0], 2, None);
        let schedule = WorkloadSchedule::from_spec(&"greedy".parse().unwrap()).unwrap();
        let mut ctx = ContextHandler::new();
        ctx.provide_assignment(Origin::Runtime, &a);
        let plan = schedule
            .plan(&LoopShape::new(6, 2, None).unwrap(), &ctx)
            .unwrap();
        assert_eq!(plan.claim(), Claim::Static);
        let mut got = vec![];
        for t in 0..2 {
            for round in 0.. {
                let Some(r) = plan.static_block(t, round) else {
                    break;
                };
                got.push((t, r));
            }
        }
        assert_eq!(got.len(), a.len());
        // A plan for another shape is refused, not misapplied.
        assert!(schedule
            .plan(&LoopShape::new(7, 2, None).unwrap(), &ctx)
            .is_err());
    }

    #[test]
    fn bad_hints_are_typed_errors() {
        let schedule = WorkloadSchedule::from_spec(&"binlpt".parse().unwrap()).unwrap();
        let shape = LoopShape::new(3, 2, None).unwrap();
        let none = ContextHandler::new();
        assert!(matches!(
            schedule.assign(&shape, &none),
            Err(PolicyError::UnmetRequirement { .. })
        ));
        for hints in [&[1.0, 2.0][..], &[1.0, f64::NAN, 1.0], &[1.0, -1.0, 1.0]] {
            let mut ctx = ContextHandler::new();
            ctx.provide_values(HINTS, Origin::User, hints);
            assert!(schedule.assign(&shape, &ctx).is_err(), "{hints:?}");
        }
        assert!(WorkloadSchedule::from_spec(&"greedy:chunk=0".parse().unwrap()).is_err());
        assert!(WorkloadSchedule::from_spec(&"binlpt:bogus=1".parse().unwrap()).is_err());
    }
}
