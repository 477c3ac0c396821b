//! The farm's single-producer / single-consumer queue: a chain of
//! fixed-size blocks (unbounded, like FastFlow's `uSWSR_Ptr_Buffer`, or
//! bounded by a capacity), two monotonic indices whose difference is the
//! level, a spare block recycled from the consumer back to the producer,
//! and a [`Signal`] on each side for waiting. Written for the farm's hot
//! path: a push is one slot write, one index store and one notify; a pop is
//! one slot read and one index store. The protocol and every ordering are
//! in `README.md` beside this file; the loom models in `loom_tests.rs`
//! check them, and the unit tests below show the API.

use std::cell::Cell;
use std::fmt;
use std::mem::MaybeUninit;
use std::ptr;

use crossbeam_utils::CachePadded;

use super::signal::Signal;
use super::sync::{Arc, AtomicBool, AtomicPtr, AtomicU64, Ordering, UnsafeCell};

/// Slots per block (small under loom, so that models cross blocks).
#[cfg(not(loom))]
pub const BLOCK: usize = 128;
/// Slots per block (small under loom, so that models cross blocks).
#[cfg(loom)]
pub const BLOCK: usize = 2;

struct Block<T> {
    /// The next block; set by the producer before it publishes an index in it.
    next: AtomicPtr<Block<T>>,
    slots: [UnsafeCell<MaybeUninit<T>>; BLOCK],
}

impl<T> Block<T> {
    fn alloc() -> *mut Block<T> {
        Box::into_raw(Box::new(Block {
            next: AtomicPtr::new(ptr::null_mut()),
            slots: std::array::from_fn(|_| UnsafeCell::new(MaybeUninit::uninit())),
        }))
    }
}

struct Queue<T> {
    /// Items ever pushed. Written by the producer only.
    tail: CachePadded<AtomicU64>,
    /// Items ever popped. Written by the consumer only.
    head: CachePadded<AtomicU64>,
    /// `u64::MAX` when unbounded.
    capacity: u64,
    /// The producer has closed the queue (end of stream) or is gone.
    closed: AtomicBool,
    /// The consumer is gone: pushes fail.
    disconnected: AtomicBool,
    /// A block the consumer has finished with, for the producer to reuse.
    spare: AtomicPtr<Block<T>>,
    /// Woken when an item arrives or the queue closes.
    consumer_signal: Arc<Signal>,
    /// Woken when a bounded queue gets room or the consumer leaves.
    producer_signal: Arc<Signal>,
    /// The consumer's block and head, stored when it is dropped so that
    /// the last owner can drop what is left.
    consumer_block: UnsafeCell<*mut Block<T>>,
}

// SAFETY: items move from the producer thread to the consumer thread, so
// `T: Send` suffices; every shared field is atomic or written by one side
// under the protocol in README.md (slots before the index that publishes
// them, `consumer_block` by the consumer only, read by the last owner).
unsafe impl<T: Send> Send for Queue<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for Queue<T> {}

impl<T> Drop for Queue<T> {
    fn drop(&mut self) {
        // Both ends are gone: we own everything. Drop items in [head, tail)
        // starting from the consumer's block, then free the chain. The
        // consumer's block holds index `head`, or ends just before it when
        // `head` is a block boundary it has not crossed yet.
        let head = self.head.load(Ordering::Relaxed);
        let tail = self.tail.load(Ordering::Relaxed);
        let block_len = BLOCK as u64;
        let mut base = if head == 0 {
            0
        } else {
            (head - 1) / block_len * block_len
        };
        // SAFETY: no other owner exists; the consumer stored its block here.
        let mut block = self.consumer_block.with(|b| unsafe { *b });
        while !block.is_null() {
            for index in head.max(base)..tail.min(base + block_len) {
                let slot = (index % block_len) as usize;
                // SAFETY: indices in [head, tail) hold initialised items,
                // each dropped once here.
                unsafe {
                    (*block).slots[slot].with_mut(|s| (*s).assume_init_drop());
                }
            }
            base += block_len;
            // SAFETY: blocks of the chain were allocated by `Block::alloc`
            // and are freed once, here.
            let next = unsafe { (*block).next.load(Ordering::Relaxed) };
            // SAFETY: as above.
            drop(unsafe { Box::from_raw(block) });
            block = next;
        }
        let spare = self.spare.load(Ordering::Relaxed);
        if !spare.is_null() {
            // SAFETY: the spare block is in no chain and owned by the queue.
            drop(unsafe { Box::from_raw(spare) });
        }
    }
}

/// Why a push did not happen; the item comes back.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum PushError<T> {
    /// A bounded queue is at capacity.
    Full(T),
    /// The consumer is gone.
    Disconnected(T),
}

impl<T> fmt::Debug for PushError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PushError::Full(_) => "Full(..)",
            PushError::Disconnected(_) => "Disconnected(..)",
        })
    }
}

impl<T> PushError<T> {
    /// The item that was not pushed.
    pub fn into_inner(self) -> T {
        match self {
            PushError::Full(v) | PushError::Disconnected(v) => v,
        }
    }
}

/// What a pop found.
#[derive(Debug, PartialEq, Eq)]
pub enum Pop<T> {
    /// The next item.
    Item(T),
    /// Nothing yet.
    Empty,
    /// Nothing, and the producer has closed the queue: end of stream.
    Closed,
}

/// The sending end.
pub struct Producer<T> {
    q: Arc<Queue<T>>,
    /// Our copy of `tail`.
    tail: u64,
    /// The last `head` we read (never ahead of the real one).
    cached_head: Cell<u64>,
    block: *mut Block<T>,
    /// Pushes published since the consumer was last notified
    /// ([`Producer::push_deferred`]).
    unnotified: bool,
}

/// The receiving end.
pub struct Consumer<T> {
    q: Arc<Queue<T>>,
    /// Our copy of `head`.
    head: u64,
    /// The last `tail` we read (never ahead of the real one).
    cached_tail: u64,
    block: *mut Block<T>,
}

// SAFETY: each end is used by one thread at a time; the raw block pointer
// is owned by the end (see README.md), and items are `Send`.
unsafe impl<T: Send> Send for Producer<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for Consumer<T> {}

impl<T> fmt::Debug for Producer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Producer")
            .field("pushed", &self.tail)
            .field("capacity", &self.capacity())
            .finish()
    }
}

impl<T> fmt::Debug for Consumer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Consumer")
            .field("popped", &self.head)
            .finish()
    }
}

/// A queue of `capacity` items (`None` = unbounded; `Some(0)` is treated
/// as 1 — the farm rejects it before). Pushes notify `consumer_signal`;
/// pops from a bounded queue, and the consumer leaving, notify
/// `producer_signal`.
pub fn channel<T>(
    capacity: Option<usize>,
    consumer_signal: Arc<Signal>,
    producer_signal: Arc<Signal>,
) -> (Producer<T>, Consumer<T>) {
    let first = Block::alloc();
    let q = Arc::new(Queue {
        tail: CachePadded::new(AtomicU64::new(0)),
        head: CachePadded::new(AtomicU64::new(0)),
        capacity: capacity.map_or(u64::MAX, |c| c.max(1) as u64),
        closed: AtomicBool::new(false),
        disconnected: AtomicBool::new(false),
        spare: AtomicPtr::new(ptr::null_mut()),
        consumer_signal,
        producer_signal,
        consumer_block: UnsafeCell::new(first),
    });
    let producer = Producer {
        q: q.clone(),
        tail: 0,
        cached_head: Cell::new(0),
        block: first,
        unnotified: false,
    };
    let consumer = Consumer {
        q,
        head: 0,
        cached_tail: 0,
        block: first,
    };
    (producer, consumer)
}

impl<T> Producer<T> {
    /// The capacity (`None` = unbounded).
    pub fn capacity(&self) -> Option<usize> {
        (self.q.capacity != u64::MAX).then_some(self.q.capacity as usize)
    }

    /// Items (pushed and not yet popped) in the queue now: one index load.
    #[inline]
    pub fn len(&self) -> usize {
        // Acquire: a level read with the pops before it (also refreshes the
        // cache `has_room` uses). A level is a snapshot; it may be stale by
        // the time it is used, as FastFlow's `length()` is.
        let head = self.q.head.load(Ordering::Acquire);
        self.cached_head.set(head);
        (self.tail - head) as usize
    }

    /// Whether a push would find room: free for an unbounded queue; one
    /// index load for a bounded one only when the cached head says full.
    #[inline]
    pub fn has_room(&self) -> bool {
        if self.tail - self.cached_head.get() < self.q.capacity {
            return true;
        }
        // Acquire: the slot the consumer freed is no longer read by it.
        let head = self.q.head.load(Ordering::Acquire);
        self.cached_head.set(head);
        self.tail - head < self.q.capacity
    }

    /// Pushes `value`, or gives it back when the queue is full or the
    /// consumer is gone.
    #[inline]
    pub fn push(&mut self, value: T) -> Result<(), PushError<T>> {
        if !self.has_room() {
            return Err(PushError::Full(value));
        }
        self.push_past_capacity(value)
    }

    /// Pushes `value` even if the queue is at capacity (the farm's markers:
    /// at most one per queue, so memory stays bounded).
    #[inline]
    pub fn push_past_capacity(&mut self, value: T) -> Result<(), PushError<T>> {
        self.push_past_capacity_deferred(value)?;
        self.flush();
        Ok(())
    }

    /// As [`Producer::push`], but the item is published to the consumer,
    /// and the consumer notified, only at the next [`Producer::flush`] (or
    /// [`Producer::close`]). Both are stores to words a caught-up consumer
    /// reads — `tail` and the signal — so each costs a cache-line transfer
    /// between cores; a producer that pushes a batch pays for one of each
    /// instead of one per item, and the consumer takes the batch with one
    /// load of `tail`. The caller must flush before it waits itself, or the
    /// consumer may wait on items it cannot see.
    #[inline]
    pub fn push_deferred(&mut self, value: T) -> Result<(), PushError<T>> {
        if !self.has_room() {
            return Err(PushError::Full(value));
        }
        self.push_past_capacity_deferred(value)
    }

    /// [`Producer::push_past_capacity`] with the notification deferred
    /// until [`Producer::flush`].
    #[inline]
    pub fn push_past_capacity_deferred(&mut self, value: T) -> Result<(), PushError<T>> {
        if self.q.disconnected.load(Ordering::Relaxed) {
            return Err(PushError::Disconnected(value));
        }
        let slot = (self.tail % BLOCK as u64) as usize;
        if slot == 0 && self.tail != 0 {
            self.grow();
        }
        // SAFETY: slot `tail` is not published yet, so the consumer does not
        // read it; our block is live (the consumer frees only blocks it has
        // passed, and it cannot pass an index we have not published).
        unsafe {
            (*self.block).slots[slot].with_mut(|s| (*s).write(value));
        }
        self.tail += 1;
        self.unnotified = true;
        Ok(())
    }

    /// Publishes the pushes deferred since the last flush and notifies the
    /// consumer (nothing to do, and no shared write, when there were none).
    #[inline]
    pub fn flush(&mut self) {
        if self.unnotified {
            self.unnotified = false;
            self.publish();
            self.q.consumer_signal.notify();
        }
    }

    #[inline]
    fn publish(&self) {
        // Release: publishes the slots (and new blocks' links) below `tail`
        // to the consumer's Acquire load of `tail`.
        self.q.tail.store(self.tail, Ordering::Release);
    }

    /// Links a fresh (or recycled) block after ours and moves to it.
    #[cold]
    fn grow(&mut self) {
        // Acquire: the consumer finished reading the spare block's slots
        // before it released the block here.
        let spare = self.q.spare.swap(ptr::null_mut(), Ordering::Acquire);
        let next = if spare.is_null() {
            Block::alloc()
        } else {
            // SAFETY: the spare block is ours alone now.
            unsafe { (*spare).next.store(ptr::null_mut(), Ordering::Relaxed) };
            spare
        };
        // SAFETY: our block is live (see `push_past_capacity`). Relaxed is
        // enough: the consumer reads `next` only after an Acquire load of
        // `tail` that our Release store publishes.
        unsafe { (*self.block).next.store(next, Ordering::Relaxed) };
        self.block = next;
    }

    /// Ends the stream: the consumer pops what is left, then [`Pop::Closed`].
    pub fn close(&self) {
        // Deferred pushes are part of the stream: publish them first.
        self.publish();
        // Release: every push before happens-before the consumer's Acquire
        // load that sees `closed`.
        self.q.closed.store(true, Ordering::Release);
        self.q.consumer_signal.notify();
    }
}

impl<T> Drop for Producer<T> {
    fn drop(&mut self) {
        self.close();
    }
}

impl<T> Consumer<T> {
    /// Items in the queue now.
    pub fn len(&self) -> usize {
        (self.q.tail.load(Ordering::Acquire) - self.head) as usize
    }

    /// Whether the queue is empty now.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes the next item, if there is one.
    #[inline]
    pub fn pop(&mut self) -> Pop<T> {
        if self.head == self.cached_tail {
            // Acquire: pairs with the producer's Release store of `tail`,
            // making the slots (and block links) below it visible.
            self.cached_tail = self.q.tail.load(Ordering::Acquire);
            if self.head == self.cached_tail {
                // Acquire: pairs with `close`; every push came before, so
                // one more look at `tail` settles it.
                if self.q.closed.load(Ordering::Acquire) {
                    self.cached_tail = self.q.tail.load(Ordering::Acquire);
                    if self.head == self.cached_tail {
                        return Pop::Closed;
                    }
                } else {
                    return Pop::Empty;
                }
            }
        }
        let slot = (self.head % BLOCK as u64) as usize;
        if slot == 0 && self.head != 0 {
            self.advance();
        }
        // SAFETY: `head < tail`, so the producer wrote this slot and
        // published it with the `tail` store we acquired; it will not touch
        // it again before we publish a `head` past it.
        let value = unsafe { (*self.block).slots[slot].with(|s| (*s).assume_init_read()) };
        self.head += 1;
        // Release: the slot has been read, so the producer may reuse its
        // room (bounded) and levels see the pop.
        self.q.head.store(self.head, Ordering::Release);
        if self.q.capacity != u64::MAX {
            self.q.producer_signal.notify();
        }
        Pop::Item(value)
    }

    /// Moves to the next block, recycling the one we finished.
    #[cold]
    fn advance(&mut self) {
        let done = self.block;
        // SAFETY: the producer linked `next` before publishing an index in
        // it, and we acquired such an index (`head < tail`).
        let next = unsafe { (*done).next.load(Ordering::Relaxed) };
        debug_assert!(!next.is_null());
        self.block = next;
        // Release: our reads of `done`'s slots happen before the producer
        // reuses it (its swap is Acquire).
        if self
            .q
            .spare
            .compare_exchange(ptr::null_mut(), done, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            // SAFETY: `done` is out of the chain and no one else holds it.
            drop(unsafe { Box::from_raw(done) });
        }
    }

    /// Whether the producer has closed the queue (items may remain).
    pub fn is_closed(&self) -> bool {
        self.q.closed.load(Ordering::Acquire)
    }
}

impl<T> Drop for Consumer<T> {
    fn drop(&mut self) {
        let block = self.block;
        // SAFETY: only the consumer writes this cell; the queue reads it
        // after both ends are gone.
        self.q.consumer_block.with_mut(|b| unsafe { *b = block });
        // The queue's drop needs our head: it is already in `head`.
        self.q.disconnected.store(true, Ordering::Release);
        self.q.producer_signal.notify();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A bounded queue of two items between a producer thread and this
    /// one: a push into a full queue gives the item back, and after
    /// [`Producer::close`] the consumer pops what is left, then
    /// [`Pop::Closed`].
    #[test]
    fn bounded_queue_hands_items_over_in_order_then_closes() {
        let (mut tx, mut rx) =
            channel::<u32>(Some(2), Arc::new(Signal::new()), Arc::new(Signal::new()));
        tx.push(1).unwrap();
        tx.push(2).unwrap();
        assert_eq!(tx.push(3), Err(PushError::Full(3)));
        assert_eq!(rx.pop(), Pop::Item(1));
        let producer = std::thread::spawn(move || {
            for i in 3..=100 {
                let mut item = i;
                // Full: keep the item and try again once the consumer made room.
                while let Err(PushError::Full(back)) = tx.push(item) {
                    item = back;
                    std::thread::yield_now();
                }
            }
            tx.close();
        });
        let mut received = vec![1];
        loop {
            match rx.pop() {
                Pop::Item(i) => received.push(i),
                Pop::Empty => std::thread::yield_now(),
                Pop::Closed => break,
            }
        }
        producer.join().unwrap();
        assert_eq!(received, (1..=100).collect::<Vec<_>>());
    }
}
