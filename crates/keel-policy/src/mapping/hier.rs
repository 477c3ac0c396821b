//! `hier`: hierarchical composition (Charm++ HybridLB / TreeLB levels,
//! a tree of balancers, each level balancing its groups). PUs are grouped
//! into `nodes` contiguous
//! groups; the `outer` policy maps tasks to nodes, then the `inner` policy
//! maps each node's tasks onto that node's PUs. Both are any registry
//! policies, called through context handlers built for each level — the
//! same interface a runtime uses, which is the ARTful portability claim.
//!
//! A node is presented to the outer policy as one PU whose speed is the sum
//! of its available PUs' speeds and whose background time is their
//! background work divided by that speed (so work is conserved); a node with
//! no available PU is unavailable. Tasks that arrive in a node from another
//! are unplaced there, so a refining inner policy places them first.

use std::borrow::Cow;

use super::{Mapping, MappingInput, MappingPolicy};
use crate::concept::{Concept, Model, Origin, Requirement, Subject};
use crate::context::ContextHandler;
use crate::error::PolicyError;
use crate::registry::Registry;
use crate::spec::{Spec, SpecValue};
use crate::NO_PU;

/// The hierarchical policy.
#[derive(Debug)]
pub struct Hier {
    nodes: usize,
    outer: Box<dyn MappingPolicy>,
    inner: Box<dyn MappingPolicy>,
    requirements: Vec<Requirement>,
}

impl Hier {
    /// Composes two policies over `nodes` groups of PUs.
    pub fn new(nodes: usize, outer: Box<dyn MappingPolicy>, inner: Box<dyn MappingPolicy>) -> Self {
        // Union of both levels' needs; required wins over optional.
        let mut requirements: Vec<Requirement> = Vec::new();
        for r in outer.requirements().iter().chain(inner.requirements()) {
            match requirements.iter_mut().find(|q| q.concept == r.concept) {
                Some(q) => q.optional &= r.optional,
                None => requirements.push(*r),
            }
        }
        Hier {
            nodes,
            outer,
            inner,
            requirements,
        }
    }

    /// Builds from `hier:nodes=N[,outer=SPEC][,inner=SPEC]` (both default to `greedy`).
    pub fn from_spec(
        spec: &Spec,
        registry: &Registry<dyn MappingPolicy>,
    ) -> Result<Self, PolicyError> {
        spec.check_keys(&["nodes", "outer", "inner"])?;
        let nodes = spec
            .count_at_least("nodes", 1)?
            .ok_or_else(|| spec.invalid("nodes", "(missing)", "an integer >= 1"))?;
        let level =
            |key| registry.build_spec(&spec.nested(key).unwrap_or_else(|| Spec::named("greedy")));
        Ok(Hier::new(nodes, level("outer")?, level("inner")?))
    }

    fn node_start(&self, node: usize, npus: usize) -> usize {
        node * npus / self.nodes
    }

    /// The decision on validated inputs.
    pub fn decide(&self, input: &MappingInput<'_>) -> Result<Mapping, PolicyError> {
        let npus = input.npus();
        if self.nodes > npus {
            return Err(PolicyError::HierNodes {
                nodes: self.nodes,
                group: npus,
                machine: npus,
                level: String::new(),
            });
        }
        let starts: Vec<usize> = (0..=self.nodes).map(|k| self.node_start(k, npus)).collect();
        let mut node_of = vec![0; npus];
        for k in 0..self.nodes {
            node_of[starts[k]..starts[k + 1]].fill(k);
        }

        // Outer level: each node as one PU.
        let mut node_speed = vec![0.0; self.nodes];
        let mut node_work = vec![0.0; self.nodes];
        for p in (0..npus).filter(|&p| input.is_available(p)) {
            node_speed[node_of[p]] += input.speed(p);
            node_work[node_of[p]] += input.pu_loads()[p] * input.speed(p);
        }
        let node_available: Vec<bool> = node_speed.iter().map(|&s| s > 0.0).collect();
        let node_time: Vec<f64> = node_work
            .iter()
            .zip(&node_speed)
            .map(|(&w, &s)| if s > 0.0 { w / s } else { 0.0 })
            .collect();
        let node_speed: Vec<f64> = node_speed
            .iter()
            .map(|&s| if s > 0.0 { s } else { 1.0 })
            .collect();
        let current_node: Vec<usize> = (0..input.ntasks())
            .map(|t| input.current(t).map_or(NO_PU, |p| node_of[p]))
            .collect();
        let migratable: Vec<bool> = (0..input.ntasks())
            .map(|t| input.is_migratable(t))
            .collect();
        let outer_ctx = level_context(
            Cow::Borrowed(input.task_loads()),
            node_time,
            node_speed,
            node_available,
            migratable.clone(),
            current_node,
        );
        let to_node = self
            .outer
            .map(&outer_ctx)
            .map_err(|e| self.enclose(e, "outer", npus))?;

        // Inner level: each node's tasks, in index order, onto its PUs.
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); self.nodes];
        for (task, &node) in to_node.as_slice().iter().enumerate() {
            members[node].push(task);
        }
        let mut placement = vec![NO_PU; input.ntasks()];
        for (node, tasks) in members.iter().enumerate().filter(|(_, t)| !t.is_empty()) {
            let (first, last) = (starts[node], starts[node + 1]);
            let local = |p: usize| {
                if (first..last).contains(&p) {
                    p - first
                } else {
                    NO_PU
                }
            };
            let inner_ctx = level_context(
                Cow::Owned(tasks.iter().map(|&t| input.task_loads()[t]).collect()),
                input.pu_loads()[first..last].to_vec(),
                (first..last).map(|p| input.speed(p)).collect(),
                (first..last).map(|p| input.is_available(p)).collect(),
                tasks.iter().map(|&t| migratable[t]).collect(),
                tasks
                    .iter()
                    .map(|&t| input.current(t).map_or(NO_PU, local))
                    .collect(),
            );
            let local_map = self
                .inner
                .map(&inner_ctx)
                .map_err(|e| self.enclose(e, "inner", npus))?;
            for (i, &task) in tasks.iter().enumerate() {
                placement[task] = first + local_map.pu_of(i);
            }
        }
        Mapping::new(placement, npus)
    }

    /// An error from one of this policy's levels, as the user should read
    /// it: a nested `hier`'s node count is checked against its share of the
    /// PUs, so the message says where that level sits and names the PU
    /// count of the whole problem (this level's, rewritten again by every
    /// enclosing level).
    fn enclose(&self, error: PolicyError, which: &str, npus: usize) -> PolicyError {
        match error {
            PolicyError::HierNodes {
                nodes,
                group,
                level,
                ..
            } => {
                let here = format!("{which} of hier:nodes={}", self.nodes);
                PolicyError::HierNodes {
                    nodes,
                    group,
                    machine: npus,
                    level: if level.is_empty() {
                        here
                    } else {
                        format!("{here} > {level}")
                    },
                }
            }
            other => other,
        }
    }
}

/// A context handler for one level, all components of runtime origin.
fn level_context<'a>(
    task_loads: Cow<'a, [f64]>,
    pu_times: Vec<f64>,
    speeds: Vec<f64>,
    available: Vec<bool>,
    migratable: Vec<bool>,
    current: Vec<usize>,
) -> ContextHandler<'a> {
    let dynamic = |subject| Concept::Workload {
        subject,
        model: Model::Dynamic,
    };
    let mut ctx = ContextHandler::new();
    ctx.provide_values(dynamic(Subject::Tasks), Origin::Runtime, task_loads)
        .provide_values(dynamic(Subject::Pus), Origin::Runtime, pu_times)
        .provide_values(Concept::PuSpeed, Origin::Runtime, speeds)
        .provide_flags(Concept::PuAvailability, Origin::Runtime, available)
        .provide_flags(Concept::TaskMigratable, Origin::Runtime, migratable)
        .provide_placement(Origin::Runtime, current);
    ctx
}

impl MappingPolicy for Hier {
    fn spec(&self) -> Spec {
        let mut spec = Spec::named("hier");
        spec.params
            .push(("nodes".into(), SpecValue::Token(self.nodes.to_string())));
        spec.params
            .push(("outer".into(), SpecValue::Nested(self.outer.spec())));
        spec.params
            .push(("inner".into(), SpecValue::Nested(self.inner.spec())));
        spec
    }

    fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    fn map(&self, ctx: &ContextHandler<'_>) -> Result<Mapping, PolicyError> {
        let input = MappingInput::gather("hier", ctx, self.requirements())?;
        self.decide(&input)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::registry;

    #[test]
    fn tasks_stay_inside_the_node_the_outer_policy_chose() {
        let r = registry();
        let hier = r
            .build("hier:nodes=2,outer=(block),inner=round-robin")
            .unwrap();
        let loads = [1.0; 8];
        let bg = [0.0; 4];
        let ctx = crate::mapping::runtime_context(&loads, &bg);
        let map = hier.map(&ctx).unwrap();
        // block over 2 nodes: tasks 0..4 -> node 0 (PUs 0,1), 4..8 -> node 1 (PUs 2,3).
        assert_eq!(map.as_slice(), &[0, 1, 0, 1, 2, 3, 2, 3]);
    }

    #[test]
    fn node_speed_is_the_sum_of_its_pus() {
        // Node 0 = PUs {0,1} (speed 2 total), node 1 = PU {2} (speed 1).
        let r = registry();
        let hier = r.build("hier:nodes=2,outer=greedy,inner=greedy").unwrap();
        let loads = [1.0; 6];
        let bg = [0.0; 3];
        let ctx = crate::mapping::runtime_context(&loads, &bg);
        let map = hier.map(&ctx).unwrap();
        let counts = map.counts();
        assert_eq!(counts, vec![2, 2, 2], "{map:?}");
    }

    #[test]
    fn requirements_are_the_union_of_both_levels() {
        let r = registry();
        let hier = r.build("hier:nodes=2,outer=greedy,inner=refine").unwrap();
        let current = hier
            .requirements()
            .iter()
            .find(|q| q.concept == Concept::CurrentMapping)
            .unwrap();
        assert!(!current.optional);
        let loads = [1.0; 4];
        let bg = [0.0; 2];
        let err = hier
            .map(&crate::mapping::runtime_context(&loads, &bg))
            .unwrap_err();
        assert!(err.to_string().contains("current mapping"), "{err}");
    }

    #[test]
    fn more_nodes_than_pus_is_a_typed_error() {
        let r = registry();
        let hier = r.build("hier:nodes=4").unwrap();
        let loads = [1.0; 4];
        let bg = [0.0; 2];
        let err = hier
            .map(&crate::mapping::runtime_context(&loads, &bg))
            .unwrap_err();
        assert!(
            err.to_string().contains("at most the number of PUs (2)"),
            "{err}"
        );
        assert!(r.build("hier").is_err(), "nodes is required");
    }

    #[test]
    fn a_nested_level_names_the_pu_count_the_user_gave() {
        let r = registry();
        let loads = [1.0; 8];
        let bg = [0.0; 8];
        let ctx = crate::mapping::runtime_context(&loads, &bg);
        let err = r
            .build("hier:nodes=2,inner=(hier:nodes=8)")
            .unwrap()
            .map(&ctx)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "policy `hier` (inner of hier:nodes=2): parameter `nodes` = `8` is invalid: \
             expected at most the 4 PUs that level is given, of the 8 PUs in all"
        );
        let err = r
            .build("hier:nodes=2,inner=(hier:nodes=2,inner=(hier:nodes=3))")
            .unwrap()
            .map(&ctx)
            .unwrap_err();
        assert_eq!(
            err,
            PolicyError::HierNodes {
                nodes: 3,
                group: 2,
                machine: 8,
                level: "inner of hier:nodes=2 > inner of hier:nodes=2".into(),
            }
        );
        let err = r
            .build("hier:nodes=4,outer=(hier:nodes=5)")
            .unwrap()
            .map(&ctx)
            .unwrap_err();
        assert!(
            err.to_string().contains("(outer of hier:nodes=4)")
                && err
                    .to_string()
                    .contains("the 4 PUs that level is given, of the 8 PUs"),
            "{err}"
        );
    }

    #[test]
    fn spec_round_trips_through_the_registry() {
        let r = registry();
        let text =
            "hier:nodes=4,outer=(binlpt:chunks=80,cut=faithful),inner=(refine:tolerance=1.1)";
        let hier = r.build(text).unwrap();
        assert_eq!(hier.spec().to_string(), text);
    }
}
