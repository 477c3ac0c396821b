//! The C API's loops called from Rust: every iteration exactly once, the
//! participants in range, a failing body or a panic as a code with the
//! pool still usable, nested loops, and workload hints assigning
//! iterations as the Rust API does.

use std::ffi::{c_void, CStr};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use keel::*;

fn message() -> String {
    // SAFETY: never NULL, NUL-terminated.
    unsafe { CStr::from_ptr(keel_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

/// Per-iteration counters and the participants seen, for exactly-once.
struct Counts {
    hits: Vec<AtomicU32>,
    begin: i64,
    threads: usize,
    bad_thread: AtomicUsize,
    owner: Vec<AtomicUsize>,
}

unsafe extern "C-unwind" fn count(begin: i64, end: i64, thread: usize, ctx: *mut c_void) -> i32 {
    // SAFETY: the tests pass a `Counts`.
    let c = unsafe { &*(ctx as *const Counts) };
    if thread >= c.threads {
        c.bad_thread.fetch_add(1, Ordering::Relaxed);
        return 0;
    }
    // One OS thread per participant index within an instance.
    let me = thread_id();
    if let Some(owner) = c.owner.get(thread) {
        let prev = owner.compare_exchange(0, me, Ordering::Relaxed, Ordering::Relaxed);
        if prev.is_err_and(|other| other != me) {
            c.bad_thread.fetch_add(1, Ordering::Relaxed);
        }
    }
    for i in begin..end {
        c.hits[(i - c.begin) as usize].fetch_add(1, Ordering::Relaxed);
    }
    0
}

fn thread_id() -> usize {
    thread_local!(static ID: u8 = const { 0 });
    ID.with(|id| id as *const u8 as usize)
}

fn pool(threads: usize) -> *mut keel_pool {
    let mut status = keel_status::KEEL_ERR_PANIC;
    // SAFETY: a status to write.
    let p = unsafe { keel_pool_new(threads, &mut status) };
    assert_eq!(status, keel_status::KEEL_OK, "{}", message());
    p
}

#[test]
fn every_schedule_runs_every_iteration_exactly_once() {
    let p = pool(3);
    for schedule in [
        c"static",
        c"static,7",
        c"dynamic,1",
        c"dynamic,13",
        c"guided",
        c"auto",
        c"fac2",
        c"static-steal",
        c"tss",
    ] {
        for (begin, end) in [
            (0i64, 1000i64),
            (-500, 501),
            (i64::MAX - 100, i64::MAX),
            (5, 5),
            (9, 3),
        ] {
            let n = (end - begin).max(0) as usize;
            let c = Counts {
                hits: (0..n).map(|_| AtomicU32::new(0)).collect(),
                begin,
                threads: 3,
                bad_thread: AtomicUsize::new(0),
                owner: (0..3).map(|_| AtomicUsize::new(0)).collect(),
            };
            let mut stats = keel_loop_stats {
                threads: 0,
                iterations: 0,
                chunks: 0,
                t_par: 0.0,
                lib_percent: 0.0,
            };
            // SAFETY: `c` outlives the loop.
            let status = unsafe {
                keel_parallel_for_id(
                    p,
                    c"exactly-once".as_ptr(),
                    begin,
                    end,
                    schedule.as_ptr(),
                    KEEL_LOOP_RECORDED,
                    Some(count),
                    &c as *const Counts as *mut c_void,
                    &mut stats,
                )
            };
            assert_eq!(status, keel_status::KEEL_OK, "{schedule:?}: {}", message());
            assert!(
                c.hits.iter().all(|h| h.load(Ordering::Relaxed) == 1),
                "{schedule:?} {begin}..{end}"
            );
            assert_eq!(c.bad_thread.load(Ordering::Relaxed), 0, "{schedule:?}");
            assert_eq!((stats.iterations, stats.threads), (n as u64, 3));
            assert!(stats.t_par >= 0.0 && stats.lib_percent >= 0.0);
        }
    }
    // SAFETY: made above, no loop running.
    unsafe { keel_pool_free(p) };
}

unsafe extern "C-unwind" fn fail_at_500(begin: i64, end: i64, _: usize, ctx: *mut c_void) -> i32 {
    // SAFETY: the test passes a counter.
    let ran = unsafe { &*(ctx as *const AtomicUsize) };
    ran.fetch_add((end - begin) as usize, Ordering::Relaxed);
    if (begin..end).contains(&500) {
        42
    } else {
        0
    }
}

unsafe extern "C-unwind" fn panic_at_500(begin: i64, end: i64, _: usize, _: *mut c_void) -> i32 {
    assert!(!(begin..end).contains(&500), "iteration 500 refuses");
    0
}

#[test]
fn a_failing_or_panicking_body_is_an_error_code_and_the_pool_stays_usable() {
    use keel_status::*;
    let p = pool(2);
    let ran = AtomicUsize::new(0);
    let ctx = &ran as *const AtomicUsize as *mut c_void;
    // SAFETY: `ran` outlives every loop; NULLs are tested.
    unsafe {
        assert_eq!(
            keel_parallel_for(p, 0, 100_000, c"dynamic,1".as_ptr(), Some(fail_at_500), ctx),
            KEEL_ERR_BODY
        );
        assert!(message().contains("returned 42"), "{}", message());
        assert!(
            ran.load(Ordering::Relaxed) < 100_000,
            "the loop went on after the failure"
        );
        assert_eq!(
            keel_parallel_for(
                p,
                0,
                1000,
                c"dynamic,4".as_ptr(),
                Some(panic_at_500),
                null_mut()
            ),
            KEEL_ERR_PANIC
        );
        assert!(message().contains("iteration 500 refuses"), "{}", message());
        ran.store(0, Ordering::Relaxed);
        assert_eq!(
            keel_parallel_for(p, 0, 400, c"guided".as_ptr(), Some(fail_at_500), ctx),
            KEEL_OK
        );
        assert_eq!(ran.load(Ordering::Relaxed), 400);
        let mut last = keel_loop_stats {
            threads: 0,
            iterations: 0,
            chunks: 0,
            t_par: 0.0,
            lib_percent: 0.0,
        };
        assert_eq!(keel_pool_last_stats(p, &mut last), KEEL_OK);
        assert_eq!((last.iterations, last.threads), (400, 2));
        assert!(last.t_par.is_nan(), "not recorded: no clock read");
        assert_eq!(
            keel_parallel_for(p, 0, 10, c"dynamic,x".as_ptr(), Some(fail_at_500), ctx),
            KEEL_ERR_SCHEDULE
        );
        assert_eq!(
            keel_parallel_for(p, 0, 10, c"unknown".as_ptr(), Some(fail_at_500), ctx),
            KEEL_ERR_SCHEDULE
        );
        assert_eq!(
            keel_parallel_for(p, 0, 10, null(), None, ctx),
            KEEL_ERR_NULL_POINTER
        );
        assert_eq!(
            keel_parallel_for(null(), 0, 10, null(), Some(fail_at_500), ctx),
            KEEL_ERR_NULL_POINTER
        );
        assert_eq!(
            keel_parallel_for_id(
                p,
                null(),
                0,
                10,
                null(),
                0,
                Some(fail_at_500),
                ctx,
                null_mut()
            ),
            KEEL_ERR_NULL_POINTER
        );
        assert_eq!(
            keel_parallel_for_id(
                p,
                c"x".as_ptr(),
                0,
                10,
                null(),
                6,
                Some(fail_at_500),
                ctx,
                null_mut()
            ),
            KEEL_ERR_INVALID_ARGUMENT
        );
        assert_eq!(
            keel_loop_record_stats(c"never-ran".as_ptr(), &mut last),
            KEEL_ERR_NOT_FOUND
        );
        assert_eq!(
            keel_pool_last_stats(null(), &mut last),
            KEEL_ERR_NULL_POINTER
        );
        assert_eq!(keel_pool_threads(null()), 0);
        let mut status = KEEL_OK;
        assert!(keel_pool_new(usize::MAX, &mut status).is_null());
        assert_eq!(status, KEEL_ERR_POOL);
        keel_pool_free(p);
        keel_pool_free(null_mut());
    }
}

/// A loop started from inside a loop's body on the same pool runs inline:
/// every nested chunk is participant 0's.
unsafe extern "C-unwind" fn nest(begin: i64, end: i64, _: usize, ctx: *mut c_void) -> i32 {
    // SAFETY: the test passes (pool, counts).
    let (pool, inner) = unsafe { &*(ctx as *const (*mut keel_pool, Counts)) };
    for _ in begin..end {
        // SAFETY: the pool is live during the outer loop.
        let s = unsafe {
            keel_parallel_for(
                *pool,
                0,
                10,
                c"dynamic,1".as_ptr(),
                Some(count),
                inner as *const Counts as *mut c_void,
            )
        };
        if s != keel_status::KEEL_OK {
            return 1;
        }
    }
    0
}

#[test]
fn nested_loops_run_inline_as_participant_zero() {
    let p = pool(2);
    let inner = Counts {
        hits: (0..10).map(|_| AtomicU32::new(0)).collect(),
        begin: 0,
        threads: 1,
        bad_thread: AtomicUsize::new(0),
        // Participant 0 of each inner loop is whichever outer thread ran
        // it: no single owner to check.
        owner: Vec::new(),
    };
    let ctx = (p, inner);
    // SAFETY: `ctx` outlives the loop.
    let s = unsafe {
        keel_parallel_for(
            p,
            0,
            4,
            c"static".as_ptr(),
            Some(nest),
            &ctx as *const _ as *mut c_void,
        )
    };
    assert_eq!(s, keel_status::KEEL_OK, "{}", message());
    assert!(ctx.1.hits.iter().all(|h| h.load(Ordering::Relaxed) == 4));
    assert_eq!(ctx.1.bad_thread.load(Ordering::Relaxed), 0);
    // SAFETY: made above.
    unsafe { keel_pool_free(p) };
}

/// Per-participant iteration counts, as a body sees them.
struct PerThread {
    iterations: Vec<AtomicUsize>,
}

unsafe extern "C-unwind" fn per_thread(
    begin: i64,
    end: i64,
    thread: usize,
    ctx: *mut c_void,
) -> i32 {
    // SAFETY: the test passes a `PerThread`.
    let c = unsafe { &*(ctx as *const PerThread) };
    c.iterations[thread].fetch_add((end - begin) as usize, Ordering::Relaxed);
    0
}

#[test]
fn hinted_loops_assign_iterations_as_the_rust_api() {
    use keel_status::*;
    let p = pool(2);
    let loads: Vec<f64> = (0..1000).map(|i| ((i * 7919) % 97) as f64 + 1.0).collect();
    let counts = PerThread {
        iterations: (0..2).map(|_| AtomicUsize::new(0)).collect(),
    };
    let ctx = &counts as *const PerThread as *mut c_void;
    let mut stats = keel_loop_stats {
        threads: 0,
        iterations: 0,
        chunks: 0,
        t_par: 0.0,
        lib_percent: 0.0,
    };
    // SAFETY: `loads` and `counts` outlive the loop.
    let status = unsafe {
        keel_parallel_for_hinted(
            p,
            c"hinted/c".as_ptr(),
            0,
            1000,
            c"binlpt:chunks=16".as_ptr(),
            KEEL_LOOP_RECORDED,
            loads.as_ptr(),
            loads.len(),
            Some(per_thread),
            ctx,
            &mut stats,
        )
    };
    assert_eq!(status, KEEL_OK, "{}", message());
    let from_body: Vec<u64> = counts
        .iterations
        .iter()
        .map(|c| c.load(Ordering::Relaxed) as u64)
        .collect();
    assert_eq!(from_body.iter().sum::<u64>(), 1000);
    // SAFETY: live until freed below.
    let rust_pool = unsafe { &*p }.thread_pool();
    rust_pool
        .parallel(0..1000i64)
        .schedule("binlpt:chunks=16".parse().unwrap())
        .workload(&loads)
        .id("hinted/rust")
        .recorded()
        .for_each_chunk(|_| {});
    let rust = keel_rt::loops::record(keel_rt::LoopId::named("hinted/rust")).unwrap();
    let c = keel_rt::loops::record(keel_rt::LoopId::named("hinted/c")).unwrap();
    assert_eq!(c.last.thread_iterations, rust.last.thread_iterations);
    assert_eq!(from_body, rust.last.thread_iterations);
    assert_eq!(c.last.chunks, rust.last.chunks);
    // SAFETY: hostile hints and lengths; `loads` outlives the calls.
    unsafe {
        let hinted = |w: *const f64, n: usize| {
            keel_parallel_for_hinted(
                p,
                c"hinted/bad".as_ptr(),
                0,
                1000,
                c"binlpt".as_ptr(),
                0,
                w,
                n,
                Some(per_thread),
                ctx,
                null_mut(),
            )
        };
        assert_eq!(hinted(loads.as_ptr(), 999), KEEL_ERR_LENGTH_MISMATCH);
        assert_eq!(hinted(null(), 1000), KEEL_ERR_NULL_POINTER);
        assert_eq!(hinted(null(), 0), KEEL_ERR_LENGTH_MISMATCH);
        let mut bad = loads.clone();
        bad[500] = f64::NAN;
        let s = hinted(bad.as_ptr(), 1000);
        assert!(
            matches!(s, KEEL_ERR_SCHEDULE | KEEL_ERR_INVALID_INPUT),
            "{s:?}: {}",
            message()
        );
        bad[500] = -1.0;
        assert_ne!(hinted(bad.as_ptr(), 1000), KEEL_OK);
        // Without hints binlpt cannot plan: a code, not a panic.
        assert_eq!(
            keel_parallel_for(p, 0, 10, c"binlpt".as_ptr(), Some(per_thread), ctx),
            KEEL_ERR_SCHEDULE
        );
        keel_pool_free(p);
    }
}

unsafe extern "C-unwind" fn nothing(_: i64, _: i64, _: usize, _: *mut c_void) -> i32 {
    0
}

#[test]
fn a_freed_pool_is_refused_at_once_not_waited_on() {
    // SAFETY: a fresh pool, used by this test alone.
    let pool = unsafe { keel_pool_new(2, null_mut()) };
    assert!(!pool.is_null());
    // SAFETY: a live pool and a body that touches nothing.
    let status = unsafe { keel_parallel_for(pool, 0, 10, null(), Some(nothing), null_mut()) };
    assert_eq!(status, keel_status::KEEL_OK);
    // SAFETY: made above, no loop running.
    unsafe { keel_pool_free(pool) };
    // Before the check, this loop waited forever for workers that had
    // stopped: the test would hang rather than fail.
    // SAFETY: a handle from keel_pool_new, which the call checks first.
    let status = unsafe { keel_parallel_for(pool, 0, 10, null(), Some(nothing), null_mut()) };
    assert_eq!(status, keel_status::KEEL_ERR_INVALID_ARGUMENT);
    assert!(message().contains("not a live pool"), "{}", message());
    // SAFETY: as above.
    assert_eq!(unsafe { keel_pool_threads(pool) }, 0);
    let mut last = std::mem::MaybeUninit::uninit();
    // SAFETY: as above; `last` is valid for a write.
    let status = unsafe { keel_pool_last_stats(pool, last.as_mut_ptr()) };
    assert_eq!(status, keel_status::KEEL_ERR_INVALID_ARGUMENT);
    // A second free is ignored (with a warning), not a double free.
    // SAFETY: as above.
    unsafe { keel_pool_free(pool) };
}
