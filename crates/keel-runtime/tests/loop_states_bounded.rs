//! A program that names a new loop every step (`.id(format!("pass/{step}"))`)
//! runs in bounded memory: Keel keeps at most `MAX_LOOP_STATES` loop states,
//! forgetting the ones used least recently, and a loop met again after it
//! was forgotten still runs every iteration exactly once.

use std::sync::atomic::{AtomicU64, Ordering};

use keel::loops::{kept_loop_states, MAX_LOOP_STATES};

/// Resident set size of this process, in bytes (Linux).
fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let resident: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
    resident * page
}

/// Distinct loop ids the test runs.
const IDS: u64 = 1_000_000;
/// What the ids may add to the resident set in all.
const GROWTH_LIMIT: u64 = 16 << 20;

#[test]
fn a_million_distinct_loop_ids_run_in_bounded_memory() {
    let pool = keel::ThreadPool::builder().threads(2).build().unwrap();
    let run = |name: String| {
        let sum = AtomicU64::new(0);
        pool.parallel(0..16u64).id(name).for_each(|i| {
            sum.fetch_add(i + 1, Ordering::Relaxed);
        });
        assert_eq!(sum.into_inner(), 136, "every iteration once");
    };
    // Warm up past the bound, so that the table, the allocator's arenas
    // and the pool are at their working size before the baseline.
    for step in 0..4 * MAX_LOOP_STATES as u64 {
        run(format!("warm/{step}"));
    }
    let before = rss_bytes();
    for step in 0..IDS {
        run(format!("pass/{step}"));
        assert!(kept_loop_states() <= MAX_LOOP_STATES);
    }
    let growth = rss_bytes().saturating_sub(before);
    assert!(
        growth <= GROWTH_LIMIT,
        "{IDS} loop ids grew the resident set by {} KiB",
        growth >> 10
    );
    // A forgotten loop that comes back starts over and still runs right.
    run("pass/0".to_string());
}
