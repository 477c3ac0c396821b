//! `keel`: Keel's command line. It is a context in the ARTful sense: it
//! gathers concepts (from a trace file or a built-in workload), hands them to
//! registry policies through a context handler, and reports the decisions.
//!
//! Every error ends the process with one `error: ...` line on stderr and exit
//! status 2 (usage) or 1 (runtime), as [`error`] classifies it; output goes through one buffered writer so that a closed pipe
//! (`keel demo | head`) ends the program quietly instead of panicking.

mod bench;
mod bench_auto;
mod bench_farm;
mod bench_objects;
mod cli;
mod cosched;
mod demo;
mod error;
mod install_docs;
mod map;
mod mpi_bench;
mod omp;
mod omp_bench;
mod omp_bench_table;
mod omp_report;
mod plot;
mod policies;
mod progress;
mod report;
mod sim;

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{BenchCommand, Cli, Command};
use crate::error::{CliError, USAGE};

fn main() -> ExitCode {
    // Completes a KEEL_TRACE file when main returns.
    let _trace = keel::trace::FinishGuard::new();
    // Every command measures: its tables, calibrations and validations
    // read each loop's T_par, LIB and record, which Keel keeps for every
    // schedule only when asked.
    keel::loops::record_all(true);
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap's own messages already start with `error:`; help and
            // version requests are not failures.
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(USAGE)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let mut out = BufWriter::new(io::stdout().lock());
    let result = run(cli.command, &mut out).and_then(|()| Ok(out.flush()?));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            // Not eprintln!: it panics when stderr is closed.
            let _ = writeln!(io::stderr(), "error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

fn run(command: Command, out: &mut dyn Write) -> Result<(), CliError> {
    match command {
        Command::Map(args) => map::run(&args, out),
        Command::Policies(args) => policies::run(&args, out),
        Command::Demo(args) => demo::run(&args.sections, args.json, out),
        Command::Bench(args) => match args.command {
            BenchCommand::Loops(args) => bench::run_loops(&args, out),
            BenchCommand::Farm(args) => bench_farm::run_farm(&args, out),
            BenchCommand::Auto(args) => bench_auto::run_auto(&args, out),
            BenchCommand::Objects(args) => bench_objects::run_objects(&args, out),
        },
        Command::Sim(args) => sim::run(&args, out),
        Command::Cosched(args) => cosched::run(&args, out),
        Command::Omp(args) => match args.command {
            omp::OmpCommand::Run(args) => {
                let status = omp::run(&args)?;
                out.flush()?;
                if status != 0 {
                    // The program's own status, without an `error:` line.
                    std::process::exit(i32::from(status));
                }
                Ok(())
            }
            omp::OmpCommand::Bench(args) => omp_bench::run(&args, out),
            omp::OmpCommand::Report(args) => omp_report::run(&args, out),
        },
        Command::Mpi(args) => match args.command {
            mpi_bench::MpiCommand::Bench(args) => mpi_bench::run(&args, out),
        },
        Command::InstallDocs(args) => install_docs::run(&args, out),
    }
}
