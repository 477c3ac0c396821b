//! `wf` and `awf`: weighted factoring (Hummel, Schmidt, Uma & Wein) and its
//! time-stepping adaptive form (Banicescu et al.), LB4OMP's `wf` and `awf`
//! (LB4OMP's `kmp_dispatch.cpp`).
//!
//! Both scale the mFAC2 batch size by the requesting thread's weight:
//! `cs = max(⌈w_t · ⌈N/(P·2^{j+1})⌉⌉, k)` for request `c` in batch
//! `j = ⌊c/P⌋`. Sizes depend on the thread, so chunks are claimed with
//! [`Claim::Remaining`] (CAS on the next iteration).
//!
//! - `wf`: static weights from [`Concept::ThreadWeights`](crate::Concept::ThreadWeights)
//!   (LB4OMP's `KMP_WEIGHTS`), every weight 1 when absent.
//! - `awf`: weights `w_i ∝ ΣsW_i/ΣsT_i` from
//!   [`Concept::ThreadHistory`](crate::Concept::ThreadHistory), the
//!   time-step-weighted iterations and seconds of each thread over the
//!   previous instances, which the context accumulates from its per-instance
//!   records (LB4OMP updates them when the last thread of an instance
//!   finishes, for the next instance). No history yet: the thread weights,
//!   else 1.
//!
//! Weights are normalised to `Σw = P` ([`Weights`]); LB4OMP's `wf` uses
//! `KMP_WEIGHTS` as given, its `awf` normalises as Keel does.

use crate::error::PolicyError;

use super::fac2::batch_size;
use super::inputs::Inputs;
use super::{ceil_size, Claim, LoopShape, Plan, Request, Rule, ThreadLocal, TimingBoard, Weights};

/// Weighted factoring for one instance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Weighted<'a> {
    p: u64,
    k: u64,
    /// `M = ⌈N/P⌉`.
    m: u64,
    weights: Weights<'a>,
}

impl<'a> Weighted<'a> {
    /// Plans `shape` with `weights`.
    pub fn new(shape: &LoopShape, weights: Weights<'a>) -> Self {
        let p = shape.threads as u64;
        Weighted {
            p,
            k: shape.min_chunk(),
            m: shape.iterations.div_ceil(p),
            weights,
        }
    }
}

/// The `wf` plan.
pub(crate) fn plan_wf<'a>(inputs: &Inputs<'a, '_>) -> Result<Plan<'a>, PolicyError> {
    Ok(Plan::Weighted(Weighted::new(
        &inputs.shape,
        inputs.weights()?,
    )))
}

/// The `awf` plan.
pub(crate) fn plan_awf<'a>(inputs: &Inputs<'a, '_>) -> Result<Plan<'a>, PolicyError> {
    Ok(Plan::Weighted(Weighted::new(
        &inputs.shape,
        inputs.history_weights()?,
    )))
}

impl Rule for Weighted<'_> {
    fn numbers_requests(&self) -> bool {
        true
    }

    fn claim(&self) -> Claim {
        Claim::Remaining
    }

    fn next_size<B: TimingBoard + ?Sized>(
        &self,
        _remaining: u64,
        request: Request,
        _local: &mut ThreadLocal,
        _board: &B,
    ) -> u64 {
        let base = batch_size(self.m, request.number / self.p);
        let size = ceil_size(self.weights.get(request.thread) * base as f64);
        size.max(self.k).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dls::ThreadTiming;

    fn size(plan: &Weighted<'_>, thread: usize, number: u64) -> u64 {
        let board: Vec<ThreadTiming> = Vec::new();
        plan.next_size(
            u64::MAX,
            Request { thread, number },
            &mut ThreadLocal::default(),
            &board,
        )
    }

    #[test]
    fn weights_scale_the_mfac2_batches() {
        // N = 1000, P = 2, weights 1 : 3 → normalised 0.5, 1.5.
        // Batch 0: ⌈1000/4⌉ = 250 → 125 and 375; batch 1: 125 → ⌈62.5⌉ = 63, ⌈187.5⌉ = 188.
        let raw = [1.0, 3.0];
        let shape = LoopShape::new(1000, 2, None).unwrap();
        let wf = Weighted::new(&shape, Weights::direct(&raw));
        assert_eq!((size(&wf, 0, 0), size(&wf, 1, 1)), (125, 375));
        assert_eq!((size(&wf, 0, 2), size(&wf, 1, 3)), (63, 188));
        // k is a minimum.
        let shape = LoopShape::new(1000, 2, Some(100)).unwrap();
        let wf = Weighted::new(&shape, Weights::direct(&raw));
        assert_eq!(size(&wf, 0, 2), 100);
    }

    #[test]
    fn uniform_weights_are_mfac2() {
        let shape = LoopShape::new(100, 2, None).unwrap();
        let wf = Weighted::new(&shape, Weights::uniform());
        let got: Vec<u64> = (0..8).map(|c| size(&wf, (c % 2) as usize, c)).collect();
        assert_eq!(got, vec![25, 25, 13, 13, 7, 7, 4, 4]);
    }

    #[test]
    fn awf_history_gives_the_slower_thread_less() {
        // Thread 0 did 100 iterations in 4 s, thread 1 in 1 s: rates 25 : 100,
        // weights 0.4 and 1.6; batch 0 of N = 1000 is 250 → 100 and 400.
        let history = [100.0, 4.0, 100.0, 1.0];
        let shape = LoopShape::new(1000, 2, None).unwrap();
        let awf = Weighted::new(&shape, Weights::history(&history).unwrap());
        assert_eq!((size(&awf, 0, 0), size(&awf, 1, 1)), (100, 400));
    }
}
