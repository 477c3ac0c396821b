//! How much CPU other processes took while the harness ran (Linux only).
//!
//! Two cores are shared with whatever else runs on the machine; a compiler
//! or a test suite running beside the benchmark halves what it measures.
//! The harness therefore snapshots the machine's busy time (`/proc/stat`:
//! user, nice, system, irq, softirq) and its own (`/proc/self/stat`: utime,
//! stime) around every round; the difference, over the round's wall time,
//! is the CPUs' worth of time the rest of the machine used. Steal time (the
//! hypervisor running someone else) is reported apart. Both files count in
//! `USER_HZ` ticks, 100 per second on every Linux this runs on.

use std::time::Instant;

/// `USER_HZ`: the tick of `/proc/stat` and `/proc/self/stat`.
pub const TICKS_PER_SECOND: f64 = 100.0;

/// Busy and steal ticks of the machine and this process's ticks, at a time.
#[derive(Clone, Copy, Debug)]
pub struct CpuSnapshot {
    at: Instant,
    busy: u64,
    steal: u64,
    own: u64,
}

/// CPUs' worth of time used between two snapshots.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Load {
    /// By other processes (0.5 = half a CPU on average).
    pub others: f64,
    /// Stolen by the hypervisor.
    pub steal: f64,
}

impl CpuSnapshot {
    /// Now, or `None` where `/proc` cannot be read.
    pub fn now() -> Option<CpuSnapshot> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let cpu: Vec<u64> = stat
            .lines()
            .next()?
            .strip_prefix("cpu ")?
            .split_whitespace()
            .map(|v| v.parse().ok())
            .collect::<Option<_>>()?;
        // user nice system idle iowait irq softirq steal ...
        let field = |i: usize| cpu.get(i).copied().unwrap_or(0);
        let busy = field(0) + field(1) + field(2) + field(5) + field(6);
        let own_stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        // Fields after the command name, which may hold spaces: state is
        // field 3, utime 14 and stime 15.
        let after = &own_stat[own_stat.rfind(')')? + 1..];
        let fields: Vec<&str> = after.split_whitespace().collect();
        let utime: u64 = fields.get(11)?.parse().ok()?;
        let stime: u64 = fields.get(12)?.parse().ok()?;
        Some(CpuSnapshot {
            at: Instant::now(),
            busy,
            steal: field(7),
            own: utime + stime,
        })
    }

    /// What the rest of the machine used since `earlier`.
    pub fn since(&self, earlier: &CpuSnapshot) -> Load {
        let seconds = self.at.duration_since(earlier.at).as_secs_f64();
        if seconds <= 0.0 {
            return Load::default();
        }
        let busy = self.busy.saturating_sub(earlier.busy) as f64;
        let own = self.own.saturating_sub(earlier.own) as f64;
        let steal = self.steal.saturating_sub(earlier.steal) as f64;
        Load {
            others: ((busy - own).max(0.0) / TICKS_PER_SECOND) / seconds,
            steal: (steal / TICKS_PER_SECOND) / seconds,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_read_and_subtract() {
        let Some(a) = CpuSnapshot::now() else {
            return; // not Linux
        };
        let t = Instant::now();
        while t.elapsed().as_millis() < 30 {
            std::hint::black_box(0);
        }
        let b = CpuSnapshot::now().unwrap();
        let load = b.since(&a);
        assert!(load.others >= 0.0 && load.steal >= 0.0);
        assert!(b.own >= a.own);
        assert_eq!(a.since(&a), Load::default());
    }
}
