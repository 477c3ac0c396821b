//! Loom models of the shipped ring (`RUSTFLAGS="--cfg loom" cargo test -p
//! keel-omp --lib --release loom`): every interleaving of a few threads
//! arriving at a few loops on a short ring, which covers a slot's reuse
//! and a thread waiting for the slowest. Three threads that all wait take
//! loom minutes (each wait is a branch), so the three-participant model
//! has its first arrival decide before the other two race to pass.
//! Decisions are loom `Arc`s, so a decision never dropped (or dropped
//! twice) fails the model.

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

/// Three participants of one loop, the first done deciding before the
/// other two arrive together: the last of three passes empties the slot
/// (the decision's count is back to the one kept here) and frees it for
/// the next loop, which the first then decides again.
#[test]
fn loom_ring_three_threads_last_pass_frees_the_slot() {
    loom::model(|| {
        let ring = Arc::new(Ring::<Arc<u64>>::new(1));
        let kept = Arc::new(7);
        let (d, mine) = ring.arrive(0, 3, || (Arc::clone(&kept), ()));
        assert!(mine.is_some());
        drop(d);
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let ring = Arc::clone(&ring);
                loom::thread::spawn(move || {
                    let (d, mine): (_, Option<()>) = ring.arrive(0, 3, || unreachable!());
                    assert!(mine.is_none());
                    *d
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), 7);
        }
        assert_eq!(Arc::strong_count(&kept), 1);
        let (d, mine) = ring.arrive(1, 3, || (Arc::new(8), ()));
        assert!(mine.is_some());
        assert_eq!(*d, 8);
    });
}
