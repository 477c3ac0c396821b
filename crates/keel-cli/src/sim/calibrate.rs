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

use std::hint::black_box;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use keel::pool::ThreadPool;
use keel_sim::calibrate::{today, Calibration, MachineDescription, Measurements};
use keel_workloads::steps::spin;

use super::{median, sim_error};
use crate::error::CliError;

/// Spin units per timing of the spin kernel.
const SPIN_UNITS: u64 = 4_000_000;

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
}

fn pool(threads: usize) -> Result<ThreadPool, CliError> {
    ThreadPool::builder()
        .threads(threads)
        .build()
        .map_err(|e| CliError::Usage(format!("cannot start a {threads}-thread pool: {e}")))
}

/// Median `T_par` of an empty loop over `n` iterations with `schedule`.
fn empty_loop(
    pool: &ThreadPool,
    n: u64,
    schedule: &'static str,
    id: &'static str,
    repeats: usize,
) -> Result<f64, CliError> {
    let parsed: keel::Schedule = schedule
        .parse()
        .map_err(|e| CliError::Usage(format!("{schedule}: {}", keel::LoopError::from(e))))?;
    let run = || {
        pool.parallel(0..n)
            .schedule(parsed.clone())
            .id(id)
            .try_for_each(|i| {
                black_box(i);
            })
            .map(|s| s.t_par)
            .map_err(|e| CliError::Usage(format!("{schedule}: {e}")))
    };
    run()?; // warm-up: page faults, wake-ups, the loop's state
    let mut times = (0..repeats)
        .map(|_| run())
        .collect::<Result<Vec<f64>, _>>()?;
    Ok(median(&mut times))
}

/// The measurements on this machine.
pub fn measure(args: &CalibrateArgs) -> Result<Measurements, CliError> {
    if args.repeats == 0 || args.iterations == 0 || args.threads == 0 {
        return Err(CliError::Usage(
            "--repeats, --iterations and --threads must be at least 1".into(),
        ));
    }
    let team = pool(args.threads)?;
    // Many fork-joins per repeat would hide nothing: T_par is timed by the
    // runtime itself from the fork to the join.
    let fork_join = {
        let mut medians = (0..args.repeats)
            .map(|_| {
                empty_loop(
                    &team,
                    args.threads as u64,
                    "static",
                    "keel sim calibrate/fork-join",
                    15,
                )
            })
            .collect::<Result<Vec<f64>, _>>()?;
        median(&mut medians)
    };
    let one = pool(1)?;
    let two = pool(2)?;
    let n = args.iterations;
    let claim_1_thread = empty_loop(
        &one,
        n,
        "dynamic,1",
        "keel sim calibrate/claim-1",
        args.repeats,
    )? / n as f64;
    let claim_2_threads = empty_loop(
        &two,
        n,
        "dynamic,1",
        "keel sim calibrate/claim-2",
        args.repeats,
    )? / n as f64;
    let mut spins: Vec<f64> = (0..args.repeats.max(3))
        .map(|r| {
            let t = Instant::now();
            black_box(spin(black_box(SPIN_UNITS), r as u64));
            t.elapsed().as_secs_f64() / SPIN_UNITS as f64
        })
        .collect();
    Ok(Measurements {
        threads: args.threads,
        repeats: args.repeats,
        claim_iterations: n,
        fork_join,
        claim_1_thread,
        claim_2_threads,
        spin_unit: median(&mut spins),
    })
}

/// `keel sim calibrate`.
pub fn run(args: &CalibrateArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let measurements = measure(args)?;
    let notes = args.notes.clone().unwrap_or_else(|| {
        format!(
            "keel sim calibrate --repeats {} --iterations {} --threads {}",
            args.repeats, args.iterations, args.threads
        )
    });
    let calibration = Calibration::from_measurements(
        measurements,
        MachineDescription::this_machine(),
        today(),
        notes,
    )
    .map_err(sim_error)?;
    match &args.output {
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
