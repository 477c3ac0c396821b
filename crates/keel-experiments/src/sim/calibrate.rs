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
//!
//! ```no_run
//! use keel_experiments::sim::calibrate::{self, CalibrateConfig};
//! // Seconds of measurement on this machine's thread pool.
//! let calibration = calibrate::run(&CalibrateConfig::default()).unwrap();
//! println!("{}", calibration.to_json());
//! ```

use std::hint::black_box;
use std::time::Instant;

use keel::pool::ThreadPool;
use keel_policy::stats::median;
use keel_sim::calibrate::{today, Calibration, MachineDescription, Measurements};
use keel_workloads::steps::spin;

use crate::error::{ExperimentError, Result};

/// Spin units per timing of the spin kernel.
const SPIN_UNITS: u64 = 4_000_000;

/// How much to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct CalibrateConfig {
    /// Repeats of every measurement (medians are kept).
    pub repeats: usize,
    /// Empty iterations of each claim loop.
    pub iterations: u64,
    /// Threads of the fork-join measurement (the pool the validation uses).
    pub threads: usize,
    /// Free text stored in the file (`None`: the command line that made it).
    pub notes: Option<String>,
}

impl Default for CalibrateConfig {
    /// 21 repeats, 200,000 claims, 2 threads.
    fn default() -> Self {
        CalibrateConfig {
            repeats: 21,
            iterations: 200_000,
            threads: 2,
            notes: None,
        }
    }
}

fn pool(threads: usize) -> Result<ThreadPool> {
    ThreadPool::builder()
        .threads(threads)
        .build()
        .map_err(|e| ExperimentError::Invalid(format!("cannot start a {threads}-thread pool: {e}")))
}

/// Median `T_par` of an empty loop over `n` iterations with `schedule`.
fn empty_loop(
    pool: &ThreadPool,
    n: u64,
    schedule: &'static str,
    id: &'static str,
    repeats: usize,
) -> Result<f64> {
    let parsed: keel::Schedule = schedule.parse().map_err(|e| {
        ExperimentError::Invalid(format!("{schedule}: {}", keel::LoopError::from(e)))
    })?;
    let run = || {
        pool.parallel(0..n)
            .schedule(parsed.clone())
            .id(id)
            .recorded()
            .try_for_each(|i| {
                black_box(i);
            })
            // A recorded instance always has its T_par.
            .map(|s| s.t_par.unwrap_or(f64::NAN))
            .map_err(|e| ExperimentError::Invalid(format!("{schedule}: {e}")))
    };
    run()?; // warm-up: page faults, wake-ups, the loop's state
    let mut times = (0..repeats)
        .map(|_| run())
        .collect::<Result<Vec<f64>, _>>()?;
    Ok(median(&mut times))
}

/// The measurements on this machine (seconds; printed nowhere).
pub fn measure(config: &CalibrateConfig) -> Result<Measurements> {
    if config.repeats == 0 || config.iterations == 0 || config.threads == 0 {
        return Err(ExperimentError::Invalid(
            "--repeats, --iterations and --threads must be at least 1".into(),
        ));
    }
    let team = pool(config.threads)?;
    // Many fork-joins per repeat would hide nothing: T_par is timed by the
    // runtime itself from the fork to the join.
    let fork_join = {
        let mut medians = (0..config.repeats)
            .map(|_| {
                empty_loop(
                    &team,
                    config.threads as u64,
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
    let n = config.iterations;
    let claim_1_thread = empty_loop(
        &one,
        n,
        "dynamic,1",
        "keel sim calibrate/claim-1",
        config.repeats,
    )? / n as f64;
    let claim_2_threads = empty_loop(
        &two,
        n,
        "dynamic,1",
        "keel sim calibrate/claim-2",
        config.repeats,
    )? / n as f64;
    let mut spins: Vec<f64> = (0..config.repeats.max(3))
        .map(|r| {
            let t = Instant::now();
            black_box(spin(black_box(SPIN_UNITS), r as u64));
            t.elapsed().as_secs_f64() / SPIN_UNITS as f64
        })
        .collect();
    Ok(Measurements {
        threads: config.threads,
        repeats: config.repeats,
        claim_iterations: n,
        fork_join,
        claim_1_thread,
        claim_2_threads,
        spin_unit: median(&mut spins),
    })
}

/// Measures this machine and derives the overhead model from it.
pub fn run(config: &CalibrateConfig) -> Result<Calibration> {
    let measurements = measure(config)?;
    let notes = config.notes.clone().unwrap_or_else(|| {
        format!(
            "keel sim calibrate --repeats {} --iterations {} --threads {}",
            config.repeats, config.iterations, config.threads
        )
    });
    Calibration::from_measurements(
        measurements,
        MachineDescription::this_machine(),
        today(),
        notes,
    )
    .map_err(|e| ExperimentError::sim("sim", e))
}
