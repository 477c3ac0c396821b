//! `keel sim hybrid`: the SPHYNX-like program over MPI ranks × threads in
//! the simulator — a static block of particles per rank, each rank's
//! threads under a thread-level setting, the ranks exchanging after every
//! loop call — `static` against `auto` (the Auto4OMP paper's hybrid
//! finding), at sizes this machine cannot run (`keel-mpi`'s `mpi_sphynx`
//! example runs the same program under MPI).

use std::io::Write;

use keel_experiments::sim::hybrid::{self, HybridConfig};

use crate::error::CliError;
use crate::report;

/// `keel sim hybrid`.
#[derive(Debug, clap::Args)]
pub struct HybridArgs {
    /// MPI ranks.
    #[arg(long, default_value_t = 4, value_parser = super::bounds::count)]
    pub ranks: usize,

    /// Threads per rank.
    #[arg(long, default_value_t = 16, value_parser = super::bounds::count)]
    pub threads: usize,

    /// The SPHYNX-like workload.
    #[arg(
        long,
        value_name = "SPEC",
        default_value = "sphynx:particles=1000000,short-particles=500000,steps=20"
    )]
    pub workload: String,

    /// Thread-level settings, comma-separated; the first is the reference.
    #[arg(long, value_delimiter = ',', default_value = "static,auto")]
    pub settings: Vec<String>,

    /// Coefficient of variation of every piece of work (normal noise).
    #[arg(long, default_value_t = 0.05)]
    pub noise_cv: f64,

    /// Seed of the noise (rank r uses seed + r).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// A calibration file (default: the committed one).
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<std::path::PathBuf>,

    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,

    /// Print one JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// `keel sim hybrid`.
pub fn run(args: &HybridArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let config = HybridConfig {
        ranks: args.ranks,
        threads: args.threads,
        workload: args.workload.clone(),
        settings: args.settings.clone(),
        noise_cv: args.noise_cv,
        seed: args.seed,
        calibration: args.calibration.clone(),
    };
    let report = super::with_progress("sim hybrid", args.quiet, |progress| {
        hybrid::run(&config, progress)
    })?;
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &report)?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(
        out,
        "keel sim hybrid: {} ranks × {} threads, {}, static blocks over ranks; calibration of {}",
        report.ranks, report.threads, report.workload, report.calibration_date
    )?;
    let mut rows = vec![[
        "thread level".to_string(),
        "total".into(),
        format!("÷ {}", report.rows[0].setting),
        "λ ranks".into(),
        "LIB threads".into(),
    ]];
    for r in &report.rows {
        rows.push([
            r.setting.clone(),
            report::duration(r.total_s),
            format!("{:.3}", r.vs_first),
            format!("{:.3}", r.lambda_ranks),
            format!("{:.1} %", r.lib_percent),
        ]);
    }
    for line in report::align(&rows) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}
