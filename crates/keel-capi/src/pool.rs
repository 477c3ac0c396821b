//! Loops: a pool handle and parallel loops over `int64_t` ranges whose body
//! gets whole chunks, `body(begin, end, thread, ctx)`.
//!
//! ```
//! use keel::*;
//! use std::ffi::c_void;
//! use std::sync::atomic::{AtomicU64, Ordering};
//!
//! unsafe extern "C-unwind" fn add(begin: i64, end: i64, _thread: usize, ctx: *mut c_void) -> i32 {
//!     let sum = unsafe { &*(ctx as *const AtomicU64) };
//!     sum.fetch_add((begin..end).map(|i| i as u64).sum(), Ordering::Relaxed);
//!     0
//! }
//! let pool = unsafe { keel_pool_new(2, std::ptr::null_mut()) };
//! assert_eq!(unsafe { keel_pool_threads(pool) }, 2);
//! let sum = AtomicU64::new(0);
//! let ctx = &sum as *const AtomicU64 as *mut c_void;
//! let status = unsafe { keel_parallel_for(pool, 0, 1000, c"dynamic,4".as_ptr(), Some(add), ctx) };
//! assert_eq!((status, sum.load(Ordering::Relaxed)), (keel_status::KEEL_OK, 499_500));
//!
//! // A named, recorded loop: its statistics, then its record's.
//! let mut stats = std::mem::MaybeUninit::uninit();
//! let status = unsafe {
//!     keel_parallel_for_id(pool, c"doc-loop".as_ptr(), 0, 100, c"static".as_ptr(),
//!                          KEEL_LOOP_RECORDED, Some(add), ctx, stats.as_mut_ptr())
//! };
//! assert_eq!(status, keel_status::KEEL_OK);
//! let stats = unsafe { stats.assume_init() };
//! assert_eq!((stats.threads, stats.iterations, stats.chunks), (2, 100, 2));
//! assert!(stats.t_par >= 0.0);
//! let mut last = std::mem::MaybeUninit::uninit();
//! assert_eq!(unsafe { keel_pool_last_stats(pool, last.as_mut_ptr()) }, keel_status::KEEL_OK);
//! assert_eq!(unsafe { last.assume_init() }.iterations, 100);
//! let mut rec = std::mem::MaybeUninit::uninit();
//! assert_eq!(unsafe { keel_loop_record_stats(c"doc-loop".as_ptr(), rec.as_mut_ptr()) }, keel_status::KEEL_OK);
//! assert_eq!(unsafe { rec.assume_init() }.iterations, 100);
//! unsafe { keel_pool_free(pool) };
//! ```

use std::cell::Cell;
use std::collections::HashSet;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, RwLock};

use keel_rt::loops::{LoopId, LoopRecord};
use keel_rt::{LoopError, LoopSummary, Schedule, ThreadPool};

use crate::status::{guard, keel_status, quietly, report, text, Failure};

/// A loop body: runs the iterations `[begin, end)` on participant `thread`
/// (0 is the thread that called `keel_parallel_for`, the others are the
/// pool's workers, `0 ≤ thread < keel_pool_threads(pool)`), with the `ctx`
/// given to the loop. Returns 0 to go on; anything else stops the loop:
/// no later chunk runs the body and the loop returns `KEEL_ERR_BODY`.
/// Several threads run it at once. It must not unwind (a C++ exception)
/// or `longjmp` out.
pub type keel_loop_body = Option<
    unsafe extern "C-unwind" fn(begin: i64, end: i64, thread: usize, ctx: *mut c_void) -> c_int,
>;

/// `keel_parallel_for_id`'s flags: measure the instance (T_par and LIB in
/// its statistics, and the loop's record for `keel_loop_record_stats`).
pub const KEEL_LOOP_RECORDED: u32 = 1;

/// A pool of persistent worker threads (opaque); the thread that starts a
/// loop takes part as participant 0. Made by `keel_pool_new`, freed by
/// `keel_pool_free`. Loops may be started on it from any thread; they run
/// one after another.
pub struct keel_pool {
    pool: ThreadPool,
    uid: usize,
    last: Mutex<keel_loop_stats>,
}

/// What one loop instance did. Times are in seconds.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct keel_loop_stats {
    /// Participants.
    pub threads: u64,
    /// Iterations.
    pub iterations: u64,
    /// Chunks the schedule handed out.
    pub chunks: u64,
    /// T_par, from the fork to the join; NaN unless the instance was
    /// recorded (`KEEL_LOOP_RECORDED`).
    pub t_par: f64,
    /// LIB in percent over the participants' finish times; NaN unless the
    /// instance was recorded.
    pub lib_percent: f64,
}

impl keel_loop_stats {
    const NONE: keel_loop_stats = keel_loop_stats {
        threads: 0,
        iterations: 0,
        chunks: 0,
        t_par: f64::NAN,
        lib_percent: f64::NAN,
    };

    fn of(summary: &LoopSummary) -> Self {
        keel_loop_stats {
            threads: summary.threads as u64,
            iterations: summary.iterations,
            chunks: summary.chunks,
            t_par: summary.t_par.unwrap_or(f64::NAN),
            lib_percent: summary.lib_percent.unwrap_or(f64::NAN),
        }
    }

    fn of_record(record: &LoopRecord) -> Self {
        let last = &record.last;
        keel_loop_stats {
            threads: last.threads as u64,
            iterations: last.iterations,
            chunks: last.total_chunks(),
            t_par: last.t_par,
            lib_percent: last.lib_percent,
        }
    }
}

impl keel_pool {
    /// The Rust pool behind the handle, for Rust code that runs its own
    /// loops beside C callers on the same threads (no C function).
    ///
    /// ```
    /// let handle = unsafe { keel::keel_pool_new(2, std::ptr::null_mut()) };
    /// let pool = unsafe { &*handle }.thread_pool();
    /// let sum = pool.parallel(0..100u64).fold_reduce(|| 0, |a, i| a + i, |a, b| a + b);
    /// assert_eq!(sum, 4950);
    /// unsafe { keel::keel_pool_free(handle) };
    /// ```
    pub fn thread_pool(&self) -> &ThreadPool {
        &self.pool
    }
}

static NEXT_POOL: AtomicUsize = AtomicUsize::new(1);

/// The addresses of the pools `keel_pool_new` made and `keel_pool_free`
/// has not freed: a handle used after its free (or never made) is refused
/// with an error instead of reaching a pool whose workers are gone (a region
/// on it would wait for them forever). An address the allocator hands to a
/// newer pool names that pool: only what no live pool holds is detected.
fn live_pools() -> &'static RwLock<HashSet<usize>> {
    static LIVE: OnceLock<RwLock<HashSet<usize>>> = OnceLock::new();
    LIVE.get_or_init(Default::default)
}

/// The pool behind `pool`, if it is live.
///
/// # Safety
///
/// `pool` is NULL or was made by `keel_pool_new` (freed or not).
unsafe fn live<'a>(pool: *const keel_pool) -> Result<&'a keel_pool, Failure> {
    if pool.is_null() {
        return Err(Failure::null("pool"));
    }
    let known = live_pools()
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .contains(&(pool as usize));
    if !known {
        return Err(Failure::new(
            keel_status::KEEL_ERR_INVALID_ARGUMENT,
            format!("{pool:p} is not a live pool (freed with keel_pool_free, or not made by keel_pool_new)"),
        ));
    }
    // SAFETY: live: made by keel_pool_new and not freed; the caller frees
    // it only when no call uses it.
    Ok(unsafe { &*pool })
}

thread_local! {
    /// (pool, participant) for a pool's worker thread: a worker is the same
    /// participant in every region of its pool, and the Rust API's chunk
    /// bodies are not told their participant, so each worker is told once.
    static PARTICIPANT: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// Starts a pool of `threads` participants, the caller included; 0 takes
/// `KEEL_NUM_THREADS`, else the available cores. NULL on failure, with the
/// reason in `*status` (when `status` is not NULL).
///
/// # Safety
///
/// `status` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn keel_pool_new(threads: usize, status: *mut keel_status) -> *mut keel_pool {
    let mut made = std::ptr::null_mut();
    let outcome = guard(|| {
        let builder = ThreadPool::builder();
        let builder = if threads == 0 {
            builder
        } else {
            builder.threads(threads)
        };
        let pool = builder
            .build()
            .map_err(|e| Failure::new(keel_status::KEEL_ERR_POOL, e.to_string()))?;
        let uid = NEXT_POOL.fetch_add(1, Ordering::Relaxed);
        pool.region(|team| {
            if team.index != 0 {
                PARTICIPANT.with(|p| p.set((uid, team.index)));
            }
        });
        made = Box::into_raw(Box::new(keel_pool {
            pool,
            uid,
            last: Mutex::new(keel_loop_stats::NONE),
        }));
        live_pools()
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(made as usize);
        Ok(())
    });
    // SAFETY: the caller's contract on `status`.
    unsafe { report(status, outcome) };
    made
}

/// The pool's participants, the caller included; 0 for NULL or a pool
/// already freed.
///
/// # Safety
///
/// `pool` is NULL or a pool from `keel_pool_new`.
#[no_mangle]
pub unsafe extern "C" fn keel_pool_threads(pool: *const keel_pool) -> usize {
    let mut threads = 0;
    quietly(|| {
        // SAFETY: the caller's contract.
        threads = unsafe { live(pool) }.map_or(0, |p| p.pool.threads());
    });
    threads
}

/// Stops the pool's workers and frees it; NULL is ignored, and so is a
/// pool already freed (with a warning on stderr: a double free).
///
/// # Safety
///
/// `pool` is NULL or a pool from `keel_pool_new`, with no loop running on
/// it.
#[no_mangle]
pub unsafe extern "C" fn keel_pool_free(pool: *mut keel_pool) {
    quietly(|| {
        if pool.is_null() {
            return;
        }
        let was_live = live_pools()
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&(pool as usize));
        if !was_live {
            eprintln!("keel: keel_pool_free({pool:p}): not a live pool (freed twice?); ignored");
            return;
        }
        // SAFETY: made by Box::into_raw in keel_pool_new; live until now,
        // and no longer findable by any other call.
        drop(unsafe { Box::from_raw(pool) });
    });
}

/// `ctx` shared by the participants: the body's contract is that it may
/// run on several threads at once.
struct Shared(*mut c_void);
// SAFETY: only handed back to the body, whose contract allows any thread.
unsafe impl Sync for Shared {}

/// The first failing chunk's code.
struct Stop {
    stopped: AtomicBool,
    first: Mutex<Option<(c_int, i64, i64)>>,
}

fn schedule_of(schedule: *const c_char) -> Result<Option<Schedule>, Failure> {
    if schedule.is_null() {
        return Ok(None);
    }
    // SAFETY: the callers' contract: NULL or NUL-terminated.
    let text = unsafe { text(schedule, "schedule") }?;
    text.parse::<Schedule>()
        .map(Some)
        .map_err(|e| Failure::new(keel_status::KEEL_ERR_SCHEDULE, e.to_string()))
}

fn loop_failure(e: LoopError) -> Failure {
    let status = match e {
        LoopError::Schedule { .. } => keel_status::KEEL_ERR_SCHEDULE,
        LoopError::Pool(_) => keel_status::KEEL_ERR_POOL,
        _ => keel_status::KEEL_ERR_INVALID_ARGUMENT,
    };
    Failure::new(status, e.to_string())
}

/// One loop call's arguments, as the entry points received them.
struct Call<'a> {
    pool: *const keel_pool,
    /// None: named by the body's address.
    id: Option<&'a str>,
    begin: i64,
    end: i64,
    schedule: *const c_char,
    flags: u32,
    workload: Option<&'a [f64]>,
    body: keel_loop_body,
    ctx: *mut c_void,
    stats: *mut keel_loop_stats,
}

/// Runs one loop.
///
/// # Safety
///
/// The callers' contracts: `pool` NULL or live, `schedule` NULL or a C
/// string, `body` callable with `ctx` from any thread, `stats` NULL or
/// valid for a write.
unsafe fn run(call: Call<'_>) -> Result<(), Failure> {
    let Call {
        pool,
        id,
        begin,
        end,
        schedule,
        flags,
        workload,
        body,
        ctx,
        stats,
    } = call;
    // SAFETY: the caller's contract: NULL or made by keel_pool_new.
    let pool = unsafe { live(pool) }?;
    let body = body.ok_or_else(|| Failure::null("body"))?;
    if flags & !KEEL_LOOP_RECORDED != 0 {
        return Err(Failure::new(
            keel_status::KEEL_ERR_INVALID_ARGUMENT,
            format!("unknown loop flags {:#x}", flags & !KEEL_LOOP_RECORDED),
        ));
    }
    let schedule = schedule_of(schedule)?;
    // An empty or reversed range runs nothing, as an OpenMP loop's would.
    let range = begin..end.max(begin);
    let iterations = range.end.abs_diff(range.start);
    let mut parallel = pool.pool.parallel(range);
    if let Some(schedule) = schedule {
        parallel = parallel.schedule(schedule);
    }
    parallel = match id {
        Some(name) => parallel.id(name.to_string()),
        None => parallel.id(format!("c:{:p}", body as *const ())),
    };
    if flags & KEEL_LOOP_RECORDED != 0 {
        parallel = parallel.recorded();
    }
    if let Some(loads) = workload {
        if loads.len() as u64 != iterations {
            return Err(Failure::new(
                keel_status::KEEL_ERR_LENGTH_MISMATCH,
                format!("{} workload hints for {iterations} iterations", loads.len()),
            ));
        }
        parallel = parallel.workload(loads);
    }
    // A loop started inside one of this pool's regions runs inline, on one
    // participant: there every chunk is participant 0's.
    let inline = pool.pool.team_size_here() == 1;
    let uid = pool.uid;
    let ctx = Shared(ctx);
    let stop = Stop {
        stopped: AtomicBool::new(false),
        first: Mutex::new(None),
    };
    let chunk = |r: std::ops::Range<i64>| {
        if stop.stopped.load(Ordering::Relaxed) {
            return;
        }
        let thread = if inline {
            0
        } else {
            PARTICIPANT.with(|p| match p.get() {
                (pool, index) if pool == uid => index,
                _ => 0,
            })
        };
        let ctx = &ctx;
        // SAFETY: the body's contract: callable from any participant with
        // the loop's ctx.
        let code = unsafe { body(r.start, r.end, thread, ctx.0) };
        if code != 0 {
            stop.stopped.store(true, Ordering::Relaxed);
            let mut first = stop.first.lock().unwrap_or_else(|e| e.into_inner());
            first.get_or_insert((code, r.start, r.end));
        }
    };
    let summary = parallel.try_for_each_chunk(chunk).map_err(loop_failure)?;
    let got = keel_loop_stats::of(&summary);
    *pool.last.lock().unwrap_or_else(|e| e.into_inner()) = got;
    if !stats.is_null() {
        // SAFETY: the caller's contract: valid for a write.
        unsafe { stats.write(got) };
    }
    match stop.first.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some((code, from, to)) => Err(Failure::new(
            keel_status::KEEL_ERR_BODY,
            format!(
                "the loop body returned {code} for iterations [{from}, {to}); the loop stopped"
            ),
        )),
        None => Ok(()),
    }
}

/// Runs `body` over `[begin, end)` on the pool's participants, in the
/// chunks `schedule` hands out (`OMP_SCHEDULE` syntax: `"static"`,
/// `"dynamic,1"`, `"guided"`, `"auto"`, `"binlpt:chunks=80"`; NULL takes
/// `KEEL_SCHEDULE`, else the default), and returns when every iteration has
/// run exactly once. The loop's id (what `auto` learns per) is the body's
/// address; `keel_parallel_for_id` names it instead. A body returning
/// non-zero stops the loop (`KEEL_ERR_BODY`); a panic inside is
/// `KEEL_ERR_PANIC`; the pool stays usable either way.
///
/// # Safety
///
/// `pool` is NULL or live; `schedule` NULL or a NUL-terminated string;
/// `body` may be called with `ctx` on any of the pool's threads at once.
#[no_mangle]
pub unsafe extern "C" fn keel_parallel_for(
    pool: *const keel_pool,
    begin: i64,
    end: i64,
    schedule: *const c_char,
    body: keel_loop_body,
    ctx: *mut c_void,
) -> keel_status {
    guard(|| {
        let call = Call {
            pool,
            id: None,
            begin,
            end,
            schedule,
            flags: 0,
            workload: None,
            body,
            ctx,
            stats: std::ptr::null_mut(),
        };
        // SAFETY: the caller's contract, passed on.
        unsafe { run(call) }
    })
}

/// `keel_parallel_for` for the loop named `loop_id` (instances with equal
/// names are one loop, whose record and `auto` selection they share), with
/// `flags` (`KEEL_LOOP_RECORDED` or 0), writing the instance's statistics
/// to `*stats` when `stats` is not NULL (also when the body stopped it).
///
/// # Safety
///
/// As `keel_parallel_for`; `loop_id` is NULL or a NUL-terminated string;
/// `stats` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn keel_parallel_for_id(
    pool: *const keel_pool,
    loop_id: *const c_char,
    begin: i64,
    end: i64,
    schedule: *const c_char,
    flags: u32,
    body: keel_loop_body,
    ctx: *mut c_void,
    stats: *mut keel_loop_stats,
) -> keel_status {
    guard(|| {
        // SAFETY: the caller's contract, passed on.
        let id = unsafe { text(loop_id, "loop_id") }?;
        let call = Call {
            pool,
            id: Some(id),
            begin,
            end,
            schedule,
            flags,
            workload: None,
            body,
            ctx,
            stats,
        };
        // SAFETY: the caller's contract, passed on.
        unsafe { run(call) }
    })
}

/// `keel_parallel_for_id` with per-iteration workload hints: `workload`
/// holds one finite, non-negative number per iteration (`end - begin`
/// entries, any unit), read by the workload-aware schedules `binlpt` and
/// `greedy`, which map the iterations by them once and reuse that
/// assignment while the hints (bit for bit), the team and the chunk stay
/// the same; other schedules ignore them.
///
/// # Safety
///
/// As `keel_parallel_for_id`; `workload` is valid for `num_workload`
/// reads, or NULL with `num_workload` 0.
#[no_mangle]
pub unsafe extern "C" fn keel_parallel_for_hinted(
    pool: *const keel_pool,
    loop_id: *const c_char,
    begin: i64,
    end: i64,
    schedule: *const c_char,
    flags: u32,
    workload: *const f64,
    num_workload: usize,
    body: keel_loop_body,
    ctx: *mut c_void,
    stats: *mut keel_loop_stats,
) -> keel_status {
    guard(|| {
        // SAFETY: the caller's contract, passed on.
        let id = unsafe { text(loop_id, "loop_id") }?;
        // SAFETY: the caller's contract: NULL or valid for its length.
        let loads = unsafe {
            crate::mapper::array(workload, num_workload, num_workload, "workload", "hints")
        }?
        .unwrap_or(&[]);
        let call = Call {
            pool,
            id: Some(id),
            begin,
            end,
            schedule,
            flags,
            workload: Some(loads),
            body,
            ctx,
            stats,
        };
        // SAFETY: the caller's contract, passed on.
        unsafe { run(call) }
    })
}

/// The statistics of the last loop instance that ran on `pool` (from any
/// thread); all zero and NaN before the first.
///
/// # Safety
///
/// `pool` is NULL or live; `out` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn keel_pool_last_stats(
    pool: *const keel_pool,
    out: *mut keel_loop_stats,
) -> keel_status {
    guard(|| {
        // SAFETY: the caller's contract.
        let pool = unsafe { live(pool) }?;
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        let last = *pool.last.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: non-NULL; the caller's contract.
        unsafe { out.write(last) };
        Ok(())
    })
}

/// The statistics of the last *recorded* instance of the loop named
/// `loop_id` (`KEEL_LOOP_RECORDED`, or a schedule that records, such as
/// `auto`), on any pool; `KEEL_ERR_NOT_FOUND` when it has none.
///
/// # Safety
///
/// `loop_id` is NULL or a NUL-terminated string; `out` is NULL or valid for
/// a write.
#[no_mangle]
pub unsafe extern "C" fn keel_loop_record_stats(
    loop_id: *const c_char,
    out: *mut keel_loop_stats,
) -> keel_status {
    guard(|| {
        // SAFETY: the caller's contract.
        let id = unsafe { text(loop_id, "loop_id") }?;
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        let record = keel_rt::loops::record(LoopId::named(id.to_string())).ok_or_else(|| {
            Failure::new(
                keel_status::KEEL_ERR_NOT_FOUND,
                format!("no recorded instance of loop `{id}`"),
            )
        })?;
        // SAFETY: non-NULL; the caller's contract.
        unsafe { out.write(keel_loop_stats::of_record(&record)) };
        Ok(())
    })
}
