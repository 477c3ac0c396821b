//! The event queue: simulated time in floating-point seconds, events popped in
//! time order, simultaneous events in the order they were scheduled (so a run
//! is a pure function of its inputs and seed, never of heap internals).
//!
//! A binary heap gives O(log n) per event; the models keep at most a few events
//! per worker in flight, so a run costs O(events · log P).
//!
//! Events come out in time order, simultaneous ones in scheduling order:
//!
//! ```
//! use keel_sim::EventQueue;
//! let mut q = EventQueue::new();
//! q.schedule(2.0, "late");
//! q.schedule(1.0, "first");
//! q.schedule(1.0, "second");
//! assert_eq!(q.pop(), Some((1.0, "first")));
//! assert_eq!(q.pop(), Some((1.0, "second")));
//! q.schedule_in(0.5, "relative"); // 0.5 s after now (1.0)
//! assert_eq!(q.pop(), Some((1.5, "relative")));
//! assert_eq!(q.now(), 1.5);
//! ```

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Simulated time, in seconds since the start of the run.
pub type SimTime = f64;

struct Entry<E> {
    time: SimTime,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed: `BinaryHeap` is a max-heap and the earliest event must come out first.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .time
            .total_cmp(&self.time)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// A discrete-event queue over simulated time.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
    now: SimTime,
    processed: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue at time zero.
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            next_seq: 0,
            now: 0.0,
            processed: 0,
        }
    }

    /// The time of the last event popped (zero before the first).
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Events popped so far: the unit of the simulator's O(events · log P) cost.
    pub fn events_processed(&self) -> u64 {
        self.processed
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no event is waiting.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Schedules `event` at absolute time `at`. An event in the past (or NaN)
    /// would break causality, so it is moved to `now`: models compute their
    /// times from `now`, and this only absorbs rounding.
    pub fn schedule(&mut self, at: SimTime, event: E) {
        debug_assert!(
            at >= self.now - 1e-12,
            "event scheduled in the past: {at} < {}",
            self.now
        );
        let time = if at >= self.now { at } else { self.now };
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { time, seq, event });
    }

    /// Schedules `event` `delay` seconds after now.
    pub fn schedule_in(&mut self, delay: SimTime, event: E) {
        self.schedule(self.now + delay.max(0.0), event);
    }

    /// The earliest event (ties in scheduling order), advancing the clock to it.
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let entry = self.heap.pop()?;
        self.now = entry.time;
        self.processed += 1;
        Some((entry.time, entry.event))
    }

    /// The time of the earliest waiting event, without popping it.
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|e| e.time)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_order_and_ties_in_insertion_order() {
        let mut q = EventQueue::new();
        q.schedule(2.0, "c");
        q.schedule(1.0, "a");
        q.schedule(1.0, "b");
        q.schedule(0.5, "first");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(order, ["first", "a", "b", "c"]);
        assert_eq!(q.now(), 2.0);
        assert_eq!(q.events_processed(), 4);
    }

    #[test]
    fn schedule_in_is_relative_to_the_last_pop() {
        let mut q = EventQueue::new();
        q.schedule(3.0, 1);
        q.pop();
        q.schedule_in(0.25, 2);
        assert_eq!(q.pop(), Some((3.25, 2)));
    }
}
