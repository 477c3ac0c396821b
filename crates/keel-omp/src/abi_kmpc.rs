//! LLVM libomp's dispatch entry points, which clang and icx emit for
//! dynamically scheduled loops: `__kmpc_dispatch_init_{4,4u,8,8u}`,
//! `__kmpc_dispatch_next_*` and `__kmpc_dispatch_deinit`.
//!
//! Every thread of the team calls `init` with the loop's bounds; a loop
//! Keel takes runs in Keel's logical space `0..n` (the same team matching
//! and decision as libgomp's loops), and each chunk maps back to libomp's
//! inclusive `[lb, ub]` with the thread's mapping kept here. Team
//! boundaries come from OMPT (`ompt.rs`), since `__kmpc_fork_call` is
//! variadic and cannot be wrapped. `ordered` loops (whose
//! `__kmpc_dispatch_fini_*` libomp needs) and every kind Keel does not
//! take go to libomp whole: `init`, then every `next`.

use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::bounds::Bounds;
use crate::kmp::{kmp_schedule, KmpBounds};
use crate::team::{self, LoopCall, Step};
use crate::{guard, real};

thread_local! {
    /// The bounds of the loop Keel runs on this thread, to map its
    /// offsets back. Set aside with the team state across an inner
    /// region's implicit task (a loop body may open a nested region).
    /// With the bounds, their iteration count, counted once per loop (a
    /// 128-bit division) rather than at every chunk.
    static MAP: Cell<Option<(KmpBounds, u64)>> = const { Cell::new(None) };
}

/// This thread's mapping, taken out (for an inner implicit task).
pub(crate) fn take_map() -> Option<(KmpBounds, u64)> {
    MAP.try_with(Cell::take).ok().flatten()
}

/// Puts back what [`take_map`] took.
pub(crate) fn restore_map(map: Option<(KmpBounds, u64)>) {
    let _ = MAP.try_with(|m| m.set(map));
}

/// A thread's `init`: `true` when Keel runs the loop, `false` when the
/// caller must forward the call to libomp.
fn init(sched: i32, bounds: KmpBounds, site: usize) -> bool {
    let ((kind, monotonic), n) = match (kmp_schedule(sched), bounds.iterations()) {
        (Some(decoded), Some(n)) => (decoded, n),
        _ => {
            // Not matched against the team's loops: every thread of the
            // team forwards this loop alike. A finished loop of Keel's
            // may still be this thread's current one (libomp before 18
            // emits no deinit): its `next` must now reach libomp.
            team::end();
            return false;
        }
    };
    let call = LoopCall {
        kind,
        monotonic,
        bounds: Bounds::Ull {
            up: true,
            start: 0,
            end: n,
            incr: 1,
        },
        site,
    };
    let taken = team::begin(&call);
    restore_map(taken.then_some((bounds, n)));
    taken
}

/// What a `next` call does.
enum Out {
    /// Hand out `[lb, ub]` by `st`; `last` when it holds the last iteration.
    Chunk {
        lb: i128,
        ub: i128,
        st: i128,
        last: bool,
    },
    Done,
    Forward,
}

fn next() -> Out {
    match team::next() {
        Step::Chunk(s, e) => {
            let Some((map, n)) = MAP.try_with(Cell::get).ok().flatten() else {
                crate::fatal("a chunk of a loop whose bounds this thread does not hold")
            };
            let (lb, ub, last) = map.chunk_of(s as u64..e as u64, n);
            Out::Chunk {
                lb,
                ub,
                st: map.st,
                last,
            }
        }
        Step::Done => Out::Done,
        Step::Forward => Out::Forward,
    }
}

macro_rules! dispatch {
    ($init:ident, $init_imp:ident, $next:ident, $t:ty, $s:ty) => {
        with_site!($init => $init_imp(loc: *mut c_void, gtid: i32, schedule: i32, lb: $t, ub: $t, st: $s, chunk: $s) -> ());

        unsafe extern "C" fn $init_imp(
            loc: *mut c_void,
            gtid: i32,
            schedule: i32,
            lb: $t,
            ub: $t,
            st: $s,
            chunk: $s,
            site: f64,
        ) {
            guard(|| {
                let bounds = KmpBounds {
                    lb: i128::from(lb),
                    ub: i128::from(ub),
                    st: i128::from(st),
                };
                if !init(schedule, bounds, crate::site::site(site)) {
                    // SAFETY: the caller's own arguments, to libomp's definition.
                    unsafe { real::$init()(loc, gtid, schedule, lb, ub, st, chunk) }
                }
            })
        }

        #[doc = concat!("libomp's `", stringify!($next), "`: the thread's next chunk, inclusive.")]
        ///
        /// # Safety
        /// libomp's contract: the out-parameters are valid for writes.
        #[no_mangle]
        pub unsafe extern "C" fn $next(
            loc: *mut c_void,
            gtid: i32,
            p_last: *mut i32,
            p_lb: *mut $t,
            p_ub: *mut $t,
            p_st: *mut $s,
        ) -> c_int {
            guard(|| match next() {
                Out::Chunk { lb, ub, st, last } => {
                    // SAFETY: libomp's contract; null ones are skipped.
                    // The values lie between the loop's own bounds, so
                    // the narrowing casts are exact.
                    unsafe {
                        if !p_lb.is_null() {
                            *p_lb = lb as $t;
                        }
                        if !p_ub.is_null() {
                            *p_ub = ub as $t;
                        }
                        if !p_st.is_null() {
                            *p_st = st as $s;
                        }
                        if !p_last.is_null() {
                            *p_last = i32::from(last);
                        }
                    }
                    1
                }
                Out::Done => 0,
                // SAFETY: the caller's own arguments, to libomp's definition.
                Out::Forward => unsafe { real::$next()(loc, gtid, p_last, p_lb, p_ub, p_st) },
            })
        }
    };
}

dispatch!(
    __kmpc_dispatch_init_4,
    init_4,
    __kmpc_dispatch_next_4,
    i32,
    i32
);
dispatch!(
    __kmpc_dispatch_init_4u,
    init_4u,
    __kmpc_dispatch_next_4u,
    u32,
    i32
);
dispatch!(
    __kmpc_dispatch_init_8,
    init_8,
    __kmpc_dispatch_next_8,
    i64,
    i64
);
dispatch!(
    __kmpc_dispatch_init_8u,
    init_8u,
    __kmpc_dispatch_next_8u,
    u64,
    i64
);

/// libomp's `__kmpc_dispatch_deinit` (LLVM 18 and later; recent clang
/// calls it after each dynamically scheduled loop): ends a loop Keel ran,
/// or forwards. A libomp without it never receives the call.
///
/// # Safety
/// libomp's contract.
#[no_mangle]
pub unsafe extern "C" fn __kmpc_dispatch_deinit(loc: *mut c_void, gtid: i32) {
    guard(|| {
        if team::end() {
            return;
        }
        static CACHE: AtomicUsize = AtomicUsize::new(0);
        let mut address = CACHE.load(Ordering::Relaxed);
        if address == 0 {
            // SAFETY: the literal is NUL-terminated; RTLD_NEXT is valid from a shared object.
            address = unsafe { libc::dlsym(libc::RTLD_NEXT, c"__kmpc_dispatch_deinit".as_ptr()) }
                as usize;
            CACHE.store(address, Ordering::Relaxed);
        }
        if address != 0 {
            // SAFETY: libomp's definition, with this signature.
            let real: unsafe extern "C" fn(*mut c_void, i32) =
                unsafe { std::mem::transmute::<usize, _>(address) };
            // SAFETY: the caller's own arguments.
            unsafe { real(loc, gtid) }
        }
    })
}
