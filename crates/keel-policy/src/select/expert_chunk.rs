//! The expert chunk parameter (paper §3.1, Eq. 1; §3.4.1), as Auto4OMP's
//! released code computes it (`goldenChunkSize` in LB4OMP's
//! `kmp_dispatch.cpp`):
//!
//! ```text
//! μ     = ⌊ 0.618 · log2(⌊N/P⌋) ⌋
//! chunk = ⌊ N / (2^{μ+1} · P) ⌋
//! ```
//!
//! about `½·(N/P)^0.382`: a chunk "in the middle" of `[1, N/2P]` in log
//! space, 48 for the paper's `N = 10⁶`, `P = 20`. Under `auto` it takes the
//! chunk parameter's place for whichever schedule is chosen: the exact chunk
//! of STATIC and SS, the minimum chunk of the adaptive members, the stealing
//! unit of static-steal (`docs/conventions.md#the-chunk-parameter`). A
//! result of 0 is ignored,
//! as in Auto4OMP, and so is `N/P < 1`, where the logarithm is undefined.
//!
//! N = 1,000,000 and P = 20: μ = ⌊0.618 · log2(50,000)⌋ = 9, chunk = ⌊10⁶ / (2¹⁰ · 20)⌋ = 48.
//!
//! ```
//! use keel_policy::select::expert_chunk;
//! assert_eq!(expert_chunk(1_000_000, 20), Some(48));
//! ```

/// The golden-ratio exponent `0.618` (`1/φ`) of the released code.
pub const GOLDEN_EXPONENT: f64 = 0.618;

/// The expert chunk for `iterations` iterations over `threads` threads, or
/// `None` when it would be 0 or `⌊N/P⌋ = 0` (the schedule's own chunk
/// parameter applies then).
///
/// ```
/// use keel_policy::select::expert_chunk;
/// assert_eq!(expert_chunk(1_000_000, 20), Some(48));
/// assert_eq!(expert_chunk(10, 20), None);
/// ```
pub fn expert_chunk(iterations: u64, threads: usize) -> Option<u64> {
    let threads = threads.max(1) as u64;
    let per_thread = iterations / threads;
    if per_thread == 0 {
        return None;
    }
    // C: `int mul = log2(N/P) * 0.618` truncates a non-negative double.
    let mu = ((per_thread as f64).log2() * GOLDEN_EXPONENT).floor() as u32;
    // C: `N / ((2 << mul) * P)`; u128 so that no N, P overflows.
    let divisor = (2u128 << mu) * threads as u128;
    let chunk = (iterations as u128 / divisor) as u64;
    (chunk > 0).then_some(chunk)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_papers_and_the_notes_examples() {
        // Paper §3.1 / Fig. 1: SPHYNX L1, N = 10⁶, P = 20.
        assert_eq!(expert_chunk(1_000_000, 20), Some(48));
        // The released code's `goldenChunkSize` on these inputs.
        assert_eq!(expert_chunk(10_000, 16), Some(9));
        assert_eq!(expert_chunk(100_000, 16), Some(24));
        assert_eq!(expert_chunk(1_000_000, 16), Some(61));
        assert_eq!(expert_chunk(1_000_000, 64), Some(30));
        assert_eq!(expert_chunk(4096, 64), Some(4));
    }

    #[test]
    fn zero_results_and_tiny_loops_are_ignored() {
        assert_eq!(expert_chunk(0, 4), None);
        assert_eq!(expert_chunk(3, 4), None);
        // N/P = 1: μ = 0, chunk = ⌊N/2P⌋ = 0.
        assert_eq!(expert_chunk(4, 4), None);
        assert_eq!(expert_chunk(8, 4), Some(1));
        assert_eq!(expert_chunk(100, 0), expert_chunk(100, 1));
    }

    #[test]
    fn extreme_sizes_do_not_overflow_and_stay_within_n_over_2p() {
        for (n, p) in [(u64::MAX, 1), (u64::MAX, usize::MAX), (1 << 40, 2)] {
            if let Some(k) = expert_chunk(n, p) {
                assert!(k >= 1 && k <= n / (2 * p as u64).max(1), "{n} {p} {k}");
            }
        }
        for n in [2u64, 10, 100, 1000, 12_345, 1_000_000] {
            for p in [1usize, 2, 3, 8, 20] {
                if let Some(k) = expert_chunk(n, p) {
                    assert!(k <= n / (2 * p as u64), "{n} {p} {k}");
                }
            }
        }
    }
}
