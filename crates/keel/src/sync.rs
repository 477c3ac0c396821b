//! The one place the pool's fork/join protocol and the farm's queue and
//! signal take their synchronisation from: `std` normally, `loom` under
//! `--cfg loom`, so that the loom models (`pool/loom_tests.rs`,
//! `farm/loom_tests.rs`) check the very code that ships (tokio's
//! `crate::loom` facade). Without loom every item here is `std`'s own or an
//! `#[inline(always)]` wrapper around it, so the shipped code is what it
//! would be if written against `std` directly.
//!
//! What is not here is not modelled: the pool's id counter and the
//! `OnceLock` of worker handles (written once, before any worker can run a
//! region), core pinning and thread names (operating-system calls loom has
//! no model of; the models build pools without pinning).

#[cfg(loom)]
pub(crate) use loom::hint;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Condvar, Mutex};
#[cfg(loom)]
pub(crate) use loom::thread;

#[cfg(not(loom))]
pub(crate) use std::hint;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Condvar, Mutex};
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
