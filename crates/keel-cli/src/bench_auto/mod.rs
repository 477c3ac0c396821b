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
//! Per workload, the report also sets `auto,keel` loop by loop against each
//! loop's best fixed configuration and prints the two goals read from that
//! (`auto / per-loop best <= 1.03`, `every loop <= 1.05`) with their values.
//!
//! Workloads are chosen by `--set NAME` (`default`, `characters`), `-w SPEC`
//! (repeated) and `--workloads LIST` (comma-separated), in that order; none
//! of them runs the set `default`.
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
        workloads: chosen_workloads(args)?,
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

/// The workloads the flags name: `--set`'s (its quick versions with
/// `--quick`), then every `-w`, then every `--workloads` list's; empty when
/// none is given (the bench then runs its default set).
fn chosen_workloads(args: &BenchAutoArgs) -> Result<Vec<String>, CliError> {
    let mut workloads = Vec::new();
    if let Some(set) = &args.set {
        let specs = auto::workload_set(set, args.quick).ok_or_else(|| {
            let valid: Vec<&str> = auto::SETS.iter().map(|(name, _, _)| *name).collect();
            CliError::Usage(format!(
                "unknown workload set `{set}`; valid sets: {}",
                valid.join(", ")
            ))
        })?;
        workloads.extend(specs.iter().map(|s| s.to_string()));
    }
    workloads.extend(args.workloads.iter().cloned());
    for list in &args.workload_lists {
        workloads.extend(split_list(list));
    }
    Ok(workloads)
}

/// Splits `stream,sparse:rows=1000,steps=20,wavefront` into its specs: a
/// piece that opens with `key=value` (an `=` before any `:`) continues the
/// spec before it, since a spec's own parameters are comma-separated and a
/// workload's name never holds an `=`; commas inside `( )` never split.
fn split_list(list: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (k, ch) in list.char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                pieces.push(&list[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    pieces.push(&list[start..]);
    let mut specs: Vec<String> = Vec::new();
    for piece in pieces.into_iter().map(str::trim).filter(|p| !p.is_empty()) {
        let continues = match (piece.find('='), piece.find(':')) {
            (Some(eq), Some(colon)) => eq < colon,
            (Some(_), None) => true,
            (None, _) => false,
        };
        match specs.last_mut() {
            Some(spec) if continues => {
                spec.push(',');
                spec.push_str(piece);
            }
            _ => specs.push(piece.to_string()),
        }
    }
    specs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_splits_between_specs_not_between_their_parameters() {
        assert_eq!(split_list("stream,wavefront"), ["stream", "wavefront"]);
        assert_eq!(
            split_list("stream:elements=1000,steps=20,sparse, wavefront:m=8"),
            ["stream:elements=1000,steps=20", "sparse", "wavefront:m=8"]
        );
        assert_eq!(split_list("a:p=(x:k=1,j=2),b"), ["a:p=(x:k=1,j=2)", "b"]);
        assert_eq!(split_list(",,stream,"), ["stream"]);
        assert!(split_list("").is_empty());
        // A leading parameter has no spec to continue: left as it is, for
        // the workload parser to reject by name.
        assert_eq!(split_list("steps=3,stream"), ["steps=3", "stream"]);
    }
}
