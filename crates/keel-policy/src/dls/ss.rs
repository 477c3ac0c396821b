//! `ss` = `dynamic[,k]`: self-scheduling (OpenMP's `dynamic`). Chunk
//! `i` is `[i·k, i·k + k)`: one `fetch_add` on the chunk index claims it.

use super::{Chunk, Claim, LoopShape, Rule};

/// Self-scheduling with a fixed chunk size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ss {
    n: u64,
    k: u64,
}

impl Ss {
    /// Plans `shape`; the chunk is exactly `k` (default 1).
    pub fn new(shape: &LoopShape) -> Self {
        Ss {
            n: shape.iterations,
            k: shape.min_chunk(),
        }
    }

    /// Fixed chunks of `size` (at least 1) over `iterations`: `fsc`'s chunk,
    /// computed once per instance, is claimed exactly like dynamic's.
    pub fn with_size(iterations: u64, size: u64) -> Self {
        Ss {
            n: iterations,
            k: size.max(1),
        }
    }
}

impl Rule for Ss {
    fn claim(&self) -> Claim {
        Claim::Indexed
    }

    // Inlined into a caller's claim (a foreign runtime's `next` per chunk):
    // the plan's dispatch otherwise calls it across crates.
    #[inline]
    fn chunk_at(&self, index: u64) -> Option<Chunk> {
        let start = index.checked_mul(self.k).filter(|&s| s < self.n)?;
        Some(start..start.saturating_add(self.k).min(self.n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_chunks_then_a_short_tail() {
        let plan = Ss::new(&LoopShape::new(10, 4, Some(4)).unwrap());
        let chunks: Vec<Chunk> = (0..).map_while(|i| plan.chunk_at(i)).collect();
        assert_eq!(chunks, vec![0..4, 4..8, 8..10]);
        assert_eq!(plan.chunk_at(u64::MAX), None, "no overflow past the end");
    }
}
