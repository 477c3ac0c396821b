//! The C API's loop against the Rust API's on the same pool: a `dynamic,1`
//! loop whose body takes about 0.1 µs, timed in paired rounds (the order
//! alternating), the median of the per-round ratios C / Rust printed.
//!
//! The C side calls `keel_parallel_for_id`, the function a C program calls,
//! with an `extern "C"` body: the path of a C caller (the wrapper, a body
//! called through a pointer per chunk, the participant lookup). Both bodies
//! call the same `work`, so only the API differs.
//!
//! ```text
//! cargo run --release -p keel-capi --example loop_ratio -- \
//!     [THREADS] [ITERATIONS] [ROUNDS] [BODY_ROUNDS] [LIBKEEL_SO]
//! ```
//! (defaults 2, 100000, 41; `BODY_ROUNDS` 0 or absent: calibrated to
//! 0.1 µs, a number fixes it, e.g. under callgrind). With `LIBKEEL_SO`, the
//! C side calls the shared library's entry points (found with `dlsym`, as
//! a C program's calls are resolved, thread-locals through the shared
//! object's TLS model) on the library's own pool, and the Rust loop runs on
//! a pool of its own of the same size; without it both run on one pool
//! through the rlib.

use std::ffi::{c_char, c_void};
use std::hint::black_box;
use std::time::Instant;

use keel::*;

/// Rounds of the xorshift in one body call: set once at start so that a
/// call takes about 0.1 µs on this machine.
static mut ROUNDS: u32 = 0;

#[inline(never)]
fn work(i: i64) -> u64 {
    // SAFETY: written once before any loop runs, read-only afterwards.
    let rounds = unsafe { ROUNDS };
    let mut x = i as u64 | 1;
    for _ in 0..rounds {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

unsafe extern "C-unwind" fn c_body(begin: i64, end: i64, _thread: usize, _ctx: *mut c_void) -> i32 {
    for i in begin..end {
        black_box(work(i));
    }
    0
}

fn calibrate(fixed: u32) -> f64 {
    let time = |rounds: u32| {
        // SAFETY: no loop runs yet.
        unsafe { ROUNDS = rounds };
        let n = 100_000;
        let t = Instant::now();
        for i in 0..n {
            black_box(work(black_box(i)));
        }
        t.elapsed().as_secs_f64() / n as f64
    };
    let rounds = if fixed > 0 {
        fixed
    } else {
        let per_round = time(256) / 256.0;
        (0.1e-6 / per_round).round().max(1.0) as u32
    };
    time(rounds)
}

type PoolNew = unsafe extern "C" fn(usize, *mut keel_status) -> *mut keel_pool;
type ForId = unsafe extern "C" fn(
    *const keel_pool,
    *const c_char,
    i64,
    i64,
    *const c_char,
    u32,
    keel_loop_body,
    *mut c_void,
    *mut keel_loop_stats,
) -> keel_status;

/// `keel_pool_new` and `keel_parallel_for_id` from the shared library at
/// `path` (it stays loaded for the process's life).
fn from_shared_object(path: &str) -> (PoolNew, ForId) {
    let path = std::ffi::CString::new(path).unwrap();
    // SAFETY: a C string; the library's initialisers are Rust's own.
    let lib = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    assert!(!lib.is_null(), "dlopen {path:?} failed");
    // SAFETY: a live handle and C strings; the symbols have these types
    // (keel.h).
    unsafe {
        let new = libc::dlsym(lib, c"keel_pool_new".as_ptr());
        let run = libc::dlsym(lib, c"keel_parallel_for_id".as_ptr());
        assert!(!new.is_null() && !run.is_null());
        (
            std::mem::transmute::<*mut c_void, PoolNew>(new),
            std::mem::transmute::<*mut c_void, ForId>(run),
        )
    }
}

fn main() {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, default: u64| raw.get(i).map_or(default, |a| a.parse().expect("a number"));
    let threads = num(0, 2) as usize;
    let n = num(1, 100_000) as i64;
    let rounds = num(2, 41) as usize;
    let fixed_rounds = num(3, 0) as u32;
    let shared_object = raw.get(4);
    let per_call = calibrate(fixed_rounds);
    // SAFETY: set by calibrate; no loop runs.
    let work_rounds = unsafe { ROUNDS };
    println!(
        "body: {work_rounds} xorshift rounds, {:.3} µs per call (sequential)",
        per_call * 1e6
    );

    let (pool_new, for_id): (PoolNew, ForId) = match shared_object {
        Some(path) => from_shared_object(path),
        None => (keel_pool_new, keel_parallel_for_id),
    };
    let mut status = keel_status::KEEL_OK;
    // SAFETY: a status to write.
    let handle = unsafe { pool_new(threads, &mut status) };
    assert_eq!(status, keel_status::KEEL_OK);
    let own_pool;
    let pool = match shared_object {
        Some(_) => {
            own_pool = keel_rt::ThreadPool::builder()
                .threads(threads)
                .build()
                .unwrap();
            &own_pool
        }
        // SAFETY: an rlib handle, live until the end of main.
        None => unsafe { &*handle }.thread_pool(),
    };
    let schedule: keel_rt::Schedule = "dynamic,1".parse().unwrap();

    let rust = || {
        let t = Instant::now();
        let s = pool
            .parallel(0..n)
            .schedule(schedule.clone())
            .id("ratio/rust")
            .for_each_chunk(|r| {
                for i in r {
                    black_box(work(i));
                }
            });
        assert_eq!(s.iterations, n as u64);
        t.elapsed().as_secs_f64()
    };
    let c = || {
        let t = Instant::now();
        // SAFETY: a live pool, C strings, a body that ignores ctx.
        let s = unsafe {
            for_id(
                handle,
                c"ratio/c".as_ptr(),
                0,
                n,
                c"dynamic,1".as_ptr(),
                0,
                Some(c_body),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        assert_eq!(s, keel_status::KEEL_OK);
        t.elapsed().as_secs_f64()
    };
    // Warm-up: the pool's threads, the loop states, the caches.
    for _ in 0..3 {
        rust();
        c();
    }
    let mut ratios = Vec::with_capacity(rounds);
    let (mut sum_c, mut sum_rust) = (0.0, 0.0);
    for round in 0..rounds {
        let (tc, tr) = if round % 2 == 0 {
            let tr = rust();
            (c(), tr)
        } else {
            let tc = c();
            (tc, rust())
        };
        sum_c += tc;
        sum_rust += tr;
        ratios.push(tc / tr);
    }
    ratios.sort_by(f64::total_cmp);
    let median = ratios[rounds / 2];
    println!(
        "{threads} threads, {n} iterations, dynamic,1, {rounds} paired rounds: \
         C API {:.3} ms, Rust API {:.3} ms (means); median ratio C/Rust {median:.3} \
         (quartiles {:.3}..{:.3})",
        sum_c / rounds as f64 * 1e3,
        sum_rust / rounds as f64 * 1e3,
        ratios[rounds / 4],
        ratios[3 * rounds / 4]
    );
    println!(
        "C side through {}",
        shared_object.map_or("the rlib, on the same pool", |p| p.as_str())
    );
    // The handle is left to the process's end: with a shared object it
    // belongs to that copy of the library.
}
