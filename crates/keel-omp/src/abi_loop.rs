//! libgomp's `long` loop entry points: `GOMP_loop_*_start`, `*_next`,
//! `GOMP_loop_start`, and the `GOMP_loop_end*` every loop ends with.
//!
//! libgomp's `nonmonotonic_*` and `maybe_nonmonotonic_*` names are
//! aliases of its monotonic definitions; here they differ only in whether
//! Keel may take the loop under a non-monotonic schedule.

use std::ffi::{c_long, c_void};

use crate::bounds::Bounds;
use crate::settings::Kind;
use crate::team::{self, LoopCall, Step};
use crate::{guard, real};

/// A loop variable's type as libgomp passes it: `long` or `unsigned long long`.
pub(crate) trait Word {
    /// The value from its raw 64-bit word.
    fn from_raw(raw: i64) -> Self;
}

impl Word for i64 {
    fn from_raw(raw: i64) -> Self {
        raw
    }
}

impl Word for u64 {
    fn from_raw(raw: i64) -> Self {
        raw as u64
    }
}

/// Writes a chunk into libgomp's out-parameters, or forwards.
///
/// # Safety
/// `istart` and `iend` are valid for writes (libgomp's contract).
pub(crate) unsafe fn hand_out<T: Word>(
    step: Step,
    istart: *mut T,
    iend: *mut T,
    forward: impl FnOnce() -> bool,
) -> bool {
    match step {
        Step::Chunk(s, e) => {
            // SAFETY: the caller's contract.
            unsafe {
                *istart = T::from_raw(s);
                *iend = T::from_raw(e);
            }
            true
        }
        Step::Done => false,
        Step::Forward => forward(),
    }
}

/// Starts `call` on this thread: `Some` with whether it got a first chunk
/// (written into the out-parameters) when Keel takes the loop, `None` when
/// the caller must forward the whole loop to libgomp.
///
/// # Safety
/// `istart` and `iend` are valid for writes (libgomp's contract).
pub(crate) unsafe fn start_taken<T: Word>(
    call: &LoopCall,
    istart: *mut T,
    iend: *mut T,
) -> Option<bool> {
    // SAFETY: the caller's contract.
    team::begin_first(call).map(|first| unsafe { hand_out(first, istart, iend, || false) })
}

macro_rules! runtime_start {
    ($name:ident, $imp:ident, $monotonic:expr) => {
        with_site!($name => $imp(start: c_long, end: c_long, incr: c_long, istart: *mut c_long, iend: *mut c_long) -> bool);

        unsafe extern "C" fn $imp(
            start: c_long,
            end: c_long,
            incr: c_long,
            istart: *mut c_long,
            iend: *mut c_long,
            site: f64,
        ) -> bool {
            guard(|| {
                let call = LoopCall {
                    kind: Kind::Runtime,
                    monotonic: $monotonic,
                    bounds: Bounds::Long { start, end, incr },
                    site: crate::site::site(site),
                };
                // SAFETY: libgomp's contract: the out-parameters are valid;
                // forwarded, the caller's own arguments to libgomp's definition.
                unsafe { start_taken(&call, istart, iend).unwrap_or_else(|| real::$name()(start, end, incr, istart, iend)) }
            })
        }
    };
}

macro_rules! chunked_start {
    ($name:ident, $imp:ident, $kind:expr, $monotonic:expr) => {
        with_site!($name => $imp(start: c_long, end: c_long, incr: c_long, chunk: c_long, istart: *mut c_long, iend: *mut c_long) -> bool);

        unsafe extern "C" fn $imp(
            start: c_long,
            end: c_long,
            incr: c_long,
            chunk: c_long,
            istart: *mut c_long,
            iend: *mut c_long,
            site: f64,
        ) -> bool {
            guard(|| {
                let call = LoopCall {
                    kind: $kind,
                    monotonic: $monotonic,
                    bounds: Bounds::Long { start, end, incr },
                    site: crate::site::site(site),
                };
                // SAFETY: libgomp's contract: the out-parameters are valid;
                // forwarded, the caller's own arguments to libgomp's definition.
                unsafe { start_taken(&call, istart, iend).unwrap_or_else(|| real::$name()(start, end, incr, chunk, istart, iend)) }
            })
        }
    };
}

macro_rules! next {
    ($name:ident, $ty:ty) => {
        #[doc = concat!("libgomp's `", stringify!($name), "`: the thread's next chunk.")]
        ///
        /// # Safety
        /// libgomp's contract: both pointers are valid for writes.
        #[no_mangle]
        pub unsafe extern "C" fn $name(istart: *mut $ty, iend: *mut $ty) -> bool {
            guard(|| {
                // SAFETY: the caller's contract; forwarding its own arguments.
                unsafe {
                    $crate::abi_loop::hand_out($crate::team::next(), istart, iend, || {
                        real::$name()(istart, iend)
                    })
                }
            })
        }
    };
}
pub(crate) use next;

runtime_start!(GOMP_loop_runtime_start, runtime_start_m, true);
runtime_start!(GOMP_loop_nonmonotonic_runtime_start, runtime_start_n, false);
runtime_start!(
    GOMP_loop_maybe_nonmonotonic_runtime_start,
    runtime_start_mn,
    false
);
chunked_start!(
    GOMP_loop_dynamic_start,
    dynamic_start_m,
    Kind::Dynamic,
    true
);
chunked_start!(
    GOMP_loop_nonmonotonic_dynamic_start,
    dynamic_start_n,
    Kind::Dynamic,
    false
);
chunked_start!(GOMP_loop_guided_start, guided_start_m, Kind::Guided, true);
chunked_start!(
    GOMP_loop_nonmonotonic_guided_start,
    guided_start_n,
    Kind::Guided,
    false
);

next!(GOMP_loop_runtime_next, c_long);
next!(GOMP_loop_nonmonotonic_runtime_next, c_long);
next!(GOMP_loop_maybe_nonmonotonic_runtime_next, c_long);
next!(GOMP_loop_dynamic_next, c_long);
next!(GOMP_loop_nonmonotonic_dynamic_next, c_long);
next!(GOMP_loop_guided_next, c_long);
next!(GOMP_loop_nonmonotonic_guided_next, c_long);

/// The kind and monotonicity of `GOMP_loop_start`'s `sched` argument
/// (GCC's encoding, decoded the same way by libgomp's
/// `gomp_adjust_sched`): 0 `runtime`, 1 `static`, 2 `dynamic`, 3 `guided`,
/// 4 `nonmonotonic:runtime`, the monotonic modifier `0x80000000` or-ed
/// in. `None` for the kinds Keel never takes (static, auto, unknown).
pub(crate) fn start_kind(sched: c_long) -> Option<(Kind, bool)> {
    let word = sched as u64;
    let monotonic = word & 0x8000_0000 != 0;
    let kind = match word & 0x7fff_ffff {
        0 | 4 => Kind::Runtime,
        2 => Kind::Dynamic,
        3 => Kind::Guided,
        _ => return None,
    };
    Some((kind, monotonic))
}

with_site!(GOMP_loop_start => loop_start(start: c_long, end: c_long, incr: c_long, sched: c_long, chunk: c_long, istart: *mut c_long, iend: *mut c_long, reductions: *mut usize, mem: *mut *mut c_void) -> bool);

/// `GOMP_loop_start`: taken only as a plain loop. Task reductions
/// (`reductions`), scan or conditional-lastprivate memory (`mem`) and a
/// start that only sets the loop up (`istart` null) stay libgomp's: they
/// live in libgomp's work share.
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn loop_start(
    start: c_long,
    end: c_long,
    incr: c_long,
    sched: c_long,
    chunk: c_long,
    istart: *mut c_long,
    iend: *mut c_long,
    reductions: *mut usize,
    mem: *mut *mut c_void,
    site: f64,
) -> bool {
    guard(|| {
        let plain = reductions.is_null() && mem.is_null() && !istart.is_null() && !iend.is_null();
        if let (true, Some((kind, monotonic))) = (plain, start_kind(sched)) {
            let call = LoopCall {
                kind,
                monotonic,
                bounds: Bounds::Long { start, end, incr },
                site: crate::site::site(site),
            };
            // SAFETY: libgomp's contract: the out-parameters are valid.
            if let Some(got) = unsafe { start_taken(&call, istart, iend) } {
                return got;
            }
        }
        // SAFETY: the caller's own arguments, to libgomp's definition.
        unsafe {
            real::GOMP_loop_start()(
                start, end, incr, sched, chunk, istart, iend, reductions, mem,
            )
        }
    })
}

/// libgomp's `GOMP_loop_end`: the end of a loop with a barrier.
#[no_mangle]
pub extern "C" fn GOMP_loop_end() {
    guard(|| {
        // SAFETY: libgomp's barrier / loop end, called as the program would.
        unsafe {
            if team::end() {
                real::GOMP_barrier()();
            } else {
                real::GOMP_loop_end()();
            }
        }
    })
}

/// libgomp's `GOMP_loop_end_nowait`: the end of a `nowait` loop.
#[no_mangle]
pub extern "C" fn GOMP_loop_end_nowait() {
    guard(|| {
        if !team::end() {
            // SAFETY: libgomp's loop end, called as the program would.
            unsafe { real::GOMP_loop_end_nowait()() }
        }
    })
}

/// libgomp's `GOMP_loop_end_cancel`: the end of a cancellable loop;
/// `true` when the region was cancelled.
#[no_mangle]
pub extern "C" fn GOMP_loop_end_cancel() -> bool {
    guard(|| {
        // SAFETY: libgomp's barrier / loop end, called as the program would.
        unsafe {
            if team::end() {
                real::GOMP_barrier_cancel()()
            } else {
                real::GOMP_loop_end_cancel()()
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::start_kind;
    use crate::settings::Kind;

    #[test]
    fn gomp_loop_start_sched_encoding() {
        assert_eq!(start_kind(0), Some((Kind::Runtime, false)));
        assert_eq!(start_kind(4), Some((Kind::Runtime, false)));
        assert_eq!(start_kind(0x8000_0000), Some((Kind::Runtime, true)));
        assert_eq!(start_kind(2), Some((Kind::Dynamic, false)));
        assert_eq!(start_kind(0x8000_0002), Some((Kind::Dynamic, true)));
        assert_eq!(start_kind(3), Some((Kind::Guided, false)));
        assert_eq!(start_kind(0x8000_0001), None, "static");
        assert_eq!(start_kind(1), None);
        assert_eq!(start_kind(5), None);
        // The modifier sign-extended into a negative long.
        assert_eq!(
            start_kind(0xffff_ffff_8000_0003u64 as i64),
            Some((Kind::Guided, true))
        );
    }
}
