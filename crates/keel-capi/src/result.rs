//! The result of a `keel_map` call: destinations, the import and export
//! lists, the PU times and the metrics, owned by the library.
//!
//! ```
//! use keel::*;
//! let m = unsafe { keel_mapper_new(c"greedy".as_ptr(), std::ptr::null_mut()) };
//! let loads = [2.0, 2.0, 1.0, 1.0];
//! let current = [0i64, 0, 0, 0];
//! let input = keel_map_input {
//!     task_loads: loads.as_ptr(), num_tasks: 4, num_pus: 2,
//!     current_pu: current.as_ptr(), num_current_pu: 4,
//!     ..Default::default()
//! };
//! let mut r = std::ptr::null_mut();
//! assert_eq!(unsafe { keel_map(m, &input, &mut r) }, keel_status::KEEL_OK);
//! let mut metrics = std::mem::MaybeUninit::uninit();
//! assert_eq!(unsafe { keel_result_metrics(r, metrics.as_mut_ptr()) }, keel_status::KEEL_OK);
//! let metrics = unsafe { metrics.assume_init() };
//! assert_eq!((metrics.makespan, metrics.lambda, metrics.migrations), (3.0, 0.0, 2));
//! // The two tasks that leave PU 0 for PU 1, in both lists.
//! let mut n = 0;
//! let exports = unsafe { std::slice::from_raw_parts(keel_result_exports(r, &mut n), n) };
//! assert!(exports.iter().all(|m| (m.from_pu, m.to_pu) == (0, 1)));
//! assert_eq!(unsafe { keel_result_num_tasks(r) }, 4);
//! let mut p = 0;
//! let times = unsafe { std::slice::from_raw_parts(keel_result_pu_times(r, &mut p), p) };
//! assert_eq!(times, [3.0, 3.0]);
//! let imports = unsafe { keel_result_imports(r, &mut n) };
//! assert_eq!((imports.is_null(), n), (false, 2));
//! unsafe { keel_result_free(r); keel_mapper_free(m) };
//! ```

use keel_policy::metrics;
use keel_policy::{Mapping, MappingInput, NO_PU};
use keel_workloads::MappingProblem;

use crate::status::{guard, keel_status, quietly, Failure};

/// One task that moves: from its current PU (-1 when it had none) to its
/// destination.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct keel_move {
    /// The task's index.
    pub task: u64,
    /// Its current PU, -1 when it was placed nowhere.
    pub from_pu: i64,
    /// The PU the mapping gives it.
    pub to_pu: i64,
}

/// How good a mapping is, with the conventions of `keel map`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct keel_map_metrics {
    /// λ = makespan / mean − 1 over the available PUs' times (0 is perfect
    /// balance).
    pub lambda: f64,
    /// LIB = (1 − mean / makespan) · 100, in percent.
    pub lib_percent: f64,
    /// The largest PU time (background plus each task's load over the PU's
    /// speed).
    pub makespan: f64,
    /// The mean PU time over the available PUs.
    pub mean: f64,
    /// A bound no mapping's makespan can beat: max(total work over total
    /// speed, largest task on the fastest PU).
    pub lower_bound: f64,
    /// Tasks whose destination differs from their current PU; -1 when the
    /// input gave no current PUs.
    pub migrations: i64,
    /// Neighbouring tasks (by index) on different PUs.
    pub splits: u64,
}

/// A mapping decision and its metrics (opaque), made by `keel_map`, freed
/// by `keel_result_free`. Its arrays are owned by it and valid until then.
pub struct keel_map_result {
    destinations: Vec<i64>,
    imports: Vec<keel_move>,
    exports: Vec<keel_move>,
    pu_times: Vec<f64>,
    metrics: keel_map_metrics,
}

/// What `keel_map` computed, before it becomes a handle.
pub(crate) struct MapOutcome(keel_map_result);

impl MapOutcome {
    /// The result of `mapping` on `problem` (`input` is its validated form).
    pub(crate) fn new(
        problem: &MappingProblem,
        input: &MappingInput<'_>,
        mapping: Mapping,
    ) -> Self {
        let m = metrics::evaluate(input, &mapping);
        let to_i64 = |pu: usize| i64::try_from(pu).unwrap_or(-1);
        let current = problem.current.as_deref();
        let mut imports: Vec<keel_move> = mapping
            .as_slice()
            .iter()
            .enumerate()
            .filter_map(|(task, &to)| {
                let from = current.map_or(NO_PU, |c| c[task]);
                (from != to).then(|| keel_move {
                    task: task as u64,
                    from_pu: if from == NO_PU { -1 } else { to_i64(from) },
                    to_pu: to_i64(to),
                })
            })
            .collect();
        let mut exports: Vec<keel_move> =
            imports.iter().copied().filter(|m| m.from_pu >= 0).collect();
        // Zoltan's lists are read per PU: grouped by the receiving PU for
        // imports and by the sending PU for exports, tasks in order within.
        imports.sort_by_key(|m| (m.to_pu, m.task));
        exports.sort_by_key(|m| (m.from_pu, m.task));
        MapOutcome(keel_map_result {
            destinations: mapping.as_slice().iter().map(|&pu| to_i64(pu)).collect(),
            imports,
            exports,
            metrics: keel_map_metrics {
                lambda: m.lambda,
                lib_percent: m.lib_percent,
                makespan: m.makespan,
                mean: m.mean,
                lower_bound: m.lower_bound,
                migrations: m
                    .migrations
                    .map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX)),
                splits: m.splits as u64,
            },
            pu_times: m.pu_times,
        })
    }
}

impl From<MapOutcome> for keel_map_result {
    fn from(outcome: MapOutcome) -> Self {
        outcome.0
    }
}

/// `items` as a pointer and a length written to `len` when not NULL.
///
/// # Safety
///
/// `len` is NULL or valid for a write.
pub(crate) unsafe fn lend<T>(items: Option<&[T]>, len: *mut usize) -> *const T {
    if !len.is_null() {
        // SAFETY: the caller's contract.
        unsafe { len.write(items.map_or(0, <[T]>::len)) };
    }
    items.map_or(std::ptr::null(), <[T]>::as_ptr)
}

/// The number of tasks the result maps; 0 for NULL.
///
/// # Safety
///
/// `result` is NULL or a live result.
#[no_mangle]
pub unsafe extern "C" fn keel_result_num_tasks(result: *const keel_map_result) -> usize {
    // SAFETY: the caller's contract.
    unsafe { result.as_ref() }.map_or(0, |r| r.destinations.len())
}

/// The destination PU of every task (`num_tasks` entries, 0-based);
/// `*len` gets the count when `len` is not NULL. NULL (and 0) for a NULL
/// result.
///
/// # Safety
///
/// `result` is NULL or a live result; `len` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn keel_result_destinations(
    result: *const keel_map_result,
    len: *mut usize,
) -> *const i64 {
    // SAFETY: the caller's contract.
    unsafe { lend(result.as_ref().map(|r| &r.destinations[..]), len) }
}

/// The import list: every task whose destination differs from its current
/// PU (all tasks when the input gave no current PUs, each `from_pu` -1),
/// sorted by destination PU, then task. `*len` gets the count.
///
/// # Safety
///
/// As `keel_result_destinations`.
#[no_mangle]
pub unsafe extern "C" fn keel_result_imports(
    result: *const keel_map_result,
    len: *mut usize,
) -> *const keel_move {
    // SAFETY: the caller's contract.
    unsafe { lend(result.as_ref().map(|r| &r.imports[..]), len) }
}

/// The export list: the imports that leave a PU (`from_pu` ≥ 0), sorted by
/// current PU, then task. `*len` gets the count.
///
/// # Safety
///
/// As `keel_result_destinations`.
#[no_mangle]
pub unsafe extern "C" fn keel_result_exports(
    result: *const keel_map_result,
    len: *mut usize,
) -> *const keel_move {
    // SAFETY: the caller's contract.
    unsafe { lend(result.as_ref().map(|r| &r.exports[..]), len) }
}

/// Each PU's time under the mapping (`num_pus` entries, unavailable PUs
/// included): background plus its tasks' loads over its speed.
///
/// # Safety
///
/// As `keel_result_destinations`.
#[no_mangle]
pub unsafe extern "C" fn keel_result_pu_times(
    result: *const keel_map_result,
    len: *mut usize,
) -> *const f64 {
    // SAFETY: the caller's contract.
    unsafe { lend(result.as_ref().map(|r| &r.pu_times[..]), len) }
}

/// Copies the mapping's metrics (λ, LIB, makespan, migrations, …) to `*out`.
///
/// # Safety
///
/// `result` is NULL or a live result; `out` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn keel_result_metrics(
    result: *const keel_map_result,
    out: *mut keel_map_metrics,
) -> keel_status {
    guard(|| {
        // SAFETY: the caller's contract.
        let r = unsafe { result.as_ref() }.ok_or_else(|| Failure::null("result"))?;
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        // SAFETY: non-NULL; the caller's contract.
        unsafe { out.write(r.metrics) };
        Ok(())
    })
}

/// Frees a result and every array it lent; NULL is ignored.
///
/// # Safety
///
/// `result` is NULL or a result from `keel_map` not freed before.
#[no_mangle]
pub unsafe extern "C" fn keel_result_free(result: *mut keel_map_result) {
    quietly(|| {
        if !result.is_null() {
            // SAFETY: made by Box::into_raw in keel_map, freed once.
            drop(unsafe { Box::from_raw(result) });
        }
    });
}
