//! `af` and `maf`: adaptive factoring (Banicescu & Liu), LB4OMP's `af` and
//! `af_a` (its `kmp_dispatch.cpp`; Auto4OMP portfolio index 11 is
//! `maf`).
//!
//! Each thread measures its own mean `μ_i` and standard deviation `σ_i` of
//! the time per iteration during the loop: the context executes a chunk in
//! sub-chunks of [`Rule::sub_chunk`] iterations, times each and feeds it to
//! [`ThreadLocal::record`], and publishes [`ThreadLocal::timing`] on the
//! [`TimingBoard`]. At its next request thread `i` gets
//!
//! `cs = ⌈(D + 2TR − √(D² + 4DTR)) / (2μ_i)⌉`, at least `k`, with
//! `D = Σ_j σ_j²/μ_j` and `T = (Σ_j 1/μ_j)⁻¹`
//!
//! over all threads, a thread without data counting with the requester's own
//! μ, σ (as LB4OMP). Until a thread has a measurement its chunk is
//! [`AF_INITIAL_CHUNK`] (LB4OMP's 100), at least `k`. Sub-chunks are
//! `⌊cs/divider⌋` when `cs ≥ divider` (else the whole chunk), at least `k`;
//! `divider` is the spec parameter `af:divider=D` (LB4OMP's `KMP_DIVIDER`,
//! default [`DEFAULT_DIVIDER`]).
//!
//! `af` times sub-chunk execution only ([`Timing::Chunk`]); `maf` includes
//! the scheduling overhead ([`Timing::Request`]): that is the whole
//! difference, as in LB4OMP. LB4OMP claims every sub-chunk with its own CAS;
//! Keel claims the chunk once and the context walks its sub-chunks locally,
//! which is the same partition of the thread's work with fewer atomics.
//!
//! The numerator is evaluated as the equal `x²/(D + x + √(D² + 2Dx))` with
//! `x = 2TR`, which avoids cancelling two nearly equal terms when `D ≪ TR`.

use super::{ceil_size, Claim, LoopShape, Request, Rule, ThreadLocal, Timing, TimingBoard};

/// LB4OMP's first chunk of a thread that has no measurement yet.
pub const AF_INITIAL_CHUNK: u64 = 100;

/// LB4OMP's default `KMP_DIVIDER`: sub-chunks per chunk.
pub const DEFAULT_DIVIDER: u64 = 10;

/// Which AF variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfVariant {
    /// `af`: sub-chunk execution time only.
    Af,
    /// `maf`: time from request to request (overhead included).
    Maf,
}

/// AF / mAF for one instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Af {
    variant: AfVariant,
    p: usize,
    k: u64,
    divider: u64,
}

impl Af {
    /// Plans `shape`; `divider >= 1` (sub-chunks per chunk).
    pub fn new(shape: &LoopShape, variant: AfVariant, divider: u64) -> Self {
        Af {
            variant,
            p: shape.threads,
            k: shape.min_chunk(),
            divider: divider.max(1),
        }
    }

    /// AF's chunk for `thread` with `remaining` iterations left.
    pub fn size(&self, remaining: u64, thread: usize, board: &dyn TimingBoard) -> u64 {
        let threads = self.p.min(board.threads());
        let usable = |mu: f64, sd: f64| mu > 0.0 && mu.is_finite() && sd.is_finite();
        let own = if thread < threads {
            board.get(thread)
        } else {
            Default::default()
        };
        if !usable(own.mean, own.sd) {
            return AF_INITIAL_CHUNK.max(self.k);
        }
        let (mut d, mut inverse_t) = (0.0, 0.0);
        for i in 0..self.p {
            let theirs = if i < threads {
                board.get(i)
            } else {
                Default::default()
            };
            let (mu, sd) = if usable(theirs.mean, theirs.sd) {
                (theirs.mean, theirs.sd)
            } else {
                (own.mean, own.sd)
            };
            d += sd * sd / mu;
            inverse_t += 1.0 / mu;
        }
        let x = 2.0 * remaining as f64 / inverse_t;
        let numerator = x * (x / (d + x + (d * d + 2.0 * d * x).sqrt()));
        ceil_size(numerator / (2.0 * own.mean)).max(self.k).max(1)
    }
}

impl Rule for Af {
    fn claim(&self) -> Claim {
        Claim::Remaining
    }

    fn timing(&self) -> Timing {
        match self.variant {
            AfVariant::Af => Timing::Chunk,
            AfVariant::Maf => Timing::Request,
        }
    }

    fn next_size(
        &self,
        remaining: u64,
        request: Request,
        _local: &mut ThreadLocal,
        board: &dyn TimingBoard,
    ) -> u64 {
        self.size(remaining, request.thread, board)
    }

    fn sub_chunk(&self, size: u64) -> u64 {
        let sub = if size >= self.divider {
            size / self.divider
        } else {
            size
        };
        sub.max(self.k).min(size).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dls::ThreadTiming;

    fn board(stats: &[(f64, f64)]) -> Vec<ThreadTiming> {
        stats
            .iter()
            .map(|&(mean, sd)| ThreadTiming {
                mean,
                sd,
                ..ThreadTiming::default()
            })
            .collect()
    }

    #[test]
    fn chunk_follows_the_adaptive_factoring_formula() {
        // P = 2, R = 1000, μ = (1, 2), σ = (1, 1): D = 1/1 + 1/2 = 1.5,
        // T = 1/(1 + 0.5) = 2/3, 2TR = 1333.33, √(D² + 4DTR) = √(2.25 + 4000)
        // = 63.2633; numerator = 1.5 + 1333.333 − 63.2633 = 1271.570.
        // Thread 0: ⌈1271.570/2⌉ = 636; thread 1: ⌈1271.570/4⌉ = 318.
        let shape = LoopShape::new(5000, 2, None).unwrap();
        let af = Af::new(&shape, AfVariant::Af, DEFAULT_DIVIDER);
        let b = board(&[(1.0, 1.0), (2.0, 1.0)]);
        assert_eq!(af.size(1000, 0, &b), 636);
        assert_eq!(af.size(1000, 1, &b), 318);
    }

    #[test]
    fn without_data_the_first_chunk_is_100_and_others_borrow_the_own_profile() {
        let shape = LoopShape::new(5000, 2, None).unwrap();
        let af = Af::new(&shape, AfVariant::Maf, DEFAULT_DIVIDER);
        let b = board(&[(0.0, 0.0), (1.0, 0.0)]);
        assert_eq!(af.size(5000, 0, &b), 100);
        // Thread 1 alone with σ = 0: D = 0, T = 1/2: cs = 2TR/(2μ) = R/2.
        assert_eq!(af.size(1000, 1, &b), 500);
        assert_eq!(af.timing(), Timing::Request);
        let k200 = Af::new(
            &LoopShape::new(5000, 2, Some(200)).unwrap(),
            AfVariant::Af,
            10,
        );
        assert_eq!(k200.size(5000, 0, &b), 200);
        assert_eq!(k200.timing(), Timing::Chunk);
    }

    #[test]
    fn sub_chunks_divide_big_chunks_and_respect_k() {
        let shape = LoopShape::new(5000, 2, None).unwrap();
        let af = Af::new(&shape, AfVariant::Af, DEFAULT_DIVIDER);
        assert_eq!(af.sub_chunk(100), 10);
        assert_eq!(af.sub_chunk(57), 5);
        assert_eq!(af.sub_chunk(9), 9);
        let k = Af::new(
            &LoopShape::new(5000, 2, Some(8)).unwrap(),
            AfVariant::Af,
            10,
        );
        assert_eq!(k.sub_chunk(57), 8);
        assert_eq!(k.sub_chunk(5), 5);
    }
}
