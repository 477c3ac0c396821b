//! `gac`: LLVM's `guided_analytical_chunked`, what libomp's `schedule(auto)`
//! runs (libomp's `kmp_dispatch.cpp`; Auto4OMP portfolio index 3).
//!
//! With `x = 1 − 1/(2P)`, the iterations left after `i` chunks are
//! `Rem(i) = ⌈N·xⁱ⌉` (`Rem(0) = N`) and chunk `i` is
//! `[N − Rem(i), N − Rem(i+1))`, about `Rem(i)/(2P)` iterations: guided's
//! sizes in closed form, so one `fetch_add` on the chunk index claims a chunk
//! with no CAS retry. From the crossover `c` — the smallest `i` with
//! `xⁱ ≤ (2k+1)·P/N` — chunks are exactly `k` (dynamic), starting where chunk
//! `c − 1` ended. Before the crossover every chunk has at least `k`
//! iterations: `Rem(i) − Rem(i+1) > N·xⁱ/(2P) − 1 > k − ½`.
//!
//! Like LLVM: the whole loop is dynamic,k when `(2k+1)·P ≥ N`; one thread
//! takes everything in one chunk; beyond 2²⁰ threads the schedule falls
//! back to iterative guided (`gss-llvm`), because the gap between `xⁱ` and
//! `xⁱ⁺¹` would shrink towards the rounding error of `powi`. LLVM computes
//! `xⁱ` in `long double`; Keel uses `f64`, whose error (a few ulps after
//! `log₂ i` squarings) stays far below the relative gap `1/(2P) ≥ 2⁻²¹`, so
//! `Rem` is non-increasing and the chunks tile `[0, N)` exactly once. Beyond
//! `N = 2⁵³` the sizes themselves are exact only to a few ulps of `N·xⁱ`
//! (relative error about 2⁻⁵⁰), so a chunk just before the crossover may
//! fall short of `k` by that much; the tiling is unaffected.

use super::{Chunk, Claim, Guided, GuidedRule, LoopShape, Plan, Rule};

/// Above this many threads LLVM (and Keel) use iterative guided instead.
pub const GAC_MAX_THREADS: usize = 1 << 20;

/// The analytical guided schedule for one instance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gac {
    n: u64,
    k: u64,
    /// `1 − 1/(2P)`.
    x: f64,
    /// First chunk index of the dynamic tail.
    crossover: u64,
    /// Where the dynamic tail starts: `N − Rem(crossover)`.
    tail_start: u64,
}

impl Gac {
    /// Plans `shape` (`k` defaults to 1). Returns the `gss-llvm` plan beyond
    /// [`GAC_MAX_THREADS`] threads, as LLVM does.
    pub fn plan(shape: &LoopShape) -> Plan<'static> {
        if shape.threads > GAC_MAX_THREADS {
            return Plan::Guided(Guided::new(shape, GuidedRule::Llvm));
        }
        Plan::Gac(Gac::new(shape))
    }

    /// Plans `shape` for at most [`GAC_MAX_THREADS`] threads.
    pub fn new(shape: &LoopShape) -> Self {
        let (n, p) = (shape.iterations, shape.threads as u64);
        let k = shape.min_chunk();
        let x = 1.0 - 0.5 / p as f64;
        let mut gac = Gac {
            n,
            k,
            x,
            crossover: 0,
            tail_start: 0,
        };
        if p == 1 {
            // One thread: the whole loop as one chunk (LLVM: static_greedy).
            gac.k = n.max(1);
            return gac;
        }
        if (2 * k as u128 + 1) * p as u128 >= n as u128 {
            return gac; // too short for guided: dynamic,k throughout
        }
        let target = (2.0 * k as f64 + 1.0) * p as f64 / n as f64;
        // Estimate from logarithms, then settle on the exact smallest i with
        // powi(x, i) <= target, using the same powi as `remaining` so that
        // the crossover and the chunk bounds agree.
        let mut c = ((target.ln() / x.ln()).ceil() as i64).max(1) as u64;
        while c > 1 && gac.power(c - 1) <= target {
            c -= 1;
        }
        while gac.power(c) > target {
            c += 1;
        }
        gac.crossover = c;
        gac.tail_start = n - gac.remaining(c);
        gac
    }

    /// `xⁱ`; `i` stays below 2²⁷ for `P ≤ 2²⁰` (`i ≈ 2P·ln(N/P)`).
    fn power(&self, i: u64) -> f64 {
        self.x.powi(i.min(i32::MAX as u64) as i32)
    }

    /// `Rem(i) = ⌈N·xⁱ⌉`, exactly `N` for `i = 0`, never above `N` (the
    /// product is rounded to `f64` for `N > 2⁵³`).
    fn remaining(&self, i: u64) -> u64 {
        if i == 0 {
            return self.n;
        }
        let rem = (self.n as f64 * self.power(i)).ceil();
        (rem as u64).min(self.n)
    }
}

impl Rule for Gac {
    fn claim(&self) -> Claim {
        Claim::Indexed
    }

    fn chunk_at(&self, index: u64) -> Option<Chunk> {
        if index < self.crossover {
            // Rem(index) >= Rem(crossover) >= 1, so start < N: an index
            // before the crossover always names a chunk (never "done").
            let start = self.n - self.remaining(index);
            let end = self.n - self.remaining(index + 1);
            debug_assert!(start < end, "Rem must decrease before the crossover");
            return Some(start..end.max(start));
        }
        let offset = (index - self.crossover) as u128 * self.k as u128;
        let start = self.tail_start as u128 + offset;
        if start >= self.n as u128 {
            return None;
        }
        let end = (start + self.k as u128).min(self.n as u128);
        Some(start as u64..end as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(n: u64, p: usize, k: Option<u64>) -> Vec<Chunk> {
        let gac = Gac::new(&LoopShape::new(n, p, k).unwrap());
        (0..).map_while(|i| gac.chunk_at(i)).collect()
    }

    fn sizes(n: u64, p: usize, k: Option<u64>) -> Vec<u64> {
        chunks(n, p, k).iter().map(|c| c.end - c.start).collect()
    }

    #[test]
    fn chunks_follow_the_closed_form_then_switch_to_k() {
        // N = 100, P = 2, k = 1: x = 0.75, target = 3·2/100 = 0.06, crossover
        // c = 10 (0.75⁹ = 0.075 > 0.06 ≥ 0.75¹⁰ = 0.056). Rem(i) = ⌈100·0.75ⁱ⌉:
        // 100 75 57 43 32 24 18 14 11 8 6, so the guided chunks are the
        // differences and the last 6 iterations go one by one.
        let got = sizes(100, 2, None);
        assert_eq!(&got[..10], &[25, 18, 14, 11, 8, 6, 4, 3, 3, 2]);
        assert_eq!(&got[10..], &[1; 6]);
        let c = chunks(100, 2, None);
        assert!(c.windows(2).all(|w| w[0].end == w[1].start));
        assert_eq!((c[0].start, c.last().unwrap().end), (0, 100));
    }

    #[test]
    fn short_loops_are_dynamic_and_one_thread_takes_everything() {
        // (2k+1)·P = 5·4 = 20 >= 20: dynamic,2.
        assert_eq!(sizes(20, 4, Some(2)), vec![2; 10]);
        assert_eq!(sizes(1000, 1, Some(3)), vec![1000]);
        assert_eq!(sizes(0, 3, None), Vec::<u64>::new());
    }

    #[test]
    fn guided_chunks_respect_the_minimum() {
        for (n, p, k) in [(10_000, 8, 7), (1_000_000, 16, 1), (5_000, 3, 40)] {
            let s = sizes(n, p, Some(k));
            assert!(
                s[..s.len() - 1].iter().all(|&c| c >= k),
                "{n} {p} {k}: {s:?}"
            );
            assert_eq!(s.iter().sum::<u64>(), n);
        }
    }

    #[test]
    fn huge_loops_neither_overflow_nor_lose_iterations() {
        let n = u64::MAX;
        let c = chunks(n, 16, Some(n / 64));
        assert_eq!(c[0].start, 0);
        assert!(c.windows(2).all(|w| w[0].end == w[1].start));
        assert_eq!(c.last().unwrap().end, n);
        let gac = Gac::new(&LoopShape::new(n, 16, Some(n / 64)).unwrap());
        assert_eq!(gac.chunk_at(u64::MAX), None);
    }

    #[test]
    fn beyond_the_thread_limit_the_plan_is_iterative_guided() {
        let shape = LoopShape::new(1 << 40, GAC_MAX_THREADS + 1, None).unwrap();
        assert!(matches!(Gac::plan(&shape), Plan::Guided(_)));
    }
}
