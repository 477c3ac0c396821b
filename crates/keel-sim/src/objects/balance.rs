//! A remap in the simulator: Charm++'s load-balancing step as
//! `keel::objects` enacts it (`crates/keel/src/objects/remap.rs`), with the
//! same context handler — measured object loads and PU background loads
//! (dynamic, runtime origin), migratability, availability and the current
//! placement — handed to the unchanged registry policy, and its decision
//! checked the same way (one PU per object, no unmigratable object moved, no
//! unavailable PU used).
//!
//! Greedy moves one of two equal objects off an overloaded PU:
//!
//! ```
//! use keel_sim::objects::{decide, RemapInput};
//! let greedy = keel_policy::mapping::registry().build("greedy").unwrap();
//! let input = RemapInput {
//!     loads: &[1.0, 1.0],
//!     background: &[0.0, 0.0],
//!     migratable: &[true, true],
//!     available: &[true, true],
//!     current: &[0, 0],
//! };
//! let decided = decide(greedy.as_ref(), &input).unwrap();
//! assert_eq!(decided.migrations, 1);
//! assert_eq!((decided.lambda_before, decided.lambda_after), (1.0, 0.0));
//! ```

use keel_policy::mapping::MappingInput;
use keel_policy::{
    metrics, Concept, ContextHandler, Mapping, MappingPolicy, Model, Origin, Subject,
};

use crate::error::SimError;

/// What a remap reads: the load database and the runtime's flags.
#[derive(Debug, Clone, Copy)]
pub struct RemapInput<'a> {
    /// Each object's measured seconds since the last remap.
    pub loads: &'a [f64],
    /// Each PU's background seconds since the last remap.
    pub background: &'a [f64],
    /// Which objects may move.
    pub migratable: &'a [bool],
    /// Which PUs may run objects.
    pub available: &'a [bool],
    /// Each object's PU now.
    pub current: &'a [usize],
}

/// A checked decision and what it does to the measured loads.
#[derive(Debug, Clone, PartialEq)]
pub struct Decided {
    /// The new PU of every object.
    pub mapping: Mapping,
    /// Objects that move.
    pub migrations: usize,
    /// λ of the measured loads under the old placement (available PUs).
    pub lambda_before: f64,
    /// λ the same loads would have under the new one.
    pub lambda_after: f64,
}

/// Calls `policy` through a context handler built exactly as
/// `keel::objects::Objects::rebalance` builds it, and checks the decision.
pub fn decide(policy: &dyn MappingPolicy, input: &RemapInput<'_>) -> Result<Decided, SimError> {
    let spec = policy.spec().to_string();
    let (n, pus) = (input.loads.len(), input.background.len());
    for (what, len, want) in [
        ("migratable flags", input.migratable.len(), n),
        ("current placement", input.current.len(), n),
        ("availability flags", input.available.len(), pus),
    ] {
        if len != want {
            return Err(SimError::invalid(
                what,
                len,
                "one per object (flags, placement) or per PU (availability)",
            ));
        }
    }
    let dynamic = |subject| Concept::Workload {
        subject,
        model: Model::Dynamic,
    };
    let mut ctx = ContextHandler::new();
    ctx.provide_values(dynamic(Subject::Tasks), Origin::Runtime, input.loads)
        .provide_values(dynamic(Subject::Pus), Origin::Runtime, input.background)
        .provide_flags(Concept::TaskMigratable, Origin::Runtime, input.migratable)
        .provide_flags(Concept::PuAvailability, Origin::Runtime, input.available)
        .provide_placement(Origin::Runtime, input.current);
    let mapping = policy
        .map(&ctx)
        .map_err(|e| SimError::Policy(format!("`{spec}`: {e}")))?;
    if mapping.ntasks() != n || mapping.npus() != pus {
        return Err(SimError::Policy(format!(
            "`{spec}` decided for {} objects on {} PUs; the run has {n} on {pus}",
            mapping.ntasks(),
            mapping.npus()
        )));
    }
    for (object, (&from, &to)) in input.current.iter().zip(mapping.as_slice()).enumerate() {
        if !input.migratable[object] && from != to {
            return Err(SimError::Policy(format!(
                "`{spec}` moved unmigratable object {object} from PU {from} to PU {to}"
            )));
        }
        if !input.available[to] {
            return Err(SimError::Policy(format!(
                "`{spec}` placed object {object} on unavailable PU {to}"
            )));
        }
    }
    let eval = MappingInput::new(input.loads, input.background)
        .and_then(|i| i.with_availability(input.available))
        .and_then(|i| i.with_current(input.current))?;
    let old = Mapping::new(input.current.to_vec(), pus)?;
    Ok(Decided {
        migrations: metrics::migrations(input.current, mapping.as_slice()),
        lambda_before: metrics::evaluate(&eval, &old).lambda,
        lambda_after: metrics::evaluate(&eval, &mapping).lambda,
        mapping,
    })
}

/// The cost of moving objects between nodes: each node's network link
/// sends and receives at `bandwidth` bytes per second, links work in
/// parallel, and a remap that moves anything across nodes pays `latency`
/// once. Moves inside a node are free: the object stays in the node's
/// address space and only its owner changes, as in `keel::objects`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MigrationModel {
    /// Bytes of one object's state.
    pub object_bytes: f64,
    /// Bytes per second through one node's link.
    pub bandwidth: f64,
    /// Seconds of latency per remap with cross-node moves.
    pub latency: f64,
}

impl MigrationModel {
    /// Checks every field.
    pub fn validate(&self) -> Result<(), SimError> {
        if !(self.object_bytes.is_finite() && self.object_bytes >= 0.0) {
            return Err(SimError::invalid(
                "object bytes",
                self.object_bytes,
                "must be finite and ≥ 0",
            ));
        }
        if !(self.bandwidth.is_finite() && self.bandwidth > 0.0) {
            return Err(SimError::invalid(
                "bandwidth",
                self.bandwidth,
                "must be finite and > 0 bytes/s",
            ));
        }
        if !(self.latency.is_finite() && self.latency >= 0.0) {
            return Err(SimError::invalid(
                "migration latency",
                self.latency,
                "must be finite and ≥ 0 seconds",
            ));
        }
        Ok(())
    }

    /// Seconds to go from `from` to `to` with `pus_per_node` PUs per node.
    pub fn cost(&self, from: &[usize], to: &[usize], pus_per_node: usize) -> f64 {
        let nodes = from
            .iter()
            .chain(to)
            .map(|&p| p / pus_per_node + 1)
            .max()
            .unwrap_or(0);
        let mut out = vec![0u64; nodes];
        let mut inn = vec![0u64; nodes];
        let mut any = false;
        for (&a, &b) in from.iter().zip(to) {
            let (na, nb) = (a / pus_per_node, b / pus_per_node);
            if na != nb {
                out[na] += 1;
                inn[nb] += 1;
                any = true;
            }
        }
        if !any {
            return 0.0;
        }
        let busiest = out.iter().zip(&inn).map(|(&o, &i)| o.max(i)).max();
        self.latency + busiest.unwrap_or(0) as f64 * self.object_bytes / self.bandwidth
    }
}
