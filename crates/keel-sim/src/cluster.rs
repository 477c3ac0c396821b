//! The cluster model's place (issue 7 leaves it for the coscheduling issue;
//! `papers/flexible-coscheduling-fcs.txt`).
//!
//! **What it will hold.** A cluster of `nodes` × `pes_per_node` processing
//! elements running *jobs*, each a set of BSP processes (one per PE it is
//! given) that alternate compute phases (a granularity, with variability)
//! and communication (ring or barrier patterns); a global time-slice clock
//! (the STORM strobe: every `time_slice` seconds each node's manager
//! switches to the next row of the Ousterhout matrix, paying a context
//! switch); and per-process communication counters, which is what FCS's
//! classification (CS / F / DC) reads.
//!
//! **How it plugs into the engine.** Like the farm and objects models it is
//! an [`EventQueue`](crate::engine::EventQueue) of a few event kinds — a
//! time-slice boundary, a process's compute phase ending (computed on a
//! [`WorkerModel`](crate::worker::WorkerModel) per PE, so speed, noise and
//! perturbations apply unchanged), a message arriving — and it asks the
//! `keel_policy::cosched` policies (FCFS, GS, Local, SB, FCS, written in
//! that issue) for the matrix and the per-slot behaviour through their
//! traits, never re-implementing them here. Jobs will come from
//! `keel-workloads`' BSP job descriptions.
//!
//! **What is here now.** Only what is real without those policies: the
//! validated description of the machine ([`Cluster`]) and the PE ↔ node
//! arithmetic every part of that model (and the objects model's node
//! layout) shares.

use serde::{Deserialize, Serialize};

use crate::error::SimError;

/// A cluster: nodes of identical PEs and the gang-scheduling clock.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Cluster {
    /// Number of nodes (≥ 1).
    pub nodes: usize,
    /// PEs per node (≥ 1).
    pub pes_per_node: usize,
    /// Seconds between two strobes of the global time-slice clock (> 0).
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
