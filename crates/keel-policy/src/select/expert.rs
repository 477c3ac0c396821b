//! ExpertSel (paper §3.3.3, Fig. 4–5, Table 1, Algorithm 1; released code
//! `autoFuzzySearch` in LB4OMP's `kmp_dispatch.cpp`). The fuzzy system itself is in
//! [`super::membership`].
//!
//! - Instance 1 runs STATIC, to measure the loop (the code reaches it by
//!   evaluating Table 1 on `T = L = −1`: Short = Low = 1, pure Simple).
//! - Instance 2 runs Table 1's choice from instance 1's `T_par` and LIB.
//! - Instance `k ≥ 3` runs Algorithm 1's adjustment of instance `k − 1`'s
//!   schedule from `T_par`, LIB of instance `k − 1` and their changes from
//!   instance `k − 2` (`ΔT` in percent of the newer time, `ΔL` in points).
//!
//! ExpertSel decides at every instance and never stops. Its time sets are
//! absolute (Short below 10–30 ms, Long above 1–10 s): the 30 ms steps of
//! the Mandelbrot zoom benchmark count as partly Short, which pushes towards STATIC.
//!
//! STATIC first, then Table 1's choice from what STATIC measured:
//!
//! ```
//! use keel_policy::select::{ExpertSel, Measurement, Phase, Select};
//! let mut sel = ExpertSel::new();
//! assert_eq!(sel.next(), (0, Phase::First));
//! // 100 ms at LIB 3 %: Table 1 says pure Moderate, portfolio index 4.
//! sel.observe(&Measurement::new(0.100, 3.0));
//! assert_eq!(sel.next(), (4, Phase::Initial));
//! ```

use super::membership::{adjusted_choice, initial_choice, AdjustInputs};
use super::{Measurement, Phase, Select};

/// ExpertSel's state for one loop.
#[derive(Clone, Debug, Default)]
pub struct ExpertSel {
    /// The schedule of the last decided instance.
    current: usize,
    /// Instances measured so far.
    observed: u64,
    /// `(T_par, LIB)` of the last measured instance.
    last: (f64, f64),
    /// `(T_par, LIB)` of the one before.
    previous: (f64, f64),
}

impl ExpertSel {
    /// A fresh state.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Select for ExpertSel {
    fn next(&mut self) -> (usize, Phase) {
        let (index, phase) = match self.observed {
            0 => (0, Phase::First),
            1 => (initial_choice(self.last.0, self.last.1), Phase::Initial),
            _ => {
                let inputs = AdjustInputs::from_instances(self.last, self.previous);
                (adjusted_choice(self.current, &inputs), Phase::Adjust)
            }
        };
        self.current = index;
        (index, phase)
    }

    fn observe(&mut self, measurement: &Measurement<'_>) {
        self.previous = self.last;
        self.last = (measurement.t_par, measurement.lib);
        self.observed += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(sel: &mut ExpertSel, t_par: f64, lib: f64) -> (usize, Phase) {
        sel.observe(&Measurement::new(t_par, lib));
        sel.next()
    }

    #[test]
    fn static_then_table_1_then_algorithm_1() {
        let mut sel = ExpertSel::new();
        assert_eq!(sel.next(), (0, Phase::First));
        // STATIC took 100 ms at LIB 3 %: Table 1 says pure Moderate → 4.
        assert_eq!(step(&mut sel, 0.100, 3.0), (4, Phase::Initial));
        // Index 4 took 100 ms at LIB 3 %: no change, stay at 4.
        assert_eq!(step(&mut sel, 0.100, 3.0), (4, Phase::Adjust));
        // LIB 3 → 8 with the time flat: more aggressive, 4 + 4 = 8.
        assert_eq!(step(&mut sel, 0.100, 8.0), (8, Phase::Adjust));
        // Time 100 → 110 ms with LIB flat at 8: less aggressive, 8 − 4 = 4.
        assert_eq!(step(&mut sel, 0.110, 8.0), (4, Phase::Adjust));
        // Time back to 100 ms (ΔT = −10 %: Improved) and LIB 8 → 3
        // (ΔL = −5: Improved): Same = Improved(ΔT) = 1; Less =
        // NoChange(ΔT) AND Improved(ΔL) = 0: stay.
        assert_eq!(step(&mut sel, 0.100, 3.0), (4, Phase::Adjust));
    }

    #[test]
    fn a_30_ms_loop_with_high_imbalance_is_pulled_towards_static() {
        // The failure mode: T = 30 ms is "short" at its edge
        // (Short(0.03) = 0); at 25 ms Short = 0.25 keeps pushing "less".
        let mut sel = ExpertSel::new();
        sel.next();
        let first = step(&mut sel, 0.025, 20.0).0;
        // Simple 0.25 (A 0.1875), Moderate min(0.25, 1) (A 0.9375): 3.33 → 3.
        assert_eq!(first, 3);
        let mut current = first;
        for _ in 0..5 {
            current = step(&mut sel, 0.025, 20.0).0;
        }
        // Same = 1 (no change), Less = 0.25: ΔDLS = −4·0.6875/2.1875 =
        // −1.26 per instance → 2, then 1, then 0 and stays at STATIC.
        assert_eq!(current, 0);
    }
}
