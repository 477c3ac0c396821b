//! The loop model: parallel loops of `keel-policy::dls` schedules on
//! simulated workers, one instance at a time or over time steps with
//! automatic selection (`auto[,method]`) — the same registry schedules and
//! selectors, through the same traits and context handler, that
//! `keel::loops` enacts on threads. Nothing here computes a chunk size: the
//! plan does; the simulator only claims, times and publishes as the runtime
//! does (protocol notes in [`instance`]).
//!
//! ```
//! use keel_sim::loops::{simulate, IterationCosts, Machine};
//! use keel_sim::OverheadModel;
//! let costs = IterationCosts::uniform(1000, 1e-6).unwrap();
//! let machine = Machine::uniform(4, OverheadModel::ZERO).unwrap();
//! let r = simulate(&costs, &machine, "static", 1).unwrap();
//! assert!((r.t_par - 250e-6).abs() < 1e-12); // N·c/P
//! ```
//!
//! | file | mechanism |
//! |---|---|
//! | [`costs`] | per-iteration costs as prefix sums: O(1) per chunk |
//! | [`instance`] | one instance: events, claims, contention, adaptive timing |
//! | `keel_policy::dls::ProfileSums` | the iteration profile estimated from chunk times, shared with the thread runtime |
//! | [`stepping`] | instances in sequence, per-loop records, selection |
//! | [`sphynx_l1`] | the pinned SPHYNX-like L1 of the scale experiment |

pub mod costs;
pub mod instance;
pub mod sphynx_l1;
pub mod stepping;

pub use costs::{IterationCosts, MAX_UNIFORM_ITERATIONS};
pub use instance::{
    simulate_plan, InstanceResult, Machine, RunOptions, Selected, MAX_LOOP_WORKERS,
};
pub use sphynx_l1::SphynxL1;
pub use stepping::{simulate, Call, Stepper};
