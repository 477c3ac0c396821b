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
//!
//! A loop on a pool of two participants, with its schedule written in
//! `OMP_SCHEDULE` syntax, and a reduction:
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::atomic::{AtomicU64, Ordering};
//! let pool = keel::ThreadPool::builder().threads(2).build()?;
//! let squares = AtomicU64::new(0);
//! let summary = pool
//!     .parallel(0..1000u64)
//!     .schedule("dynamic,4".parse()?)
//!     .for_each(|i| {
//!         squares.fetch_add(i * i, Ordering::Relaxed);
//!     });
//! assert_eq!(squares.into_inner(), 332_833_500);
//! assert_eq!(summary.iterations, 1000);
//! let sum = pool
//!     .parallel(0..1000u64)
//!     .schedule("guided".parse()?)
//!     .fold_reduce(|| 0u64, |acc, i| acc + i, |a, b| a + b);
//! assert_eq!(sum, 499_500);
//! # Ok(()) }
//! ```
//!
//! `KEEL_TRACE=file.json` writes every chunk of every loop, every farm
//! item and every object step as a Chrome / Perfetto trace (open the file
//! at `ui.perfetto.dev`); [`trace::finish`] completes the file. The
//! variable is read once, when the first loop, farm or objects step of the
//! process starts:
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?; // a fresh directory: no predictable path
//! let path = dir.path().join("trace.json");
//! std::env::set_var("KEEL_TRACE", &path);
//! let pool = keel::ThreadPool::builder().threads(2).build()?;
//! pool.parallel(0..100u32)
//!     .schedule("static".parse()?)
//!     .id("sweep")
//!     .for_each(|_| {});
//! keel::trace::finish();
//! let trace = std::fs::read_to_string(&path)?;
//! assert!(trace.starts_with(r#"{"traceEvents":["#));
//! // One complete event ("ph":"X") per chunk, named by loop and schedule.
//! assert!(trace.contains(r#""name":"sweep [static]","cat":"loop","ph":"X""#));
//! # Ok(()) }
//! ```
//!
//! - [`trace`]: the `KEEL_TRACE` file and [`trace::finish`].
//! - [`output`], [`table`], [`warn`]: files written where a user points,
//!   the plain-text tables of Keel's tools, warnings about the environment
//!   printed once per process per value.

// On docs.rs, items that exist only on some platforms or features say so.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod enact;
pub mod farm;
pub mod loops;
pub mod objects;
pub mod output;
pub mod pool;
mod sync;
pub mod table;
pub mod tasks;
pub mod trace;
pub mod warn;

// The README's Rust examples are compiled and run as doc tests, so the
// first code a new user copies always builds.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;

pub use enact::{enact, measured_context, EnactError, Measured};
pub use keel_policy as policy;
pub use loops::{
    for_each, for_each_chunk, parallel, try_for_each, try_for_each_chunk, LoopError, LoopId,
    LoopSummary, Schedule, ScheduleError,
};
pub use pool::{PoolBuilder, PoolError, Team, ThreadPool, WaitPolicy};
