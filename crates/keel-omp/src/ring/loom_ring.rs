//! Loom models of the shipped ring (`RUSTFLAGS="--cfg loom" cargo test -p
//! keel-omp --lib --release loom`): every interleaving of a few threads
//! arriving at a few loops on a short ring, which covers a slot's reuse
//! and a thread waiting for the slowest (three threads' waits, each a
//! loom branch, take minutes: two threads cover every step of the
//! protocol, the last to pass included). Decisions are loom `Arc`s, so a
//! decision never dropped (or dropped twice) fails the model.

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;

use super::Ring;

/// `threads` threads arrive at loops `0..loops` on a ring of `slots`:
/// one decider per loop, and every thread sees its loop's decision.
fn model(threads: usize, loops: u64, slots: usize) {
    loom::model(move || {
        let ring = Arc::new(Ring::<Arc<u64>>::new(slots));
        let decided = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..threads)
            .map(|me| {
                let ring = Arc::clone(&ring);
                let decided = Arc::clone(&decided);
                loom::thread::spawn(move || {
                    let mut seen = Vec::new();
                    for seq in 0..loops {
                        let (d, mine) = ring.arrive(seq, threads, || {
                            decided.fetch_add(1, Ordering::Relaxed);
                            (Arc::new(seq * 10 + me as u64), me)
                        });
                        assert_eq!(*d / 10, seq);
                        assert_eq!(mine.is_some(), *d % 10 == me as u64);
                        seen.push(*d);
                    }
                    seen
                })
            })
            .collect();
        let seen: Vec<Vec<u64>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(decided.load(Ordering::Relaxed), loops as usize);
        assert!(seen.iter().all(|s| *s == seen[0]));
    });
}

#[test]
fn loom_ring_two_threads_one_slot_two_loops() {
    model(2, 2, 1);
}

#[test]
fn loom_ring_two_threads_two_slots_three_loops() {
    model(2, 3, 2);
}
