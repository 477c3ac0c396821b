//! `fac` and `mfac`: factoring (Flynn Hummel, Schonberg & Flynn) with a
//! profiled mean μ and standard deviation σ of the iteration time, LB4OMP's
//! `fac` and `faca` (its `kmp_dispatch.cpp`).
//!
//! Iterations are handed out in batches of `P` equal chunks. With `R_j` the
//! iterations left when batch `j` starts and `b_j = P·σ / (2·μ·√R_j)`:
//! `x_0 = 1 + b_0² + b_0·√(b_0² + 2)`, `x_j = 2 + b_j² + b_j·√(b_j² + 4)`
//! (`j ≥ 1`), and `cs_j = ⌈R_j / (x_j·P)⌉`, at least `k`.
//!
//! The two differ only in what they take `R_{j+1}` to be:
//! - `mfac` (LB4OMP `faca`, lock-free): `R_{j+1} = R_j − P·cs_j` with the
//!   unclamped `cs_j`, every thread recomputing the batches itself.
//! - `fac` (LB4OMP `fac`): LB4OMP serves a batch queue under a mutex and
//!   sizes each batch from the iterations actually left when its first chunk
//!   is taken. Batches are always full there (a batch is `P` consecutive
//!   requests), so that count is `R_j − P·max(cs_j, k)`: Keel reproduces it
//!   without the lock by using the clamped size in the recursion.
//!
//! Both claim with [`Claim::Remaining`]: request `c` belongs to batch
//! `⌊c/P⌋`, and each thread caches its latest `(batch, cs, R)` in its
//! [`ThreadLocal`], catching up batch by batch (amortised: a thread walks
//! each batch once per instance). If the recursion runs out (`R_j ≤ 0`)
//! while iterations remain — possible only when late requests CAS before
//! early ones — the size is computed from the actual remaining count
//! (LB4OMP's `faca` would report no work there).
//!
//! Not reproduced: LB4OMP truncates μ to whole microseconds (`T mu`).
//! Without a profile the plan is `mfac2`'s ([module docs](super)).

use crate::error::PolicyError;

use super::inputs::{Inputs, Profile};
use super::{ceil_size, Claim, Fac2, LoopShape, Plan, Request, Rule, ThreadLocal, TimingBoard};

/// Which factoring variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FacVariant {
    /// `fac`: batches sized from the iterations actually left.
    Fac,
    /// `mfac`: batches sized from the unclamped recursion.
    Mfac,
}

/// The FAC / mFAC schedule for one instance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fac {
    variant: FacVariant,
    n: u64,
    p: u64,
    k: u64,
    /// `P·σ / (2μ)`; `b_j = b_factor / √R_j`.
    b_factor: f64,
}

impl Fac {
    /// Plans `shape` with a usable profile.
    pub fn new(shape: &LoopShape, profile: Profile, variant: FacVariant) -> Self {
        let p = shape.threads as u64;
        Fac {
            variant,
            n: shape.iterations,
            p,
            k: shape.min_chunk(),
            b_factor: p as f64 * profile.sd / (2.0 * profile.mean),
        }
    }

    /// `cs_j = ⌈R / (x·P)⌉` for batch `batch` starting with `r` iterations.
    pub fn batch_size(&self, batch: u64, r: u64) -> u64 {
        let b = self.b_factor / (r as f64).sqrt();
        let x = if batch == 0 {
            1.0 + b * b + b * (b * b + 2.0).sqrt()
        } else {
            2.0 + b * b + b * (b * b + 4.0).sqrt()
        };
        ceil_size(r as f64 / (x * self.p as f64)).max(1)
    }
}

/// The `fac` / `mfac` plan, or `mfac2` without a profile.
pub(crate) fn plan<'a>(
    inputs: &Inputs<'a, '_>,
    variant: FacVariant,
) -> Result<Plan<'a>, PolicyError> {
    Ok(match inputs.profile()? {
        Some(profile) => Plan::Fac(Fac::new(&inputs.shape, profile, variant)),
        None => Plan::Fac2(Fac2::new(&inputs.shape)),
    })
}

impl Rule for Fac {
    fn numbers_requests(&self) -> bool {
        true
    }

    fn claim(&self) -> Claim {
        Claim::Remaining
    }

    fn next_size<B: TimingBoard + ?Sized>(
        &self,
        remaining: u64,
        request: Request,
        local: &mut ThreadLocal,
        _board: &B,
    ) -> u64 {
        if local.size == 0 {
            local.batch = 0;
            local.remaining = self.n;
            local.size = self.batch_size(0, self.n);
        }
        let batch = request.number / self.p;
        while local.batch < batch && local.remaining > 0 {
            let taken = match self.variant {
                FacVariant::Fac => local.size.max(self.k),
                FacVariant::Mfac => local.size,
            };
            local.remaining = local.remaining.saturating_sub(taken.saturating_mul(self.p));
            local.batch += 1;
            if local.remaining > 0 {
                local.size = self.batch_size(local.batch, local.remaining);
            }
        }
        if local.remaining == 0 {
            // The recursion is exhausted: size from what is actually left.
            return self.batch_size(1, remaining).max(self.k);
        }
        local.size.max(self.k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dls::ThreadTiming;

    fn sizes(n: u64, p: usize, k: Option<u64>, profile: Profile, variant: FacVariant) -> Vec<u64> {
        let fac = Fac::new(&LoopShape::new(n, p, k).unwrap(), profile, variant);
        let mut locals = vec![ThreadLocal::default(); p];
        let board: Vec<ThreadTiming> = vec![ThreadTiming::default(); p];
        let (mut remaining, mut out, mut number) = (n, Vec::new(), 0u64);
        while remaining > 0 {
            let thread = (number % p as u64) as usize;
            let request = Request { thread, number };
            let size = fac
                .next_size(remaining, request, &mut locals[thread], &board)
                .min(remaining);
            out.push(size);
            remaining -= size;
            number += 1;
        }
        out
    }

    const PROFILE: Profile = Profile { mean: 1.0, sd: 1.0 };

    #[test]
    fn batches_follow_the_factoring_formulas() {
        // N = 1000, P = 2, μ = σ = 1: b_factor = 1.
        // j=0: b = 1/√1000 = 0.031623, x0 = 1 + 0.001 + 0.031623·√2.001 = 1.045733,
        //      cs = ⌈1000/2.091466⌉ = 479; R1 = 1000 − 958 = 42.
        // j=1: b = 1/√42 = 0.154303, x = 2 + 0.023810 + 0.154303·√4.023810 = 2.333331,
        //      cs = ⌈42/4.666662⌉ = ⌈9.000009⌉ = 10; R2 = 22.
        // j=2: b = 0.213201, x = 2 + 0.045455 + 0.213201·2.011329 = 2.474270,
        //      cs = ⌈22/4.94854⌉ = 5; R3 = 12.
        // j=3: b = 0.288675, x = 2.672650, cs = ⌈12/5.3453⌉ = 3; R4 = 6.
        // j=4: b = 0.408248, x = 3.0, cs = 1; then ones.
        let got = sizes(1000, 2, None, PROFILE, FacVariant::Mfac);
        assert_eq!(&got[..10], &[479, 479, 10, 10, 5, 5, 3, 3, 1, 1]);
        assert_eq!(got.iter().sum::<u64>(), 1000);
    }

    #[test]
    fn fac_recurses_on_clamped_batches_and_mfac_on_unclamped_ones() {
        // k = 8 clamps batch 2 (cs 5 → 8). FAC's recursion then assumes
        // 22 − 2·8 = 6 iterations left (what LB4OMP's queue would see),
        // mFAC's 22 − 2·5 = 12.
        let fac = Fac::new(
            &LoopShape::new(1000, 2, Some(8)).unwrap(),
            PROFILE,
            FacVariant::Fac,
        );
        let board: Vec<ThreadTiming> = Vec::new();
        let mut local = ThreadLocal::default();
        let request = |number| Request { thread: 0, number };
        assert_eq!(fac.next_size(1000, request(0), &mut local, &board), 479);
        assert_eq!(fac.next_size(42, request(2), &mut local, &board), 10);
        assert_eq!(fac.next_size(22, request(4), &mut local, &board), 8);
        assert_eq!((local.batch, local.remaining), (2, 22));
        fac.next_size(6, request(6), &mut local, &board);
        assert_eq!(local.remaining, 6, "FAC subtracts the clamped 2·8");
        let mfac = Fac::new(
            &LoopShape::new(1000, 2, Some(8)).unwrap(),
            PROFILE,
            FacVariant::Mfac,
        );
        let mut local = ThreadLocal::default();
        mfac.next_size(6, request(6), &mut local, &board);
        assert_eq!(local.remaining, 12, "mFAC subtracts the unclamped 2·5");
    }

    #[test]
    fn zero_variance_gives_a_static_first_batch() {
        let profile = Profile { mean: 1.0, sd: 0.0 };
        let got = sizes(100, 4, None, profile, FacVariant::Fac);
        assert_eq!(got, vec![25, 25, 25, 25]);
    }

    #[test]
    fn an_exhausted_recursion_still_hands_out_what_remains() {
        let fac = Fac::new(
            &LoopShape::new(100, 2, None).unwrap(),
            PROFILE,
            FacVariant::Mfac,
        );
        let board: Vec<ThreadTiming> = Vec::new();
        let mut local = ThreadLocal::default();
        // Request 1000 is far beyond the batches that cover N.
        let size = fac.next_size(
            37,
            Request {
                thread: 1,
                number: 1000,
            },
            &mut local,
            &board,
        );
        assert!(size >= 1 && local.remaining == 0);
    }
}
