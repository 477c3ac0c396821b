//! `arrs`: the adaptive round-robin scheduler of Moniruzzaman, Idrees,
//! Roßbory and Gracia, "An adaptive load-balancer for task-scheduling in
//! FastFlow", INFOCOMP 2015,
//! exactly as its Fig. 5 and §II describe:
//!
//! ```text
//! if n_scheduled < CHUNK_SIZE:                      # hand out tasks
//!     if queuesUnbalanced(): scheduleLowestQueue(task)
//!     else:                  scheduleRoundRobin(task)
//!     if CHUNK_SIZE - n_scheduled == NEAR_END: sendFakeTaskToAllWorkers()
//!     n_scheduled += 1
//! else:                                             # throttle
//!     waitForFakeTask(); recordQueueLevels(); n_scheduled = 0
//!     (and the same task is offered again)
//! ```
//!
//! - **Level recording** happens once per block of `CHUNK_SIZE` items
//!   (default 300, the paper's), at the start of every block but the first:
//!   the first block is plain round-robin ("ARRS will also revert to a
//!   round-robin policy at the very start"). A stream of `n` items therefore
//!   reads the levels at most `⌈n / CHUNK_SIZE⌉ − 1` times.
//! - **Levelling.** The recorded levels `L_i` give each worker a deficit
//!   `max_j L_j − L_i`. While any deficit remains, the item goes to the
//!   lowest queue counting what this block has sent it (the largest
//!   remaining deficit; ties to the lowest index), "in such a way that
//!   differences in queue lengths, which have been precomputed at the time
//!   of queue level recording, are leveled out"; then round-robin for the
//!   rest of the block. Round-robin resumes where it left off.
//! - **Throttling.** The marker ("fake task") of block `b` goes to every
//!   worker right after the item that leaves `NEAR_END` items of the block
//!   (`CHUNK_SIZE − n_scheduled == NEAR_END`; default `4 × workers`, "a small
//!   multiple of the number of workers"). When the block is complete, the
//!   policy answers [`Decision::WaitForMarker`]`(b)` until some worker has
//!   dequeued marker `b`; then it records the levels and starts block `b+1`.
//!   If `NEAR_END >= CHUNK_SIZE` the marker follows the block's first item
//!   (the pseudo-code would never send one and wait for ever).
//! - Full bounded queues are skipped (the farm may bound its queues; the
//!   paper's were unbounded); when every queue is full the answer is
//!   [`Decision::WaitForRoom`] and nothing is counted.

use super::{next_with_room, positive, Decision, Dispatch, FarmConfig, FarmError, QueueView};
use crate::spec::{Spec, SpecValue};

/// The paper's CHUNK_SIZE: items per block and per level recording.
pub const DEFAULT_CHUNK_SIZE: usize = 300;
/// The paper's NEAR_END is `4 × NUMBER_OF_WORKERS`.
pub const NEAR_END_PER_WORKER: usize = 4;

/// The block machinery shared by `arrs` and `arrs-adaptive`: one
/// scheduling episode of `size` items, its levelling deficits, its marker.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Episode {
    pub(crate) workers: usize,
    /// Items in the current block.
    pub(crate) size: usize,
    /// `n_scheduled` of Fig. 5.
    pub(crate) sent: usize,
    /// The item index after which the marker goes out.
    pub(crate) mark_at: usize,
    /// The current block's number (its marker's).
    pub(crate) block: u64,
    /// Round-robin cursor: the last worker chosen.
    pub(crate) last: usize,
    /// Remaining levelling deficit per worker.
    pub(crate) deficit: Vec<usize>,
    /// Sum of `deficit` (0 = balanced: round-robin).
    pub(crate) deficit_total: usize,
    /// Times the levels were recorded (each reads every queue once).
    pub(crate) recordings: u64,
}

impl Episode {
    pub(crate) fn start(&mut self, workers: usize, first_size: usize, near_end: usize) {
        *self = Episode {
            workers,
            last: workers - 1,
            deficit: vec![0; workers],
            ..Episode::default()
        };
        self.begin(first_size, near_end);
    }

    /// Starts the next block of `size` items (`>= 1`).
    pub(crate) fn begin(&mut self, size: usize, near_end: usize) {
        self.size = size;
        self.sent = 0;
        self.mark_at = size.saturating_sub(near_end);
        self.block += 1;
    }

    /// Whether the block has been handed out.
    #[inline]
    pub(crate) fn done(&self) -> bool {
        self.sent >= self.size
    }

    /// recordQueueLevels(): every level read once, deficits to the highest.
    pub(crate) fn record(&mut self, view: &dyn QueueView) {
        self.recordings += 1;
        let mut max = 0;
        for (w, d) in self.deficit.iter_mut().enumerate() {
            *d = view.level(w);
            max = max.max(*d);
        }
        self.deficit_total = 0;
        for d in &mut self.deficit {
            *d = max - *d;
            self.deficit_total += *d;
        }
    }

    /// Hands out one item of the block (the `n_scheduled < CHUNK_SIZE` arm).
    #[inline]
    pub(crate) fn hand_out(&mut self, view: &dyn QueueView) -> Decision {
        let chosen = if self.deficit_total > 0 {
            self.lowest_queue(view)
        } else {
            next_with_room(view, self.last, self.workers)
        };
        let Some(w) = chosen else {
            return Decision::WaitForRoom;
        };
        self.last = w;
        let mark = self.sent == self.mark_at;
        self.sent += 1;
        if mark {
            Decision::SendAndMark {
                worker: w,
                block: self.block,
            }
        } else {
            Decision::Send(w)
        }
    }

    /// scheduleLowestQueue(): the largest remaining deficit among queues
    /// with room (ties to the lowest index).
    fn lowest_queue(&mut self, view: &dyn QueueView) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (w, &d) in self.deficit.iter().enumerate() {
            if best.is_none_or(|b| d > self.deficit[b]) && view.has_room(w) {
                best = Some(w);
            }
        }
        let w = best?;
        if self.deficit[w] > 0 {
            self.deficit[w] -= 1;
            self.deficit_total -= 1;
        }
        Some(w)
    }
}

/// The paper's ARRS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arrs {
    chunk: usize,
    near_end: Option<usize>,
    resolved_near_end: usize,
    episode: Episode,
}

impl Arrs {
    /// ARRS with CHUNK_SIZE `chunk` and NEAR_END `near_end` (`None` =
    /// `4 × workers`, resolved at [`Dispatch::start`]).
    pub fn new(chunk: usize, near_end: Option<usize>) -> Result<Self, FarmError> {
        if chunk == 0 {
            return Err(FarmError::ZeroChunk);
        }
        if near_end == Some(0) {
            return Err(FarmError::ZeroNearEnd);
        }
        Ok(Arrs {
            chunk,
            near_end,
            resolved_near_end: 0,
            episode: Episode::default(),
        })
    }

    /// Builds `arrs[:chunk=300,near-end=N]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, FarmError> {
        spec.check_keys(&["chunk", "near-end"])?;
        let chunk = positive(spec, "chunk", FarmError::ZeroChunk)?;
        let near_end = positive(spec, "near-end", FarmError::ZeroNearEnd)?;
        Self::new(chunk.unwrap_or(DEFAULT_CHUNK_SIZE), near_end)
    }

    /// CHUNK_SIZE.
    pub fn chunk(&self) -> usize {
        self.chunk
    }

    /// NEAR_END as resolved for the current stream.
    pub fn near_end(&self) -> usize {
        self.resolved_near_end
    }

    /// How many times this stream recorded the queue levels.
    pub fn recordings(&self) -> u64 {
        self.episode.recordings
    }
}

impl Dispatch for Arrs {
    fn spec(&self) -> Spec {
        let mut spec = Spec::named("arrs");
        if self.chunk != DEFAULT_CHUNK_SIZE {
            spec.params
                .push(("chunk".into(), SpecValue::Token(self.chunk.to_string())));
        }
        if let Some(n) = self.near_end {
            spec.params
                .push(("near-end".into(), SpecValue::Token(n.to_string())));
        }
        spec
    }

    fn start(&mut self, config: &FarmConfig) -> Result<(), FarmError> {
        let config = FarmConfig::new(config.workers, config.capacity)?;
        self.resolved_near_end = self
            .near_end
            .unwrap_or(NEAR_END_PER_WORKER * config.workers);
        self.episode
            .start(config.workers, self.chunk, self.resolved_near_end);
        Ok(())
    }

    #[inline]
    fn next(&mut self, view: &dyn QueueView) -> Decision {
        if self.episode.done() {
            // waitForFakeTask()
            if view.marker_reached() < self.episode.block {
                return Decision::WaitForMarker(self.episode.block);
            }
            // recordQueueLevels(); n_scheduled = 0
            self.episode.record(view);
            self.episode.begin(self.chunk, self.resolved_near_end);
        }
        self.episode.hand_out(view)
    }
}
