//! Keel across MPI ranks.
//!
//! Where a program outgrows one machine it runs on MPI, the engine its
//! cluster already has; Keel decides where its objects go. This crate
//! holds the distributed side of that:
//!
//! - [`plan`]: the **plan-only API**, in Zoltan's shape. Each rank passes
//!   its objects' global ids and weights (optionally sizes and whether
//!   they may move) and its background load; every rank gets back its
//!   export and import lists, from one registry policy
//!   ([`DEFAULT_PLAN_POLICY`] unless told) run on the gathered problem
//!   with ranks as PUs. The program moves its own data.
//! - [`Collective`]: the few collective operations the protocols use, over
//!   MPI (`MpiComm`, cargo feature `mpi`, through rsmpi) or over ranks
//!   that are threads of one process ([`LocalRanks`]: tests, examples, a
//!   single machine).
//!
//! Every rank passes its input through the collective call even when it
//! is wrong, with its own verdict on it, so a bad input on one rank is the
//! same typed error on every rank instead of a rank left waiting.
//!
//! # Cargo features
//!
//! - `mpi`: `MpiComm`, [`Collective`] over an MPI communicator through
//!   rsmpi (`MpiComm::new(world)`), and the `keel-mpi-bench` binary. It
//!   needs an MPI library and libclang at build time. docs.rs has neither,
//!   so its pages show the crate without it.
//!
//! ```
//! use keel_mpi::{plan, Collective, LocalObject, LocalRanks, PlanRequest};
//!
//! let plans = LocalRanks::run(4, |comm| {
//!     // Rank r holds objects r*10 .. r*10+10, rank 0's ten times heavier.
//!     let weight = if comm.rank() == 0 { 10.0 } else { 1.0 };
//!     let objects: Vec<LocalObject> = (0..10)
//!         .map(|i| LocalObject::new(comm.rank() as u64 * 10 + i, weight))
//!         .collect();
//!     plan(comm, &PlanRequest::new(&objects)).unwrap()
//! });
//! let plans: Vec<_> = plans.into_iter().map(Result::unwrap).collect();
//! let exported: usize = plans.iter().map(|p| p.exports.len()).sum();
//! let imported: usize = plans.iter().map(|p| p.imports.len()).sum();
//! assert_eq!(exported, imported);
//! assert!(plans[0].metrics.lambda_after < plans[0].metrics.lambda_before);
//! ```

// On docs.rs, items that exist only on some platforms or features say so.
#![cfg_attr(docsrs, feature(doc_cfg))]

// The README's example is compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;

pub mod bench;
mod comm;
mod local;
mod migrate;
#[cfg(all(feature = "mpi", not(keel_docs_rs)))]
mod mpi_comm;
mod objects;
mod plan;
mod wire;

pub use comm::{Collective, CommError};
pub use local::{LocalComm, LocalRanks, RankPanicked};
#[cfg(all(feature = "mpi", not(keel_docs_rs)))]
pub use mpi_comm::MpiComm;
pub use objects::{
    DistributedBuilder, DistributedError, DistributedObjects, DistributedStep, RankRebalance,
    Refused, DEFAULT_RANK_POLICY, INITIAL_RANK_COST_PER_OBJECT_S, INITIAL_RANK_COST_S, REQUESTED,
};
pub use plan::{
    plan, plan_in_tree, plan_or_refuse, LocalObject, Plan, PlanError, PlanMetrics, PlanRequest,
    PlanShape, Transfer, DEFAULT_PLAN_POLICY,
};
