//! `keel`: the thread context. It enacts the decisions of `keel-policy` on
//! operating-system threads and measures what policies read back as
//! *dynamic* workload components (ARTful paper §3, steps 1 and 3).
//!
//! - [`pool`]: persistent workers; the caller takes part; spin-then-park.
//! - [`loops`]: parallel loops with every schedule of `keel-policy::dls`.
//! - [`farm`]: task farms (emitter, workers, collector, feedback) with the
//!   dispatch policies of `keel-policy::farm`, ARRS included.
//! - [`enact`]: run every task on the PU a mapping gives it, timing each.
//!
//! - [`objects`]: over-decomposed objects on PUs, measured, remapped every
//!   `period` steps by a registry mapping policy (Charm++'s model).
//! - [`tasks`]: potential tasks inside an object's step, on per-worker
//!   work-stealing deques (Charm++ + OpenMP).

mod enact;
pub mod farm;
pub mod loops;
pub mod objects;
pub mod pool;
pub mod tasks;
mod trace;

pub use enact::{enact, measured_context, EnactError, Measured};
pub use keel_policy as policy;
pub use loops::{
    for_each, for_each_chunk, parallel, LoopError, LoopId, LoopSummary, Schedule, ScheduleError,
};
pub use pool::{PoolBuilder, PoolError, Team, ThreadPool, WaitPolicy};
