//! Loop indices: any primitive integer range. The driver works on `u64`
//! offsets in `[0, N)`; an index type maps a range to its length and an
//! offset back to an index, in its own width, so ranges near the type's
//! limits (`i64::MIN..i64::MAX`, `u64::MAX - 3..u64::MAX`) work.

use std::ops::Range;

use super::LoopError;

/// An integer type a parallel loop can run over.
pub trait LoopIndex: Copy + Send + Sync + std::fmt::Debug + 'static {
    /// Number of iterations in `range` (none when the start is after the
    /// end, as `for i in 5..2` runs none), or why the range is not a loop.
    fn span(range: &Range<Self>) -> Result<u64, LoopError>;
    /// `start + offset`, for an offset inside the range's span.
    fn at(start: Self, offset: u64) -> Self;
}

macro_rules! loop_index {
    ($($t:ty => $wide:ty),* $(,)?) => {$(
        impl LoopIndex for $t {
            fn span(range: &Range<Self>) -> Result<u64, LoopError> {
                if range.start >= range.end {
                    return Ok(0);
                }
                let span = (range.end as $wide).wrapping_sub(range.start as $wide);
                u64::try_from(span).map_err(|_| LoopError::RangeTooLong {
                    len: span.to_string(),
                })
            }

            #[inline]
            fn at(start: Self, offset: u64) -> Self {
                // Two's complement: adding the offset in the wide unsigned
                // type and truncating lands on `start + offset` for every
                // offset inside the span, whatever the sign of `start`.
                ((start as $wide).wrapping_add(offset as $wide)) as $t
            }
        }
    )*};
}

loop_index!(
    u8 => u128, u16 => u128, u32 => u128, u64 => u128, usize => u128, u128 => u128,
    i8 => u128, i16 => u128, i32 => u128, i64 => u128, isize => u128, i128 => u128,
);

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn spans_and_offsets_near_the_limits() {
        assert_eq!(i64::span(&(i64::MIN..i64::MAX)).unwrap(), u64::MAX);
        assert_eq!(i64::at(i64::MIN, u64::MAX), i64::MAX);
        assert_eq!(i8::span(&(-128..127)).unwrap(), 255);
        assert_eq!(i8::at(-128, 200), 72);
        assert_eq!(u64::span(&(u64::MAX - 3..u64::MAX)).unwrap(), 3);
        assert_eq!(u64::at(u64::MAX - 3, 2), u64::MAX - 1);
        assert_eq!(u32::span(&(5..5)).unwrap(), 0);
        assert_eq!(i128::span(&(-5..5)).unwrap(), 10);
        assert_eq!(i128::at(-5, 7), 2);
    }

    #[test]
    #[allow(clippy::reversed_empty_ranges)]
    fn inverted_ranges_are_empty_and_too_long_ones_typed_errors() {
        assert_eq!(u32::span(&(5..3)).unwrap(), 0);
        assert_eq!(i64::span(&(i64::MAX..i64::MIN)).unwrap(), 0);
        assert!(matches!(
            u128::span(&(0..u128::MAX)),
            Err(LoopError::RangeTooLong { .. })
        ));
        assert!(matches!(
            i128::span(&(i128::MIN..i128::MAX)),
            Err(LoopError::RangeTooLong { .. })
        ));
    }
}
