//! The emitter and collector loop on the calling thread, and the policy's
//! [`QueueView`] over the input queues.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::shared::{Msg, Shared};
use super::spsc::{Consumer, Pop, Producer};
use super::sync;
use super::{CostHint, Decision, Dispatch, FarmReport, Feedback, QueueView};
use super::{COLLECT_BATCH, DISPATCH_BATCH, MARKER_SPIN};
use crate::trace::{Span, What};

/// The policy's window on the input queues.
struct View<'a, T, I> {
    inputs: &'a [Producer<Msg<T>>],
    reached: &'a AtomicU64,
    source: &'a I,
    pool: usize,
    feedback: bool,
    /// Speeds (told, or measured at the start of this dispatch pass) and
    /// finished items, when the policy reads them.
    speeds: &'a [Option<f64>],
    done: &'a [u64],
    cost: Option<f64>,
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
    fn speed(&self, worker: usize) -> Option<f64> {
        self.speeds.get(worker).copied().flatten()
    }
    fn done(&self, worker: usize) -> Option<u64> {
        self.done.get(worker).copied()
    }
    fn cost_hint(&self) -> Option<f64> {
        self.cost
    }
}

/// The emitter's (and collector's) state for one run.
pub(super) struct Emitter<'a, T, R> {
    pub(super) shared: &'a Shared,
    pub(super) dispatch: &'a mut dyn Dispatch,
    pub(super) inputs: &'a mut Vec<Producer<Msg<T>>>,
    pub(super) outputs: &'a mut Vec<Consumer<R>>,
    pub(super) spins: u32,
    pub(super) feedback: bool,
    /// Whether the policy reads speeds (the workers then publish them).
    pub(super) measure: bool,
    /// Speeds the user told, in place of the measured ones.
    pub(super) told: Option<&'a [f64]>,
    /// The user's cost hint per item.
    pub(super) hint: Option<CostHint<'a, T>>,
    pub(super) report: &'a mut FarmReport,
    /// The emitter's waits, only when `KEEL_TRACE` is on.
    pub(super) waits: Option<Vec<Span>>,
}

/// The calling thread's loop: collect, dispatch, end the stream, wait.
pub(super) fn emit<T, R, I, C>(e: &mut Emitter<'_, T, R>, source: I, mut collect: Option<&mut C>)
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
    let mut speeds: Vec<Option<f64>> = Vec::new();
    let mut done: Vec<u64> = Vec::new();
    if e.measure {
        speeds = vec![None; p];
        done = vec![0; p];
    }
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
            if e.measure {
                // Once per pass, not per item: each read is a line the
                // worker writes after every item.
                snapshot(shared, e.told, &mut speeds, &mut done);
            }
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
                    speeds: &speeds,
                    done: &done,
                    cost: e.hint.map(|h| h(&item)),
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
            match &mut e.waits {
                None => shared.master.wait(key, e.spins),
                Some(waits) => {
                    let start = Instant::now();
                    shared.master.wait(key, e.spins);
                    waits.push(Span {
                        start,
                        end: Instant::now(),
                        what: What::EmitterWait {},
                    });
                }
            }
        }
    }
}

/// Each worker's speed (told, else work done over busy time, `None`
/// before its first measured item) and finished items.
fn snapshot(shared: &Shared, told: Option<&[f64]>, speeds: &mut [Option<f64>], done: &mut [u64]) {
    for (w, slot) in shared.slots.iter().enumerate() {
        done[w] = slot.done.load(Ordering::Relaxed);
        speeds[w] = match told {
            Some(told) => told.get(w).copied(),
            None => {
                let busy = slot.busy_ns.load(Ordering::Relaxed);
                let work = f64::from_bits(slot.work_bits.load(Ordering::Relaxed));
                (busy > 0).then(|| work / (busy as f64 * 1e-9))
            }
        };
    }
}

/// Whether a worker has closed its output and everything in it was taken.
fn drained_and_closed<R>(out: &Consumer<R>) -> bool {
    out.is_closed() && out.is_empty()
}
