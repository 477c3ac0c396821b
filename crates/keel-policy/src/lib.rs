//! `keel-policy`: Keel's portable scheduling library — the ARTful model of
//! the ARTful paper, "ARTful: A model for user-defined schedulers targeting
//! multiple high-performance computing runtime systems" (§3–4).
//!
//! Policies see only *concepts* ([`concept`]) fetched through a
//! [`ContextHandler`] and return decisions; they never touch a thread, a
//! clock, a socket or a process. Contexts (the thread runtime, the
//! simulator, the CLI) register components and enact the decisions.
//! Policies are built by name from spec strings through a [`Registry`].
//!
//! ```
//! use keel_policy::mapping::{self, runtime_context};
//! let registry = mapping::registry();
//! let policy = registry.build("binlpt:chunks=4").unwrap();
//! let loads = [5.0, 1.0, 1.0, 1.0, 4.0, 4.0];
//! let pus = [0.0, 0.0];
//! let map = policy.map(&runtime_context(&loads, &pus)).unwrap();
//! assert_eq!(map.ntasks(), 6);
//! ```

pub mod concept;
pub mod context;
pub mod cosched;
pub mod dls;
pub mod error;
pub mod expose;
pub mod farm;
pub mod mapping;
pub mod metrics;
pub mod registry;
pub mod select;
pub mod spec;
pub mod stats;

pub use concept::{Concept, Model, Origin, Requirement, Subject};
pub use context::{Component, ComponentData, ContextHandler};
pub use error::PolicyError;
pub use mapping::{Mapping, MappingInput, MappingPolicy};
pub use registry::Registry;
pub use spec::{Spec, SpecError, SpecValue};

/// Marks a task with no PU in a placement (new, or arriving from another node).
pub const NO_PU: usize = usize::MAX;
