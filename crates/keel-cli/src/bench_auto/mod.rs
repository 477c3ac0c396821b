//! `keel bench auto`: the Auto4OMP evaluation (paper §4, Table 3) on this
//! machine. Each time-stepping workload of `keel_workloads::steps` runs
//! under every portfolio schedule, with its default chunk and with the
//! expert chunk, and under each selection method, `reps` times. Within a
//! repeat the configurations take turns step by step (each keeps its own
//! loop ids, so its schedule state and selection evolve as in a run of its
//! own): on a shared machine whose speed drifts over seconds, instance `k`
//! of every configuration then runs within moments of the others. From the
//! fixed runs come **Oracle** (the best fixed configuration *per loop
//! instance*, from the medians of the repeats) and **ManualBest** (the best
//! fixed schedule *per loop* with the default chunk, found after the fact).
//! Every configuration is reported as % degradation relative to Oracle.
//! Beside it, two readings the goals need: **Oracle held out**, whose
//! excess over Oracle is the luck of taking, per instance, the smallest of
//! many noisy medians; and `auto,keel` against each Auto4OMP method with
//! the 95 % interval of their paired per-repeat differences, so that "ahead
//! where they differ by more than noise" is read off, not guessed.
//!
//! Times are taken around each whole loop call, so the selection's own
//! bookkeeping (choosing before the fork, observing after the join) counts
//! against the methods. Loop ids are unique per configuration and repeat,
//! so every run starts with fresh records and selection state.

mod plot;
mod table;

use std::io::Write;

use keel_experiments::bench::auto::{self, AutoConfig};

use crate::cli::BenchAutoArgs;
use crate::error::CliError;
use crate::progress;

pub use table::write_report;

/// `keel bench auto`.
pub fn run_auto(args: &BenchAutoArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let config = AutoConfig {
        workloads: args.workloads.clone(),
        reps: args.reps,
        quick: args.quick,
    };
    let report = progress::with_progress("bench auto", args.quiet, |p| auto::run(&config, p))?;
    progress::warn_if_loaded("keel bench auto", report.background_load);
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &report)?;
        writeln!(out)?;
    } else {
        write_report(out, &report, args.quick)?;
    }
    // The tables come first: a plot that cannot be written must not throw
    // away what was measured; its failure is still the command's error.
    out.flush()?;
    if let Some(path) = &args.svg {
        plot::write(path, &report)?;
        if !args.json {
            writeln!(out, "plot: {}", path.display())?;
        }
    }
    Ok(())
}
