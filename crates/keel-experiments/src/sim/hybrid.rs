//! A hybrid MPI + threads run of the SPHYNX-like program in the simulator
//! (the Auto4OMP paper's SPHYNX study, §4: thread-level selection inside a
//! process-level static distribution). `R` ranks each own a static block
//! of every loop call's particles; each rank's `T` threads run its block
//! under a thread-level setting (`static`, `auto`, …) on its own simulated
//! machine, with its own per-loop records and selection state; after every
//! call the ranks exchange (SPHYNX's halo and reductions), so a call takes
//! the slowest rank's T_par. This is what `keel-mpi`'s `mpi_sphynx`
//! example runs under MPI, at sizes a 2-CPU machine cannot hold.
//!
//! ```
//! use keel_experiments::sim::hybrid::{self, HybridConfig};
//! let config = HybridConfig {
//!     ranks: 2,
//!     threads: 4,
//!     workload: "sphynx:particles=4000,short-particles=2000,steps=3".into(),
//!     ..HybridConfig::default()
//! };
//! let report = hybrid::run(&config, &mut |_| {}).unwrap();
//! assert_eq!(report.rows.len(), 2);
//! assert_eq!(report.rows[0].setting, "static");
//! assert_eq!(report.rows[0].vs_first, 1.0);
//! ```

use std::path::PathBuf;

use keel_policy::Spec;
use keel_sim::loops::{IterationCosts, Machine, Stepper};
use keel_sim::{Noise, WorkerModel};
use keel_workloads::steps::{Sphynx, SteppedWorkload};
use serde::Serialize;

use super::{load_calibration, Progress};
use crate::error::{ExperimentError, Result};

/// What to simulate.
#[derive(Debug, Clone, PartialEq)]
pub struct HybridConfig {
    /// MPI ranks (each a machine of `threads` workers).
    pub ranks: usize,
    /// Threads per rank.
    pub threads: usize,
    /// A `sphynx:…` spec.
    pub workload: String,
    /// Thread-level settings, the first the reference.
    pub settings: Vec<String>,
    /// Coefficient of variation of every piece of work.
    pub noise_cv: f64,
    /// Seed (rank `r` uses `seed + r`).
    pub seed: u64,
    /// A calibration file (`None`: the committed one).
    pub calibration: Option<PathBuf>,
}

impl Default for HybridConfig {
    /// 4 ranks × 16 threads, 10⁶ particles over 20 steps, `static`
    /// against `auto`.
    fn default() -> Self {
        HybridConfig {
            ranks: 4,
            threads: 16,
            workload: "sphynx:particles=1000000,short-particles=500000,steps=20".into(),
            settings: vec!["static".into(), "auto".into()],
            noise_cv: 0.05,
            seed: 1,
            calibration: None,
        }
    }
}

/// One thread-level setting over the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HybridRow {
    /// The setting.
    pub setting: String,
    /// Σ over calls of the slowest rank's T_par, simulated seconds.
    pub total_s: f64,
    /// `total_s` ÷ the first setting's.
    pub vs_first: f64,
    /// Mean over calls of λ across ranks (max ÷ mean − 1 of their T_par).
    pub lambda_ranks: f64,
    /// Mean over calls and ranks of the thread-level LIB, percent.
    pub lib_percent: f64,
}

/// The study.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HybridReport {
    /// Ranks.
    pub ranks: usize,
    /// Threads per rank.
    pub threads: usize,
    /// The workload's canonical spec.
    pub workload: String,
    /// The calibration's date.
    pub calibration_date: String,
    /// One row per setting.
    pub rows: Vec<HybridRow>,
}

fn invalid(what: String) -> ExperimentError {
    ExperimentError::Invalid(what)
}

/// Runs the study.
pub fn run(config: &HybridConfig, progress: &mut dyn FnMut(Progress<'_>)) -> Result<HybridReport> {
    if !(1..=4096).contains(&config.ranks) || !(1..=4096).contains(&config.threads) {
        return Err(invalid(
            "ranks and threads per rank must be in 1..=4096".into(),
        ));
    }
    if config.settings.is_empty() {
        return Err(invalid("no thread-level setting to simulate".into()));
    }
    if !(config.noise_cv.is_finite() && config.noise_cv >= 0.0) {
        return Err(invalid("--noise-cv must be a finite number ≥ 0".into()));
    }
    let spec = Spec::parse(&config.workload).map_err(|e| invalid(e.to_string()))?;
    if spec.name != Sphynx::NAME {
        return Err(invalid(format!(
            "the hybrid study runs the `sphynx` workload, not `{}`",
            spec.name
        )));
    }
    let work = Sphynx::from_spec(&spec).map_err(|e| invalid(e.to_string()))?;
    let calibration = load_calibration(config.calibration.as_deref())?;
    let spin = calibration.spin_unit_seconds;
    let noise = if config.noise_cv > 0.0 {
        Noise::Normal {
            cv: config.noise_cv,
        }
    } else {
        Noise::None
    };
    let sim = |e: keel_sim::SimError| ExperimentError::sim("sim hybrid", e);
    let worker = WorkerModel::with(1.0, noise, &[]).map_err(sim)?;
    let machine = Machine::new(vec![worker; config.threads], calibration.overhead).map_err(sim)?;
    let calls_per_step = work.calls(0).len();
    progress(Progress::Total(
        (config.settings.len() * work.steps() * calls_per_step) as u64,
    ));

    let mut rows: Vec<HybridRow> = Vec::new();
    for setting in &config.settings {
        let mut ranks = (0..config.ranks)
            .map(|r| Stepper::new(machine.clone(), setting, config.seed + r as u64))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(sim)?;
        let (mut total, mut lambda, mut lib, mut calls) = (0.0, 0.0, 0.0, 0usize);
        for step in 0..work.steps() {
            for (call, c) in work.calls(step).into_iter().enumerate() {
                let mut t_par = Vec::with_capacity(config.ranks);
                for (r, stepper) in ranks.iter_mut().enumerate() {
                    let (lo, hi) = block(c.iterations, r, config.ranks);
                    let block: Vec<u64> = (lo..hi).map(|i| work.units(step, call, i)).collect();
                    if block.is_empty() {
                        t_par.push(0.0);
                        continue;
                    }
                    let costs = IterationCosts::from_units(&block, spin).map_err(sim)?;
                    let result = stepper.run(c.name, &costs).map_err(sim)?;
                    lib += result.lib_percent;
                    t_par.push(result.t_par);
                }
                let max = t_par.iter().copied().fold(0.0, f64::max);
                let mean = t_par.iter().sum::<f64>() / t_par.len() as f64;
                total += max;
                if mean > 0.0 {
                    lambda += max / mean - 1.0;
                }
                calls += 1;
                progress(Progress::Step(&format!(
                    "{setting}: step {step}, {}",
                    c.name
                )));
            }
        }
        let first = rows.first().map_or(total, |r| r.total_s);
        rows.push(HybridRow {
            setting: setting.clone(),
            total_s: total,
            vs_first: total / first,
            lambda_ranks: lambda / calls.max(1) as f64,
            lib_percent: lib / (calls * config.ranks).max(1) as f64,
        });
    }
    Ok(HybridReport {
        ranks: config.ranks,
        threads: config.threads,
        workload: work.spec(),
        calibration_date: calibration.date.clone(),
        rows,
    })
}

/// Rank `r`'s static block of `n` iterations over `ranks`: as `mpi_sphynx`
/// cuts them.
pub fn block(n: usize, r: usize, ranks: usize) -> (usize, usize) {
    (n * r / ranks, n * (r + 1) / ranks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_every_iteration_once() {
        for (n, ranks) in [(0, 3), (10, 3), (7, 7), (5, 8), (1_000_003, 16)] {
            let mut next = 0;
            for r in 0..ranks {
                let (lo, hi) = block(n, r, ranks);
                assert_eq!(lo, next);
                next = hi;
            }
            assert_eq!(next, n);
        }
    }

    #[test]
    fn bad_configurations_are_errors() {
        let bad = |c: HybridConfig| run(&c, &mut |_| {}).unwrap_err().to_string();
        assert!(bad(HybridConfig {
            ranks: 0,
            ..HybridConfig::default()
        })
        .contains("ranks"));
        assert!(bad(HybridConfig {
            workload: "stencil".into(),
            ..HybridConfig::default()
        })
        .contains("sphynx"));
        assert!(bad(HybridConfig {
            settings: vec![],
            ..HybridConfig::default()
        })
        .contains("setting"));
        assert!(bad(HybridConfig {
            settings: vec!["bogus".into()],
            workload: "sphynx:particles=100,short-particles=50,steps=1".into(),
            ..HybridConfig::default()
        })
        .contains("bogus"));
    }
}
