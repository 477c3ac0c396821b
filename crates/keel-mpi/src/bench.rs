//! `keel mpi bench`'s driver: object workloads (the Lassen-like proxy's
//! fast front, and hot bands that stay, drift or jump) as distributed
//! objects under No LB, Greedy and Greedy + stealing (balancing when it
//! pays) and Greedy every 50 steps, on each rank count, each run a
//! separate MPI job (`mpiexec -n R keel-mpi-bench --config C --workload W`),
//! configurations rotated round by round so that a machine phase does not
//! favour one. Every configuration must end with the same job-wide
//! checksum of the domains' work (no object lost or run twice).
//!
//! The driver only launches processes: it needs no MPI itself, so the
//! `keel` binary carries it whether or not an MPI is installed.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The configurations, in the paper's Table 1 order (balancing when it
/// pays), then its fixed period.
pub const CONFIGS: [&str; 4] = ["no-lb", "greedy", "greedy-stealing", "greedy-periodic"];

/// What to run.
#[derive(Clone, Debug, PartialEq)]
pub struct MpiBenchConfig {
    /// Workloads (each one of `keel_workloads::objects::INVOCATION_WORKLOADS`).
    pub workloads: Vec<String>,
    /// Rank counts (each ≥ 1).
    pub ranks: Vec<usize>,
    /// Worker threads per rank (≥ 1).
    pub threads: usize,
    /// Rounds (≥ 1).
    pub reps: usize,
    /// The quick workload (100 steps at a quarter of the work).
    pub quick: bool,
    /// The per-rank program, `keel-mpi-bench`.
    pub program: PathBuf,
    /// The MPI launcher (`mpiexec`).
    pub launcher: String,
    /// A run still going after this is killed and reported.
    pub timeout: Duration,
}

/// What one run's rank 0 printed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MpiRun {
    /// `no-lb`, `greedy` or `greedy-stealing`.
    pub config: String,
    /// Ranks.
    pub ranks: usize,
    /// Threads per rank.
    pub threads: usize,
    /// Domains.
    pub objects: usize,
    /// Steps.
    pub steps: usize,
    /// The workload's spec.
    pub workload: String,
    /// Wall time on rank 0, seconds.
    pub total_s: f64,
    /// Σ of the slowest rank's step time.
    pub steps_s: f64,
    /// Σ of the mean rank's step time: the run's own work ÷ ranks, what
    /// `steps_s` would be with every step perfectly balanced.
    #[serde(default)]
    pub ideal_s: f64,
    /// Mean λ across ranks' step times.
    pub lambda_ranks: f64,
    /// Balancing steps across ranks.
    pub rebalances: usize,
    /// Their deciding and migrating seconds on rank 0.
    pub decide_s: f64,
    /// See `decide_s`.
    pub migrate_s: f64,
    /// Objects moved across ranks in all.
    pub migrations: usize,
    /// Σ of the domains' checksums.
    pub checksum: f64,
}

/// One configuration on one rank count, over the rounds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MpiBenchRow {
    /// The workload's name.
    pub workload: String,
    /// The configuration.
    pub config: String,
    /// Ranks.
    pub ranks: usize,
    /// Threads per rank.
    pub threads: usize,
    /// Whether ranks × threads exceeds this machine's CPUs: then spinning
    /// ranks share cores and the times measure the OS's scheduling.
    pub oversubscribed: bool,
    /// The run with the median total time.
    pub median: MpiRun,
    /// Median over rounds of total time ÷ the same round's No LB.
    pub vs_no_lb: f64,
}

/// The whole bench.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MpiBenchReport {
    /// CPUs of this machine.
    pub cpus: usize,
    /// Rounds.
    pub reps: usize,
    /// Rows, by rank count then configuration.
    pub rows: Vec<MpiBenchRow>,
}

/// Why the bench stopped.
#[derive(Debug, Error)]
pub enum MpiBenchError {
    /// A bad configuration.
    #[error("{0}")]
    Config(String),
    /// A run could not start, failed or hung.
    #[error("`{command}`: {reason}")]
    Run {
        /// The command line.
        command: String,
        /// What happened.
        reason: String,
    },
    /// Configurations disagree on the work done.
    #[error("{workload} on {ranks} ranks: {config} ends with checksum {got} where no-lb ends with {want}: an object was lost or stepped twice")]
    Checksum {
        /// The workload.
        workload: String,
        /// Ranks.
        ranks: usize,
        /// The configuration.
        config: String,
        /// Its checksum.
        got: f64,
        /// No LB's.
        want: f64,
    },
}

/// Runs the bench; `progress` hears about each run before it starts.
pub fn run(
    config: &MpiBenchConfig,
    progress: &mut dyn FnMut(&str),
) -> Result<MpiBenchReport, MpiBenchError> {
    if config.ranks.is_empty()
        || config.ranks.contains(&0)
        || config.ranks.iter().any(|&r| r > 1024)
    {
        return Err(MpiBenchError::Config(format!(
            "rank counts {:?}: give counts from 1 to 1024",
            config.ranks
        )));
    }
    if !(1..=1024).contains(&config.threads) || !(1..=1000).contains(&config.reps) {
        return Err(MpiBenchError::Config(
            "threads per rank from 1 to 1024, rounds from 1 to 1000".into(),
        ));
    }
    let valid = keel_workloads::objects::INVOCATION_WORKLOADS;
    if config.workloads.is_empty()
        || config
            .workloads
            .iter()
            .any(|w| !valid.contains(&w.as_str()))
    {
        return Err(MpiBenchError::Config(format!(
            "workloads {:?}: give some of {}",
            config.workloads,
            valid.join(", ")
        )));
    }
    if !config.program.is_file() {
        return Err(MpiBenchError::Config(format!(
            "{} is not there (build it with `cargo build --release -p keel-mpi --features mpi`)",
            config.program.display()
        )));
    }
    // runs[workload][ranks index][config index][round]
    let mut runs =
        vec![
            vec![vec![Vec::with_capacity(config.reps); CONFIGS.len()]; config.ranks.len()];
            config.workloads.len()
        ];
    for round in 0..config.reps {
        for (wi, workload) in config.workloads.iter().enumerate() {
            for (ri, &ranks) in config.ranks.iter().enumerate() {
                for k in 0..CONFIGS.len() {
                    let ci = (k + round) % CONFIGS.len();
                    progress(&format!(
                        "round {}/{}: {workload}, {} ranks × {} threads, {}",
                        round + 1,
                        config.reps,
                        ranks,
                        config.threads,
                        CONFIGS[ci]
                    ));
                    runs[wi][ri][ci].push(one_run(config, workload, ranks, CONFIGS[ci])?);
                }
            }
        }
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut rows = Vec::new();
    for (wi, workload) in config.workloads.iter().enumerate() {
        for (ri, &ranks) in config.ranks.iter().enumerate() {
            let no_lb = &runs[wi][ri][0];
            for (ci, name) in CONFIGS.iter().enumerate() {
                let these = &runs[wi][ri][ci];
                for (got, want) in these.iter().zip(no_lb) {
                    if (got.checksum - want.checksum).abs() > 1e-9 * want.checksum.abs().max(1.0) {
                        return Err(MpiBenchError::Checksum {
                            workload: workload.clone(),
                            ranks,
                            config: name.to_string(),
                            got: got.checksum,
                            want: want.checksum,
                        });
                    }
                }
                let mut order: Vec<&MpiRun> = these.iter().collect();
                order.sort_by(|a, b| a.total_s.total_cmp(&b.total_s));
                let mut ratios: Vec<f64> = these
                    .iter()
                    .zip(no_lb)
                    .map(|(r, base)| r.total_s / base.total_s)
                    .collect();
                ratios.sort_by(f64::total_cmp);
                rows.push(MpiBenchRow {
                    workload: workload.clone(),
                    config: name.to_string(),
                    ranks,
                    threads: config.threads,
                    oversubscribed: ranks * config.threads > cpus,
                    median: order[order.len() / 2].clone(),
                    vs_no_lb: ratios[ratios.len() / 2],
                });
            }
        }
    }
    Ok(MpiBenchReport {
        cpus,
        reps: config.reps,
        rows,
    })
}

/// One MPI job.
fn one_run(
    config: &MpiBenchConfig,
    workload: &str,
    ranks: usize,
    name: &str,
) -> Result<MpiRun, MpiBenchError> {
    let mut command = Command::new(&config.launcher);
    command
        .arg("-n")
        .arg(ranks.to_string())
        .arg(&config.program)
        .args(["--config", name, "--threads", &config.threads.to_string()])
        .args(["--workload", workload]);
    if config.quick {
        command.arg("--quick");
    }
    let shown = format!("{command:?}").replace('"', "");
    let failed = |reason: String| MpiBenchError::Run {
        command: shown.clone(),
        reason,
    };
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed(format!("cannot start {}: {e}", config.launcher)))?;
    let status = match wait_timeout::ChildExt::wait_timeout(&mut child, config.timeout) {
        Ok(Some(status)) => status,
        Ok(None) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(failed(format!(
                "still running after {:?}; killed",
                config.timeout
            )));
        }
        Err(e) => return Err(failed(e.to_string())),
    };
    let out = child
        .wait_with_output()
        .map_err(|e| failed(e.to_string()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
        return Err(failed(format!(
            "exited with {status}: {}",
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        )));
    }
    let line = stdout
        .lines()
        .find(|l| l.starts_with('{'))
        .ok_or_else(|| failed("printed no result line".into()))?;
    serde_json::from_str(line)
        .map_err(|e| failed(format!("an unreadable result line ({e}): {line}")))
}
