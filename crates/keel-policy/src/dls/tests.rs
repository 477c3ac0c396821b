//! Unit tests of the helpers `dls/mod.rs` shares between schedules.

use super::{ceil_size, positive_finite};

/// `ceil_size` is `x.ceil() as u64` for every positive `x`, and 0 otherwise.
#[test]
fn ceil_size_is_the_ceiling_cast() {
    let reference = |x: f64| if x > 0.0 { x.ceil() as u64 } else { 0 };
    let mut edges = vec![
        0.0,
        -0.0,
        -1.5,
        f64::MIN_POSITIVE,
        f64::from_bits(1),
        0.5,
        1.0,
        1.0 + f64::EPSILON,
        2.5,
        4_095.999_999_999,
        (1u64 << 52) as f64 + 0.5,
        (1u64 << 53) as f64,
        (1u64 << 53) as f64 + 2.0,
        (1u64 << 63) as f64,
        u64::MAX as f64,
        1.8446744073709552e19,
        1e20,
        f64::MAX,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    // Around every power of two up to 2⁶⁵: the value and its neighbours.
    for e in 0..66 {
        let x = (2.0f64).powi(e);
        edges.extend([
            x,
            f64::from_bits(x.to_bits() + 1),
            f64::from_bits(x.to_bits() - 1),
        ]);
    }
    // A deterministic spread of magnitudes and fractions.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..100_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let mantissa = (state >> 12) as f64 / (1u64 << 52) as f64;
        let exponent = (state % 70) as i32 - 4;
        edges.push(mantissa * (2.0f64).powi(exponent));
    }
    for x in edges {
        assert_eq!(ceil_size(x), reference(x), "x = {x:e} ({:#x})", x.to_bits());
    }
}

/// `positive_finite` is `v > 0.0 && v.is_finite()`.
#[test]
fn positive_finite_is_the_comparisons() {
    let values = [
        0.0,
        -0.0,
        f64::from_bits(1),
        -f64::from_bits(1),
        f64::MIN_POSITIVE,
        1e-9,
        1.0,
        -1.0,
        f64::MAX,
        f64::MIN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
        f64::from_bits(0x7ff0_0000_0000_0001),
        f64::from_bits(u64::MAX),
    ];
    for v in values {
        assert_eq!(
            positive_finite(v),
            v > 0.0 && v.is_finite(),
            "{v:e} ({:#x})",
            v.to_bits()
        );
    }
}
