//! The thread runtime's experiments (`keel bench …`): real loops, farms
//! and objects on this machine's cores, timed.
//!
//! | module | what |
//! |---|---|
//! | [`loops`] | every loop schedule on the loop workloads against T_serial / P |
//! | [`auto`] | Auto4OMP's evaluation: portfolio schedules, Oracle, ManualBest, the selection methods |
//! | [`farm`] | the FastFlow ARRS paper's farm experiments (a)–(e) and the per-item cost |
//! | [`objects`] | the Charm++ + OpenMP paper's tables on over-decomposed objects |
//!
//! ```
//! use keel_experiments::bench::loops::{SCHEDULES, WORKLOADS};
//! assert_eq!(SCHEDULES[0], "static");
//! assert_eq!(WORKLOADS, ["mandelbrot", "lavamd"]);
//! ```

pub mod auto;
pub mod farm;
pub mod loops;
pub mod objects;
