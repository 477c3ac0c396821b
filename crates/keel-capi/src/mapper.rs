//! Mapping in Zoltan's shape: a mapper handle built from a spec string,
//! parameters set as strings, inputs as arrays with their lengths, a result
//! the library allocates.
//!
//! ```
//! use keel::*;
//! use std::ffi::CStr;
//! let mut status = keel_status::KEEL_ERR_PANIC;
//! let spec = c"hier:nodes=2,outer=(greedy),inner=refine";
//! let hier = unsafe { keel_mapper_new(spec.as_ptr(), &mut status) };
//! assert_eq!(status, keel_status::KEEL_OK);
//! unsafe { keel_mapper_free(hier) };
//!
//! // Parameters one at a time; a refused one leaves the mapper as it was.
//! let m = unsafe { keel_mapper_new(c"binlpt".as_ptr(), std::ptr::null_mut()) };
//! let set = |k: &CStr, v: &CStr| unsafe { keel_mapper_set_param(m, k.as_ptr(), v.as_ptr()) };
//! assert_eq!(set(c"chunks", c"40"), keel_status::KEEL_OK);
//! assert_eq!(set(c"chunks", c"-1"), keel_status::KEEL_ERR_SPEC);
//! assert_eq!(set(c"chunks=1,x", c"2"), keel_status::KEEL_ERR_INVALID_ARGUMENT);
//! let canonical = unsafe { CStr::from_ptr(keel_mapper_spec(m)) };
//! assert_eq!(canonical.to_str(), Ok("binlpt:chunks=40,cut=improved"));
//! unsafe { keel_mapper_free(m) };
//!
//! // LPT on two PUs: 3 and 1 on PU 0, the two 2s on PU 1.
//! let m = unsafe { keel_mapper_new(c"greedy".as_ptr(), std::ptr::null_mut()) };
//! let loads = [3.0, 1.0, 2.0, 2.0];
//! let input = keel_map_input { task_loads: loads.as_ptr(), num_tasks: 4, num_pus: 2, ..Default::default() };
//! let mut r = std::ptr::null_mut();
//! assert_eq!(unsafe { keel_map(m, &input, &mut r) }, keel_status::KEEL_OK);
//! let mut n = 0;
//! let dest = unsafe { std::slice::from_raw_parts(keel_result_destinations(r, &mut n), n) };
//! assert_eq!(dest, [0, 0, 1, 1]);
//! unsafe { keel_result_free(r) };
//!
//! // A NaN load is an error code, and no result.
//! let bad = [1.0, f64::NAN];
//! let input = keel_map_input { task_loads: bad.as_ptr(), num_tasks: 2, num_pus: 2, ..Default::default() };
//! assert_eq!(unsafe { keel_map(m, &input, &mut r) }, keel_status::KEEL_ERR_INVALID_INPUT);
//! assert!(r.is_null());
//! unsafe { keel_mapper_free(m) };
//! ```

use std::ffi::{c_char, CString};

use keel_policy::spec::Spec;
use keel_policy::{MappingPolicy, Model, NO_PU};
use keel_workloads::MappingProblem;

use crate::result::{keel_map_result, MapOutcome};
use crate::status::{guard, keel_status, quietly, report, text, Failure};

/// The most PUs a `keel_map` call may name (the trace reader's limit).
pub const KEEL_MAX_PUS: usize = 1_000_000;

/// A mapping policy built from a spec string (opaque). Made by
/// `keel_mapper_new`, freed by `keel_mapper_free`. `keel_map` only reads
/// it, so threads may map with one mapper at once; `keel_mapper_set_param`
/// must not run beside any other use of the same mapper.
pub struct keel_mapper {
    spec: Spec,
    policy: Box<dyn MappingPolicy>,
    canonical: CString,
}

impl keel_mapper {
    fn build(spec: Spec) -> Result<Self, Failure> {
        let policy = keel_policy::mapping::registry().build_spec(&spec)?;
        let canonical = CString::new(policy.spec().to_string()).unwrap_or_default();
        Ok(keel_mapper {
            spec,
            policy,
            canonical,
        })
    }
}

/// The inputs of one `keel_map` call. Every array is given with its own
/// length; an optional array is absent when its pointer is NULL and its
/// length 0, and otherwise must have the length named. Indices are 0-based.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct keel_map_input {
    /// Work of each task, in reference units (its time on a PU of speed 1):
    /// finite and non-negative. Required unless `num_tasks` is 0.
    pub task_loads: *const f64,
    /// Number of tasks.
    pub num_tasks: usize,
    /// Number of PUs (at least 1, at most `KEEL_MAX_PUS`).
    pub num_pus: usize,
    /// Optional, `num_tasks` entries: each task's current PU, or a negative
    /// value for a task placed nowhere yet. Needed by `refine`, `hier`'s
    /// refining levels and every policy that counts migrations.
    pub current_pu: *const i64,
    /// Length of `current_pu`.
    pub num_current_pu: usize,
    /// Optional, `num_tasks` entries: 0 for a task that must stay on its
    /// current PU, anything else for one that may move.
    pub migratable: *const u8,
    /// Length of `migratable`.
    pub num_migratable: usize,
    /// Optional, `num_pus` entries: each PU's relative speed (1 is the
    /// reference), finite and positive. Absent: all equal.
    pub pu_speeds: *const f64,
    /// Length of `pu_speeds`.
    pub num_pu_speeds: usize,
    /// Optional, `num_pus` entries: each PU's background load, time already
    /// committed that no policy can move. Absent: all 0.
    pub pu_background: *const f64,
    /// Length of `pu_background`.
    pub num_pu_background: usize,
    /// Optional, `num_pus` entries: 0 for a PU that may receive no work.
    /// Absent: all available.
    pub pu_available: *const u8,
    /// Length of `pu_available`.
    pub num_pu_available: usize,
}

/// The array `(ptr, len)`, `None` when absent (NULL and 0); `expected` is
/// the length it must have when present.
///
/// # Safety
///
/// `ptr` is NULL or valid for `len` reads of `T`.
pub(crate) unsafe fn array<'a, T>(
    ptr: *const T,
    len: usize,
    expected: usize,
    what: &str,
    counted: &str,
) -> Result<Option<&'a [T]>, Failure> {
    if ptr.is_null() {
        return if len == 0 {
            Ok(None)
        } else {
            Err(Failure::null(&format!("{what} (length {len})")))
        };
    }
    if len != expected {
        return Err(Failure::new(
            keel_status::KEEL_ERR_LENGTH_MISMATCH,
            format!("{what} has {len} entries for {expected} {counted}"),
        ));
    }
    if len
        .checked_mul(size_of::<T>())
        .is_none_or(|b| b > isize::MAX as usize)
    {
        return Err(Failure::new(
            keel_status::KEEL_ERR_INVALID_ARGUMENT,
            format!("{what}: {len} entries are more than memory can hold"),
        ));
    }
    if !ptr.is_aligned() {
        return Err(Failure::new(
            keel_status::KEEL_ERR_INVALID_ARGUMENT,
            format!("{what} is not aligned for its element type"),
        ));
    }
    // SAFETY: non-NULL, aligned, and the caller's contract gives `len` reads.
    Ok(Some(unsafe { std::slice::from_raw_parts(ptr, len) }))
}

/// The problem `input` describes, copied, with every length checked.
///
/// # Safety
///
/// Each pointer of `input` is NULL or valid for its length's reads.
pub(crate) unsafe fn problem(input: &keel_map_input) -> Result<MappingProblem, Failure> {
    let (n, p) = (input.num_tasks, input.num_pus);
    if p > KEEL_MAX_PUS {
        return Err(Failure::new(
            keel_status::KEEL_ERR_INVALID_ARGUMENT,
            format!("num_pus = {p} is more than KEEL_MAX_PUS = {KEEL_MAX_PUS}"),
        ));
    }
    let i = input;
    // SAFETY: the caller's contract: each array valid for its length.
    let (loads, current, migratable, speeds, background, available) = unsafe {
        (
            array(i.task_loads, n, n, "task_loads", "tasks")?,
            array(i.current_pu, i.num_current_pu, n, "current_pu", "tasks")?,
            array(i.migratable, i.num_migratable, n, "migratable", "tasks")?,
            array(i.pu_speeds, i.num_pu_speeds, p, "pu_speeds", "PUs")?,
            array(
                i.pu_background,
                i.num_pu_background,
                p,
                "pu_background",
                "PUs",
            )?,
            array(i.pu_available, i.num_pu_available, p, "pu_available", "PUs")?,
        )
    };
    let mut problem = MappingProblem::new(loads.unwrap_or_default().to_vec(), p, Model::Dynamic);
    if let Some(background) = background {
        problem.pu_loads = background.to_vec();
    }
    problem.pu_speeds = speeds.map(<[f64]>::to_vec);
    problem.pu_available = available.map(|a| a.iter().map(|&f| f != 0).collect());
    problem.migratable = migratable.map(|m| m.iter().map(|&f| f != 0).collect());
    problem.current = current.map(|c| {
        c.iter()
            .map(|&pu| usize::try_from(pu).unwrap_or(NO_PU))
            .collect()
    });
    Ok(problem)
}

/// Builds the mapping policy named by `spec` (`"greedy"`,
/// `"hier:nodes=4,outer=(greedy),inner=refine"`; `keel policies` lists
/// them). Returns NULL on failure, with the reason in `*status` (when
/// `status` is not NULL) and in `keel_last_error_message()`.
///
/// # Safety
///
/// `spec` is NULL or a NUL-terminated string; `status` is NULL or valid for
/// a write.
#[no_mangle]
pub unsafe extern "C" fn keel_mapper_new(
    spec: *const c_char,
    status: *mut keel_status,
) -> *mut keel_mapper {
    let mut made = std::ptr::null_mut();
    let outcome = guard(|| {
        // SAFETY: the caller's contract on `spec`.
        let spec = unsafe { text(spec, "spec") }?;
        let parsed = Spec::parse(spec).map_err(keel_policy::PolicyError::from)?;
        made = Box::into_raw(Box::new(keel_mapper::build(parsed)?));
        Ok(())
    });
    // SAFETY: the caller's contract on `status`.
    unsafe { report(status, outcome) };
    made
}

/// Sets one parameter of the mapper's policy, as `key=value` in its spec
/// (`keel_mapper_set_param(m, "nodes", "4")`, a nested policy as
/// `"(greedy)"`), and rebuilds the policy. On failure the mapper is left as
/// it was.
///
/// # Safety
///
/// `mapper` is NULL or a live mapper used by no other thread during the
/// call; `key` and `value` are NULL or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn keel_mapper_set_param(
    mapper: *mut keel_mapper,
    key: *const c_char,
    value: *const c_char,
) -> keel_status {
    guard(|| {
        // SAFETY: the caller's contract: NULL or live and not shared now.
        let mapper = unsafe { mapper.as_mut() }.ok_or_else(|| Failure::null("mapper"))?;
        // SAFETY: the caller's contract on the strings.
        let (key, value) = unsafe { (text(key, "key")?, text(value, "value")?) };
        // One `key=value` pair, parsed by the spec grammar itself; a key or
        // value that smuggles in a second parameter parses as two.
        let pair = Spec::parse(&format!("x:{key}={value}")).map_err(|e| {
            Failure::new(
                keel_status::KEEL_ERR_INVALID_ARGUMENT,
                format!("`{key}={value}` is not one parameter: {e}"),
            )
        })?;
        let one = match pair.params.as_slice() {
            [(k, v)] if k == key.trim() => (k.clone(), v.clone()),
            _ => {
                return Err(Failure::new(
                    keel_status::KEEL_ERR_INVALID_ARGUMENT,
                    format!("`{key}={value}` is not one parameter"),
                ))
            }
        };
        let mut spec = mapper.spec.clone();
        match spec.params.iter_mut().find(|(k, _)| *k == one.0) {
            Some(slot) => slot.1 = one.1,
            None => spec.params.push(one),
        }
        *mapper = keel_mapper::build(spec)?;
        Ok(())
    })
}

/// The mapper's policy as its canonical spec (every parameter, defaults
/// included where the policy names them); owned by the mapper, valid until
/// the next `keel_mapper_set_param` or `keel_mapper_free`. NULL for a NULL
/// mapper.
///
/// # Safety
///
/// `mapper` is NULL or a live mapper.
#[no_mangle]
pub unsafe extern "C" fn keel_mapper_spec(mapper: *const keel_mapper) -> *const c_char {
    // SAFETY: the caller's contract.
    match unsafe { mapper.as_ref() } {
        Some(m) => m.canonical.as_ptr(),
        None => std::ptr::null(),
    }
}

/// Frees a mapper; NULL is ignored.
///
/// # Safety
///
/// `mapper` is NULL or a mapper from `keel_mapper_new` not freed before
/// and used by no other thread.
#[no_mangle]
pub unsafe extern "C" fn keel_mapper_free(mapper: *mut keel_mapper) {
    quietly(|| {
        if !mapper.is_null() {
            // SAFETY: made by Box::into_raw in keel_mapper_new, freed once.
            drop(unsafe { Box::from_raw(mapper) });
        }
    });
}

/// Maps the tasks of `input` on its PUs with the mapper's policy — the same
/// decision as the Rust API's `MappingPolicy::map` on the same inputs —
/// and stores a new result in `*result` (free it with `keel_result_free`).
/// On failure `*result` is set to NULL.
///
/// # Safety
///
/// `mapper` is NULL or live; `input` is NULL or valid, each of its arrays
/// NULL or valid for its length; `result` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn keel_map(
    mapper: *const keel_mapper,
    input: *const keel_map_input,
    result: *mut *mut keel_map_result,
) -> keel_status {
    if !result.is_null() {
        // SAFETY: the caller's contract: valid for a write.
        unsafe { result.write(std::ptr::null_mut()) };
    }
    guard(|| {
        if result.is_null() {
            return Err(Failure::null("result"));
        }
        // SAFETY: the caller's contract: NULL or live.
        let mapper = unsafe { mapper.as_ref() }.ok_or_else(|| Failure::null("mapper"))?;
        // SAFETY: the caller's contract: NULL or valid.
        let input = unsafe { input.as_ref() }.ok_or_else(|| Failure::null("input"))?;
        // SAFETY: the caller's contract on the arrays.
        let problem = unsafe { problem(input)? };
        let checked = problem.input()?;
        let mapping = mapper.policy.map(&problem.context())?;
        let outcome = MapOutcome::new(&problem, &checked, mapping);
        // SAFETY: checked non-NULL above; the caller's contract.
        unsafe { result.write(Box::into_raw(Box::new(outcome.into()))) };
        Ok(())
    })
}

impl Default for keel_map_input {
    /// No tasks, no PUs, every optional array absent.
    fn default() -> Self {
        keel_map_input {
            task_loads: std::ptr::null(),
            num_tasks: 0,
            num_pus: 0,
            current_pu: std::ptr::null(),
            num_current_pu: 0,
            migratable: std::ptr::null(),
            num_migratable: 0,
            pu_speeds: std::ptr::null(),
            num_pu_speeds: 0,
            pu_background: std::ptr::null(),
            num_pu_background: 0,
            pu_available: std::ptr::null(),
            num_pu_available: 0,
        }
    }
}
