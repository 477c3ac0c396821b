//! `tap`: tapering (Lucco), LB4OMP's `tap` (its `kmp_dispatch.cpp`).
//!
//! With `T = R/P` and `v = α·σ/μ`:
//! `cs = ⌈T + v²/2 − v·√(2T + v²/4)⌉`, at least `k` — guided's share `T`
//! tapered by the expected spread of the iteration times, so that the last
//! chunks finish together with high probability. Claimed with
//! [`Claim::Remaining`]. `σ = 0` gives `⌈R/P⌉` (classic guided).
//!
//! Inputs: μ, σ from [`Concept::IterationProfile`](crate::Concept::IterationProfile);
//! without a profile the plan is `mfac2`'s ([module docs](super)). `α` is the
//! spec parameter `tap:alpha=A` (LB4OMP's `KMP_ALPHA`, default 1).

use crate::error::PolicyError;

use super::inputs::{Inputs, Profile};
use super::{ceil_size, Claim, Fac2, LoopShape, Plan, Request, Rule, ThreadLocal, TimingBoard};

/// LB4OMP's default `KMP_ALPHA`.
pub const DEFAULT_ALPHA: f64 = 1.0;

/// The tapering schedule for one instance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tap {
    p: f64,
    k: u64,
    /// `v = α·σ/μ`.
    v: f64,
}

impl Tap {
    /// Plans `shape` with a usable profile and scaling factor `alpha`.
    pub fn new(shape: &LoopShape, profile: Profile, alpha: f64) -> Self {
        Tap {
            p: shape.threads as f64,
            k: shape.min_chunk(),
            v: alpha * profile.sd / profile.mean,
        }
    }
}

/// The `tap` plan, or `mfac2` without a profile.
pub(crate) fn plan<'a>(inputs: &Inputs<'a, '_>, alpha: f64) -> Result<Plan<'a>, PolicyError> {
    Ok(match inputs.profile()? {
        Some(profile) => Plan::Tap(Tap::new(&inputs.shape, profile, alpha)),
        None => Plan::Fac2(Fac2::new(&inputs.shape)),
    })
}

impl Rule for Tap {
    fn claim(&self) -> Claim {
        Claim::Remaining
    }

    fn next_size<B: TimingBoard + ?Sized>(
        &self,
        remaining: u64,
        _request: Request,
        _local: &mut ThreadLocal,
        _board: &B,
    ) -> u64 {
        let t = remaining as f64 / self.p;
        let v = self.v;
        let size = t + v * v / 2.0 - v * (2.0 * t + v * v / 4.0).sqrt();
        ceil_size(size).max(self.k).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dls::ThreadTiming;

    fn sizes(n: u64, p: usize, k: Option<u64>, profile: Profile, alpha: f64) -> Vec<u64> {
        let tap = Tap::new(&LoopShape::new(n, p, k).unwrap(), profile, alpha);
        let board: Vec<ThreadTiming> = Vec::new();
        let (mut remaining, mut out) = (n, Vec::new());
        while remaining > 0 {
            let request = Request {
                thread: 0,
                number: 0,
            };
            let size = tap
                .next_size(remaining, request, &mut ThreadLocal::default(), &board)
                .min(remaining);
            out.push(size);
            remaining -= size;
        }
        out
    }

    #[test]
    fn sizes_follow_the_tapering_formula() {
        // N = 1000, P = 4, σ/μ = 2, α = 1: v = 2, v²/2 = 2, v²/4 = 1.
        // R = 1000: T = 250, 250 + 2 − 2·√501 = 207.23 → 208; R = 792: T = 198,
        // 200 − 2·√397 = 160.15 → 161; R = 631: T = 157.75, 159.75 − 2·√316.5
        // = 124.17 → 125.
        let profile = Profile { mean: 1.0, sd: 2.0 };
        let got = sizes(1000, 4, None, profile, 1.0);
        assert_eq!(&got[..3], &[208, 161, 125]);
        assert_eq!(got.iter().sum::<u64>(), 1000);
        // α scales v: α = 0 is classic guided ⌈R/P⌉.
        assert_eq!(&sizes(1000, 4, None, profile, 0.0)[..3], &[250, 188, 141]);
    }

    #[test]
    fn tapering_below_one_falls_to_the_minimum() {
        // T < v² makes the formula negative: the chunk is k.
        let profile = Profile {
            mean: 1.0,
            sd: 10.0,
        };
        let got = sizes(40, 4, Some(3), profile, 1.0);
        assert!(got[..got.len() - 1].iter().all(|&s| s == 3), "{got:?}");
    }
}
