//! EPCC's delay loop, in Rust, and its calibration.
//!
//! `delay(len)` is EPCC schedbench's `delay()`: a dependent chain of `len`
//! float additions, which no compiler may reorder or vectorise without
//! fast-math. `c/schedbench.c` has the same function, so both languages run
//! the same instructions; each side still measures its own sequential
//! reference (EPCC's method), so a small difference between them cancels.

use std::hint::black_box;
use std::time::Instant;

/// EPCC's `delay(delaylength)`: `len` dependent float additions.
#[inline(never)]
pub fn delay(len: u32) {
    let mut a = 0.0f32;
    for i in 0..len as i32 {
        a += i as f32;
    }
    black_box(a);
}

/// Seconds one delay unit (one addition) takes here: the fastest of a few
/// timed batches of long delays.
pub fn seconds_per_unit() -> f64 {
    const LEN: u32 = 10_000;
    const CALLS: u32 = 100;
    (0..7)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..CALLS {
                delay(black_box(LEN));
            }
            t.elapsed().as_secs_f64() / f64::from(CALLS * LEN)
        })
        .fold(f64::INFINITY, f64::min)
}

/// The delay length that takes `micros` µs, given [`seconds_per_unit`].
pub fn length_for(micros: f64, seconds_per_unit: f64) -> u32 {
    ((micros * 1e-6 / seconds_per_unit).round() as u32).max(1)
}

/// EPCC's reference: `iters` delays in sequence, `reps` times; total seconds.
pub fn reference(len: u32, iters: u64, reps: u64) -> f64 {
    let t = Instant::now();
    for _ in 0..reps {
        for _ in 0..iters {
            delay(len);
        }
    }
    t.elapsed().as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_scale_with_the_target() {
        let unit = 1e-9;
        assert_eq!(length_for(0.1, unit), 100);
        assert_eq!(length_for(10.0, unit), 10_000);
        assert_eq!(length_for(0.0, unit), 1);
        assert!(seconds_per_unit() > 0.0);
    }
}
