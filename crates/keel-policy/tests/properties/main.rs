//! Property tests of the mapping family's contract, exactly once above all, over
//! grids and random inputs; the protocols that enact it are tested apart.
//!
//! 1. Exactly once, on available PUs, pinned tasks stay — every built-in
//!    policy and parameter variant in [`SPECS`], on random valid inputs built
//!    through a [`ContextHandler`] (optional speeds, availability,
//!    migratability and current mapping, NO_PU entries included); plus
//!    determinism and a spec round trip through the registry.
//! 2. `greedy` is within Graham's LPT bound `(4/3 − 1/(3m))·OPT` of an
//!    exhaustive optimum on small inputs.
//! 3. `refine` from a complete mapping never raises the makespan and leaves a
//!    mapping already within tolerance alone; BinLPT's cuts cover `0..n`
//!    (improved: exactly `min(K, n)` non-empty contiguous chunks).
//! 4. Robustness: arbitrary numbers, lengths, flags, placements and component
//!    shapes give `Ok` or a typed error with a message, never a panic; so do
//!    garbage spec strings; unknown names are `UnknownPolicy`.
//! 5. The registry + context handler path equals the direct `decide` path
//!    (and `Greedy::map_direct`), on known answers and random inputs.

use std::borrow::Cow;

use keel_policy::mapping::{
    self, runtime_context, BinLpt, BinLptCut, Block, Greedy, GreedyRefine, Hier, MappingPolicy,
    Refine, RoundRobin,
};
use keel_policy::metrics;
use keel_policy::{
    Component, ComponentData, Concept, ContextHandler, Mapping, MappingInput, Model, Origin,
    PolicyError, Registry, Spec, Subject, NO_PU,
};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use proptest::sample::Index;

/// Every built-in policy and the parameter variants worth telling apart, with
/// the fewest PUs each accepts (`hier` needs at least `nodes` PUs).
const SPECS: &[(&str, usize)] = &[
    ("block", 1),
    ("round-robin", 1),
    ("greedy", 1),
    ("binlpt", 1),
    ("binlpt:cut=faithful", 1),
    ("binlpt:cut=improved", 1),
    ("binlpt:chunks=1", 1),
    ("binlpt:chunks=3", 1),
    ("binlpt:chunks=3,cut=faithful", 1),
    ("binlpt:chunks=1000", 1),
    // K > n for every case; not 1000: the faithful cut's exchange sort is
    // O(K²) whatever n is, which dominates a debug-build run.
    ("binlpt:chunks=100,cut=faithful", 1),
    ("refine", 1),
    ("refine:tolerance=1.0", 1),
    ("refine:tolerance=1.5", 1),
    ("greedy-refine", 1),
    ("greedy-refine:tolerance=1.0", 1),
    ("greedy-refine:tolerance=2", 1),
    ("hier:nodes=1", 1),
    ("hier:nodes=2,outer=greedy,inner=refine", 2),
    ("hier:nodes=3,outer=(binlpt:chunks=5),inner=round-robin", 3),
    (
        "hier:nodes=2,outer=(refine:tolerance=1.0),inner=(greedy-refine)",
        2,
    ),
    (
        "hier:nodes=2,outer=(hier:nodes=2,outer=block,inner=greedy),inner=(binlpt:cut=faithful)",
        2,
    ),
];

/// `cases` random inputs per property. No regression files: integration
/// tests have no `lib.rs` beside them for proptest to anchor them to.
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn registry() -> Registry<dyn MappingPolicy> {
    mapping::registry()
}

fn build(registry: &Registry<dyn MappingPolicy>, spec: &str) -> Box<dyn MappingPolicy> {
    registry
        .build(spec)
        .unwrap_or_else(|e| panic!("`{spec}` must build: {e}"))
}

fn needs_current(policy: &dyn MappingPolicy) -> bool {
    policy
        .requirements()
        .iter()
        .any(|r| r.concept == Concept::CurrentMapping && !r.optional)
}

mod bounds;
mod registry_path;
mod robustness;
mod valid;

use valid::*;
