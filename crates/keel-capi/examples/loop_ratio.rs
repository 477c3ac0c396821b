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
//! cargo run --release -p keel-capi --example loop_ratio -- [THREADS] [ITERATIONS] [ROUNDS]
//! ```
//! (defaults 2, 100000, 41).

use std::ffi::c_void;
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

fn calibrate() -> f64 {
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
    let per_round = time(256) / 256.0;
    let rounds = (0.1e-6 / per_round).round().max(1.0) as u32;
    time(rounds)
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a number"))
        .collect();
    let threads = args.first().copied().unwrap_or(2) as usize;
    let n = args.get(1).copied().unwrap_or(100_000) as i64;
    let rounds = args.get(2).copied().unwrap_or(41) as usize;
    let per_call = calibrate();
    // SAFETY: set by calibrate; no loop runs.
    let work_rounds = unsafe { ROUNDS };
    println!(
        "body: {work_rounds} xorshift rounds, {:.3} µs per call (sequential)",
        per_call * 1e6
    );

    let mut status = keel_status::KEEL_OK;
    // SAFETY: a status to write.
    let handle = unsafe { keel_pool_new(threads, &mut status) };
    assert_eq!(status, keel_status::KEEL_OK);
    // SAFETY: live until freed below.
    let pool = unsafe { &*handle }.thread_pool();
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
            keel_parallel_for_id(
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
    // SAFETY: made above; no loop running.
    unsafe { keel_pool_free(handle) };
}
