//! ExpertSel's fuzzy system (paper §3.3.3, Fig. 5, Table 1, Algorithm 1):
//! every membership function, rule and defuzzification constant exactly as
//! the released code has them (`autoFuzzySearch` and its membership
//! functions in LB4OMP's `kmp_dispatch.cpp`), including its
//! imperfections, so ExpertSel's behaviour reproduces:
//!
//! - the slopes are the code's rounded ones (`0.166L − 0.64`, `−0.33ΔL`,
//!   `0.66ΔL + 2`, `−0.11T + 1.11`), so some sets jump slightly at a
//!   breakpoint and exceed 1 just below it (L High reaches 1.02 near 10 %);
//! - the initial defuzzification's aggressive area is 8, the code's integer
//!   division `((14−4)+(14−7))/2`;
//! - the initial output is truncated (`(int)`), the adjusted one rounded.
//!
//! Membership functions are defined on closed intervals (the code falls off
//! the end of some at T = 10 s, L = 5 %, ΔT = 1 %, which is undefined
//! behaviour in C++): each is a list of [`Piece`]s and the **first** piece
//! whose interval holds `x` gives the value, 0 outside all pieces. Where two
//! listed closed intervals share an endpoint the earlier one wins (this
//! matters only for ΔL NoChange at −1.5, 1.01 rather than 1).
//!
//! Inputs: `T` = `T_par` in **seconds**, `L` = LIB in percent,
//! `ΔT = (T_par − T_par,prev)/T_par · 100` (percent of the current time),
//! `ΔL = LIB − LIB_prev` (percentage points). MIN is AND, MAX is OR.
//!
//! Table 1 on the measurements of a first (STATIC) instance:
//!
//! ```
//! use keel_policy::select::membership::{initial_choice, initial_rules};
//! // 100 ms at LIB 3 %: the loop is neither short nor long, and balanced enough.
//! let strengths = initial_rules(0.100, 3.0);
//! assert_eq!(strengths.aggressive, 0.0);
//! assert_eq!(initial_choice(0.100, 3.0), 4);
//! ```

use super::PORTFOLIO_LEN;

/// One linear piece `slope·x + intercept` of a membership function on an
/// interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Piece {
    /// Lower end (may be −∞).
    pub lo: f64,
    /// Whether `lo` belongs to the interval.
    pub lo_closed: bool,
    /// Upper end (may be +∞).
    pub hi: f64,
    /// Whether `hi` belongs to the interval.
    pub hi_closed: bool,
    /// Slope.
    pub slope: f64,
    /// Intercept.
    pub intercept: f64,
}

impl Piece {
    fn holds(&self, x: f64) -> bool {
        let above = if self.lo_closed {
            x >= self.lo
        } else {
            x > self.lo
        };
        let below = if self.hi_closed {
            x <= self.hi
        } else {
            x < self.hi
        };
        above && below
    }
}

const fn piece(
    lo: f64,
    lo_closed: bool,
    hi: f64,
    hi_closed: bool,
    slope: f64,
    intercept: f64,
) -> Piece {
    Piece {
        lo,
        lo_closed,
        hi,
        hi_closed,
        slope,
        intercept,
    }
}

const NEG: f64 = f64::NEG_INFINITY;
const POS: f64 = f64::INFINITY;

/// A piecewise-linear membership function.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Membership {
    /// `input.set`, e.g. `T.short`.
    pub name: &'static str,
    /// The pieces, first match wins.
    pub pieces: &'static [Piece],
}

impl Membership {
    /// The membership of `x` (0 outside every piece, and for NaN).
    pub fn eval(&self, x: f64) -> f64 {
        self.pieces
            .iter()
            .find(|p| p.holds(x))
            // A flat piece is its intercept even at ±∞ (0·∞ is NaN).
            .map_or(0.0, |p| {
                if p.slope == 0.0 {
                    p.intercept
                } else {
                    p.slope * x + p.intercept
                }
            })
    }
}

/// T Short: 1 if T ≤ 0.01; −50T + 1.5 on (0.01, 0.03); 0 if T ≥ 0.03.
pub const T_SHORT: Membership = Membership {
    name: "T.short",
    pieces: &[
        piece(NEG, true, 0.01, true, 0.0, 1.0),
        piece(0.01, false, 0.03, false, -50.0, 1.5),
        piece(0.03, true, POS, true, 0.0, 0.0),
    ],
};

/// T Medium: 10T on [0, 0.1); 1 on [0.1, 1]; −0.11T + 1.11 on (1, 10]; 0
/// if T < 0 or T > 10.
pub const T_MEDIUM: Membership = Membership {
    name: "T.medium",
    pieces: &[
        piece(0.0, true, 0.1, false, 10.0, 0.0),
        piece(0.1, true, 1.0, true, 0.0, 1.0),
        piece(1.0, false, 10.0, true, -0.11, 1.11),
    ],
};

/// T Long: 0 if T ≤ 1; 0.11T − 0.11 on (1, 10); 1 if T ≥ 10.
pub const T_LONG: Membership = Membership {
    name: "T.long",
    pieces: &[
        piece(NEG, true, 1.0, true, 0.0, 0.0),
        piece(1.0, false, 10.0, false, 0.11, -0.11),
        piece(10.0, true, POS, true, 0.0, 1.0),
    ],
};

/// L Low: 1 if L ≤ 1; 2 − L on (1, 2); 0 if L ≥ 2.
pub const L_LOW: Membership = Membership {
    name: "L.low",
    pieces: &[
        piece(NEG, true, 1.0, true, 0.0, 1.0),
        piece(1.0, false, 2.0, false, -1.0, 2.0),
        piece(2.0, true, POS, true, 0.0, 0.0),
    ],
};

/// L Moderate: L − 1 on [1, 2); 1 on [2, 4]; 5 − L on (4, 5]; 0 if L < 1
/// or L > 5.
pub const L_MODERATE: Membership = Membership {
    name: "L.moderate",
    pieces: &[
        piece(1.0, true, 2.0, false, 1.0, -1.0),
        piece(2.0, true, 4.0, true, 0.0, 1.0),
        piece(4.0, false, 5.0, true, -1.0, 5.0),
    ],
};

/// L High: 0 if L ≤ 4; 0.166L − 0.64 on (4, 10); 1 if L ≥ 10.
pub const L_HIGH: Membership = Membership {
    name: "L.high",
    pieces: &[
        piece(NEG, true, 4.0, true, 0.0, 0.0),
        piece(4.0, false, 10.0, false, 0.166, -0.64),
        piece(10.0, true, POS, true, 0.0, 1.0),
    ],
};

/// ΔT Improved: 1 if ΔT ≤ −3; −0.4ΔT − 0.2 on [−3, −0.5]; 0 if ΔT > −0.5.
pub const DT_IMPROVED: Membership = Membership {
    name: "dT.improved",
    pieces: &[
        piece(NEG, true, -3.0, true, 0.0, 1.0),
        piece(-3.0, true, -0.5, true, -0.4, -0.2),
        piece(-0.5, false, POS, true, 0.0, 0.0),
    ],
};

/// ΔT NoChange: 2ΔT + 2 on [−1, −0.5]; 1 on [−0.5, 0.5]; −2ΔT + 2 on
/// (0.5, 1]; 0 outside [−1, 1].
pub const DT_NO_CHANGE: Membership = Membership {
    name: "dT.no-change",
    pieces: &[
        piece(-1.0, true, -0.5, true, 2.0, 2.0),
        piece(-0.5, true, 0.5, true, 0.0, 1.0),
        piece(0.5, false, 1.0, true, -2.0, 2.0),
    ],
};

/// ΔT Degraded: 0 if ΔT < 0.5; 0.4ΔT − 0.2 on [0.5, 3]; 1 if ΔT ≥ 3.
pub const DT_DEGRADED: Membership = Membership {
    name: "dT.degraded",
    pieces: &[
        piece(NEG, true, 0.5, false, 0.0, 0.0),
        piece(0.5, true, 3.0, true, 0.4, -0.2),
        piece(3.0, true, POS, true, 0.0, 1.0),
    ],
};

/// ΔL Improved: 1 if ΔL < −3; −0.33ΔL on [−3, 0]; 0 if ΔL ≥ 0.
pub const DL_IMPROVED: Membership = Membership {
    name: "dL.improved",
    pieces: &[
        piece(NEG, true, -3.0, false, 0.0, 1.0),
        piece(-3.0, true, 0.0, true, -0.33, 0.0),
        piece(0.0, true, POS, true, 0.0, 0.0),
    ],
};

/// ΔL NoChange: 0.66ΔL + 2 on [−3, −1.5]; 1 on [−1.5, 1.5]; −0.66ΔL + 2 on
/// (1.5, 3]; 0 if |ΔL| > 3.
pub const DL_NO_CHANGE: Membership = Membership {
    name: "dL.no-change",
    pieces: &[
        piece(-3.0, true, -1.5, true, 0.66, 2.0),
        piece(-1.5, true, 1.5, true, 0.0, 1.0),
        piece(1.5, false, 3.0, true, -0.66, 2.0),
    ],
};

/// ΔL Degraded: 0 if ΔL ≤ 0; 0.33ΔL on [0, 3); 1 if ΔL ≥ 3.
pub const DL_DEGRADED: Membership = Membership {
    name: "dL.degraded",
    pieces: &[
        piece(NEG, true, 0.0, true, 0.0, 0.0),
        piece(0.0, true, 3.0, false, 0.33, 0.0),
        piece(3.0, true, POS, true, 0.0, 1.0),
    ],
};

/// Every membership function, for golden tests and documentation.
pub const ALL: [Membership; 12] = [
    T_SHORT,
    T_MEDIUM,
    T_LONG,
    L_LOW,
    L_MODERATE,
    L_HIGH,
    DT_IMPROVED,
    DT_NO_CHANGE,
    DT_DEGRADED,
    DL_IMPROVED,
    DL_NO_CHANGE,
    DL_DEGRADED,
];

/// Area of the initial output set Simple cut at 1 (a trapezoid).
pub const INITIAL_AREA_SIMPLE: f64 = 0.75;
/// Area of the initial output set Moderate cut at 1.
pub const INITIAL_AREA_MODERATE: f64 = 3.75;
/// Area of the initial output set Aggressive cut at 1: the code's integer
/// division `((14 − 4) + (14 − 7)) / 2 = 8` (not 8.5).
pub const INITIAL_AREA_AGGRESSIVE: f64 = 8.0;
/// Weight of Aggressive in the initial crisp output.
pub const INITIAL_CENTRE_AGGRESSIVE: f64 = 14.0;
/// Weight of Moderate in the initial crisp output.
pub const INITIAL_CENTRE_MODERATE: f64 = 3.0;
/// Weight of `(1 − w_simple)` in the initial crisp output.
pub const INITIAL_NOT_SIMPLE: f64 = 1.0;

/// Area of the Algorithm-1 output set "less aggressive" cut at 1.
pub const ADJUST_AREA_LESS: f64 = 2.75;
/// Area of the Algorithm-1 output set "same" cut at 1.
pub const ADJUST_AREA_SAME: f64 = 1.5;
/// Area of the Algorithm-1 output set "more aggressive" cut at 1.
pub const ADJUST_AREA_MORE: f64 = 2.75;
/// Portfolio positions a full "more" (or "less") moves: `ΔDLS = 4·w_more − 4·w_less`.
pub const ADJUST_STEP: f64 = 4.0;

/// Truth values of Table 1's outputs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InitialStrengths {
    /// DLS is Simple.
    pub simple: f64,
    /// DLS is Moderate.
    pub moderate: f64,
    /// DLS is Aggressive.
    pub aggressive: f64,
}

/// Table 1 (MIN-MAX inference on `T` seconds and `L` percent):
/// - Simple = Short(T) OR Low(L)
/// - Moderate = (Medium(T) AND High(L)) OR (Medium(T) AND Moderate(L)) OR
///   (Long(T) AND Moderate(L))
/// - Aggressive = High(L) AND Long(T)
pub fn initial_rules(t: f64, lib: f64) -> InitialStrengths {
    let (short, medium, long) = (T_SHORT.eval(t), T_MEDIUM.eval(t), T_LONG.eval(t));
    let (low, moderate, high) = (L_LOW.eval(lib), L_MODERATE.eval(lib), L_HIGH.eval(lib));
    InitialStrengths {
        simple: short.max(low),
        moderate: medium
            .min(high)
            .max(medium.min(moderate))
            .max(long.min(moderate)),
        aggressive: high.min(long),
    }
}

/// Centroid defuzzification of Table 1: weights `w = A/ΣA` of the cut
/// areas, crisp `14·w_agg + 3·w_mod + 1·(1 − w_simple)`; `None` when every
/// strength is 0 (the code divides 0 by 0).
pub fn initial_output(s: &InitialStrengths) -> Option<f64> {
    let simple = INITIAL_AREA_SIMPLE * s.simple;
    let moderate = INITIAL_AREA_MODERATE * s.moderate;
    let aggressive = INITIAL_AREA_AGGRESSIVE * s.aggressive;
    let total = simple + moderate + aggressive;
    if total <= 0.0 || !total.is_finite() {
        return None;
    }
    Some(
        INITIAL_CENTRE_AGGRESSIVE * aggressive / total
            + INITIAL_CENTRE_MODERATE * moderate / total
            + INITIAL_NOT_SIMPLE * (1.0 - simple / total),
    )
}

/// The initial schedule from `T` (seconds) and `L` (percent): the crisp
/// output truncated (`(int)`) and clamped to the portfolio; STATIC if the
/// output is undefined.
pub fn initial_choice(t: f64, lib: f64) -> usize {
    initial_output(&initial_rules(t, lib)).map_or(0, |out| clamp_index(out.trunc()))
}

/// Algorithm 1's inputs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdjustInputs {
    /// `T_par` of the last instance, seconds.
    pub t: f64,
    /// LIB of the last instance, percent.
    pub lib: f64,
    /// `ΔT`: the change of `T_par`, percent of the last instance's time.
    pub dt: f64,
    /// `ΔL`: the change of LIB, percentage points.
    pub dlib: f64,
}

impl AdjustInputs {
    /// From the last two instances' `(T_par seconds, LIB percent)`. `ΔT` is
    /// `(T − T_prev)/T · 100`; for `T = 0` it is 0 if `T_prev = 0` too, else
    /// −∞ (fully improved).
    pub fn from_instances(last: (f64, f64), previous: (f64, f64)) -> Self {
        let (t, lib) = last;
        let (t_prev, lib_prev) = previous;
        let dt = (t - t_prev) / t * 100.0;
        AdjustInputs {
            t,
            lib,
            dt: if dt.is_nan() { 0.0 } else { dt },
            dlib: lib - lib_prev,
        }
    }
}

/// Truth values of Algorithm 1's outputs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdjustStrengths {
    /// Move to a less aggressive schedule.
    pub less: f64,
    /// Keep the schedule.
    pub same: f64,
    /// Move to a more aggressive schedule.
    pub more: f64,
}

/// Algorithm 1 (MIN-MAX inference):
/// - Same = (NoChange(ΔT) AND NoChange(ΔL)) OR Low(L) OR Improved(ΔT)
/// - More = (High(L) AND Long(T)) OR (Degraded(ΔT) AND Degraded(ΔL)) OR
///   (NoChange(ΔT) AND Degraded(ΔL))
/// - Less = (Degraded(ΔT) AND Improved(ΔL)) OR (Degraded(ΔT) AND
///   NoChange(ΔL)) OR (NoChange(ΔT) AND Improved(ΔL)) OR Short(T) OR
///   (Degraded(ΔT) AND Low(L))
pub fn adjust_rules(x: &AdjustInputs) -> AdjustStrengths {
    let (short, long) = (T_SHORT.eval(x.t), T_LONG.eval(x.t));
    let (low, high) = (L_LOW.eval(x.lib), L_HIGH.eval(x.lib));
    let (t_better, t_same, t_worse) = (
        DT_IMPROVED.eval(x.dt),
        DT_NO_CHANGE.eval(x.dt),
        DT_DEGRADED.eval(x.dt),
    );
    let (l_better, l_same, l_worse) = (
        DL_IMPROVED.eval(x.dlib),
        DL_NO_CHANGE.eval(x.dlib),
        DL_DEGRADED.eval(x.dlib),
    );
    AdjustStrengths {
        same: t_same.min(l_same).max(low).max(t_better),
        more: high
            .min(long)
            .max(t_worse.min(l_worse))
            .max(t_same.min(l_worse)),
        less: t_worse
            .min(l_better)
            .max(t_worse.min(l_same))
            .max(t_same.min(l_better))
            .max(short)
            .max(t_worse.min(low)),
    }
}

/// Centroid defuzzification of Algorithm 1: `ΔDLS = 4·w_more − 4·w_less`
/// with `w = A/ΣA`; 0 when every strength is 0 (the code divides 0 by 0).
pub fn delta_dls(s: &AdjustStrengths) -> f64 {
    let less = ADJUST_AREA_LESS * s.less;
    let same = ADJUST_AREA_SAME * s.same;
    let more = ADJUST_AREA_MORE * s.more;
    let total = less + same + more;
    if total <= 0.0 || !total.is_finite() {
        return 0.0;
    }
    ADJUST_STEP * more / total - ADJUST_STEP * less / total
}

/// The schedule after `current` under Algorithm 1: `round(current + ΔDLS)`
/// (half away from zero, as C's `round`), clamped to the portfolio.
pub fn adjusted_choice(current: usize, x: &AdjustInputs) -> usize {
    clamp_index((current as f64 + delta_dls(&adjust_rules(x))).round())
}

fn clamp_index(x: f64) -> usize {
    x.clamp(0.0, (PORTFOLIO_LEN - 1) as f64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// Golden values of every membership function at its breakpoints, just
    /// inside them and in the middle of each piece.
    #[test]
    fn golden_membership_values() {
        #[rustfmt::skip]
        let golden: [(Membership, &[(f64, f64)]); 12] = [
            (T_SHORT, &[(-1.0, 1.0), (0.0, 1.0), (0.01, 1.0), (0.02, 0.5), (0.025, 0.25), (0.03, 0.0), (5.0, 0.0)]),
            (T_MEDIUM, &[(-0.001, 0.0), (0.0, 0.0), (0.01, 0.1), (0.05, 0.5), (0.1, 1.0), (1.0, 1.0),
                         (2.0, 0.89), (5.5, 0.505), (10.0, 0.01), (10.5, 0.0)]),
            (T_LONG, &[(0.5, 0.0), (1.0, 0.0), (2.0, 0.11), (5.5, 0.495), (10.0, 1.0), (30.0, 1.0)]),
            (L_LOW, &[(-1.0, 1.0), (1.0, 1.0), (1.5, 0.5), (2.0, 0.0), (50.0, 0.0)]),
            (L_MODERATE, &[(0.5, 0.0), (1.0, 0.0), (1.5, 0.5), (2.0, 1.0), (4.0, 1.0), (4.5, 0.5),
                           (5.0, 0.0), (6.0, 0.0)]),
            (L_HIGH, &[(4.0, 0.0), (5.0, 0.19), (8.0, 0.688), (9.99, 1.01834), (10.0, 1.0), (40.0, 1.0)]),
            (DT_IMPROVED, &[(-10.0, 1.0), (-3.0, 1.0), (-1.0, 0.2), (-0.5, 0.0), (0.0, 0.0)]),
            (DT_NO_CHANGE, &[(-1.5, 0.0), (-1.0, 0.0), (-0.75, 0.5), (-0.5, 1.0), (0.0, 1.0), (0.5, 1.0),
                             (0.75, 0.5), (1.0, 0.0), (2.0, 0.0)]),
            (DT_DEGRADED, &[(0.0, 0.0), (0.49, 0.0), (0.5, 0.0), (1.0, 0.2), (3.0, 1.0), (9.0, 1.0)]),
            (DL_IMPROVED, &[(-5.0, 1.0), (-3.0, 0.99), (-1.0, 0.33), (0.0, 0.0), (2.0, 0.0)]),
            (DL_NO_CHANGE, &[(-4.0, 0.0), (-3.0, 0.02), (-2.0, 0.68), (-1.5, 1.01), (0.0, 1.0), (1.5, 1.0),
                             (2.0, 0.68), (3.0, 0.02), (3.5, 0.0)]),
            (DL_DEGRADED, &[(-1.0, 0.0), (0.0, 0.0), (1.0, 0.33), (2.9, 0.957), (3.0, 1.0), (8.0, 1.0)]),
        ];
        for (f, points) in golden {
            for &(x, want) in points {
                assert!(
                    close(f.eval(x), want),
                    "{}({x}) = {}, want {want}",
                    f.name,
                    f.eval(x)
                );
            }
            assert_eq!(f.eval(f64::NAN), 0.0, "{}", f.name);
        }
        assert_eq!(ALL.len(), 12);
    }

    #[test]
    fn golden_defuzzification_constants() {
        assert_eq!(
            [
                INITIAL_AREA_SIMPLE,
                INITIAL_AREA_MODERATE,
                INITIAL_AREA_AGGRESSIVE
            ],
            [0.75, 3.75, 8.0]
        );
        assert_eq!(
            [
                INITIAL_CENTRE_AGGRESSIVE,
                INITIAL_CENTRE_MODERATE,
                INITIAL_NOT_SIMPLE
            ],
            [14.0, 3.0, 1.0]
        );
        assert_eq!(
            [
                ADJUST_AREA_LESS,
                ADJUST_AREA_SAME,
                ADJUST_AREA_MORE,
                ADJUST_STEP
            ],
            [2.75, 1.5, 2.75, 4.0]
        );
        // Pure outputs (the released code's `autoFuzzySearch`).
        let pure = |simple, moderate, aggressive| {
            initial_output(&InitialStrengths {
                simple,
                moderate,
                aggressive,
            })
            .unwrap()
        };
        assert!(close(pure(1.0, 0.0, 0.0), 0.0)); // STATIC
        assert!(close(pure(0.0, 1.0, 0.0), 4.0)); // index 4
        assert!(close(pure(0.0, 0.0, 1.0), 15.0)); // → clamped to 11, mAF
        assert_eq!(
            initial_output(&InitialStrengths {
                simple: 0.0,
                moderate: 0.0,
                aggressive: 0.0
            }),
            None
        );
        let adjust = |less, same, more| delta_dls(&AdjustStrengths { less, same, more });
        assert!(close(adjust(1.0, 0.0, 0.0), -4.0));
        assert!(close(adjust(0.0, 1.0, 0.0), 0.0));
        assert!(close(adjust(0.0, 0.0, 1.0), 4.0));
        assert_eq!(adjust(0.0, 0.0, 0.0), 0.0);
    }

    /// The initial table's examples (Table 1 as the released code has it), each checked
    /// by hand below.
    #[test]
    fn initial_rules_hand_computed() {
        // First instance: the code's T = L = −1 → Short = Low = 1 → STATIC.
        assert_eq!(initial_choice(-0.001, -1.0), 0);
        // T = 5 ms: Short = 1, Medium = 0.05. L = 20: Moderate = 0.05;
        // A = 0.75 / 0.1875; 4·w_mod = 4·0.2 = 0.8 → 0.
        assert_eq!(initial_choice(0.005, 20.0), 0);
        // T = 20 ms: Short 0.5, Medium 0.2. L ≤ 1 → Low 1 → STATIC.
        assert_eq!(initial_choice(0.020, 1.0), 0);
        // L = 3: Simple 0.5 (A 0.375), Moderate 0.2 (A 0.75): 3·⅔ + ⅔ = 2.67 → TSS.
        let s = initial_rules(0.020, 3.0);
        assert!(close(s.simple, 0.5) && close(s.moderate, 0.2) && close(s.aggressive, 0.0));
        assert!(close(initial_output(&s).unwrap(), 8.0 / 3.0));
        assert_eq!(initial_choice(0.020, 3.0), 2);
        // 50 ms–0.5 s with moderate imbalance: pure Moderate → 4.
        assert_eq!(initial_choice(0.05, 3.0), 4);
        assert_eq!(initial_choice(0.5, 3.0), 4);
        // T = 0.5 s, L = 1.8: Simple 0.2 (A 0.15), Moderate 0.8 (A 3.0):
        // w_mod = 0.952 → 3.81 → GAC (3).
        assert_eq!(initial_choice(0.5, 1.8), 3);
        // Not monotone in L at T = 2 s: L = 5 → 10 (awf-e), L = 8 → 6.
        let s = initial_rules(2.0, 5.0);
        assert!(close(s.moderate, 0.19) && close(s.aggressive, 0.11));
        assert!(close(
            initial_output(&s).unwrap(),
            (14.0 * 0.88 + 3.0 * 0.7125) / 1.5925 + 1.0
        ));
        assert_eq!(initial_choice(2.0, 5.0), 10);
        assert_eq!(initial_choice(2.0, 8.0), 6);
        // 20 s with L ≥ 5 %: pure Aggressive → 15 → mAF (11).
        assert_eq!(initial_choice(20.0, 5.0), 11);
        assert_eq!(initial_choice(20.0, 30.0), 11);
    }

    /// Algorithm 1's worked examples (as the released code runs it), current DLS 4.
    #[test]
    fn adjust_rules_hand_computed() {
        let inputs = |t: f64, t_prev: f64, lib: f64, lib_prev: f64| {
            AdjustInputs::from_instances((t, lib), (t_prev, lib_prev))
        };
        // 100 ms → 100 ms, L 3 → 3: Same = 1, nothing else: stay.
        let x = inputs(0.1, 0.1, 3.0, 3.0);
        assert_eq!(
            adjust_rules(&x),
            AdjustStrengths {
                less: 0.0,
                same: 1.0,
                more: 0.0
            }
        );
        assert_eq!(adjusted_choice(4, &x), 4);
        // 100 → 110 ms (ΔT = 9.09 %: Degraded), L flat: Less = 1 → 0.
        let x = inputs(0.11, 0.1, 3.0, 3.0);
        assert!(close(x.dt, 100.0 / 11.0));
        assert_eq!(
            adjust_rules(&x),
            AdjustStrengths {
                less: 1.0,
                same: 0.0,
                more: 0.0
            }
        );
        assert_eq!(adjusted_choice(4, &x), 0);
        // L 3 → 8 (ΔL = 5: Degraded), T flat: More = 1 → 8 (awf-c).
        let x = inputs(0.1, 0.1, 8.0, 3.0);
        assert_eq!(
            adjust_rules(&x),
            AdjustStrengths {
                less: 0.0,
                same: 0.0,
                more: 1.0
            }
        );
        assert_eq!(adjusted_choice(4, &x), 8);
        // T = 5 ms, L = 20 % on both steps: Less = Short = 1, Same = 1:
        // ΔDLS = −4·2.75/4.25 = −2.588 → round(1.41) = 1 (ss).
        let x = inputs(0.005, 0.005, 20.0, 20.0);
        assert!(close(delta_dls(&adjust_rules(&x)), -11.0 / 4.25));
        assert_eq!(adjusted_choice(4, &x), 1);
        // T = 2 s, L = 15 % on both steps: More = min(High 1, Long 0.11),
        // Same = 1: ΔDLS = 4·0.3025/1.8025 = 0.671 → 5.
        let x = inputs(2.0, 2.0, 15.0, 15.0);
        let s = adjust_rules(&x);
        assert!(close(s.more, 0.11) && close(s.same, 1.0) && close(s.less, 0.0));
        assert!(close(delta_dls(&s), 4.0 * 0.3025 / 1.8025));
        assert_eq!(adjusted_choice(4, &x), 5);
        // A mixed case: T 1.00 → 1.01 s (ΔT = 0.99 %), L 6 → 7.5 (ΔL = 1.5).
        // NoChange(ΔT) = 0.0198, Degraded(ΔT) = 0.196; Degraded(ΔL) = 0.495,
        // NoChange(ΔL) = 1; Low = 0, High = 0.605, Long = 0.0011, Short = 0.
        // Same = min(0.0198, 1) = 0.0198; More = max(0.0011, min(0.196,
        // 0.495), min(0.0198, 0.495)) = 0.196; Less = min(0.196, 1) = 0.196.
        let x = inputs(1.01, 1.0, 7.5, 6.0);
        let s = adjust_rules(&x);
        let dt = 0.01 / 1.01 * 100.0;
        assert!(close(s.same, -2.0 * dt + 2.0));
        assert!(close(s.more, 0.4 * dt - 0.2) && close(s.less, 0.4 * dt - 0.2));
        assert!(close(delta_dls(&s), 0.0));
        assert_eq!(adjusted_choice(4, &x), 4);
        // Clamping at both ends.
        assert_eq!(adjusted_choice(0, &inputs(0.11, 0.1, 3.0, 3.0)), 0);
        assert_eq!(adjusted_choice(10, &inputs(0.1, 0.1, 8.0, 3.0)), 11);
    }

    #[test]
    fn zero_times_do_not_produce_nan() {
        let x = AdjustInputs::from_instances((0.0, 0.0), (0.0, 0.0));
        assert_eq!(x.dt, 0.0);
        let x = AdjustInputs::from_instances((0.0, 0.0), (0.01, 0.0));
        assert_eq!(x.dt, f64::NEG_INFINITY);
        assert_eq!(DT_IMPROVED.eval(x.dt), 1.0);
        assert!(adjusted_choice(5, &x) <= 11);
    }
}
