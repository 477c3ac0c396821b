//! The cluster model's constants: the network, the nodes' local OS
//! scheduler and the costs a process pays, each named, documented and
//! overridable. Values come from the paper's setup (§3.1: Quadrics QsNet,
//! Linux 2.4 at HZ = 2048 on 1 GHz Pentium-III nodes) or, where it gives
//! none, from the era's hardware, and were fixed before any scenario ran.
//!
//! A model starts from these defaults; each part can be replaced:
//!
//! ```
//! use keel_sim::cluster::params::{CommClock, TIME_SLICE};
//! use keel_sim::cluster::CoschedModel;
//! let model = CoschedModel::new(2, 4).unwrap();
//! assert_eq!(model.cluster.time_slice, TIME_SLICE);
//! assert_eq!(model.comm_clock, CommClock::Scheduled);
//! assert_eq!(CommClock::parse("wall").unwrap().name(), "wall");
//! ```

use serde::Serialize;

use super::Cluster;
use crate::error::SimError;

/// One-way latency of a message, and of a barrier's release after its last
/// arrival: "typical communication operations with the Quadrics
/// interconnect complete in far less than [100 µs] (≈ 10 − 50 µs)" (§3).
pub const NET_LATENCY: f64 = 20e-6;

/// Seconds a PE loses switching from one process to another (suspend,
/// resume, cache and TLB refill). A bare Linux 2.4 switch costs a few µs
/// on the paper's nodes; the refill of a switch between jobs roughly
/// doubles it.
pub const CONTEXT_SWITCH: f64 = 10e-6;

/// The gang clock of the paper's experiments: Table 2's T_slice, 25 ms.
pub const TIME_SLICE: f64 = 0.025;

/// The local OS scheduler's time slice: what a process's counter gets at
/// each recalculation (`counter / 2 + quantum`), hence the round-robin
/// quantum between CPU-bound processes. The paper's Linux 2.4 kernel gives
/// `NICE_TO_TICKS(0) = (20 << 2) + 1 = 81` ticks at HZ = 2048 (its
/// scheduler aims at "around 50 ms" whatever HZ is), i.e. 39.6 ms.
pub const OS_QUANTUM: f64 = 81.0 / 2048.0;

/// Relative half-width of each time slice's uniform variation. Timer
/// interrupts, daemons and tick alignment make real slices vary; a
/// perfectly periodic round-robin would lock the PEs' relative phases for
/// the whole run, which no real cluster does.
pub const OS_QUANTUM_JITTER: f64 = 0.1;

/// The OS tick: the paper's kernel runs at HZ = 2048, which "makes the
/// Linux scheduler re-evaluate process scheduling every ≈ 500 µs" (§3.1). A
/// process woken by a message preempts a running one with a smaller counter
/// at the next tick of its PE (each PE's ticks have their own random
/// phase).
pub const OS_TICK: f64 = 1.0 / 2048.0;

/// The tick of the kernel `keel cosched run` ran its scaled scenarios on
/// (Linux 6.18, `CONFIG_HZ=250`).
pub const HOST_TICK: f64 = 1.0 / 250.0;

/// Extra seconds a process woken from a blocking wait pays when it is next
/// dispatched (the NIC interrupt and the wake-up path), on top of the
/// context switch.
pub const WAKEUP_COST: f64 = 10e-6;

/// CPU seconds per blocking communication that the monitoring layer of a
/// classifying policy adds (§2.6: "four low-latency functions" timing each
/// synchronous call, about 0.5 µs each on the paper's nodes).
pub const MONITOR_COST: f64 = 2e-6;

/// A blocking communication that follows the previous one with less than
/// this much computation in between counts as the same event (§2.6:
/// "multiple communication events with no intervening computation are
/// considered to be a single communication event"): the threshold the
/// real monitoring page uses (`COMPUTE_EPSILON_NS`).
pub const MERGE_EPSILON: f64 = 50e-6;

/// What T_comm, Table 1's time in blocking communication, counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CommClock {
    /// Wait time while the node manager lets the process run (running,
    /// runnable or blocked), not while it keeps it suspended for another
    /// job's slot: §2.3, "measurements are taken whenever a process is
    /// scheduled to run … so the measurements indeed reflect their behavior
    /// when coscheduled".
    #[default]
    Scheduled,
    /// All wall time from entering the blocking call to leaving it, a
    /// suspension in between included (what a wrapper timing the call with
    /// a wall clock measures, as the real monitoring page does).
    Wall,
}

impl CommClock {
    /// Parses `scheduled` or `wall`.
    pub fn parse(text: &str) -> Result<Self, SimError> {
        match text.trim() {
            "scheduled" => Ok(CommClock::Scheduled),
            "wall" => Ok(CommClock::Wall),
            other => Err(SimError::invalid(
                "T_comm clock",
                other,
                "one of scheduled, wall",
            )),
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            CommClock::Scheduled => "scheduled",
            CommClock::Wall => "wall",
        }
    }
}

/// What T_cpu, Table 1's computation time, counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CpuClock {
    /// CPU seconds spent computing (Table 1: "CPU time since last reset").
    #[default]
    Cpu,
    /// Wall seconds from leaving one blocking communication to entering
    /// the next: what a monitoring layer that only timestamps its four
    /// hooks (§2.6) measures. Time spent runnable behind another process
    /// counts; time the node manager keeps the process suspended counts
    /// as the `CommClock` says.
    Elapsed,
}

impl CpuClock {
    /// Parses `cpu` or `elapsed`.
    pub fn parse(text: &str) -> Result<Self, SimError> {
        match text.trim() {
            "cpu" => Ok(CpuClock::Cpu),
            "elapsed" => Ok(CpuClock::Elapsed),
            other => Err(SimError::invalid(
                "T_cpu clock",
                other,
                "one of cpu, elapsed",
            )),
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            CpuClock::Cpu => "cpu",
            CpuClock::Elapsed => "elapsed",
        }
    }
}

/// The network.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NetModel {
    /// One-way message latency and barrier release latency, seconds (≥ 0).
    /// The NIC moves messages whatever the CPUs do, so a message in flight
    /// overlaps any computation.
    pub latency: f64,
}

impl Default for NetModel {
    fn default() -> Self {
        NetModel {
            latency: NET_LATENCY,
        }
    }
}

/// Each node's local OS scheduler, which time-shares a PE between the
/// runnable processes a policy resumes on it (Linux 2.4's counter-based
/// scheduler; see `keel_sim::cluster::model`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct OsModel {
    /// Which kernel these constants stand for ([`OsModel::NAMES`]).
    pub kernel: &'static str,
    /// Time slice given at each recalculation, seconds (> 0).
    pub quantum: f64,
    /// Relative jitter of each time slice, in `[0, 1)`.
    pub quantum_jitter: f64,
    /// Scheduler tick, seconds (> 0): when a woken process preempts.
    pub tick: f64,
    /// Wake-up cost, seconds (≥ 0).
    pub wakeup: f64,
}

impl OsModel {
    /// The kernels a model can stand for: the paper's (the default) and the
    /// one this project's real runs used.
    pub const NAMES: [&'static str; 2] = ["linux-2.4", "host"];

    /// The paper's Linux 2.4 at HZ = 2048 (the default).
    pub fn linux_2_4() -> Self {
        OsModel::default()
    }

    /// The kernel `keel cosched run` ran on here, approximated: Linux 6.18,
    /// whose EEVDF scheduler gives a CPU-bound task a 1.5 ms base slice on
    /// 2 CPUs (0.75 ms × (1 + log₂ 2)) but notices its end at a tick (4 ms
    /// at HZ = 250), and lets a woken task preempt only once the running
    /// one's slice is spent (`RUN_TO_PARITY`). Modelled as turns of one
    /// tick and wake-up preemption at the next tick — coarser than the
    /// kernel when a wake-up finds the slice already spent. This is the
    /// model of the scaled scenarios, to be compared with the real runs;
    /// the paper's scenarios keep the paper's kernel.
    pub fn host() -> Self {
        OsModel {
            kernel: "host",
            quantum: HOST_TICK,
            tick: HOST_TICK,
            ..OsModel::default()
        }
    }

    /// The model named `name` (one of [`OsModel::NAMES`]).
    pub fn named(name: &str) -> Result<Self, SimError> {
        match name.trim() {
            "linux-2.4" => Ok(OsModel::linux_2_4()),
            "host" => Ok(OsModel::host()),
            other => Err(SimError::invalid(
                "OS model",
                other,
                "one of linux-2.4 (the paper's kernel), host (the real runs' kernel)",
            )),
        }
    }
}

impl Default for OsModel {
    fn default() -> Self {
        OsModel {
            kernel: "linux-2.4",
            quantum: OS_QUANTUM,
            quantum_jitter: OS_QUANTUM_JITTER,
            tick: OS_TICK,
            wakeup: WAKEUP_COST,
        }
    }
}

/// Everything about the simulated machine except the jobs and the policy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CoschedModel {
    /// Nodes, PEs, the default gang clock and the context-switch cost.
    pub cluster: Cluster,
    /// The network.
    pub net: NetModel,
    /// The local OS scheduler.
    pub os: OsModel,
    /// Monitoring cost per blocking communication under a classifying
    /// policy, CPU seconds (≥ 0).
    pub monitor_cost: f64,
    /// Back-to-back communication merge threshold, CPU seconds (≥ 0).
    pub merge_epsilon: f64,
    /// What T_comm counts.
    pub comm_clock: CommClock,
    /// What T_cpu counts.
    pub cpu_clock: CpuClock,
    /// Relative speed of each PE (empty: all 1), for heterogeneous nodes.
    pub pe_speeds: Vec<f64>,
    /// Seed of the OS schedulers' tick phases and quantum jitter.
    pub seed: u64,
    /// Record up to this many run segments (which process ran where and
    /// when); 0 records none.
    pub trace_limit: usize,
}

impl CoschedModel {
    /// The paper's machine shape with every default above.
    pub fn new(nodes: usize, pes_per_node: usize) -> Result<Self, SimError> {
        let model = CoschedModel {
            cluster: Cluster::new(nodes, pes_per_node, TIME_SLICE, CONTEXT_SWITCH)?,
            net: NetModel::default(),
            os: OsModel::default(),
            monitor_cost: MONITOR_COST,
            merge_epsilon: MERGE_EPSILON,
            comm_clock: CommClock::default(),
            cpu_clock: CpuClock::default(),
            pe_speeds: Vec::new(),
            seed: 0,
            trace_limit: 0,
        };
        model.validate()?;
        Ok(model)
    }

    /// The same constants on a machine of `nodes` × `pes_per_node` (PE
    /// speeds are dropped: they belong to the old machine).
    pub fn reshaped(&self, nodes: usize, pes_per_node: usize) -> Result<Self, SimError> {
        let model = CoschedModel {
            cluster: Cluster::new(
                nodes,
                pes_per_node,
                self.cluster.time_slice,
                self.cluster.context_switch,
            )?,
            pe_speeds: Vec::new(),
            ..self.clone()
        };
        model.validate()?;
        Ok(model)
    }

    /// With a seed.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<(), SimError> {
        self.cluster.validate()?;
        let non_negative = |what: &'static str, v: f64| {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(SimError::invalid(what, v, "must be finite and ≥ 0 seconds"))
            }
        };
        non_negative("network latency", self.net.latency)?;
        super::check_quantum("OS quantum", self.os.quantum)?;
        super::check_quantum("OS tick", self.os.tick)?;
        non_negative("wake-up cost", self.os.wakeup)?;
        non_negative("monitor cost", self.monitor_cost)?;
        non_negative("merge epsilon", self.merge_epsilon)?;
        if !(self.os.quantum_jitter.is_finite() && (0.0..1.0).contains(&self.os.quantum_jitter)) {
            return Err(SimError::invalid(
                "OS quantum jitter",
                self.os.quantum_jitter,
                "must be in [0, 1)",
            ));
        }
        if !self.pe_speeds.is_empty() {
            if self.pe_speeds.len() != self.cluster.pes() {
                return Err(SimError::invalid(
                    "PE speeds",
                    format!("{} speeds", self.pe_speeds.len()),
                    "one speed per PE (or none)",
                ));
            }
            if let Some(s) = self
                .pe_speeds
                .iter()
                .find(|s| !(s.is_finite() && **s > 0.0))
            {
                return Err(SimError::invalid("PE speed", s, "must be finite and > 0"));
            }
        }
        Ok(())
    }

    /// PE `pe`'s relative speed.
    pub fn speed(&self, pe: usize) -> f64 {
        self.pe_speeds.get(pe).copied().unwrap_or(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_bad_values_are_typed_errors() {
        let m = CoschedModel::new(2, 2).unwrap();
        assert_eq!(m.cluster.pes(), 4);
        let mut bad = m.clone();
        bad.net.latency = -1.0;
        assert!(bad.validate().is_err());
        let mut bad = m.clone();
        bad.os.quantum = 0.0;
        assert!(bad.validate().is_err());
        let mut bad = m.clone();
        bad.os.quantum_jitter = 1.0;
        assert!(bad.validate().is_err());
        let mut bad = m.clone();
        bad.pe_speeds = vec![1.0; 3];
        assert!(bad.validate().is_err());
        let mut bad = m.clone();
        bad.pe_speeds = vec![1.0, 1.0, 0.0, 1.0];
        assert!(bad.validate().is_err());
        let mut bad = m;
        bad.monitor_cost = f64::NAN;
        assert!(bad.validate().is_err());
        assert!(CoschedModel::new(0, 2).is_err());
    }

    #[test]
    fn os_models_by_name() {
        assert_eq!(OsModel::named("linux-2.4").unwrap(), OsModel::default());
        let host = OsModel::named(" host ").unwrap();
        assert_eq!(host.kernel, "host");
        assert_eq!(host.quantum, 0.004);
        assert_eq!(host.tick, 0.004);
        for name in OsModel::NAMES {
            assert_eq!(OsModel::named(name).unwrap().kernel, name);
        }
        let err = OsModel::named("linux-2.6").unwrap_err().to_string();
        assert!(err.contains("linux-2.4") && err.contains("host"), "{err}");
    }
}
