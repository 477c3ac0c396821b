//! `awf-b`, `awf-c`, `awf-d`, `awf-e`: adaptive weighted factoring with
//! weights updated at every chunk request (Cariño & Banicescu), LB4OMP's
//! `awf_b` … `awf_e` (its `kmp_dispatch.cpp`; Auto4OMP portfolio
//! indices 7–10).
//!
//! Each thread `i` publishes `π_i = Σκ·Δt_κ / Σκ·cs_κ`, its time per
//! iteration weighted by chunk index `κ` (recent chunks count more), via
//! [`ThreadLocal::record`] and the [`TimingBoard`]. A thread with data gets
//! `w_i = (1/π_i) · n / Σ_{j: π_j > 0} 1/π_j` over the `n` threads with data
//! (LB4OMP's `raw_i = π̄/π_i`, `w_i = raw_i·n/Σraw`, where `π̄` cancels); a
//! thread without data yet keeps its initial weight,
//! [`Concept::ThreadWeights`](crate::Concept::ThreadWeights) normalised to
//! `Σw = P`, or 1. The size is `max(⌈w_i · base⌉, k)`, claimed with
//! [`Claim::Remaining`]:
//!
//! | variant | base | timing |
//! |---|---|---|
//! | B | mFAC2 batch `⌈N/(P·2^{j+1})⌉`, `j = ⌊c/P⌋` | chunk execution only ([`Timing::Chunk`]) |
//! | C | `⌈R/(2P)⌉` every request | chunk execution only |
//! | D | as B | request to request, overhead included ([`Timing::Request`]) |
//! | E | as C | request to request |
//!
//! The context must publish a thread's own timing before that thread's next
//! request (record, publish, then ask), as LB4OMP updates `π` at the start
//! of each request. Weights are recomputed from the board at each request,
//! O(P), as LB4OMP does. One difference: LB4OMP gives each thread's first
//! AWF-C/E chunk `⌈N/(2P)⌉` whatever is left by then; Keel uses `⌈R/(2P)⌉`
//! throughout, which agrees on the loop's first request and gives a
//! late-starting thread a share of what actually remains.

use crate::error::PolicyError;

use super::fac2::batch_size;
use super::inputs::Inputs;
use super::{
    ceil_size, positive_finite, Claim, LoopShape, Plan, Request, Rule, ThreadLocal, ThreadTiming,
    Timing, TimingBoard, Weights,
};

/// Which AWF variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AwfVariant {
    /// Batched base, chunk-only timing.
    B,
    /// Per-request base, chunk-only timing.
    C,
    /// Batched base, timing including the overhead.
    D,
    /// Per-request base, timing including the overhead.
    E,
}

impl AwfVariant {
    fn batched(self) -> bool {
        matches!(self, AwfVariant::B | AwfVariant::D)
    }
}

/// AWF-B/C/D/E for one instance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AwfLive<'a> {
    variant: AwfVariant,
    p: u64,
    k: u64,
    /// `M = ⌈N/P⌉`.
    m: u64,
    initial: Weights<'a>,
}

impl<'a> AwfLive<'a> {
    /// Plans `shape`; `initial` weights serve threads with no data yet.
    pub fn new(shape: &LoopShape, variant: AwfVariant, initial: Weights<'a>) -> Self {
        let p = shape.threads as u64;
        AwfLive {
            variant,
            p,
            k: shape.min_chunk(),
            m: shape.iterations.div_ceil(p),
            initial,
        }
    }

    /// Thread `thread`'s weight from the board: `(1/π_own) · n / Σ 1/π_j`
    /// over the `n` threads with data, in thread order (the sum's order is
    /// part of the result's last bit), or the initial weight while the
    /// thread has none. A thread's own `π` is read once: only it writes it.
    #[inline]
    pub fn weight<B: TimingBoard + ?Sized>(&self, thread: usize, board: &B) -> f64 {
        let threads = (self.p as usize).min(board.threads());
        let usable = positive_finite;
        let own = if thread < threads {
            board.time_per_iteration(thread)
        } else {
            0.0
        };
        if !usable(own) {
            return self.initial.get(thread);
        }
        let (mut active, mut inverse_sum) = (0usize, 0.0);
        for i in 0..threads {
            let v = if i == thread {
                own
            } else {
                board.time_per_iteration(i)
            };
            if usable(v) {
                active += 1;
                inverse_sum += 1.0 / v;
            }
        }
        (1.0 / own) * active as f64 / inverse_sum
    }
}

/// The `awf-b` … `awf-e` plans.
pub(crate) fn plan<'a>(
    inputs: &Inputs<'a, '_>,
    variant: AwfVariant,
) -> Result<Plan<'a>, PolicyError> {
    Ok(Plan::AwfLive(AwfLive::new(
        &inputs.shape,
        variant,
        inputs.weights()?,
    )))
}

impl Rule for AwfLive<'_> {
    /// Only the batched variants (B, D) read the request number; C and E
    /// size from what remains, so their claims touch no request counter.
    fn numbers_requests(&self) -> bool {
        self.variant.batched()
    }

    fn claim(&self) -> Claim {
        Claim::Remaining
    }

    fn timing(&self) -> Timing {
        match self.variant {
            AwfVariant::B | AwfVariant::C => Timing::Chunk,
            AwfVariant::D | AwfVariant::E => Timing::Request,
        }
    }

    /// AWF reads `π` alone: only the weighted sums are kept, and `π` is
    /// due after every chunk (no budget); the AF fields stay 0.
    #[inline]
    fn measured(&self, local: &mut ThreadLocal, size: u64, seconds: f64) -> Option<ThreadTiming> {
        local.record_weighted(size, seconds);
        Some(ThreadTiming {
            time_per_iteration: local.time_per_iteration(),
            ..ThreadTiming::default()
        })
    }

    #[inline]
    fn next_size<B: TimingBoard + ?Sized>(
        &self,
        remaining: u64,
        request: Request,
        _local: &mut ThreadLocal,
        board: &B,
    ) -> u64 {
        let base = if self.variant.batched() {
            batch_size(self.m, request.number / self.p)
        } else {
            remaining.div_ceil(2 * self.p)
        };
        let size = ceil_size(self.weight(request.thread, board) * base as f64);
        size.max(self.k).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(pis: &[f64]) -> Vec<ThreadTiming> {
        pis.iter()
            .map(|&pi| ThreadTiming {
                time_per_iteration: pi,
                ..ThreadTiming::default()
            })
            .collect()
    }

    fn size(
        plan: &AwfLive<'_>,
        remaining: u64,
        thread: usize,
        number: u64,
        b: &[ThreadTiming],
    ) -> u64 {
        let request = Request { thread, number };
        let board: Vec<ThreadTiming> = b.to_vec();
        plan.next_size(remaining, request, &mut ThreadLocal::default(), &board)
    }

    #[test]
    fn weights_are_inverse_time_per_iteration_normalised_over_active_threads() {
        // π = 4, 1, 1, (no data): active 3, Σ1/π = 2.25;
        // w0 = 0.25·3/2.25 = 1/3, w1 = w2 = 4/3, w3 = initial 1.
        let shape = LoopShape::new(1000, 4, None).unwrap();
        let plan = AwfLive::new(&shape, AwfVariant::B, Weights::uniform());
        let b = board(&[4.0, 1.0, 1.0, 0.0]);
        let w: Vec<f64> = (0..4).map(|t| plan.weight(t, &b)).collect();
        for (got, want) in w.iter().zip([1.0 / 3.0, 4.0 / 3.0, 4.0 / 3.0, 1.0]) {
            assert!((got - want).abs() < 1e-12, "{w:?}");
        }
    }

    #[test]
    fn batched_and_chunked_bases() {
        // N = 1000, P = 4: batch 0 base ⌈250/2⌉ = 125; w0 = 1/3 → ⌈41.67⌉ = 42,
        // w1 = 4/3 → ⌈166.67⌉ = 167.
        let shape = LoopShape::new(1000, 4, None).unwrap();
        let b = board(&[4.0, 1.0, 1.0, 0.0]);
        for variant in [AwfVariant::B, AwfVariant::D] {
            let plan = AwfLive::new(&shape, variant, Weights::uniform());
            assert_eq!(size(&plan, 1000, 0, 0, &b), 42);
            assert_eq!(size(&plan, 1000, 1, 1, &b), 167);
            // Batch 1 (request 4): base 63.
            assert_eq!(size(&plan, 700, 3, 4, &b), 63);
        }
        // C/E: base ⌈R/(2P)⌉ = ⌈600/8⌉ = 75; w1 = 4/3 → 100.
        for variant in [AwfVariant::C, AwfVariant::E] {
            let plan = AwfLive::new(&shape, variant, Weights::uniform());
            assert_eq!(size(&plan, 600, 1, 9, &b), 100);
        }
    }

    #[test]
    fn initial_weights_serve_until_measured_and_timing_follows_the_variant() {
        let raw = [3.0, 1.0];
        let shape = LoopShape::new(1000, 2, Some(10)).unwrap();
        let plan = AwfLive::new(&shape, AwfVariant::C, Weights::direct(&raw));
        // No data: weights 1.5 and 0.5 of ⌈1000/4⌉ = 250.
        assert_eq!(size(&plan, 1000, 0, 0, &board(&[0.0, 0.0])), 375);
        assert_eq!(size(&plan, 1000, 1, 1, &board(&[0.0, 0.0])), 125);
        assert_eq!(plan.timing(), Timing::Chunk);
        let plan = AwfLive::new(&shape, AwfVariant::E, Weights::uniform());
        assert_eq!(plan.timing(), Timing::Request);
        // k is a minimum.
        assert_eq!(size(&plan, 30, 0, 0, &board(&[0.0, 0.0])), 10);
    }
}
