//! Typed errors shared by every policy family. Each message says what was
//! wrong and, where there is a closed set of valid answers, lists them.

use crate::concept::Concept;
use crate::spec::SpecError;

/// Everything that can go wrong between a context, the registry and a policy.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PolicyError {
    /// A spec string did not parse.
    #[error(transparent)]
    Spec(#[from] SpecError),

    /// No policy of that name is registered in the family.
    #[error("unknown {family} policy `{name}`; valid names: {}", valid.join(", "))]
    UnknownPolicy {
        /// The family searched (`mapping`, `loop schedule`, ...).
        family: &'static str,
        /// The name asked for.
        name: String,
        /// The registered names.
        valid: Vec<String>,
    },

    /// A name was registered twice in one family.
    #[error("a {family} policy named `{name}` is already registered")]
    DuplicatePolicy {
        /// The family.
        family: &'static str,
        /// The name.
        name: String,
    },

    /// A spec named a parameter the policy does not take.
    #[error("policy `{policy}` has no parameter `{key}`; valid parameters: {}", if valid.is_empty() { "none".to_string() } else { valid.join(", ") })]
    UnknownParameter {
        /// The policy.
        policy: String,
        /// The unknown key.
        key: String,
        /// The keys the policy accepts.
        valid: Vec<String>,
    },

    /// A parameter's value is outside what the policy accepts.
    #[error("policy `{policy}`: parameter `{key}` = `{value}` is invalid: expected {expected}")]
    InvalidParameter {
        /// The policy.
        policy: String,
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// What would be valid.
        expected: String,
    },

    /// The context cannot provide an input the policy needs (paper Fig. 1, step 2).
    #[error("policy `{policy}` requires {requirement}, which no registered component provides (registered: {})", if available.is_empty() { "nothing".to_string() } else { available.join(", ") })]
    UnmetRequirement {
        /// The policy that asked.
        policy: String,
        /// The unmet requirement.
        requirement: Concept,
        /// What the context does provide.
        available: Vec<String>,
    },

    /// A component holds data of the wrong shape for its concept.
    #[error("policy `{policy}`: component `{component}` is malformed: {problem}")]
    MalformedComponent {
        /// The policy that asked.
        policy: String,
        /// The component's name.
        component: String,
        /// What is wrong.
        problem: String,
    },

    /// Two inputs disagree on the number of tasks or PUs.
    #[error("{concept} has {found} entries but there are {expected} {unit}")]
    LengthMismatch {
        /// The input that disagrees.
        concept: Concept,
        /// The length implied by the primary input.
        expected: usize,
        /// The length found.
        found: usize,
        /// `tasks` or `PUs`.
        unit: &'static str,
    },

    /// A load, speed or time is NaN, infinite, negative (or zero for speeds).
    #[error("{what} {index} is {value}: {expected}")]
    InvalidNumber {
        /// What the number is ("task load", "PU speed", ...).
        what: &'static str,
        /// Its index.
        index: usize,
        /// The value found.
        value: f64,
        /// What it must be.
        expected: &'static str,
    },

    /// Loads are each finite but so large that a PU's time would overflow.
    #[error("loads are too large: a PU's time could reach {bound:e}, beyond the range of f64 (scale the loads down)")]
    LoadOverflow {
        /// The bound that overflowed (infinite).
        bound: f64,
    },

    /// There is no PU at all.
    #[error("there are no PUs to map onto (need at least one)")]
    NoPus,

    /// Every PU is marked unavailable.
    #[error("all {0} PUs are unavailable: at least one must accept work")]
    NoAvailablePu(usize),

    /// A placement names a PU that does not exist.
    #[error("task {task} is placed on PU {pu}, but there are only {npus} PUs")]
    PuOutOfRange {
        /// The task.
        task: usize,
        /// The PU it names.
        pu: usize,
        /// The number of PUs.
        npus: usize,
    },

    /// An unmigratable task has no current PU, so it cannot stay where it is.
    #[error("task {task} is not migratable but has no current PU (provide a current mapping that places it)")]
    UnplacedUnmigratable {
        /// The task.
        task: usize,
    },

    /// An unmigratable task sits on a PU that may not run work (GreedyLB aborts here too).
    #[error("task {task} is not migratable but sits on unavailable PU {pu}")]
    PinnedToUnavailable {
        /// The task.
        task: usize,
        /// Its PU.
        pu: usize,
    },
}
