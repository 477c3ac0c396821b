//! `keel sim`: the discrete-event simulator (`keel-sim`) from the command
//! line. It runs the same registry policies as the thread runtime on
//! simulated workers, at scales this machine cannot reach.
//!
//! | subcommand | what |
//! |---|---|
//! | `calibrate` | empty-body microbenchmarks of the thread runtime → the overhead model file |
//! | `validate` | simulated vs measured makespans of every loop schedule on Mandelbrot and LavaMD-like loops |
//! | `loops` | SPHYNX-like L1 at N = 10⁶: the bathtub over chunk sizes, selection methods vs Oracle at P = 20, 64 |
//! | `perf` | the simulator's own speed: ns per event over P = 16 … 1,024 |
//! | `farm` | farms of 4, 8, 16 workers, one fast, against the ARRS model |
//! | `objects` | the Lassen-like proxy on 64 nodes × 16 PUs |
//! | `hybrid` | SPHYNX-like over MPI ranks × threads: `static` against `auto` at the thread level |
//! | `cosched` | the FCS paper's §3 on a simulated cluster: verification tables, Fig. 5, application mixes, SWF replay |

pub mod bounds;
pub mod calibrate;
pub mod cosched;
pub mod farm;
pub mod hybrid;
pub mod loops;
pub mod objects;
pub mod perf;
pub mod rank_scale;
pub mod validate;

use std::io::Write;

use clap::{Args, Subcommand};

use crate::error::CliError;

/// `keel sim`.
#[derive(Debug, Args)]
pub struct SimArgs {
    /// Which simulation.
    #[command(subcommand)]
    pub command: SimCommand,
}

/// The simulations.
#[derive(Debug, Subcommand)]
pub enum SimCommand {
    /// Measure the thread runtime's fork-join and claim costs with empty
    /// bodies and write the simulator's overhead model (a JSON file).
    Calibrate(calibrate::CalibrateArgs),
    /// Simulated vs measured makespans of every loop schedule on Mandelbrot
    /// and the exponential (LavaMD-like) loop: % error, Kendall τ.
    Validate(validate::ValidateArgs),
    /// SPHYNX-like L1 (N = 1,000,000): the bathtub curve over chunk sizes at
    /// P = 20, and the selection methods against Oracle at P = 20 and 64;
    /// or a user trace with --input.
    Loops(loops::LoopsArgs),
    /// The simulator's own speed: ss with chunk 1 over P = 16 … 1,024.
    Perf(perf::PerfArgs),
    /// Farms of 4, 8 and 16 workers, one fast, against the ARRS model.
    Farm(farm::FarmArgs),
    /// Over-decomposed objects on nodes × PUs (Lassen-like proxy).
    Objects(objects::ObjectsArgs),
    /// SPHYNX-like over MPI ranks × threads: static blocks over ranks,
    /// thread-level `static` against `auto`.
    Hybrid(hybrid::HybridArgs),
    /// A balancing step across 64–16,384 ranks: one level (every rank
    /// gathers every object) against the tree (groups of ranks, leaders
    /// gather their members'): decision time, bytes received, makespan.
    RankScale(rank_scale::RankScaleArgs),
    /// Coscheduling on a simulated cluster (FCS paper §3): FCFS, GS,
    /// Local, SB and FCS on the paper's scenarios.
    Cosched(cosched::CoschedArgs),
}

/// `keel sim ...`.
pub fn run(args: &SimArgs, out: &mut dyn Write) -> Result<(), CliError> {
    match &args.command {
        SimCommand::Calibrate(a) => calibrate::run(a, out),
        SimCommand::Validate(a) => validate::run(a, out),
        SimCommand::Loops(a) => loops::run(a, out),
        SimCommand::Perf(a) => perf::run(a, out),
        SimCommand::Farm(a) => farm::run(a),
        SimCommand::Objects(a) => objects::run(a),
        SimCommand::Hybrid(a) => hybrid::run(a, out),
        SimCommand::Cosched(a) => cosched::run(a, out),
        SimCommand::RankScale(a) => rank_scale::run(a, out),
    }
}

/// A simulator error as a command error.
pub(crate) fn sim_error(e: impl std::fmt::Display) -> CliError {
    CliError::Runtime(format!("sim: {e}"))
}

pub(crate) use crate::progress::with_progress;
