//! `keel bench farm`: the experiments of the FastFlow ARRS paper
//! (§III) on Keel's farm,
//! on this machine, plus the per-item cost of dispatch with empty tasks.
//!
//! Every experiment times each policy's farm on the same tasks, the
//! policies interleaved run by run, and prints the paper's relative
//! performance `S = ⟨t_RR⟩ / ⟨t_X⟩` (Eq. 1) with its standard error,
//! propagated from the standard errors of the two means:
//!
//! - **(a)** uniform prime-counting tasks (primes up to 7,500) on 2
//!   workers, 1K–16K tasks (Fig. 6);
//! - **(b)** two workers, the first counting primes only up to 2,000, against
//!   the model `S = Σsᵢ / (p·s₁)` (Eq. 2) with the speed ratio measured now
//!   (Figs. 7–8);
//! - **(c)** three workers, two pinned to core 0 and one to core 1, uniform
//!   tasks: more workers than cores, unevenly placed (Fig. 10);
//! - **(d)** very short uniform tasks: MD-like pair forces (Fig. 11);
//! - **(e)** the material-optimisation farm with feedback, two workers of
//!   strategy costs 1 and 4 (Fig. 13);
//! - **overhead**: nanoseconds per item with empty tasks.
//!
//! `--workers N` (default 2, the paper's setting on this 2-core machine)
//! sets the workers of (a), (b) (one fast worker among `N`, model
//! `(s + N − 1)/N`), (d) and the overhead's second row, for runs on machines
//! with more cores (`scripts/scaling.sh`); (c) and (e) keep their layouts.

mod demo;
mod plot;
mod tables;

use std::io::Write;

use keel_experiments::bench::farm::{self, FarmBenchConfig, FarmBenchReport};
use keel_experiments::bench::LoadMeter;

use crate::cli::BenchFarmArgs;
use crate::error::CliError;
use crate::progress;

pub use demo::demo;
pub use tables::write_experiment;
use tables::write_overhead;

/// `keel bench farm`: each experiment's table is printed as soon as it
/// ends (the whole run takes minutes); `--json` prints one document at the
/// end.
pub fn run_farm(args: &BenchFarmArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let plan = FarmBenchConfig {
        quick: args.quick,
        runs: args.runs,
        experiments: args.experiments.clone(),
        workers: args.workers,
    }
    .plan()?;
    let mut report = FarmBenchReport {
        quick: plan.quick,
        runs: plan.runs,
        cores: farm::cores(),
        experiments: Vec::new(),
        overhead: Vec::new(),
        background_load: None,
    };
    // The load is only known at the end; the header says where to read it.
    if !args.json {
        writeln!(
            out,
            "keel bench farm{}: {} runs per point, policies interleaved; {} cores; S = ⟨t_rr⟩/⟨t_X⟩ ± standard error; background load at the end",
            if args.quick { " --quick" } else { "" },
            plan.runs,
            report.cores
        )?;
    }
    let meter = LoadMeter::start();
    let bar = progress::bar(plan.experiments.len() as u64, "bench farm", args.quiet);
    for id in &plan.experiments {
        bar.set_message(format!("({id})"));
        let e = if *id == "overhead" {
            report.overhead = farm::overhead(&plan)?;
            None
        } else {
            farm::experiment(id, &plan).transpose()?
        };
        bar.inc(1);
        if !args.json {
            // Tables between redraws of the bar, not through it.
            bar.suspend(|| -> Result<(), CliError> {
                writeln!(out)?;
                match &e {
                    Some(e) => write_experiment(out, e)?,
                    None => write_overhead(out, &report.overhead)?,
                }
                Ok(out.flush()?)
            })?;
        }
        report.experiments.extend(e);
    }
    bar.finish_and_clear();
    report.background_load = meter.finish();
    progress::warn_if_loaded("keel bench farm", report.background_load);
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &report)?;
        writeln!(out)?;
    } else {
        writeln!(out)?;
        writeln!(out, "{}", progress::load_words(report.background_load))?;
    }
    out.flush()?;
    if let Some(path) = &args.svg {
        plot::write(path, &report)?;
        if !args.json {
            writeln!(out, "plot: {}", path.display())?;
        }
    }
    Ok(())
}
