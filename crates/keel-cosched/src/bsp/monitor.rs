//! The rank's side of the page protocol (one communication event per group
//! of back-to-back calls, the time inside calls, the CPU time spinning and
//! computing) and computation by CPU time.

use super::CPU_PUBLISH_NS;
use crate::shm::{Counters, Page, PageWaitMode, COMPUTE_EPSILON_NS};
use crate::sys;

/// The rank's side of the page protocol.
pub(super) struct Monitor {
    page: Option<Page>,
    default_mode: PageWaitMode,
    pub(super) counters: Counters,
    /// Process CPU time when the last call ended (None before any call).
    last_call_end_cpu: Option<u64>,
}

/// A call in progress.
pub(super) struct CallStart {
    wall_ns: u64,
}

impl Monitor {
    pub(super) fn new(page: Option<Page>, default_mode: PageWaitMode) -> Monitor {
        let mut m = Monitor {
            page,
            default_mode,
            counters: Counters::default(),
            last_call_end_cpu: None,
        };
        m.publish_cpu();
        m
    }

    pub(super) fn wait_mode(&self) -> PageWaitMode {
        self.page
            .as_ref()
            .map_or(self.default_mode, Page::wait_mode)
    }

    /// A blocking call starts: it is a new event only if the process
    /// computed since the previous call ended.
    pub(super) fn begin(&mut self) -> CallStart {
        let cpu = sys::process_cpu_ns();
        let computed = match self.last_call_end_cpu {
            None => true,
            Some(end) => cpu.saturating_sub(end) > COMPUTE_EPSILON_NS,
        };
        if computed {
            self.counters.comm_count += 1;
        }
        CallStart {
            wall_ns: sys::monotonic_ns(),
        }
    }

    /// The call ended after spinning `spin_ns` of CPU time.
    pub(super) fn end(&mut self, start: CallStart, spin_ns: u64) {
        self.counters.comm_wait_ns += sys::monotonic_ns().saturating_sub(start.wall_ns);
        self.counters.spin_ns_total += spin_ns;
        let cpu = sys::process_cpu_ns();
        self.last_call_end_cpu = Some(cpu);
        self.counters.cpu_ns = cpu;
        self.publish();
    }

    pub(super) fn publish_cpu(&mut self) {
        self.counters.cpu_ns = sys::process_cpu_ns();
        self.publish();
    }

    fn publish(&mut self) {
        self.counters.updates += 1;
        if let Some(p) = &self.page {
            p.publish(&self.counters);
        }
    }
}

/// Computation by CPU time.
#[derive(Default)]
pub(super) struct Work {
    acc: u64,
}

impl Work {
    /// Iterations of the arithmetic kernel between two clock reads: a few
    /// microseconds, small next to any granularity worth testing.
    const CHUNK: u32 = 2000;

    pub(super) fn compute(&mut self, ns: u64, mon: &mut Monitor) {
        let start = sys::thread_cpu_ns();
        let mut last_publish = start;
        loop {
            for _ in 0..Self::CHUNK {
                self.acc = self
                    .acc
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
            }
            std::hint::black_box(self.acc);
            let now = sys::thread_cpu_ns();
            if now.saturating_sub(start) >= ns {
                break;
            }
            if now.saturating_sub(last_publish) >= CPU_PUBLISH_NS {
                mon.publish_cpu();
                last_publish = now;
            }
        }
    }
}
