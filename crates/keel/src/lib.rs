//! `keel`: the thread context. It enacts the decisions of `keel-policy` on
//! operating-system threads and measures what policies read back as
//! *dynamic* workload components (ARTful paper §3, steps 1 and 3).
//!
//! So far it offers [`enact`]: run every task on the PU a mapping gives it,
//! one thread per PU, timing each task. The persistent pool, loops, farm and
//! objects contexts arrive with their issues (see `docs/architecture.md`).

mod enact;

pub use enact::{enact, measured_context, EnactError, Measured};
pub use keel_policy as policy;
