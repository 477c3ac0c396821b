//! Helpers shared by the loop tests.

use std::sync::atomic::{AtomicU8, Ordering};

use keel::{ThreadPool, WaitPolicy};

/// A pool of `threads` that spins briefly (tests start many small loops).
pub fn pool(threads: usize) -> ThreadPool {
    ThreadPool::builder()
        .threads(threads)
        .wait_policy(WaitPolicy::Spins(1000))
        .build()
        .unwrap()
}

/// One counter per iteration, for exactly-once checks.
pub fn counters(n: u64) -> Vec<AtomicU8> {
    (0..n).map(|_| AtomicU8::new(0)).collect()
}

/// The iterations that did not run exactly once (at most ten shown).
pub fn not_once(hits: &[AtomicU8]) -> Vec<usize> {
    hits.iter()
        .enumerate()
        .filter(|(_, h)| h.load(Ordering::Relaxed) != 1)
        .map(|(i, _)| i)
        .take(10)
        .collect()
}

/// Every registered schedule name (with `workload_aware`, also `binlpt` and
/// `greedy`, which need hints), then `auto` with each selection method.
#[allow(dead_code)] // not every test binary sweeps the schedules
pub fn schedules(workload_aware: bool) -> Vec<String> {
    let mut all = keel::policy::dls::registry().names();
    if !workload_aware {
        all.retain(|n| !keel::policy::dls::WORKLOAD_SCHEDULES.contains(&n.as_str()));
    }
    all.extend(
        [
            "auto",
            "auto,keel",
            "auto,expert",
            "auto,exhaustive",
            "auto,random",
        ]
        .map(String::from),
    );
    all
}
