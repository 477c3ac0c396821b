//! The plan-only API, in Zoltan's shape: each rank passes its own objects
//! (global ids, weights, optionally sizes and migratability) and its
//! background load; every rank gets back which of its objects to export
//! (and where) and which to import (and from where). The program moves
//! its data itself; Keel only decides.
//!
//! One collective call: the ranks gather every rank's contribution, each
//! with the rank's own verdict on its input, so that a rank whose input
//! is wrong still takes part and every rank returns the same error (no
//! rank is left waiting). Every rank then runs the same registry policy
//! on the same gathered problem — ranks as PUs, objects as tasks, each
//! object's current rank as the current mapping — and so reaches the same
//! decision without a second round.
//!
//! That gathers every object on every rank. [`PlanShape::Tree`] decides in
//! groups of ranks instead (`tree.rs`): a leader gathers its members'
//! objects, every rank one summary per group; the outputs and the
//! same-error guarantee are the same.

use std::collections::HashMap;

use keel_policy::mapping::{self, MappingInput};
use keel_policy::{metrics, Concept, ContextHandler, Mapping, Model, Origin, PolicyError, Subject};
use thiserror::Error;

use crate::comm::{Collective, CommError};
use crate::wire::{cut, Contribution, Record, MAX_TEXT};

/// The policy a plan uses unless told otherwise: Charm++'s GreedyRefine,
/// which balances like greedy while keeping objects where they are when
/// that costs little.
pub const DEFAULT_PLAN_POLICY: &str = "greedy-refine";

/// One object a rank holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LocalObject {
    /// A global id, unique across ranks.
    pub id: u64,
    /// Its load (measured time, or a cost estimate), finite and ≥ 0.
    pub weight: f64,
    /// Bytes moved if it migrates (0 when unknown): reported, not decided on.
    pub size: u64,
    /// Whether it may move.
    pub migratable: bool,
}

impl LocalObject {
    /// A migratable object of unknown size.
    pub fn new(id: u64, weight: f64) -> Self {
        LocalObject {
            id,
            weight,
            size: 0,
            migratable: true,
        }
    }
}

/// How a plan is decided. Every rank must pass the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PlanShape {
    /// Every rank gathers every object and decides alike.
    #[default]
    OneLevel,
    /// Groups of `group` consecutive ranks (the last may be smaller),
    /// each led by its first rank: the leaders gather only their members'
    /// objects, the groups lend work to one another by their totals, and
    /// each group places its objects on its members with the spec's
    /// policy (`keel_policy::mapping::tree`).
    Tree {
        /// Ranks per group (≥ 1).
        group: usize,
    },
}

/// This rank's part of a plan.
#[derive(Clone, Debug)]
pub struct PlanRequest<'a> {
    /// The registry mapping policy (every rank must pass the same spec).
    pub spec: &'a str,
    /// The objects this rank holds now.
    pub objects: &'a [LocalObject],
    /// Load on this rank that is not its objects' (other jobs, its own
    /// serial work), in the weights' unit, ≥ 0.
    pub background: f64,
    /// The rank's relative speed (1 = the reference), > 0.
    pub speed: f64,
    /// How the plan is decided (every rank must pass the same).
    pub shape: PlanShape,
}

impl<'a> PlanRequest<'a> {
    /// `objects` under [`DEFAULT_PLAN_POLICY`], no background, speed 1,
    /// one level.
    pub fn new(objects: &'a [LocalObject]) -> Self {
        PlanRequest {
            spec: DEFAULT_PLAN_POLICY,
            objects,
            background: 0.0,
            speed: 1.0,
            shape: PlanShape::OneLevel,
        }
    }
}

/// An object that changes rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Transfer {
    /// Its global id.
    pub id: u64,
    /// The other rank: the destination of an export, the source of an import.
    pub rank: usize,
    /// Its size, as its owner gave it.
    pub size: u64,
}

/// What the plan's decision does to the whole job.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanMetrics {
    /// λ = max/mean − 1 of the ranks' loads (background + objects ÷ speed), before.
    pub lambda_before: f64,
    /// The same after the plan.
    pub lambda_after: f64,
    /// LIB in percent after the plan.
    pub lib_percent: f64,
    /// The most loaded rank's load after the plan.
    pub makespan: f64,
    /// Objects that change rank.
    pub migrations: usize,
    /// Σ size of those objects.
    pub bytes_moved: u64,
    /// Objects in the job.
    pub objects: usize,
}

/// Every rank's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The rank of each of this rank's objects after the plan, in the
    /// order they were passed.
    pub destinations: Vec<usize>,
    /// This rank's objects that leave it, in the order they were passed.
    pub exports: Vec<Transfer>,
    /// Objects that come to this rank, by source rank then id.
    pub imports: Vec<Transfer>,
    /// The same on every rank.
    pub metrics: PlanMetrics,
}

/// Why no plan: the same error on every rank.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum PlanError {
    /// A rank refused its own input; the first such rank is named.
    #[error("rank {rank}: {reason}")]
    BadInput {
        /// The rank whose input was refused.
        rank: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// Ranks passed different policy specs.
    #[error("rank {rank} asked for policy {spec:?} where rank 0 asked for {expected:?}: every rank must pass the same spec")]
    SpecMismatch {
        /// The first rank that differs from rank 0.
        rank: usize,
        /// Its spec.
        spec: String,
        /// Rank 0's.
        expected: String,
    },
    /// One global id held by two ranks (or twice by one).
    #[error("object id {id} is held by rank {first} and by rank {second}: ids must be unique across ranks")]
    DuplicateId {
        /// The id.
        id: u64,
        /// The first rank holding it.
        first: usize,
        /// The other.
        second: usize,
    },
    /// A rank's payload did not decode (ranks running different builds).
    #[error("rank {rank} sent a payload this rank cannot read: {reason}")]
    Malformed {
        /// The rank.
        rank: usize,
        /// What is wrong.
        reason: String,
    },
    /// The policy refused the gathered problem.
    #[error("policy {spec:?}: {source}")]
    Policy {
        /// The spec.
        spec: String,
        /// Its error.
        source: PolicyError,
    },
    /// The policy's decision breaks what it was told (a policy bug).
    #[error("policy {spec:?} decided {problem}")]
    BadDecision {
        /// The spec.
        spec: String,
        /// What is wrong with the decision.
        problem: String,
    },
    /// Ranks asked for different plan shapes.
    #[error("rank {rank} asked for {shape} where this rank asked for {expected}: every rank must pass the same shape")]
    ShapeMismatch {
        /// The first rank whose shape differs.
        rank: usize,
        /// Its shape.
        shape: String,
        /// This rank's.
        expected: String,
    },
    /// The collective layer failed (a rank died).
    #[error(transparent)]
    Comm(#[from] CommError),
}

/// Computes a plan: a collective call, made by every rank of `comm`.
///
/// ```
/// use keel_mpi::{plan, Collective, LocalObject, LocalRanks, PlanRequest};
///
/// // Rank 0 holds four objects of weight 1, rank 1 none.
/// let plans = LocalRanks::run(2, |comm| {
///     let objects: Vec<LocalObject> = if comm.rank() == 0 {
///         (0..4).map(|id| LocalObject::new(id, 1.0)).collect()
///     } else {
///         Vec::new()
///     };
///     plan(comm, &PlanRequest::new(&objects))
/// });
/// let rank0 = plans[0].as_ref().unwrap().as_ref().unwrap();
/// let rank1 = plans[1].as_ref().unwrap().as_ref().unwrap();
/// assert_eq!(rank0.exports.len(), 2);
/// assert_eq!(rank1.imports.len(), 2);
/// assert!(rank1.imports.iter().all(|t| t.rank == 0));
/// assert_eq!(rank0.metrics, rank1.metrics);
/// assert_eq!(rank0.metrics.lambda_after, 0.0);
/// ```
pub fn plan<C: Collective + ?Sized>(
    comm: &C,
    request: &PlanRequest<'_>,
) -> Result<Plan, PlanError> {
    match request.shape {
        PlanShape::OneLevel => plan_or_refuse(comm, Ok(request)),
        PlanShape::Tree { group } => plan_in_tree(comm, Ok(request), group),
    }
}

/// [`plan_or_refuse`] in a tree of groups of `group` ranks (every rank
/// passes the same `group`; the request's own shape is not read): no rank
/// gathers more than its group's objects and one summary per group. A
/// collective call.
///
/// ```
/// use keel_mpi::{plan_in_tree, Collective, LocalObject, LocalRanks, PlanRequest};
/// // 4 ranks in groups of 2; rank 0 holds eight objects, the others none.
/// let plans = LocalRanks::run(4, |comm| {
///     let objects: Vec<LocalObject> = if comm.rank() == 0 {
///         (0..8).map(|id| LocalObject::new(id, 1.0)).collect()
///     } else {
///         Vec::new()
///     };
///     plan_in_tree(comm, Ok(&PlanRequest::new(&objects)), 2).unwrap()
/// });
/// let plans: Vec<_> = plans.into_iter().map(Result::unwrap).collect();
/// // Two objects on every rank; every import has its export.
/// assert_eq!(plans[0].exports.len(), 6);
/// assert!(plans[1..].iter().all(|p| p.imports.len() == 2));
/// assert!(plans.iter().all(|p| p.metrics == plans[0].metrics));
/// assert_eq!(plans[0].metrics.lambda_after, 0.0);
/// ```
pub fn plan_in_tree<C: Collective + ?Sized>(
    comm: &C,
    request: Result<&PlanRequest<'_>, String>,
    group: usize,
) -> Result<Plan, PlanError> {
    // Every rank first says which shape it runs, in 4 bytes (the one-level
    // plan's first step is an all-gather too, of a longer contribution):
    // ranks that disagree fail at once instead of waiting in different
    // collectives.
    let mine = u32::try_from(group).unwrap_or(u32::MAX).to_le_bytes();
    let all = comm.all_gather(&mine)?;
    if let Some((rank, theirs)) = all.iter().enumerate().find(|(_, b)| b[..] != mine) {
        let shape = match <[u8; 4]>::try_from(&theirs[..]) {
            Ok(g) => format!("groups of {}", u32::from_le_bytes(g)),
            Err(_) => "a one-level plan".to_string(),
        };
        return Err(PlanError::ShapeMismatch {
            rank,
            shape,
            expected: format!("groups of {group}"),
        });
    }
    if group == 0 {
        return Err(PlanError::BadInput {
            rank: 0,
            reason: "a tree plan needs groups of at least 1 rank".into(),
        });
    }
    tree::plan(comm, request, group)
}

/// [`plan`] for a caller that may have found this rank's input wrong
/// before it could make a [`PlanRequest`] (a C caller's NULL array, say):
/// with `Err(reason)` the rank still takes part, and every rank returns
/// [`PlanError::BadInput`] naming it. A collective call.
///
/// ```
/// use keel_mpi::{plan_or_refuse, Collective, LocalObject, LocalRanks, PlanError, PlanRequest};
/// let objects = [LocalObject::new(7, 1.0)];
/// let results = LocalRanks::run(2, |comm| {
///     let request = PlanRequest::new(&objects[..]);
///     let mine = if comm.rank() == 1 { Err("ids is NULL".to_string()) } else { Ok(&request) };
///     plan_or_refuse(comm, mine)
/// });
/// for r in results {
///     assert!(matches!(r.unwrap(), Err(PlanError::BadInput { rank: 1, .. })));
/// }
/// ```
pub fn plan_or_refuse<C: Collective + ?Sized>(
    comm: &C,
    request: Result<&PlanRequest<'_>, String>,
) -> Result<Plan, PlanError> {
    let mine = contribution(request);
    let gathered = comm.all_gather(&mine.encode())?;
    let all = gathered
        .iter()
        .enumerate()
        .map(|(rank, bytes)| {
            Contribution::decode(bytes).map_err(|reason| PlanError::Malformed { rank, reason })
        })
        .collect::<Result<Vec<_>, _>>()?;
    decide(&all, comm.rank())
}

/// This rank's contribution: its input and its own verdict on it, or
/// the reason it has none.
fn contribution(request: Result<&PlanRequest<'_>, String>) -> Contribution {
    match request {
        Ok(request) => Contribution {
            refusal: check_local(request).err(),
            spec: request.spec.trim().to_string(),
            background: request.background,
            speed: request.speed,
            records: request
                .objects
                .iter()
                .map(|o| Record {
                    id: o.id,
                    weight: o.weight,
                    size: o.size,
                    migratable: o.migratable,
                })
                .collect(),
        },
        Err(reason) => Contribution {
            refusal: Some(reason),
            spec: String::new(),
            background: 0.0,
            speed: 1.0,
            records: Vec::new(),
        },
    }
}

/// This rank's own verdict on its input, sent with it.
fn check_local(request: &PlanRequest<'_>) -> Result<(), String> {
    let spec = request.spec.trim();
    if spec.len() > MAX_TEXT {
        return Err(format!("a policy spec of {} bytes", spec.len()));
    }
    mapping::registry()
        .build(spec)
        .map_err(|e| format!("policy {:?}: {e}", cut(spec, 200)))?;
    if !(request.background.is_finite() && request.background >= 0.0) {
        return Err(format!(
            "background load {} (must be finite and ≥ 0)",
            request.background
        ));
    }
    if !(request.speed.is_finite() && request.speed > 0.0) {
        return Err(format!("speed {} (must be finite and > 0)", request.speed));
    }
    if let Some((i, o)) = request
        .objects
        .iter()
        .enumerate()
        .find(|(_, o)| !(o.weight.is_finite() && o.weight >= 0.0))
    {
        return Err(format!(
            "object {i} (id {}) has weight {} (must be finite and ≥ 0)",
            o.id, o.weight
        ));
    }
    Ok(())
}

/// The decision from every rank's contribution; `me` is this rank.
fn decide(all: &[Contribution], me: usize) -> Result<Plan, PlanError> {
    if let Some((rank, reason)) = all
        .iter()
        .enumerate()
        .find_map(|(rank, c)| c.refusal.clone().map(|reason| (rank, reason)))
    {
        return Err(PlanError::BadInput { rank, reason });
    }
    let spec = &all[0].spec;
    if let Some((rank, c)) = all.iter().enumerate().find(|(_, c)| &c.spec != spec) {
        return Err(PlanError::SpecMismatch {
            rank,
            spec: c.spec.clone(),
            expected: spec.clone(),
        });
    }
    let total: usize = all.iter().map(|c| c.records.len()).sum();
    let mut owner: HashMap<u64, usize> = HashMap::with_capacity(total);
    let mut loads = Vec::with_capacity(total);
    let mut current = Vec::with_capacity(total);
    let mut migratable = Vec::with_capacity(total);
    for (rank, c) in all.iter().enumerate() {
        for r in &c.records {
            if let Some(&first) = owner.get(&r.id) {
                return Err(PlanError::DuplicateId {
                    id: r.id,
                    first,
                    second: rank,
                });
            }
            owner.insert(r.id, rank);
            loads.push(r.weight);
            current.push(rank);
            migratable.push(r.migratable);
        }
    }
    let background: Vec<f64> = all.iter().map(|c| c.background).collect();
    let speeds: Vec<f64> = all.iter().map(|c| c.speed).collect();
    let uniform = speeds.iter().all(|&s| s == 1.0);
    let policy_error = |source| PlanError::Policy {
        spec: spec.clone(),
        source,
    };

    let policy = mapping::registry().build(spec).map_err(policy_error)?;
    let measured = |subject| Concept::Workload {
        subject,
        model: Model::Dynamic,
    };
    let mut ctx = ContextHandler::new();
    ctx.provide_values(measured(Subject::Tasks), Origin::User, &loads[..])
        .provide_values(measured(Subject::Pus), Origin::User, &background[..])
        .provide_flags(Concept::TaskMigratable, Origin::User, &migratable[..])
        .provide_placement(Origin::User, &current[..]);
    if !uniform {
        ctx.provide_values(Concept::PuSpeed, Origin::User, &speeds[..]);
    }
    let decided = policy.map(&ctx).map_err(policy_error)?;
    drop(ctx);
    let wrong = |problem: String| PlanError::BadDecision {
        spec: spec.clone(),
        problem,
    };
    if decided.ntasks() != total || decided.npus() != all.len() {
        return Err(wrong(format!(
            "{} objects on {} ranks, for {total} objects on {} ranks",
            decided.ntasks(),
            decided.npus(),
            all.len()
        )));
    }
    if let Some(i) = (0..total).find(|&i| !migratable[i] && decided.as_slice()[i] != current[i]) {
        return Err(wrong(format!("it moves object {i}, which may not move")));
    }

    let mut input = MappingInput::new(&loads, &background).map_err(policy_error)?;
    if !uniform {
        input = input.with_speeds(&speeds).map_err(policy_error)?;
    }
    let before = Mapping::new(current.clone(), all.len()).map_err(policy_error)?;
    let lambda_before = metrics::evaluate(&input, &before).lambda;
    let after = metrics::evaluate(&input, &decided);

    let mut plan = Plan {
        destinations: Vec::new(),
        exports: Vec::new(),
        imports: Vec::new(),
        metrics: PlanMetrics {
            lambda_before,
            lambda_after: after.lambda,
            lib_percent: after.lib_percent,
            makespan: after.makespan,
            migrations: 0,
            bytes_moved: 0,
            objects: total,
        },
    };
    let records = all.iter().flat_map(|c| c.records.iter());
    for ((record, &from), &to) in records.zip(&current).zip(decided.as_slice()) {
        if from != to {
            plan.metrics.migrations += 1;
            plan.metrics.bytes_moved = plan.metrics.bytes_moved.saturating_add(record.size);
        }
        if from == me {
            plan.destinations.push(to);
            if to != me {
                plan.exports.push(Transfer {
                    id: record.id,
                    rank: to,
                    size: record.size,
                });
            }
        } else if to == me {
            plan.imports.push(Transfer {
                id: record.id,
                rank: from,
                size: record.size,
            });
        }
    }
    plan.imports.sort_by_key(|t| (t.rank, t.id));
    Ok(plan)
}

mod tree;

#[cfg(test)]
mod tests;
