//! Status codes, the thread's last error message, and the guard every
//! entry point runs its body in: no panic crosses the C boundary.
//!
//! ```
//! use keel::*;
//! use std::ffi::CStr;
//! let mut status = keel_status::KEEL_OK;
//! let mapper = unsafe { keel_mapper_new(c"no-such-policy".as_ptr(), &mut status) };
//! assert!(mapper.is_null());
//! assert_eq!(status, keel_status::KEEL_ERR_SPEC);
//! let message = unsafe { CStr::from_ptr(keel_last_error_message()) };
//! assert!(message.to_str().unwrap().contains("no-such-policy"));
//!
//! let name = |s| unsafe { CStr::from_ptr(keel_status_name(s)) }.to_str().unwrap();
//! assert_eq!(name(status as i32), "KEEL_ERR_SPEC");
//! assert_eq!(name(-7), "unknown status");
//! let version = unsafe { CStr::from_ptr(keel_version()) };
//! assert_eq!(version.to_str(), Ok(env!("CARGO_PKG_VERSION")));
//! ```

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use keel_policy::PolicyError;

/// What a libkeel call returns: `KEEL_OK`, or why it failed. The failed
/// call's details are in `keel_last_error_message()`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum keel_status {
    /// Success.
    KEEL_OK = 0,
    /// A pointer that must not be NULL was NULL (a handle, a string, an
    /// output, or an array whose length is not 0).
    KEEL_ERR_NULL_POINTER = 1,
    /// A string that is not UTF-8, a parameter key that is not one plain
    /// key, a length too large for memory, or a count out of range.
    KEEL_ERR_INVALID_ARGUMENT = 2,
    /// An optional array whose length differs from the task or PU count.
    KEEL_ERR_LENGTH_MISMATCH = 3,
    /// A policy spec or parameter that does not parse, names no policy, or
    /// that the policy refuses.
    KEEL_ERR_SPEC = 4,
    /// Mapping inputs the policies refuse: NaN, negative or infinite loads,
    /// non-positive speeds, a current PU out of range, no available PU,
    /// pinned tasks with no home, loads whose sums overflow.
    KEEL_ERR_INVALID_INPUT = 5,
    /// The policy needs an input that was not given (e.g. `refine` without
    /// the current PUs).
    KEEL_ERR_UNMET_REQUIREMENT = 6,
    /// A loop schedule that does not parse or cannot run this loop.
    KEEL_ERR_SCHEDULE = 7,
    /// The thread pool could not be built.
    KEEL_ERR_POOL = 8,
    /// A loop body returned a non-zero value; the loop stopped calling it.
    KEEL_ERR_BODY = 9,
    /// A panic inside libkeel (or a Rust loop body) was caught; the handles
    /// involved stay usable.
    KEEL_ERR_PANIC = 10,
    /// Nothing is recorded under the loop id asked for.
    KEEL_ERR_NOT_FOUND = 11,
    /// MPI failed, is not initialised, or a rank died (`keel_mpi_plan`).
    KEEL_ERR_MPI = 12,
}

/// A failed call: its status and what to say about it.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) status: keel_status,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn new(status: keel_status, message: impl Into<String>) -> Self {
        Failure {
            status,
            message: message.into(),
        }
    }

    pub(crate) fn null(what: &str) -> Self {
        Failure::new(
            keel_status::KEEL_ERR_NULL_POINTER,
            format!("{what} is NULL"),
        )
    }
}

impl From<PolicyError> for Failure {
    fn from(e: PolicyError) -> Self {
        let status = match &e {
            PolicyError::Spec(_)
            | PolicyError::UnknownPolicy { .. }
            | PolicyError::UnknownParameter { .. }
            | PolicyError::InvalidParameter { .. }
            | PolicyError::HierNodes { .. } => keel_status::KEEL_ERR_SPEC,
            PolicyError::UnmetRequirement { .. } => keel_status::KEEL_ERR_UNMET_REQUIREMENT,
            _ => keel_status::KEEL_ERR_INVALID_INPUT,
        };
        Failure::new(status, e.to_string())
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Keeps `message` as this thread's last error (a NUL inside is written
/// `\0`, so the C string is the whole message).
fn set_last_error(message: &str) {
    let text = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    // A thread past its thread-locals' destruction keeps no message.
    let _ = LAST_ERROR.try_with(|e| *e.borrow_mut() = text);
}

/// Runs an entry point's body: its failure, or a panic inside it, becomes
/// the returned status and this thread's last error message.
pub(crate) fn guard(body: impl FnOnce() -> Result<(), Failure>) -> keel_status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => keel_status::KEEL_OK,
        Ok(Err(failure)) => {
            set_last_error(&failure.message);
            failure.status
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic with no message".to_string());
            set_last_error(&format!("panic caught at the C boundary: {what}"));
            keel_status::KEEL_ERR_PANIC
        }
    }
}

/// Runs a function that returns nothing (the frees): a panic inside, say
/// from a destructor, is caught and kept as the thread's last error.
pub(crate) fn quietly(body: impl FnOnce()) {
    let _ = guard(|| {
        body();
        Ok(())
    });
}

/// Writes `status` where `out` points, when it is not NULL.
///
/// # Safety
///
/// `out` is NULL or valid for one write.
pub(crate) unsafe fn report(out: *mut keel_status, status: keel_status) {
    if !out.is_null() {
        // SAFETY: the caller's contract: NULL or valid for a write.
        unsafe { out.write(status) };
    }
}

/// The UTF-8 text of the C string `ptr` (`what` names it in errors).
///
/// # Safety
///
/// `ptr` is NULL or points to a NUL-terminated string that outlives `'a`.
pub(crate) unsafe fn text<'a>(ptr: *const c_char, what: &str) -> Result<&'a str, Failure> {
    if ptr.is_null() {
        return Err(Failure::null(what));
    }
    // SAFETY: the caller's contract: a NUL-terminated string.
    let bytes = unsafe { CStr::from_ptr(ptr) };
    bytes.to_str().map_err(|e| {
        Failure::new(
            keel_status::KEEL_ERR_INVALID_ARGUMENT,
            format!("{what} is not UTF-8 (byte {})", e.valid_up_to()),
        )
    })
}

/// The message of the last call that failed on the calling thread, `""`
/// when none has. Never NULL. The text stays valid until the next failing
/// libkeel call on this thread; calls that succeed leave it as it is.
#[no_mangle]
pub extern "C" fn keel_last_error_message() -> *const c_char {
    LAST_ERROR
        .try_with(|e| e.borrow().as_ptr())
        .unwrap_or(c"".as_ptr())
}

/// The name of a status code as a static string (`"KEEL_ERR_SPEC"`);
/// `"unknown status"` for a number that is no `keel_status`. It takes an
/// `int` so that any number a caller passes is defined behaviour.
#[no_mangle]
pub extern "C" fn keel_status_name(status: c_int) -> *const c_char {
    let name: &'static CStr = match status {
        0 => c"KEEL_OK",
        1 => c"KEEL_ERR_NULL_POINTER",
        2 => c"KEEL_ERR_INVALID_ARGUMENT",
        3 => c"KEEL_ERR_LENGTH_MISMATCH",
        4 => c"KEEL_ERR_SPEC",
        5 => c"KEEL_ERR_INVALID_INPUT",
        6 => c"KEEL_ERR_UNMET_REQUIREMENT",
        7 => c"KEEL_ERR_SCHEDULE",
        8 => c"KEEL_ERR_POOL",
        9 => c"KEEL_ERR_BODY",
        10 => c"KEEL_ERR_PANIC",
        11 => c"KEEL_ERR_NOT_FOUND",
        12 => c"KEEL_ERR_MPI",
        _ => c"unknown status",
    };
    name.as_ptr()
}

/// The library's version, `"0.1.0"`, as a static string.
#[no_mangle]
pub extern "C" fn keel_version() -> *const c_char {
    const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    VERSION.as_ptr().cast()
}
