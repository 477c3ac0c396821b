//! A remap in the simulator: Charm++'s load-balancing step as
//! `keel::objects` enacts it (`crates/keel-runtime/src/objects/remap.rs`), with the
//! same context handler — measured object loads and PU background loads
//! (dynamic, runtime origin), migratability, availability and the current
//! placement, and PU speeds where the machine's differ: then each object's
//! measured seconds times its PU's speed, its work, as `keel::objects` does
//! with declared speeds — handed to the unchanged registry policy, and its decision
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
//!     speeds: None,
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
    /// Each PU's speed, when the machine's PUs differ (`None`: every PU
    /// counts as speed 1 and loads are taken as work).
    pub speeds: Option<&'a [f64]>,
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
        ("PU speeds", input.speeds.map_or(pus, <[f64]>::len), pus),
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
    // Measured time on a PU of speed s is work / s. An unplaced object (or
    // one on a PU out of range, which the policy's input check names) has
    // no PU to scale by.
    let work: Vec<f64> = match input.speeds {
        Some(speeds) => input
            .loads
            .iter()
            .zip(input.current)
            .map(|(&t, &p)| t * speeds.get(p).copied().unwrap_or(1.0))
            .collect(),
        None => input.loads.to_vec(),
    };
    let mut ctx = ContextHandler::new();
    ctx.provide_values(dynamic(Subject::Tasks), Origin::Runtime, &work[..])
        .provide_values(dynamic(Subject::Pus), Origin::Runtime, input.background)
        .provide_flags(Concept::TaskMigratable, Origin::Runtime, input.migratable)
        .provide_flags(Concept::PuAvailability, Origin::Runtime, input.available)
        .provide_placement(Origin::Runtime, input.current);
    if let Some(speeds) = input.speeds {
        ctx.provide_values(Concept::PuSpeed, Origin::Runtime, speeds);
    }
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
    let eval = MappingInput::new(&work, input.background)
        .and_then(|i| match input.speeds {
            Some(speeds) => i.with_speeds(speeds),
            None => Ok(i),
        })
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
