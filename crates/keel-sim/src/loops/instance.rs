//! One loop instance on simulated workers: the claim protocol of
//! `keel::loops::claim`, enacted in simulated time on the unchanged [`Plan`]
//! of a registry schedule.
//!
//! Each worker has at most one event in flight, "ready to request a chunk at
//! `t`". Popping it, the worker first publishes the timing of the chunk it
//! just finished (adaptive plans read it from the board), then claims as the
//! plan's [`Claim`] says:
//!
//! - `Static`: the worker's next block ([`Plan::static_block`]); costs
//!   `claim_local`, no shared state.
//! - `Indexed`: one claim on the loop's [`SharedCounter`]; the chunk is
//!   [`Plan::chunk_at`] of the next index.
//! - `Remaining`: one claim on the counter; the size is
//!   [`Plan::next_size`] of what remains, clamped as the runtime clamps it.
//!   Requests are numbered once each for the plans that read the number.
//! - `Steal`: one claim on the worker's own range lock; when its range is
//!   empty, the first victim in cyclic order from `me + 1` with something to
//!   give ([`Plan::steal_amount`]) pays one claim on its lock, and the stolen
//!   range becomes the worker's own.
//!
//! The counter serves claims one at a time in arrival order, so chunks are
//! handed out in exactly the order the claims reach it, and the waiting is
//! the contention. A worker's last, empty-handed claim is paid too: it is
//! when the worker learns that the loop is done, its finish time.
//!
//! The chunk then runs on the worker's [`WorkerModel`] (speed, noise,
//! perturbations integrated exactly); adaptive plans record it in the
//! worker's [`ThreadLocal`] measured as [`Plan::timing`] says: from the end
//! of the claim ([`Timing::Chunk`]) or from the request
//! ([`Timing::Request`]), so that the claim's overhead is in it, and
//! publish the worker's timing when its chunk budget is spent (AF and mAF
//! claim one sub-chunk per request, as the runtime does).
//!
//! Cost: one event per chunk (plus one per worker), each a heap operation on
//! at most P entries, a counter claim in O(1), a chunk cost in O(1) from
//! prefix sums and, for stealing, a victim search in O(log P) over the set
//! of non-empty ranges: O(events · log P) for every built-in plan whose own
//! arithmetic is O(1) per request.
//!
//! A registry schedule's plan enacted directly: `static` on two noise-free
//! workers gives each half the iterations.
//!
//! ```
//! use keel_policy::dls::LoopShape;
//! use keel_policy::select::parse_setting;
//! use keel_policy::ContextHandler;
//! use keel_sim::loops::instance::{simulate_plan, RunOptions};
//! use keel_sim::loops::{IterationCosts, Machine};
//! use keel_sim::OverheadModel;
//! use rand_chacha::{rand_core::SeedableRng, ChaCha8Rng};
//! let costs = IterationCosts::uniform(8, 1e-3).unwrap();
//! let machine = Machine::uniform(2, OverheadModel::ZERO).unwrap();
//! let (schedule, chunk) = parse_setting("static").unwrap().into_fixed().unwrap();
//! let ctx = ContextHandler::new();
//! let plan = schedule.plan(&LoopShape::new(8, 2, chunk).unwrap(), &ctx).unwrap();
//! let mut rng = ChaCha8Rng::seed_from_u64(1);
//! let r = simulate_plan(&plan, &costs, &machine, 0.0, RunOptions::default(), &mut rng);
//! assert_eq!(r.thread_iterations, vec![4, 4]);
//! assert!((r.t_par - 4e-3).abs() < 1e-12);
//! ```

use std::collections::BTreeSet;
use std::ops::Range;

use keel_policy::dls::{clamp_size, Claim, Plan, Request, ThreadLocal, ThreadTiming, Timing};
use keel_policy::select::Phase;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::costs::IterationCosts;
use crate::engine::{EventQueue, SimTime};
use crate::error::SimError;
use crate::overhead::{OverheadModel, SharedCounter};
use crate::worker::WorkerModel;
use keel_policy::dls::ProfileSums;

/// The most workers [`Machine::uniform`] builds: 65,536 (the papers'
/// loops run on 16–1,024); each holds a model and per-run state.
pub const MAX_LOOP_WORKERS: usize = 1 << 16;

/// The simulated machine a loop runs on: its workers and the runtime's
/// dispatch overhead.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    workers: Vec<WorkerModel>,
    overhead: OverheadModel,
}

impl Machine {
    /// A machine of `workers` (at least one) with `overhead`.
    pub fn new(workers: Vec<WorkerModel>, overhead: OverheadModel) -> Result<Self, SimError> {
        if workers.is_empty() {
            return Err(SimError::invalid(
                "worker count",
                0,
                "at least 1 worker (P ≥ 1)",
            ));
        }
        overhead.validate()?;
        Ok(Machine { workers, overhead })
    }

    /// `threads` identical workers of speed 1 without noise, at most
    /// [`MAX_LOOP_WORKERS`].
    pub fn uniform(threads: usize, overhead: OverheadModel) -> Result<Self, SimError> {
        if threads > MAX_LOOP_WORKERS {
            return Err(SimError::over_limit(
                "worker count",
                threads,
                format!("at most MAX_LOOP_WORKERS = {MAX_LOOP_WORKERS} workers"),
            ));
        }
        let worker = WorkerModel::new(1.0)?;
        Self::new(vec![worker; threads], overhead)
    }

    /// Number of workers `P`.
    pub fn threads(&self) -> usize {
        self.workers.len()
    }

    /// The workers.
    pub fn workers(&self) -> &[WorkerModel] {
        &self.workers
    }

    /// The dispatch overhead.
    pub fn overhead(&self) -> &OverheadModel {
        &self.overhead
    }
}

/// What to measure beyond the essentials.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// Estimate the iteration profile from chunk times (the schedule reads one).
    pub profile: bool,
    /// Keep every worker's chunks, for conservation checks (memory O(chunks)).
    pub record_chunks: bool,
}

/// Under `auto[,method]`: what the selection method chose for an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Selected {
    /// `keel`, `expert`, `exhaustive` or `random`.
    pub method: &'static str,
    /// Portfolio index (`AUTO4OMP_PORTFOLIO` order).
    pub index: usize,
    /// Why.
    pub phase: Phase,
}

/// What one simulated loop instance measured (times in simulated seconds).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InstanceResult {
    /// The schedule's canonical spec.
    pub schedule: String,
    /// The chunk parameter it planned with (`None`: its default).
    pub chunk: Option<u64>,
    /// Iterations `N`.
    pub iterations: u64,
    /// Workers `P`.
    pub threads: usize,
    /// When the instance forked, in simulated time since the run began.
    pub start: SimTime,
    /// T_par: the fork-join overhead plus the last worker's finish.
    pub t_par: f64,
    /// Each worker's finish time, from the fork (its last, empty claim done).
    pub finish: Vec<f64>,
    /// Each worker's time spent executing chunks.
    pub compute: Vec<f64>,
    /// Chunks each worker executed.
    pub chunks: Vec<u64>,
    /// Iterations each worker executed.
    pub thread_iterations: Vec<u64>,
    /// LIB = (1 − mean/max)·100 over the finish times.
    pub lib_percent: f64,
    /// Events the simulation processed (the unit of its cost).
    pub events: u64,
    /// Claims served by the shared counter (and, for stealing, range locks).
    pub claims: u64,
    /// Total simulated time claims spent waiting for a busy counter.
    pub contention: f64,
    /// The iteration profile `(μ, σ)` measured, when asked for.
    pub profile: Option<(f64, f64)>,
    /// Each worker's chunks in execution order, when recorded.
    #[serde(skip)]
    pub chunk_log: Option<Vec<Vec<Range<u64>>>>,
    /// Under `auto`: the method's choice for this instance.
    pub selection: Option<Selected>,
}

impl InstanceResult {
    /// Total chunks over all workers.
    pub fn total_chunks(&self) -> u64 {
        self.chunks.iter().sum()
    }

    /// How many times each iteration ran, from the chunk log (`None` when
    /// chunks were not recorded). Exactly-once means every entry is 1.
    pub fn executions(&self) -> Option<Vec<u32>> {
        let log = self.chunk_log.as_ref()?;
        let mut seen = vec![0u32; self.iterations as usize];
        for chunk in log.iter().flatten() {
            for i in chunk.clone() {
                if let Some(s) = seen.get_mut(i as usize) {
                    *s += 1;
                }
            }
        }
        Some(seen)
    }
}

/// One worker's state during an instance.
#[derive(Clone, Default)]
struct WorkerState {
    finish: f64,
    compute: f64,
    chunks: u64,
    iterations: u64,
    /// Static blocks taken so far.
    round: u64,
    local: ThreadLocal,
    /// Timing to publish on the board when the current chunk ends.
    pending: Option<ThreadTiming>,
    profile: ProfileSums,
}

/// `static-steal`'s ranges and their locks.
struct StealState {
    ranges: Vec<Range<u64>>,
    /// Workers whose range is not empty: the victim search in O(log P).
    nonempty: BTreeSet<usize>,
    locks: Vec<SharedCounter>,
}

impl StealState {
    fn new(plan: &Plan<'_>, threads: usize) -> Self {
        let ranges: Vec<Range<u64>> = (0..threads).map(|t| plan.home_range(t)).collect();
        let nonempty = (0..threads).filter(|&t| !ranges[t].is_empty()).collect();
        StealState {
            ranges,
            nonempty,
            locks: vec![SharedCounter::new(); threads],
        }
    }

    fn refresh(&mut self, t: usize) {
        if self.ranges[t].is_empty() {
            self.nonempty.remove(&t);
        } else {
            self.nonempty.insert(t);
        }
    }

    /// The runtime's scan: victims from `me + 1` cyclically, the first one
    /// the plan takes something from.
    fn victim(&self, me: usize, plan: &Plan<'_>) -> Option<(usize, u64)> {
        self.nonempty
            .range(me + 1..)
            .chain(self.nonempty.range(..me))
            .find_map(|&v| {
                let left = self.ranges[v].end - self.ranges[v].start;
                let take = plan.steal_amount(left).min(left);
                (take > 0).then_some((v, take))
            })
    }
}

/// The outcome of one request.
enum Outcome {
    /// A chunk, available from the given time.
    Chunk(Range<u64>, SimTime),
    /// Nothing left; the worker learns it at the given time.
    Done(SimTime),
}

/// Simulates one instance of `plan` over `costs` on `machine`, forking at
/// `start`. The plan must have been made for `costs.len()` iterations on
/// `machine.threads()` threads. Noise draws come from `rng`.
pub fn simulate_plan(
    plan: &Plan<'_>,
    costs: &IterationCosts,
    machine: &Machine,
    start: SimTime,
    options: RunOptions,
    rng: &mut ChaCha8Rng,
) -> InstanceResult {
    let p = machine.threads();
    let n = costs.len();
    let overhead = *machine.overhead();
    let claim = plan.claim();
    let timing = plan.timing();
    let numbered = claim == Claim::Remaining && plan.numbers_requests();

    let mut workers = vec![WorkerState::default(); p];
    let mut board = vec![ThreadTiming::default(); p];
    let mut counter = SharedCounter::new();
    // Next chunk index (Indexed) or next iteration (Remaining).
    let mut next = 0u64;
    let mut requests = 0u64;
    let mut steal = (claim == Claim::Steal).then(|| StealState::new(plan, p));
    let mut log: Option<Vec<Vec<Range<u64>>>> = options.record_chunks.then(|| vec![Vec::new(); p]);

    let mut queue: EventQueue<usize> = EventQueue::new();
    for w in 0..p {
        queue.schedule(start, w);
    }
    while let Some((t, w)) = queue.pop() {
        let ws = &mut workers[w];
        if let Some(published) = ws.pending.take() {
            board[w] = published;
        }
        let outcome = match claim {
            Claim::Static => {
                let block = plan.static_block(w, ws.round);
                ws.round += 1;
                match block {
                    Some(chunk) => Outcome::Chunk(chunk, t + overhead.claim_local),
                    None => Outcome::Done(t),
                }
            }
            Claim::Indexed => {
                let ready = counter.claim(t, &overhead);
                let index = next;
                next += 1;
                match plan.chunk_at(index) {
                    Some(chunk) => Outcome::Chunk(chunk, ready),
                    None => Outcome::Done(ready),
                }
            }
            Claim::Remaining => {
                let ready = counter.claim(t, &overhead);
                let remaining = n - next;
                if remaining == 0 {
                    Outcome::Done(ready)
                } else {
                    let request = Request {
                        thread: w,
                        number: if numbered {
                            requests += 1;
                            requests - 1
                        } else {
                            0
                        },
                    };
                    let size = clamp_size(
                        plan.next_size(remaining, request, &mut ws.local, &board),
                        1,
                        remaining,
                    );
                    let chunk = next..next + size;
                    next += size;
                    ws.local.claimed(size);
                    Outcome::Chunk(chunk, ready)
                }
            }
            Claim::Steal => {
                let st = steal.as_mut().expect("built for steal plans");
                let mut ready = st.locks[w].claim(t, &overhead);
                let mut have = !st.ranges[w].is_empty();
                if !have {
                    if let Some((v, take)) = st.victim(w, plan) {
                        let end = st.ranges[v].end;
                        st.ranges[v].end = end - take;
                        st.refresh(v);
                        ready = st.locks[v].claim(ready, &overhead);
                        st.ranges[w] = end - take..end;
                        // The thief installs the stolen range, then takes
                        // its first unit like any owner: one more claim.
                        ready = st.locks[w].claim(ready, &overhead);
                        have = true;
                    }
                }
                if have {
                    let unit = plan.chunk_unit().max(1);
                    let range = &mut st.ranges[w];
                    let take = unit.min(range.end - range.start);
                    let chunk = range.start..range.start + take;
                    range.start += take;
                    st.refresh(w);
                    Outcome::Chunk(chunk, ready)
                } else {
                    Outcome::Done(ready)
                }
            }
        };
        match outcome {
            Outcome::Done(at) => ws.finish = at - start,
            Outcome::Chunk(chunk, ready) => {
                let worker = &machine.workers[w];
                let size = chunk.end - chunk.start;
                let end = if timing == Timing::None {
                    let end = worker.finish(ready, costs.range(chunk.clone()), rng);
                    if options.profile {
                        ws.profile.add(size, end - ready);
                    }
                    end
                } else {
                    // Request timing starts at the request (static blocks
                    // have none, as in the runtime).
                    let began = if timing == Timing::Request && claim != Claim::Static {
                        t
                    } else {
                        ready
                    };
                    let end = worker.finish(ready, costs.range(chunk.clone()), rng);
                    ws.local.record(size, end - began);
                    if ws.local.chunk_spent() {
                        ws.pending = Some(ws.local.timing());
                    }
                    end
                };
                ws.compute += end - ready;
                ws.chunks += 1;
                ws.iterations += size;
                if let Some(log) = &mut log {
                    log[w].push(chunk);
                }
                queue.schedule(end, w);
            }
        }
    }

    let finish: Vec<f64> = workers.iter().map(|w| w.finish).collect();
    let last = finish.iter().copied().fold(0.0, f64::max);
    let (mut claims, mut contention) = (counter.claims(), counter.waited());
    if let Some(st) = &steal {
        claims += st.locks.iter().map(|l| l.claims()).sum::<u64>();
        contention += st.locks.iter().map(|l| l.waited()).sum::<f64>();
    }
    let profile = options
        .profile
        .then(|| {
            let mut sums = ProfileSums::default();
            workers.iter().for_each(|w| sums.merge(w.profile));
            sums.profile()
        })
        .flatten();
    InstanceResult {
        schedule: String::new(),
        chunk: None,
        iterations: n,
        threads: p,
        start,
        t_par: overhead.fork_join + last,
        lib_percent: keel_policy::metrics::lib_percent(&finish),
        compute: workers.iter().map(|w| w.compute).collect(),
        chunks: workers.iter().map(|w| w.chunks).collect(),
        thread_iterations: workers.iter().map(|w| w.iterations).collect(),
        finish,
        events: queue.events_processed(),
        claims,
        contention,
        profile,
        chunk_log: log,
        selection: None,
    }
}
