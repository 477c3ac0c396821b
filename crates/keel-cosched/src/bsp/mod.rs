//! The synthetic BSP job (`keel-bsp-job`, also `keel cosched bsp-job`):
//! the paper's §3.2 test program, made real.
//!
//! Every rank repeats `iterations` supersteps: compute for the granularity
//! (CPU time, so a rank descheduled mid-step still does its full work),
//! then exchange: a **ring** (send the step number to the right neighbour,
//! receive it from the left) or a **barrier** (everyone reports to rank 0,
//! which releases everyone). Ranks talk over Unix stream sockets that meet
//! in a rendezvous directory.
//!
//! Waiting follows the wait mode in the rank's shared page, re-read at every
//! call and during long polls: poll (busy-wait), spin-block (poll for
//! `spin_ns`, then block in `poll(2)`) or block. The rank reports through
//! the page exactly as the contract in [`crate::shm`] says: one
//! communication event per group of back-to-back calls (a call counts as a
//! new event only if more than
//! [`COMPUTE_EPSILON_NS`](crate::shm::COMPUTE_EPSILON_NS) of CPU time
//! passed since the previous call ended), the wall time inside calls, the
//! CPU time spent spinning, and the process CPU time, also refreshed every
//! [`CPU_PUBLISH_NS`] while computing, so a rank that never communicates
//! still shows its CPU use.
//!
//! Rank and size come from `KEEL_COSCHED_RANK` / `KEEL_COSCHED_SIZE`, the
//! rendezvous directory from `KEEL_COSCHED_RENDEZVOUS` (all set by the node
//! manager) or from the flags of the same names.
//!
//! One rank alone (no rendezvous, no page) computing three 1 ms supersteps:
//!
//! ```
//! use clap::Parser;
//! use keel_cosched::bsp::{run, BspArgs};
//! let args = BspArgs::try_parse_from([
//!     "keel-bsp-job", "--iterations", "3", "--granularity-ms", "1", "--rank", "0", "--size", "1",
//! ])
//! .unwrap();
//! let summary = run(&args).unwrap();
//! assert_eq!((summary.rank, summary.size, summary.iterations), (0, 1, 3));
//! ```

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;

use crate::shm::{Counters, Page, PageWaitMode, ShmError, DEFAULT_SPIN_NS};

mod links;
mod monitor;

use links::Links;
use monitor::{Monitor, Work};

/// Environment variable with the rank of a job process.
pub const RANK_ENV: &str = "KEEL_COSCHED_RANK";
/// Environment variable with the number of ranks of the job.
pub const SIZE_ENV: &str = "KEEL_COSCHED_SIZE";
/// Environment variable with the job's rendezvous directory.
pub const RENDEZVOUS_ENV: &str = "KEEL_COSCHED_RENDEZVOUS";
/// While computing, the page's `cpu_ns` is refreshed this often (CPU ns).
pub const CPU_PUBLISH_NS: u64 = 1_000_000;
/// Polls between two re-reads of the wait mode during one long poll.
pub const MODE_RECHECK_POLLS: u32 = 256;

/// The communication pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
pub enum Pattern {
    /// Send to the right neighbour, receive from the left.
    Ring,
    /// Gather at rank 0, then release everyone.
    Barrier,
}

/// The wait mode used when the process has no page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DefaultWait {
    /// Busy-wait.
    Poll,
    /// Spin, then block.
    SpinBlock,
    /// Block.
    Block,
}

/// Command line of the BSP job.
#[derive(Clone, Debug, Parser)]
#[command(
    name = "keel-bsp-job",
    about = "A synthetic BSP job: compute, then exchange in a ring or barrier; reports to its keel-cosched page"
)]
pub struct BspArgs {
    /// Supersteps.
    #[arg(long, default_value_t = 500)]
    pub iterations: u64,
    /// Compute per superstep, milliseconds of CPU time.
    #[arg(long, default_value_t = 5.0)]
    pub granularity_ms: f64,
    /// Each step's compute is drawn uniformly from granularity × (1 ± v).
    #[arg(long, default_value_t = 0.0)]
    pub variability: f64,
    /// Per-rank compute factors, comma-separated (`2,1`: rank 0 computes
    /// twice as much); missing ranks use 1.
    #[arg(long, value_delimiter = ',')]
    pub scale: Vec<f64>,
    /// Exchange pattern.
    #[arg(long, value_enum, default_value_t = Pattern::Ring)]
    pub pattern: Pattern,
    /// Seed of the variability draws.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Rank (default: $KEEL_COSCHED_RANK, else 0).
    #[arg(long)]
    pub rank: Option<usize>,
    /// Ranks (default: $KEEL_COSCHED_SIZE, else 1).
    #[arg(long)]
    pub size: Option<usize>,
    /// Rendezvous directory (default: $KEEL_COSCHED_RENDEZVOUS).
    #[arg(long)]
    pub rendezvous: Option<PathBuf>,
    /// Wait mode when there is no page.
    #[arg(long, value_enum, default_value_t = DefaultWait::SpinBlock)]
    pub wait: DefaultWait,
    /// Seconds to wait for the other ranks at start-up.
    #[arg(long, default_value_t = 60.0)]
    pub connect_timeout: f64,
    /// Test hook: this rank exits with status 1 ...
    #[arg(long)]
    pub fail_rank: Option<usize>,
    /// ... at the start of this superstep.
    #[arg(long, default_value_t = 0)]
    pub fail_at: u64,
    /// Print a JSON summary line on stdout at the end.
    #[arg(long)]
    pub summary: bool,
}

/// Why the BSP job stopped early.
#[derive(Debug, thiserror::Error)]
pub enum BspError {
    /// Bad arguments or environment.
    #[error("{0}")]
    Usage(String),
    /// The page could not be opened.
    #[error(transparent)]
    Page(#[from] ShmError),
    /// A socket operation failed.
    #[error("rank {rank}: {what}: {source}")]
    Io {
        /// This rank.
        rank: usize,
        /// What was being done.
        what: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// A peer sent something unexpected or vanished.
    #[error("rank {1}: {0}")]
    Protocol(String, usize),
    /// The test hook fired.
    #[error("rank {rank}: failing at superstep {step} as asked (--fail-rank)")]
    Injected {
        /// This rank.
        rank: usize,
        /// The step.
        step: u64,
    },
}

/// What a finished rank reports.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BspSummary {
    /// The rank.
    pub rank: usize,
    /// Ranks.
    pub size: usize,
    /// Supersteps done.
    pub iterations: u64,
    /// Wall time, s.
    pub wall_s: f64,
    /// The final counters (what the page holds).
    pub counters: Counters,
}

/// Runs the job with parsed arguments.
pub fn run(args: &BspArgs) -> Result<BspSummary, BspError> {
    let env_usize = |name: &str| -> Result<Option<usize>, BspError> {
        match std::env::var(name) {
            Ok(v) => v
                .parse()
                .map(Some)
                .map_err(|_| BspError::Usage(format!("${name} = `{v}` is not a number"))),
            Err(_) => Ok(None),
        }
    };
    let rank = match args.rank {
        Some(r) => r,
        None => env_usize(RANK_ENV)?.unwrap_or(0),
    };
    let size = match args.size {
        Some(s) => s,
        None => env_usize(SIZE_ENV)?.unwrap_or(1),
    };
    if size == 0 || rank >= size {
        return Err(BspError::Usage(format!(
            "rank {rank} is not below size {size}"
        )));
    }
    if !(args.granularity_ms.is_finite() && args.granularity_ms >= 0.0) {
        return Err(BspError::Usage(
            "--granularity-ms must be a finite number >= 0".into(),
        ));
    }
    if !(args.variability.is_finite() && (0.0..=1.0).contains(&args.variability)) {
        return Err(BspError::Usage("--variability must be in [0, 1]".into()));
    }
    if args.scale.iter().any(|s| !(s.is_finite() && *s >= 0.0)) {
        return Err(BspError::Usage(
            "--scale factors must be finite numbers >= 0".into(),
        ));
    }
    if !(args.connect_timeout.is_finite() && args.connect_timeout > 0.0) {
        return Err(BspError::Usage(
            "--connect-timeout must be a positive number of seconds".into(),
        ));
    }
    let default_mode = match args.wait {
        DefaultWait::Poll => PageWaitMode::Poll,
        DefaultWait::SpinBlock => PageWaitMode::SpinBlock {
            spin_ns: DEFAULT_SPIN_NS,
        },
        DefaultWait::Block => PageWaitMode::Block,
    };
    let mut mon = Monitor::new(Page::from_env()?, default_mode);
    let t0 = Instant::now();
    let links = if size > 1 {
        let dir = match &args.rendezvous {
            Some(d) => d.clone(),
            None => std::env::var_os(RENDEZVOUS_ENV)
                .map(PathBuf::from)
                .ok_or_else(|| {
                    BspError::Usage(format!(
                        "{size} ranks need --rendezvous or ${RENDEZVOUS_ENV}"
                    ))
                })?,
        };
        Links::connect(
            &dir,
            rank,
            size,
            args.pattern,
            Duration::from_secs_f64(args.connect_timeout),
        )?
    } else {
        Links::Alone
    };
    let factor = args.scale.get(rank).copied().unwrap_or(1.0);
    let base_ns = args.granularity_ms * 1e6 * factor;
    let mut work = Work::default();
    for step in 0..args.iterations {
        if args.fail_rank == Some(rank) && step == args.fail_at {
            return Err(BspError::Injected { rank, step });
        }
        let u = unit_draw(args.seed, rank, step);
        let ns = (base_ns * (1.0 + args.variability * u)).max(0.0) as u64;
        work.compute(ns, &mut mon);
        links.exchange(step, &mut mon, rank)?;
    }
    mon.publish_cpu();
    Ok(BspSummary {
        rank,
        size,
        iterations: args.iterations,
        wall_s: t0.elapsed().as_secs_f64(),
        counters: mon.counters,
    })
}

/// Entry point shared by the `keel-bsp-job` binary and `keel cosched
/// bsp-job`: parses `argv` (program name first), runs, prints errors.
/// Returns the exit status: 0 done, 2 usage, 3 failure.
pub fn main_with_args<I, T>(argv: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args = match BspArgs::try_parse_from(argv) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match run(&args) {
        Ok(summary) => {
            if args.summary {
                if let Ok(line) = serde_json::to_string(&summary) {
                    let mut out = io::stdout().lock();
                    let _ = writeln!(out, "{line}");
                }
            }
            0
        }
        Err(e) => {
            let _ = writeln!(io::stderr(), "keel-bsp-job: {e}");
            match e {
                BspError::Usage(_) => 2,
                BspError::Injected { .. } => 1,
                _ => 3,
            }
        }
    }
}

/// A draw in [-1, 1] that depends only on (seed, rank, step): splitmix64.
fn unit_draw(seed: u64, rank: usize, step: u64) -> f64 {
    let mut z = seed
        .wrapping_add((rank as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(step.wrapping_mul(0xBF58_476D_1CE4_E5B9));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shm::COMPUTE_EPSILON_NS;
    use crate::sys;

    #[test]
    fn draws_are_in_range_and_deterministic() {
        for step in 0..1000 {
            let u = unit_draw(7, 1, step);
            assert!((-1.0..=1.0).contains(&u));
            assert_eq!(u, unit_draw(7, 1, step));
        }
        let mean: f64 = (0..10_000).map(|i| unit_draw(3, 0, i)).sum::<f64>() / 10_000.0;
        assert!(mean.abs() < 0.05, "mean {mean}");
    }

    #[test]
    fn back_to_back_calls_count_once() {
        let mut m = Monitor::new(None, PageWaitMode::Poll);
        let s = m.begin();
        m.end(s, 0);
        let s = m.begin(); // no computation in between
        m.end(s, 0);
        assert_eq!(m.counters.comm_count, 1);
        let mut w = Work::default();
        w.compute(2 * COMPUTE_EPSILON_NS, &mut m);
        let s = m.begin();
        m.end(s, 10);
        assert_eq!(m.counters.comm_count, 2);
        assert_eq!(m.counters.spin_ns_total, 10);
    }

    #[test]
    fn compute_uses_cpu_time() {
        let mut m = Monitor::new(None, PageWaitMode::Poll);
        let t0 = sys::thread_cpu_ns();
        Work::default().compute(5_000_000, &mut m);
        let used = sys::thread_cpu_ns() - t0;
        assert!((5_000_000..8_000_000).contains(&used), "{used}");
        assert!(m.counters.updates >= 4, "cpu_ns refreshed while computing");
    }

    #[test]
    fn one_rank_runs_alone() {
        let args = BspArgs::try_parse_from([
            "x",
            "--iterations",
            "3",
            "--granularity-ms",
            "1",
            "--size",
            "1",
        ])
        .unwrap();
        let s = run(&args).unwrap();
        assert_eq!(s.counters.comm_count, 0);
        assert!(s.counters.cpu_ns >= 3_000_000);
    }

    #[test]
    fn bad_arguments_are_usage_errors() {
        let args = BspArgs::try_parse_from(["x", "--rank", "2", "--size", "2"]).unwrap();
        assert!(matches!(run(&args), Err(BspError::Usage(_))));
        let args = BspArgs::try_parse_from(["x", "--variability", "2"]).unwrap();
        assert!(matches!(run(&args), Err(BspError::Usage(_))));
        assert_eq!(main_with_args(["x", "--iterations", "nope"]), 2);
    }

    #[test]
    fn two_ranks_ring_over_threads() {
        let dir = tempfile::tempdir().unwrap();
        for pattern in ["ring", "barrier"] {
            let handles: Vec<_> = (0..3)
                .map(|r| {
                    let d = dir.path().to_path_buf();
                    std::thread::spawn(move || {
                        let rs = r.to_string();
                        let args = BspArgs::try_parse_from([
                            "x",
                            "--iterations",
                            "20",
                            "--granularity-ms",
                            "0.2",
                            "--rank",
                            &rs,
                            "--size",
                            "3",
                            "--pattern",
                            pattern,
                            "--rendezvous",
                            d.to_str().unwrap(),
                        ])
                        .unwrap();
                        run(&args)
                    })
                })
                .collect();
            for h in handles {
                let s = h.join().unwrap().unwrap();
                // Threads share one process CPU clock, so the merge rule
                // sees other ranks' work; only a lower bound holds here.
                assert!(s.counters.comm_count >= 1, "{pattern}: {:?}", s.counters);
            }
        }
    }
}
