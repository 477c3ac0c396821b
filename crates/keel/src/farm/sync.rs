//! The one place the farm's queue and signal take their synchronisation
//! types from: `std` normally, `loom` under `--cfg loom`, so that the loom
//! models in `tests/loom_farm.rs` check the very code the farm runs
//! (tokio's `crate::loom` facade).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Mutex};
#[cfg(loom)]
pub(crate) use loom::thread;

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Mutex};
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

/// One step of a bounded spin: a `spin_loop` hint, yielding the core every
/// [`YIELD_EVERY`] steps so that spinning stays harmless when threads
/// outnumber cores.
#[inline]
pub(crate) fn pause(step: u32) {
    if step % YIELD_EVERY == YIELD_EVERY - 1 {
        thread::yield_now();
    } else {
        std::hint::spin_loop();
    }
}

/// See [`pause`].
pub(crate) const YIELD_EVERY: u32 = 64;
