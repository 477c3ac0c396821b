//! Task farms: an emitter, `N` workers and an optional collector, with the
//! dispatch policies of `keel-policy::farm` (FastFlow's farm and the ARRS of
//! the FastFlow ARRS paper, "An Adaptive Load-balancer for Task-scheduling
//! in FastFlow").
//!
//! ```text
//!                 ┌─ SPSC ─▶ worker 0 ─ SPSC ─┐
//!  source ─▶ emitter ─ SPSC ─▶ worker 1 ─ SPSC ─┼─▶ collector ─▶ (feedback pool ─▶ emitter)
//!   (iterator)    └─ SPSC ─▶ worker 2 ─ SPSC ─┘
//!   └──────────── the calling thread ─────────────┘
//! ```
//!
//! - The **emitter runs on the calling thread** and pulls items from any
//!   iterator (`std::iter::from_fn` turns a callback into one). For each
//!   item it asks the [`Dispatch`] policy for a [`Decision`] through a
//!   [`QueueView`] over the workers' input queues, and enacts it: push the
//!   item, push ARRS's markers, or wait for room or for a marker.
//! - **Workers** are threads of their own (they may outnumber the cores),
//!   each popping its own [`spsc`] input queue.
//! - The **collector is not a thread**: the calling thread runs it between
//!   dispatches, draining one output queue per worker. With
//!   [`Farm::run_feedback`] the collector may send new items back to the
//!   emitter's pool ([`Feedback::send`]) until it calls [`Feedback::stop`]
//!   or nothing is left in flight: the material-optimisation pattern of the
//!   paper's §III-E.
//! - **End of stream** closes every input queue once the source (and the
//!   feedback pool) is empty; workers drain their queue, then exit; the
//!   emitter returns after the last result was collected.
//! - **Waiting.** Every waiting thread (a worker with an empty queue or a
//!   full output, the emitter with full queues, throttled, or with nothing
//!   to collect) spins [`DEFAULT_FARM_SPINS`] steps, yielding now and then,
//!   then parks on its [`Signal`]; no emitter or collector spins on the
//!   workers' cores (FastFlow's on-demand farm lost 41–71 % here to that).
//! - **Panics.** A worker that panics stops the farm: the other workers
//!   drop what is left, the emitter stops, and the panic is resumed on the
//!   caller. A panic in the source or the collector stops the workers too.
//!
//! The queue and signal protocols are in `README.md` beside this file.
//!
//! ```
//! use keel::farm::Farm;
//! use std::sync::atomic::{AtomicU64, Ordering};
//! let mut farm = Farm::builder().workers(3).policy("arrs:chunk=50").build().unwrap();
//! let sum = AtomicU64::new(0);
//! let report = farm.run(1..=1000u64, |_, i| { sum.fetch_add(i, Ordering::Relaxed); }).unwrap();
//! assert_eq!(sum.into_inner(), 500_500);
//! assert_eq!(report.per_worker.iter().sum::<u64>(), 1000);
//! ```

mod signal;
pub mod spsc;
mod sync;

use std::any::Any;
use std::collections::VecDeque;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use crossbeam_utils::CachePadded;
use keel_policy::farm as policy;
pub use keel_policy::farm::{Decision, Dispatch, FarmConfig, QueueView};

pub use signal::Signal;
use spsc::{Consumer, Pop, Producer, PushError};
use sync::Arc;

use crate::pool::WaitPolicy;

/// Spin steps (each a `spin_loop` hint, every 64th a yield) before a farm
/// thread parks, under the default wait policy: about a microsecond or
/// two, enough to catch a worker's next item on a busy farm, short enough
/// that an idle emitter or collector hands its core to a worker.
pub const DEFAULT_FARM_SPINS: u32 = 1 << 10;

/// Items the emitter dispatches before it flushes its queues (publishes
/// and notifies) and looks at the collector again. A worker that has run
/// dry sees nothing of a batch until its flush, and under ARRS every block
/// starts with the workers nearly dry (the emitter waited for them to
/// reach the marker): 64 items keep that wait to a few microseconds, at
/// one notify per worker per 64 items (with empty tasks, 256 made `arrs`
/// cost 1.2–1.35× `rr` per item here, 64 about 1.05–1.2×, `rr` unchanged).
const DISPATCH_BATCH: usize = 64;

/// Results the collector takes from one worker before the next.
const COLLECT_BATCH: usize = 256;

/// Results a busy worker pushes before it notifies the collector; it also
/// notifies whenever its input runs dry or its output is full, so a result
/// waits at most this many items, and never while the worker waits.
const RESULT_NOTIFY_BATCH: u32 = 32;

/// The longest an emitter throttled by ARRS spins for its marker before it
/// parks: only when recent marker waits were this short (very short tasks,
/// where a park–unpark round trip would cost more than the block), never
/// when blocks take longer, so it never holds a worker's core for long.
const MARKER_SPIN: std::time::Duration = std::time::Duration::from_micros(100);

/// Which worker is running an item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Worker {
    /// This worker, `0..workers`.
    pub index: usize,
    /// Number of workers in the farm.
    pub workers: usize,
}

/// Why a farm cannot be built or started.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FarmError {
    /// A farm needs a worker.
    #[error("a farm needs at least 1 worker (got 0)")]
    ZeroWorkers,
    /// A queue capacity of 0.
    #[error("a queue capacity must be at least 1 (or unbounded); got 0")]
    ZeroCapacity,
    /// The policy spec or its parameters (`CHUNK_SIZE` 0, ...).
    #[error(transparent)]
    Policy(policy::FarmError),
    /// A pinning that names a core this machine lacks.
    #[error("worker pinned to core {core}, but this machine has {cores} cores (0..{cores})")]
    BadPin {
        /// The core asked for.
        core: usize,
        /// Cores the OS reports.
        cores: usize,
    },
    /// The OS refused a thread.
    #[error("could not start a farm worker: {0}")]
    Spawn(String),
}

impl From<policy::FarmError> for FarmError {
    fn from(e: policy::FarmError) -> Self {
        match e {
            policy::FarmError::ZeroWorkers => FarmError::ZeroWorkers,
            policy::FarmError::ZeroCapacity => FarmError::ZeroCapacity,
            other => FarmError::Policy(other),
        }
    }
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FarmReport {
    /// Items dispatched (feedback items included).
    pub items: u64,
    /// Items each worker ran.
    pub per_worker: Vec<u64>,
    /// Results the collector received.
    pub collected: u64,
    /// Marker blocks sent (ARRS).
    pub blocks: u64,
    /// Times the emitter waited (for room, a marker, a result or the end).
    pub emitter_waits: u64,
    /// Wall time of the run, seconds.
    pub seconds: f64,
}

/// The collector's handle on the emitter's pool in [`Farm::run_feedback`].
#[derive(Debug)]
pub struct Feedback<'a, T> {
    pool: &'a mut VecDeque<T>,
    stop: &'a mut bool,
}

impl<T> Feedback<'_, T> {
    /// Returns an item to the emitter's pool (ignored after [`Self::stop`]).
    pub fn send(&mut self, item: T) {
        if !*self.stop {
            self.pool.push_back(item);
        }
    }

    /// Stops the farm: nothing more is dispatched; results of items already
    /// dispatched are still collected.
    pub fn stop(&mut self) {
        *self.stop = true;
        self.pool.clear();
    }

    /// Items waiting in the pool.
    pub fn pending(&self) -> usize {
        self.pool.len()
    }

    /// Whether [`Self::stop`] was called.
    pub fn stopped(&self) -> bool {
        *self.stop
    }
}

/// Builds a [`Farm`], naming every choice.
#[derive(Debug, Default)]
pub struct FarmBuilder {
    workers: Option<usize>,
    policy: Option<String>,
    dispatch: Option<Box<dyn Dispatch>>,
    capacity: Option<usize>,
    output_capacity: Option<usize>,
    wait: Option<WaitPolicy>,
    pin: Option<Vec<usize>>,
}

impl FarmBuilder {
    /// Number of workers (default: the available cores).
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = Some(workers);
        self
    }

    /// The dispatch policy as a spec (`rr`, `arrs:chunk=300`, `on-demand`,
    /// ...; default `rr`).
    pub fn policy(mut self, spec: &str) -> Self {
        self.policy = Some(spec.to_string());
        self
    }

    /// A policy object, e.g. one built from a user registry.
    pub fn dispatch(mut self, dispatch: Box<dyn Dispatch>) -> Self {
        self.dispatch = Some(dispatch);
        self
    }

    /// Bounds every input queue at `capacity` items (default unbounded,
    /// as in the paper; `on-demand` sets its own).
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = Some(capacity);
        self
    }

    /// Bounds every worker's output queue to the collector (default: the
    /// input capacity given to [`Self::capacity`], else unbounded).
    pub fn output_capacity(mut self, capacity: usize) -> Self {
        self.output_capacity = Some(capacity);
        self
    }

    /// How waiting threads wait (default: spin [`DEFAULT_FARM_SPINS`], park).
    pub fn wait_policy(mut self, wait: WaitPolicy) -> Self {
        self.wait = Some(wait);
        self
    }

    /// Pins worker `w` to core `cores[w % cores.len()]` (e.g. `[0, 0, 1]`
    /// puts two of three workers on core 0). The emitter is not pinned.
    pub fn pin(mut self, cores: Vec<usize>) -> Self {
        self.pin = Some(cores);
        self
    }

    /// Checks every choice and builds the farm (no thread starts yet).
    pub fn build(self) -> Result<Farm, FarmError> {
        let workers = self
            .workers
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        if workers == 0 {
            return Err(FarmError::ZeroWorkers);
        }
        if self.capacity == Some(0) || self.output_capacity == Some(0) {
            return Err(FarmError::ZeroCapacity);
        }
        let dispatch = match (self.dispatch, self.policy) {
            (Some(d), _) => d,
            (None, Some(spec)) => policy::parse(&spec)?,
            (None, None) => Box::new(policy::RoundRobin::new()),
        };
        let pin = match self.pin {
            None => None,
            Some(cores) => {
                let ids = core_affinity::get_core_ids().unwrap_or_default();
                if let Some(&core) = cores.iter().find(|&&c| c >= ids.len()) {
                    return Err(FarmError::BadPin {
                        core,
                        cores: ids.len(),
                    });
                }
                (!cores.is_empty()).then(|| cores.iter().map(|&c| ids[c]).collect())
            }
        };
        let mut farm = Farm {
            workers,
            capacity: self.capacity,
            output_capacity: self.output_capacity.or(self.capacity),
            dispatch,
            spins: self
                .wait
                .unwrap_or(WaitPolicy::Spins(DEFAULT_FARM_SPINS))
                .spins(),
            pin,
        };
        // Validates the policy against this farm now rather than at run.
        let config = FarmConfig::new(workers, farm.input_capacity())?;
        farm.dispatch.start(&config)?;
        Ok(farm)
    }
}

/// A farm: its workers start with each run and end with it.
#[derive(Debug)]
pub struct Farm {
    workers: usize,
    capacity: Option<usize>,
    output_capacity: Option<usize>,
    dispatch: Box<dyn Dispatch>,
    spins: u32,
    pin: Option<Vec<core_affinity::CoreId>>,
}

/// What travels to a worker.
enum Msg<T> {
    Item(T),
    /// ARRS's "fake task" of a block.
    Marker(u64),
}

/// Per-worker state the emitter reads.
struct Slot {
    signal: Arc<Signal>,
    /// The last marker block this worker dequeued.
    marker_seen: AtomicU64,
    /// Items it ran, stored when it exits.
    processed: AtomicU64,
}

struct Shared {
    master: Arc<Signal>,
    /// The highest marker block any worker dequeued.
    reached: AtomicU64,
    abort: AtomicBool,
    finished: AtomicUsize,
    panic: std::sync::Mutex<Option<Box<dyn Any + Send>>>,
    slots: Vec<CachePadded<Slot>>,
}

impl Shared {
    fn fail(&self, payload: Box<dyn Any + Send>) {
        self.panic
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(payload);
        self.abort();
    }

    fn abort(&self) {
        self.abort.store(true, Ordering::Release);
        self.master.notify();
        for slot in &self.slots {
            slot.signal.notify();
        }
    }
}

/// Sets `abort` if the emitter unwinds (a panicking source or collector),
/// so that workers stop instead of draining their queues.
struct AbortOnUnwind<'a>(&'a Shared);

impl Drop for AbortOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.abort();
        }
    }
}

/// The policy's window on the input queues.
struct View<'a, T, I> {
    inputs: &'a [Producer<Msg<T>>],
    reached: &'a AtomicU64,
    source: &'a I,
    pool: usize,
    feedback: bool,
}

impl<T, I: Iterator> QueueView for View<'_, T, I> {
    #[inline]
    fn workers(&self) -> usize {
        self.inputs.len()
    }
    #[inline]
    fn level(&self, worker: usize) -> usize {
        self.inputs[worker].len()
    }
    #[inline]
    fn has_room(&self, worker: usize) -> bool {
        self.inputs[worker].has_room()
    }
    #[inline]
    fn marker_reached(&self) -> u64 {
        // Acquire: pairs with the worker's fetch_max, which follows its
        // store of `marker_seen`.
        self.reached.load(Ordering::Acquire)
    }
    fn ready(&self) -> Option<usize> {
        let known = self.pool + 1;
        match self.source.size_hint() {
            (0, Some(0)) => Some(known),
            (0, _) if !self.feedback => None,
            (lower, _) => Some(known + lower),
        }
    }
}

impl Farm {
    /// A builder.
    pub fn builder() -> FarmBuilder {
        FarmBuilder::default()
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// The policy's spec.
    pub fn policy(&self) -> keel_policy::Spec {
        self.dispatch.spec()
    }

    /// Capacity of the input queues (`None` = unbounded).
    pub fn input_capacity(&self) -> Option<usize> {
        self.dispatch.capacity().or(self.capacity)
    }

    /// Runs `work` on every item of `items`, no collector. Returns when
    /// every item has run; a panic in `work` is resumed here.
    pub fn run<I, F>(&mut self, items: I, work: F) -> Result<FarmReport, FarmError>
    where
        I: IntoIterator,
        I::Item: Send,
        F: Fn(Worker, I::Item) + Sync,
    {
        self.execute(
            items.into_iter(),
            &work,
            None::<fn((), &mut Feedback<I::Item>)>,
            false,
        )
    }

    /// Runs `work` on every item and hands each result to `collect` on the
    /// calling thread, in the order results arrive.
    pub fn run_collect<I, R, F, C>(
        &mut self,
        items: I,
        work: F,
        mut collect: C,
    ) -> Result<FarmReport, FarmError>
    where
        I: IntoIterator,
        I::Item: Send,
        R: Send,
        F: Fn(Worker, I::Item) -> R + Sync,
        C: FnMut(R),
    {
        let collect = |r: R, _: &mut Feedback<I::Item>| collect(r);
        self.execute(items.into_iter(), &work, Some(collect), false)
    }

    /// A farm with feedback: `collect` gets each result and may send new
    /// items back to the emitter ([`Feedback::send`]). The run ends when
    /// the collector calls [`Feedback::stop`] (after the results in flight
    /// arrive), or when the source and the pool are empty and every item
    /// dispatched has come back.
    pub fn run_feedback<I, R, F, C>(
        &mut self,
        items: I,
        work: F,
        collect: C,
    ) -> Result<FarmReport, FarmError>
    where
        I: IntoIterator,
        I::Item: Send,
        R: Send,
        F: Fn(Worker, I::Item) -> R + Sync,
        C: FnMut(R, &mut Feedback<I::Item>),
    {
        self.execute(items.into_iter(), &work, Some(collect), true)
    }

    fn execute<T, R, I, F, C>(
        &mut self,
        source: I,
        work: &F,
        mut collect: Option<C>,
        feedback: bool,
    ) -> Result<FarmReport, FarmError>
    where
        T: Send,
        R: Send,
        I: Iterator<Item = T>,
        F: Fn(Worker, T) -> R + Sync,
        C: FnMut(R, &mut Feedback<T>),
    {
        let start = Instant::now();
        let p = self.workers;
        let capacity = self.input_capacity();
        self.dispatch.start(&FarmConfig::new(p, capacity)?)?;
        let shared = Shared {
            master: Arc::new(Signal::new()),
            reached: AtomicU64::new(0),
            abort: AtomicBool::new(false),
            finished: AtomicUsize::new(0),
            panic: std::sync::Mutex::new(None),
            slots: (0..p)
                .map(|_| {
                    CachePadded::new(Slot {
                        signal: Arc::new(Signal::new()),
                        marker_seen: AtomicU64::new(0),
                        processed: AtomicU64::new(0),
                    })
                })
                .collect(),
        };
        let mut inputs = Vec::with_capacity(p);
        let mut worker_ends = Vec::with_capacity(p);
        let mut outputs = Vec::new();
        for slot in &shared.slots {
            let (tx, rx) =
                spsc::channel::<Msg<T>>(capacity, slot.signal.clone(), shared.master.clone());
            inputs.push(tx);
            let out = collect.is_some().then(|| {
                let (otx, orx) = spsc::channel::<R>(
                    self.output_capacity,
                    shared.master.clone(),
                    slot.signal.clone(),
                );
                outputs.push(orx);
                otx
            });
            worker_ends.push((rx, out));
        }

        let mut report = FarmReport::default();
        let spins = self.spins;
        let dispatch = &mut self.dispatch;
        let pin = &self.pin;
        let spawned: Result<(), FarmError> = std::thread::scope(|scope| {
            for (index, (rx, out)) in worker_ends.into_iter().enumerate() {
                let me = Worker { index, workers: p };
                let shared = &shared;
                let core = pin.as_ref().map(|cores| cores[index % cores.len()]);
                let spawned = std::thread::Builder::new()
                    .name(format!("keel-farm-{index}"))
                    .spawn_scoped(scope, move || {
                        if let Some(core) = core {
                            // Best effort, as the pool's pinning.
                            core_affinity::set_for_current(core);
                        }
                        worker_main(me, rx, out, work, shared, spins)
                    });
                if let Err(e) = spawned {
                    shared.abort();
                    return Err(FarmError::Spawn(e.to_string()));
                }
            }
            let _guard = AbortOnUnwind(&shared);
            emit(
                &mut Emitter {
                    shared: &shared,
                    dispatch: dispatch.as_mut(),
                    inputs: &mut inputs,
                    outputs: &mut outputs,
                    spins,
                    feedback,
                    report: &mut report,
                },
                source,
                collect.as_mut(),
            );
            // End every queue now, so that workers still waiting leave.
            drop(std::mem::take(&mut inputs));
            drop(std::mem::take(&mut outputs));
            Ok(())
        });
        spawned?;
        let payload = shared
            .panic
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(payload) = payload {
            panic::resume_unwind(payload);
        }
        report.per_worker = shared
            .slots
            .iter()
            .map(|s| s.processed.load(Ordering::Relaxed))
            .collect();
        report.seconds = start.elapsed().as_secs_f64();
        Ok(report)
    }
}

/// The emitter's (and collector's) state for one run.
struct Emitter<'a, T, R> {
    shared: &'a Shared,
    dispatch: &'a mut dyn Dispatch,
    inputs: &'a mut Vec<Producer<Msg<T>>>,
    outputs: &'a mut Vec<Consumer<R>>,
    spins: u32,
    feedback: bool,
    report: &'a mut FarmReport,
}

/// The calling thread's loop: collect, dispatch, end the stream, wait.
fn emit<T, R, I, C>(e: &mut Emitter<'_, T, R>, source: I, mut collect: Option<&mut C>)
where
    I: Iterator<Item = T>,
    C: FnMut(R, &mut Feedback<T>),
{
    let shared = e.shared;
    let p = e.inputs.len();
    let mut source = source.fuse();
    let mut source_done = false;
    let mut pool: VecDeque<T> = VecDeque::new();
    let mut pending: Option<T> = None;
    let mut stop = false;
    let mut closed = false;
    let mut marker_sent = vec![0u64; p];
    // When the current marker wait began, and how long recent ones took.
    let mut marker_wait: Option<Instant> = None;
    let mut recent_marker_wait = MARKER_SPIN * 2;
    loop {
        let key = shared.master.key();
        if shared.abort.load(Ordering::Acquire) {
            return;
        }
        let mut progress = false;

        // Collect what the workers have finished.
        if let Some(collect) = collect.as_deref_mut() {
            for out in e.outputs.iter_mut() {
                for _ in 0..COLLECT_BATCH {
                    match out.pop() {
                        Pop::Item(r) => {
                            e.report.collected += 1;
                            progress = true;
                            let mut fb = Feedback {
                                pool: &mut pool,
                                stop: &mut stop,
                            };
                            collect(r, &mut fb);
                        }
                        Pop::Empty | Pop::Closed => break,
                    }
                }
            }
        }

        // Dispatch.
        if !closed && !stop {
            for _ in 0..DISPATCH_BATCH {
                let item = match pending.take().or_else(|| pool.pop_front()) {
                    Some(item) => item,
                    None => match source.next() {
                        Some(item) => item,
                        None => {
                            source_done = true;
                            break;
                        }
                    },
                };
                let view = View {
                    inputs: e.inputs,
                    reached: &shared.reached,
                    source: &source,
                    pool: pool.len(),
                    feedback: e.feedback,
                };
                let decision = e.dispatch.next(&view);
                let (worker, block) = match decision {
                    Decision::Send(w) => (w, None),
                    Decision::SendAndMark { worker, block } => (worker, Some(block)),
                    Decision::WaitForMarker(_) => {
                        marker_wait.get_or_insert_with(Instant::now);
                        pending = Some(item);
                        break;
                    }
                    Decision::WaitForRoom => {
                        pending = Some(item);
                        break;
                    }
                };
                if let Some(since) = marker_wait.take() {
                    recent_marker_wait = (recent_marker_wait + since.elapsed()) / 2;
                }
                // Deferred: one notify per worker per batch, after the loop.
                if let Err(err) = e.inputs[worker].push_deferred(Msg::Item(item)) {
                    // Full cannot happen (the policy saw room and only we
                    // push); Disconnected means the worker died: abort is
                    // on its way.
                    if let Msg::Item(item) = err.into_inner() {
                        pending = Some(item);
                    }
                    break;
                }
                e.report.items += 1;
                progress = true;
                if let Some(block) = block {
                    e.report.blocks += 1;
                    for (w, input) in e.inputs.iter_mut().enumerate() {
                        // Only to workers holding no earlier marker, so at
                        // most one marker sits in any queue.
                        let seen = shared.slots[w].marker_seen.load(Ordering::Acquire);
                        if marker_sent[w] == seen {
                            let _ = input.push_past_capacity_deferred(Msg::Marker(block));
                            marker_sent[w] = block;
                        }
                        // At once, not at the batch's end: the marker goes
                        // out NEAR_END items early so that a worker reaches
                        // it while the emitter sends the rest of the block.
                        input.flush();
                    }
                }
            }
            for input in e.inputs.iter_mut() {
                input.flush();
            }
        }

        // End of stream.
        if !closed {
            let quiet = !e.feedback || e.report.items == e.report.collected;
            let drained = source_done && pending.is_none() && pool.is_empty();
            if stop || (drained && quiet) {
                for input in e.inputs.iter() {
                    input.close();
                }
                closed = true;
                progress = true;
            }
        }
        if closed {
            if collect.is_some() {
                if e.outputs.iter().all(drained_and_closed) {
                    return;
                }
            } else if shared.finished.load(Ordering::Acquire) == p {
                return;
            }
        }
        if !progress {
            if marker_wait.is_some() && recent_marker_wait < MARKER_SPIN {
                // Adaptive spinning (like an adaptive mutex): the marker
                // came quickly last time, so look for it a little longer
                // before paying for a park and an unpark.
                let deadline = Instant::now() + 2 * recent_marker_wait;
                let mut step = 0;
                while shared.master.key() == key && Instant::now() < deadline {
                    sync::pause(step);
                    step += 1;
                }
                if shared.master.key() != key {
                    continue;
                }
            }
            e.report.emitter_waits += 1;
            shared.master.wait(key, e.spins);
        }
    }
}

/// Whether a worker has closed its output and everything in it was taken.
fn drained_and_closed<R>(out: &Consumer<R>) -> bool {
    out.is_closed() && out.is_empty()
}

/// A worker's loop: pop, run, pass the result on; markers are reported;
/// an empty queue is waited for; a closed one ends the worker.
fn worker_main<T, R, F>(
    me: Worker,
    mut input: Consumer<Msg<T>>,
    mut output: Option<Producer<R>>,
    work: &F,
    shared: &Shared,
    spins: u32,
) where
    F: Fn(Worker, T) -> R,
{
    let slot = &shared.slots[me.index];
    let mut processed = 0u64;
    let mut unnotified = 0u32;
    let result = panic::catch_unwind(AssertUnwindSafe(|| loop {
        // The signal is read only when the queue looks empty, so a busy
        // worker touches nothing the emitter writes but the queue itself.
        let popped = match input.pop() {
            Pop::Empty => {
                if shared.abort.load(Ordering::Acquire) {
                    return;
                }
                if let Some(out) = output.as_mut() {
                    out.flush();
                    unnotified = 0;
                }
                let key = slot.signal.key();
                match input.pop() {
                    Pop::Empty => {
                        slot.signal.wait(key, spins);
                        continue;
                    }
                    other => other,
                }
            }
            other => other,
        };
        match popped {
            Pop::Item(Msg::Item(item)) => {
                if shared.abort.load(Ordering::Relaxed) {
                    return;
                }
                let mut result = work(me, item);
                processed += 1;
                let Some(out) = output.as_mut() else {
                    continue;
                };
                loop {
                    match out.push_deferred(result) {
                        Ok(()) => {
                            unnotified += 1;
                            if unnotified == RESULT_NOTIFY_BATCH {
                                out.flush();
                                unnotified = 0;
                            }
                            break;
                        }
                        Err(PushError::Full(back)) => {
                            if shared.abort.load(Ordering::Acquire) {
                                return;
                            }
                            // The collector must hear of what is queued
                            // before we wait for it to make room.
                            out.flush();
                            unnotified = 0;
                            // Key, re-check, wait: a pop after the key
                            // wakes us.
                            let key = slot.signal.key();
                            match out.push(back) {
                                Ok(()) => break,
                                Err(PushError::Full(back)) => {
                                    result = back;
                                    slot.signal.wait(key, spins);
                                }
                                Err(PushError::Disconnected(_)) => return,
                            }
                        }
                        Err(PushError::Disconnected(_)) => return,
                    }
                }
            }
            Pop::Item(Msg::Marker(block)) => {
                // Release: the emitter's Acquire load of `reached` (or of
                // this word) sees that this queue holds no marker now.
                slot.marker_seen.store(block, Ordering::Release);
                shared.reached.fetch_max(block, Ordering::AcqRel);
                shared.master.notify();
            }
            Pop::Empty => unreachable!("handled above"),
            Pop::Closed => return,
        }
    }));
    slot.processed.store(processed, Ordering::Relaxed);
    if let Err(payload) = result {
        shared.fail(payload);
    }
    // Close our output before we count ourselves finished.
    drop(output);
    shared.finished.fetch_add(1, Ordering::AcqRel);
    shared.master.notify();
}
