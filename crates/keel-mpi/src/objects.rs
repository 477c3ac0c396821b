//! Distributed objects: the Charm++ + OpenMP paper's two levels of
//! balancing (§3) across ranks. Each rank runs its share of the objects on
//! Keel's objects runtime over its own thread pool — a registry policy
//! remapping them among the rank's PUs every `local_period` steps, idle
//! workers stealing potential tasks inside every step — and when the
//! loss to imbalance between ranks pays for it (the adaptive invocation of
//! [`keel_policy::invoke`], fed every step's rank times, the same on every
//! rank; or every `period` steps) the ranks balance coarsely among
//! themselves: each rank
//! offers its objects' measured loads, its background and its PU count to
//! [`plan`](crate::plan) (ranks as PUs, [`DEFAULT_RANK_POLICY`] unless told),
//! and the objects that change rank travel with their state (serde,
//! postcard) through [`Collective::all_to_all`]. Arriving objects are
//! placed among the rank's PUs by the local policy from the loads they
//! bring: ranks first, then PUs.
//!
//! A step ends with every rank's step time gathered (the job's step takes
//! the slowest rank's), which is also where a failure on one rank becomes
//! the same error on every rank. No object is ever lost: a migration that
//! fails anywhere leaves every object where it was.

use std::time::Instant;

use keel::objects::{Object, Objects, ObjectsBuilder};
use keel::ThreadPool;
use keel_policy::invoke::{Invocation, LoadHistory, Trigger, Verdict};
use serde::de::DeserializeOwned;
use serde::Serialize;
use thiserror::Error;

use crate::comm::{Collective, CommError};
use crate::migrate::{self, agree};
use crate::plan::{plan, LocalObject, PlanError, PlanMetrics, PlanRequest, PlanShape};

/// The rank-level policy unless told otherwise: Charm++'s GreedyRefine
/// (balance, but keep objects where they are when that costs little:
/// a move across ranks costs a message).
pub const DEFAULT_RANK_POLICY: &str = "greedy-refine";

/// What the adaptive invocation expects a balancing step across ranks to
/// cost before one has been measured: a fixed part (the collectives'
/// latency, rebuilding each rank's runtime) and a part per object (its
/// record gathered, the decision, its state moved). Measured here: 32
/// objects on 2 ranks balance in 0.4–0.8 ms.
pub const INITIAL_RANK_COST_S: f64 = 1e-3;

/// See [`INITIAL_RANK_COST_S`].
pub const INITIAL_RANK_COST_PER_OBJECT_S: f64 = 5e-6;

/// A [`RankRebalance`]'s reason when the program called
/// [`DistributedObjects::rebalance`].
pub const REQUESTED: &str = "requested by the program";

/// Why a distributed run stopped: the same on every rank.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum DistributedError {
    /// A rank's local runtime or configuration failed.
    #[error("rank {rank}: {reason}")]
    Rank {
        /// The first rank that failed.
        rank: usize,
        /// Why.
        reason: String,
    },
    /// An id held twice.
    #[error("object id {id} is held by rank {first} and by rank {second}: ids must be unique across ranks")]
    DuplicateId {
        /// The id.
        id: u64,
        /// The first rank holding it.
        first: usize,
        /// The other.
        second: usize,
    },
    /// The rank-level plan failed.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The collective layer failed.
    #[error(transparent)]
    Comm(#[from] CommError),
}

/// Builds [`DistributedObjects`].
#[derive(Clone, Debug, Default)]
pub struct DistributedBuilder {
    rank_policy: Option<String>,
    shape: PlanShape,
    invocation: Option<Invocation>,
    /// `period(0)` was asked for: refused at build.
    zero_period: bool,
    local_policy: Option<String>,
    local_invocation: Option<Invocation>,
    /// `local_period(0)` was asked for: refused at build.
    zero_local_period: bool,
    stealing: Option<String>,
}

impl DistributedBuilder {
    /// The registry policy across ranks (default [`DEFAULT_RANK_POLICY`]).
    pub fn rank_policy(mut self, spec: impl Into<String>) -> Self {
        self.rank_policy = Some(spec.into());
        self
    }

    /// How a balancing step across ranks decides (default
    /// [`PlanShape::OneLevel`]; [`PlanShape::Tree`] gathers each group's
    /// objects on its leader only). Every rank must pass the same.
    pub fn plan_shape(mut self, shape: PlanShape) -> Self {
        self.shape = shape;
        self
    }

    /// Balance across ranks after every `steps` steps (≥ 1):
    /// `invocation(Periodic)`. Unset: [`Invocation::Adaptive`].
    pub fn period(mut self, steps: usize) -> Self {
        self.invocation = Invocation::every(steps);
        self.zero_period = steps == 0;
        self
    }

    /// When to balance across ranks (default [`Invocation::Adaptive`]:
    /// when the loss to imbalance between ranks since the last balance pays
    /// for another; [`Invocation::Never`]: only on
    /// [`DistributedObjects::rebalance`]). Every rank must pass the same.
    pub fn invocation(mut self, invocation: Invocation) -> Self {
        self.invocation = Some(invocation);
        self.zero_period = false;
        self
    }

    /// The registry policy among a rank's PUs (the objects runtime's
    /// `policy`; default its own, `greedy` or `KEEL_LB`).
    pub fn local_policy(mut self, spec: impl Into<String>) -> Self {
        self.local_policy = Some(spec.into());
        self
    }

    /// Remap among a rank's PUs after every `steps` steps (≥ 1):
    /// `local_invocation(Periodic)`.
    pub fn local_period(mut self, steps: usize) -> Self {
        self.local_invocation = Invocation::every(steps);
        self.zero_local_period = steps == 0;
        self
    }

    /// When to remap among a rank's PUs between balancing steps across
    /// ranks (which re-place every rank's objects anyway): default
    /// [`Invocation::Never`]; [`Invocation::Adaptive`] decides on each
    /// rank from its PUs' loads, so ranks remap at different steps.
    pub fn local_invocation(mut self, invocation: Invocation) -> Self {
        self.local_invocation = Some(invocation);
        self.zero_local_period = false;
        self
    }

    /// The exposure policy of potential tasks inside each rank (`none`:
    /// no stealing; default the objects runtime's).
    pub fn stealing(mut self, spec: impl Into<String>) -> Self {
        self.stealing = Some(spec.into());
        self
    }

    /// The local runtime's builder, placing objects by `loads` first.
    fn local(&self, loads: Vec<f64>) -> ObjectsBuilder {
        let mut b = keel::objects::Objects::builder().initial_loads(loads);
        if let Some(spec) = &self.local_policy {
            b = b.policy(spec.clone()).initial(spec.clone());
        } else {
            b = b.initial(keel::objects::DEFAULT_POLICY);
        }
        // The local period is kept here, not by the runtime: a remap
        // clears the load database, which a rank-level balancing due the
        // same step must read first.
        b = b.invocation(Invocation::Never);
        if let Some(spec) = &self.stealing {
            b = b.stealing(spec.clone());
        }
        b
    }

    /// Starts a run on this rank's `objects` (global id, object): a
    /// collective call. Ids must be unique across ranks; a configuration
    /// any rank refuses is an error on every rank, and then this rank's
    /// objects are handed back in the error's place (nothing is lost).
    pub fn build<'a, C, T>(
        self,
        comm: &'a C,
        pool: &'a ThreadPool,
        objects: Vec<(u64, T)>,
    ) -> Result<DistributedObjects<'a, C, T>, Box<Refused<T>>>
    where
        C: Collective + ?Sized,
        T: Object + Serialize + DeserializeOwned,
    {
        // Checked on no objects first, so that a refused configuration
        // consumes none.
        let verdict = self
            .local(Vec::new())
            .build::<T>(pool, Vec::new())
            .map(|_| ())
            .map_err(|e| e.to_string())
            .and_then(|()| match (self.zero_period, self.zero_local_period) {
                (true, _) => Err("a rank-level period of 0 steps".to_string()),
                (_, true) => Err("a local period of 0 steps".to_string()),
                _ => Ok(()),
            });
        let failed = |error: DistributedError, objects| Err(Box::new(Refused { error, objects }));
        match agree(comm, verdict.map(|()| 0.0)) {
            Err(e) => return failed(e.into(), objects),
            Ok(Err((rank, reason))) => {
                return failed(DistributedError::Rank { rank, reason }, objects)
            }
            Ok(Ok(_)) => {}
        }
        let mut mine = Vec::with_capacity(8 * objects.len());
        for (id, _) in &objects {
            mine.extend_from_slice(&id.to_le_bytes());
        }
        let all = match comm.all_gather(&mine) {
            Ok(all) => all,
            Err(e) => return failed(e.into(), objects),
        };
        let total_objects: usize = all.iter().map(|ids| ids.len() / 8).sum();
        let mut owner = std::collections::HashMap::new();
        for (rank, ids) in all.iter().enumerate() {
            for id in ids.chunks_exact(8) {
                let id = u64::from_le_bytes(id.try_into().expect("8 bytes"));
                if let Some(first) = owner.insert(id, rank) {
                    return failed(
                        DistributedError::DuplicateId {
                            id,
                            first,
                            second: rank,
                        },
                        objects,
                    );
                }
            }
        }
        let (ids, objects): (Vec<u64>, Vec<T>) = objects.into_iter().unzip();
        let local = self
            .local(vec![0.0; ids.len()])
            .build(pool, objects)
            .expect("the configuration was checked on this pool");
        let trigger = Trigger::new(
            self.invocation.unwrap_or_default(),
            INITIAL_RANK_COST_S + INITIAL_RANK_COST_PER_OBJECT_S * total_objects as f64,
        );
        let local_trigger = Trigger::new(
            self.local_invocation.unwrap_or(Invocation::Never),
            keel::objects::INITIAL_COST_S
                + keel::objects::INITIAL_COST_PER_OBJECT_S * ids.len() as f64,
        );
        Ok(DistributedObjects {
            comm,
            pool,
            config: self,
            ids,
            local: Some(local),
            steps_done: 0,
            trigger,
            rank_history: LoadHistory::new(),
            local_trigger,
            local_history: LoadHistory::new(),
            local_failed: None,
        })
    }
}

/// A run that did not start, with this rank's objects handed back.
#[derive(Debug)]
pub struct Refused<T> {
    /// Why (the same on every rank).
    pub error: DistributedError,
    /// The objects given to [`DistributedBuilder::build`].
    pub objects: Vec<(u64, T)>,
}

/// What one step took.
#[derive(Clone, Debug, PartialEq)]
pub struct DistributedStep {
    /// The step's index.
    pub step: usize,
    /// Each rank's time for the step, in seconds.
    pub rank_seconds: Vec<f64>,
    /// The job's: the slowest rank's.
    pub seconds: f64,
    /// What the rank-level invocation decided after the step, and why (the
    /// same on every rank).
    pub decision: Verdict,
    /// The rank-level balancing after the step, if there was one.
    pub rebalance: Option<RankRebalance>,
}

/// One balancing step across ranks.
#[derive(Clone, Debug, PartialEq)]
pub struct RankRebalance {
    /// After which step.
    pub after_step: usize,
    /// The plan's figures (the same on every rank).
    pub metrics: PlanMetrics,
    /// Objects this rank sent and received.
    pub exported: usize,
    /// Objects received.
    pub imported: usize,
    /// Bytes of state this rank sent.
    pub bytes_sent: u64,
    /// Seconds deciding (gather + policy) and migrating (serialise,
    /// exchange, rebuild), on this rank.
    pub decide_seconds: f64,
    /// See `decide_seconds`.
    pub migrate_seconds: f64,
    /// The slowest rank's `decide_seconds + migrate_seconds`: what the
    /// invocation expects the next balancing to cost (the same on every
    /// rank).
    pub cost_seconds: f64,
    /// Why it ran: the invocation's reason, or [`REQUESTED`].
    pub reason: String,
}

/// A run of distributed objects on this rank.
pub struct DistributedObjects<'a, C: ?Sized, T> {
    comm: &'a C,
    pool: &'a ThreadPool,
    config: DistributedBuilder,
    /// The global id of each local object, in the local runtime's order.
    ids: Vec<u64>,
    /// Always present between calls.
    local: Option<Objects<'a, T>>,
    steps_done: usize,
    /// When to balance across ranks.
    trigger: Trigger,
    /// Every rank's step times summed since the last balance (the same on
    /// every rank).
    rank_history: LoadHistory,
    /// When to remap among this rank's PUs.
    local_trigger: Trigger,
    /// This rank's PUs' busy times summed since the last remap among them.
    local_history: LoadHistory,
    /// A local remap that failed after the last step: every rank learns of
    /// it at the next step's agreement (a local remap is this rank's
    /// alone, so it cannot wait for the others to agree at once).
    local_failed: Option<String>,
}

impl<C: ?Sized, T> std::fmt::Debug for DistributedObjects<'_, C, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DistributedObjects")
            .field("objects", &self.ids.len())
            .field("steps_done", &self.steps_done)
            .field("invocation", &self.trigger.invocation())
            .finish()
    }
}

impl DistributedObjects<'_, crate::LocalComm, ()> {
    /// A builder.
    pub fn builder() -> DistributedBuilder {
        DistributedBuilder::default()
    }
}

impl<'a, C, T> DistributedObjects<'a, C, T>
where
    C: Collective + ?Sized,
    T: Object + Serialize + DeserializeOwned,
{
    /// The global ids of this rank's objects.
    pub fn ids(&self) -> &[u64] {
        &self.ids
    }

    /// Steps run.
    pub fn steps_done(&self) -> usize {
        self.steps_done
    }

    /// When the run balances across ranks.
    pub fn invocation(&self) -> Invocation {
        self.trigger.invocation()
    }

    fn local(&mut self) -> &mut Objects<'a, T> {
        self.local.as_mut().expect("present between calls")
    }

    /// Calls `f(id, object)` for every object on this rank.
    pub fn visit(&mut self, mut f: impl FnMut(u64, &T)) {
        let ids = self.ids.clone();
        self.local().visit(|i, _, object| f(ids[i], object));
    }

    /// This rank's objects with their ids.
    pub fn into_objects(mut self) -> Vec<(u64, T)> {
        let local = self.local.take().expect("present between calls");
        self.ids.iter().copied().zip(local.into_objects()).collect()
    }

    /// Runs `steps` steps, balancing as the periods say except after the
    /// last (a collective call).
    pub fn run(&mut self, steps: usize) -> Result<Vec<DistributedStep>, DistributedError> {
        (0..steps)
            .map(|i| self.step_then(Some(steps - i - 1)))
            .collect()
    }

    /// One step on every rank, then the rank-level balancing if the
    /// invocation says so (a collective call).
    pub fn step(&mut self) -> Result<DistributedStep, DistributedError> {
        self.step_then(None)
    }

    /// One step; `remaining` is the number of steps still to run after it
    /// when known (then none balances after the last).
    fn step_then(&mut self, remaining: Option<usize>) -> Result<DistributedStep, DistributedError> {
        let began = Instant::now();
        let stepped = self.local().step().map_err(|e| e.to_string());
        let seconds = began.elapsed().as_secs_f64();
        let ran = match (self.local_failed.take(), &stepped) {
            (Some(failed), _) => Err(failed),
            (None, Ok(_)) => Ok(seconds),
            (None, Err(e)) => Err(e.clone()),
        };
        let rank_seconds = match agree(self.comm, ran)? {
            Ok(all) => all,
            Err((rank, reason)) => return Err(DistributedError::Rank { rank, reason }),
        };
        let pu_busy = stepped.map(|r| r.pu_busy_s).unwrap_or_default();
        let step = self.steps_done;
        self.steps_done += 1;
        let done = self.steps_done;
        let may_balance = remaining != Some(0);
        // Every rank reads the same gathered times, steps and costs, so
        // every rank's trigger decides alike.
        let summary = self.rank_history.add(&rank_seconds);
        let decision = self.trigger.after_step(done, &summary, remaining);
        let local = self.local_history.add(&pu_busy);
        let rebalance = if may_balance && decision.balance {
            // Re-places the rank's objects among its PUs too.
            let mut r = self.rebalance()?;
            r.reason = decision.reason.to_string();
            Some(r)
        } else {
            // This rank's own decision: its trigger is not told of steps
            // a balance across ranks followed (that balance re-placed the
            // objects among the PUs and reset it).
            let local_decision = self.local_trigger.after_step(done, &local, remaining);
            if may_balance && local_decision.balance {
                match self.local().rebalance() {
                    Ok(r) => self.local_trigger.balanced(r.total_s),
                    Err(e) => self.local_failed = Some(e.to_string()),
                }
                self.local_history.clear();
            }
            None
        };
        Ok(DistributedStep {
            step,
            seconds: rank_seconds.iter().copied().fold(0.0, f64::max),
            rank_seconds,
            decision,
            rebalance,
        })
    }

    /// Balances across ranks now from the loads measured since the last
    /// local remap, moves the objects that change rank, and places the
    /// rank's objects among its PUs (a collective call).
    pub fn rebalance(&mut self) -> Result<RankRebalance, DistributedError> {
        let began = Instant::now();
        let local = self.local();
        let loads = local.object_loads();
        let pus = local.pus();
        let background = local.pu_background().iter().sum::<f64>() / pus as f64;
        let offered: Vec<LocalObject> = self
            .ids
            .iter()
            .zip(&loads)
            .map(|(&id, &weight)| LocalObject::new(id, weight))
            .collect();
        let spec = self
            .config
            .rank_policy
            .as_deref()
            .unwrap_or(DEFAULT_RANK_POLICY);
        let decided = plan(
            self.comm,
            &PlanRequest {
                spec,
                objects: &offered,
                background,
                // A rank with P PUs works off P seconds of object time a second.
                speed: pus as f64,
                shape: self.config.shape,
            },
        )?;
        let decide_seconds = began.elapsed().as_secs_f64();
        let began = Instant::now();

        let me = self.comm.rank();
        let objects = self
            .local
            .take()
            .expect("present between calls")
            .into_objects();
        let mut outgoing = vec![Vec::new(); self.comm.size()];
        let mut packed = Ok(());
        for (i, (&to, object)) in decided.destinations.iter().zip(&objects).enumerate() {
            if to != me {
                packed = migrate::encode(&mut outgoing[to], self.ids[i], loads[i], object);
                if packed.is_err() {
                    break;
                }
            }
        }
        if packed.is_err() {
            // Nothing leaves a rank that could not pack everything.
            outgoing.iter_mut().for_each(Vec::clear);
        }
        let bytes_sent = outgoing.iter().map(|m| m.len() as u64).sum();
        let exchanged = self.comm.all_to_all(&outgoing);
        drop(outgoing);
        let arrived = match (&packed, &exchanged) {
            (Ok(()), Ok(incoming)) => incoming
                .iter()
                .enumerate()
                .map(|(from, bytes)| migrate::decode::<T>(bytes, from))
                .collect::<Result<Vec<_>, _>>()
                .map(|v| v.into_iter().flatten().collect::<Vec<_>>()),
            (Err(e), _) => Err(e.clone()),
            (_, Err(e)) => Err(e.to_string()),
        };
        let verdict = match exchanged {
            // The layer failed: every rank's exchange failed with it, so
            // there is nothing to agree on and no one to agree with.
            Err(e) => {
                self.rebuild(objects, loads);
                return Err(e.into());
            }
            Ok(_) => agree(
                self.comm,
                arrived.as_ref().map(|_| 0.0).map_err(Clone::clone),
            ),
        };
        let arrived = match verdict {
            Ok(Ok(_)) => arrived.expect("this rank agreed"),
            Ok(Err((rank, reason))) => {
                // Every object stays where it was: senders still hold theirs.
                self.rebuild(objects, loads);
                return Err(DistributedError::Rank { rank, reason });
            }
            Err(e) => {
                self.rebuild(objects, loads);
                return Err(e.into());
            }
        };

        let mut ids = Vec::with_capacity(objects.len() + arrived.len());
        let mut kept_loads = Vec::with_capacity(ids.capacity());
        let mut kept = Vec::with_capacity(ids.capacity());
        for (i, (object, &to)) in objects.into_iter().zip(&decided.destinations).enumerate() {
            if to == me {
                ids.push(self.ids[i]);
                kept_loads.push(loads[i]);
                kept.push(object);
            }
        }
        let imported = arrived.len();
        for m in arrived {
            ids.push(m.id);
            kept_loads.push(m.load);
            kept.push(m.object);
        }
        self.ids = ids;
        // Placed afresh among the PUs by their loads, the arrivals with
        // the rest (a rank whose objects did not change is rebuilt too:
        // its runtime was taken apart to pack the exports).
        self.rebuild(kept, kept_loads);
        let migrate_seconds = began.elapsed().as_secs_f64();
        // The job waited for the slowest rank: its cost is the next
        // balance's expectation, on every rank alike.
        let cost_seconds = match agree(self.comm, Ok(decide_seconds + migrate_seconds))? {
            Ok(all) => all.into_iter().fold(0.0, f64::max),
            Err((rank, reason)) => return Err(DistributedError::Rank { rank, reason }),
        };
        self.trigger.balanced(cost_seconds);
        self.rank_history.clear();
        // The rebuild placed the objects among the PUs afresh: what the
        // local trigger measured is of another placement.
        self.local_trigger.balanced(f64::NAN);
        self.local_history.clear();
        Ok(RankRebalance {
            after_step: self.steps_done,
            metrics: decided.metrics,
            exported: decided.exports.len(),
            imported,
            bytes_sent,
            decide_seconds,
            migrate_seconds,
            cost_seconds,
            reason: REQUESTED.to_string(),
        })
    }

    /// Puts `objects` (the rank's, in `self.ids` order) on the pool,
    /// placed by the local policy from `loads`.
    fn rebuild(&mut self, objects: Vec<T>, loads: Vec<f64>) {
        // Loads are measured seconds (finite, ≥ 0), so the local policy,
        // which took the same configuration at build, places them.
        let local = self
            .config
            .local(loads)
            .first_step(self.steps_done)
            .build(self.pool, objects)
            .expect("a configuration the pool took before");
        self.local = Some(local);
    }
}

#[cfg(test)]
mod tests;
