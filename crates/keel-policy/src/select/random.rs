//! RandomSel (paper §3.3.1, Fig. 2; released code: `autoRandomSearch` in
//! LB4OMP's `kmp_dispatch.cpp`).
//!
//! At every instance draw `RND ~ U[0, 1)`; if the jump probability
//! `P_j = LIB/10` (LIB of the previous instance, in percent) exceeds it,
//! pick a schedule uniformly from the twelve (the current one may be picked
//! again), else keep the current one. The first instance has no LIB yet:
//! the released code seeds with LIB = −1 and computes `P_j = 2`, so it always
//! jumps. LIB ≥ 10 % always jumps, LIB = 0 never does. RandomSel never stops
//! (the re-trigger rule has nothing to re-open).
//!
//! Keel draws from a seeded ChaCha8 stream instead of C's `rand()`: the same
//! seed and stream give the same schedule sequence for the same LIBs.
//!
//! The jump probability is LIB/10, so a 5 % imbalance jumps half the time:
//!
//! ```
//! use keel_policy::select::RandomSel;
//! assert_eq!(RandomSel::jump_probability(Some(5.0)), 0.5);
//! ```

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{Measurement, Phase, Select, PORTFOLIO_LEN};

/// Divides LIB (percent) into the jump probability: `P_j = LIB / 10`, the
/// paper's "arbitrary constant" 10.
pub const JUMP_LIB_DIVISOR: f64 = 10.0;

/// The jump probability before any measurement (the code's LIB = −1 case).
pub const FIRST_JUMP_PROBABILITY: f64 = 2.0;

/// RandomSel's state for one loop.
#[derive(Clone, Debug)]
pub struct RandomSel {
    rng: ChaCha8Rng,
    current: Option<usize>,
    last_lib: Option<f64>,
}

impl RandomSel {
    /// A fresh state drawing from ChaCha8 seeded with `seed`, on `stream`.
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        RandomSel {
            rng,
            current: None,
            last_lib: None,
        }
    }

    /// `P_j` for the previous instance's LIB (`None` before the first).
    pub fn jump_probability(lib: Option<f64>) -> f64 {
        lib.map_or(FIRST_JUMP_PROBABILITY, |lib| lib / JUMP_LIB_DIVISOR)
    }

    /// The next `U[0, 1)` draw (53 random bits).
    fn uniform(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A uniform portfolio index (multiply-shift of 32 random bits; its
    /// bias is below 3·10⁻⁹).
    fn index(&mut self) -> usize {
        ((u64::from(self.rng.next_u32()) * PORTFOLIO_LEN as u64) >> 32) as usize
    }
}

impl Select for RandomSel {
    fn next(&mut self) -> (usize, Phase) {
        let p_jump = Self::jump_probability(self.last_lib);
        let rnd = self.uniform();
        match self.current {
            Some(current) if p_jump <= rnd => (current, Phase::Keep),
            _ => {
                let index = self.index();
                self.current = Some(index);
                (index, Phase::Jump)
            }
        }
    }

    fn observe(&mut self, measurement: &Measurement<'_>) {
        self.last_lib = Some(measurement.lib);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The draws RandomSel must make, replayed from the same ChaCha stream.
    struct Replay(ChaCha8Rng);

    impl Replay {
        fn new(seed: u64, stream: u64) -> Self {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(stream);
            Replay(rng)
        }
        fn uniform(&mut self) -> f64 {
            (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
        }
        fn index(&mut self) -> usize {
            ((u64::from(self.0.next_u32()) * 12) >> 32) as usize
        }
    }

    #[test]
    fn step_by_step_against_the_draws() {
        let libs = [3.0, 0.0, 12.0, 7.5, 9.9, 0.5, 10.0, 4.0, 2.0, 6.0];
        let mut sel = RandomSel::new(42, 0);
        let mut replay = Replay::new(42, 0);
        // First instance: P_j = 2 > any draw, so it jumps.
        let rnd = replay.uniform();
        assert!(2.0 > rnd);
        let first = replay.index();
        assert_eq!(sel.next(), (first, Phase::Jump));
        let mut current = first;
        for lib in libs {
            sel.observe(&Measurement::new(0.01, lib));
            let rnd = replay.uniform();
            let expected = if lib / 10.0 > rnd {
                current = replay.index();
                (current, Phase::Jump)
            } else {
                (current, Phase::Keep)
            };
            assert_eq!(sel.next(), expected, "lib {lib}");
        }
    }

    #[test]
    fn lib_zero_never_jumps_and_lib_ten_always_does() {
        let mut sel = RandomSel::new(7, 3);
        let (first, phase) = sel.next();
        assert_eq!(phase, Phase::Jump);
        for _ in 0..200 {
            sel.observe(&Measurement::new(0.02, 0.0));
            assert_eq!(sel.next(), (first, Phase::Keep));
        }
        for _ in 0..200 {
            sel.observe(&Measurement::new(0.02, 10.0));
            assert_eq!(sel.next().1, Phase::Jump);
        }
    }

    #[test]
    fn jump_frequency_is_lib_over_ten_and_indices_are_uniform() {
        let mut sel = RandomSel::new(1, 0);
        sel.next();
        let (mut jumps, mut seen) = (0, [0u32; 12]);
        let n = 20_000;
        for _ in 0..n {
            sel.observe(&Measurement::new(0.02, 3.0));
            let (index, phase) = sel.next();
            if phase == Phase::Jump {
                jumps += 1;
                seen[index] += 1;
            }
        }
        let rate = jumps as f64 / n as f64;
        assert!((rate - 0.3).abs() < 0.02, "{rate}");
        for count in seen {
            let share = count as f64 / jumps as f64;
            assert!((share - 1.0 / 12.0).abs() < 0.02, "{seen:?}");
        }
    }

    #[test]
    fn seeded_and_reproducible_per_stream() {
        let run = |seed, stream| {
            let mut sel = RandomSel::new(seed, stream);
            (0..50)
                .map(|_| {
                    let choice = sel.next().0;
                    sel.observe(&Measurement::new(0.02, 6.0));
                    choice
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(run(5, 1), run(5, 1));
        assert_ne!(run(5, 1), run(5, 2));
        assert_ne!(run(5, 1), run(6, 1));
    }
}
