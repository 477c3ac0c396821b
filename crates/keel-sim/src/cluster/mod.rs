//! The cluster model: simulated clusters of nodes × PEs running
//! parallel BSP jobs under the coscheduling policies of
//! `keel_policy::cosched` (FCFS, GS, Local, SB, FCS), reproducing §3 of
//! the Flexible CoScheduling paper (FCS).
//!
//! - [`Cluster`]: the machine's shape, its gang clock and its
//!   context-switch cost; [`CoschedModel`] adds the network, the nodes'
//!   local OS scheduler and the other costs ([`params`] documents every
//!   constant and where it comes from).
//! - Jobs are `keel_workloads::bsp` descriptions: processes, granularity,
//!   variability, static imbalance, pattern (ring, nearest-neighbour,
//!   barrier), iterations, arrival.
//! - [`simulate`] runs them under any policy, asked through its
//!   [`CoschedPolicy`](keel_policy::cosched::CoschedPolicy) trait — the
//!   matrix packing, each PE's slot decision, the wait mode and FCS's
//!   Algorithm 2 are the policy crate's, never re-implemented here; how
//!   the engine enacts them is in [`model`].
//! - [`scenarios`] runs the paper's scenarios under several policies and
//!   lays the results out like the paper's tables, beside the paper's own
//!   figures.
//!
//! Runs are deterministic: the jobs' costs are hashed from their seeds,
//! and the OS schedulers' tick phases, first time slices and time-slice
//! jitter come from a
//! [`rand_chacha::ChaCha8Rng`] seeded by [`CoschedModel::seed`].
//!
//! Two small ring jobs on one node of two PEs: FCFS runs them one after the other.
//!
//! ```
//! use keel_sim::cluster::{simulate_spec, CoschedModel};
//! use keel_workloads::bsp::{BspJob, Pattern};
//! let model = CoschedModel::new(1, 2).unwrap();
//! let job = BspJob::new(2, 0.001, 20, Pattern::Ring).unwrap();
//! let run = simulate_spec(&model, "fcfs", &[job.clone(), job]).unwrap();
//! let ends = run.ends();
//! assert!(ends[0] >= 0.020); // 20 supersteps of 1 ms, plus the exchanges
//! assert!(ends[1] >= ends[0] + 0.020);
//! ```

pub mod comm;
pub mod model;
pub mod params;
pub mod run;
pub mod scenarios;

pub use comm::CommCounters;
pub use model::{simulate, simulate_spec};
pub use params::{CommClock, CoschedModel, CpuClock, NetModel, OsModel};
pub use run::{ClassChange, CoschedRun, JobResult, PeUsage, ProcessResult, RunSegment};

use serde::{Deserialize, Serialize};

use crate::error::SimError;

/// The most PEs a simulated cluster may have: 2²⁰ = 1,048,576 (the paper's
/// clusters have 64). The engine keeps state per PE and per process and
/// the matrix a row per PE; past this, building the model alone would
/// exhaust memory instead of failing.
pub const MAX_PES: usize = 1 << 20;

/// The shortest time quantum a model accepts — the gang time slice, the
/// local OS scheduler's quantum and tick, a BSP job's granularity: 1 µs.
/// Real kernels tick every 0.1–10 ms; a shorter quantum only multiplies
/// the events per simulated second (at 1 ps a run would never end).
pub const MIN_QUANTUM: f64 = 1e-6;

/// The longest time quantum a model accepts: one hour.
pub const MAX_QUANTUM: f64 = 3600.0;

/// Checks that `value` is a time quantum in
/// [`MIN_QUANTUM`, `MAX_QUANTUM`] seconds.
pub fn check_quantum(what: &'static str, value: f64) -> Result<(), SimError> {
    if !value.is_finite() || value <= 0.0 {
        return Err(SimError::invalid(
            what,
            value,
            "must be finite and > 0 seconds",
        ));
    }
    if !(MIN_QUANTUM..=MAX_QUANTUM).contains(&value) {
        return Err(SimError::over_limit(
            what,
            format!("{value} s"),
            format!("between MIN_QUANTUM = {MIN_QUANTUM} s and MAX_QUANTUM = {MAX_QUANTUM} s"),
        ));
    }
    Ok(())
}

/// The most simulated work one run may hold: Σ over the jobs of
/// processes × iterations, 10⁸ compute phases. The paper's largest
/// scenario (the SWEEP3D-like mix) holds about 3.5 × 10⁶, so `--scale` up
/// to about 25 fits; each phase costs the engine a few events, and past
/// this a run takes hours (a log's run time of 10⁹ s at 0.1 s
/// granularity would be 10¹⁰ phases per process).
pub const MAX_PROCESS_ITERATIONS: u64 = 100_000_000;

/// Checks that `jobs` hold at most [`MAX_PROCESS_ITERATIONS`] compute
/// phases in all, naming the first job that crosses it.
pub fn check_work(jobs: &[keel_workloads::bsp::BspJob]) -> Result<(), SimError> {
    let mut total: u128 = 0;
    for (k, job) in jobs.iter().enumerate() {
        total += job.processes as u128 * job.iterations as u128;
        if total > MAX_PROCESS_ITERATIONS as u128 {
            return Err(SimError::over_limit(
                "simulated work",
                format!(
                    "of at least {total} process-iterations (job {k}: {} processes × {} iterations)",
                    job.processes, job.iterations
                ),
                format!(
                    "at most MAX_PROCESS_ITERATIONS = {MAX_PROCESS_ITERATIONS} process-iterations in one run"
                ),
            ));
        }
    }
    Ok(())
}

/// A cluster: nodes of identical PEs and the gang-scheduling clock.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Cluster {
    /// Number of nodes (≥ 1).
    pub nodes: usize,
    /// PEs per node (≥ 1).
    pub pes_per_node: usize,
    /// Seconds between two strobes of the global time-slice clock (> 0):
    /// the default slot length; a gang policy's own slice (`gs:t-slice`,
    /// FCS's T_slice) takes precedence in [`simulate`].
    pub time_slice: f64,
    /// Seconds a PE loses switching between processes at a strobe (≥ 0,
    /// less than the time slice).
    pub context_switch: f64,
}

impl Cluster {
    /// A validated cluster.
    pub fn new(
        nodes: usize,
        pes_per_node: usize,
        time_slice: f64,
        context_switch: f64,
    ) -> Result<Self, SimError> {
        let c = Cluster {
            nodes,
            pes_per_node,
            time_slice,
            context_switch,
        };
        c.validate()?;
        Ok(c)
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<(), SimError> {
        if self.nodes == 0 {
            return Err(SimError::invalid("cluster nodes", 0, "at least 1"));
        }
        if self.pes_per_node == 0 {
            return Err(SimError::invalid("PEs per node", 0, "at least 1"));
        }
        let pes = self.nodes.checked_mul(self.pes_per_node);
        if pes.is_none_or(|pes| pes > MAX_PES) {
            let product = (self.nodes as u128) * (self.pes_per_node as u128);
            return Err(SimError::over_limit(
                "cluster size",
                format!(
                    "{} nodes × {} PEs = {product} PEs",
                    self.nodes, self.pes_per_node
                ),
                format!("at most MAX_PES = {MAX_PES} PEs"),
            ));
        }
        check_quantum("time slice", self.time_slice)?;
        if !(self.context_switch.is_finite()
            && self.context_switch >= 0.0
            && self.context_switch < self.time_slice)
        {
            return Err(SimError::invalid(
                "context switch",
                self.context_switch,
                "must be ≥ 0 seconds and shorter than the time slice",
            ));
        }
        Ok(())
    }

    /// Total PEs.
    pub fn pes(&self) -> usize {
        self.nodes * self.pes_per_node
    }

    /// The node of PE `pe` (PEs are numbered node by node), or `None` when
    /// there is no such PE.
    pub fn node_of(&self, pe: usize) -> Option<usize> {
        (pe < self.pes()).then(|| pe / self.pes_per_node)
    }

    /// The PEs of node `node`, or `None` when there is no such node.
    pub fn pes_of(&self, node: usize) -> Option<std::ops::Range<usize>> {
        (node < self.nodes).then(|| node * self.pes_per_node..(node + 1) * self.pes_per_node)
    }

    /// The fraction of a time slice left for work after the switch.
    pub fn useful_fraction(&self) -> f64 {
        1.0 - self.context_switch / self.time_slice
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_node_by_node() {
        let c = Cluster::new(4, 16, 0.05, 0.001).unwrap();
        assert_eq!(c.pes(), 64);
        assert_eq!(c.node_of(0), Some(0));
        assert_eq!(c.node_of(17), Some(1));
        assert_eq!(c.node_of(64), None);
        assert_eq!(c.pes_of(3), Some(48..64));
        assert_eq!(c.pes_of(4), None);
        assert!((c.useful_fraction() - 0.98).abs() < 1e-12);
    }

    #[test]
    fn bad_clusters_are_typed_errors() {
        assert!(Cluster::new(0, 16, 0.05, 0.0).is_err());
        assert!(Cluster::new(4, 0, 0.05, 0.0).is_err());
        assert!(Cluster::new(4, 16, 0.0, 0.0).is_err());
        assert!(Cluster::new(4, 16, 0.05, 0.05).is_err());
        assert!(Cluster::new(4, 16, f64::NAN, 0.0).is_err());
        assert!(Cluster::new(usize::MAX, 2, 0.05, 0.0).is_err());
    }

    #[test]
    fn clusters_past_max_pes_are_refused_naming_the_limit() {
        for (nodes, pes) in [(100_000, 100_000), (usize::MAX, 2), (MAX_PES, 2)] {
            let e = Cluster::new(nodes, pes, 0.05, 0.0).unwrap_err();
            assert!(matches!(e, SimError::OverLimit { .. }), "{e}");
            assert!(e.to_string().contains("MAX_PES = 1048576"), "{e}");
        }
        let product = Cluster::new(100_000, 100_000, 0.05, 0.0).unwrap_err();
        assert!(product.to_string().contains("10000000000 PEs"), "{product}");
        assert!(Cluster::new(MAX_PES, 1, 0.05, 0.0).is_ok());
    }

    #[test]
    fn time_slices_outside_the_quantum_limits_are_refused() {
        for slice in [1e-12, 1e-7, 1e5, f64::MAX] {
            let e = Cluster::new(2, 2, slice, 0.0).unwrap_err();
            assert!(e.to_string().contains("MIN_QUANTUM"), "{e}");
        }
        assert!(Cluster::new(2, 2, MIN_QUANTUM, 0.0).is_ok());
    }
}
