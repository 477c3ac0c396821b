//! `tss`: trapezoid self-scheduling (Tzen & Ni), LLVM's `trapezoidal`
//! (libomp's `kmp_dispatch.cpp`; Auto4OMP portfolio index 2).
//!
//! Integer arithmetic, as LLVM: first chunk `F = max(1, ⌊N/(2P)⌋)`, last chunk
//! `L = clamp(k, 1, F)` (the chunk parameter is the *last* chunk,
//! `docs/conventions.md#the-chunk-parameter`), `n = max(2, ⌈2N/(F+L)⌉)` chunks, decrement
//! `δ = ⌊(F−L)/(n−1)⌋`. Chunk `i` has `F − iδ` iterations and starts at
//! `start_i = i·(2F − (i−1)·δ)/2` (exact: `i(i−1)` is even), so one
//! `fetch_add` on the chunk index claims it. Because `δ` is rounded down the
//! `n` chunks cover at least `N`; the one crossing `N` is cut there.

use super::{Chunk, Claim, LoopShape, Rule};

/// The trapezoid schedule for one instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tss {
    n: u64,
    first: u64,
    delta: u64,
    count: u64,
}

impl Tss {
    /// Plans `shape`; `shape.chunk` is the last chunk `L` (default 1).
    pub fn new(shape: &LoopShape) -> Self {
        let n = shape.iterations;
        let p = shape.threads as u64;
        let first = (n / 2 / p).max(1);
        let last = shape.min_chunk().clamp(1, first);
        let count = ((2 * n as u128).div_ceil((first + last) as u128) as u64).max(2);
        let delta = (first - last) / (count - 1);
        Tss {
            n,
            first,
            delta,
            count,
        }
    }

    /// `start_i`, in 128 bits: `i·F` alone can exceed `u64` past the end.
    fn start(&self, i: u64) -> u128 {
        let (i, f, d) = (i as u128, self.first as u128, self.delta as u128);
        i * (2 * f - i.saturating_sub(1) * d) / 2
    }
}

impl Rule for Tss {
    fn claim(&self) -> Claim {
        Claim::Indexed
    }

    fn chunk_at(&self, index: u64) -> Option<Chunk> {
        if index >= self.count {
            return None;
        }
        let start = self.start(index);
        if start >= self.n as u128 {
            return None;
        }
        let size = (self.first - index * self.delta) as u128;
        let end = (start + size).min(self.n as u128);
        Some(start as u64..end as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(n: u64, p: usize, k: Option<u64>) -> Vec<u64> {
        let tss = Tss::new(&LoopShape::new(n, p, k).unwrap());
        let chunks: Vec<Chunk> = (0..).map_while(|i| tss.chunk_at(i)).collect();
        assert!(chunks.windows(2).all(|w| w[0].end == w[1].start));
        chunks.iter().map(|c| c.end - c.start).collect()
    }

    #[test]
    fn chunks_decrease_linearly_from_f_towards_l() {
        // N = 100, P = 2: F = 25, L = 1, n = ⌈200/26⌉ = 8, δ = ⌊24/7⌋ = 3;
        // sizes 25 22 19 16 13 (= 95), then 10 is cut to the 5 that remain.
        assert_eq!(sizes(100, 2, None), vec![25, 22, 19, 16, 13, 5]);
        // k = 10 is the last chunk: n = ⌈200/35⌉ = 6, δ = ⌊15/5⌋ = 3:
        // 25 22 19 16 13 then the remaining 5.
        assert_eq!(sizes(100, 2, Some(10)), vec![25, 22, 19, 16, 13, 5]);
        // N = 1000, P = 4, k = 5: F = 125, n = ⌈2000/130⌉ = 16, δ = ⌊120/15⌋ = 8.
        let s = sizes(1000, 4, Some(5));
        assert_eq!(&s[..4], &[125, 117, 109, 101]);
        assert_eq!(s.iter().sum::<u64>(), 1000);
    }

    #[test]
    fn a_last_chunk_above_f_is_clamped_and_tiny_loops_work() {
        // k = 50 > F = 25: L = F, δ = 0, every chunk is 25.
        assert_eq!(sizes(100, 2, Some(50)), vec![25; 4]);
        // F = max(1, 0) = 1: one iteration per chunk.
        assert_eq!(sizes(3, 8, None), vec![1, 1, 1]);
        assert_eq!(sizes(0, 2, None), Vec::<u64>::new());
    }

    #[test]
    fn huge_loops_do_not_overflow() {
        let n = u64::MAX;
        let s = sizes(n, 3, Some(n / 7));
        assert_eq!(s.iter().map(|&c| c as u128).sum::<u128>(), n as u128);
        let tss = Tss::new(&LoopShape::new(n, 3, None).unwrap());
        assert_eq!(tss.chunk_at(u64::MAX), None);
    }
}
