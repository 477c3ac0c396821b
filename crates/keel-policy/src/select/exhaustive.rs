//! ExhaustiveSel (paper §3.3.2, Fig. 3, and the re-trigger of §3.4.4;
//! released code: `autoExhaustiveSearch` in LB4OMP's `kmp_dispatch.cpp`, with
//! T_par and LIB measured as its loop timers measure them).
//!
//! One trial per instance, in portfolio order 0, 1, …, 11 (twelve
//! instances), keeping the fastest `T_par` (time only; LIB is not compared);
//! then the fastest runs at every later instance. When an instance's LIB
//! exceeds the previous instance's by more than
//! [`RETRIGGER_LIB_POINTS`] percentage points, the search re-opens: twelve
//! more trials starting after the current best (as the code's
//! `cDLS = (cDLS + 1) mod 12` does), then the fastest again.
//!
//! Bookkeeping as in the code: each decision during a search first records
//! the instance just measured as the best if it is faster than the best (or
//! no best exists). Keel differs in one documented point: a re-trigger
//! starts from a **fresh best** (the released code keeps the stale
//! `bestTime` of the earlier sweep, so a schedule measured
//! under the old conditions can win forever). With a fresh best, the
//! instance that triggered — the old best under the new conditions — is
//! the re-opened search's first candidate, exactly as the code's
//! "no best yet" branch would take it.
//!
//! One trial per schedule, then the fastest for good:
//!
//! ```
//! use keel_policy::select::{ExhaustiveSel, Measurement, Phase, Select};
//! let mut sel = ExhaustiveSel::new();
//! for i in 0..12 {
//!     assert_eq!(sel.next(), (i, Phase::Explore));
//!     let t_par = if i == 3 { 0.010 } else { 0.020 };
//!     sel.observe(&Measurement::new(t_par, 5.0));
//! }
//! assert_eq!(sel.next(), (3, Phase::Exploit));
//! assert_eq!(sel.best(), Some((3, 0.010)));
//! ```

use super::{Measurement, Phase, Select, PORTFOLIO_LEN};

/// A rise of LIB by more than this many percentage points from one
/// instance to the next re-opens the search (§3.4.4: "10% in the current
/// implementation").
pub const RETRIGGER_LIB_POINTS: f64 = 10.0;

/// ExhaustiveSel's state for one loop (the code's `LoopData` fields).
#[derive(Clone, Debug, Default)]
pub struct ExhaustiveSel {
    /// `cDLS`: the schedule of the last decided instance (`None` = −1).
    current: Option<usize>,
    /// `bestDLS`, `bestTime` (`None` = −1).
    best: Option<(usize, f64)>,
    /// `searchTrials`.
    trials: usize,
    /// `autoSearch`: on until the sweep ends, again after a re-trigger.
    searching: bool,
    /// Whether the current search was re-opened by the re-trigger.
    retriggered: bool,
    /// `cTime`, `cLB` of the last measured instance.
    last: Option<(f64, f64)>,
}

impl ExhaustiveSel {
    /// A fresh state: searching, no best.
    pub fn new() -> Self {
        ExhaustiveSel {
            searching: true,
            ..Default::default()
        }
    }

    /// The best schedule and its `T_par` so far, if any.
    pub fn best(&self) -> Option<(usize, f64)> {
        self.best
    }

    /// Whether a search is under way.
    pub fn searching(&self) -> bool {
        self.searching
    }
}

impl Select for ExhaustiveSel {
    fn next(&mut self) -> (usize, Phase) {
        if !self.searching {
            let best = self.best.map_or(0, |(index, _)| index);
            self.current = Some(best);
            return (best, Phase::Exploit);
        }
        if let (Some(current), Some((time, _))) = (self.current, self.last) {
            if self.best.is_none_or(|(_, best)| time < best) {
                self.best = Some((current, time));
            }
        }
        if self.trials < PORTFOLIO_LEN {
            let next = self.current.map_or(0, |c| (c + 1) % PORTFOLIO_LEN);
            self.current = Some(next);
            self.trials += 1;
            let phase = if self.retriggered {
                Phase::Reexplore
            } else {
                Phase::Explore
            };
            return (next, phase);
        }
        let best = self.best.map_or(0, |(index, _)| index);
        self.current = Some(best);
        self.trials = 0;
        self.searching = false;
        (best, Phase::Exploit)
    }

    fn observe(&mut self, measurement: &Measurement<'_>) {
        let previous_lib = self.last.map(|(_, lib)| lib);
        self.last = Some((measurement.t_par, measurement.lib));
        let rose = previous_lib.is_some_and(|lib| measurement.lib > lib + RETRIGGER_LIB_POINTS);
        if rose && !self.searching {
            self.searching = true;
            self.retriggered = true;
            self.best = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(sel: &mut ExhaustiveSel, t_par: f64, lib: f64) -> (usize, Phase) {
        sel.observe(&Measurement::new(t_par, lib));
        sel.next()
    }

    /// Instance times for a sweep where schedule `i` takes `times[i]`.
    const TIMES: [f64; 12] = [
        0.050, 0.031, 0.040, 0.035, 0.036, 0.033, 0.030, 0.045, 0.046, 0.047, 0.048, 0.032,
    ];

    #[test]
    fn sweeps_in_portfolio_order_then_keeps_the_fastest() {
        let mut sel = ExhaustiveSel::new();
        assert_eq!(sel.next(), (0, Phase::Explore));
        for (i, &t) in TIMES.iter().enumerate().take(11) {
            assert_eq!(step(&mut sel, t, 5.0), (i + 1, Phase::Explore));
        }
        // The 13th decision records trial 12 and picks the fastest (6).
        assert_eq!(step(&mut sel, TIMES[11], 5.0), (6, Phase::Exploit));
        assert_eq!(sel.best(), Some((6, 0.030)));
        assert!(!sel.searching());
        // LIB may rise by exactly 10 points without re-triggering.
        for lib in [5.0, 15.0, 14.0, 3.0] {
            assert_eq!(step(&mut sel, 0.029, lib), (6, Phase::Exploit));
        }
        // Time alone never re-triggers.
        assert_eq!(step(&mut sel, 0.300, 3.0), (6, Phase::Exploit));
    }

    #[test]
    fn a_lib_rise_re_opens_the_sweep_after_the_best_with_a_fresh_best() {
        let mut sel = ExhaustiveSel::new();
        sel.next();
        for &t in &TIMES {
            sel.next_after(t, 2.0);
        }
        assert_eq!(sel.best(), Some((6, 0.030)));
        // LIB 2 → 12.5: re-trigger. The triggering instance (schedule 6
        // under the new conditions, 0.080 s) is the fresh best's start.
        assert_eq!(step(&mut sel, 0.080, 12.5), (7, Phase::Reexplore));
        assert_eq!(sel.best(), Some((6, 0.080)));
        // New conditions: every schedule is slower than its old time, so a
        // stale best (0.030) would win again; the fresh one does not.
        let new_times = |i: usize| {
            if i == 2 {
                0.060
            } else {
                0.090 + i as f64 * 1e-3
            }
        };
        let mut expected = 7;
        for _ in 0..11 {
            let ran = expected;
            expected = (expected + 1) % 12;
            assert_eq!(
                step(&mut sel, new_times(ran), 3.0),
                (expected, Phase::Reexplore)
            );
        }
        // Twelve re-opened trials: 7..11, 0..6 (6 twice: trigger + trial).
        assert_eq!(expected, 6);
        assert_eq!(step(&mut sel, new_times(6), 3.0), (2, Phase::Exploit));
        assert_eq!(sel.best(), Some((2, 0.060)));
    }

    #[test]
    fn lib_rises_during_a_search_do_not_restart_it() {
        let mut sel = ExhaustiveSel::new();
        sel.next();
        let mut lib = 0.0;
        for (i, &t) in TIMES.iter().enumerate().take(11) {
            lib += 15.0 * if i % 2 == 0 { 1.0 } else { -1.0 };
            assert_eq!(step(&mut sel, t, lib).0, i + 1);
        }
    }

    impl ExhaustiveSel {
        fn next_after(&mut self, t_par: f64, lib: f64) -> (usize, Phase) {
            step(self, t_par, lib)
        }
    }
}
