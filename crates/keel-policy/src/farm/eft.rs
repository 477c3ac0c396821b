//! `eft`: earliest-finish-time dispatch, the farm's form of the `lpt-eft`
//! mapping (Gonzalez, Ibarra, Sahni, "Bounds for LPT schedules on uniform
//! processors"): each item goes to the worker on which it would *finish*
//! first, `time + cost / speed`, where `time` is what already waits in that
//! worker's queue. The candidates and their order are the mapping's own
//! ([`EftCandidate`]), so on a stream dispatched at once in decreasing cost
//! with the speeds known, the farm places every item where `lpt-eft` does.
//!
//! **What it reads.** Each worker's level (every item, as
//! `shortest-queue`), its speed ([`QueueView::speed`]: told by the user, or
//! measured by the context as work done over busy time), and the item's
//! cost hint ([`QueueView::cost_hint`], work units = seconds at speed 1).
//! An item without a valid hint (none, NaN, negative, infinite) costs the
//! mean of the valid hints seen so far, or 1 when there are none: with no
//! hints at all every item is one unit and a measured speed is items per
//! busy second, so `cost / speed` is the worker's mean service time. A
//! worker whose speed is not known (not measured yet, or not finite and
//! positive) is taken at the mean of the known speeds, or 1.
//!
//! **The worker's time.** The policy remembers the duration (`cost /
//! speed`, at the speed known when it sent it) of every item it sent each
//! worker, in order, until the worker has finished it
//! ([`QueueView::done`]). Queues are FIFO and the emitter is their only
//! producer, so of the `n` items sent and not known finished the first
//! `n − level` have left the queue: the one in service, whose full
//! duration still counts (the policy knows when it was sent, not when it
//! started), and any finished since the context last counted. A context
//! that does not count finished items gets one item in service assumed
//! whenever some have left the queue. `eft` sends no markers, so its levels
//! are items only; items in a queue that the policy did not send count at
//! the mean cost.
//!
//! **Throttling.** Measured speeds are only known once workers have run
//! items; a fast emitter with unbounded queues sends a whole stream before
//! that. `capacity=N` bounds every queue at `N` items (as `on-demand`
//! does), so items are placed while the workers run and each decision sees
//! recent speeds. Without it the farm's own capacity holds. When the
//! worker that would finish the item first has a full queue, the best
//! worker with room takes it only if it finishes it no later than the
//! stream's projected end (work queued plus the ready items at the mean
//! cost, [`QueueView::ready`], over the total speed): such an item delays
//! nothing, and a bounded queue, a limit on lookahead, does not leave a
//! slow worker idle. Otherwise (or when the stream's length is unknown)
//! the policy waits for room ([`Decision::WaitForRoom`]) rather than send
//! the item where it would finish later than it could.
//!
//! Ties in finish time: at one speed the worker with less time queued,
//! then the lower index; at different speeds the lower index.
//!
//! ```
//! use keel_policy::farm::{parse, FarmConfig, ScriptedQueues};
//! let mut eft = parse("eft").unwrap();
//! eft.start(&FarmConfig::new(2, None).unwrap()).unwrap();
//! // Worker 1 runs at a tenth of worker 0's speed.
//! let mut queues = ScriptedQueues::new(2);
//! queues.speeds = Some(vec![1.0, 0.1]);
//! let sent: Vec<_> = (0..12).map(|_| {
//!     let d = eft.next(&queues);
//!     queues.apply(d).unwrap()
//! }).collect();
//! // Worker 1 gets an item only when worker 0's queue is 10 items long.
//! assert_eq!(sent.iter().filter(|&&w| w == 1).count(), 1);
//! assert_eq!(sent[10], 1);
//! ```

use std::collections::VecDeque;

use super::{positive, Decision, Dispatch, FarmConfig, FarmError, QueueView};
use crate::mapping::EftCandidate;
use crate::spec::{Spec, SpecValue};

/// Earliest-finish-time dispatch (see the module notes).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Eft {
    capacity: Option<usize>,
    /// Per worker: durations of the items sent and not known finished.
    queued: Vec<VecDeque<f64>>,
    /// Per worker: items sent since `start`.
    sent: Vec<u64>,
    /// Per worker: the sum of `queued`.
    time: Vec<f64>,
    /// Per worker: the speed used for the current item (scratch).
    speeds: Vec<f64>,
    hint_sum: f64,
    hints: u64,
}

impl Eft {
    /// EFT on the farm's own queues.
    pub fn new() -> Self {
        Self::default()
    }

    /// EFT on queues bounded at `capacity` items (`>= 1`).
    pub fn bounded(capacity: usize) -> Result<Self, FarmError> {
        if capacity == 0 {
            return Err(FarmError::ZeroCapacity);
        }
        Ok(Eft {
            capacity: Some(capacity),
            ..Self::default()
        })
    }

    /// Builds `eft[:capacity=N]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, FarmError> {
        spec.check_keys(&["capacity"])?;
        match positive(spec, "capacity", FarmError::ZeroCapacity)? {
            Some(c) => Self::bounded(c),
            None => Ok(Self::new()),
        }
    }

    /// The current item's cost: its valid hint, else the mean valid hint,
    /// else one unit.
    fn cost(&mut self, hint: Option<f64>) -> f64 {
        match hint {
            Some(c) if c.is_finite() && c >= 0.0 => {
                self.hint_sum += c;
                self.hints += 1;
                c
            }
            _ => self.mean_cost(),
        }
    }

    /// The mean valid hint so far, or one unit.
    fn mean_cost(&self) -> f64 {
        if self.hints > 0 {
            self.hint_sum / self.hints as f64
        } else {
            1.0
        }
    }

    /// Fills `self.speeds` from the view: valid speeds as given, the rest
    /// at the mean of the valid ones (or 1).
    fn read_speeds(&mut self, view: &dyn QueueView) {
        let (mut sum, mut known) = (0.0, 0usize);
        for (w, s) in self.speeds.iter_mut().enumerate() {
            *s = match view.speed(w) {
                Some(v) if v.is_finite() && v > 0.0 => {
                    sum += v;
                    known += 1;
                    v
                }
                _ => f64::NAN,
            };
        }
        if known < self.speeds.len() {
            let fill = if known > 0 { sum / known as f64 } else { 1.0 };
            for s in self.speeds.iter_mut().filter(|s| s.is_nan()) {
                *s = fill;
            }
        }
    }
}

impl Dispatch for Eft {
    fn spec(&self) -> Spec {
        let mut spec = Spec::named("eft");
        if let Some(c) = self.capacity {
            spec.params
                .push(("capacity".into(), SpecValue::Token(c.to_string())));
        }
        spec
    }

    fn capacity(&self) -> Option<usize> {
        self.capacity
    }

    fn reads_speeds(&self) -> bool {
        true
    }

    fn start(&mut self, config: &FarmConfig) -> Result<(), FarmError> {
        let config = FarmConfig::new(config.workers, config.capacity)?;
        let p = config.workers;
        self.queued = vec![VecDeque::new(); p];
        self.time = vec![0.0; p];
        self.sent = vec![0; p];
        self.speeds = vec![1.0; p];
        self.hint_sum = 0.0;
        self.hints = 0;
        Ok(())
    }

    fn next(&mut self, view: &dyn QueueView) -> Decision {
        let cost = self.cost(view.cost_hint());
        self.read_speeds(view);
        // The earliest finish anywhere, and among queues with room.
        let mut best: Option<EftCandidate> = None;
        let mut best_with_room: Option<EftCandidate> = None;
        // Work committed to the workers and their total speed.
        let (mut committed, mut total_speed) = (0.0, 0.0);
        for w in 0..self.queued.len() {
            let level = view.level(w);
            let sent = self.sent[w];
            let outstanding = match view.done(w) {
                Some(done) => sent.saturating_sub(done),
                None => level as u64 + u64::from(sent > level as u64),
            };
            let outstanding = usize::try_from(outstanding)
                .unwrap_or(usize::MAX)
                .max(level);
            let queued = &mut self.queued[w];
            while queued.len() > outstanding {
                let gone = queued.pop_front().unwrap_or(0.0);
                self.time[w] -= gone;
            }
            if queued.is_empty() {
                // No drift left over from the subtractions.
                self.time[w] = 0.0;
            }
            // Items this policy did not send (none, when it is the queue's
            // only producer since `start`) count at the mean cost.
            let unknown = level.saturating_sub(queued.len());
            let time = if unknown == 0 {
                self.time[w]
            } else {
                self.time[w] + unknown as f64 * self.mean_cost() / self.speeds[w]
            };
            committed += time * self.speeds[w];
            total_speed += self.speeds[w];
            let here = EftCandidate::new(w, time, self.speeds[w], cost);
            if best.is_none_or(|b| here.beats(&b)) {
                best = Some(here);
            }
            if view.has_room(w) && best_with_room.is_none_or(|b| here.beats(&b)) {
                best_with_room = Some(here);
            }
        }
        let chosen = match (best, best_with_room) {
            (Some(b), Some(r)) if b.pu == r.pu => Some(r),
            // The earliest finish is behind a full queue. Another worker
            // still takes the item if it finishes it before the stream's
            // projected end (the work committed and ready over the total
            // speed), so a slow worker is not left idle for want of
            // lookahead; otherwise wait for room rather than place the item
            // where it would finish later.
            (Some(_), Some(r)) => view
                .ready()
                .map(|ready| {
                    let rest = ready.saturating_sub(1) as f64 * self.mean_cost();
                    (committed + cost + rest) / total_speed
                })
                .filter(|&end| r.finish <= end)
                .map(|_| r),
            _ => None,
        };
        match chosen {
            Some(chosen) => {
                self.queued[chosen.pu].push_back(chosen.duration);
                self.sent[chosen.pu] += 1;
                self.time[chosen.pu] += chosen.duration;
                Decision::Send(chosen.pu)
            }
            None => Decision::WaitForRoom,
        }
    }
}

#[cfg(test)]
#[path = "eft_tests.rs"]
mod tests;
