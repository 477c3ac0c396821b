//! Reductions (`fold_reduce`) and loops over mutable slices
//! (`for_each_chunk_mut`) give the sequential result under every schedule.

use std::sync::atomic::Ordering;

use keel::Schedule;

mod common;
use common::{counters, not_once, pool, schedules};

/// A loop over `0..n` with `schedule`, given hints for the workload-aware
/// schedules.
fn looped<'p>(
    pool: &'p keel::ThreadPool,
    schedule: &str,
    n: usize,
    hints: &'p [f64],
) -> keel::loops::ParallelLoop<'p, usize> {
    let parsed: Schedule = schedule.parse().unwrap();
    let lp = pool.parallel(0..n).schedule(parsed);
    if keel::policy::dls::WORKLOAD_SCHEDULES.contains(&schedule) {
        lp.workload(&hints[..n])
    } else {
        lp
    }
}

#[test]
fn integer_reductions_equal_the_sequential_result_exactly() {
    let pool = pool(3);
    let hints: Vec<f64> = (0..5000).map(|i| (i % 7 + 1) as f64).collect();
    for schedule in schedules(true) {
        for n in [0usize, 1, 17, 5000] {
            let value = |i: usize| (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20;
            let sequential: u64 = (0..n).map(value).fold(0, u64::wrapping_add);
            // Several instances: adaptive and selecting schedules change
            // their chunks between instances.
            for instance in 0..3 {
                let (sum, summary) = looped(&pool, &schedule, n, &hints)
                    .try_fold_reduce(
                        || 0u64,
                        |acc, i| acc.wrapping_add(value(i)),
                        u64::wrapping_add,
                    )
                    .unwrap_or_else(|e| panic!("{schedule}: {e}"));
                assert_eq!(sum, sequential, "{schedule}, n = {n}, instance {instance}");
                assert_eq!(summary.iterations, n as u64);
            }
            // A non-commutative accumulator: the count and the largest index.
            let found = looped(&pool, &schedule, n, &hints).fold_reduce(
                || (0usize, None::<usize>),
                |(count, max), i| (count + 1, max.max(Some(i))),
                |a, b| (a.0 + b.0, a.1.max(b.1)),
            );
            assert_eq!(found, (n, n.checked_sub(1)), "{schedule}");
        }
    }
}

#[test]
fn float_sums_are_the_sequential_sum_within_rounding() {
    let pool = pool(4);
    let n = 20_000usize;
    let hints = vec![1.0; n];
    let x = |i: usize| ((i as f64) * 0.7).sin() * 1e3 + 1.0 / (1.0 + i as f64);
    let sequential: f64 = (0..n).map(x).sum();
    let magnitude: f64 = (0..n).map(|i| x(i).abs()).sum();
    // Summing n numbers in any order errs by at most (n - 1)·u·Σ|x| to
    // first order, u = ε/2 the unit roundoff (Higham, "Accuracy and
    // Stability of Numerical Algorithms", chapter 4, Summation), so two
    // orders differ by at most (n - 1)·ε·Σ|x| < n·ε·Σ|x|.
    let bound = n as f64 * f64::EPSILON * magnitude;
    for schedule in schedules(true) {
        let sum = looped(&pool, &schedule, n, &hints).fold_reduce(
            || 0.0f64,
            |acc, i| acc + x(i),
            |a, b| a + b,
        );
        assert!(
            (sum - sequential).abs() <= bound,
            "{schedule}: {sum} vs {sequential} (bound {bound:e})"
        );
    }
}

#[test]
fn every_element_of_a_slice_is_written_exactly_once() {
    let pool = pool(3);
    let n = 3001usize;
    let hints: Vec<f64> = (0..n).map(|i| (i % 11) as f64).collect();
    for schedule in schedules(true) {
        let mut data = vec![0u32; n];
        let hits = counters(n as u64);
        let starts = counters(n as u64);
        looped(&pool, &schedule, n, &hints)
            .try_for_each_chunk_mut(&mut data, |start, chunk| {
                starts[start].fetch_add(1, Ordering::Relaxed);
                for (k, x) in chunk.iter_mut().enumerate() {
                    hits[start + k].fetch_add(1, Ordering::Relaxed);
                    *x += 1 + (start + k) as u32;
                }
            })
            .unwrap_or_else(|e| panic!("{schedule}: {e}"));
        let bad = not_once(&hits);
        assert!(bad.is_empty(), "{schedule}: {bad:?}");
        let wrong: Vec<usize> = (0..n).filter(|&i| data[i] != 1 + i as u32).collect();
        assert!(wrong.is_empty(), "{schedule}: {wrong:?}");
        // Pieces are disjoint: no two start at one index.
        assert!(
            starts.iter().all(|c| c.load(Ordering::Relaxed) <= 1),
            "{schedule}"
        );
    }
}

#[test]
fn a_sub_range_writes_only_its_part_and_a_range_past_the_end_is_an_error() {
    let pool = pool(2);
    let mut data = vec![0u8; 100];
    pool.parallel(10..90usize)
        .schedule("dynamic,7".parse().unwrap())
        .for_each_chunk_mut(&mut data, |_, chunk| chunk.fill(1));
    assert!(data[..10].iter().chain(&data[90..]).all(|&x| x == 0));
    assert!(data[10..90].iter().all(|&x| x == 1));
    let err = pool
        .parallel(0..101usize)
        .try_for_each_chunk_mut(&mut data, |_, _| panic!("nothing runs"))
        .unwrap_err();
    assert_eq!(err, keel::LoopError::SliceTooShort { end: 101, len: 100 });
    // The plain form panics with the same message, as slice indexing does.
    let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pool.parallel(0..101usize)
            .for_each_chunk_mut(&mut data, |_, _| panic!("nothing runs"))
    }))
    .expect_err("a range past the end panics");
    assert_eq!(payload.downcast_ref::<String>(), Some(&err.to_string()));
}
