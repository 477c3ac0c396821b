//! LLVM libomp's view of a dynamically scheduled loop: the `sched_type`
//! its `__kmpc_dispatch_init_*` receives, and inclusive bounds with a
//! signed stride. Pure, so that the tests and the docs reach it.
//!
//! The encoding (LLVM's `kmp.h`): `35` dynamic, `36` guided, `37`
//! runtime, `38` auto, `33`/`34`/`39`–`44` the static and special
//! kinds; `+32` the `ordered` variants, `+128` the "nomerge" ones; the
//! modifiers or-ed in: monotonic `1 << 29`, nonmonotonic `1 << 30`.

use crate::settings::Kind;

const MONOTONIC: i32 = 1 << 29;
const NONMONOTONIC: i32 = 1 << 30;

/// Which loops Keel may take, from libomp's `sched_type`: the kind and
/// whether the loop must stay monotonic; `None` for every other kind
/// (ordered, static, auto, nomerge, unknown), which libomp keeps whole.
///
/// A loop is monotonic unless the nonmonotonic modifier is present: a
/// program compiled for OpenMP before 5.0 passes no modifier and means
/// monotonic (clang adds `nonmonotonic` itself from OpenMP 5.0 on).
///
/// ```
/// use keel_omp::{kmp_schedule, Kind};
///
/// assert_eq!(kmp_schedule(37 | 1 << 30), Some((Kind::Runtime, false)));
/// assert_eq!(kmp_schedule(35 | 1 << 29), Some((Kind::Dynamic, true)));
/// assert_eq!(kmp_schedule(36), Some((Kind::Guided, true)));
/// assert_eq!(kmp_schedule(35 + 32), None); // ordered dynamic
/// assert_eq!(kmp_schedule(34), None); // static
/// ```
pub fn kmp_schedule(sched: i32) -> Option<(Kind, bool)> {
    if sched & MONOTONIC != 0 && sched & NONMONOTONIC != 0 {
        return None;
    }
    let monotonic = sched & NONMONOTONIC == 0;
    let kind = match sched & !(MONOTONIC | NONMONOTONIC) {
        35 => Kind::Dynamic,
        36 | 42 | 43 => Kind::Guided,
        37 => Kind::Runtime,
        _ => return None,
    };
    Some((kind, monotonic))
}

/// A loop's iteration space as libomp receives it: `lb`, `lb + st`, ...
/// up to and including `ub` (down to it when `st < 0`). Widened to
/// `i128`, which holds every 32- and 64-bit, signed and unsigned form.
///
/// ```
/// use keel_omp::KmpBounds;
///
/// // for (i = 10; i >= -2; i -= 3): 10, 7, 4, 1, -2
/// let b = KmpBounds { lb: 10, ub: -2, st: -3 };
/// assert_eq!(b.iterations(), Some(5));
/// assert_eq!(b.chunk(1..3), (7, 4, false));
/// assert_eq!(b.chunk(3..5), (1, -2, true)); // holds the last iteration
/// assert_eq!(KmpBounds { lb: 0, ub: u64::MAX.into(), st: 1 }.iterations(), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KmpBounds {
    /// First value.
    pub lb: i128,
    /// Last value a loop may reach, inclusive.
    pub ub: i128,
    /// Stride, not zero.
    pub st: i128,
}

impl KmpBounds {
    /// The number of iterations; `None` for a zero stride, or for more
    /// than a `u64` counts (a full 64-bit range), both left to libomp.
    pub fn iterations(&self) -> Option<u64> {
        let (span, step) = match self.st {
            0 => return None,
            st if st > 0 => (self.ub - self.lb, st),
            st => (self.lb - self.ub, -st),
        };
        if span < 0 {
            return Some(0);
        }
        // A 64-bit division when both fit (every loop over 64-bit or
        // narrower values but the widest): 128-bit operands cost a
        // library call.
        match (u64::try_from(span), u64::try_from(step)) {
            (Ok(span), Ok(step)) => (span / step).checked_add(1),
            _ => u64::try_from(span / step + 1).ok(),
        }
    }

    /// The inclusive values `(first, last)` of the offsets `offsets` (a
    /// non-empty range within `0..iterations()`), and whether they hold
    /// the loop's last iteration (libomp's `*p_last`, which `lastprivate`
    /// reads).
    pub fn chunk(&self, offsets: std::ops::Range<u64>) -> (i128, i128, bool) {
        self.chunk_of(offsets, self.iterations().unwrap_or(0))
    }

    /// [`chunk`](Self::chunk) with the loop's iteration count `n` known.
    pub(crate) fn chunk_of(&self, offsets: std::ops::Range<u64>, n: u64) -> (i128, i128, bool) {
        let at = |k: u64| self.lb + i128::from(k) * self.st;
        let end = offsets.end.max(offsets.start.saturating_add(1));
        (at(offsets.start), at(end - 1), end >= n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iterations_match_a_counted_walk() {
        for lb in -7i128..8 {
            for ub in -7i128..8 {
                for st in [-4i128, -3, -1, 1, 2, 5] {
                    let b = KmpBounds { lb, ub, st };
                    let mut walk = Vec::new();
                    let mut v = lb;
                    while (st > 0 && v <= ub) || (st < 0 && v >= ub) {
                        walk.push(v);
                        v += st;
                    }
                    let n = b.iterations().unwrap();
                    assert_eq!(n as usize, walk.len(), "{b:?}");
                    // Every split into chunks covers the walk exactly once.
                    let mut seen = Vec::new();
                    let mut k = 0;
                    while k < n {
                        let end = (k + 2).min(n);
                        let (first, last, holds_last) = b.chunk(k..end);
                        let mut v = first;
                        loop {
                            seen.push(v);
                            if v == last {
                                break;
                            }
                            v += st;
                        }
                        assert_eq!(holds_last, end == n);
                        k = end;
                    }
                    assert_eq!(seen, walk, "{b:?}");
                }
            }
        }
    }

    #[test]
    fn extreme_bounds() {
        let full = KmpBounds {
            lb: i64::MIN.into(),
            ub: i64::MAX.into(),
            st: 1,
        };
        assert_eq!(full.iterations(), None);
        let halves = KmpBounds {
            lb: 0,
            ub: u64::MAX.into(),
            st: 2,
        };
        assert_eq!(halves.iterations(), Some(1 << 63));
        // A span past 64 bits (a signed lower bound, an unsigned upper).
        let wider = KmpBounds {
            lb: i64::MIN.into(),
            ub: u64::MAX.into(),
            st: 1 << 62,
        };
        assert_eq!(wider.iterations(), Some(6), "MIN + k * 2^62 for k in 0..6");
        let near = KmpBounds {
            lb: (u64::MAX - 10).into(),
            ub: u64::MAX.into(),
            st: 3,
        };
        assert_eq!(near.iterations(), Some(4));
        assert_eq!(
            near.chunk(3..4),
            ((u64::MAX - 1).into(), (u64::MAX - 1).into(), true)
        );
        assert_eq!(
            KmpBounds {
                lb: 0,
                ub: 5,
                st: 0
            }
            .iterations(),
            None
        );
    }

    #[test]
    fn schedules() {
        assert_eq!(kmp_schedule(37), Some((Kind::Runtime, true)));
        assert_eq!(
            kmp_schedule(35 | NONMONOTONIC),
            Some((Kind::Dynamic, false))
        );
        assert_eq!(kmp_schedule(43 | NONMONOTONIC), Some((Kind::Guided, false)));
        for other in [33, 34, 38, 39, 40, 41, 44, 65, 67, 69, 163, 0, -1, i32::MAX] {
            assert_eq!(kmp_schedule(other), None, "{other}");
            assert_eq!(kmp_schedule(other | NONMONOTONIC), None, "{other}");
        }
        assert_eq!(kmp_schedule(35 | MONOTONIC | NONMONOTONIC), None);
    }
}
