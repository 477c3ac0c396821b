//! The simulator's experiments (`keel sim …`): the papers' studies on
//! `keel-sim` at scales this machine cannot reach, plus the simulator's own
//! calibration, validation and speed.
//!
//! | module | what |
//! |---|---|
//! | [`calibrate`] | empty-body microbenchmarks of the thread runtime → the overhead model |
//! | [`loops`] | SPHYNX-like L1 at N = 10⁶: the bathtub over chunk sizes, selection methods vs Oracle |
//! | [`validate`] | simulated vs measured makespans of every loop schedule, Kendall τ |
//! | [`perf`] | the simulator's own speed: ns per event over P |
//! | [`farm`] | farms with one fast worker against the ARRS model |
//! | [`hybrid`] | SPHYNX-like over MPI ranks × threads: thread-level `auto` inside a static distribution |
//! | [`objects`] | the Lassen-like proxy on nodes × PUs |
//! | [`rank_scale`] | a balancing step across 64–16,384 ranks: one level against the tree |
//! | [`cosched`] | the FCS paper's §3 on a simulated cluster |
//!
//! ```
//! use keel_experiments::sim::loops::bathtub_chunks;
//! assert_eq!(bathtub_chunks(80, 4), vec![10, 5, 2, 1]);
//! ```

pub mod calibrate;
pub mod cosched;
pub mod farm;
pub mod hybrid;
pub mod loops;
pub mod objects;
pub mod perf;
pub mod rank_scale;
pub mod validate;

use std::path::Path;

use keel_sim::Calibration;

use crate::error::{ExperimentError, Result};

/// What a long experiment tells its caller while it runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Progress<'a> {
    /// How many steps the whole run has (sent once, first).
    Total(u64),
    /// One step done, with a label saying what it was.
    Step(&'a str),
}

/// The calibration in `path`, else the committed one.
pub fn load_calibration(path: Option<&Path>) -> Result<Calibration> {
    match path {
        Some(p) => Calibration::load(p),
        None => Calibration::committed(),
    }
    .map_err(|e| ExperimentError::sim("sim", e))
}
