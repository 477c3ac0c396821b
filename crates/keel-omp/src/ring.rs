//! A team's ring of loop decisions without a lock: one slot per loop some
//! thread of the team reached and not every thread passed, claimed by a
//! sequence word.
//!
//! The `k`-th loop a thread starts is the `k`-th of every thread of its
//! team, so loop `k` lives in slot `k % slots`. The slot's word says which
//! loop it holds and how far that loop is: *free* for loop `k` (nobody
//! arrived), *deciding* (the first arrival won the compare-exchange and is
//! deciding), *published* (the decision is in the slot: written before a
//! `Release` store of the word, read after an `Acquire` load of it). Each
//! participant clones the decision, then counts itself out; the last to
//! count out empties the slot and frees it for loop `k + slots` with a
//! `Release` store, which the next first arrival's compare-exchange reads
//! with `Acquire`. A participant that finds every other counted out
//! already is the last, and takes the decision out instead of cloning it.
//! A thread that finds its slot still holding an earlier loop is `slots`
//! loops ahead of the slowest and waits.
//!
//! Per participant and loop that is one read of the slot's line and one
//! read-modify-write on it (two more for the first arrival; none for a
//! last arrival that finds the others counted out), where a lock
//! costs two read-modify-writes on one line shared by every loop of the
//! team, and a sleep when it is contended.

use crate::sync::{thread, AtomicU64, AtomicUsize, Ordering, UnsafeCell};

/// What a slot's word says about its loop (the low two bits).
const FREE: u64 = 0;
const DECIDING: u64 = 1;
const PUBLISHED: u64 = 2;

/// Loop `seq` at `phase`: loop numbers stay below 2⁶² (a team would need
/// centuries of loops at a nanosecond each to reach that).
fn word(seq: u64, phase: u64) -> u64 {
    (seq << 2) | phase
}

/// Spins before a waiting thread yields its CPU: a decision takes about a
/// microsecond, and a team may have more threads than cores.
const SPINS: u32 = 64;

/// One loop's slot, alone on its pair of cache lines (adjacent lines are
/// fetched in pairs, and the threads of consecutive loops work on
/// consecutive slots).
#[repr(align(128))]
struct Slot<D> {
    word: AtomicU64,
    /// Participants that have read the decision.
    passed: AtomicUsize,
    decision: UnsafeCell<Option<D>>,
}

/// The ring of a team (of any size): [`arrive`](Self::arrive) once per
/// thread and loop, in the team's loop order.
pub(crate) struct Ring<D> {
    slots: Box<[Slot<D>]>,
}

// SAFETY: the decision cell is written only by the thread that won the
// slot's compare-exchange (before it publishes) or by the last to pass it
// (after every reader counted itself out); the words order those writes
// against every read (see the module notes). D crosses threads by clone
// and by drop, hence Send + Sync.
unsafe impl<D: Send + Sync> Sync for Ring<D> {}
// SAFETY: as above; the ring owns its decisions.
unsafe impl<D: Send> Send for Ring<D> {}

impl<D> Slot<D> {
    /// Slot `seq` of a new ring: free for loop `seq`.
    fn free_for(seq: u64) -> Self {
        Slot {
            word: AtomicU64::new(word(seq, FREE)),
            passed: AtomicUsize::new(0),
            decision: UnsafeCell::new(None),
        }
    }
}

impl<D: Clone> Ring<D> {
    /// A ring of `slots` loops (at least one).
    pub(crate) fn new(slots: usize) -> Self {
        let slots = (0..slots.max(1) as u64).map(Slot::free_for).collect();
        Ring { slots }
    }

    /// Makes the ring as [`new`](Self::new) made it, for a team whose
    /// threads count their loops from 0 again, without allocating; any
    /// decision left in a slot (a loop some thread never reached) goes.
    /// `&mut`: no thread is in the ring.
    pub(crate) fn reset(&mut self) {
        for (seq, slot) in (0u64..).zip(self.slots.iter_mut()) {
            *slot = Slot::free_for(seq);
        }
    }

    /// A thread's arrival at the team's loop `seq`, in a team of `threads`
    /// (every one of which arrives at `seq` once): the decision, which the
    /// first arrival makes with `decide` (and also gets `decide`'s second
    /// value). Waits while the thread is the ring's length ahead of the
    /// slowest, or while the first arrival decides.
    pub(crate) fn arrive<E>(
        &self,
        seq: u64,
        threads: usize,
        decide: impl FnOnce() -> (D, E),
    ) -> (D, Option<E>) {
        let len = self.slots.len() as u64;
        let slot = &self.slots[(seq % len) as usize];
        let free = word(seq, FREE);
        let published = word(seq, PUBLISHED);
        let mut decide = Some(decide);
        let mut spins = 0u32;
        let (decision, mine) = loop {
            let now = slot.word.load(Ordering::Acquire);
            if now == published {
                // Every other participant has read the decision and counted
                // itself out (Acquire: their reads happened before; the
                // count was reset for this loop before the slot was freed
                // for it): this one is the last, and takes the decision
                // instead of a copy of it it would then drop, a write less
                // on the line of a decision's reference count.
                if slot.passed.load(Ordering::Acquire) + 1 >= threads {
                    slot.passed.store(0, Ordering::Relaxed);
                    // SAFETY: every other participant has read the cell;
                    // the next loop of this slot cannot be claimed before
                    // the store below.
                    let taken = slot.decision.with_mut(|cell| unsafe { (*cell).take() });
                    slot.word.store(word(seq + len, FREE), Ordering::Release);
                    match taken {
                        Some(decision) => return (decision, None),
                        None => unreachable!("a published loop slot holds its decision"),
                    }
                }
                // SAFETY: published: the decider's write happened before
                // (Acquire above), and the cell is not emptied before this
                // thread counts itself out below.
                let seen = slot.decision.with(|cell| unsafe { (*cell).clone() });
                match seen {
                    Some(decision) => break (decision, None),
                    None => unreachable!("a published loop slot holds its decision"),
                }
            }
            if now == free
                && slot
                    .word
                    .compare_exchange(
                        free,
                        word(seq, DECIDING),
                        Ordering::Acquire,
                        Ordering::Relaxed,
                    )
                    .is_ok()
            {
                let Some(decide) = decide.take() else {
                    unreachable!("a thread wins a loop's slot once")
                };
                let (decision, extra) = decide();
                // SAFETY: this thread won the slot; nobody reads the cell
                // before the Release store below.
                slot.decision
                    .with_mut(|cell| unsafe { *cell = Some(decision.clone()) });
                slot.word.store(published, Ordering::Release);
                break (decision, Some(extra));
            }
            if now != free {
                // Deciding, or the slot still holds loop `seq - len`.
                wait(&mut spins);
            }
        };
        // AcqRel: the last to pass sees every other's read of the cell
        // done (the counts form one release sequence).
        if slot.passed.fetch_add(1, Ordering::AcqRel) + 1 >= threads {
            slot.passed.store(0, Ordering::Relaxed);
            // SAFETY: every participant has read the cell; the next loop
            // of this slot cannot be claimed before the store below.
            let gone = slot.decision.with_mut(|cell| unsafe { (*cell).take() });
            slot.word.store(word(seq + len, FREE), Ordering::Release);
            drop(gone);
        }
        (decision, mine)
    }
}

/// One wait for another thread of the team: spin a little, then yield.
#[cfg(not(loom))]
#[inline]
fn wait(spins: &mut u32) {
    if *spins < SPINS {
        *spins += 1;
        std::hint::spin_loop();
    } else {
        thread::yield_now();
    }
}

/// Under loom every wait yields: loom then runs another thread instead of
/// exploring the spins.
#[cfg(loom)]
fn wait(_spins: &mut u32) {
    thread::yield_now();
}

#[cfg(all(test, loom))]
mod loom_ring;

#[cfg(all(test, not(loom)))]
mod tests;
