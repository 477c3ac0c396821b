//! `keel sim calibrate`: the simulator's overhead model from empty-body
//! microbenchmarks of the thread runtime (the measurement needs `keel`,
//! which `keel-sim` may not depend on; the file format is `keel-sim`'s,
//! see `keel_sim::calibrate` for how the model follows from the figures).
//!
//! Every figure is the median of `--repeats` runs, after one untimed
//! warm-up: an empty `static` loop of one iteration per thread on the
//! P-thread pool (fork to join, the loop's own `T_par`); `dynamic,1` over
//! `--iterations` empty iterations on a 1-thread and on a 2-thread pool
//! (`T_par / N`); and `spin` on this thread (seconds per unit). Run it on a
//! quiet machine: anything else running inflates the contended figure.

use std::io::Write;
use std::path::PathBuf;

use keel_experiments::sim::calibrate::{self, CalibrateConfig};

use super::sim_error;
use crate::error::CliError;

/// `keel sim calibrate`.
#[derive(Debug, clap::Args)]
pub struct CalibrateArgs {
    /// Write the calibration to this file (default: print it).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Repeats of every measurement (medians are kept).
    #[arg(long, value_name = "N", default_value_t = 21)]
    pub repeats: usize,

    /// Empty iterations of each claim loop.
    #[arg(long, value_name = "N", default_value_t = 200_000)]
    pub iterations: u64,

    /// Threads of the fork-join measurement (the pool the validation uses).
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub threads: usize,

    /// Free text stored in the file (how it was run).
    #[arg(long, value_name = "TEXT")]
    pub notes: Option<String>,

    /// Print the calibration as JSON on stdout, also with `--output`
    /// (without it, that is what is printed anyway).
    #[arg(long)]
    pub json: bool,

    /// No progress on stderr (this command prints none; accepted so that
    /// `--quiet` works on every command).
    #[arg(long)]
    pub quiet: bool,
}

/// `keel sim calibrate`.
pub fn run(args: &CalibrateArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let calibration = calibrate::run(&CalibrateConfig {
        repeats: args.repeats,
        iterations: args.iterations,
        threads: args.threads,
        notes: args.notes.clone(),
    })?;
    match &args.output {
        Some(path) if args.json => {
            calibration.save(path).map_err(sim_error)?;
            write!(out, "{}", calibration.to_json())?;
        }
        Some(path) => {
            calibration.save(path).map_err(sim_error)?;
            let m = &calibration.measurements;
            let o = &calibration.overhead;
            writeln!(out, "keel sim calibrate: wrote {}", path.display())?;
            writeln!(
                out,
                "measured: fork+join {:.0} ns ({} threads), dynamic,1 empty {:.1} ns/claim on 1 thread, {:.1} ns/claim on 2; spin {:.3} ns/unit",
                m.fork_join * 1e9,
                m.threads,
                m.claim_1_thread * 1e9,
                m.claim_2_threads * 1e9,
                m.spin_unit * 1e9
            )?;
            writeln!(
                out,
                "model: fork_join {:.0} ns, claim_local {:.1} ns, claim_serial {:.1} ns",
                o.fork_join * 1e9,
                o.claim_local * 1e9,
                o.claim_serial * 1e9
            )?;
        }
        None => write!(out, "{}", calibration.to_json())?,
    }
    Ok(())
}
