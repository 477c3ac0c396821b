//! State the emitter and the workers share for one run: the messages on
//! the input queues, the per-worker slots, abort and panic hand-off.

use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;

use super::sync::Arc;
use super::Signal;

/// What travels to a worker.
pub(super) enum Msg<T> {
    Item(T),
    /// ARRS's "fake task" of a block.
    Marker(u64),
}

/// Per-worker state the emitter reads.
pub(super) struct Slot {
    pub(super) signal: Arc<Signal>,
    /// The last marker block this worker dequeued.
    pub(super) marker_seen: AtomicU64,
    /// Items it ran, stored when it exits.
    pub(super) processed: AtomicU64,
    /// Only under a policy that reads speeds, stored after every item:
    /// items finished, nanoseconds spent running them, and the work they
    /// were (`f64` bits: the sum of their valid cost hints, or one per item
    /// without hints).
    pub(super) done: AtomicU64,
    pub(super) busy_ns: AtomicU64,
    pub(super) work_bits: AtomicU64,
}

pub(super) struct Shared {
    pub(super) master: Arc<Signal>,
    /// The highest marker block any worker dequeued.
    pub(super) reached: AtomicU64,
    pub(super) abort: AtomicBool,
    pub(super) finished: AtomicUsize,
    pub(super) panic: std::sync::Mutex<Option<Box<dyn Any + Send>>>,
    pub(super) slots: Vec<CachePadded<Slot>>,
}

impl Shared {
    pub(super) fn fail(&self, payload: Box<dyn Any + Send>) {
        self.panic
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(payload);
        self.abort();
    }

    pub(super) fn abort(&self) {
        self.abort.store(true, Ordering::Release);
        self.master.notify();
        for slot in &self.slots {
            slot.signal.notify();
        }
    }
}

/// Sets `abort` if the emitter unwinds (a panicking source or collector),
/// so that workers stop instead of draining their queues.
pub(super) struct AbortOnUnwind<'a>(pub(super) &'a Shared);

impl Drop for AbortOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.abort();
        }
    }
}
