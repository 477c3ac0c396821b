//! `libkeel_omp.so`: preloaded into a program compiled with GCC's or
//! gfortran's `-fopenmp` (`LD_PRELOAD=libkeel_omp.so ./app`), it hands the
//! iteration dispatch of the program's `schedule(runtime)` loops — and,
//! with `KEEL_OMP_TAKE=dynamic,guided`, of its `dynamic` and `guided`
//! loops — to Keel's schedules (`KEEL_SCHEDULE`: `auto`, any portfolio
//! schedule, ...). libgomp keeps the threads, barriers, tasks and every
//! other construct; a loop Keel does not take runs exactly as without
//! this library. Programs built by clang or icx (LLVM's libomp) are
//! served alike through libomp's `__kmpc_dispatch_*` entry points, with
//! team boundaries from OMPT (`ompt_start_tool`). What is taken, what is
//! forwarded and why: `docs/openmp-interposer.md`.
//!
//! The library defines libgomp's loop entry points (`GOMP_loop_*_start`,
//! `*_next`, `GOMP_loop_end*`, the combined `GOMP_parallel_loop_*`) and
//! `GOMP_parallel`; each either runs Keel's side or calls libgomp's
//! definition, found with `dlsym(RTLD_NEXT, ..)`. No Rust panic leaves
//! an entry point: one that happens is reported and the process aborted,
//! since a loop half run cannot be handed back.
//!
//! The pure parts are public for tests and tools: [`Bounds`] (libgomp's
//! iteration space), [`KmpBounds`] and [`kmp_schedule`] (libomp's) and
//! [`Settings`] (which loops Keel takes, under which schedule).
//!
//! ```
//! use keel_omp::{Bounds, Kind, Settings};
//!
//! let (settings, _) = Settings::from_vars(Some("guided"), None, None);
//! let schedule = settings.schedule_for(Kind::Runtime, false, None).unwrap();
//! assert_eq!(schedule.to_string(), "gss");
//! assert_eq!(Bounds::Long { start: 0, end: 10, incr: 3 }.iterations(), Some(4));
//! ```

// On docs.rs, items that exist only on some platforms or features say so.
#![cfg_attr(docsrs, feature(doc_cfg))]

// The README's example is compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;

// Under `--cfg loom` only the team's loop ring and its `sync` facade are
// built (`cargo test --lib loom`): Keel's loom build changes the `Arc`
// the rest hands to `Workshare`.
#[cfg(not(loom))]
#[macro_use]
mod site;
#[cfg(not(loom))]
mod abi_kmpc;
#[cfg(not(loom))]
mod abi_loop;
#[cfg(not(loom))]
mod abi_parallel;
#[cfg(not(loom))]
mod abi_ull;
#[cfg(not(loom))]
mod bounds;
#[cfg(not(loom))]
mod kmp;
#[cfg(not(loom))]
mod ompt;
#[cfg(not(loom))]
mod real;
#[cfg(not(loom))]
mod report;
mod ring;
#[cfg(not(loom))]
mod settings;
mod sync;
#[cfg(not(loom))]
mod team;

#[cfg(not(loom))]
pub use bounds::Bounds;
#[cfg(not(loom))]
pub use kmp::{kmp_schedule, KmpBounds};
#[cfg(not(loom))]
pub use settings::{is_monotonic, omp_schedule_to_keel, omp_set_schedule_to_keel, Kind, Settings};

#[cfg(not(loom))]
/// Reports an internal error and aborts: what a panic at an entry point
/// becomes, since neither libgomp nor the program can take it.
pub(crate) fn fatal(message: &str) -> ! {
    eprintln!("keel-omp: internal error: {message}; aborting (run without LD_PRELOAD=libkeel_omp.so to bypass Keel)");
    std::process::abort()
}

#[cfg(not(loom))]
/// Runs an entry point's Rust side; a panic aborts instead of unwinding
/// into C.
///
/// A guard whose drop aborts, not `catch_unwind`: the panic's message is
/// already on stderr (the panic hook prints it before unwinding starts),
/// and the guard costs nothing unless a panic unwinds through it, where a
/// `catch_unwind` frame costs every entry point — a `*_next` call per
/// chunk — a call through the unwinding intrinsic.
#[inline(always)]
pub(crate) fn guard<R>(f: impl FnOnce() -> R) -> R {
    struct AbortOnUnwind;
    impl Drop for AbortOnUnwind {
        fn drop(&mut self) {
            fatal("a panic (its message is above)")
        }
    }
    let armed = AbortOnUnwind;
    let value = f();
    std::mem::forget(armed);
    value
}

#[cfg(not(loom))]
/// Prints `message` on stderr the first time it is given in this process
/// (through Keel's one record of warnings given).
pub(crate) fn warn_once(message: &str) {
    keel::warn::once_as("keel-omp: warning", "keel-omp", message, || {
        message.to_string()
    });
}
