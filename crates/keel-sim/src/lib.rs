//! `keel-sim`: a deterministic discrete-event simulator that drives the unchanged
//! policies of `keel-policy` through the same traits and context handler the thread
//! runtime uses, on simulated workers (relative speed, noise, time-varying
//! perturbations) with a dispatch-overhead model calibrated from empty-body
//! microbenchmarks. This is how Keel reaches the papers' scales (16–1,024 PUs,
//! 64-node clusters) from a 2-core machine.
//!
//! The same seed gives the same result: every random draw comes from a
//! [`rand_chacha::ChaCha8Rng`] seeded by the caller, and simultaneous events are
//! ordered by insertion ([`engine::EventQueue`]).

// On docs.rs, items that exist only on some platforms or features say so.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod engine;
pub mod error;
pub mod overhead;
pub mod worker;

pub mod calibrate;
pub mod loops;
pub mod trace;

pub use engine::EventQueue;
pub use error::SimError;
pub use overhead::{OverheadModel, SharedCounter};
pub use worker::{Noise, Perturbation, WorkerModel};

pub use calibrate::Calibration;
pub use loops::{IterationCosts, Machine, Stepper};

pub mod cluster;
pub mod farm;
pub mod objects;
