//! The one place the pool's fork/join protocol, the farm's queue and
//! signal, and a loop instance's protocol (its claim counters, slots and
//! steal ranges, `Workshare`'s once-only preparation and countdown, the
//! `Arc` a `Cursor` holds its instance by, the loop state's lock) take
//! their synchronisation from: `std` normally, `loom` under `--cfg loom`,
//! so that the loom models (`pool/loom_tests.rs`, `farm/loom_tests.rs`,
//! `loops/loom_tests.rs`, `loops/foreign/loom_cursor.rs`)
//! check the very code that ships (tokio's `crate::loom` facade). Without loom every item here is `std`'s own or an
//! `#[inline(always)]` wrapper around it, so the shipped code is what it
//! would be if written against `std` directly.
//!
//! What is not here is not modelled: the pool's id counter and the
//! `OnceLock` of worker handles (written once, before any worker can run a
//! region), core pinning and thread names (operating-system calls loom has
//! no model of; the models build pools without pinning); and the loops'
//! process-wide switches and caches (`record_all`'s flag, the parsed
//! `KEEL_SCHEDULE`, the `auto` portfolio), which are `std` statics that no
//! loom object could outlive an execution in, and which no instance's
//! protocol orders anything through.

#[cfg(loom)]
pub(crate) use loom::hint;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Condvar, Mutex, MutexGuard};
#[cfg(loom)]
pub(crate) use loom::thread;

#[cfg(not(loom))]
pub(crate) use std::hint;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
#[cfg(not(loom))]
pub(crate) use std::thread;

/// Interior mutability with loom's closure API, free without loom.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) fn new(value: T) -> Self {
        UnsafeCell(std::cell::UnsafeCell::new(value))
    }
    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// `std::sync::OnceLock`'s `get_or_init` over loom's types (loom has no
/// `OnceLock`): the initialiser runs under a loom mutex, so later arrivals
/// block on it as they block on `std`'s, and the value is published by a
/// `Release` store that `get` reads with `Acquire`, as `std`'s `Once` does.
/// The value sits in a loom cell, so a read that the store does not order
/// before is a race loom reports.
#[cfg(loom)]
pub(crate) struct OnceLock<T> {
    init: Mutex<()>,
    done: AtomicBool,
    value: UnsafeCell<Option<T>>,
    /// Initialisers run so far: at most one, which the models assert.
    runs: AtomicUsize,
}

// SAFETY: as `std`'s `OnceLock`: the value is written once, under `init`,
// before `done` is set, and only read after `done` is seen set.
#[cfg(loom)]
unsafe impl<T: Send + Sync> Sync for OnceLock<T> {}

#[cfg(loom)]
impl<T> OnceLock<T> {
    pub(crate) fn new() -> Self {
        OnceLock {
            init: Mutex::new(()),
            done: AtomicBool::new(false),
            value: UnsafeCell::new(None),
            runs: AtomicUsize::new(0),
        }
    }

    pub(crate) fn get(&self) -> Option<&T> {
        if !self.done.load(Ordering::Acquire) {
            return None;
        }
        // SAFETY: `done` is set only after the value's one write, and that
        // Acquire load orders this read after it.
        self.value.with(|value| unsafe { (*value).as_ref() })
    }

    pub(crate) fn get_or_init(&self, f: impl FnOnce() -> T) -> &T {
        if let Some(value) = self.get() {
            return value;
        }
        let _guard = self.init.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(value) = self.get() {
            return value;
        }
        self.runs.fetch_add(1, Ordering::Relaxed);
        let value = f();
        // SAFETY: under `init`, and `done` is still clear, so no reader
        // holds a reference into the cell.
        self.value.with_mut(|cell| unsafe { *cell = Some(value) });
        self.done.store(true, Ordering::Release);
        self.get().expect("just set")
    }

    /// How many initialisers ran.
    #[cfg(test)]
    pub(crate) fn runs(&self) -> usize {
        self.runs.load(Ordering::Relaxed)
    }
}

/// Bounds a spin budget for the models: under loom every spin step is a
/// yield that loom explores as one more interleaving, so a budget of
/// thousands would never finish; 0 to 2 steps still take the spinning path
/// of every wait. The identity without loom.
#[inline(always)]
pub(crate) fn spin_budget(spins: u32) -> u32 {
    #[cfg(loom)]
    {
        spins.min(2)
    }
    #[cfg(not(loom))]
    {
        spins
    }
}

/// One step of a bounded spin: a `spin_loop` hint, yielding the core every
/// [`YIELD_EVERY`] steps so that spinning stays harmless when threads
/// outnumber cores. Under loom the hint itself yields to the other threads.
#[inline]
pub(crate) fn pause(step: u32) {
    if step % YIELD_EVERY == YIELD_EVERY - 1 {
        thread::yield_now();
    } else {
        hint::spin_loop();
    }
}

/// See [`pause`].
pub(crate) const YIELD_EVERY: u32 = 64;
