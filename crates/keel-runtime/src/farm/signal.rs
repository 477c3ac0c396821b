//! [`Signal`]: how one farm thread sleeps until another has news for it —
//! an event count whose whole handshake is one atomic word (the pool's
//! technique, `pool/README.md`). The protocol is in `README.md` beside this
//! file, checked by the loom models in `loom_tests.rs`.

use super::sync::{pause, thread, AtomicU64, Mutex, Ordering};

/// Bit 0 of `state`: the owner has announced that it parks.
const SLEEPING: u64 = 1;
/// One event: `state` counts events in its upper bits.
const EVENT: u64 = 2;

/// Wakes one owning thread when something it waits for may have changed.
///
/// The owner takes a [`Signal::key`], checks its condition, and if the
/// condition does not hold calls [`Signal::wait`] with that key; anyone
/// who changes the condition calls [`Signal::notify`] afterwards. A notify
/// after the key makes `wait` return, so no change is missed.
#[derive(Debug)]
pub struct Signal {
    /// Event count (×2) plus [`SLEEPING`].
    state: AtomicU64,
    /// The owner, registered before its first park.
    owner: Mutex<Option<thread::Thread>>,
}

impl Default for Signal {
    fn default() -> Self {
        Self::new()
    }
}

impl Signal {
    /// A signal with no events yet.
    pub fn new() -> Self {
        Signal {
            state: AtomicU64::new(0),
            owner: Mutex::new(None),
        }
    }

    /// The current event count; pass it to [`Signal::wait`] after checking
    /// the condition.
    #[inline]
    pub fn key(&self) -> u64 {
        // Acquire: pairs with `notify`'s AcqRel, so the condition checked
        // after this load sees every change notified before it.
        self.state.load(Ordering::Acquire) & !SLEEPING
    }

    /// Records an event; wakes the owner if it announced that it parks.
    #[inline]
    pub fn notify(&self) {
        // Release: publishes the condition change made before this call to
        // the owner's next `key` / `wait` load. Acquire: orders the read of
        // `owner` after the owner's registration (it precedes its CAS).
        let before = self.state.fetch_add(EVENT, Ordering::AcqRel);
        if before & SLEEPING != 0 {
            self.wake();
        }
    }

    #[cold]
    fn wake(&self) {
        let owner = self.owner.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(owner) = owner {
            owner.unpark();
        }
    }

    /// Waits until an event arrives after `key` was taken: spins up to
    /// `spins` steps, then parks. Only the owning thread may wait. May
    /// return spuriously; callers re-check their condition.
    pub fn wait(&self, key: u64, spins: u32) {
        for step in 0..spins {
            if self.state.load(Ordering::Acquire) & !SLEEPING != key {
                return;
            }
            pause(step);
        }
        {
            let mut owner = self.owner.lock().unwrap_or_else(|e| e.into_inner());
            if owner.is_none() {
                *owner = Some(thread::current());
            }
        }
        // Announce sleep only on the value in which no event arrived: a
        // notify either comes first (the CAS fails, we return) or sees the
        // bit (and unparks us). One word, so no lost wake-up.
        if self
            .state
            .compare_exchange(key, key | SLEEPING, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        loop {
            thread::park();
            if self.state.load(Ordering::Acquire) & !SLEEPING != key {
                break;
            }
        }
        // Only the owner sets or clears the bit.
        self.state.fetch_and(!SLEEPING, Ordering::AcqRel);
    }
}
