//! Potential tasks: per-worker work-stealing deques for the parallel loops
//! objects run inside their steps
//! (Charm++ + OpenMP paper, §4.1–4.3).
//!
//! An object's step calls [`TaskWorker::for_each`] over its own work. The
//! loop is cut into chunks; `keel_policy::expose` decides how many of them
//! thieves may see (the paper's "history + when idle" scheme, by default),
//! and only those go on the calling worker's deque (crossbeam-deque, a
//! Chase–Lev deque as in the paper). The owner runs the hidden chunks —
//! exposing more of them between two if a worker has gone idle meanwhile
//! and its deque is empty (late exposure) — then pops its exposed ones back
//! (LIFO), while idle workers steal from the other end of random victims'
//! deques. Each loop has one descriptor with an
//! atomic counter of exposed chunks still to finish, so completion needs no
//! barrier (§4.1): the owner waits for the counter, stealing meanwhile.
//! The protocol and its orderings are in `README.md` beside this file.
//!
//! A [`Tasks`] is the shared half (stealers, the idle counter, each
//! worker's history); a [`TaskWorker`] is one participant's half, alive
//! while that participant runs a region. `keel::objects` builds both.
//!
//! ```
//! use keel::tasks::Tasks;
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! let pool = keel::ThreadPool::builder().threads(2).build().unwrap();
//! let tasks = Tasks::new(2, "all").unwrap();
//! let sum = AtomicUsize::new(0);
//! let running = AtomicUsize::new(2);
//! pool.region(|team| {
//!     let worker = tasks.worker(team.index);
//!     if team.index == 0 {
//!         worker.for_each(0..1000, |i| { sum.fetch_add(i, Ordering::Relaxed); });
//!     }
//!     running.fetch_sub(1, Ordering::AcqRel);
//!     worker.steal_until(|| running.load(Ordering::Acquire) == 0);
//! });
//! assert_eq!(sum.into_inner(), 999 * 1000 / 2);
//! ```

mod chunk;

use std::cell::{Cell, RefCell};
use std::ops::Range;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use crossbeam_deque::{Steal, Stealer, Worker};
use crossbeam_utils::CachePadded;
use keel_policy::expose::{Expose, ExposeState};
use keel_policy::PolicyError;
use serde::Serialize;

use chunk::{Chunk, Tag, TaskDesc};

use crate::trace::{self, Span, Track, What};

/// Chunks per worker a potential task is cut into unless the call says
/// otherwise: a step's tail imbalance is up to one chunk, so enough that
/// it stays small (at 4, a 2 ms task on two workers left up to 250 µs
/// tails, 1–2 % of the Lassen-like steps), few enough that a chunk is worth
/// a steal (CkLoop cuts into at most 64).
pub const DEFAULT_CHUNKS_PER_WORKER: usize = 8;

/// Upper bound on the chunks of one potential task (CkLoop's `MAX_CHUNKS`).
pub const MAX_CHUNKS: usize = 64;

/// An idle worker that found nothing to steal yields its core every this
/// many failed rounds, so that stealing stays harmless when threads
/// outnumber cores.
const YIELD_EVERY: u32 = 64;

/// What one potential task did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TaskSummary {
    /// Chunks the loop was cut into.
    pub chunks: usize,
    /// Chunks put on the deque where thieves could see them.
    pub exposed: usize,
    /// Exposed chunks that thieves ran.
    pub stolen: usize,
}

/// One worker's counters, accumulated until [`Tasks::take_stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct WorkerStats {
    /// Potential tasks this worker owned.
    pub tasks: usize,
    /// Their chunks.
    pub chunks: usize,
    /// Of which exposed.
    pub exposed: usize,
    /// Of which other workers stole.
    pub stolen_from: usize,
    /// Chunks this worker stole from others and ran.
    pub steals: usize,
    /// Seconds spent running stolen chunks.
    pub helped_s: f64,
    /// Seconds an owner spent waiting for thieves to finish its chunks
    /// (stealing meanwhile counts here and in `helped_s`).
    pub waited_s: f64,
    /// Seconds thieves spent running this worker's chunks.
    pub lent_s: f64,
}

impl WorkerStats {
    /// The counts accumulated since the snapshot `earlier`.
    pub fn since(&self, earlier: &WorkerStats) -> WorkerStats {
        WorkerStats {
            tasks: self.tasks - earlier.tasks,
            chunks: self.chunks - earlier.chunks,
            exposed: self.exposed - earlier.exposed,
            stolen_from: self.stolen_from - earlier.stolen_from,
            steals: self.steals - earlier.steals,
            helped_s: self.helped_s - earlier.helped_s,
            waited_s: self.waited_s - earlier.waited_s,
            lent_s: self.lent_s - earlier.lent_s,
        }
    }

    fn add(&mut self, o: &WorkerStats) {
        self.tasks += o.tasks;
        self.chunks += o.chunks;
        self.exposed += o.exposed;
        self.stolen_from += o.stolen_from;
        self.steals += o.steals;
        self.helped_s += o.helped_s;
        self.waited_s += o.waited_s;
        self.lent_s += o.lent_s;
    }
}

/// Why a [`Tasks`] could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TasksError {
    /// Zero workers.
    #[error("potential tasks need at least one worker")]
    NoWorkers,
    /// The exposure spec did not parse.
    #[error("invalid exposure policy: {0}")]
    Expose(#[from] PolicyError),
}

/// Per-worker state that persists across regions: the deque's owner end,
/// the exposure history and the counters.
struct Home {
    deque: Worker<Chunk>,
    history: ExposeState,
    rng: u64,
    stats: WorkerStats,
}

/// The shared half of potential-task scheduling for a team of workers.
pub struct Tasks {
    expose: Expose,
    stealers: Box<[Stealer<Chunk>]>,
    homes: Box<[CachePadded<Mutex<Home>>]>,
    /// Workers looking for work right now (the paper's idle counter).
    idle: CachePadded<AtomicUsize>,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks")
            .field("workers", &self.stealers.len())
            .field("expose", &self.expose.spec())
            .finish()
    }
}

impl Tasks {
    /// Deques for `workers` workers with the exposure policy `expose`
    /// (`none`, `all`, `idle`, `history`, `history-idle[:history=N,initial=R]`).
    pub fn new(workers: usize, expose: &str) -> Result<Self, TasksError> {
        Self::with_policy(workers, Expose::parse(expose)?)
    }

    /// As [`Tasks::new`] with a built policy.
    pub fn with_policy(workers: usize, expose: Expose) -> Result<Self, TasksError> {
        if workers == 0 {
            return Err(TasksError::NoWorkers);
        }
        let mut stealers = Vec::with_capacity(workers);
        let homes = (0..workers)
            .map(|w| {
                let deque = Worker::new_lifo();
                stealers.push(deque.stealer());
                CachePadded::new(Mutex::new(Home {
                    deque,
                    history: ExposeState::new(&expose),
                    // Distinct odd seeds: xorshift must not start at 0.
                    rng: 0x9E37_79B9_7F4A_7C15u64.wrapping_mul(w as u64 + 1) | 1,
                    stats: WorkerStats::default(),
                }))
            })
            .collect();
        Ok(Tasks {
            expose,
            stealers: stealers.into(),
            homes,
            idle: CachePadded::new(AtomicUsize::new(0)),
        })
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.stealers.len()
    }

    /// The exposure policy.
    pub fn expose(&self) -> &Expose {
        &self.expose
    }

    /// Workers idle right now.
    pub fn idle(&self) -> usize {
        self.idle.load(Ordering::Relaxed)
    }

    /// Participant `index`'s half, for the duration of a region. Exactly
    /// one participant should hold a given index at a time; a second
    /// `worker(index)` blocks until the first is dropped.
    ///
    /// # Panics
    /// If `index >= self.workers()`.
    pub fn worker(&self, index: usize) -> TaskWorker<'_> {
        let home = self.homes[index].lock().unwrap_or_else(|e| e.into_inner());
        debug_assert!(home.deque.is_empty(), "a task left chunks behind");
        TaskWorker {
            tasks: self,
            index,
            home: RefCell::new(home),
            idle_here: Cell::new(false),
            trace: trace::tracer().map(|_| RefCell::new(Vec::new())),
            tag: Cell::new(Tag {
                owner: index,
                ..Tag::default()
            }),
        }
    }

    /// Each worker's counters since the last call, which resets them.
    pub fn take_stats(&self) -> Vec<WorkerStats> {
        self.homes
            .iter()
            .map(|h| {
                let mut home = h.lock().unwrap_or_else(|e| e.into_inner());
                std::mem::take(&mut home.stats)
            })
            .collect()
    }

    /// Each worker's counters, without resetting them.
    pub fn stats(&self) -> Vec<WorkerStats> {
        self.homes
            .iter()
            .map(|h| h.lock().unwrap_or_else(|e| e.into_inner()).stats)
            .collect()
    }

    /// The sum of [`WorkerStats`] over workers, without resetting.
    pub fn totals(&self) -> WorkerStats {
        let mut t = WorkerStats::default();
        for h in self.homes.iter() {
            t.add(&h.lock().unwrap_or_else(|e| e.into_inner()).stats);
        }
        t
    }
}

/// One participant's half: runs its potential tasks and steals others'.
/// Not `Sync`, so a loop body cannot capture it and nest a potential task
/// inside a chunk.
pub struct TaskWorker<'t> {
    tasks: &'t Tasks,
    index: usize,
    home: RefCell<MutexGuard<'t, Home>>,
    idle_here: Cell<bool>,
    /// Chunks (and, under `keel::objects`, object steps) run here, only
    /// when `KEEL_TRACE` is on; written when the worker is dropped.
    trace: Option<RefCell<Vec<Span>>>,
    /// The step and object whose potential tasks run now, for the trace.
    tag: Cell<Tag>,
}

impl std::fmt::Debug for TaskWorker<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskWorker")
            .field("index", &self.index)
            .finish()
    }
}

impl Drop for TaskWorker<'_> {
    fn drop(&mut self) {
        self.set_idle(false);
        if let (Some(events), Some(tracer)) = (&self.trace, trace::tracer()) {
            tracer.write(Track::Pu(self.index), &events.borrow());
        }
    }
}

impl<'t> TaskWorker<'t> {
    /// This worker's index.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Whether this worker records trace events (`KEEL_TRACE` is on).
    pub(crate) fn tracing(&self) -> bool {
        self.trace.is_some()
    }

    /// Names the object step whose potential tasks come next, for the trace.
    pub(crate) fn trace_object(&self, step: usize, object: usize) {
        self.tag.set(Tag {
            step: step as u64,
            object: object as u64,
            owner: self.index,
        });
    }

    /// Records `what` from `start` to now, when tracing.
    pub(crate) fn trace_span(&self, start: Instant, what: What) {
        if let Some(events) = &self.trace {
            events.borrow_mut().push(Span {
                start,
                end: Instant::now(),
                what,
            });
        }
    }

    /// Records the chunk `range` of a task tagged `tag` as run from
    /// `start` to now.
    fn trace_chunk(&self, start: Instant, tag: Tag, range: Range<usize>, stolen: bool) {
        self.trace_span(
            start,
            What::Task {
                step: tag.step,
                object: tag.object,
                from: range.start as u64,
                to: range.end as u64,
                owner: tag.owner as u64,
                stolen,
            },
        );
    }

    /// This worker's counters so far (a snapshot: subtract two with
    /// [`WorkerStats::since`] to attribute work to what ran in between);
    /// the same counters as [`Tasks::stats`] gives for every worker.
    pub fn stats(&self) -> WorkerStats {
        self.home.borrow().stats
    }

    /// Runs `body(i)` for every `i` in `range` exactly once, as a potential
    /// task cut into the default number of chunks. Returns when every chunk
    /// has run, here or on a thief; a panic in any chunk is resumed here
    /// after all chunks finished or were cancelled.
    pub fn for_each(&self, range: Range<usize>, body: impl Fn(usize) + Sync) -> TaskSummary {
        let chunks = DEFAULT_CHUNKS_PER_WORKER * self.tasks.workers();
        self.for_each_with_chunks(range, chunks, body)
    }

    /// As [`TaskWorker::for_each`], cut into `chunks` chunks (clamped to
    /// `1..=min(len, MAX_CHUNKS)`): `with_` sets a parameter, as in rayon's
    /// `with_min_len`; the body still runs per index (a loop's
    /// `for_each_chunk` is the form whose body runs per chunk).
    pub fn for_each_with_chunks(
        &self,
        range: Range<usize>,
        chunks: usize,
        body: impl Fn(usize) + Sync,
    ) -> TaskSummary {
        let len = range.end.saturating_sub(range.start);
        if len == 0 {
            return TaskSummary::default();
        }
        let n = chunks.clamp(1, len.min(MAX_CHUNKS));
        let bounds = |c: usize| range.start + c * len / n;
        let policy = &self.tasks.expose;
        let workers = self.tasks.workers();
        let exposed = {
            let home = self.home.borrow();
            home.history.decide(policy, n, self.tasks.idle(), workers)
        };
        let late = policy.late && policy.scheme.has_idle_term() && workers > 1;
        let tracing = self.tracing();
        if exposed == 0 && !late {
            let start = tracing.then(Instant::now);
            for i in range.clone() {
                body(i);
            }
            if let Some(start) = start {
                self.trace_chunk(start, self.tag.get(), range.clone(), false);
            }
            self.finish(n, 0, 0);
            return TaskSummary {
                chunks: n,
                exposed: 0,
                stolen: 0,
            };
        }
        let body: &(dyn Fn(usize) + Sync) = &body;
        let desc = TaskDesc::new(body, exposed, self.tag.get());
        // The owner runs chunks 0..hidden itself; chunks hidden..n are on
        // the deque, pushed from the last down, so thieves (FIFO end) take
        // the far end first and the owner's pops (LIFO end) continue in
        // order. Late exposure moves `hidden` down.
        let mut hidden = n - exposed;
        let mut total_exposed = exposed;
        let expose = |from: usize, to: usize| {
            let home = self.home.borrow();
            for c in (from..to).rev() {
                // SAFETY: `desc` outlives every chunk: this function returns
                // only after `desc.remaining` is 0 (README: Completion).
                home.deque
                    .push(unsafe { Chunk::new(&desc, bounds(c)..bounds(c + 1)) });
            }
        };
        expose(hidden, n);
        let local = panic::catch_unwind(AssertUnwindSafe(|| {
            let mut c = 0;
            while c < hidden {
                let start = tracing.then(Instant::now);
                for i in bounds(c)..bounds(c + 1) {
                    body(i);
                }
                if let Some(start) = start {
                    self.trace_chunk(start, self.tag.get(), bounds(c)..bounds(c + 1), false);
                }
                c += 1;
                if !late || c == hidden {
                    continue;
                }
                let idle = self.tasks.idle();
                if idle == 0 {
                    continue;
                }
                let more = {
                    let home = self.home.borrow();
                    if !home.deque.is_empty() {
                        continue;
                    }
                    home.history.late(policy, hidden - c, idle, workers)
                };
                if more > 0 {
                    // Counted before they are visible, so that a thief's
                    // decrement never finds the counter short.
                    desc.expose_more(more);
                    expose(hidden - more, hidden);
                    hidden -= more;
                    total_exposed += more;
                }
            }
        }));
        if let Err(payload) = local {
            desc.fail(payload);
        }
        // Pop back what nobody stole (only this task's chunks are on the deque).
        loop {
            let chunk = self.home.borrow().deque.pop();
            match chunk {
                Some(chunk) => {
                    let start = tracing.then(|| (Instant::now(), chunk.range()));
                    // SAFETY: chunks on our deque belong to `desc`, alive here.
                    unsafe { chunk.run() };
                    if let Some((start, range)) = start {
                        self.trace_chunk(start, self.tag.get(), range, false);
                    }
                }
                None => break,
            }
        }
        // Wait for thieves, helping others meanwhile (no barrier: §4.1).
        if !desc.done() {
            let began = Instant::now();
            self.set_idle(true);
            let mut failed = 0u32;
            while !desc.done() {
                if self.steal_one() {
                    failed = 0;
                } else {
                    failed = backoff(failed);
                }
            }
            self.set_idle(false);
            self.home.borrow_mut().stats.waited_s += began.elapsed().as_secs_f64();
        }
        let stolen = desc.stolen();
        self.home.borrow_mut().stats.lent_s += desc.stolen_s();
        self.finish(n, total_exposed, stolen);
        desc.resume_panic();
        TaskSummary {
            chunks: n,
            exposed: total_exposed,
            stolen,
        }
    }

    fn finish(&self, chunks: usize, exposed: usize, stolen: usize) {
        let mut home = self.home.borrow_mut();
        home.history.record(stolen, chunks - stolen);
        let s = &mut home.stats;
        s.tasks += 1;
        s.chunks += chunks;
        s.exposed += exposed;
        s.stolen_from += stolen;
    }

    /// Marks this worker idle (counted by [`Tasks::idle`]) and steals chunks
    /// from random victims until `done()` holds. Returns the chunks stolen.
    pub fn steal_until(&self, done: impl Fn() -> bool) -> usize {
        self.set_idle(true);
        let mut stolen = 0;
        let mut failed = 0u32;
        while !done() {
            if self.steal_one() {
                stolen += 1;
                failed = 0;
            } else {
                failed = backoff(failed);
            }
        }
        self.set_idle(false);
        stolen
    }

    fn set_idle(&self, idle: bool) {
        if self.idle_here.replace(idle) != idle {
            // Relaxed: the counter is a hint read by the exposure policy;
            // nothing else is published through it.
            if idle {
                self.tasks.idle.fetch_add(1, Ordering::Relaxed);
            } else {
                self.tasks.idle.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// Tries every other worker once, starting at a random one; runs the
    /// first chunk it gets. Returns whether it ran one.
    fn steal_one(&self) -> bool {
        let workers = self.tasks.workers();
        if workers < 2 {
            return false;
        }
        let start = {
            let mut home = self.home.borrow_mut();
            let mut x = home.rng;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            home.rng = x;
            (x % workers as u64) as usize
        };
        for k in 0..workers {
            let victim = (start + k) % workers;
            if victim == self.index {
                continue;
            }
            let chunk = loop {
                match self.tasks.stealers[victim].steal() {
                    Steal::Success(chunk) => break Some(chunk),
                    Steal::Empty => break None,
                    Steal::Retry => continue,
                }
            };
            if let Some(chunk) = chunk {
                let began = Instant::now();
                let range = self.tracing().then(|| chunk.range());
                // SAFETY: a chunk on any deque belongs to a task whose owner
                // waits for its counter before leaving (README: Completion).
                let tag = unsafe { chunk.run_stolen() };
                if let Some(range) = range {
                    self.trace_chunk(began, tag, range, true);
                }
                let mut home = self.home.borrow_mut();
                home.stats.steals += 1;
                home.stats.helped_s += began.elapsed().as_secs_f64();
                return true;
            }
        }
        false
    }
}

/// Spin a little, then yield now and then; returns the new failure count.
fn backoff(failed: u32) -> u32 {
    std::hint::spin_loop();
    if failed % YIELD_EVERY == YIELD_EVERY - 1 {
        std::thread::yield_now();
    }
    failed.wrapping_add(1)
}

#[cfg(all(test, not(loom)))]
mod tests;
