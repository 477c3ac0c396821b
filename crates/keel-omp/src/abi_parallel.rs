//! `GOMP_parallel` and the combined `GOMP_parallel_loop_*`: the team
//! boundaries, and `omp_set_schedule`, mirrored process-wide.

use std::ffi::{c_int, c_long, c_uint, c_void};

use crate::bounds::Bounds;
use crate::settings::{self, Kind};
use crate::team::{self, trampoline, LoopCall, Preset, RealStart, Region, Team};
use crate::{guard, real};

type Body = extern "C" fn(*mut c_void);

/// Runs the region through libgomp's `GOMP_parallel` with every thread
/// entering the trampoline.
fn run_region(
    body: Body,
    data: *mut c_void,
    num_threads: c_uint,
    flags: c_uint,
    preset: Option<Preset>,
) {
    let region = Region {
        body,
        data,
        team: Team::for_region(),
        preset,
    };
    // SAFETY: `region` outlives the call, which returns when every thread
    // of the team has left the trampoline.
    unsafe {
        real::GOMP_parallel()(
            trampoline,
            &region as *const Region as *mut c_void,
            num_threads,
            flags,
        )
    }
    Team::recycle(region.team);
}

/// libgomp's `GOMP_parallel`: a parallel region, its team wrapped.
#[no_mangle]
pub extern "C" fn GOMP_parallel(body: Body, data: *mut c_void, num_threads: c_uint, flags: c_uint) {
    guard(|| run_region(body, data, num_threads, flags, None))
}

macro_rules! combined_runtime {
    ($name:ident, $start:ident, $monotonic:expr) => {
        #[doc = concat!("libgomp's `", stringify!($name), "`: a region whose body is one `schedule(runtime)` loop.")]
        #[no_mangle]
        pub extern "C" fn $name(
            body: Body,
            data: *mut c_void,
            num_threads: c_uint,
            start: c_long,
            end: c_long,
            incr: c_long,
            flags: c_uint,
        ) {
            guard(|| {
                let preset = Preset {
                    call: LoopCall {
                        kind: Kind::Runtime,
                        monotonic: $monotonic,
                        bounds: Bounds::Long { start, end, incr },
                        site: body as usize,
                    },
                    real: RealStart::Runtime(real::$start()),
                };
                run_region(body, data, num_threads, flags, Some(preset))
            })
        }
    };
}

macro_rules! combined_chunked {
    ($name:ident, $start:ident, $kind:expr, $monotonic:expr) => {
        #[doc = concat!("libgomp's `", stringify!($name), "`: a region whose body is one loop of that schedule.")]
        #[allow(clippy::too_many_arguments)]
        #[no_mangle]
        pub extern "C" fn $name(
            body: Body,
            data: *mut c_void,
            num_threads: c_uint,
            start: c_long,
            end: c_long,
            incr: c_long,
            chunk: c_long,
            flags: c_uint,
        ) {
            guard(|| {
                let preset = Preset {
                    call: LoopCall {
                        kind: $kind,
                        monotonic: $monotonic,
                        bounds: Bounds::Long { start, end, incr },
                        site: body as usize,
                    },
                    real: RealStart::Chunked(real::$start(), chunk),
                };
                run_region(body, data, num_threads, flags, Some(preset))
            })
        }
    };
}

combined_runtime!(GOMP_parallel_loop_runtime, GOMP_loop_runtime_start, true);
combined_runtime!(
    GOMP_parallel_loop_nonmonotonic_runtime,
    GOMP_loop_nonmonotonic_runtime_start,
    false
);
combined_runtime!(
    GOMP_parallel_loop_maybe_nonmonotonic_runtime,
    GOMP_loop_maybe_nonmonotonic_runtime_start,
    false
);
combined_chunked!(
    GOMP_parallel_loop_dynamic,
    GOMP_loop_dynamic_start,
    Kind::Dynamic,
    true
);
combined_chunked!(
    GOMP_parallel_loop_nonmonotonic_dynamic,
    GOMP_loop_nonmonotonic_dynamic_start,
    Kind::Dynamic,
    false
);
combined_chunked!(
    GOMP_parallel_loop_guided,
    GOMP_loop_guided_start,
    Kind::Guided,
    true
);
combined_chunked!(
    GOMP_parallel_loop_nonmonotonic_guided,
    GOMP_loop_nonmonotonic_guided_start,
    Kind::Guided,
    false
);

/// libgomp's `GOMP_parallel_start` (GCC before 4.9): the encountering
/// thread's state set aside until `GOMP_parallel_end`; the team's loops
/// stay libgomp's.
#[no_mangle]
pub extern "C" fn GOMP_parallel_start(body: Body, data: *mut c_void, num_threads: c_uint) {
    guard(|| {
        team::legacy_region_start();
        // SAFETY: libgomp's function with the caller's arguments.
        unsafe { real::GOMP_parallel_start()(body, data, num_threads) };
    })
}

/// libgomp's `GOMP_parallel_sections_start` (GCC before 4.9), as
/// [`GOMP_parallel_start`].
#[no_mangle]
pub extern "C" fn GOMP_parallel_sections_start(
    body: Body,
    data: *mut c_void,
    num_threads: c_uint,
    count: c_uint,
) {
    guard(|| {
        team::legacy_region_start();
        // SAFETY: libgomp's function with the caller's arguments.
        unsafe { real::GOMP_parallel_sections_start()(body, data, num_threads, count) };
    })
}

macro_rules! legacy_loop_start {
    ($name:ident $(, $chunk:ident)?) => {
        #[doc = concat!("libgomp's `", stringify!($name), "` (GCC before 4.9), as [`GOMP_parallel_start`]: the loop stays libgomp's.")]
        #[allow(clippy::too_many_arguments)]
        #[no_mangle]
        pub extern "C" fn $name(
            body: Body,
            data: *mut c_void,
            num_threads: c_uint,
            start: c_long,
            end: c_long,
            incr: c_long,
            $($chunk: c_long,)?
        ) {
            guard(|| {
                team::legacy_region_start();
                // SAFETY: libgomp's function with the caller's arguments.
                unsafe { real::$name()(body, data, num_threads, start, end, incr $(, $chunk)?) };
            })
        }
    };
}

legacy_loop_start!(GOMP_parallel_loop_static_start, chunk);
legacy_loop_start!(GOMP_parallel_loop_dynamic_start, chunk);
legacy_loop_start!(GOMP_parallel_loop_guided_start, chunk);
legacy_loop_start!(GOMP_parallel_loop_runtime_start);

/// libgomp's `GOMP_parallel_end`: the end of a legacy region; restores
/// what its start set aside.
#[no_mangle]
pub extern "C" fn GOMP_parallel_end() {
    guard(|| {
        // SAFETY: libgomp's function, called as the program would.
        unsafe { real::GOMP_parallel_end()() };
        team::legacy_region_end();
    })
}

/// `omp_set_schedule`: libgomp's, and the process-wide schedule Keel's
/// `schedule(runtime)` loops follow while `KEEL_SCHEDULE` is unset.
#[no_mangle]
pub extern "C" fn omp_set_schedule(kind: c_int, chunk: c_int) {
    guard(|| {
        settings::set_program_schedule(kind, i64::from(chunk));
        // SAFETY: the caller's own arguments, to libgomp's definition.
        unsafe { real::omp_set_schedule()(kind, chunk) }
    })
}

/// gfortran's `omp_set_schedule` (4-byte chunk), as [`omp_set_schedule`].
///
/// # Safety
/// Both pointers are valid (gfortran passes its arguments by reference).
#[no_mangle]
pub unsafe extern "C" fn omp_set_schedule_(kind: *const i32, chunk: *const i32) {
    guard(|| {
        if !kind.is_null() && !chunk.is_null() {
            // SAFETY: the caller's contract.
            let (k, c) = unsafe { (*kind, *chunk) };
            settings::set_program_schedule(k, i64::from(c));
        }
        // SAFETY: the caller's own arguments, to libgomp's definition.
        unsafe { real::omp_set_schedule_()(kind, chunk) }
    })
}

/// gfortran's `omp_set_schedule` (8-byte chunk), as [`omp_set_schedule`].
///
/// # Safety
/// Both pointers are valid (gfortran passes its arguments by reference).
#[no_mangle]
pub unsafe extern "C" fn omp_set_schedule_8_(kind: *const i32, chunk: *const i64) {
    guard(|| {
        if !kind.is_null() && !chunk.is_null() {
            // SAFETY: the caller's contract.
            let (k, c) = unsafe { (*kind, *chunk) };
            settings::set_program_schedule(k, c);
        }
        // SAFETY: the caller's own arguments, to libgomp's definition.
        unsafe { real::omp_set_schedule_8_()(kind, chunk) }
    })
}

/// How many loop instances Keel took and how many it forwarded to libgomp
/// after deciding (loops of teams it does not know, and `GOMP_loop_start`
/// calls it never considers, are in neither), since the process started.
/// A program or tool finds it with `dlsym(RTLD_DEFAULT,
/// "keel_omp_loop_counts")`, which is null without the preload.
///
/// # Safety
/// Each pointer is null or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn keel_omp_loop_counts(taken: *mut u64, forwarded: *mut u64) {
    use std::sync::atomic::Ordering::Relaxed;
    // SAFETY: the caller's contract.
    unsafe {
        if !taken.is_null() {
            *taken = crate::team::COUNTS.0.taken.load(Relaxed);
        }
        if !forwarded.is_null() {
            *forwarded = crate::team::COUNTS.0.forwarded.load(Relaxed);
        }
    }
}
