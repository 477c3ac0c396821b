//! [`Munge`]: MUNGE credentials through libmunge, loaded at run time.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::Path;

use super::{AuthError, Authenticator, Opened};

/// The library [`Munge`] loads: the run-time package of libmunge
/// (`libmunge2` on Debian and Ubuntu, `munge-libs` or `munge` elsewhere).
const LIBMUNGE: &CStr = c"libmunge.so.2";

// The values below are those of `munge_err_t` and `munge_opt_t` in
// <munge.h> (libmunge-dev 0.5.15); they are part of libmunge's stable ABI.
// Both are C enums with small values, hence `int` at the call boundary.
const EMUNGE_SUCCESS: c_int = 0;
const EMUNGE_SNAFU: c_int = 1;
const EMUNGE_NO_MEMORY: c_int = 5;
const EMUNGE_SOCKET: c_int = 6;
const EMUNGE_TIMEOUT: c_int = 7;
const EMUNGE_CRED_EXPIRED: c_int = 15;
const EMUNGE_CRED_REWOUND: c_int = 16;
const EMUNGE_CRED_REPLAYED: c_int = 17;
const MUNGE_OPT_SOCKET: c_int = 8;

/// `munge_ctx_t`: an opaque pointer.
type MungeCtx = *mut c_void;
// The prototypes of <munge.h>.
type EncodeFn = unsafe extern "C" fn(*mut *mut c_char, MungeCtx, *const c_void, c_int) -> c_int;
type DecodeFn = unsafe extern "C" fn(
    *const c_char,
    MungeCtx,
    *mut *mut c_void,
    *mut c_int,
    *mut libc::uid_t,
    *mut libc::gid_t,
) -> c_int;
type StrerrorFn = unsafe extern "C" fn(c_int) -> *const c_char;
type CtxCreateFn = unsafe extern "C" fn() -> MungeCtx;
type CtxDestroyFn = unsafe extern "C" fn(MungeCtx);
type CtxStrerrorFn = unsafe extern "C" fn(MungeCtx) -> *const c_char;
type CtxSetFn = unsafe extern "C" fn(MungeCtx, c_int, ...) -> c_int;

/// The libmunge functions Keel calls.
#[derive(Clone, Copy)]
struct Api {
    encode: EncodeFn,
    decode: DecodeFn,
    strerror: StrerrorFn,
    ctx_create: CtxCreateFn,
    ctx_destroy: CtxDestroyFn,
    ctx_strerror: CtxStrerrorFn,
    ctx_set: CtxSetFn,
}

/// The text of `dlerror()`, if any.
fn dlerror_text() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string valid until
    // the next dl* call on this thread; it is copied at once.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown error".to_string()
    } else {
        // SAFETY: non-NULL, so a NUL-terminated string (see above).
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

/// Loads `library` and looks up the functions of [`Api`].
///
/// The library is never closed: the function pointers must stay valid for
/// as long as any [`Munge`] lives, dlopen counts references so a second
/// load costs nothing, and unloading a library that may have started
/// threads or registered handlers is riskier than keeping it.
fn load(library: &CStr) -> Result<Api, AuthError> {
    // SAFETY: `library` is NUL-terminated; loading libmunge runs only its
    // own initialisers.
    let handle = unsafe { libc::dlopen(library.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        return Err(AuthError::Unavailable(format!(
            "cannot load {}: {} (install libmunge: the package libmunge2 on Debian \
             and Ubuntu, munge-libs or munge elsewhere; or use a shared key)",
            library.to_string_lossy(),
            dlerror_text()
        )));
    }
    let sym = |name: &CStr| -> Result<*mut c_void, AuthError> {
        // SAFETY: `handle` is a live handle from dlopen (never closed);
        // `name` is NUL-terminated.
        let p = unsafe { libc::dlsym(handle, name.as_ptr()) };
        if p.is_null() {
            Err(AuthError::Unavailable(format!(
                "{} has no {}: {}",
                library.to_string_lossy(),
                name.to_string_lossy(),
                dlerror_text()
            )))
        } else {
            Ok(p)
        }
    };
    // SAFETY (each transmute below): the symbol is the libmunge function
    // of that name, whose C prototype in <munge.h> is the function pointer
    // type it becomes; a data pointer from dlsym and a function pointer
    // have the same size and representation on every platform with dlsym.
    Ok(Api {
        // SAFETY: see above.
        encode: unsafe { std::mem::transmute::<*mut c_void, EncodeFn>(sym(c"munge_encode")?) },
        // SAFETY: see above.
        decode: unsafe { std::mem::transmute::<*mut c_void, DecodeFn>(sym(c"munge_decode")?) },
        // SAFETY: see above.
        strerror: unsafe {
            std::mem::transmute::<*mut c_void, StrerrorFn>(sym(c"munge_strerror")?)
        },
        // SAFETY: see above.
        ctx_create: unsafe {
            std::mem::transmute::<*mut c_void, CtxCreateFn>(sym(c"munge_ctx_create")?)
        },
        // SAFETY: see above.
        ctx_destroy: unsafe {
            std::mem::transmute::<*mut c_void, CtxDestroyFn>(sym(c"munge_ctx_destroy")?)
        },
        // SAFETY: see above.
        ctx_strerror: unsafe {
            std::mem::transmute::<*mut c_void, CtxStrerrorFn>(sym(c"munge_ctx_strerror")?)
        },
        // SAFETY: see above.
        ctx_set: unsafe { std::mem::transmute::<*mut c_void, CtxSetFn>(sym(c"munge_ctx_set")?) },
    })
}

/// A munge context for one call, destroyed when dropped.
///
/// A fresh context per call, rather than one kept in the [`Munge`], is
/// what makes `Munge` shareable across threads without a lock: libmunge
/// forbids sharing a context between threads, and a decode rewrites its
/// context, so one kept context would serialise every seal and open.
/// Creating one is a small allocation next to the round trip to munged.
struct Ctx<'a> {
    api: &'a Api,
    ptr: MungeCtx,
}

impl Drop for Ctx<'_> {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from munge_ctx_create and is destroyed once.
        unsafe { (self.api.ctx_destroy)(self.ptr) }
    }
}

/// MUNGE credentials through libmunge (loaded at run time).
///
/// [`seal`](Authenticator::seal) returns the credential, base64 text with
/// the payload inside; [`open`](Authenticator::open) asks munged to
/// decode it and returns the sender's uid and gid. munged refuses a
/// credential it has decoded before ([`AuthError::Replayed`]) and one past
/// its time-to-live ([`AuthError::Expired`]; 300 s by default), so the
/// hosts' clocks must agree to within that.
///
/// ```no_run
/// use keel_cosched::cluster::auth::{Authenticator, Munge};
///
/// let munge = Munge::new(None)?; // munged's default socket
/// let credential = munge.seal(b"hello")?;
/// let opened = munge.open(&credential)?;
/// assert_eq!(opened.payload, b"hello");
/// assert!(opened.uid.is_some());
/// # Ok::<(), keel_cosched::cluster::auth::AuthError>(())
/// ```
pub struct Munge {
    api: Api,
    /// munged's socket, where it is not libmunge's default.
    socket: Option<CString>,
}

impl std::fmt::Debug for Munge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Munge")
            .field("socket", &self.socket)
            .finish_non_exhaustive()
    }
}

impl Munge {
    /// Connects to munged at `socket` (default: libmunge's default).
    ///
    /// Loads libmunge and encodes one empty credential, so that a missing
    /// library or a munged that is down is reported here, when a daemon
    /// starts, rather than at its first peer. Both are
    /// [`AuthError::Unavailable`], naming what to install or start.
    pub fn new(socket: Option<&Path>) -> Result<Munge, AuthError> {
        Munge::with_library(LIBMUNGE, socket)
    }

    fn with_library(library: &CStr, socket: Option<&Path>) -> Result<Munge, AuthError> {
        let api = load(library)?;
        let socket = socket
            .map(|p| {
                crate::sys::cpath(p)
                    .map_err(|e| AuthError::Unavailable(format!("munge socket: {e}")))
            })
            .transpose()?;
        let munge = Munge { api, socket };
        munge.seal(&[]).map_err(|e| match e {
            AuthError::Unavailable(_) => e,
            other => AuthError::Unavailable(format!(
                "munged{} does not encode a credential: {other}",
                munge.socket_shown()
            )),
        })?;
        Ok(munge)
    }

    /// ` at SOCKET` where a socket was given, for messages.
    fn socket_shown(&self) -> String {
        self.socket
            .as_ref()
            .map(|s| format!(" at {}", s.to_string_lossy()))
            .unwrap_or_default()
    }

    /// A context naming the socket, where one was given.
    fn ctx(&self) -> Result<Option<Ctx<'_>>, AuthError> {
        let Some(socket) = &self.socket else {
            return Ok(None);
        };
        // SAFETY: munge_ctx_create takes nothing and returns NULL or a new
        // context, which `Ctx` destroys.
        let ptr = unsafe { (self.api.ctx_create)() };
        if ptr.is_null() {
            return Err(AuthError::Unavailable(
                "munge_ctx_create failed (out of memory)".into(),
            ));
        }
        let ctx = Ctx {
            api: &self.api,
            ptr,
        };
        // SAFETY: `ptr` is a live context; MUNGE_OPT_SOCKET takes one
        // `const char *` argument, and `socket` is NUL-terminated and
        // outlives the context (libmunge copies it in any case).
        let rc = unsafe { (self.api.ctx_set)(ptr, MUNGE_OPT_SOCKET, socket.as_ptr()) };
        if rc != EMUNGE_SUCCESS {
            return Err(self.error(rc, Some(&ctx), "setting the socket"));
        }
        Ok(Some(ctx))
    }

    /// The [`AuthError`] for libmunge's error `code` while doing `what`.
    fn error(&self, code: c_int, ctx: Option<&Ctx<'_>>, what: &str) -> AuthError {
        match code {
            EMUNGE_CRED_REPLAYED => return AuthError::Replayed,
            EMUNGE_CRED_EXPIRED | EMUNGE_CRED_REWOUND => return AuthError::Expired,
            _ => {}
        }
        let mut text = ctx
            .map(|c| {
                // SAFETY: `c.ptr` is a live context; the result is NULL or
                // a string owned by it, copied at once.
                unsafe { (self.api.ctx_strerror)(c.ptr) }
            })
            .unwrap_or(std::ptr::null());
        if text.is_null() {
            // SAFETY: munge_strerror returns a static string for any code.
            text = unsafe { (self.api.strerror)(code) };
        }
        let text = if text.is_null() {
            format!("munge error {code}")
        } else {
            // SAFETY: non-NULL, so a NUL-terminated string (see above).
            unsafe { CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned()
        };
        match code {
            EMUNGE_SOCKET | EMUNGE_TIMEOUT | EMUNGE_SNAFU | EMUNGE_NO_MEMORY => {
                AuthError::Unavailable(format!(
                    "munge {what}: {text} (is munged running{}?)",
                    self.socket_shown()
                ))
            }
            _ => AuthError::Invalid(format!("munge {what}: {text}")),
        }
    }
}

impl Authenticator for Munge {
    fn name(&self) -> &'static str {
        "munge"
    }

    fn seal(&self, payload: &[u8]) -> Result<Vec<u8>, AuthError> {
        let len = c_int::try_from(payload.len()).map_err(|_| {
            AuthError::Invalid(format!("{} bytes are too many for MUNGE", payload.len()))
        })?;
        let ctx = self.ctx()?;
        let ctx_ptr = ctx.as_ref().map_or(std::ptr::null_mut(), |c| c.ptr);
        let buf: *const c_void = if payload.is_empty() {
            std::ptr::null()
        } else {
            payload.as_ptr().cast()
        };
        let mut cred: *mut c_char = std::ptr::null_mut();
        // SAFETY: `cred` is writable; `buf` is NULL with length 0 or valid
        // for `len` bytes; `ctx_ptr` is NULL (the default context) or a live
        // context used by this thread alone.
        let rc = unsafe { (self.api.encode)(&mut cred, ctx_ptr, buf, len) };
        let sealed = if cred.is_null() {
            None
        } else {
            // SAFETY: a non-NULL `cred` is a NUL-terminated string libmunge
            // allocated with malloc for the caller: copied, then freed once.
            let copy = unsafe { CStr::from_ptr(cred) }.to_bytes().to_vec();
            // SAFETY: see above.
            unsafe { libc::free(cred.cast()) };
            Some(copy)
        };
        if rc != EMUNGE_SUCCESS {
            return Err(self.error(rc, ctx.as_ref(), "encode"));
        }
        sealed.ok_or_else(|| AuthError::Invalid("munge_encode returned no credential".into()))
    }

    fn open(&self, sealed: &[u8]) -> Result<Opened, AuthError> {
        let cred = CString::new(sealed)
            .map_err(|_| AuthError::Invalid("a MUNGE credential holds no NUL byte".into()))?;
        let ctx = self.ctx()?;
        let ctx_ptr = ctx.as_ref().map_or(std::ptr::null_mut(), |c| c.ptr);
        let mut buf: *mut c_void = std::ptr::null_mut();
        let mut len: c_int = 0;
        let mut uid: libc::uid_t = 0;
        let mut gid: libc::gid_t = 0;
        // SAFETY: `cred` is NUL-terminated; every out-pointer is writable;
        // `ctx_ptr` is NULL or a live context used by this thread alone.
        let rc = unsafe {
            (self.api.decode)(
                cred.as_ptr(),
                ctx_ptr,
                &mut buf,
                &mut len,
                &mut uid,
                &mut gid,
            )
        };
        // libmunge allocates the payload even for some errors (expired,
        // rewound, replayed): take and free it before looking at `rc`.
        let payload = if buf.is_null() {
            Vec::new()
        } else {
            let n = usize::try_from(len).unwrap_or(0);
            // SAFETY: a non-NULL `buf` holds `len` bytes (plus a NUL)
            // libmunge allocated with malloc for the caller: copied, then
            // freed once.
            let copy = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), n) }.to_vec();
            // SAFETY: see above.
            unsafe { libc::free(buf) };
            copy
        };
        if rc != EMUNGE_SUCCESS {
            return Err(self.error(rc, ctx.as_ref(), "decode"));
        }
        Ok(Opened {
            payload,
            uid: Some(uid),
            gid: Some(gid),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The other tests of this module are in tests/cluster_wire.rs; this one
    // needs the private loader, to stand for a host without libmunge.
    #[test]
    fn a_missing_libmunge_is_unavailable_and_names_the_package() {
        let e = Munge::with_library(c"libkeel-no-such-munge.so.2", None).unwrap_err();
        let AuthError::Unavailable(text) = e else {
            panic!("expected Unavailable, got {e:?}");
        };
        assert!(text.contains("libkeel-no-such-munge.so.2"), "{text}");
        assert!(text.contains("libmunge2"), "{text}");
    }
}
