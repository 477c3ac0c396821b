//! Typed errors of the objects context: what was wrong and what is valid.

use keel_policy::PolicyError;

use crate::tasks::TasksError;

/// Why an [`Objects`](super::Objects) could not be built, stepped or remapped.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ObjectsError {
    /// A mapping spec (from code or `KEEL_LB`) that does not build.
    #[error("mapping policy from {origin}: {source}")]
    Policy {
        /// `code`, `KEEL_LB` or `initial`.
        origin: &'static str,
        /// Why.
        #[source]
        source: PolicyError,
    },
    /// The exposure policy for potential tasks does not build.
    #[error(transparent)]
    Tasks(#[from] TasksError),
    /// A policy refused the measured input (e.g. an unmigratable object on
    /// an unavailable PU, or no available PU).
    #[error("policy `{spec}` failed: {source}")]
    Decision {
        /// The policy spec.
        spec: String,
        /// Why.
        #[source]
        source: PolicyError,
    },
    /// A balancing period of 0 steps.
    #[error("the balancing period must be at least 1 step (or unset for no periodic balancing)")]
    ZeroPeriod,
    /// A per-object or per-PU list of the wrong length.
    #[error("{what} has {found} entries; expected one per {unit} ({expected})")]
    LengthMismatch {
        /// Which list.
        what: &'static str,
        /// Entries needed.
        expected: usize,
        /// Entries given.
        found: usize,
        /// `object` or `PU`.
        unit: &'static str,
    },
    /// Every PU marked unavailable.
    #[error("no PU is available; mark at least one of the {pus} PUs available")]
    NoAvailablePu {
        /// PUs there are.
        pus: usize,
    },
    /// A PU index outside the pool.
    #[error("PU {pu} does not exist; valid PUs are 0..{pus}")]
    PuOutOfRange {
        /// The index given.
        pu: usize,
        /// PUs there are.
        pus: usize,
    },
    /// Stepping from inside a region of the same pool: the objects would
    /// get one participant instead of one per PU.
    #[error(
        "objects cannot step inside a region of their own pool (it would run on 1 of {pus} PUs)"
    )]
    NestedRegion {
        /// PUs of the pool.
        pus: usize,
    },
    /// A policy moved an object it was told cannot move.
    #[error("policy `{spec}` moved unmigratable object {object} from PU {from} to PU {to}")]
    MovedUnmigratable {
        /// The policy.
        spec: String,
        /// The object.
        object: usize,
        /// Where it was.
        from: usize,
        /// Where the policy put it.
        to: usize,
    },
    /// A policy put an object on an unavailable PU.
    #[error("policy `{spec}` put object {object} on unavailable PU {pu}")]
    UsedUnavailablePu {
        /// The policy.
        spec: String,
        /// The object.
        object: usize,
        /// The PU.
        pu: usize,
    },
    /// A declared PU speed that is not finite and > 0.
    #[error("PU {pu} has speed {speed}; speeds must be finite and > 0")]
    InvalidSpeed {
        /// The PU.
        pu: usize,
        /// The speed given.
        speed: f64,
    },

    /// A policy returned a mapping of the wrong shape.
    #[error("policy `{spec}` returned a mapping of {tasks} objects on {pus} PUs; expected {want_tasks} on {want_pus}")]
    WrongShape {
        /// The policy.
        spec: String,
        /// Objects in its mapping.
        tasks: usize,
        /// PUs in its mapping.
        pus: usize,
        /// Objects there are.
        want_tasks: usize,
        /// PUs there are.
        want_pus: usize,
    },
}
