//! `keel omp bench`: the flags of the OpenMP programs' benchmark, which
//! `keel_experiments::bench::omp` runs; the report printed as tables
//! (`omp_bench_table.rs`) or JSON.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use keel_experiments::bench::omp::{self, Compiler, OmpBenchConfig};

use crate::error::CliError;
use crate::progress;

/// `keel omp bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Rounds: every configuration runs once per round (at least 2; 6 or
    /// more for 95 % intervals) [default: 9, or 2 with --quick].
    #[arg(long)]
    pub rounds: Option<usize>,
    /// Run these workloads (comma-separated): mandelbrot-zoom,
    /// lavamd-steps, balanced, short-loops (the default: these four);
    /// stream, triangular, wavefront, short-balanced, sparse, phase-shift,
    /// multi-loop (`unseen`: all seven, measured loop by loop); `all`:
    /// the eleven.
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub workloads: Vec<String>,
    /// OpenMP threads (`OMP_NUM_THREADS`).
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// The compiler of the programs, which chooses the OpenMP runtime
    /// their loops run on: gcc (libgomp), clang (LLVM's libomp) or
    /// gfortran (libgomp; the workloads with a Fortran version).
    #[arg(long, value_enum, default_value_t = CompilerArg::Gcc)]
    pub compiler: CompilerArg,
    /// A demonstration of the table's form: two steps per program (the
    /// short loops: 1000 instances, the short balanced ones 200, the
    /// wavefront one sweep) and 2 rounds unless --rounds is given.
    #[arg(long)]
    pub quick: bool,
    /// The preload library (default: `libkeel_omp.so` next to this
    /// executable, or in its `deps/` folder).
    #[arg(long, value_name = "PATH")]
    pub library: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// `--compiler`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CompilerArg {
    /// `gcc -fopenmp`: GCC's libgomp.
    Gcc,
    /// `clang -fopenmp`: LLVM's libomp.
    Clang,
    /// `gfortran -fopenmp`: GCC's libgomp, running the Fortran versions.
    Gfortran,
}

impl From<CompilerArg> for Compiler {
    fn from(c: CompilerArg) -> Self {
        match c {
            CompilerArg::Gcc => Compiler::Gcc,
            CompilerArg::Clang => Compiler::Clang,
            CompilerArg::Gfortran => Compiler::Gfortran,
        }
    }
}

/// Runs the benchmark and prints its report.
pub fn run(args: &BenchArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let config = OmpBenchConfig {
        rounds: args.rounds,
        workloads: args.workloads.clone(),
        threads: args.threads,
        compiler: args.compiler.into(),
        quick: args.quick,
    };
    let library = || {
        crate::omp::library(args.library.as_deref())
            .map_err(|e| keel_experiments::ExperimentError::Failed(e.to_string()))
    };
    let report = progress::with_progress("omp bench", args.quiet, |progress| {
        omp::run(&config, &library, progress)
    })?;
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &report)?;
        writeln!(out)?;
    } else {
        crate::omp_bench_table::write_report(out, &report)?;
    }
    Ok(())
}
