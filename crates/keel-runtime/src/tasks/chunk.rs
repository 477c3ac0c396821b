//! A potential task's descriptor and the chunks that point at it (the
//! paper's "common task descriptor" and range messages, §4.2). The
//! descriptor lives on the owner's stack; the protocol that keeps it alive
//! while chunks point at it is in `README.md` (Completion).

use std::any::Any;
use std::ops::Range;
use std::panic::{self, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Whose potential task this is, for the trace: the object's step and id
/// (0 and 0 outside `keel::objects`) and the owner's worker index.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Tag {
    pub(super) step: u64,
    pub(super) object: u64,
    pub(super) owner: usize,
}

/// One potential task, shared by its exposed chunks.
pub(super) struct TaskDesc<'a> {
    body: &'a (dyn Fn(usize) + Sync),
    tag: Tag,
    /// Exposed chunks not yet finished; the owner leaves when it is 0.
    remaining: AtomicUsize,
    /// Exposed chunks run by thieves.
    stolen: AtomicUsize,
    /// Nanoseconds thieves spent running them.
    stolen_ns: AtomicU64,
    /// A chunk panicked: the chunks not yet started are skipped.
    cancelled: AtomicBool,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

impl<'a> TaskDesc<'a> {
    pub(super) fn new(body: &'a (dyn Fn(usize) + Sync), exposed: usize, tag: Tag) -> Self {
        TaskDesc {
            body,
            tag,
            remaining: AtomicUsize::new(exposed),
            stolen: AtomicUsize::new(0),
            stolen_ns: AtomicU64::new(0),
            cancelled: AtomicBool::new(false),
            panic: Mutex::new(None),
        }
    }

    /// Counts `more` chunks as exposed; called by the owner before it
    /// pushes them. Relaxed: the push that follows is what makes a chunk
    /// reachable, and crossbeam orders it before the thief's steal, so the
    /// thief's decrement comes after this increment.
    pub(super) fn expose_more(&self, more: usize) {
        self.remaining.fetch_add(more, Ordering::Relaxed);
    }

    /// Whether every exposed chunk finished. Acquire: pairs with each
    /// chunk's Release decrement, so the chunks' writes (their effects, the
    /// `stolen` count, a panic payload) are visible to the owner after.
    pub(super) fn done(&self) -> bool {
        self.remaining.load(Ordering::Acquire) == 0
    }

    /// Chunks thieves ran; exact once [`TaskDesc::done`] returned true.
    pub(super) fn stolen(&self) -> usize {
        self.stolen.load(Ordering::Relaxed)
    }

    /// Seconds thieves spent on its chunks; exact once [`TaskDesc::done`]
    /// returned true.
    pub(super) fn stolen_s(&self) -> f64 {
        self.stolen_ns.load(Ordering::Relaxed) as f64 * 1e-9
    }

    /// Keeps the first panic and cancels the chunks not yet started.
    pub(super) fn fail(&self, payload: Box<dyn Any + Send>) {
        self.panic
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(payload);
        // Relaxed: a hint to skip work; the payload is published by the
        // chunk's Release decrement (or is the owner's own).
        self.cancelled.store(true, Ordering::Relaxed);
    }

    /// Resumes the first panic of any chunk on the owner's thread.
    pub(super) fn resume_panic(&self) {
        let payload = self.panic.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(payload) = payload {
            panic::resume_unwind(payload);
        }
    }

    fn run_range(&self, range: Range<usize>) {
        if self.cancelled.load(Ordering::Relaxed) {
            return;
        }
        let body = self.body;
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| {
            for i in range {
                body(i);
            }
        })) {
            self.fail(payload);
        }
    }
}

/// An exposed chunk: a range of a task's iterations and a pointer to the task.
pub(super) struct Chunk {
    task: NonNull<TaskDesc<'static>>,
    range: Range<usize>,
}

// SAFETY: the pointee is `Sync` (a `Sync` closure, atomics, a mutex), so
// using it from the thread that steals the chunk is sound; it outlives the
// chunk by the protocol in README.md (Completion).
unsafe impl Send for Chunk {}

impl Chunk {
    /// # Safety
    /// `task` must stay alive until this chunk has been run (by
    /// [`Chunk::run`] or [`Chunk::run_stolen`]) and its counter decremented,
    /// i.e. until `task.done()` is observed true.
    pub(super) unsafe fn new(task: &TaskDesc<'_>, range: Range<usize>) -> Self {
        let ptr = NonNull::from(task).cast::<TaskDesc<'static>>();
        Chunk { task: ptr, range }
    }

    /// The chunk's iterations.
    pub(super) fn range(&self) -> Range<usize> {
        self.range.clone()
    }

    /// Runs the chunk on its owner.
    ///
    /// # Safety
    /// The chunk's task is alive (the contract of [`Chunk::new`]).
    pub(super) unsafe fn run(self) {
        // SAFETY: the caller guarantees the task is alive.
        let task = unsafe { self.task.as_ref() };
        task.run_range(self.range);
        // Release: publishes this chunk's effects to the owner's Acquire in
        // `done`. The last access to `task`: after it the owner may return.
        task.remaining.fetch_sub(1, Ordering::Release);
    }

    /// Runs the chunk on a thief, counting it as stolen; returns its task's
    /// tag, read while the task is still alive.
    ///
    /// # Safety
    /// The chunk's task is alive (the contract of [`Chunk::new`]).
    pub(super) unsafe fn run_stolen(self) -> Tag {
        // SAFETY: the caller guarantees the task is alive.
        let task = unsafe { self.task.as_ref() };
        let tag = task.tag;
        let began = Instant::now();
        task.run_range(self.range);
        let ns = u64::try_from(began.elapsed().as_nanos()).unwrap_or(u64::MAX);
        // Relaxed: ordered before the owner's read by the Release below.
        task.stolen.fetch_add(1, Ordering::Relaxed);
        task.stolen_ns.fetch_add(ns, Ordering::Relaxed);
        // Release, and the last access to `task` (see `run`).
        task.remaining.fetch_sub(1, Ordering::Release);
        tag
    }
}
