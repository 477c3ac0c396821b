//! `keel-workloads`: the costs of the papers' benchmark applications, as
//! plain data every Keel context can use (`docs/conventions.md#workloads`).
//!
//! Nothing here runs anything. A workload is a [`MappingProblem`]: task
//! loads, PU background loads and the optional concepts (speeds,
//! availability, migratability, a current mapping) that a context registers
//! with a [`ContextHandler`](keel_policy::ContextHandler) before it calls a
//! mapping policy. Problems come from two places:
//!
//! - **generators**, built from spec strings with the same grammar as the
//!   policies (`lb-test:tasks=16000,pus=80,seed=12345`, `leanmd:x=8,y=8,z=8`),
//!   deterministic from their seed ([`generate()`], [`generators`]);
//! - **traces**: the user's own loads as JSON or CSV ([`read_trace`]).
//!
//! Loop workloads ([`loops`]), farm workloads ([`farm`]) and object
//! workloads ([`objects`]) also carry a body that performs the work they
//! describe.
//!
//! ```
//! use keel_workloads::generate;
//! let problem = generate("lb-test:tasks=1000,pus=8").unwrap();
//! let policy = keel_policy::mapping::registry().build("greedy").unwrap();
//! let mapping = policy.map(&problem.context()).unwrap();
//! let metrics = keel_policy::metrics::evaluate(&problem.input().unwrap(), &mapping);
//! assert!(metrics.lambda < 0.05);
//! ```

// On docs.rs, items that exist only on some platforms or features say so.
#![cfg_attr(docsrs, feature(doc_cfg))]

// The README's example is compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;

pub mod bsp;
mod error;
pub mod farm;
pub mod generate;
pub mod loops;
pub mod objects;
mod params;
mod problem;
pub mod steps;
pub mod swf;
pub mod trace;

pub use error::{TraceError, WorkloadError};
pub use generate::{generate, generate_spec, generators, Generator, Start};
pub use problem::MappingProblem;
pub use trace::read_trace;
