//! Global task-to-PU mapping policies (ARTful paper §4.1; Charm++'s balancers
//! in `src/ck-ldb`, and BinLPT as Penna's libgomp fork and MOGSLib have it).
//!
//! Every policy implements [`MappingPolicy`]: it states its requirements as
//! concept descriptors, reads its inputs only through the
//! [`ContextHandler`], and returns a [`Mapping`].
//! Shared semantics (Charm++ GreedyLB's): task loads are work, PU loads are
//! time, unmigratable tasks stay on their PU and count toward it, unavailable
//! PUs get nothing, ties go to the lowest task and PU index.
//!
//! Greedy (LPT) on four tasks and two idle PUs, then the mapping's metrics:
//!
//! ```
//! use keel_policy::mapping::{registry, runtime_context, MappingInput};
//! use keel_policy::metrics::evaluate;
//! let (tasks, pus) = ([3.0, 1.0, 2.0, 2.0], [0.0, 0.0]);
//! let policy = registry().build("greedy").unwrap();
//! let mapping = policy.map(&runtime_context(&tasks, &pus)).unwrap();
//! // 3 and 1 on one PU, 2 and 2 on the other: both PUs carry 4.
//! assert_eq!(mapping.pu_of(0), mapping.pu_of(1));
//! assert_eq!(mapping.pu_of(2), mapping.pu_of(3));
//! let metrics = evaluate(&MappingInput::new(&tasks, &pus).unwrap(), &mapping);
//! assert_eq!(metrics.makespan, 4.0);
//! ```

mod binlpt;
mod block;
mod bucket_sort;
mod greedy;
mod greedy_refine;
mod hier;
mod input;
mod lpt;
mod lpt_eft;
mod refine;
mod round_robin;
pub mod tree;

use std::fmt;

pub use binlpt::{BinLpt, BinLptCut, MAX_FAITHFUL_CHUNKS};
pub use block::Block;
pub use greedy::Greedy;
pub use greedy_refine::GreedyRefine;
pub use hier::Hier;
pub use input::MappingInput;
pub use lpt::{lpt_order, LptOrder, PuHeap};
pub use lpt_eft::{EftCandidate, LptEft};
pub use refine::Refine;
pub use round_robin::RoundRobin;

use crate::concept::{Concept, Requirement};
use crate::context::ContextHandler;
use crate::error::PolicyError;
use crate::registry::Registry;
use crate::spec::Spec;
use crate::NO_PU;

/// Requirements shared by the built-in mapping policies: task and PU loads
/// are needed, the rest has neutral defaults.
pub const STANDARD_REQUIREMENTS: &[Requirement] = &[
    Requirement::required(Concept::TASK_LOADS),
    Requirement::required(Concept::PU_LOADS),
    Requirement::optional(Concept::PuSpeed),
    Requirement::optional(Concept::PuAvailability),
    Requirement::optional(Concept::TaskMigratable),
    Requirement::optional(Concept::CurrentMapping),
];

/// Requirements of policies that start from where tasks are now.
pub const REFINING_REQUIREMENTS: &[Requirement] = &[
    Requirement::required(Concept::TASK_LOADS),
    Requirement::required(Concept::PU_LOADS),
    Requirement::optional(Concept::PuSpeed),
    Requirement::optional(Concept::PuAvailability),
    Requirement::optional(Concept::TaskMigratable),
    Requirement::required(Concept::CurrentMapping),
];

/// A decision: the PU of every task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    placement: Vec<usize>,
    npus: usize,
}

impl Mapping {
    /// Wraps a complete placement; every entry must be a PU index `< npus`.
    pub fn new(placement: Vec<usize>, npus: usize) -> Result<Self, PolicyError> {
        if let Some((task, &pu)) = placement.iter().enumerate().find(|(_, &p)| p >= npus) {
            return Err(PolicyError::PuOutOfRange { task, pu, npus });
        }
        Ok(Mapping { placement, npus })
    }

    /// Internal constructor for policies whose output is complete by construction.
    pub(crate) fn complete(placement: Vec<usize>, npus: usize) -> Self {
        debug_assert!(placement.iter().all(|&p| p < npus && p != NO_PU));
        Mapping { placement, npus }
    }

    /// PU of task `task`.
    pub fn pu_of(&self, task: usize) -> usize {
        self.placement[task]
    }

    /// The placement as a slice indexed by task.
    pub fn as_slice(&self) -> &[usize] {
        &self.placement
    }

    /// The placement, by value.
    pub fn into_vec(self) -> Vec<usize> {
        self.placement
    }

    /// Number of tasks.
    pub fn ntasks(&self) -> usize {
        self.placement.len()
    }

    /// Number of PUs the mapping was made for.
    pub fn npus(&self) -> usize {
        self.npus
    }

    /// Number of tasks on each PU.
    pub fn counts(&self) -> Vec<usize> {
        let mut counts = vec![0; self.npus];
        for &pu in &self.placement {
            counts[pu] += 1;
        }
        counts
    }
}

/// A global mapping policy: the ARTful policy interface for this family.
pub trait MappingPolicy: Send + Sync + fmt::Debug {
    /// The canonical spec that rebuilds this policy through the registry.
    fn spec(&self) -> Spec;

    /// The concepts the policy reads (paper Fig. 1, step 1).
    fn requirements(&self) -> &[Requirement] {
        STANDARD_REQUIREMENTS
    }

    /// Computes a mapping from what the context handler provides.
    fn map(&self, ctx: &ContextHandler<'_>) -> Result<Mapping, PolicyError>;
}

/// How a built-in mapping policy is built from its spec.
type MappingFactory =
    fn(&Spec, &Registry<dyn MappingPolicy>) -> Result<Box<dyn MappingPolicy>, PolicyError>;

/// The mapping registry with every built-in policy.
pub fn registry() -> Registry<dyn MappingPolicy> {
    let mut r: Registry<dyn MappingPolicy> = Registry::empty("mapping");
    let builtins: [(&str, &str, MappingFactory); 8] = [
        (
            "block",
            "contiguous equal-count blocks, no balancing",
            |s, _| Ok(Box::new(Block::from_spec(s)?)),
        ),
        ("round-robin", "task i to available PU i mod P", |s, _| {
            Ok(Box::new(RoundRobin::from_spec(s)?))
        }),
        (
            "greedy",
            "LPT: heaviest task to least-loaded PU (Charm++ GreedyLB)",
            |s, _| Ok(Box::new(Greedy::from_spec(s)?)),
        ),
        (
            "lpt-eft",
            "LPT: heaviest task to the PU where it finishes earliest (uniform processors)",
            |s, _| Ok(Box::new(LptEft::from_spec(s)?)),
        ),
        (
            "binlpt",
            "contiguous chunks by workload, then LPT of chunks [chunks=K, cut=faithful|improved]",
            |s, _| Ok(Box::new(BinLpt::from_spec(s)?)),
        ),
        (
            "refine",
            "move tasks off PUs above tolerance x average, fewest migrations [tolerance=1.05]",
            |s, _| Ok(Box::new(Refine::from_spec(s)?)),
        ),
        (
            "greedy-refine",
            "greedy, but keep a task home while under greedy bound x tolerance [tolerance=1.05]",
            |s, _| Ok(Box::new(GreedyRefine::from_spec(s)?)),
        ),
        (
            "hier",
            "nodes first, then PUs inside each node [nodes=N, outer=SPEC, inner=SPEC]",
            |s, r| Ok(Box::new(Hier::from_spec(s, r)?)),
        ),
    ];
    for (name, summary, factory) in builtins {
        r.register(name, summary, factory)
            .expect("built-in names are unique and kebab-case");
    }
    r
}

/// Builds a context handler over plain slices with runtime origin: the
/// shortest path from "I have loads" to a policy call.
pub fn runtime_context<'a>(task_loads: &'a [f64], pu_loads: &'a [f64]) -> ContextHandler<'a> {
    use crate::concept::{Model, Origin, Subject};
    let mut ctx = ContextHandler::new();
    ctx.provide_values(
        Concept::Workload {
            subject: Subject::Tasks,
            model: Model::Dynamic,
        },
        Origin::Runtime,
        task_loads,
    )
    .provide_values(
        Concept::Workload {
            subject: Subject::Pus,
            model: Model::Dynamic,
        },
        Origin::Runtime,
        pu_loads,
    );
    ctx
}
