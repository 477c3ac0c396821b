//! The cluster model (issue 8): simulated clusters of nodes × PEs running
//! parallel BSP jobs under the coscheduling policies of
//! `keel_policy::cosched` (FCFS, GS, Local, SB, FCS), reproducing §3 of
//! `papers/flexible-coscheduling-fcs.txt`.
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
        if self.nodes.checked_mul(self.pes_per_node).is_none() {
            return Err(SimError::invalid(
                "cluster size",
                format!("{} × {}", self.nodes, self.pes_per_node),
                "the number of PEs must fit in usize",
            ));
        }
        if !(self.time_slice.is_finite() && self.time_slice > 0.0) {
            return Err(SimError::invalid(
                "time slice",
                self.time_slice,
                "must be finite and > 0 seconds",
            ));
        }
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
}
