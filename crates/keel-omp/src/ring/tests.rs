//! The ring under real threads: one decider per loop, every thread sees
//! its loop's decision, threads run ahead by at most the ring's length,
//! and every decision is dropped once its loop is passed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use super::Ring;

/// `threads` threads each arrive at `loops` loops on a ring of `slots`;
/// returns how many times each loop was decided and the decision each
/// thread saw per loop.
fn run(threads: usize, loops: u64, slots: usize) -> (Vec<usize>, Vec<Vec<u64>>) {
    let ring = Ring::<Arc<u64>>::new(slots);
    let decided: Vec<AtomicUsize> = (0..loops).map(|_| AtomicUsize::new(0)).collect();
    let entered: Vec<AtomicUsize> = (0..loops).map(|_| AtomicUsize::new(0)).collect();
    let start = Barrier::new(threads);
    let seen = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|me| {
                let (ring, decided, entered, start) = (&ring, &decided, &entered, &start);
                s.spawn(move || {
                    start.wait();
                    let mut seen = Vec::new();
                    for seq in 0..loops {
                        entered[seq as usize].fetch_add(1, Ordering::SeqCst);
                        let (d, mine) = ring.arrive(seq, threads, || {
                            decided[seq as usize].fetch_add(1, Ordering::SeqCst);
                            (Arc::new(seq * 1000 + me as u64), me)
                        });
                        assert_eq!(mine.is_some(), *d % 1000 == me as u64);
                        // No thread gets past loop `seq` before every
                        // thread has arrived at loop `seq - slots`.
                        if let Some(back) = seq.checked_sub(slots as u64) {
                            assert_eq!(entered[back as usize].load(Ordering::SeqCst), threads);
                        }
                        seen.push(*d);
                        if me % 2 == 1 {
                            std::thread::yield_now();
                        }
                    }
                    seen
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    // Every slot is empty again: its decision was dropped.
    for slot in ring.slots.iter() {
        // SAFETY: every thread has joined; nothing else touches the cell.
        assert!(slot.decision.with(|c| unsafe { (*c).is_none() }));
        assert_eq!(slot.passed.load(Ordering::SeqCst), 0);
    }
    let decided = decided.iter().map(|d| d.load(Ordering::SeqCst)).collect();
    (decided, seen)
}

#[test]
fn one_decision_per_loop_seen_by_every_thread() {
    for (threads, slots) in [(2, 1), (3, 2), (8, 16), (16, 4)] {
        let loops = 2000;
        let (decided, seen) = run(threads, loops, slots);
        assert!(
            decided.iter().all(|&d| d == 1),
            "{threads} threads, {slots} slots"
        );
        for seq in 0..loops as usize {
            let first = seen[0][seq];
            assert_eq!(first / 1000, seq as u64);
            assert!(seen.iter().all(|s| s[seq] == first));
        }
    }
}

#[test]
fn a_decision_is_dropped_when_its_loop_is_passed() {
    let ring = Ring::<Arc<u64>>::new(2);
    let kept = Arc::new(7);
    let (d, mine) = ring.arrive(0, 2, || (Arc::clone(&kept), ()));
    assert!(mine.is_some());
    drop(d);
    // Held by the ring until the second thread passes.
    assert_eq!(Arc::strong_count(&kept), 2);
    let (d, mine): (_, Option<()>) = ring.arrive(0, 2, || unreachable!());
    assert!(mine.is_none());
    assert_eq!(*d, 7);
    drop(d);
    assert_eq!(Arc::strong_count(&kept), 1);
}

/// A decision that counts its copies.
struct Counted(Arc<AtomicUsize>);

impl Clone for Counted {
    fn clone(&self) -> Self {
        self.0.fetch_add(1, Ordering::Relaxed);
        Counted(Arc::clone(&self.0))
    }
}

/// The last participant to arrive, every other counted out already, takes
/// the slot's decision instead of copying it; one that arrives while
/// another has not passed copies it, and the last to pass drops the
/// slot's. Either way the slot is freed for the ring's next round.
#[test]
fn the_last_arrival_takes_the_decision_without_a_copy() {
    let ring = Ring::<Counted>::new(1);
    let copies = Arc::new(AtomicUsize::new(0));
    // Two threads, one after the other: the slot's copy is the only one.
    let (d, mine) = ring.arrive(0, 2, || (Counted(Arc::clone(&copies)), ()));
    assert!(mine.is_some());
    drop(d);
    assert_eq!(copies.load(Ordering::Relaxed), 1, "the slot's copy");
    let (d, mine): (_, Option<()>) = ring.arrive(0, 2, || unreachable!());
    assert!(mine.is_none());
    drop(d);
    assert_eq!(copies.load(Ordering::Relaxed), 1, "taken, not copied");
    assert_eq!(Arc::strong_count(&copies), 1, "every copy dropped");
    // Three threads: the second finds the third still to come, and copies.
    let (d, _) = ring.arrive(1, 3, || (Counted(Arc::clone(&copies)), ()));
    drop(d);
    let (d, _): (_, Option<()>) = ring.arrive(1, 3, || unreachable!());
    drop(d);
    assert_eq!(copies.load(Ordering::Relaxed), 3);
    let (d, _): (_, Option<()>) = ring.arrive(1, 3, || unreachable!());
    drop(d);
    assert_eq!(copies.load(Ordering::Relaxed), 3, "the last takes it");
    assert_eq!(Arc::strong_count(&copies), 1);
    // The slot is free for loop 2.
    let (_, mine) = ring.arrive(2, 1, || (Counted(Arc::clone(&copies)), ()));
    assert!(mine.is_some());
}

/// A reset ring is a new one: a team that counts its loops from 0 again
/// (a recycled team's next region) finds every slot free for its loop,
/// and a decision a thread never collected (a loop the rest of the team
/// did not reach) is dropped by the reset.
#[test]
fn a_reset_ring_starts_again_at_loop_zero() {
    let mut ring = Ring::<Arc<u64>>::new(4);
    let stranded = Arc::new(5);
    for seq in 0..6 {
        let (_, mine) = ring.arrive(seq, 1, || (Arc::new(seq), ()));
        assert!(mine.is_some());
    }
    // Loop 6: one of two threads arrives; the other never does.
    let (d, _) = ring.arrive(6, 2, || (Arc::clone(&stranded), ()));
    drop(d);
    assert_eq!(Arc::strong_count(&stranded), 2, "held by its slot");
    ring.reset();
    assert_eq!(Arc::strong_count(&stranded), 1, "dropped by the reset");
    for seq in 0..9 {
        let (d, mine) = ring.arrive(seq, 1, || (Arc::new(100 + seq), ()));
        assert!(mine.is_some(), "loop {seq} is decided afresh");
        assert_eq!(*d, 100 + seq);
    }
}
