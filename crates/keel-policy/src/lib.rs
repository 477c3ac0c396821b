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
//! Modules, from the bottom layer up (none imports one above it):
//!
//! - [`concept`]: how a policy describes an input it needs and a component
//!   one it provides (ARTful §3.1).
//! - [`error`]: [`PolicyError`] and [`SpecError`], shared by every family.
//! - [`spec`]: the spec-string grammar `name:key=value,...`, nested specs.
//! - [`registry`]: policies by name, built from specs (ARTful §3.2, Fig. 2).
//! - [`assignment`]: each thread's iteration ranges, as a context hands
//!   them back to the schedules that computed them.
//! - [`context`]: [`ContextHandler`], the components a context registers
//!   and policies fetch by concept (ARTful §3.2, Fig. 1).
//! - [`metrics`] and [`stats`]: λ, LIB, makespan, migrations; medians,
//!   means, Student's t, Kendall's τ.
//! - [`mapping`]: global task-to-PU mapping (Greedy/LPT, BinLPT, Refine,
//!   hierarchical, ...; ARTful §4.1, Charm++'s balancers).
//! - [`dls`]: the dynamic loop schedules of Auto4OMP's portfolio and
//!   LB4OMP, and the workload schedules built on mapping policies.
//! - [`select`]: automatic schedule selection per loop (Auto4OMP's expert
//!   chunk and methods, and Keel's `auto,keel` with its cost model).
//! - [`farm`]: which worker of a task farm gets the next item (FastFlow's
//!   policies and ARRS).
//! - [`expose`]: how many chunks of a potential task to expose for
//!   stealing (Charm++ + OpenMP §4.3).
//! - [`cosched`]: cluster coscheduling: Flexible CoScheduling and its
//!   baselines (FCFS, GS, Local, SB).
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

// On docs.rs, items that exist only on some platforms or features say so.
#![cfg_attr(docsrs, feature(doc_cfg))]

// The README's example is compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;

pub mod assignment;
pub mod concept;
pub mod context;
pub mod cosched;
pub mod dls;
pub mod error;
pub mod expose;
pub mod farm;
pub mod invoke;
pub mod mapping;
pub mod metrics;
pub mod registry;
pub mod select;
pub mod spec;
pub mod stats;

pub use concept::{Concept, Model, Origin, Requirement, Subject};
pub use context::{Component, ComponentData, ContextHandler};
pub use error::PolicyError;
pub use error::SpecError;
pub use mapping::{Mapping, MappingInput, MappingPolicy};
pub use registry::Registry;
pub use spec::{Spec, SpecValue};

/// Marks a task with no PU in a placement (new, or arriving from another node).
pub const NO_PU: usize = usize::MAX;
