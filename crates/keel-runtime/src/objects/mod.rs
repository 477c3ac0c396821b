//! Over-decomposed objects (Charm++ + OpenMP paper, §2–3, §5; Charm++'s
//! measurement-based balancing, whose load database and balancers live in
//! its `src/ck-ldb`).
//!
//! The user creates many objects — far more than PUs — each owning its
//! state and a [`Object::step`]. Keel maps them to PUs (the pool's
//! participants, one thread each) with a registry mapping policy, runs each
//! PU's objects every step with a barrier between steps (in id order; with
//! stealing, lightest first by their last step, so that the divisible heavy
//! work comes when other PUs are idle), and keeps the *load database*: each
//! object's measured work (its time on its PU, plus what thieves spent on
//! its chunks, less its wait for them) and each PU's background time since
//! the last remap. When the loss to imbalance since the last remap pays
//! for another ([`keel_policy::invoke`]; or every `period` steps, or when
//! asked), it remaps through a [`ContextHandler`](keel_policy::ContextHandler)
//! that offers only those measurements (plus migratability, availability
//! and the current mapping), moves the objects — their state moves with
//! them — and clears the database, as Charm++ does.
//!
//! Inside a step an object may run a parallel loop over its own work with
//! [`StepContext::for_each`]: a *potential task* on the PU's work-stealing
//! deque ([`crate::tasks`]). A PU that finished its objects steals chunks
//! until every PU is done.
//!
//! The mapping policy comes from code ([`ObjectsBuilder::policy`]), else
//! from `KEEL_LB`, else `greedy`; when to remap from
//! [`ObjectsBuilder::invocation`] (default adaptive) or
//! [`ObjectsBuilder::period`]; a program may remap at any time
//! ([`Objects::rebalance`], [`Objects::request_rebalance`]).
//!
//! ```
//! use keel::objects::{Object, Objects, StepContext};
//! struct Counter { hits: u64 }
//! impl Object for Counter {
//!     fn step(&mut self, ctx: &StepContext<'_>) {
//!         let extra = std::sync::atomic::AtomicU64::new(0);
//!         ctx.for_each(0..10, |_| { extra.fetch_add(1, std::sync::atomic::Ordering::Relaxed); });
//!         self.hits += extra.into_inner();
//!     }
//! }
//! let pool = keel::ThreadPool::builder().threads(2).build().unwrap();
//! let objects: Vec<Counter> = (0..16).map(|_| Counter { hits: 0 }).collect();
//! let mut run = Objects::builder().policy("greedy").period(5).build(&pool, objects).unwrap();
//! let report = run.run(10).unwrap();
//! assert_eq!(report.rebalances.len(), 1); // after step 5; none after the last
//! assert!(run.into_objects().iter().all(|c| c.hits == 100));
//! ```

mod builder;
mod error;
mod remap;
mod report;

use std::ops::Range;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use crossbeam_utils::CachePadded;
use keel_policy::invoke::{Invocation, LoadHistory, Trigger, Verdict};
use keel_policy::mapping::MappingPolicy;
use keel_policy::metrics;

pub use builder::ObjectsBuilder;
pub use error::ObjectsError;
pub use report::{Rebalance, RunReport, StepReport};

use crate::pool::ThreadPool;
use crate::tasks::{TaskSummary, TaskWorker, Tasks, WorkerStats};
use crate::trace::What;

/// The environment variable naming the mapping policy for objects
/// (`docs/conventions.md#environment-variables`), read when the code names
/// none.
pub const ENV_LB: &str = "KEEL_LB";

/// The mapping policy when neither code nor `KEEL_LB` names one.
pub const DEFAULT_POLICY: &str = "greedy";

/// The initial mapping unless the builder says otherwise.
pub const DEFAULT_INITIAL: &str = "block";

/// The exposure policy for potential tasks unless the builder says otherwise.
pub const DEFAULT_STEALING: &str = "history-idle";

/// What the adaptive invocation expects a remap to cost before one has been
/// measured: a fixed part (the barrier, gathering the database, building
/// the policy's context) and a part per object (deciding, moving).
/// Measured here: 32–256 objects on 2 PUs remap in 20–150 µs.
pub const INITIAL_COST_S: f64 = 50e-6;

/// See [`INITIAL_COST_S`].
pub const INITIAL_COST_PER_OBJECT_S: f64 = 1e-6;

/// The first remap's expected cost for `objects` objects.
fn initial_cost_estimate(objects: usize) -> f64 {
    INITIAL_COST_S + INITIAL_COST_PER_OBJECT_S * objects as f64
}

/// A user object: its own state and a step.
pub trait Object: Send {
    /// One time step. `ctx` says which step, object and PU, and runs
    /// potential tasks.
    fn step(&mut self, ctx: &StepContext<'_>);
}

/// What a step sees of the runtime.
pub struct StepContext<'a> {
    step: usize,
    object: usize,
    pu: usize,
    worker: &'a (dyn Potential + 'a),
}

/// The potential-task half of a [`TaskWorker`], object-safe so that a
/// step's context need not name the worker's own lifetime.
trait Potential {
    fn run(
        &self,
        range: Range<usize>,
        chunks: Option<usize>,
        body: &(dyn Fn(usize) + Sync),
    ) -> TaskSummary;
}

impl Potential for TaskWorker<'_> {
    fn run(
        &self,
        range: Range<usize>,
        chunks: Option<usize>,
        body: &(dyn Fn(usize) + Sync),
    ) -> TaskSummary {
        match chunks {
            Some(chunks) => self.for_each_with_chunks(range, chunks, body),
            None => self.for_each(range, body),
        }
    }
}

impl std::fmt::Debug for StepContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StepContext")
            .field("step", &self.step)
            .field("object", &self.object)
            .field("pu", &self.pu)
            .finish()
    }
}

impl StepContext<'_> {
    /// The step's index, from 0.
    pub fn step(&self) -> usize {
        self.step
    }

    /// The object's id (its index in the vector given to the builder).
    pub fn object(&self) -> usize {
        self.object
    }

    /// The PU running the object now.
    pub fn pu(&self) -> usize {
        self.pu
    }

    /// A potential task: `body(i)` for every `i` in `range` exactly once,
    /// cut into chunks of which the exposure policy lets idle PUs steal
    /// some (see [`crate::tasks`]). A panic in any chunk is resumed here.
    pub fn for_each(&self, range: Range<usize>, body: impl Fn(usize) + Sync) -> TaskSummary {
        self.worker.run(range, None, &body)
    }

    /// As [`StepContext::for_each`], cut into `chunks` chunks.
    pub fn for_each_with_chunks(
        &self,
        range: Range<usize>,
        chunks: usize,
        body: impl Fn(usize) + Sync,
    ) -> TaskSummary {
        self.worker.run(range, Some(chunks), &body)
    }
}

/// An object where it lives, with its share of the load database.
struct Entry<T> {
    id: usize,
    object: T,
    /// Measured work seconds in `step` since the last remap.
    load: f64,
    /// Measured work seconds of its latest step: the key of the run order.
    last: f64,
}

/// One PU's objects and what its participant measured in the last step.
struct PuState<T> {
    entries: Vec<Entry<T>>,
    objects_s: f64,
    finish_s: f64,
}

impl<T> PuState<T> {
    /// The run order with stealing: lightest first by the last step's work.
    /// An object's potential task can be shared only while another PU is
    /// idle, which happens at the end of a step, so the divisible heavy
    /// work belongs there rather than a tail of light serial steps nobody
    /// can help with. Stable, so ties keep their order; measured work only.
    fn sort_for_stealing(&mut self) {
        self.entries.sort_by(|a, b| a.last.total_cmp(&b.last));
    }
}

/// Objects placed on the PUs of a pool, stepped and remapped.
pub struct Objects<'p, T> {
    pool: &'p ThreadPool,
    pus: Vec<CachePadded<Mutex<PuState<T>>>>,
    placement: Vec<usize>,
    migratable: Vec<bool>,
    available: Vec<bool>,
    /// Declared PU speeds, if any.
    speeds: Option<Vec<f64>>,
    policy: Box<dyn MappingPolicy>,
    policy_spec: String,
    /// When to remap, and what it has measured to decide.
    trigger: Trigger,
    /// The available PUs' busy times summed since the last remap, for the
    /// trigger.
    history: LoadHistory,
    stealing_spec: String,
    tasks: Tasks,
    step: usize,
    /// Each PU's background seconds since the last remap.
    pu_background: Vec<f64>,
    requested: bool,
}

impl<T> std::fmt::Debug for Objects<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Objects")
            .field("objects", &self.placement.len())
            .field("pus", &self.pus.len())
            .field("policy", &self.policy_spec)
            .field("invocation", &self.trigger.invocation())
            .field("step", &self.step)
            .finish()
    }
}

impl Objects<'_, ()> {
    /// A builder with every default.
    pub fn builder() -> ObjectsBuilder {
        ObjectsBuilder::default()
    }
}

impl<'p, T: Object> Objects<'p, T> {
    /// Number of objects.
    pub fn len(&self) -> usize {
        self.placement.len()
    }

    /// Whether there are no objects.
    pub fn is_empty(&self) -> bool {
        self.placement.is_empty()
    }

    /// Number of PUs.
    pub fn pus(&self) -> usize {
        self.pus.len()
    }

    /// Steps completed, counted from the builder's `first_step` (0 unless set).
    pub fn steps_done(&self) -> usize {
        self.step
    }

    /// The PU of every object.
    pub fn placement(&self) -> &[usize] {
        &self.placement
    }

    /// The remap policy's canonical spec (`greedy`, …).
    pub fn policy(&self) -> &str {
        &self.policy_spec
    }

    /// When the run remaps on its own.
    pub fn invocation(&self) -> Invocation {
        self.trigger.invocation()
    }

    /// The exposure policy's canonical spec.
    pub fn stealing(&self) -> &str {
        &self.stealing_spec
    }

    /// The declared PU speeds, if the builder was given any.
    pub fn speeds(&self) -> Option<&[f64]> {
        self.speeds.as_deref()
    }

    /// Which PUs may run objects.
    pub fn available(&self) -> &[bool] {
        &self.available
    }

    /// Marks `pu` available or not; takes effect at the next remap (objects
    /// already there keep running there until then).
    pub fn set_available(&mut self, pu: usize, available: bool) -> Result<(), ObjectsError> {
        let pus = self.pus();
        let slot = self
            .available
            .get_mut(pu)
            .ok_or(ObjectsError::PuOutOfRange { pu, pus })?;
        let was = std::mem::replace(slot, available);
        if !self.available.iter().any(|&a| a) {
            self.available[pu] = was;
            return Err(ObjectsError::NoAvailablePu { pus });
        }
        Ok(())
    }

    /// The load database: each object's measured seconds since the last remap.
    pub fn object_loads(&mut self) -> Vec<f64> {
        let mut loads = vec![0.0; self.len()];
        for pu in &mut self.pus {
            for e in &pu.get_mut().unwrap_or_else(|e| e.into_inner()).entries {
                loads[e.id] = e.load;
            }
        }
        loads
    }

    /// Each PU's background seconds since the last remap (its step time
    /// outside its objects' steps).
    pub fn pu_background(&self) -> &[f64] {
        &self.pu_background
    }

    /// Calls `f(id, pu, object)` for every object, per PU in the order
    /// the PU runs them (id order, or lightest first with stealing).
    pub fn visit(&mut self, mut f: impl FnMut(usize, usize, &T)) {
        for (pu, state) in self.pus.iter_mut().enumerate() {
            for e in &state.get_mut().unwrap_or_else(|e| e.into_inner()).entries {
                f(e.id, pu, &e.object);
            }
        }
    }

    /// The objects, by id.
    pub fn into_objects(self) -> Vec<T> {
        let mut all: Vec<Entry<T>> = self
            .pus
            .into_iter()
            .flat_map(|s| {
                CachePadded::into_inner(s)
                    .into_inner()
                    .unwrap_or_else(|e| e.into_inner())
                    .entries
            })
            .collect();
        all.sort_by_key(|e| e.id);
        all.into_iter().map(|e| e.object).collect()
    }

    /// Asks for a remap after the next step, whatever the period.
    pub fn request_rebalance(&mut self) {
        self.requested = true;
    }

    /// Runs `steps` steps, remapping as the invocation says (never after
    /// the last) and when requested.
    pub fn run(&mut self, steps: usize) -> Result<RunReport, ObjectsError> {
        let began = Instant::now();
        let mut rows: Vec<Vec<f64>> = Vec::with_capacity(steps);
        let mut pu_busy = vec![0.0; self.pus()];
        let mut rebalances = Vec::new();
        let (mut steps_s, mut balance_s) = (0.0, 0.0);
        let mut step_s = Vec::with_capacity(steps);
        let start_stats = self.tasks.totals();
        for k in 0..steps {
            let report = self.step_inner(Some(steps - k - 1))?;
            steps_s += report.wall_s;
            step_s.push(report.wall_s);
            for (total, b) in pu_busy.iter_mut().zip(&report.pu_busy_s) {
                *total += b;
            }
            rows.push(
                report
                    .pu_busy_s
                    .iter()
                    .zip(&self.available)
                    .filter(|(_, &a)| a)
                    .map(|(&b, _)| b)
                    .collect(),
            );
            if let Some(r) = report.rebalance {
                balance_s += r.total_s;
                rebalances.push(r);
            }
        }
        let tasks = self.tasks.totals().since(&start_stats);
        Ok(RunReport {
            steps,
            wall_s: began.elapsed().as_secs_f64(),
            steps_s,
            step_s,
            balance_s,
            lambda: metrics::stepped_lambda(&rows),
            busy_s: pu_busy.iter().sum(),
            pu_busy_s: pu_busy,
            rebalances,
            tasks,
        })
    }

    /// Runs one step, then remaps if the invocation or a request says so.
    pub fn step(&mut self) -> Result<StepReport, ObjectsError> {
        self.step_inner(None)
    }

    /// One step; `remaining` is the number of steps still to run after it
    /// when known (then none remaps after the last).
    fn step_inner(&mut self, remaining: Option<usize>) -> Result<StepReport, ObjectsError> {
        let pus = self.pus();
        if self.pool.team_size_here() != pus {
            return Err(ObjectsError::NestedRegion { pus });
        }
        // Workers' counters before this step, to attribute helping and
        // waiting to it.
        let before: Vec<WorkerStats> = self.tasks.stats();
        let step = self.step;
        let running = AtomicUsize::new(pus);
        let states = &self.pus;
        let available = &self.available;
        let tasks = &self.tasks;
        let steals = tasks.expose().steals();
        let began = Instant::now();
        self.pool.region(|team| {
            let pu = team.index;
            let worker = tasks.worker(pu);
            let started = Instant::now();
            let mut state = states[pu].lock().unwrap_or_else(|e| e.into_inner());
            let mut objects_s = 0.0;
            let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
                for e in state.entries.iter_mut() {
                    let ctx = StepContext {
                        step,
                        object: e.id,
                        pu,
                        worker: &worker,
                    };
                    let before = worker.stats();
                    worker.trace_object(step, e.id);
                    let t0 = Instant::now();
                    e.object.step(&ctx);
                    worker.trace_span(
                        t0,
                        What::Object {
                            step: step as u64,
                            object: e.id as u64,
                        },
                    );
                    let dt = t0.elapsed().as_secs_f64();
                    objects_s += dt;
                    // The object's work wherever it ran: its wall time here
                    // less the wait for its thieves (helping others meanwhile
                    // is theirs), plus what the thieves spent on its chunks.
                    // Without this, stealing hides a hot object's load from
                    // the next remap.
                    let w = worker.stats().since(&before);
                    let work = (dt - w.waited_s).max(0.0) + w.lent_s;
                    e.load += work;
                    e.last = work;
                }
            }));
            if steals {
                state.sort_for_stealing();
            }
            state.objects_s = objects_s;
            state.finish_s = started.elapsed().as_secs_f64();
            drop(state);
            // Release: orders this PU's writes before the thieves' and the
            // caller's view of "every PU done"; even a panicking PU counts
            // down, so nobody steals forever.
            running.fetch_sub(1, Ordering::AcqRel);
            if let Err(payload) = outcome {
                panic::resume_unwind(payload);
            }
            if steals && available[pu] {
                worker.steal_until(|| running.load(Ordering::Acquire) == 0);
            }
        });
        let wall_s = began.elapsed().as_secs_f64();
        let after = self.tasks.stats();
        let mut pu_objects_s = vec![0.0; pus];
        let mut pu_busy_s = vec![0.0; pus];
        for (pu, state) in self.pus.iter_mut().enumerate() {
            let s = state.get_mut().unwrap_or_else(|e| e.into_inner());
            pu_objects_s[pu] = s.objects_s;
            self.pu_background[pu] += (s.finish_s - s.objects_s).max(0.0);
            let w = after[pu].since(&before[pu]);
            pu_busy_s[pu] = (s.objects_s - w.waited_s).max(0.0) + w.helped_s;
        }
        self.step += 1;
        let loads: Vec<f64> = pu_busy_s
            .iter()
            .zip(&self.available)
            .filter(|(_, &a)| a)
            .map(|(&b, _)| b)
            .collect();
        let summary = self.history.add(&loads);
        let decision = self.trigger.after_step(self.step, &summary, remaining);
        let may_remap = remaining != Some(0);
        let rebalance = if may_remap && (self.requested || decision.balance) {
            let reason = if decision.balance {
                decision.reason.to_string()
            } else {
                REQUESTED.to_string()
            };
            let mut r = self.rebalance()?;
            r.reason = reason;
            Some(r)
        } else {
            None
        };
        trace_decision(step, &decision, rebalance.as_ref());
        Ok(StepReport {
            step,
            wall_s,
            pu_objects_s,
            pu_busy_s,
            decision,
            rebalance,
        })
    }
}

/// A [`Rebalance`]'s reason when the program asked for it.
pub const REQUESTED: &str = "requested by the program";

/// Writes the step's invocation decision to the trace, when tracing.
fn trace_decision(step: usize, decision: &Verdict, rebalance: Option<&Rebalance>) {
    if let Some(tracer) = crate::trace::tracer() {
        let reason = match rebalance {
            Some(r) => r.reason.clone(),
            None => decision.reason.to_string(),
        };
        tracer.write_decision(step, rebalance.map(|r| r.total_s), &reason);
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
