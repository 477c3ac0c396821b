//! libgomp's own entry points, found with `dlsym(RTLD_NEXT, name)`: the
//! definitions that this library's own exports of the same names shadow.
//!
//! Nothing links this library against libgomp: preloaded into a process
//! without OpenMP (a shell that `keel omp run` starts, say) it must load
//! and stay inert, and a libgomp it linked would be a second copy.

use std::ffi::{c_int, c_long, c_uint, c_ulonglong, c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The address of `name` in the objects loaded after this one, looked up
/// once per symbol; aborts with a message when there is none, which only
/// happens when a program calls libgomp's ABI without libgomp.
#[inline]
fn lookup(cache: &AtomicUsize, name: &CStr) -> usize {
    let cached = cache.load(Ordering::Relaxed);
    if cached != 0 {
        return cached;
    }
    lookup_first(cache, name)
}

/// [`lookup`] the first time: `dlsym`.
#[cold]
#[inline(never)]
fn lookup_first(cache: &AtomicUsize, name: &CStr) -> usize {
    // SAFETY: `name` is NUL-terminated; RTLD_NEXT is valid from a shared object.
    let found = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) } as usize;
    if found == 0 {
        crate::fatal(&format!(
            "libgomp's {} was not found (is the program linked with -fopenmp?)",
            name.to_string_lossy()
        ));
    }
    cache.store(found, Ordering::Relaxed);
    found
}

macro_rules! real {
    ($( $name:ident : fn($($arg:ty),*) $(-> $ret:ty)?; )*) => {
        $(
            #[allow(non_snake_case, dead_code)]
            pub(crate) fn $name() -> unsafe extern "C" fn($($arg),*) $(-> $ret)? {
                static CACHE: AtomicUsize = AtomicUsize::new(0);
                let address = lookup(
                    &CACHE,
                    // SAFETY: the literal ends in NUL and has no other.
                    unsafe { CStr::from_bytes_with_nul_unchecked(concat!(stringify!($name), "\0").as_bytes()) },
                );
                // SAFETY: libgomp (or, for `__kmpc_*`, LLVM's libomp) defines
                // `$name` with this signature; the address is not null.
                unsafe { std::mem::transmute::<usize, unsafe extern "C" fn($($arg),*) $(-> $ret)?>(address) }
            }
        )*
    };
}

type Body = extern "C" fn(*mut c_void);
type Long = c_long;
type Ull = c_ulonglong;

real! {
    omp_get_thread_num: fn() -> c_int;
    omp_get_num_threads: fn() -> c_int;
    omp_get_level: fn() -> c_int;
    omp_get_cancellation: fn() -> c_int;
    omp_set_schedule: fn(c_int, c_int);
    omp_set_schedule_: fn(*const i32, *const i32);
    omp_set_schedule_8_: fn(*const i32, *const i64);
    GOMP_barrier: fn();
    GOMP_barrier_cancel: fn() -> bool;
    GOMP_parallel: fn(Body, *mut c_void, c_uint, c_uint);
    GOMP_parallel_start: fn(Body, *mut c_void, c_uint);
    GOMP_parallel_end: fn();
    GOMP_parallel_sections_start: fn(Body, *mut c_void, c_uint, c_uint);
    GOMP_parallel_loop_static_start: fn(Body, *mut c_void, c_uint, Long, Long, Long, Long);
    GOMP_parallel_loop_dynamic_start: fn(Body, *mut c_void, c_uint, Long, Long, Long, Long);
    GOMP_parallel_loop_guided_start: fn(Body, *mut c_void, c_uint, Long, Long, Long, Long);
    GOMP_parallel_loop_runtime_start: fn(Body, *mut c_void, c_uint, Long, Long, Long);

    GOMP_loop_end: fn();
    GOMP_loop_end_nowait: fn();
    GOMP_loop_end_cancel: fn() -> bool;

    GOMP_loop_runtime_start: fn(Long, Long, Long, *mut Long, *mut Long) -> bool;
    GOMP_loop_nonmonotonic_runtime_start: fn(Long, Long, Long, *mut Long, *mut Long) -> bool;
    GOMP_loop_maybe_nonmonotonic_runtime_start: fn(Long, Long, Long, *mut Long, *mut Long) -> bool;
    GOMP_loop_dynamic_start: fn(Long, Long, Long, Long, *mut Long, *mut Long) -> bool;
    GOMP_loop_guided_start: fn(Long, Long, Long, Long, *mut Long, *mut Long) -> bool;
    GOMP_loop_nonmonotonic_dynamic_start: fn(Long, Long, Long, Long, *mut Long, *mut Long) -> bool;
    GOMP_loop_nonmonotonic_guided_start: fn(Long, Long, Long, Long, *mut Long, *mut Long) -> bool;
    GOMP_loop_start: fn(Long, Long, Long, Long, Long, *mut Long, *mut Long, *mut usize, *mut *mut c_void) -> bool;

    GOMP_loop_runtime_next: fn(*mut Long, *mut Long) -> bool;
    GOMP_loop_nonmonotonic_runtime_next: fn(*mut Long, *mut Long) -> bool;
    GOMP_loop_maybe_nonmonotonic_runtime_next: fn(*mut Long, *mut Long) -> bool;
    GOMP_loop_dynamic_next: fn(*mut Long, *mut Long) -> bool;
    GOMP_loop_guided_next: fn(*mut Long, *mut Long) -> bool;
    GOMP_loop_nonmonotonic_dynamic_next: fn(*mut Long, *mut Long) -> bool;
    GOMP_loop_nonmonotonic_guided_next: fn(*mut Long, *mut Long) -> bool;

    GOMP_loop_ull_runtime_start: fn(bool, Ull, Ull, Ull, *mut Ull, *mut Ull) -> bool;
    GOMP_loop_ull_nonmonotonic_runtime_start: fn(bool, Ull, Ull, Ull, *mut Ull, *mut Ull) -> bool;
    GOMP_loop_ull_maybe_nonmonotonic_runtime_start: fn(bool, Ull, Ull, Ull, *mut Ull, *mut Ull) -> bool;
    GOMP_loop_ull_dynamic_start: fn(bool, Ull, Ull, Ull, Ull, *mut Ull, *mut Ull) -> bool;
    GOMP_loop_ull_guided_start: fn(bool, Ull, Ull, Ull, Ull, *mut Ull, *mut Ull) -> bool;
    GOMP_loop_ull_nonmonotonic_dynamic_start: fn(bool, Ull, Ull, Ull, Ull, *mut Ull, *mut Ull) -> bool;
    GOMP_loop_ull_nonmonotonic_guided_start: fn(bool, Ull, Ull, Ull, Ull, *mut Ull, *mut Ull) -> bool;
    GOMP_loop_ull_start: fn(bool, Ull, Ull, Ull, Long, Ull, *mut Ull, *mut Ull, *mut usize, *mut *mut c_void) -> bool;

    GOMP_loop_ull_runtime_next: fn(*mut Ull, *mut Ull) -> bool;
    GOMP_loop_ull_nonmonotonic_runtime_next: fn(*mut Ull, *mut Ull) -> bool;
    GOMP_loop_ull_maybe_nonmonotonic_runtime_next: fn(*mut Ull, *mut Ull) -> bool;
    GOMP_loop_ull_dynamic_next: fn(*mut Ull, *mut Ull) -> bool;
    GOMP_loop_ull_guided_next: fn(*mut Ull, *mut Ull) -> bool;
    GOMP_loop_ull_nonmonotonic_dynamic_next: fn(*mut Ull, *mut Ull) -> bool;
    GOMP_loop_ull_nonmonotonic_guided_next: fn(*mut Ull, *mut Ull) -> bool;

    __kmpc_dispatch_init_4: fn(*mut c_void, i32, i32, i32, i32, i32, i32);
    __kmpc_dispatch_init_4u: fn(*mut c_void, i32, i32, u32, u32, i32, i32);
    __kmpc_dispatch_init_8: fn(*mut c_void, i32, i32, i64, i64, i64, i64);
    __kmpc_dispatch_init_8u: fn(*mut c_void, i32, i32, u64, u64, i64, i64);
    __kmpc_dispatch_next_4: fn(*mut c_void, i32, *mut i32, *mut i32, *mut i32, *mut i32) -> c_int;
    __kmpc_dispatch_next_4u: fn(*mut c_void, i32, *mut i32, *mut u32, *mut u32, *mut i32) -> c_int;
    __kmpc_dispatch_next_8: fn(*mut c_void, i32, *mut i32, *mut i64, *mut i64, *mut i64) -> c_int;
    __kmpc_dispatch_next_8u: fn(*mut c_void, i32, *mut i32, *mut u64, *mut u64, *mut i64) -> c_int;
}
