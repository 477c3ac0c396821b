//! BSP jobs for cluster coscheduling (the FCS paper, "Flexible
//! CoScheduling: Mitigating Load Imbalance and Improving Utilization of
//! Heterogeneous Resources", §3): parallel jobs whose processes repeat a
//! superstep — compute, then a blocking exchange — a fixed number of
//! times, and the paper's test scenarios built from them, every parameter
//! fixed here and pinned by `keel-sim`'s `tests/cosched_golden.rs`.
//!
//! A job describes costs only; `keel_sim::cluster` runs them. The compute
//! phase of rank `r` in iteration `i` takes
//! `granularity × weight[r] × max(0, 1 + variability · U)` seconds at speed
//! 1, with `U` uniform on `[-1, 1]` drawn from a hash of `(seed, r, i)`:
//! the same job has the same costs under every scheduler, whatever order a
//! simulator asks for them in. `weight` is the static load imbalance of
//! Figs. 3 and 4 (ranks that "compute twice as much per iteration");
//! `variability` is Fig. 5's "±100 %, measured relative to the
//! granularity".
//!
//! | pattern | each iteration ends with |
//! |---|---|
//! | [`Pattern::Ring`] | an exchange with both ring neighbours (`r ± 1 mod P`) |
//! | [`Pattern::NearestNeighbour`] | an exchange with the 2 to 4 neighbours on a near-square, non-periodic 2-D grid ([`grid_shape`]) |
//! | [`Pattern::Barrier`] | a barrier over all ranks (Fig. 5's all-to-all "represented by a barrier") |
//!
//! Jobs are built in code ([`BspJob::new`] and its `with_*` methods) or
//! from spec strings with the policies' grammar:
//! `bsp:processes=4,granularity=0.005,iterations=12000,pattern=ring,variability=0,arrival=0,seed=0`.
//!
//! # The paper's scenarios
//!
//! | function | paper | machine | jobs |
//! |---|---|---|---|
//! | [`fine_grained`] | §3.2.1 | 2 nodes × 2 PEs | two building blocks |
//! | [`load_imbalanced`] | §3.2.2, Fig. 3 | 2 × 2 | two blocks; ranks 0–1 of job 0 and ranks 2–3 of job 1 compute twice as much |
//! | [`complementing`] | §3.2.3, Fig. 4 | 2 × 2 | a block whose ranks 0–1 compute 4×, and three 2-process blocks on PEs 2–3 |
//! | [`scaled_verification`] | §3.2 | 2 × 1 | the three scenarios at half width, as `keel cosched run` runs them: 2-rank jobs of 500 × 6 ms |
//! | [`fig5`] | §3.3, Fig. 5 | 32 × 2 | four identical 64-process jobs per (granularity, variability, pattern) |
//! | [`sweep3d_mix`] | §3.4 | 32 × 2 | four SWEEP3D-like copies: 3.5 ms steps, nearest-neighbour, ≈ 48 s alone |
//! | [`sage_mix`] | §3.4 | 32 × 2 | three SAGE-like jobs: load-imbalanced, coarser, barrier-synchronised |
//!
//! The building block (§3.2): four processes on two nodes, a ring exchange
//! every 5 ms, "approximately 60 s" alone — 12,000 iterations of 5 ms. The
//! paper gives no variability for §3.2 and reports run-to-run noise under
//! 0.1 %, so the verification jobs are deterministic. What the paper does
//! not give for §3.3–3.4 (job lengths, SAGE's granularity and imbalance) is
//! chosen here, before any simulation, as each constant's documentation
//! explains.
//!
//! A balanced four-process ring job, and whom each rank exchanges with:
//!
//! ```
//! use keel_workloads::bsp::{BspJob, Pattern};
//! let ring = Pattern::parse("ring").unwrap();
//! assert_eq!(ring.neighbours(0, 4), vec![1, 3]);
//! let job = BspJob::new(4, 0.01, 100, ring).unwrap().named("fine-0");
//! assert_eq!(job.weight(3), 1.0); // no weights: every rank computes equally
//! assert!(BspJob::new(4, 0.01, 100, ring).unwrap().with_variability(3.0).is_err());
//! ```

use keel_policy::Spec;

use crate::error::WorkloadError;
use crate::params::{count, number};

mod scenarios;

pub use scenarios::*;

/// The workload's spec name.
pub const NAME: &str = "bsp";

/// The largest variability accepted: 200 %, the paper's "additional
/// measurements in which the variability was increased up to 200 %" (§3.3).
pub const MAX_VARIABILITY: f64 = 2.0;

/// The largest number of processes a job may have (a typo should not
/// allocate gigabytes).
pub const MAX_PROCESSES: usize = 1 << 20;

/// How a superstep's communication is organised.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pattern {
    /// Exchange with both ring neighbours, `r − 1` and `r + 1` modulo the
    /// job's size (one neighbour for two processes, none for one).
    Ring,
    /// Exchange with the up/down/left/right neighbours on a non-periodic
    /// 2-D process grid of [`grid_shape`] (a nearest-neighbour stencil,
    /// SWEEP3D's and Fig. 5's "NN").
    NearestNeighbour,
    /// A barrier over every rank (Fig. 5's all-to-all).
    Barrier,
}

impl Pattern {
    /// Every pattern, in documentation order.
    pub const ALL: [Pattern; 3] = [Pattern::Ring, Pattern::NearestNeighbour, Pattern::Barrier];

    /// Its spec name: `ring`, `nn` or `barrier`.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Ring => "ring",
            Pattern::NearestNeighbour => "nn",
            Pattern::Barrier => "barrier",
        }
    }

    /// Parses `ring`, `nn` (also `nearest-neighbour`, `nearest-neighbor`)
    /// or `barrier`.
    pub fn parse(text: &str) -> Result<Self, WorkloadError> {
        match text.trim() {
            "ring" => Ok(Pattern::Ring),
            "nn" | "nearest-neighbour" | "nearest-neighbor" => Ok(Pattern::NearestNeighbour),
            "barrier" => Ok(Pattern::Barrier),
            other => Err(WorkloadError::InvalidParameter {
                workload: NAME.into(),
                key: "pattern".into(),
                value: other.into(),
                expected: "one of ring, nn, barrier".into(),
            }),
        }
    }

    /// The ranks `rank` exchanges messages with in a job of `processes`
    /// ranks, ascending and without duplicates; empty for a barrier (every
    /// rank takes part) and for a rank outside the job.
    pub fn neighbours(self, rank: usize, processes: usize) -> Vec<usize> {
        if rank >= processes {
            return Vec::new();
        }
        let mut out = match self {
            Pattern::Barrier => Vec::new(),
            Pattern::Ring => {
                let left = (rank + processes - 1) % processes;
                let right = (rank + 1) % processes;
                vec![left, right]
            }
            Pattern::NearestNeighbour => {
                let (rows, cols) = grid_shape(processes);
                let (y, x) = (rank / cols, rank % cols);
                let mut n = Vec::with_capacity(4);
                if y > 0 {
                    n.push(rank - cols);
                }
                if y + 1 < rows {
                    n.push(rank + cols);
                }
                if x > 0 {
                    n.push(rank - 1);
                }
                if x + 1 < cols {
                    n.push(rank + 1);
                }
                n
            }
        };
        out.retain(|&n| n != rank);
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// The process grid of a nearest-neighbour job: `rows × cols = processes`
/// with `rows <= cols` and `rows` the largest divisor of `processes` not
/// above its square root (64 → 8 × 8, 32 → 4 × 8, a prime p → 1 × p).
pub fn grid_shape(processes: usize) -> (usize, usize) {
    if processes == 0 {
        return (0, 0);
    }
    let mut rows = (processes as f64).sqrt() as usize;
    while rows > 1 && (rows * rows > processes || !processes.is_multiple_of(rows)) {
        rows -= 1;
    }
    let rows = rows.max(1);
    (rows, processes / rows)
}

/// One parallel BSP job.
#[derive(Clone, Debug, PartialEq)]
pub struct BspJob {
    /// A label for reports (`job 0`, `sweep3d-1`, ...).
    pub name: String,
    /// Number of processes (ranks), one per PE.
    pub processes: usize,
    /// Mean compute seconds per iteration of a weight-1 rank, at speed 1.
    pub granularity: f64,
    /// Relative half-width of each compute phase's uniform variation, in
    /// `[0, MAX_VARIABILITY]` (1 = Fig. 5's ±100 %).
    pub variability: f64,
    /// Supersteps each process runs.
    pub iterations: u64,
    /// The communication at the end of every superstep.
    pub pattern: Pattern,
    /// Per-rank compute multipliers (static load imbalance); empty means
    /// every rank weighs 1.
    pub weights: Vec<f64>,
    /// The PE of each rank (`pes[r]`), for scenarios that pin jobs to
    /// nodes (Fig. 4); `None` lets the scheduler place the job.
    pub pes: Option<Vec<usize>>,
    /// Submission time, seconds.
    pub arrival: f64,
    /// Seed of the variability draws.
    pub seed: u64,
}

fn invalid(key: &str, value: impl ToString, expected: &str) -> WorkloadError {
    WorkloadError::InvalidParameter {
        workload: NAME.into(),
        key: key.into(),
        value: value.to_string(),
        expected: expected.into(),
    }
}

impl BspJob {
    /// A balanced, deterministic job arriving at time 0 (validated).
    pub fn new(
        processes: usize,
        granularity: f64,
        iterations: u64,
        pattern: Pattern,
    ) -> Result<Self, WorkloadError> {
        let job = BspJob {
            name: String::new(),
            processes,
            granularity,
            variability: 0.0,
            iterations,
            pattern,
            weights: Vec::new(),
            pes: None,
            arrival: 0.0,
            seed: 0,
        };
        job.validate()?;
        Ok(job)
    }

    /// With a label.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// With Fig. 5's variability (validated).
    pub fn with_variability(mut self, variability: f64) -> Result<Self, WorkloadError> {
        self.variability = variability;
        self.validate()?;
        Ok(self)
    }

    /// With per-rank compute weights (validated: one per rank, finite,
    /// `>= 0`, not all zero).
    pub fn with_weights(mut self, weights: Vec<f64>) -> Result<Self, WorkloadError> {
        self.weights = weights;
        self.validate()?;
        Ok(self)
    }

    /// Pinned to `pes` (`pes[r]` is rank `r`'s PE; validated: one per rank,
    /// no PE twice). Whether the PEs exist is the cluster's to check.
    pub fn on_pes(mut self, pes: Vec<usize>) -> Result<Self, WorkloadError> {
        self.pes = Some(pes);
        self.validate()?;
        Ok(self)
    }

    /// Submitted at `arrival` seconds (validated).
    pub fn arriving_at(mut self, arrival: f64) -> Result<Self, WorkloadError> {
        self.arrival = arrival;
        self.validate()?;
        Ok(self)
    }

    /// With the seed of its variability draws.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        if self.processes == 0 || self.processes > MAX_PROCESSES {
            return Err(invalid(
                "processes",
                self.processes,
                &format!("an integer in 1..={MAX_PROCESSES}"),
            ));
        }
        if !(self.granularity.is_finite() && self.granularity > 0.0) {
            return Err(invalid(
                "granularity",
                self.granularity,
                "a finite number of seconds > 0",
            ));
        }
        if !(self.variability.is_finite() && (0.0..=MAX_VARIABILITY).contains(&self.variability)) {
            return Err(invalid(
                "variability",
                self.variability,
                &format!("a number in 0..={MAX_VARIABILITY}"),
            ));
        }
        if self.iterations == 0 {
            return Err(invalid("iterations", 0, "an integer >= 1"));
        }
        if !(self.arrival.is_finite() && self.arrival >= 0.0) {
            return Err(invalid(
                "arrival",
                self.arrival,
                "a finite number of seconds >= 0",
            ));
        }
        if !self.weights.is_empty() {
            if self.weights.len() != self.processes {
                return Err(invalid(
                    "weights",
                    format!("{} weights", self.weights.len()),
                    "one weight per process",
                ));
            }
            if let Some(w) = self.weights.iter().find(|w| !(w.is_finite() && **w >= 0.0)) {
                return Err(invalid("weights", w, "finite numbers >= 0"));
            }
            if self.weights.iter().all(|&w| w == 0.0) {
                return Err(invalid("weights", "all 0", "at least one weight > 0"));
            }
        }
        if let Some(pes) = &self.pes {
            if pes.len() != self.processes {
                return Err(invalid(
                    "pes",
                    format!("{} PEs", pes.len()),
                    "one PE per process",
                ));
            }
            for (i, pe) in pes.iter().enumerate() {
                if pes[..i].contains(pe) {
                    return Err(invalid("pes", pe, "distinct PEs (one process per PE)"));
                }
            }
        }
        Ok(())
    }

    /// Rank `rank`'s compute weight (1 without weights).
    pub fn weight(&self, rank: usize) -> f64 {
        self.weights.get(rank).copied().unwrap_or(1.0)
    }

    /// The variability draw `U ∈ [-1, 1]` of `rank` in `iteration`.
    pub fn draw(&self, rank: usize, iteration: u64) -> f64 {
        let h = mix(self.seed ^ mix(rank as u64 ^ mix(iteration.wrapping_add(0x5bd1_e995))));
        // The top 53 bits as a uniform on [0, 1), then onto [-1, 1].
        let unit = (h >> 11) as f64 / (1u64 << 53) as f64;
        2.0 * unit - 1.0
    }

    /// Compute seconds (at speed 1) of `rank` in `iteration`.
    pub fn compute(&self, rank: usize, iteration: u64) -> f64 {
        let factor = if self.variability == 0.0 {
            1.0
        } else {
            (1.0 + self.variability * self.draw(rank, iteration)).max(0.0)
        };
        self.granularity * self.weight(rank) * factor
    }

    /// Expected compute seconds of one rank over the whole job.
    pub fn expected_work(&self, rank: usize) -> f64 {
        // E[max(0, 1 + vU)] for U uniform on [-1, 1]: 1 while v <= 1, and
        // (1 + v)² / (4v) beyond, where the clamp at 0 starts to bite.
        let mean = if self.variability <= 1.0 {
            1.0
        } else {
            (1.0 + self.variability).powi(2) / (4.0 * self.variability)
        };
        self.granularity * self.weight(rank) * mean * self.iterations as f64
    }

    /// The heaviest rank's weight.
    pub fn max_weight(&self) -> f64 {
        (0..self.processes)
            .map(|r| self.weight(r))
            .fold(0.0, f64::max)
    }

    /// Seconds the job takes alone on dedicated PEs when it is
    /// deterministic (`variability = 0`) and each exchange costs
    /// `comm` seconds: `iterations × (granularity × max weight + comm)`
    /// (the heaviest rank paces every superstep). With variability it is
    /// a lower bound.
    pub fn dedicated_time(&self, comm: f64) -> f64 {
        let comm = if self.communicates() { comm } else { 0.0 };
        self.iterations as f64 * (self.granularity * self.max_weight() + comm)
    }

    /// Whether the job communicates at all (a one-process ring or grid
    /// does not; a barrier of one rank still synchronises with itself and
    /// costs nothing either).
    pub fn communicates(&self) -> bool {
        self.processes > 1
    }

    /// `bsp[:processes=4,granularity=0.005,iterations=12000,pattern=ring,
    /// variability=0,arrival=0,seed=0]` — the §3.2 building block by
    /// default. Weights and pinned PEs are set in code.
    pub fn from_spec(spec: &Spec) -> Result<Self, WorkloadError> {
        spec.check_keys(&[
            "processes",
            "granularity",
            "iterations",
            "pattern",
            "variability",
            "arrival",
            "seed",
        ])?;
        let pattern = match spec.token("pattern")? {
            Some(t) => Pattern::parse(t)?,
            None => Pattern::Ring,
        };
        let job = BspJob {
            name: String::new(),
            processes: count(spec, "processes", BLOCK_PROCESSES, 1, MAX_PROCESSES)?,
            granularity: number(
                spec,
                "granularity",
                BLOCK_GRANULARITY,
                (0.0, true),
                f64::INFINITY,
            )?,
            variability: number(spec, "variability", 0.0, (0.0, false), MAX_VARIABILITY)?,
            iterations: count(spec, "iterations", BLOCK_ITERATIONS as usize, 1, usize::MAX)? as u64,
            pattern,
            weights: Vec::new(),
            pes: None,
            arrival: number(spec, "arrival", 0.0, (0.0, false), f64::INFINITY)?,
            seed: count(spec, "seed", 0, 0, usize::MAX)? as u64,
        };
        job.validate()?;
        Ok(job)
    }

    /// Builds from a spec string.
    pub fn parse(text: &str) -> Result<Self, WorkloadError> {
        let spec = Spec::parse(text)?;
        if spec.name != NAME {
            return Err(WorkloadError::UnknownWorkload {
                name: spec.name,
                valid: vec![NAME.into()],
            });
        }
        Self::from_spec(&spec)
    }

    /// The spec of this job's spec-expressible fields (weights and pinned
    /// PEs are not).
    pub fn spec(&self) -> String {
        format!(
            "{NAME}:processes={},granularity={},iterations={},pattern={},variability={},arrival={},seed={}",
            self.processes,
            self.granularity,
            self.iterations,
            self.pattern.name(),
            self.variability,
            self.arrival,
            self.seed
        )
    }
}

/// The jobs of a Standard Workload Format log's arrival stream
/// ([`crate::swf::arrivals`]), for throughput studies: each job keeps its
/// processors (allocated, else requested) and its submit time (shifted so
/// the first job arrives at 0), and its run time becomes
/// `round(run time / granularity)` iterations (at least 1) of `granularity`
/// compute seconds with `variability`, ending in `pattern`. Its seed is its
/// job number.
pub fn from_swf(
    arrivals: &[crate::swf::Arrival],
    granularity: f64,
    variability: f64,
    pattern: Pattern,
) -> Result<Vec<BspJob>, WorkloadError> {
    let origin = arrivals
        .iter()
        .map(|a| a.submit_time)
        .fold(f64::INFINITY, f64::min);
    arrivals
        .iter()
        .map(|a| {
            if !(granularity.is_finite() && granularity > 0.0) {
                return Err(invalid(
                    "granularity",
                    granularity,
                    "a finite number of seconds > 0",
                ));
            }
            let iterations = ((a.run_time / granularity).round() as u64).max(1);
            Ok(BspJob::new(a.procs, granularity, iterations, pattern)?
                .with_variability(variability)?
                .arriving_at(a.submit_time - origin)?
                .named(format!("swf {}", a.id))
                .with_seed(a.id))
        })
        .collect()
}

/// SplitMix64's finaliser: a bijective 64-bit mix.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A machine and the jobs submitted to it.
#[derive(Clone, Debug, PartialEq)]
pub struct BspScenario {
    /// Short name (`fine-grained`, `fig5-nn-g0.004-v0.5`, ...).
    pub name: String,
    /// What it reproduces, for report headers.
    pub title: String,
    /// Nodes.
    pub nodes: usize,
    /// PEs per node.
    pub pes_per_node: usize,
    /// The jobs, in submission order (job `k` is `jobs[k]`).
    pub jobs: Vec<BspJob>,
}

impl BspScenario {
    /// Total PEs.
    pub fn pes(&self) -> usize {
        self.nodes * self.pes_per_node
    }

    /// The same scenario with every job's iterations multiplied by
    /// `factor` (rounded, at least 1): a quick version for smoke tests.
    pub fn scaled(mut self, factor: f64) -> Result<Self, WorkloadError> {
        if !(factor.is_finite() && factor > 0.0) {
            return Err(invalid("scale", factor, "a finite number > 0"));
        }
        for job in &mut self.jobs {
            job.iterations = ((job.iterations as f64 * factor).round() as u64).max(1);
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbours_of_each_pattern() {
        assert_eq!(Pattern::Ring.neighbours(0, 4), [1, 3]);
        assert_eq!(Pattern::Ring.neighbours(1, 2), [0]);
        assert!(Pattern::Ring.neighbours(0, 1).is_empty());
        assert_eq!(grid_shape(64), (8, 8));
        assert_eq!(grid_shape(32), (4, 8));
        assert_eq!(grid_shape(7), (1, 7));
        assert_eq!(grid_shape(4), (2, 2));
        assert_eq!(Pattern::NearestNeighbour.neighbours(0, 64), [1, 8]);
        assert_eq!(Pattern::NearestNeighbour.neighbours(9, 64), [1, 8, 10, 17]);
        assert_eq!(Pattern::NearestNeighbour.neighbours(63, 64), [55, 62]);
        assert!(Pattern::Barrier.neighbours(3, 8).is_empty());
        assert!(Pattern::Ring.neighbours(5, 4).is_empty());
        // Neighbourhood is symmetric for the point-to-point patterns.
        for p in [Pattern::Ring, Pattern::NearestNeighbour] {
            for n in 1..20 {
                for r in 0..n {
                    for q in p.neighbours(r, n) {
                        assert!(p.neighbours(q, n).contains(&r), "{p:?} {r} {q} of {n}");
                    }
                }
            }
        }
    }

    #[test]
    fn compute_is_deterministic_bounded_and_unbiased() {
        let job = BspJob::new(4, 0.01, 1000, Pattern::Barrier)
            .unwrap()
            .with_variability(1.0)
            .unwrap()
            .with_seed(3);
        let draws: Vec<f64> = (0..20_000).map(|i| job.compute(1, i)).collect();
        assert!(draws.iter().all(|&c| (0.0..=0.02).contains(&c)));
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!((mean - 0.01).abs() < 2e-4, "mean {mean}");
        assert_eq!(job.compute(1, 7), job.clone().compute(1, 7));
        assert_ne!(job.compute(1, 7), job.compute(2, 7));
        assert_ne!(job.compute(1, 7), job.clone().with_seed(4).compute(1, 7));
        let flat = BspJob::new(4, 0.01, 10, Pattern::Ring).unwrap();
        assert_eq!(flat.compute(0, 0), 0.01);
    }

    #[test]
    fn bad_jobs_are_typed_errors() {
        assert!(BspJob::new(0, 0.01, 1, Pattern::Ring).is_err());
        assert!(BspJob::new(2, 0.0, 1, Pattern::Ring).is_err());
        assert!(BspJob::new(2, f64::NAN, 1, Pattern::Ring).is_err());
        assert!(BspJob::new(2, 0.01, 0, Pattern::Ring).is_err());
        let ok = BspJob::new(2, 0.01, 1, Pattern::Ring).unwrap();
        assert!(ok.clone().with_variability(-0.1).is_err());
        assert!(ok.clone().with_variability(2.5).is_err());
        assert!(ok.clone().with_weights(vec![1.0]).is_err());
        assert!(ok.clone().with_weights(vec![1.0, -1.0]).is_err());
        assert!(ok.clone().with_weights(vec![0.0, 0.0]).is_err());
        assert!(ok.clone().on_pes(vec![1, 1]).is_err());
        assert!(ok.clone().on_pes(vec![1]).is_err());
        assert!(ok.clone().arriving_at(-1.0).is_err());
        assert!(Pattern::parse("tree").is_err());
        let e = BspJob::parse("bsp:pattern=star").unwrap_err().to_string();
        assert!(e.contains("ring, nn, barrier"), "{e}");
        assert!(BspJob::parse("bsp:wat=1").is_err());
        assert!(BspJob::parse("primes").is_err());
        assert!(BspJob::parse("bsp:granularity=-1").is_err());
    }

    #[test]
    fn specs_round_trip() {
        let job = BspJob::parse("bsp:processes=8,granularity=0.02,iterations=50,pattern=nn,variability=0.5,arrival=3,seed=9").unwrap();
        assert_eq!(job.processes, 8);
        assert_eq!(job.pattern, Pattern::NearestNeighbour);
        assert_eq!(BspJob::parse(&job.spec()).unwrap(), job);
        let block = BspJob::parse("bsp").unwrap();
        assert_eq!(block.processes, BLOCK_PROCESSES);
        assert_eq!(block.iterations, BLOCK_ITERATIONS);
        assert_eq!(block.dedicated_time(0.0), 60.0);
    }

    #[test]
    fn expected_work_accounts_for_the_clamp() {
        let job = BspJob::new(1, 1.0, 1, Pattern::Ring)
            .unwrap()
            .with_variability(2.0)
            .unwrap();
        let n = 200_000;
        let mean = (0..n).map(|i| job.compute(0, i)).sum::<f64>() / n as f64;
        assert!((mean - job.expected_work(0)).abs() < 0.01, "{mean}");
    }

    #[test]
    fn swf_arrivals_become_jobs() {
        let log = crate::swf::parse_swf(
            "; MaxProcs: 8\n\
             1 100 0 10 4 -1 -1 4 -1 -1 1 1 1 -1 1 -1 -1 -1\n\
             2 160 0 0.2 2 -1 -1 2 -1 -1 1 1 1 -1 1 -1 -1 -1\n",
        )
        .unwrap();
        let stream = crate::swf::arrivals(&log.jobs, 8, crate::swf::WideJobs::Drop).unwrap();
        let jobs = from_swf(&stream.jobs, 0.1, 0.5, Pattern::Barrier).unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!((jobs[0].processes, jobs[0].iterations), (4, 100));
        assert_eq!((jobs[0].arrival, jobs[1].arrival), (0.0, 60.0));
        // A run time under one granularity still runs once.
        assert_eq!((jobs[1].processes, jobs[1].iterations), (2, 2));
        assert_eq!(jobs[1].seed, 2);
        assert_eq!(jobs[0].variability, 0.5);
        assert!(from_swf(&stream.jobs, 0.0, 0.0, Pattern::Ring).is_err());
        assert!(from_swf(&stream.jobs, 0.1, 3.0, Pattern::Ring).is_err());
    }

    #[test]
    fn scaling_keeps_at_least_one_iteration() {
        let s = fine_grained().scaled(1e-9).unwrap();
        assert!(s.jobs.iter().all(|j| j.iterations == 1));
        assert!(fine_grained().scaled(0.0).is_err());
    }
}
