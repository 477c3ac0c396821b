//! An iteration assignment: each thread's ranges of a loop's iterations,
//! computed once (from workload hints, by a mapping policy) and handed
//! back by the context as the [`Concept::IterationAssignment`] component.
//! It lives below both the context core, which carries it, and the loop
//! schedules (`dls`), which compute and read it.

use std::ops::Range;

use crate::concept::Concept;
use crate::error::PolicyError;

/// Each thread's iteration ranges, computed once from workload hints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    /// Ranges grouped by thread (thread 0's first), each group in iteration
    /// order.
    ranges: Vec<Range<u64>>,
    /// Thread `t`'s ranges are `ranges[starts[t]..starts[t + 1]]`.
    starts: Vec<usize>,
    iterations: u64,
}

impl Assignment {
    /// Builds the assignment from a placement of `block`-iteration blocks
    /// (`placement[b]` is the thread of iterations `b·block .. (b+1)·block`,
    /// the last block cut at `iterations`): consecutive blocks on one thread
    /// become one range.
    pub fn from_blocks(
        placement: &[usize],
        block: u64,
        iterations: u64,
        threads: usize,
    ) -> Result<Self, PolicyError> {
        let block = block.max(1);
        let expected = iterations.div_ceil(block);
        if placement.len() as u64 != expected {
            return Err(PolicyError::LengthMismatch {
                concept: Concept::CurrentMapping,
                expected: usize::try_from(expected).unwrap_or(usize::MAX),
                found: placement.len(),
                unit: "blocks",
            });
        }
        if let Some((block, &pu)) = placement.iter().enumerate().find(|(_, &t)| t >= threads) {
            return Err(PolicyError::PuOutOfRange {
                task: block,
                pu,
                npus: threads,
            });
        }
        // Runs of consecutive blocks on one thread, in iteration order.
        let mut runs: Vec<(usize, Range<u64>)> = Vec::new();
        for (b, &thread) in placement.iter().enumerate() {
            let start = b as u64 * block;
            let end = (start + block).min(iterations);
            match runs.last_mut() {
                Some((t, range)) if *t == thread => range.end = end,
                _ => runs.push((thread, start..end)),
            }
        }
        // Counting sort by thread keeps each thread's runs in order.
        let mut starts = vec![0usize; threads + 1];
        for (thread, _) in &runs {
            starts[thread + 1] += 1;
        }
        for t in 0..threads {
            starts[t + 1] += starts[t];
        }
        let mut next = starts.clone();
        let mut ranges = vec![0..0; runs.len()];
        for (thread, range) in runs {
            ranges[next[thread]] = range;
            next[thread] += 1;
        }
        Ok(Assignment {
            ranges,
            starts,
            iterations,
        })
    }

    /// Threads the assignment was made for.
    pub fn threads(&self) -> usize {
        self.starts.len() - 1
    }

    /// Iterations it covers.
    pub fn iterations(&self) -> u64 {
        self.iterations
    }

    /// Thread `thread`'s ranges, in iteration order.
    pub fn thread_ranges(&self, thread: usize) -> &[Range<u64>] {
        &self.ranges[self.starts[thread]..self.starts[thread + 1]]
    }

    /// Ranges over all threads (the number of contiguous pieces).
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether there are no ranges (an empty loop).
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}
