//! `keel-bench`: Keel's loops head to head with libgomp and rayon, measured
//! the way EPCC's OpenMP micro-benchmarks measure scheduling
//! (`schedbench`; Bull, EWOMP 1999), in one process.
//!
//! What it measures (`keel-bench-loops` prints the tables, `--json` the
//! [`Report`]):
//! - **(a) overhead per chunk** of `static`, `dynamic,1`, `dynamic,8` and
//!   `guided` at 0.1, 1 and 10 µs of work per iteration. A loop of
//!   `N = iters_per_thread × P` iterations of EPCC's delay takes `T_loop`;
//!   one thread's share run sequentially takes `T_ref`; the overhead is
//!   `T_loop − T_ref` (fork, join, dispatch and imbalance), divided by the
//!   chunks the loop actually ran. libgomp runs `c/schedbench.c`'s
//!   `parallel for schedule(runtime)`; rayon has no schedules, so
//!   [`Sched`] documents the splitter bounds used for each;
//! - **(b) empty parallel loop latency** (fork + join), Keel, libgomp and
//!   rayon (called inside its pool, and from outside it);
//! - **(c) Keel's schedules** — adaptive ones included — per-chunk overhead
//!   against `ss` on the same loop;
//! - **(d) the cost of one `Instant::now()`**, and of the pair (`now()`,
//!   `elapsed()`) that a timed chunk reads;
//! - **(e) the loop runtime's cost goals**, each figure computed per round
//!   from that round's samples and summarised over rounds: the empty
//!   `static` loop against libgomp's `parallel for` (≤ 0.5×) and against
//!   Keel's own empty region (≤ 150 ns more), `dynamic,1` and `dynamic,8`
//!   per-chunk overhead against libgomp's at the shortest delay (≤ 1.1×),
//!   and each adaptive schedule's marginal cost per chunk against `ss`'s
//!   plus the clock pairs it reads per chunk (≤ 1.1×).
//!
//! Both runtimes wait actively (Keel `WaitPolicy::Active`, libgomp
//! `OMP_WAIT_POLICY=active`), on 2 threads; rounds interleave the runtimes
//! and only the one being measured has live workers (see [`harness`]).
//! Numbers are medians and ranges over rounds; the ratios of (a)–(c) are
//! of medians, those of (e) medians of per-round ratios.
//! Nothing here asserts a timing: speed goals are read off the tables.

// On docs.rs, items that exist only on some platforms or features say so.
#![cfg_attr(docsrs, feature(doc_cfg))]

// The README's example is compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;

pub mod delay;
pub mod gomp;
pub mod harness;
pub mod load;
pub mod rayon_side;
pub mod report;
pub mod sched;
pub mod stats;

pub use harness::{run, BenchError, Config, Runtime};
pub use report::Report;
pub use sched::Sched;
