//! `fac2` and `mfac2`: practical factoring with `x = 2` (Flynn Hummel,
//! Schonberg & Flynn), LB4OMP's `fac2` and `fac2a` (its `kmp_dispatch.cpp`;
//! Auto4OMP portfolio index 5 is `mfac2`).
//!
//! Batch `j` is `P` chunks of `cs_j = max(⌈N/(P·2^{j+1})⌉, k)` iterations,
//! chunk `i` belonging to batch `⌊i/P⌋`.
//!
//! - `fac2` computes `⌈0.5^{j+1}·N/P⌉` directly.
//! - `mfac2` iterates `cs_0 = ⌈N/(2P)⌉`, `cs_j = ⌈cs_{j−1}/2⌉`.
//!
//! The two are the same sequence: `⌈⌈y⌉/m⌉ = ⌈y/m⌉` for any real `y` and
//! integer `m ≥ 1`, so the iterated ceilings collapse to the direct formula
//! (LB4OMP's two differ only by the rounding of `pow(0.5, j+1)·N/P` in
//! `double` once `N > 2⁵³`). Keel keeps both names for the portfolio and
//! gives them one rule.
//!
//! Sizes depend only on the chunk index, so Keel claims with one
//! `fetch_add` on the index ([`Claim::Indexed`]) instead of LB4OMP's CAS
//! loop; chunk `i` of request order is the chunk LB4OMP's request `i` would
//! size. Batch starts have a closed form: with `M = ⌈N/P⌉` and `X = M − 1`,
//! `⌈M/2ᵗ⌉ = ⌊X/2ᵗ⌋ + 1`, and Legendre's `Σ_{t≥1} ⌊X/2ᵗ⌋ = X − popcount(X)`
//! gives `S(j) = Σ_{t=1..j} ⌈M/2ᵗ⌉ = j + (X − pc(X)) − (Y − pc(Y))` with
//! `Y = ⌊X/2ʲ⌋`; batch `j` starts at `P·S(j)`. Once the halving reaches `k`
//! every later chunk is `k`, from a start computed once at plan time.

use super::{Chunk, Claim, LoopShape, Rule};

/// The FAC2 / mFAC2 schedule for one instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fac2 {
    n: u64,
    p: u64,
    k: u64,
    /// `M = ⌈N/P⌉`.
    m: u64,
    /// First batch whose size is clamped to `k`.
    floor_batch: u64,
    /// Where that batch starts.
    floor_start: u128,
}

/// Unclamped FAC2 batch size `⌈M/2^{j+1}⌉` for `M = ⌈N/P⌉` (0 when `M = 0`).
/// Shared with the weighted schedules (`wf`, `awf`, `awf-b`, `awf-d`).
#[inline]
pub(crate) fn batch_size(m: u64, batch: u64) -> u64 {
    let shift = batch.saturating_add(1);
    if shift >= 64 {
        return u64::from(m > 0);
    }
    (m >> shift) + u64::from(m & ((1 << shift) - 1) != 0)
}

/// `S(j) = Σ_{t=1..j} ⌈M/2ᵗ⌉` for `M >= 1`, in closed form.
fn batch_sum(m: u64, j: u64) -> u128 {
    let x = m - 1;
    let y = if j >= 64 { 0 } else { x >> j };
    let legendre = |v: u64| (v - u64::from(v.count_ones())) as u128;
    j as u128 + legendre(x) - legendre(y)
}

impl Fac2 {
    /// Plans `shape`; `k` (default 1) is the minimum chunk.
    pub fn new(shape: &LoopShape) -> Self {
        let (n, p, k) = (shape.iterations, shape.threads as u64, shape.min_chunk());
        let m = n.div_ceil(p);
        let mut fac2 = Fac2 {
            n,
            p,
            k,
            m,
            floor_batch: 0,
            floor_start: 0,
        };
        if m > 0 {
            // At most 64 halvings reach 1 <= k.
            while batch_size(m, fac2.floor_batch) > k {
                fac2.floor_batch += 1;
            }
            fac2.floor_start = p as u128 * batch_sum(m, fac2.floor_batch);
        }
        fac2
    }

    /// `M = ⌈N/P⌉`, the base of the halving.
    pub fn base(&self) -> u64 {
        self.m
    }
}

impl Rule for Fac2 {
    fn claim(&self) -> Claim {
        Claim::Indexed
    }

    fn chunk_at(&self, index: u64) -> Option<Chunk> {
        if self.m == 0 {
            return None;
        }
        let batch = index / self.p;
        let (start, size) = if batch < self.floor_batch {
            let size = batch_size(self.m, batch);
            let within = (index % self.p) as u128 * size as u128;
            (self.p as u128 * batch_sum(self.m, batch) + within, size)
        } else {
            let tail = (index - self.floor_batch * self.p) as u128;
            (self.floor_start + tail * self.k as u128, self.k)
        };
        if start >= self.n as u128 {
            return None;
        }
        let end = (start + size as u128).min(self.n as u128);
        Some(start as u64..end as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(n: u64, p: usize, k: Option<u64>) -> Vec<u64> {
        let plan = Fac2::new(&LoopShape::new(n, p, k).unwrap());
        let chunks: Vec<Chunk> = (0..).map_while(|i| plan.chunk_at(i)).collect();
        assert!(chunks.windows(2).all(|w| w[0].end == w[1].start));
        chunks.iter().map(|c| c.end - c.start).collect()
    }

    #[test]
    fn batches_halve_from_n_over_2p() {
        // N = 100, P = 2, M = 50: batch sizes ⌈50/2ʲ⁺¹⌉ = 25, 13, 7, 4, 2, ...,
        // two chunks per batch; 25+25+13+13+7+7+4+4 = 98, so the ninth chunk
        // is the last 2 iterations.
        assert_eq!(sizes(100, 2, None), vec![25, 25, 13, 13, 7, 7, 4, 4, 2]);
        // With k = 5 the halving stops at 5: 25 25 13 13 7 7 5 5.
        assert_eq!(sizes(100, 2, Some(5)), vec![25, 25, 13, 13, 7, 7, 5, 5]);
    }

    #[test]
    fn iterated_and_direct_ceilings_agree() {
        for n in [1u64, 7, 100, 1_000_003, u64::MAX] {
            for p in [1u64, 3, 16] {
                let m = n.div_ceil(p);
                let mut iterated = m.div_ceil(2); // mFAC2's cs_0 = ⌈N/(2P)⌉
                for j in 0..70 {
                    assert_eq!(batch_size(m, j), iterated, "n={n} p={p} j={j}");
                    iterated = iterated.div_ceil(2);
                }
            }
        }
    }

    #[test]
    fn closed_form_batch_sums_match_the_loop() {
        for m in [1u64, 2, 5, 64, 1000, u64::MAX] {
            let mut sum = 0u128;
            for j in 0..70 {
                assert_eq!(batch_sum(m, j), sum, "m={m} j={j}");
                sum += batch_size(m, j) as u128;
            }
        }
    }

    #[test]
    fn tiny_and_huge_loops() {
        assert_eq!(sizes(0, 4, None), Vec::<u64>::new());
        assert_eq!(sizes(3, 8, None), vec![1, 1, 1]);
        let n = u64::MAX;
        let s = sizes(n, 16, Some(n / 100));
        assert_eq!(s.iter().map(|&c| c as u128).sum::<u128>(), n as u128);
    }
}
