//! The rayon side: `par_iter().for_each` with splitter bounds for a
//! schedule, counting the pieces (rayon's chunks) as they run.
//!
//! rayon calls a `for_each_init` initialiser once per piece the splitter
//! produces; the initialiser bumps a thread-local counter (about a
//! nanosecond, against at least 100 ns of work per iteration), and
//! [`take_pieces`] sums and clears the counters of every worker.

use std::cell::Cell;

use rayon::prelude::*;

thread_local! {
    static PIECES: Cell<u64> = const { Cell::new(0) };
}

/// Runs `body(i)` for `i` in `0..n` with rayon's splitter bounded by
/// `(min_len, max_len)`, counting the pieces. Call it inside the pool
/// (`install`) to measure in-pool loops.
pub fn for_each_counted(n: u64, (min_len, max_len): (usize, usize), body: impl Fn(u64) + Sync) {
    // rayon's u64 ranges are not indexed (no with_min_len); usize ones are.
    let n = usize::try_from(n).expect("loop length fits in usize");
    (0..n)
        .into_par_iter()
        .with_min_len(min_len)
        .with_max_len(max_len)
        .for_each_init(
            || PIECES.with(|c| c.set(c.get() + 1)),
            |_, i| body(i as u64),
        );
}

/// Pieces run on `pool`'s workers since the last call; clears the counters.
pub fn take_pieces(pool: &rayon::ThreadPool) -> u64 {
    pool.broadcast(|_| PIECES.with(|c| c.replace(0)))
        .into_iter()
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::Sched;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn static_and_dynamic_mappings_give_the_documented_piece_counts() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        take_pieces(&pool);
        for (sched, want) in [
            (Sched::Static, 2),
            (Sched::Dynamic(1), 2048),
            (Sched::Dynamic(8), 256),
        ] {
            let sum = AtomicU64::new(0);
            pool.install(|| {
                for_each_counted(2048, sched.rayon_bounds(2048, 2), |i| {
                    sum.fetch_add(i, Ordering::Relaxed);
                })
            });
            assert_eq!(sum.into_inner(), 2047 * 2048 / 2, "{sched:?}");
            assert_eq!(take_pieces(&pool), want, "{sched:?}");
        }
        pool.install(|| for_each_counted(2048, Sched::Guided(1).rayon_bounds(2048, 2), |_| {}));
        assert!(take_pieces(&pool) >= 1);
    }
}
