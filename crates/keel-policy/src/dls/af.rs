//! `af` and `maf`: adaptive factoring (Banicescu & Liu), LB4OMP's `af` and
//! `af_a` (its `kmp_dispatch.cpp`; Auto4OMP portfolio index 11 is
//! `maf`). `docs/adaptive-factoring.md` sets the two side by side.
//!
//! Each thread measures its own mean `μ_i` and standard deviation `σ_i` of
//! the time per iteration during the loop and publishes them on the
//! [`TimingBoard`]. When its current chunk is spent, thread `i` plans the
//! next one as
//!
//! `cs = ⌈(D + 2TR − √(D² + 4DTR)) / (2μ_i)⌉`, at least `k`, with
//! `D = Σ_j σ_j²/μ_j` and `T = (Σ_j 1/μ_j)⁻¹`
//!
//! over all threads, a thread without data counting with the requester's own
//! μ, σ (as LB4OMP). Until a thread has a measurement its chunk is
//! [`AF_INITIAL_CHUNK`] (LB4OMP's 100), at least `k`.
//!
//! A chunk is a *budget*, not a range: it is handed out as sub-chunks of
//! `⌊cs/divider⌋` iterations (the whole chunk when `cs < divider`), at least
//! `k`, **one per request, each claimed from the shared counter** — the
//! other threads take iterations between two sub-chunks of one thread's
//! chunk, so a thread slowed by a costly region does not hold the
//! iterations after it. A sub-chunk that would leave less than a sub-chunk
//! of the budget takes the rest of it. `divider` is the spec parameter
//! `af:divider=D` (LB4OMP's `KMP_DIVIDER`, default [`DEFAULT_DIVIDER`]).
//! The budget lives in the thread's [`ThreadLocal`]: the context reports
//! each claim with [`ThreadLocal::claimed`] and publishes the thread's
//! timing when [`ThreadLocal::chunk_spent`].
//!
//! Every claimed sub-chunk is one sample of the time per iteration; the
//! sums run over the whole instance (not reset per chunk), and `σ` is the
//! sample standard deviation, as LB4OMP's. `af` times sub-chunk execution
//! only ([`Timing::Chunk`]); `maf` includes the scheduling overhead
//! ([`Timing::Request`]): that is the whole difference, as in LB4OMP.
//!
//! The numerator is evaluated as the equal `x²/(D + x + √(D² + 2Dx))` with
//! `x = 2TR`, which avoids cancelling two nearly equal terms when `D ≪ TR`.
//!
//! ```
//! use keel_policy::dls::{Af, AfVariant, LoopShape, Request, Rule, ThreadLocal, ThreadTiming};
//! let af = Af::new(&LoopShape::new(1000, 2, None).unwrap(), AfVariant::Af, 10);
//! let board = vec![ThreadTiming::default(); 2];
//! let mut local = ThreadLocal::default();
//! let request = Request { thread: 0, number: 0 };
//! // No measurement yet: a chunk of 100, handed out 10 at a time.
//! assert_eq!(af.next_size(1000, request, &mut local, &board), 10);
//! local.claimed(10);
//! assert_eq!(local.budget, 90);
//! assert!(!local.chunk_spent());
//! ```

use super::{
    ceil_size, positive_finite, Claim, LoopShape, Request, Rule, ThreadLocal, ThreadTiming, Timing,
    TimingBoard,
};

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

    /// Sub-chunk size of a chunk of `size`: `⌊size/divider⌋` when
    /// `size ≥ divider`, else the whole chunk; at least `k`, at most `size`.
    pub fn sub_chunk(&self, size: u64) -> u64 {
        let sub = if size >= self.divider {
            size / self.divider
        } else {
            size
        };
        sub.max(self.k).min(size).max(1)
    }

    /// AF's chunk for `thread` with `remaining` iterations left.
    pub fn size<B: TimingBoard + ?Sized>(&self, remaining: u64, thread: usize, board: &B) -> u64 {
        let threads = self.p.min(board.threads());
        let usable = |mu: f64, sd: f64| positive_finite(mu) && sd.is_finite();
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

    /// AF reads `μ` and `σ` alone: only the per-sample sums are kept, and
    /// they are due once the chunk's budget is spent; `π` stays 0.
    #[inline]
    fn measured(&self, local: &mut ThreadLocal, size: u64, seconds: f64) -> Option<ThreadTiming> {
        local.record_sample(size, seconds);
        if !local.chunk_spent() {
            return None;
        }
        let (mean, sd) = local.moments();
        Some(ThreadTiming {
            mean,
            sd,
            ..ThreadTiming::default()
        })
    }

    /// The next sub-chunk's size for `request`: plans a new chunk from the
    /// board when the thread's budget is spent, then hands out one sub-chunk
    /// of it. Idempotent for a retried request (the budget only shrinks in
    /// [`ThreadLocal::claimed`]).
    #[inline]
    fn next_size<B: TimingBoard + ?Sized>(
        &self,
        remaining: u64,
        request: Request,
        local: &mut ThreadLocal,
        board: &B,
    ) -> u64 {
        if local.budget == 0 {
            let chunk = self.size(remaining, request.thread, board);
            local.budget = chunk;
            local.sub_chunk = self.sub_chunk(chunk);
        }
        let rest = local.budget.saturating_sub(local.sub_chunk);
        if rest > 0 && rest < local.sub_chunk {
            local.budget
        } else {
            local.sub_chunk.min(local.budget).max(self.k)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// Hands out requests for `thread` until its budget is spent, as the
    /// context does: size, claim, report the claim.
    fn one_chunk(af: &Af, remaining: u64, local: &mut ThreadLocal, b: &[ThreadTiming]) -> Vec<u64> {
        let board = b.to_vec();
        let request = Request {
            thread: 0,
            number: 0,
        };
        let mut sizes = Vec::new();
        let mut left = remaining;
        loop {
            let size = af.next_size(left, request, local, &board).min(left);
            // A retried request gets the same size.
            assert_eq!(
                af.next_size(left - 1, request, local, &board).min(left),
                size
            );
            local.claimed(size);
            left -= size;
            sizes.push(size);
            if local.chunk_spent() || left == 0 {
                return sizes;
            }
        }
    }

    #[test]
    fn a_chunk_is_a_budget_handed_out_one_sub_chunk_per_request() {
        let shape = LoopShape::new(5000, 2, None).unwrap();
        let af = Af::new(&shape, AfVariant::Af, DEFAULT_DIVIDER);
        let mut local = ThreadLocal::default();
        // The first chunk: 100 as ten sub-chunks of 10.
        let first = one_chunk(&af, 5000, &mut local, &board(&[(0.0, 0.0), (0.0, 0.0)]));
        assert_eq!(first, vec![10; 10]);
        // μ = 1, σ = 0 on both threads, R = 50: D = 0, T = 1/2, cs = 25,
        // sub-chunks of ⌊25/10⌋ = 2; the one that would leave 1 takes 3.
        let b = board(&[(1.0, 0.0), (1.0, 0.0)]);
        assert_eq!(af.size(50, 0, &b), 25);
        let second = one_chunk(&af, 50, &mut local, &b);
        assert_eq!(second, [vec![2; 11], vec![3]].concat());
        assert_eq!(second.iter().sum::<u64>(), 25);
        // A chunk below the divider is one sub-chunk.
        let b = board(&[(1.0, 0.0), (1.0, 0.0)]);
        assert_eq!(one_chunk(&af, 12, &mut local, &b), vec![6]);
    }

    #[test]
    fn sub_chunks_never_go_below_k_and_the_budget_ends_at_zero() {
        let shape = LoopShape::new(5000, 2, Some(8)).unwrap();
        let af = Af::new(&shape, AfVariant::Maf, DEFAULT_DIVIDER);
        let mut local = ThreadLocal::default();
        let sizes = one_chunk(&af, 5000, &mut local, &board(&[(0.0, 0.0), (0.0, 0.0)]));
        // 100 in sub-chunks of max(10, 8) = 10.
        assert_eq!(sizes, vec![10; 10]);
        // A budget of 15 in sub-chunks of 8: the first would leave 7 < 8,
        // so it takes the whole budget.
        local.budget = 15;
        local.sub_chunk = af.sub_chunk(15);
        assert_eq!(local.sub_chunk, 8);
        assert_eq!(one_chunk(&af, 5000, &mut local, &[]), vec![15]);
        assert!(local.chunk_spent());
        // A planned chunk is never below k, so its budget covers a
        // sub-chunk (LB4OMP's chunk is not raised to k: a chunk below it
        // is overdrawn by its first sub-chunk and never spent exactly).
        let b = board(&[(1.0, 0.0), (1.0, 0.0)]);
        assert_eq!(af.size(6, 0, &b), 8);
    }
}
