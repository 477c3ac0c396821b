//! The rounds: every measurement of the report, Keel, libgomp and rayon
//! interleaved in one process.
//!
//! **Isolation.** Two cores, and every runtime waits actively: a runtime
//! whose idle workers spin while another is measured would take a core from
//! it. So only the runtime being measured has live workers. Each round
//! runs one *block* per runtime, in an order that rotates from round to
//! round:
//! - Keel: a pool is built with `WaitPolicy::Active` for the block and
//!   dropped (its workers joined) at the end;
//! - libgomp: `omp_pause_resource_all` ends its workers after the block;
//!   the next region starts them again, before any timing (warm-up);
//! - rayon: a persistent pool whose workers sleep on their own a few
//!   microseconds after the work ends; the harness waits 5 ms after the
//!   block.
//!
//! The number of threads the process has inside each block is recorded in
//! the report (`isolation`) so this can be checked.
//!
//! **Statistic.** A *sample* times `reps` back-to-back loops and divides;
//! `reps` is fixed per configuration (from the delay, or from a pilot for
//! the empty loops) so that a sample lasts about `sample_seconds`. Round 0
//! is a warm-up whose samples are dropped; each later round gives one
//! sample per configuration and runtime, and the report gives the median
//! and range over rounds. The sequential references are measured at the
//! start of every round, while no runtime has workers; EPCC's overhead of
//! each sample is taken against their median over rounds.
//!
//! **Load.** The machine is shared: the report says how much CPU other
//! processes took during each round (from `/proc/stat` and
//! `/proc/self/stat`), so a disturbed run shows as one.

use std::hint::black_box;
use std::time::Instant;

use serde::Serialize;

use crate::delay;
use crate::gomp::Gomp;
use crate::load::CpuSnapshot;
use crate::report::Report;
use crate::sched::Sched;

mod goals;
mod gomp_block;
mod keel_block;
mod rayon_block;
mod tables;

/// What to measure and for how long.
#[derive(Clone, Debug, Serialize)]
pub struct Config {
    /// Threads of every runtime (the caller included).
    pub threads: usize,
    /// Recorded rounds (a warm-up round comes first).
    pub rounds: usize,
    /// EPCC's `itersperthr`: the loop has `iters_per_thread × threads`
    /// iterations. A power of two keeps rayon's mappings exact.
    pub iters_per_thread: u64,
    /// Delays per iteration of the head-to-head table, µs.
    pub delays_us: Vec<f64>,
    /// Schedules of the head-to-head table.
    pub schedules: Vec<Sched>,
    /// Keel schedules of the adaptive table. `static`, when listed, is the
    /// fork/join baseline of the marginal cost per chunk; `dynamic` (`ss`),
    /// when listed, is the baseline of the per-chunk ratios.
    pub adaptive_schedules: Vec<String>,
    /// Delays of the adaptive table, µs.
    pub adaptive_delays_us: Vec<f64>,
    /// Target length of one sample, seconds.
    pub sample_seconds: f64,
    /// Calls of `Instant::now()` per clock sample.
    pub clock_calls: u64,
}

/// The adaptive table's schedules: the two baselines (`static`: fork and
/// join only; `ss`), the non-adaptive portfolio members for scale, then the
/// adaptive ones (which read a clock per chunk or per request).
pub const ADAPTIVE_SCHEDULES: [&str; 15] = [
    "static",
    "dynamic",
    "guided",
    "gss-llvm",
    "gac",
    "tss",
    "fac2",
    "mfac2",
    "static-steal",
    "awf-b",
    "awf-c",
    "awf-d",
    "awf-e",
    "af",
    "maf",
];

impl Config {
    /// The full run: 2 threads, 31 rounds, delays 0.1, 1 and 10 µs,
    /// 1024 iterations per thread, 4 ms samples (about 20 s on the 2-core machine).
    pub fn full() -> Config {
        Config {
            threads: 2,
            rounds: 31,
            iters_per_thread: 1024,
            delays_us: vec![0.1, 1.0, 10.0],
            schedules: Sched::DEFAULT.to_vec(),
            adaptive_schedules: ADAPTIVE_SCHEDULES.iter().map(|s| s.to_string()).collect(),
            adaptive_delays_us: vec![0.1, 1.0],
            sample_seconds: 0.004,
            clock_calls: 200_000,
        }
    }

    /// A smoke run for tests: everything once or twice, tiny samples.
    pub fn quick() -> Config {
        Config {
            rounds: 2,
            iters_per_thread: 64,
            delays_us: vec![0.1, 1.0],
            adaptive_delays_us: vec![0.1],
            sample_seconds: 0.0002,
            clock_calls: 1000,
            ..Config::full()
        }
    }

    /// Iterations of each loop.
    pub fn iterations(&self) -> u64 {
        self.iters_per_thread * self.threads as u64
    }
}

/// Why the harness could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Keel's pool did not start.
    #[error("keel pool: {0}")]
    Pool(#[from] keel::PoolError),
    /// rayon's pool did not start.
    #[error("rayon pool: {0}")]
    Rayon(#[from] rayon::ThreadPoolBuildError),
    /// libgomp misbehaved.
    #[error("libgomp: {0}")]
    Gomp(String),
    /// A configuration that cannot be measured.
    #[error("invalid configuration: {0}")]
    Config(String),
}

/// One of the three runtimes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Runtime {
    /// Keel's pool and loops.
    Keel,
    /// gcc's libgomp.
    Libgomp,
    /// rayon's pool and parallel iterators.
    Rayon,
}

/// The empty-loop (fork + join) measurements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Latency {
    KeelLoop,
    KeelRegion,
    GompLoop,
    GompRegion,
    RayonInPool,
    RayonOutside,
}

impl Latency {
    const ALL: [Latency; 6] = [
        Latency::KeelLoop,
        Latency::KeelRegion,
        Latency::GompLoop,
        Latency::GompRegion,
        Latency::RayonInPool,
        Latency::RayonOutside,
    ];

    fn what(self, p: usize) -> String {
        match self {
            Latency::KeelLoop => {
                format!("pool.parallel(0..{p}).schedule(\"static\").for_each(empty)")
            }
            Latency::KeelRegion => "pool.region(empty): fork + join only".into(),
            Latency::GompLoop => format!("parallel for schedule(static), {p} iterations, empty"),
            Latency::GompRegion => "parallel {} (empty region)".into(),
            Latency::RayonInPool => {
                format!("in pool (install): (0..{p}).into_par_iter().for_each(empty)")
            }
            Latency::RayonOutside => {
                format!("from outside: pool.install(|| (0..{p}).into_par_iter().for_each(empty))")
            }
        }
    }

    fn runtime(self) -> Runtime {
        match self {
            Latency::KeelLoop | Latency::KeelRegion => Runtime::Keel,
            Latency::GompLoop | Latency::GompRegion => Runtime::Libgomp,
            Latency::RayonInPool | Latency::RayonOutside => Runtime::Rayon,
        }
    }
}

/// One sample: seconds and chunks per loop.
#[derive(Clone, Copy, Debug)]
pub(super) struct Sample {
    seconds: f64,
    chunks: f64,
}

/// A configuration's samples, or the error that stopped it.
#[derive(Debug, Default)]
struct Series {
    samples: Vec<Sample>,
    error: Option<String>,
}

impl Series {
    fn push(&mut self, record: Option<usize>, seconds: f64, chunks: f64) {
        if record.is_some() {
            self.samples.push(Sample { seconds, chunks });
        }
    }
}

struct Harness<'c> {
    config: &'c Config,
    n: u64,
    p: usize,
    /// Every distinct delay (head-to-head first), µs, and its length.
    delays: Vec<(f64, u32)>,
    seconds_per_unit: f64,
    gomp: Result<Gomp, String>,
    rayon: rayon::ThreadPool,
    /// `[delay][round]` sequential reference per loop, Rust and C.
    ref_rust: Vec<Vec<f64>>,
    ref_c: Vec<Vec<f64>>,
    /// `[delay × schedule][runtime]`.
    overhead: Vec<[Series; 3]>,
    /// Keel names: `(spec, id)` per head-to-head cell and per adaptive cell.
    overhead_names: Vec<(String, String)>,
    adaptive_names: Vec<(String, String)>,
    adaptive: Vec<Series>,
    latency: Vec<Series>,
    latency_reps: Vec<u64>,
    clock: Vec<f64>,
    /// Seconds of one `Instant::now()` and `elapsed()` pair, what a timed
    /// chunk reads, per recorded round.
    clock_pair: Vec<f64>,
    isolation: Vec<String>,
    /// CPUs other processes used during each recorded round, and steal.
    load: Vec<(f64, f64)>,
}

/// `reps` for an empty-loop measurement, fixed by a pilot the first time
/// (in the warm-up round): about `sample_seconds` of calls.
fn latency_reps(
    reps: &mut [u64],
    sample_seconds: f64,
    kind: Latency,
    pilot: &mut dyn FnMut(u64) -> f64,
) -> u64 {
    let i = kind as usize;
    if reps[i] == 0 {
        let per_call = pilot(20) / 20.0;
        let target = sample_seconds / per_call.max(1e-9);
        reps[i] = (target as u64).clamp(20, 2_000_000);
    }
    reps[i]
}

fn delay_index(delays: &[(f64, u32)], d: f64) -> usize {
    delays
        .iter()
        .position(|&(x, _)| x == d)
        .expect("every delay was calibrated")
}

/// Threads of this process now (Linux `/proc/self/status`), if known.
pub fn process_threads() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Runs every measurement of `config`; `progress` hears one line per round.
pub fn run(config: &Config, progress: &mut dyn FnMut(&str)) -> Result<Report, BenchError> {
    let start = Instant::now();
    if config.threads == 0 || config.iters_per_thread == 0 || config.rounds == 0 {
        return Err(BenchError::Config(
            "threads, rounds and iterations per thread must be at least 1".into(),
        ));
    }
    if config.adaptive_schedules.is_empty() && !config.adaptive_delays_us.is_empty() {
        return Err(BenchError::Config("no adaptive schedules".into()));
    }
    let mut h = Harness::new(config)?;
    for round in 0..=config.rounds {
        let record = (round > 0).then(|| round - 1);
        h.round(round, record)?;
        progress(&format!(
            "round {round}/{} done{} ({:.1} s)",
            config.rounds,
            if round == 0 {
                " (warm-up, not recorded)"
            } else {
                ""
            },
            start.elapsed().as_secs_f64()
        ));
    }
    Ok(h.report(start.elapsed().as_secs_f64()))
}

impl<'c> Harness<'c> {
    fn new(config: &'c Config) -> Result<Self, BenchError> {
        let p = config.threads;
        let seconds_per_unit = delay::seconds_per_unit();
        let mut delays: Vec<(f64, u32)> = Vec::new();
        for &d in config.delays_us.iter().chain(&config.adaptive_delays_us) {
            if !(d.is_finite() && d > 0.0) {
                return Err(BenchError::Config(format!("delay {d} µs")));
            }
            if !delays.iter().any(|&(x, _)| x == d) {
                delays.push((d, delay::length_for(d, seconds_per_unit)));
            }
        }
        let gomp = Gomp::new(p);
        let rayon = rayon::ThreadPoolBuilder::new().num_threads(p).build()?;
        let mut overhead_names = Vec::new();
        let mut overhead = Vec::new();
        for &d in &config.delays_us {
            for s in &config.schedules {
                overhead_names.push((s.keel_spec(), format!("keel-bench/{}/{d}us", s.label())));
                overhead.push(Default::default());
            }
        }
        let mut adaptive_names = Vec::new();
        for &d in &config.adaptive_delays_us {
            for s in &config.adaptive_schedules {
                adaptive_names.push((s.clone(), format!("keel-bench/adaptive/{s}/{d}us")));
            }
        }
        let rounds = config.rounds;
        Ok(Harness {
            config,
            n: config.iterations(),
            p,
            ref_rust: vec![vec![f64::NAN; rounds]; delays.len()],
            ref_c: vec![vec![f64::NAN; rounds]; delays.len()],
            delays,
            seconds_per_unit,
            gomp,
            rayon,
            overhead,
            overhead_names,
            adaptive: (0..adaptive_names.len())
                .map(|_| Series::default())
                .collect(),
            adaptive_names,
            latency: (0..Latency::ALL.len()).map(|_| Series::default()).collect(),
            latency_reps: vec![0; Latency::ALL.len()],
            clock: Vec::new(),
            clock_pair: Vec::new(),
            isolation: Vec::new(),
            load: Vec::new(),
        })
    }

    /// Loops per sample for a delay: about `sample_seconds` of work.
    fn reps_for(&self, delay_us: f64) -> u64 {
        let per_loop = self.config.iters_per_thread as f64 * delay_us * 1e-6;
        ((self.config.sample_seconds / per_loop).ceil() as u64).max(1)
    }

    fn round(&mut self, round: usize, record: Option<usize>) -> Result<(), BenchError> {
        let before = CpuSnapshot::now();
        self.blocks(round, record)?;
        if let (Some(a), Some(b), Some(_)) = (before, CpuSnapshot::now(), record) {
            let load = b.since(&a);
            self.load.push((load.others, load.steal));
        }
        Ok(())
    }

    fn blocks(&mut self, round: usize, record: Option<usize>) -> Result<(), BenchError> {
        self.quiet_phase(record);
        let mut order = vec![Runtime::Keel, Runtime::Libgomp, Runtime::Rayon];
        order.rotate_left(round % 3);
        for runtime in order {
            match runtime {
                Runtime::Keel => self.keel_block(round, record)?,
                Runtime::Libgomp => {
                    if self.gomp.is_ok() {
                        self.gomp_block(round, record)?;
                    }
                }
                Runtime::Rayon => self.rayon_block(round, record),
            }
        }
        Ok(())
    }

    fn note_threads(&mut self, round: usize, runtime: Runtime) {
        if round == 1 {
            let threads = process_threads().map_or("unknown".to_string(), |t| t.to_string());
            self.isolation.push(format!(
                "{runtime:?} block: the process has {threads} threads"
            ));
        }
    }

    /// The clock sample and the sequential references, while no runtime
    /// has live workers.
    fn quiet_phase(&mut self, record: Option<usize>) {
        let calls = self.config.clock_calls.max(1);
        let t = Instant::now();
        for _ in 0..calls {
            black_box(Instant::now());
        }
        let per_call = t.elapsed().as_secs_f64() / calls as f64;
        let t = Instant::now();
        for _ in 0..calls {
            let began = Instant::now();
            black_box(began.elapsed());
        }
        let per_pair = t.elapsed().as_secs_f64() / calls as f64;
        let ipt = self.config.iters_per_thread;
        for (i, &(d, len)) in self.delays.iter().enumerate() {
            let reps = self.reps_for(d);
            let rust = delay::reference(len, ipt, reps) / reps as f64;
            let c = self
                .gomp
                .as_ref()
                .ok()
                .map(|g| g.reference(len, ipt, reps) / reps as f64);
            if let Some(r) = record {
                self.ref_rust[i][r] = rust;
                self.ref_c[i][r] = c.unwrap_or(f64::NAN);
            }
        }
        if record.is_some() {
            self.clock.push(per_call);
            self.clock_pair.push(per_pair);
        }
    }
}
