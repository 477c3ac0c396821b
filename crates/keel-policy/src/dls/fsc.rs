//! `fsc`: fixed-size chunking (Kruskal & Weiss), LB4OMP's `fsc`
//! (its `kmp_dispatch.cpp`).
//!
//! One size for the whole instance,
//! `cs = ⌊(√2·N·h / (σ·P·√(ln P)))^{2/3}⌋`, then at least `k` — the size that
//! balances the overhead `h` of one more chunk against the expected idle
//! time from the variance `σ²` of iteration times. The chunk is handed out
//! like dynamic's ([`Ss`]): one `fetch_add` on the chunk index.
//!
//! Inputs: σ from [`Concept::IterationProfile`](crate::Concept::IterationProfile)
//! and `h` from [`Concept::SchedulingOverhead`](crate::Concept::SchedulingOverhead)
//! (both in seconds; only their ratio matters). Without a profile the plan
//! is `mfac2`'s (the fallback table is in the [module docs](super)); without
//! an overhead, [`DEFAULT_OVERHEAD`](super::DEFAULT_OVERHEAD).
//!
//! Guard (not in LB4OMP): the size is capped at `⌈N/P⌉`. The formula grows
//! without bound as σ → 0 and divides by zero for `P = 1` (`ln 1 = 0`);
//! its limit there is a static schedule, and no thread ever needs more than
//! its static share.

use crate::error::PolicyError;

use super::inputs::Inputs;
use super::{floor_size, Fac2, LoopShape, Plan, Ss};

/// FSC's chunk size for `shape`, σ (`sd`) and overhead `h`, in seconds.
pub fn fsc_chunk(shape: &LoopShape, sd: f64, overhead: f64) -> u64 {
    let (n, p) = (shape.iterations as f64, shape.threads as f64);
    let ratio = (2f64.sqrt() * n * overhead) / (sd * p * p.ln().sqrt());
    let size = floor_size(ratio.powf(2.0 / 3.0));
    let share = shape.iterations.div_ceil(shape.threads as u64);
    size.min(share).max(shape.min_chunk()).max(1)
}

/// The `fsc` plan: fixed chunks, or `mfac2` without a profile.
pub(crate) fn plan<'a>(inputs: &Inputs<'a, '_>) -> Result<Plan<'a>, PolicyError> {
    let shape = &inputs.shape;
    let Some(profile) = inputs.profile()? else {
        return Ok(Plan::Fac2(Fac2::new(shape)));
    };
    let size = fsc_chunk(shape, profile.sd, inputs.overhead()?);
    Ok(Plan::Ss(Ss::with_size(shape.iterations, size)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_follows_the_formula() {
        // N = 10⁶, P = 4, h = 1 µs, σ = 10 µs:
        // √2·10⁶·10⁻⁶ / (10⁻⁵·4·√ln 4) = 1.41421 / (4·10⁻⁵·1.17741) = 30028.1;
        // 30028.1^(2/3) = 966.09 → 966.
        let shape = LoopShape::new(1_000_000, 4, None).unwrap();
        assert_eq!(fsc_chunk(&shape, 1e-5, 1e-6), 966);
        // k is a minimum.
        let shape = LoopShape::new(1_000_000, 4, Some(2000)).unwrap();
        assert_eq!(fsc_chunk(&shape, 1e-5, 1e-6), 2000);
    }

    #[test]
    fn degenerate_inputs_stay_in_range() {
        // σ = 0 or P = 1: the static share; h = 0: the minimum chunk.
        let shape = LoopShape::new(1000, 4, None).unwrap();
        assert_eq!(fsc_chunk(&shape, 0.0, 1e-6), 250);
        assert_eq!(fsc_chunk(&shape, 1e-5, 0.0), 1);
        assert_eq!(fsc_chunk(&shape, 0.0, 0.0), 1);
        let one = LoopShape::new(1000, 1, None).unwrap();
        assert_eq!(fsc_chunk(&one, 1e-5, 1e-6), 1000);
        let empty = LoopShape::new(0, 3, None).unwrap();
        assert_eq!(fsc_chunk(&empty, 1e-5, 1e-6), 1);
    }
}
