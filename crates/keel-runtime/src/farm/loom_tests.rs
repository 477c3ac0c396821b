//! Loom models of the farm's queue and signal (`README.md` beside this
//! file): the shipped `spsc` and `Signal`, compiled against loom's atomics
//! through the crate's `sync` facade, with blocks of 2 slots so that every
//! model crosses block boundaries and recycles a block. Loom fails a model
//! on a data race over a slot (broken publication), on a lost wake-up
//! (every thread parked), or on a leaked allocation.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p keel-runtime
//! --lib --release loom`.

use super::spsc::{channel, Consumer, Pop, PushError};
use super::Signal;
use crate::sync::{thread, Arc, AtomicUsize, Ordering};

/// Pops until the end of stream, waiting on `signal` when empty.
fn drain<T>(rx: &mut Consumer<T>, signal: &Signal) -> Vec<T> {
    let mut got = Vec::new();
    loop {
        let key = signal.key();
        match rx.pop() {
            Pop::Item(v) => got.push(v),
            Pop::Empty => signal.wait(key, 0),
            Pop::Closed => return got,
        }
    }
}

/// Unbounded: three items cross a block; the consumer parks when it finds
/// the queue empty and must be woken by each push and by the close.
#[test]
fn unbounded_items_arrive_in_order_and_close_wakes_the_consumer() {
    loom::model(|| {
        let consumer_signal = Arc::new(Signal::new());
        let producer_signal = Arc::new(Signal::new());
        let (mut tx, mut rx) = channel::<u32>(None, consumer_signal.clone(), producer_signal);
        let producer = thread::spawn(move || {
            for i in 0..3 {
                tx.push(i).unwrap();
            }
            // Dropping the producer closes the queue.
        });
        let got = drain(&mut rx, &consumer_signal);
        assert_eq!(got, [0, 1, 2]);
        producer.join().unwrap();
    });
}

/// Deferred pushes: the items are published at once, the wake-up comes
/// with `flush`. The producer then waits for the consumer's receipt before
/// it closes, so only the flush can wake a consumer parked on the empty
/// queue: a flush that lost the wake-up deadlocks the model.
#[test]
fn deferred_pushes_are_woken_by_one_flush() {
    loom::model(|| {
        let consumer_signal = Arc::new(Signal::new());
        let producer_signal = Arc::new(Signal::new());
        let (mut tx, mut rx) =
            channel::<u32>(None, consumer_signal.clone(), producer_signal.clone());
        let received = Arc::new(AtomicUsize::new(0));
        let receipt = received.clone();
        let receipt_signal = producer_signal.clone();
        let producer = thread::spawn(move || {
            tx.push_deferred(0).unwrap();
            tx.push_past_capacity_deferred(1).unwrap();
            tx.flush();
            loop {
                let key = producer_signal.key();
                if receipt.load(Ordering::Acquire) == 2 {
                    break;
                }
                producer_signal.wait(key, 0);
            }
        });
        let mut got = Vec::new();
        while got.len() < 2 {
            let key = consumer_signal.key();
            match rx.pop() {
                Pop::Item(v) => got.push(v),
                Pop::Empty => consumer_signal.wait(key, 0),
                Pop::Closed => unreachable!("closed before the receipt"),
            }
        }
        assert_eq!(got, [0, 1]);
        received.store(2, Ordering::Release);
        receipt_signal.notify();
        producer.join().unwrap();
    });
}

/// Bounded at one slot: the producer waits for room on its own signal, the
/// consumer's pops wake it.
#[test]
fn bounded_producer_waits_for_room_and_is_woken() {
    loom::model(|| {
        let consumer_signal = Arc::new(Signal::new());
        let producer_signal = Arc::new(Signal::new());
        let (mut tx, mut rx) =
            channel::<u32>(Some(1), consumer_signal.clone(), producer_signal.clone());
        let producer = thread::spawn(move || {
            for i in 0..3 {
                let mut item = i;
                loop {
                    let key = producer_signal.key();
                    match tx.push(item) {
                        Ok(()) => break,
                        Err(PushError::Full(back)) => {
                            item = back;
                            producer_signal.wait(key, 0);
                        }
                        Err(PushError::Disconnected(_)) => panic!("consumer alive"),
                    }
                }
            }
        });
        let got = drain(&mut rx, &consumer_signal);
        assert_eq!(got, [0, 1, 2]);
        producer.join().unwrap();
    });
}

struct Counted(Arc<AtomicUsize>);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// A consumer that leaves early: the producer sees `Disconnected`, and the
/// items left in the queue are dropped exactly once, with their blocks.
#[test]
fn items_left_behind_are_dropped_once() {
    loom::model(|| {
        let dropped = Arc::new(AtomicUsize::new(0));
        let consumer_signal = Arc::new(Signal::new());
        let producer_signal = Arc::new(Signal::new());
        let (mut tx, mut rx) = channel::<Counted>(None, consumer_signal, producer_signal);
        let d = dropped.clone();
        let producer = thread::spawn(move || {
            let mut pushed = 0;
            for _ in 0..3 {
                match tx.push(Counted(d.clone())) {
                    Ok(()) => pushed += 1,
                    Err(e) => drop(e.into_inner()),
                }
            }
            pushed
        });
        if let Pop::Item(first) = rx.pop() {
            drop(first);
        }
        drop(rx);
        let _pushed = producer.join().unwrap();
        assert_eq!(dropped.load(Ordering::Relaxed), 3);
    });
}

/// The signal alone: a notify after the key is never lost, whether the
/// owner is spinning, about to park, or parked.
#[test]
fn a_notify_after_the_key_wakes_the_owner() {
    loom::model(|| {
        let signal = Arc::new(Signal::new());
        let flag = Arc::new(AtomicUsize::new(0));
        let (s, f) = (signal.clone(), flag.clone());
        let notifier = thread::spawn(move || {
            f.store(1, Ordering::Relaxed);
            s.notify();
        });
        loop {
            let key = signal.key();
            if flag.load(Ordering::Relaxed) == 1 {
                break;
            }
            signal.wait(key, 0);
        }
        notifier.join().unwrap();
    });
}
