//! The call site of a `*_start` (or `__kmpc_dispatch_init_*`) entry point:
//! its return address, which names the loop (libgomp passes no loop
//! identity, and clang without `-g` gives every loop one location).
//!
//! Rust has no stable way to read a function's own return address, and a
//! C shim's definitions would not be exported from a Rust `cdylib` (its
//! version script lists Rust's exports only). So each such entry point is
//! a naked function of three instructions: copy the return address (on
//! the stack on x86-64, in the link register on AArch64) into the first
//! floating-point argument register, then jump to the Rust definition,
//! which takes the address as a trailing `f64` argument. No libgomp or
//! libomp entry point wrapped so takes a floating-point argument, so that
//! register is free, and a jump leaves the caller's stack arguments where
//! the definition expects them.

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!("keel-omp reads call sites on x86-64 and AArch64 only");

/// `with_site!(NAME => IMPL(args) -> ret)`: exports `NAME` with the
/// runtime's signature, forwarding to `IMPL(args, site: f64)`.
macro_rules! with_site {
    ($name:ident => $imp:ident ($($arg:ident : $ty:ty),* $(,)?) -> $ret:ty) => {
        #[doc = concat!("The OpenMP runtime's `", stringify!($name), "`, with the caller's return address passed on.")]
        ///
        /// # Safety
        /// The runtime's (libgomp's or libomp's) contract for this entry point.
        #[unsafe(naked)]
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            #[cfg(target_arch = "x86_64")]
            core::arch::naked_asm!("mov rax, [rsp]", "movq xmm0, rax", "jmp {imp}", imp = sym $imp);
            #[cfg(target_arch = "aarch64")]
            core::arch::naked_asm!("fmov d0, x30", "b {imp}", imp = sym $imp);
        }
    };
}

/// The call site passed in as the trailing `f64`.
pub(crate) fn site(bits: f64) -> usize {
    bits.to_bits() as usize
}

/// The loaded object holding code address `site` (its path as the dynamic
/// loader knows it) and the address's offset in it: a name for the loop
/// that is stable across runs despite address randomisation, and what a
/// tool needs to find the symbol. `None` when no loaded object holds it.
pub(crate) fn locate(site: usize) -> Option<(String, usize)> {
    // SAFETY: an all-zero Dl_info is a valid out-parameter.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the address and fills `info`.
    let found = unsafe { libc::dladdr(site as *const libc::c_void, &mut info) } != 0;
    if !found || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr's file name is a NUL-terminated string.
    let path = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy();
    Some((
        path.into_owned(),
        site.wrapping_sub(info.dli_fbase as usize),
    ))
}
