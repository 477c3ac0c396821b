//! `arrs-adaptive`: ARRS with the two changes its authors name as future
//! work (FastFlow ARRS paper §IV: "shortening the
//! initial round-robin phase and … adapting the scheduler's block size to
//! the number of tasks that are ready for scheduling"). Everything else is
//! `arrs`'s ([`super::Arrs`]): level recording once per block, levelling of
//! the recorded differences, then round-robin, the marker `NEAR_END` items
//! before the block's end, and throttling until a worker reaches it.
//!
//! **Why.** Within a block, after levelling, ARRS hands items out
//! round-robin, so a slow worker's queue settles at about
//! `B·(s − 1)/(s + 1)` items for a block of `B` items and a speed ratio `s`
//! — the slow worker's backlog when the stream ends, and the first block's
//! round-robin imbalance, both grow with `B`. The paper's efficiency
//! therefore only approaches its model at many blocks.
//!
//! **Block sizes.** The first block has `min-block` items (default
//! `2 × workers`): a short round-robin start. Each later block has
//! `clamp(ready / divisor, min-block, chunk)` items, where `ready` is the
//! number of items the context knows are waiting
//! ([`QueueView::ready`]; `chunk` when unknown), and grows at most twofold
//! per block, so that levels are recorded often while the farm's balance is
//! still being found and whenever few items remain. `chunk` (default 300,
//! CHUNK_SIZE) bounds the block from above, so a long stream costs what
//! `arrs` costs; `divisor` (default 8) sets how much of the remaining work
//! one block may commit to the current levels.

use super::arrs::Episode;
use super::{positive, Decision, Dispatch, FarmConfig, FarmError, QueueView};
use super::{DEFAULT_CHUNK_SIZE, NEAR_END_PER_WORKER};
use crate::spec::{Spec, SpecValue};

/// Default first and smallest block, per worker.
pub const DEFAULT_MIN_BLOCK_PER_WORKER: usize = 2;
/// Default share of the ready items one block may take: `ready / 8`.
pub const DEFAULT_DIVISOR: usize = 8;

/// ARRS with adaptive block sizes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArrsAdaptive {
    chunk: usize,
    min_block: Option<usize>,
    divisor: usize,
    near_end: Option<usize>,
    resolved_min: usize,
    resolved_near_end: usize,
    episode: Episode,
}

impl ArrsAdaptive {
    /// `chunk` is the largest block; `min_block` and `near_end` default to
    /// `2 × workers` and `4 × workers` when `None`.
    pub fn new(
        chunk: usize,
        min_block: Option<usize>,
        divisor: usize,
        near_end: Option<usize>,
    ) -> Result<Self, FarmError> {
        if chunk == 0 || min_block == Some(0) {
            return Err(FarmError::ZeroChunk);
        }
        if near_end == Some(0) {
            return Err(FarmError::ZeroNearEnd);
        }
        if divisor == 0 {
            return Err(FarmError::Spec(crate::PolicyError::InvalidParameter {
                policy: "arrs-adaptive".into(),
                key: "divisor".into(),
                value: "0".into(),
                expected: "an integer >= 1".into(),
            }));
        }
        Ok(ArrsAdaptive {
            chunk,
            min_block,
            divisor,
            near_end,
            resolved_min: 0,
            resolved_near_end: 0,
            episode: Episode::default(),
        })
    }

    /// Builds `arrs-adaptive[:chunk=300,min-block=N,divisor=8,near-end=N]`.
    pub fn from_spec(spec: &Spec) -> Result<Self, FarmError> {
        spec.check_keys(&["chunk", "min-block", "divisor", "near-end"])?;
        let chunk = positive(spec, "chunk", FarmError::ZeroChunk)?;
        let min_block = positive(spec, "min-block", FarmError::ZeroChunk)?;
        let divisor = spec.count_at_least("divisor", 1)?;
        let near_end = positive(spec, "near-end", FarmError::ZeroNearEnd)?;
        Self::new(
            chunk.unwrap_or(DEFAULT_CHUNK_SIZE),
            min_block,
            divisor.unwrap_or(DEFAULT_DIVISOR),
            near_end,
        )
    }

    /// How many times this stream recorded the queue levels.
    pub fn recordings(&self) -> u64 {
        self.episode.recordings
    }

    /// The size of the next block given `ready` items and the previous size.
    pub(crate) fn block_size(&self, ready: Option<usize>, previous: usize) -> usize {
        let wanted = ready.map_or(self.chunk, |r| r / self.divisor);
        wanted
            .min(previous.saturating_mul(2))
            .min(self.chunk)
            .max(self.resolved_min.min(self.chunk))
    }
}

impl Dispatch for ArrsAdaptive {
    fn spec(&self) -> Spec {
        let mut spec = Spec::named("arrs-adaptive");
        let mut push = |key: &str, value: usize| {
            spec.params
                .push((key.into(), SpecValue::Token(value.to_string())));
        };
        if self.chunk != DEFAULT_CHUNK_SIZE {
            push("chunk", self.chunk);
        }
        if let Some(m) = self.min_block {
            push("min-block", m);
        }
        if self.divisor != DEFAULT_DIVISOR {
            push("divisor", self.divisor);
        }
        if let Some(n) = self.near_end {
            push("near-end", n);
        }
        spec
    }

    fn start(&mut self, config: &FarmConfig) -> Result<(), FarmError> {
        let config = FarmConfig::new(config.workers, config.capacity)?;
        let p = config.workers;
        self.resolved_min = self.min_block.unwrap_or(DEFAULT_MIN_BLOCK_PER_WORKER * p);
        self.resolved_near_end = self.near_end.unwrap_or(NEAR_END_PER_WORKER * p);
        let first = self.resolved_min.min(self.chunk);
        self.episode.start(p, first, self.resolved_near_end);
        Ok(())
    }

    #[inline]
    fn next(&mut self, view: &dyn QueueView) -> Decision {
        if self.episode.done() {
            if view.marker_reached() < self.episode.block {
                return Decision::WaitForMarker(self.episode.block);
            }
            self.episode.record(view);
            let size = self.block_size(view.ready(), self.episode.size);
            self.episode.begin(size, self.resolved_near_end);
        }
        self.episode.hand_out(view)
    }
}
