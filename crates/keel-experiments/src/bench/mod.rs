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
pub mod omp;

use serde::Serialize;

pub use crate::sim::Progress;

/// A figure this much below its own lower bound (a time ÷ its ideal under
/// 0.97) cannot be right by construction: timer resolution or a noisy
/// reference, not a faster-than-ideal run. Reports flag such figures.
pub const IDEAL_TOLERANCE: f64 = 0.97;

/// Background load above this many CPUs' worth (other processes' share of
/// the machine while a bench ran) makes its times suspect; the `keel`
/// command warns on stderr.
pub const HIGH_LOAD: f64 = 0.25;

/// Whether a ratio to its ideal is impossibly low (see [`IDEAL_TOLERANCE`]).
pub fn below_ideal(ratio: f64) -> bool {
    ratio < IDEAL_TOLERANCE
}

/// The machine's background load over a bench: CPUs' worth of time other
/// processes used (`keel_bench::load`), and the hypervisor's steal.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct BackgroundLoad {
    /// Other processes, in CPUs (0.5 = half a core on average).
    pub others_cpus: f64,
    /// Stolen by the hypervisor, in CPUs.
    pub steal_cpus: f64,
}

impl BackgroundLoad {
    /// Whether it exceeds [`HIGH_LOAD`].
    pub fn is_high(&self) -> bool {
        self.others_cpus + self.steal_cpus > HIGH_LOAD
    }
}

/// The shortest run whose background load is reported: `/proc/stat`
/// counts in 10 ms ticks, so one tick over 0.5 s is 0.02 CPU, while over a
/// few milliseconds it would read as whole CPUs.
pub const MIN_LOAD_WINDOW_S: f64 = 0.5;

/// Measures [`BackgroundLoad`] from its start to [`LoadMeter::finish`].
#[derive(Clone, Copy, Debug)]
pub struct LoadMeter {
    start: Option<keel_bench::load::CpuSnapshot>,
    at: std::time::Instant,
}

impl LoadMeter {
    /// Starts measuring (nothing is measured where `/proc` is unreadable).
    pub fn start() -> LoadMeter {
        LoadMeter {
            start: keel_bench::load::CpuSnapshot::now(),
            at: std::time::Instant::now(),
        }
    }

    /// The load since the start, or `None` where it cannot be read or the
    /// run was shorter than [`MIN_LOAD_WINDOW_S`].
    pub fn finish(&self) -> Option<BackgroundLoad> {
        let start = self.start?;
        if self.at.elapsed().as_secs_f64() < MIN_LOAD_WINDOW_S {
            return None;
        }
        let load = keel_bench::load::CpuSnapshot::now()?.since(&start);
        Some(BackgroundLoad {
            others_cpus: load.others,
            steal_cpus: load.steal,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_below_tolerance_are_flagged() {
        assert!(below_ideal(0.93));
        assert!(!below_ideal(0.98));
        assert!(!below_ideal(1.4));
        let quiet = BackgroundLoad {
            others_cpus: 0.1,
            steal_cpus: 0.0,
        };
        assert!(!quiet.is_high());
        assert!(BackgroundLoad {
            others_cpus: 0.2,
            steal_cpus: 0.1
        }
        .is_high());
        // Too short a window to say anything.
        assert_eq!(LoadMeter::start().finish(), None);
    }
}
