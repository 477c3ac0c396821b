//! libgomp's `unsigned long long` loop entry points (`GOMP_loop_ull_*`):
//! the same protocol as the `long` ones, with a direction flag `up` and,
//! counting down, a step in two's complement.

use std::ffi::{c_long, c_ulonglong, c_void};

use crate::abi_loop::{next, start_kind, start_taken};
use crate::bounds::Bounds;
use crate::settings::Kind;
use crate::team::LoopCall;
use crate::{guard, real};

type Ull = c_ulonglong;

macro_rules! runtime_start {
    ($name:ident, $imp:ident, $monotonic:expr) => {
        with_site!($name => $imp(up: bool, start: Ull, end: Ull, incr: Ull, istart: *mut Ull, iend: *mut Ull) -> bool);

        unsafe extern "C" fn $imp(
            up: bool,
            start: Ull,
            end: Ull,
            incr: Ull,
            istart: *mut Ull,
            iend: *mut Ull,
            site: f64,
        ) -> bool {
            guard(|| {
                let call = LoopCall {
                    kind: Kind::Runtime,
                    monotonic: $monotonic,
                    bounds: Bounds::Ull { up, start, end, incr },
                    site: crate::site::site(site),
                };
                // SAFETY: libgomp's contract: the out-parameters are valid;
                // forwarded, the caller's own arguments to libgomp's definition.
                unsafe { start_taken(&call, istart, iend).unwrap_or_else(|| real::$name()(up, start, end, incr, istart, iend)) }
            })
        }
    };
}

macro_rules! chunked_start {
    ($name:ident, $imp:ident, $kind:expr, $monotonic:expr) => {
        with_site!($name => $imp(up: bool, start: Ull, end: Ull, incr: Ull, chunk: Ull, istart: *mut Ull, iend: *mut Ull) -> bool);

        #[allow(clippy::too_many_arguments)]
        unsafe extern "C" fn $imp(
            up: bool,
            start: Ull,
            end: Ull,
            incr: Ull,
            chunk: Ull,
            istart: *mut Ull,
            iend: *mut Ull,
            site: f64,
        ) -> bool {
            guard(|| {
                let call = LoopCall {
                    kind: $kind,
                    monotonic: $monotonic,
                    bounds: Bounds::Ull { up, start, end, incr },
                    site: crate::site::site(site),
                };
                // SAFETY: libgomp's contract: the out-parameters are valid;
                // forwarded, the caller's own arguments to libgomp's definition.
                unsafe { start_taken(&call, istart, iend).unwrap_or_else(|| real::$name()(up, start, end, incr, chunk, istart, iend)) }
            })
        }
    };
}

runtime_start!(GOMP_loop_ull_runtime_start, ull_runtime_start_m, true);
runtime_start!(
    GOMP_loop_ull_nonmonotonic_runtime_start,
    ull_runtime_start_n,
    false
);
runtime_start!(
    GOMP_loop_ull_maybe_nonmonotonic_runtime_start,
    ull_runtime_start_mn,
    false
);
chunked_start!(
    GOMP_loop_ull_dynamic_start,
    ull_dynamic_start_m,
    Kind::Dynamic,
    true
);
chunked_start!(
    GOMP_loop_ull_nonmonotonic_dynamic_start,
    ull_dynamic_start_n,
    Kind::Dynamic,
    false
);
chunked_start!(
    GOMP_loop_ull_guided_start,
    ull_guided_start_m,
    Kind::Guided,
    true
);
chunked_start!(
    GOMP_loop_ull_nonmonotonic_guided_start,
    ull_guided_start_n,
    Kind::Guided,
    false
);

next!(GOMP_loop_ull_runtime_next, Ull);
next!(GOMP_loop_ull_nonmonotonic_runtime_next, Ull);
next!(GOMP_loop_ull_maybe_nonmonotonic_runtime_next, Ull);
next!(GOMP_loop_ull_dynamic_next, Ull);
next!(GOMP_loop_ull_nonmonotonic_dynamic_next, Ull);
next!(GOMP_loop_ull_guided_next, Ull);
next!(GOMP_loop_ull_nonmonotonic_guided_next, Ull);

with_site!(GOMP_loop_ull_start => ull_loop_start(up: bool, start: Ull, end: Ull, incr: Ull, sched: c_long, chunk: Ull, istart: *mut Ull, iend: *mut Ull, reductions: *mut usize, mem: *mut *mut c_void) -> bool);

/// `GOMP_loop_ull_start`: as `GOMP_loop_start`.
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn ull_loop_start(
    up: bool,
    start: Ull,
    end: Ull,
    incr: Ull,
    sched: c_long,
    chunk: Ull,
    istart: *mut Ull,
    iend: *mut Ull,
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
                bounds: Bounds::Ull {
                    up,
                    start,
                    end,
                    incr,
                },
                site: crate::site::site(site),
            };
            // SAFETY: libgomp's contract: the out-parameters are valid.
            if let Some(got) = unsafe { start_taken(&call, istart, iend) } {
                return got;
            }
        }
        // SAFETY: the caller's own arguments, to libgomp's definition.
        unsafe {
            real::GOMP_loop_ull_start()(
                up, start, end, incr, sched, chunk, istart, iend, reductions, mem,
            )
        }
    })
}
