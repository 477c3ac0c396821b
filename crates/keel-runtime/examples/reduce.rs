//! Reductions and loops over a mutable slice: fill a vector in disjoint
//! pieces (`for_each_chunk_mut`), then reduce it (`fold_reduce`), each under
//! a schedule written in `OMP_SCHEDULE` syntax.
//!
//! The vector holds `x[i] = sin(i)`; the loop hands each participant
//! `&mut x[a..b]` for the chunks the schedule gives it, so no lock or
//! atomic guards the writes. The reductions then fold the chunks into one
//! accumulator per participant and combine them at the join: the sum of
//! squares (a float sum, equal to the sequential one up to rounding) and
//! the largest element with its index (a non-commutative pair, exact).
//! The `try_` form returns a `LoopError` where the plain form would panic:
//! here, a range longer than the slice.
//!
//! Run with `cargo run -p keel-runtime --example reduce`; `KEEL_NUM_THREADS` sizes
//! the pool.

use keel::{LoopError, ThreadPool};

/// Elements of the vector.
const N: usize = 1_000_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Under KEEL_TRACE, completes the trace file on every return.
    let _trace = keel::trace::FinishGuard::new();
    let pool = ThreadPool::builder().build()?;
    let mut x = vec![0.0f64; N];
    let filled = pool
        .parallel(0..x.len())
        .schedule("guided".parse()?)
        // Measured: T_par, below, is kept only for recorded instances.
        .recorded()
        .for_each_chunk_mut(&mut x, |start, chunk| {
            for (k, v) in chunk.iter_mut().enumerate() {
                *v = ((start + k) as f64).sin();
            }
        });
    println!(
        "filled {} elements on {} threads in {} chunks ({:.2} ms)",
        filled.iterations,
        filled.threads,
        filled.chunks,
        filled.t_par.unwrap_or(f64::NAN) * 1e3
    );

    let x = &x;
    let squares = pool
        .parallel(0..N)
        .schedule("dynamic,1000".parse()?)
        .fold_reduce(|| 0.0f64, |acc, i| acc + x[i] * x[i], |a, b| a + b);
    let sequential: f64 = x.iter().map(|v| v * v).sum();
    let bound = N as f64 * f64::EPSILON * sequential;
    println!("sum of squares {squares:.6} (sequential {sequential:.6})");
    assert!((squares - sequential).abs() <= bound);

    let (largest, summary) = pool
        .parallel(0..N)
        .schedule("fac2".parse()?)
        .recorded()
        .try_fold_reduce(
            || (f64::NEG_INFINITY, 0usize),
            |best, i| if x[i] > best.0 { (x[i], i) } else { best },
            |a, b| {
                if b.0 > a.0 || (b.0 == a.0 && b.1 < a.1) {
                    b
                } else {
                    a
                }
            },
        )?;
    println!(
        "largest element x[{}] = {:.9} ({} chunks, LIB {:.1}%)",
        largest.1,
        largest.0,
        summary.chunks,
        summary.lib_percent.unwrap_or(f64::NAN)
    );
    let expected = x
        .iter()
        .enumerate()
        .fold((f64::NEG_INFINITY, 0), |best, (i, &v)| {
            if v > best.0 {
                (v, i)
            } else {
                best
            }
        });
    assert_eq!(largest, expected);

    let mut short = vec![0u8; 10];
    let err = pool
        .parallel(0..11usize)
        .try_for_each_chunk_mut(&mut short, |_, chunk| chunk.fill(1))
        .unwrap_err();
    assert_eq!(err, LoopError::SliceTooShort { end: 11, len: 10 });
    println!("a range past the slice, typed: {err}");
    Ok(())
}
