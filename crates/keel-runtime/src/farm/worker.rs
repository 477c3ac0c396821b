//! A worker thread's loop.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::Ordering;

use super::shared::{Msg, Shared};
use super::spsc::{Consumer, Pop, Producer, PushError};
use super::{CostHint, Worker, RESULT_NOTIFY_BATCH};
use crate::trace::{self, Span, Track, What};

/// A worker's loop: pop, run, pass the result on; markers are reported;
/// an empty queue is waited for; a closed one ends the worker.
pub(super) fn worker_main<T, R, F>(
    me: Worker,
    mut input: Consumer<Msg<T>>,
    mut output: Option<Producer<R>>,
    work: &F,
    shared: &Shared,
    spins: u32,
    // `Some` when the policy reads speeds: time each item and publish the
    // counts, with the user's cost hints when there are any.
    measure: Option<Option<CostHint<'_, T>>>,
) where
    F: Fn(Worker, T) -> R,
{
    let slot = &shared.slots[me.index];
    let mut processed = 0u64;
    let mut unnotified = 0u32;
    let (mut busy_ns, mut work_done) = (0u64, 0.0f64);
    let tracer = trace::tracer();
    // Items run, only when `KEEL_TRACE` is on.
    let mut events: Option<Vec<Span>> = tracer.map(|_| Vec::new());
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
                // The work the item is, when the policy reads speeds: its
                // valid hint, one unit without hints, unknown (not counted)
                // for an invalid hint.
                let units = measure.map(|hint| match hint.map(|h| h(&item)) {
                    None => Some(1.0),
                    Some(c) if c.is_finite() && c >= 0.0 => Some(c),
                    Some(_) => None,
                });
                let start = (units.is_some() || events.is_some()).then(std::time::Instant::now);
                let mut result = work(me, item);
                if let Some(start) = start {
                    let end = std::time::Instant::now();
                    if let Some(Some(units)) = units {
                        let ns = u64::try_from((end - start).as_nanos()).unwrap_or(u64::MAX);
                        busy_ns = busy_ns.saturating_add(ns);
                        work_done += units;
                        slot.busy_ns.store(busy_ns, Ordering::Relaxed);
                        slot.work_bits.store(work_done.to_bits(), Ordering::Relaxed);
                    }
                    if units.is_some() {
                        slot.done.store(processed + 1, Ordering::Relaxed);
                    }
                    if let (Some(events), Some(tracer)) = (&mut events, tracer) {
                        events.push(Span {
                            start,
                            end,
                            what: What::Item { n: processed },
                        });
                        if events.len() == trace::FLUSH_EVERY {
                            tracer.write(Track::FarmWorker(me.index), events);
                            events.clear();
                        }
                    }
                }
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
    if let (Some(tracer), Some(events)) = (tracer, &events) {
        tracer.write(Track::FarmWorker(me.index), events);
    }
    if let Err(payload) = result {
        shared.fail(payload);
    }
    // Close our output before we count ourselves finished.
    drop(output);
    shared.finished.fetch_add(1, Ordering::AcqRel);
    shared.master.notify();
}
