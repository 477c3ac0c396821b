//! `keel-experiments`: the studies behind `keel sim …` and `keel bench …`
//! as a library. Each experiment is a function from a plain configuration
//! struct to a typed report (the same fields the command's `--json` output
//! has); it never prints: long runs report progress through a callback the
//! caller renders. The `keel` command parses flags into configurations and
//! renders reports as tables, JSON and plots.
//!
//! ```
//! use keel_experiments::sim::farm::{self, FarmConfig};
//! let config = FarmConfig {
//!     workers: vec![4],
//!     tasks: vec![200],
//!     policies: vec!["arrs".into()],
//!     ..FarmConfig::default()
//! };
//! let report = farm::run(&config, &mut || {}).unwrap();
//! // rr (the reference) and arrs, at one size.
//! assert_eq!(report.rows.len(), 2);
//! assert_eq!(report.rows[0].speedup, 1.0);
//! ```

// On docs.rs, items that exist only on some platforms or features say so.
#![cfg_attr(docsrs, feature(doc_cfg))]

// The README's example is compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;

pub mod bench;
pub mod cosched;
pub mod error;
pub mod evaluation;
pub mod sim;

pub use error::{ExperimentError, Result};
