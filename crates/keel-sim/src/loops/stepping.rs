//! The time-stepping driver: a sequence of loop instances, of one or more
//! loops (by name), with one fixed schedule or with selection per instance
//! (`auto[,method]`), exactly as `keel::loops` runs them on threads.
//!
//! Per instance of loop `id` (the runtime's `ParallelLoop::run`):
//! 1. resolve the schedule: the fixed one, or under `auto` ask the loop's own
//!    [`LoopSelector`] ([`LoopSelector::choose`] with `N` and `P`) for a
//!    portfolio index and chunk (the expert chunk);
//! 2. build a context handler that offers what this loop measured before,
//!    only what the schedule reads: the iteration profile (FSC, FAC, TAP,
//!    BOLD), the thread history (AWF), user weights (WF), and for `binlpt`
//!    and `greedy` the iteration assignment, computed once from the hints
//!    and reused while they are unchanged;
//! 3. plan through [`LoopSchedule::plan`] and simulate the instance;
//! 4. remember the measurements in the loop's [`LoopMemory`] (profile, AWF
//!    history of work and busy time weighted by instance number) and feed the selector the same [`Measurement`] the runtime
//!    does: per-worker finish times and `N`.
//!
//! Simulated time runs on across instances (the next forks when the
//! previous one has joined), so a worker's perturbation window covers the
//! instances it overlaps.
//!
//! Selection per instance: `auto,exhaustive` tries the portfolio in order, one loop instance each.
//!
//! ```
//! use keel_sim::loops::{IterationCosts, Machine, Stepper};
//! use keel_sim::OverheadModel;
//! let machine = Machine::uniform(4, OverheadModel::ZERO).unwrap();
//! let mut stepper = Stepper::new(machine, "auto,exhaustive", 1).unwrap();
//! let costs = IterationCosts::uniform(1000, 1e-6).unwrap();
//! for _ in 0..3 {
//!     stepper.run("density", &costs).unwrap();
//! }
//! assert_eq!(stepper.selection_record("density").unwrap().instances(), 3);
//! assert!(stepper.now() > 0.0);
//! ```

use std::collections::HashMap;

use keel_policy::concept::{Concept, Model, Origin, Subject};
use keel_policy::dls::{LoopMemory, LoopSchedule, LoopShape, StepMeasurement};
use keel_policy::select::{self, AutoSpec, LoopSelector, Measurement, Record, Setting};
use keel_policy::ContextHandler;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::costs::IterationCosts;
use super::instance::{simulate_plan, InstanceResult, Machine, RunOptions, Selected};
use crate::engine::SimTime;
use crate::error::SimError;

/// Per-iteration workload hints, as a workload-aware schedule reads them.
const HINTS: Concept = Concept::Workload {
    subject: Subject::Tasks,
    model: Model::Static,
};

/// What a schedule text resolved to.
enum Resolved {
    Fixed {
        schedule: Box<dyn LoopSchedule>,
        chunk: Option<u64>,
    },
    Auto(AutoSpec),
}

/// What is kept about one loop across its instances.
#[derive(Default)]
struct LoopState {
    memory: LoopMemory,
    selector: Option<LoopSelector>,
}

/// Options of one loop call.
#[derive(Debug, Clone, Copy, Default)]
pub struct Call<'a> {
    /// The loop's own chunk parameter (`.chunk(k)`): it wins over the
    /// spec's and over the expert chunk, as in the runtime.
    pub chunk: Option<u64>,
    /// Workload hints for `binlpt` and `greedy`; the iteration costs
    /// themselves when absent (the best estimate a user could give).
    pub hints: Option<&'a [f64]>,
}

/// Runs loop instances in sequence under one schedule setting.
pub struct Stepper {
    machine: Machine,
    setting: Resolved,
    portfolio: Vec<Box<dyn LoopSchedule>>,
    loops: HashMap<String, LoopState>,
    weights: Option<Vec<f64>>,
    rng: ChaCha8Rng,
    now: SimTime,
    record_chunks: bool,
}

impl Stepper {
    /// A driver for `setting` in `KEEL_SCHEDULE` syntax (`static`,
    /// `dynamic,4`, `awf-b`, `auto,expert`, …), noise drawn from `seed`.
    pub fn new(machine: Machine, setting: &str, seed: u64) -> Result<Self, SimError> {
        let setting = match select::parse_setting(setting)? {
            Setting::Fixed { schedule, chunk } => Resolved::Fixed { schedule, chunk },
            Setting::Auto(spec) => Resolved::Auto(spec),
        };
        let portfolio = match setting {
            Resolved::Auto(_) => select::portfolio(),
            Resolved::Fixed { .. } => Vec::new(),
        };
        Ok(Stepper {
            machine,
            setting,
            portfolio,
            loops: HashMap::new(),
            weights: None,
            rng: ChaCha8Rng::seed_from_u64(seed),
            now: 0.0,
            record_chunks: false,
        })
    }

    /// Keep every worker's chunks in the results (conservation checks).
    pub fn record_chunks(&mut self, on: bool) -> &mut Self {
        self.record_chunks = on;
        self
    }

    /// User weights for `wf` (`ParallelLoop::weights`), one per worker.
    pub fn weights(&mut self, weights: Vec<f64>) -> &mut Self {
        self.weights = Some(weights);
        self
    }

    /// Simulated time since the first fork.
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// The machine.
    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    /// What loop `id`'s schedules read of its past instances.
    pub fn memory(&self, id: &str) -> Option<&LoopMemory> {
        self.loops.get(id).map(|state| &state.memory)
    }

    /// Loop `id`'s selection record under `auto`.
    pub fn selection_record(&self, id: &str) -> Option<&Record> {
        self.loops.get(id)?.selector.as_ref().map(|s| s.record())
    }

    /// One instance of loop `id` over `costs`, with the defaults of [`Call`].
    pub fn run(&mut self, id: &str, costs: &IterationCosts) -> Result<InstanceResult, SimError> {
        self.run_with(id, costs, Call::default())
    }

    /// One instance of loop `id` over `costs`.
    pub fn run_with(
        &mut self,
        id: &str,
        costs: &IterationCosts,
        call: Call<'_>,
    ) -> Result<InstanceResult, SimError> {
        let threads = self.machine.threads();
        let iterations = costs.len();
        if !self.loops.contains_key(id) {
            self.loops.insert(id.to_string(), LoopState::default());
        }
        let state = self.loops.get_mut(id).expect("inserted above");

        let (schedule, own_chunk, selected): (&dyn LoopSchedule, Option<u64>, Option<Selected>) =
            match &self.setting {
                Resolved::Fixed { schedule, chunk } => (schedule.as_ref(), *chunk, None),
                Resolved::Auto(spec) => {
                    let overhead = self.machine.overhead();
                    // The simulated machine's claims cost what its model
                    // says; its bookkeeping is the runtime's, unmodelled here.
                    let cost = keel_policy::select::cost::DispatchCost {
                        per_chunk: overhead.claim_local + overhead.claim_serial,
                        ..keel_policy::select::cost::DispatchCost::default()
                    };
                    let selector = state
                        .selector
                        .get_or_insert_with(|| spec.selector(stream_of(id)).with_cost(cost));
                    let choice = selector.choose(iterations, threads);
                    let selected = Selected {
                        method: spec.method.name(),
                        index: choice.index,
                        phase: choice.phase,
                    };
                    // Under auto the expert chunk takes the spec chunk's place.
                    (
                        self.portfolio[choice.index].as_ref(),
                        choice.chunk,
                        Some(selected),
                    )
                }
            };
        let chunk = call.chunk.or(own_chunk);
        let shape = LoopShape::new(iterations, threads, chunk)?;

        let owned_hints: Vec<f64>;
        let hints: Option<&[f64]> = match (schedule.as_workload(), call.hints) {
            (None, _) => None,
            (Some(_), Some(h)) => Some(h),
            (Some(_), None) => {
                owned_hints = costs.to_vec();
                Some(&owned_hints)
            }
        };
        let assignment = match (schedule.as_workload(), hints) {
            (Some(workload), Some(hints)) => {
                let canonical = schedule.spec().to_string();
                Some(
                    state
                        .memory
                        .assignment(workload, &canonical, &shape, hints)?,
                )
            }
            _ => None,
        };

        let recall = state.memory.recall(schedule, threads);
        let profiled = recall.profiled;
        let mut ctx = ContextHandler::new();
        recall.provide(&mut ctx);
        if let Some(weights) = &self.weights {
            ctx.provide_values(Concept::ThreadWeights, Origin::User, &weights[..]);
        }
        if let Some(hints) = hints {
            ctx.provide_values(HINTS, Origin::User, hints);
        }
        if let Some(assignment) = &assignment {
            ctx.provide_assignment(Origin::Runtime, assignment);
        }
        let plan = schedule.plan(&shape, &ctx)?;
        let options = RunOptions {
            profile: profiled,
            record_chunks: self.record_chunks,
        };
        let mut result = simulate_plan(
            &plan,
            costs,
            &self.machine,
            self.now,
            options,
            &mut self.rng,
        );
        result.schedule = schedule.spec().to_string();
        result.chunk = shape.chunk;
        result.selection = selected;
        self.now += result.t_par;
        drop(ctx);

        state.memory.remember(&StepMeasurement {
            iterations: &result.thread_iterations,
            // Every simulated worker starts at the fork, so its busy time
            // (start to finish) is its finish time from the fork.
            busy: &result.finish,
            profile: result.profile,
        });
        if let Some(selector) = &mut state.selector {
            let measurement =
                Measurement::from_finish_times(&result.finish).with_iterations(iterations);
            selector.observe(&measurement)?;
        }
        Ok(result)
    }
}

/// One instance of `schedule` (a fixed schedule or `auto[,method]`, whose
/// first choice it runs) over `costs` on `machine`, noise from `seed`.
pub fn simulate(
    costs: &IterationCosts,
    machine: &Machine,
    schedule: &str,
    seed: u64,
) -> Result<InstanceResult, SimError> {
    Stepper::new(machine.clone(), schedule, seed)?.run("loop", costs)
}

/// A stable number per loop name, separating RandomSel's streams; the same
/// FNV-1a the runtime applies to a loop's printed identity, so a named loop
/// draws the same stream in both contexts.
fn stream_of(id: &str) -> u64 {
    id.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
