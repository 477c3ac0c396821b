//! The libgomp side: `c/schedbench.c`, built and linked only with the
//! `libgomp` feature. Without it [`Gomp::new`] says why there is no libgomp
//! column and nothing here is called.
//!
//! libgomp reads `OMP_WAIT_POLICY` once, when the library is loaded, before
//! `main`; the `keel-bench-loops` binary therefore re-executes itself with
//! `OMP_WAIT_POLICY=active` when it is not set so. [`wait_policy`] reports
//! what libgomp actually got.

/// Why there is no libgomp column, when there is none.
pub const NOT_BUILT: &str =
    "libgomp not built in: build keel-bench with `--features libgomp` (needs gcc -fopenmp; see install-libgomp.sh)";

#[cfg(feature = "libgomp")]
mod ffi {
    use std::ffi::{c_int, c_long};

    extern "C" {
        pub fn kb_set_threads(threads: c_int);
        pub fn kb_max_threads() -> c_int;
        pub fn kb_set_schedule(kind: c_int, chunk: c_int);
        pub fn kb_get_schedule(kind: *mut c_int, chunk: *mut c_int);
        pub fn kb_reference(len: c_int, iters: c_long, reps: c_long) -> f64;
        pub fn kb_loop(n: c_long, len: c_int, reps: c_long) -> f64;
        pub fn kb_empty_loop(n: c_long, reps: c_long) -> f64;
        pub fn kb_empty_region(reps: c_long) -> f64;
        pub fn kb_pause() -> c_int;
    }
}

/// `OMP_WAIT_POLICY` as libgomp read it at load time.
pub fn wait_policy() -> String {
    match std::env::var("OMP_WAIT_POLICY") {
        Ok(v) if !v.trim().is_empty() => v.trim().to_ascii_lowercase(),
        _ => "unset (libgomp's default: spin GOMP_SPINCOUNT=300000, then sleep)".to_string(),
    }
}

/// A handle on libgomp's runtime, set to a number of threads.
#[derive(Debug)]
pub struct Gomp {
    _built: (),
}

/// An OpenMP schedule kind, as `omp_sched_t` numbers it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OmpKind {
    /// `omp_sched_static` (1).
    Static = 1,
    /// `omp_sched_dynamic` (2).
    Dynamic = 2,
    /// `omp_sched_guided` (3).
    Guided = 3,
}

#[cfg(feature = "libgomp")]
fn long(x: u64) -> std::ffi::c_long {
    std::ffi::c_long::try_from(x).expect("count fits in a C long")
}

impl Gomp {
    /// libgomp with `threads` threads, or why it is not available.
    pub fn new(threads: usize) -> Result<Gomp, String> {
        #[cfg(feature = "libgomp")]
        {
            let t = std::ffi::c_int::try_from(threads).map_err(|e| e.to_string())?;
            // SAFETY: plain OpenMP API calls from the thread that owns the
            // (only) libgomp team; no pointers.
            let max = unsafe {
                ffi::kb_set_threads(t);
                ffi::kb_max_threads()
            };
            if max != t {
                return Err(format!("libgomp gives {max} threads, not {threads}"));
            }
            Ok(Gomp { _built: () })
        }
        #[cfg(not(feature = "libgomp"))]
        {
            let _ = threads;
            Err(NOT_BUILT.to_string())
        }
    }

    /// `omp_set_schedule(kind, chunk)`; `chunk` 0 means the kind's default.
    /// Returns the schedule read back with `omp_get_schedule`.
    pub fn set_schedule(&self, kind: OmpKind, chunk: u64) -> (i32, i32) {
        #[cfg(feature = "libgomp")]
        {
            let chunk = std::ffi::c_int::try_from(chunk).expect("chunk fits in a C int");
            let (mut k, mut c) = (0, 0);
            // SAFETY: OpenMP API calls; the out-pointers are valid locals.
            unsafe {
                ffi::kb_set_schedule(kind as std::ffi::c_int, chunk);
                ffi::kb_get_schedule(&mut k, &mut c);
            }
            (k, c)
        }
        #[cfg(not(feature = "libgomp"))]
        {
            let _ = (kind, chunk);
            unreachable!("Gomp cannot be built without the libgomp feature")
        }
    }

    /// Total seconds of `reps` sequential runs of `iters` delays (in C).
    pub fn reference(&self, len: u32, iters: u64, reps: u64) -> f64 {
        #[cfg(feature = "libgomp")]
        {
            let len = std::ffi::c_int::try_from(len).expect("delay fits in a C int");
            // SAFETY: a pure C function of integers.
            unsafe { ffi::kb_reference(len, long(iters), long(reps)) }
        }
        #[cfg(not(feature = "libgomp"))]
        {
            let _ = (len, iters, reps);
            unreachable!("Gomp cannot be built without the libgomp feature")
        }
    }

    /// Total seconds of `reps` `parallel for schedule(runtime)` loops of
    /// `n` delays each.
    pub fn parallel_loop(&self, n: u64, len: u32, reps: u64) -> f64 {
        #[cfg(feature = "libgomp")]
        {
            let len = std::ffi::c_int::try_from(len).expect("delay fits in a C int");
            // SAFETY: a C function of integers running OpenMP loops.
            unsafe { ffi::kb_loop(long(n), len, long(reps)) }
        }
        #[cfg(not(feature = "libgomp"))]
        {
            let _ = (n, len, reps);
            unreachable!("Gomp cannot be built without the libgomp feature")
        }
    }

    /// Total seconds of `reps` empty `parallel for schedule(static)` loops
    /// of `n` iterations.
    pub fn empty_loop(&self, n: u64, reps: u64) -> f64 {
        #[cfg(feature = "libgomp")]
        {
            // SAFETY: a C function of integers running OpenMP loops.
            unsafe { ffi::kb_empty_loop(long(n), long(reps)) }
        }
        #[cfg(not(feature = "libgomp"))]
        {
            let _ = (n, reps);
            unreachable!("Gomp cannot be built without the libgomp feature")
        }
    }

    /// Total seconds of `reps` empty `parallel` regions.
    pub fn empty_region(&self, reps: u64) -> f64 {
        #[cfg(feature = "libgomp")]
        {
            // SAFETY: a C function of integers running OpenMP regions.
            unsafe { ffi::kb_empty_region(long(reps)) }
        }
        #[cfg(not(feature = "libgomp"))]
        {
            let _ = reps;
            unreachable!("Gomp cannot be built without the libgomp feature")
        }
    }

    /// Ends libgomp's worker threads (`omp_pause_resource_all`), so that
    /// actively waiting workers do not take a core from the runtime measured
    /// next; the next region starts them again.
    pub fn pause(&self) -> Result<(), String> {
        #[cfg(feature = "libgomp")]
        {
            // SAFETY: an OpenMP API call made outside any parallel region.
            match unsafe { ffi::kb_pause() } {
                0 => Ok(()),
                rc => Err(format!("omp_pause_resource_all returned {rc}")),
            }
        }
        #[cfg(not(feature = "libgomp"))]
        {
            unreachable!("Gomp cannot be built without the libgomp feature")
        }
    }
}
