//! `bold`: Hagerup's BOLD strategy, LB4OMP's `bold` (a transcription of
//! LB4OMP's algorithms 1 and 2 in its `kmp_dispatch.cpp`).
//!
//! At plan time, from the profile (μ, σ) and the overhead `h`:
//! `a = 2(σ/μ)²`, `b = 8a·ln(8a)`, `ln_b = ln b` (if `b > 0`),
//! `c₁ = h/(μ·ln 2)`, `c₂ = √(2π)·c₁`, `c₃ = ln c₂`. At each request, with
//! `R` left, `q = R/P` (size 1 if `q ≤ 1`), `r = max(R, Nₑ)`, `t̄ = r/P`,
//! `v = q/(b+q)`, `d = R/(1 + 1/ln q − v)`: if `d ≤ c₂` the size is `t̄`,
//! else `s = a(ln d − c₃)(1 + M/(r·P))`, `w = ln(v·ln q) + ln_b`
//! (`ln ln q` if `b ≤ 0`) and the size is
//! `min(t̄, t̄ + s/2 − √(s(t̄ + s/4)) + max(0, c₁w))`, at least `k`.
//!
//! **Approximation.** LB4OMP keeps two shared estimates updated from
//! request timestamps: `M`, the iterations not yet finished, and `Nₑ`, the
//! estimated unexecuted work (in-flight chunks progress at
//! `cs/(cs·μ + h)` iterations per unit time since their start). Keel's
//! schedules read no clock, so Keel estimates both from the iterations in
//! flight instead: when a thread asks again its previous chunk is done and
//! the `P − 1` others are each, on average, halfway through a chunk about
//! the size this thread was handed last time (all sizes come from the same
//! shrinking `R`). With `f = (P − 1)·previous` (kept in [`ThreadLocal`]):
//! `M ≈ min(N, R + f)` and `Nₑ ≈ min(N, R + f/2)`; on a thread's first
//! request `M = Nₑ = R`, matching BOLD's initial `M = Nₑ = N`. The
//! approximation only moves `t̄` (the cap) and the `M/(r·P)` factor; the
//! closed form, its constants and the minimum chunk are BOLD's.
//!
//! Inputs: profile (→ `mfac2` plan when absent, [module docs](super)) and
//! overhead (→ [`DEFAULT_OVERHEAD`](super::DEFAULT_OVERHEAD)). The
//! expression `t̄ + s/2 − √(s(t̄+s/4))` is evaluated as the equal
//! `t̄²/(t̄ + s/2 + √(s(t̄+s/4)))`, which does not cancel for large `s` and
//! tends to 0 when `h = 0` makes `s` infinite.

use std::f64::consts::{LN_2, PI};

use crate::error::PolicyError;

use super::inputs::{Inputs, Profile};
use super::{floor_size, Claim, Fac2, LoopShape, Plan, Request, Rule, ThreadLocal, TimingBoard};

/// BOLD for one instance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bold {
    n: u64,
    p: f64,
    k: u64,
    a: f64,
    b: f64,
    ln_b: f64,
    c1: f64,
    c2: f64,
    c3: f64,
}

impl Bold {
    /// Plans `shape` with a usable profile and overhead `h` (seconds).
    pub fn new(shape: &LoopShape, profile: Profile, overhead: f64) -> Self {
        let ratio = profile.sd / profile.mean;
        let a = 2.0 * ratio * ratio;
        // 8a·ln(8a) → 0 as a → 0; avoid 0·(−∞).
        let b = if a > 0.0 {
            8.0 * a * (8.0 * a).ln()
        } else {
            0.0
        };
        let ln_b = if b > 0.0 { b.ln() } else { 0.0 };
        let c1 = overhead / (profile.mean * LN_2);
        let c2 = (2.0 * PI).sqrt() * c1;
        Bold {
            n: shape.iterations,
            p: shape.threads as f64,
            k: shape.min_chunk(),
            a,
            b,
            ln_b,
            c1,
            c2,
            c3: c2.ln(),
        }
    }

    /// BOLD's algorithm 2 for `remaining` iterations with `in_flight`
    /// iterations estimated to be executing elsewhere.
    pub fn size(&self, remaining: u64, in_flight: f64) -> u64 {
        let big_r = remaining as f64;
        let q = big_r / self.p;
        if q <= 1.0 {
            return self.k.max(1);
        }
        let n = self.n as f64;
        let m = (big_r + in_flight).min(n);
        let n_e = (big_r + in_flight / 2.0).min(n);
        let r = big_r.max(n_e);
        let t = r / self.p;
        let ln_q = q.ln();
        let v = q / (self.b + q);
        let d = big_r / (1.0 + 1.0 / ln_q - v);
        let size = if d <= self.c2 {
            t
        } else {
            let s = if self.a > 0.0 {
                self.a * (d.ln() - self.c3) * (1.0 + m / (r * self.p))
            } else {
                0.0
            };
            let w = if self.b > 0.0 {
                (v * ln_q).ln() + self.ln_b
            } else {
                ln_q.ln()
            };
            let tapered = t * t / (t + s / 2.0 + (s * (t + s / 4.0)).sqrt());
            (tapered + (self.c1 * w).max(0.0)).min(t)
        };
        floor_size(size).max(self.k).max(1)
    }
}

/// The `bold` plan, or `mfac2` without a profile.
pub(crate) fn plan<'a>(inputs: &Inputs<'a, '_>) -> Result<Plan<'a>, PolicyError> {
    Ok(match inputs.profile()? {
        Some(profile) => Plan::Bold(Bold::new(&inputs.shape, profile, inputs.overhead()?)),
        None => Plan::Fac2(Fac2::new(&inputs.shape)),
    })
}

impl Rule for Bold {
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
        // A CAS retry repeats the request: only a new request number moves
        // the last size into `previous`.
        let marker = request.number.wrapping_add(1);
        if local.batch != marker {
            local.previous = local.size;
            local.batch = marker;
        }
        let in_flight = (self.p - 1.0) * local.previous as f64;
        local.size = self.size(remaining, in_flight);
        local.size
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dls::ThreadTiming;

    const SHAPE: (u64, usize) = (10_000, 4);

    fn bold(sd: f64, h: f64, k: Option<u64>) -> Bold {
        let shape = LoopShape::new(SHAPE.0, SHAPE.1, k).unwrap();
        Bold::new(&shape, Profile { mean: 1e-3, sd }, h)
    }

    #[test]
    fn first_request_matches_a_hand_evaluation() {
        // μ = 1 ms, σ = 1 ms, h = 0.1 ms, N = R = 10⁴, P = 4, nothing in flight.
        // a = 2, b = 16·ln 16 = 44.3614, ln_b = 3.79237;
        // c₁ = 10⁻⁴/(10⁻³·ln 2) = 0.144270, c₂ = 0.361630, c₃ = −1.017134.
        // q = 2500, ln q = 7.824046, v = 2500/2544.3614 = 0.982565,
        // d = 10⁴/(1 + 0.127811 − 0.982565) = 68848.57;
        // s = 2·(ln d − c₃)(1 + 10⁴/(10⁴·4)) = 2·(11.139665 + 1.017134)·1.25 = 30.39200;
        // t̄ = 2500; t̄ + s/2 − √(s(t̄ + s/4)) = 2515.19600 − 276.06323 = 2239.13277;
        // w = ln(0.982565·7.824046) + 3.79237 = 5.83198, c₁w = 0.84138;
        // min(2500, 2239.97) → ⌊⌋ = 2239.
        assert_eq!(bold(1e-3, 1e-4, None).size(10_000, 0.0), 2239);
    }

    #[test]
    fn no_variance_is_guided_and_k_is_a_minimum() {
        assert_eq!(bold(0.0, 1e-4, None).size(10_000, 0.0), 2500);
        assert_eq!(bold(1e-3, 1e-4, Some(3000)).size(10_000, 0.0), 3000);
        // q <= 1: one iteration (or k).
        assert_eq!(bold(1e-3, 1e-4, None).size(4, 0.0), 1);
        // h = 0: s is infinite, the tapered part vanishes: the minimum.
        assert_eq!(bold(1e-3, 0.0, None).size(10_000, 0.0), 1);
    }

    #[test]
    fn work_in_flight_raises_the_cap_and_retries_keep_the_previous_size() {
        let plan = bold(1e-3, 1e-4, None);
        let alone = plan.size(5_000, 0.0);
        let crowded = plan.size(5_000, 3.0 * 2_000.0);
        assert!(crowded > alone, "{crowded} vs {alone}");

        let board: Vec<ThreadTiming> = Vec::new();
        let mut local = ThreadLocal::default();
        let request = |number| Request { thread: 0, number };
        let first = plan.next_size(10_000, request(0), &mut local, &board);
        assert_eq!((local.previous, first), (0, 2239));
        plan.next_size(6_000, request(5), &mut local, &board);
        assert_eq!(local.previous, 2239);
        plan.next_size(5_000, request(5), &mut local, &board); // CAS retry
        assert_eq!(local.previous, 2239);
    }
}
