//! A work-shared loop's iteration space as libgomp receives it, and the
//! map between Keel's offsets `0..n` and the loop's own values.
//!
//! libgomp's convention (its `loop.c` and `loop_ull.c`): the loop runs
//! `for (v = start; v < end; v += incr)` when counting up (`v > end` when
//! down), and each chunk handed back is `[istart, iend)` in those values,
//! `iend` at most `end` — the last chunk ends exactly at `end`.

/// The bounds of one loop: `long` ones (`GOMP_loop_*`) or `unsigned long
/// long` ones (`GOMP_loop_ull_*`, where `up` says the direction and a
/// downward `incr` is the two's complement of the step).
///
/// ```
/// use keel_omp::Bounds;
///
/// // for (i = 10; i > -5; i -= 3): 10, 7, 4, 1, -2
/// let b = Bounds::Long { start: 10, end: -5, incr: -3 };
/// assert_eq!(b.iterations(), Some(5));
/// assert_eq!(b.chunk(1..3), (7, 1));
/// assert_eq!(b.chunk(3..5), (1, -5)); // the last chunk ends at `end`
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bounds {
    /// `long` bounds.
    Long {
        /// First value.
        start: i64,
        /// Bound, exclusive.
        end: i64,
        /// Step, not zero.
        incr: i64,
    },
    /// `unsigned long long` bounds.
    Ull {
        /// Counting up.
        up: bool,
        /// First value.
        start: u64,
        /// Bound, exclusive.
        end: u64,
        /// Step; counting down, its two's complement.
        incr: u64,
    },
}

impl Bounds {
    /// The number of iterations; `None` for a zero step (a loop GCC never
    /// emits, left to libgomp).
    pub fn iterations(&self) -> Option<u64> {
        // Every span and step fits 64 bits (the distance between two
        // 64-bit values, the magnitude of a 64-bit step): one 64-bit
        // division, where 128-bit operands cost a library call.
        let count = |span: u64, step: u64| span.div_ceil(step);
        match *self {
            Bounds::Long { start, end, incr } => match incr {
                0 => None,
                i if i > 0 => Some(if end > start {
                    count(end.abs_diff(start), i.unsigned_abs())
                } else {
                    0
                }),
                i => Some(if start > end {
                    count(start.abs_diff(end), i.unsigned_abs())
                } else {
                    0
                }),
            },
            Bounds::Ull {
                up,
                start,
                end,
                incr,
            } => {
                let step = if up { incr } else { incr.wrapping_neg() };
                if step == 0 {
                    return None;
                }
                let span = match up {
                    true if end > start => end - start,
                    false if start > end => start - end,
                    _ => 0,
                };
                Some(count(span, step))
            }
        }
    }

    /// The number of iterations of a loop Keel may run: as
    /// [`iterations`](Self::iterations), but `None` also for `long` bounds
    /// whose span with the step (`end − start + incr ∓ 1`) overflows a
    /// signed 64-bit value. Such a loop is not conforming (its trip count
    /// does not fit the loop's type), and libgomp and the compiler's code
    /// around each chunk compute trip counts in that type, so it is left to
    /// libgomp, whatever libgomp makes of it.
    ///
    /// ```
    /// use keel_omp::Bounds;
    ///
    /// // for (i = INT64_MAX - 10; i > INT64_MIN + 10; i -= INT64_MAX / 4)
    /// let b = Bounds::Long { start: i64::MAX - 10, end: i64::MIN + 10, incr: -(i64::MAX / 4) };
    /// assert_eq!(b.iterations(), Some(8));
    /// assert_eq!(b.runnable_iterations(), None);
    /// let fine = Bounds::Long { start: 10, end: -5, incr: -3 };
    /// assert_eq!(fine.runnable_iterations(), Some(5));
    /// ```
    pub fn runnable_iterations(&self) -> Option<u64> {
        if let Bounds::Long { start, end, incr } = *self {
            let towards_end = incr - incr.signum();
            end.checked_sub(start)?.checked_add(towards_end)?;
        }
        self.iterations()
    }

    /// The loop values `[istart, iend)` of the offsets `offsets` (within
    /// `0..iterations()`), as raw 64-bit words: `long` values as their
    /// two's complement.
    pub fn chunk(&self, offsets: std::ops::Range<u64>) -> (i64, i64) {
        self.chunk_of(offsets, self.iterations().unwrap_or(0))
    }

    /// [`chunk`](Self::chunk) for a loop whose `iterations()` is `n`,
    /// known already: the per-chunk path counts the loop once, not per
    /// chunk (a 128-bit division).
    pub(crate) fn chunk_of(&self, offsets: std::ops::Range<u64>, n: u64) -> (i64, i64) {
        match *self {
            Bounds::Long { start, end, incr } => {
                let at = |k: u64| (i128::from(start) + i128::from(k) * i128::from(incr)) as i64;
                let last = if offsets.end >= n {
                    end
                } else {
                    at(offsets.end)
                };
                (at(offsets.start), last)
            }
            Bounds::Ull {
                up,
                start,
                end,
                incr,
            } => {
                let step = if up { incr } else { incr.wrapping_neg() };
                let at = |k: u64| {
                    let delta = k.wrapping_mul(step);
                    if up {
                        start.wrapping_add(delta)
                    } else {
                        start.wrapping_sub(delta)
                    }
                };
                let last = if offsets.end >= n {
                    end
                } else {
                    at(offsets.end)
                };
                (at(offsets.start) as i64, last as i64)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Bounds;

    /// Every value the loop takes, walked as C would.
    fn walk_long(start: i64, end: i64, incr: i64) -> Vec<i64> {
        let mut v = Vec::new();
        let mut i = i128::from(start);
        while (incr > 0 && i < i128::from(end)) || (incr < 0 && i > i128::from(end)) {
            v.push(i as i64);
            i += i128::from(incr);
        }
        v
    }

    #[test]
    fn long_chunks_cover_every_value_once() {
        for (start, end, incr) in [
            (0, 10, 1),
            (0, 10, 3),
            (10, 0, -1),
            (10, -5, -3),
            (5, 5, 1),
            (5, 0, 1),
            (0, 5, -1),
            (-7, 8, 4),
            (i64::MIN, i64::MIN + 10, 3),
            (i64::MAX, i64::MAX - 9, -2),
        ] {
            let b = Bounds::Long { start, end, incr };
            let want = walk_long(start, end, incr);
            let n = b.iterations().unwrap();
            assert_eq!(n as usize, want.len(), "{b:?}");
            let mut got = Vec::new();
            for k in 0..n {
                let (s, e) = b.chunk(k..k + 1);
                let mut i = i128::from(s);
                while (incr > 0 && i < i128::from(e)) || (incr < 0 && i > i128::from(e)) {
                    got.push(i as i64);
                    i += i128::from(incr);
                }
            }
            assert_eq!(got, want, "{b:?}");
        }
        assert_eq!(
            Bounds::Long {
                start: 0,
                end: 5,
                incr: 0
            }
            .iterations(),
            None
        );
    }

    /// The count in 128-bit arithmetic, which no span or step overflows.
    fn reference_count(start: i64, end: i64, incr: i64) -> u64 {
        let (s, e, i) = (i128::from(start), i128::from(end), i128::from(incr));
        let span = if i > 0 { e - s } else { s - e };
        if span <= 0 {
            0
        } else {
            (span as u128).div_ceil(i.unsigned_abs()) as u64
        }
    }

    #[test]
    fn long_counts_at_the_extremes_of_span_and_step() {
        let edges = [i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX];
        for start in edges {
            for end in edges {
                for incr in [i64::MIN, i64::MIN + 1, -3, -1, 1, 2, i64::MAX - 1, i64::MAX] {
                    let b = Bounds::Long { start, end, incr };
                    assert_eq!(
                        b.iterations(),
                        Some(reference_count(start, end, incr)),
                        "{b:?}"
                    );
                }
            }
        }
        let widest = Bounds::Long {
            start: i64::MIN,
            end: i64::MAX,
            incr: i64::MAX,
        };
        assert_eq!(widest.iterations(), Some(3), "MIN, -1, MAX - 1");
    }

    #[test]
    fn loops_whose_span_overflows_the_signed_type_are_not_runnable() {
        let runnable = |start, end, incr| Bounds::Long { start, end, incr }.runnable_iterations();
        assert_eq!(
            runnable(i64::MAX - 10, i64::MIN + 10, -(i64::MAX / 4)),
            None
        );
        assert_eq!(runnable(i64::MIN, i64::MAX, i64::MAX), None);
        assert_eq!(runnable(i64::MIN + 10, i64::MAX - 10, i64::MAX / 4), None);
        // Spans within the type run, up to its extremes.
        assert_eq!(runnable(i64::MIN, i64::MIN + 10, 3), Some(4));
        assert_eq!(runnable(i64::MAX, i64::MAX - 9, -2), Some(5));
        assert_eq!(runnable(-1, i64::MAX - 1, 1), Some(i64::MAX as u64));
        assert_eq!(runnable(0, 5, 0), None);
    }

    #[test]
    fn ull_bounds_up_and_down() {
        let up = Bounds::Ull {
            up: true,
            start: u64::MAX - 10,
            end: u64::MAX,
            incr: 4,
        };
        assert_eq!(up.iterations(), Some(3));
        assert_eq!(
            up.chunk(0..1),
            ((u64::MAX - 10) as i64, (u64::MAX - 6) as i64)
        );
        assert_eq!(up.chunk(2..3).1, u64::MAX as i64);
        let down = Bounds::Ull {
            up: false,
            start: 20,
            end: 1,
            incr: 3u64.wrapping_neg(),
        };
        assert_eq!(down.iterations(), Some(7)); // 20, 17, ..., 2
        assert_eq!(down.chunk(1..2), (17, 14));
        assert_eq!(down.chunk(6..7), (2, 1));
        let empty = Bounds::Ull {
            up: true,
            start: 5,
            end: 5,
            incr: 1,
        };
        assert_eq!(empty.iterations(), Some(0));
        assert_eq!(
            Bounds::Ull {
                up: true,
                start: 0,
                end: 5,
                incr: 0
            }
            .iterations(),
            None
        );
    }
}
