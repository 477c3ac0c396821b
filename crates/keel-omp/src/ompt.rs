//! The OMPT tool interface (OpenMP 5.x, "OMPT"): how libomp tells this
//! library where its teams begin and end. libomp calls `ompt_start_tool`
//! once at start-up; the initializer registers `parallel_begin` /
//! `parallel_end` (a team descriptor per region, kept in the region's
//! `parallel_data`) and `implicit_task` (each thread's entry into and exit
//! from a region: its index and the team size, as the libgomp trampoline
//! records them).
//!
//! libomp loads one tool. With `OMP_TOOL_LIBRARIES` set, the user's tool
//! is left to load: this one declines, warns once, and libomp runs every
//! clang loop itself (no thread is in a team Keel knows of).

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::Arc;

use crate::team::{self, Team};
use crate::{abi_kmpc, guard, warn_once};

/// OMPT's `ompt_data_t`: a word a tool keeps per region, task or thread.
#[repr(C)]
pub union OmptData {
    value: u64,
    ptr: *mut c_void,
}

/// OMPT's `ompt_start_tool_result_t`.
#[repr(C)]
pub struct StartToolResult {
    initialize: unsafe extern "C" fn(Lookup, c_int, *mut OmptData) -> c_int,
    finalize: unsafe extern "C" fn(*mut OmptData),
    tool_data: OmptData,
}

type Callback = unsafe extern "C" fn();
type Lookup = unsafe extern "C" fn(*const c_char) -> Option<Callback>;
type SetCallback = unsafe extern "C" fn(c_int, Option<Callback>) -> c_int;

// OMPT's event numbers and flags (the OpenMP specification's `omp-tools.h`).
const PARALLEL_BEGIN: c_int = 3;
const PARALLEL_END: c_int = 4;
const IMPLICIT_TASK: c_int = 7;
const SET_ALWAYS: c_int = 5;
const SCOPE_BEGIN: c_int = 1;
const SCOPE_END: c_int = 2;
const TASK_IMPLICIT: c_int = 2;

/// The OpenMP runtime's question at start-up: is there a tool? Yes,
/// unless the user named their own in `OMP_TOOL_LIBRARIES`.
///
/// # Safety
/// Called by the OpenMP runtime as OMPT specifies.
#[no_mangle]
pub unsafe extern "C" fn ompt_start_tool(
    _omp_version: c_uint,
    _runtime_version: *const c_char,
) -> *mut StartToolResult {
    guard(|| {
        if std::env::var_os("OMP_TOOL_LIBRARIES").is_some_and(|v| !v.is_empty()) {
            warn_once("OMP_TOOL_LIBRARIES names another OMPT tool and libomp loads only one: Keel leaves clang-compiled loops to libomp");
            return std::ptr::null_mut();
        }
        // Called once per process; the runtime keeps the pointer.
        Box::into_raw(Box::new(StartToolResult {
            initialize,
            finalize,
            tool_data: OmptData { value: 0 },
        }))
    })
}

unsafe extern "C" fn initialize(lookup: Lookup, _device: c_int, _data: *mut OmptData) -> c_int {
    guard(|| {
        // SAFETY: the runtime's lookup takes a NUL-terminated name.
        let Some(set) = (unsafe { lookup(c"ompt_set_callback".as_ptr()) }) else {
            return 0;
        };
        // SAFETY: OMPT's lookup returns `ompt_set_callback` under that name.
        let set: SetCallback = unsafe { std::mem::transmute::<Callback, SetCallback>(set) };
        // SAFETY: each callback has the signature OMPT gives its event.
        let registered = unsafe {
            [
                set(
                    PARALLEL_BEGIN,
                    Some(std::mem::transmute::<ParallelBegin, Callback>(
                        parallel_begin,
                    )),
                ),
                set(
                    PARALLEL_END,
                    Some(std::mem::transmute::<ParallelEnd, Callback>(parallel_end)),
                ),
                set(
                    IMPLICIT_TASK,
                    Some(std::mem::transmute::<ImplicitTask, Callback>(implicit_task)),
                ),
            ]
        };
        // Without every team boundary, no loop can be matched: stay off.
        c_int::from(registered.iter().all(|&r| r == SET_ALWAYS))
    })
}

unsafe extern "C" fn finalize(_data: *mut OmptData) {}

type ParallelBegin =
    unsafe extern "C" fn(*mut OmptData, *const c_void, *mut OmptData, c_uint, c_int, *const c_void);
type ParallelEnd = unsafe extern "C" fn(*mut OmptData, *mut OmptData, c_int, *const c_void);
type ImplicitTask =
    unsafe extern "C" fn(c_int, *mut OmptData, *mut OmptData, c_uint, c_uint, c_int);

/// A region begins (on the encountering thread, before its team runs):
/// its team descriptor, shared by the implicit tasks.
unsafe extern "C" fn parallel_begin(
    _task: *mut OmptData,
    _frame: *const c_void,
    parallel: *mut OmptData,
    _requested: c_uint,
    _flags: c_int,
    _codeptr: *const c_void,
) {
    guard(|| {
        if !parallel.is_null() {
            let team = Arc::into_raw(Team::for_region());
            // SAFETY: the runtime's region data, ours to write.
            unsafe { (*parallel).ptr = team as *mut c_void };
        }
    })
}

/// A region ends: its descriptor goes, kept for this thread's next region
/// when no thread holds it any more (threads still inside an implicit
/// task hold their own references).
unsafe extern "C" fn parallel_end(
    parallel: *mut OmptData,
    _task: *mut OmptData,
    _flags: c_int,
    _codeptr: *const c_void,
) {
    guard(|| {
        if parallel.is_null() {
            return;
        }
        // SAFETY: `ptr` is what `parallel_begin` stored, or null.
        let team = unsafe { std::mem::replace(&mut (*parallel).ptr, std::ptr::null_mut()) };
        if !team.is_null() {
            // SAFETY: the reference `parallel_begin` made.
            Team::recycle(unsafe { Arc::from_raw(team as *const Team) });
        }
    })
}

/// What a thread set aside on entering an implicit task.
struct Frame {
    saved: Option<team::Saved>,
    /// The member's team, alive until the member's state is restored.
    team: Arc<Team>,
    map: Option<(crate::kmp::KmpBounds, u64)>,
}

/// A thread enters (`SCOPE_BEGIN`) or leaves (`SCOPE_END`) its implicit
/// task of a region: its team membership, and what it had before (a
/// nested region's master may be inside an outer loop).
unsafe extern "C" fn implicit_task(
    endpoint: c_int,
    parallel: *mut OmptData,
    task: *mut OmptData,
    threads: c_uint,
    index: c_uint,
    flags: c_int,
) {
    guard(|| {
        if flags & TASK_IMPLICIT == 0 || task.is_null() {
            return;
        }
        match endpoint {
            SCOPE_BEGIN => {
                // SAFETY: `ptr` is what `parallel_begin` stored, or null.
                let shared = (!parallel.is_null())
                    .then(|| unsafe { (*parallel).ptr } as *const Team)
                    .filter(|p| !p.is_null());
                let team = match shared {
                    Some(team) => {
                        // SAFETY: the region's reference lives until
                        // `parallel_end`, after this task began.
                        unsafe {
                            Arc::increment_strong_count(team);
                            Arc::from_raw(team)
                        }
                    }
                    // A team of one shares nothing.
                    None if threads <= 1 => Arc::new(Team::new()),
                    None => return,
                };
                let frame = Frame {
                    saved: team::enter_team(&team, index as usize, threads as usize),
                    team,
                    map: abi_kmpc::take_map(),
                };
                // SAFETY: the task's data, ours to write; read back at its end.
                unsafe { (*task).ptr = Box::into_raw(Box::new(frame)) as *mut c_void };
            }
            SCOPE_END => {
                // SAFETY: what the begin stored, or null.
                let frame = unsafe { std::mem::replace(&mut (*task).ptr, std::ptr::null_mut()) };
                if frame.is_null() {
                    return;
                }
                // SAFETY: the box the begin made, on this same thread.
                let frame = unsafe { Box::from_raw(frame as *mut Frame) };
                let Frame { saved, team, map } = *frame;
                if let Some(saved) = saved {
                    team::leave_team(saved);
                }
                // Only now that no member names it.
                drop(team);
                abi_kmpc::restore_map(map);
            }
            _ => {}
        }
    })
}
