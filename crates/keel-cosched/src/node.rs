//! The node manager (NM): one per node, owning the node's PEs and the job
//! processes placed on them (paper §2.2 and §2.5; Algorithm 1 is the
//! policy's, this module enacts it).
//!
//! It starts processes (page created first, each the leader of its own
//! session and process group, pinned to the PE's CPU, in its own freezer cgroup,
//! guarded by a [`Guardian`](crate::guardian::Guardian)) and
//! at every heartbeat, at the switch time the heartbeat carries:
//!
//! 1. under a classifying policy (FCS), for each PE reads the counters of
//!    the process whose assigned slot just ended, builds its `CommStats`
//!    since its baseline (T_cpu = CPU − spin), calls `finish_slot`
//!    (Algorithm 2) and re-baselines on a class change or reset;
//! 2. asks the policy for each PE's [`PeDecision`] and enacts it: suspend
//!    what may not run, set the boost (nice) and the wait mode in each
//!    runnable process's page, then resume what may run.
//!
//! Every process's enacted state is cached, so an unchanged decision costs
//! no system call (Algorithm 1's "`current == next` → return").
//!
//! A policy's wait mode as the page carries it, in nanoseconds:
//!
//! ```
//! use keel_cosched::node::page_mode;
//! use keel_cosched::PageWaitMode;
//! use keel_policy::cosched::WaitMode;
//! assert_eq!(page_mode(WaitMode::SpinBlock { spin: 1e-4 }), PageWaitMode::SpinBlock { spin_ns: 100_000 });
//! assert_eq!(page_mode(WaitMode::Poll).code(), 0);
//! ```

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::Instant;

use keel_policy::cosched::{
    CommStats, CoschedPolicy, JobId, PeDecision, PeSlot, ProcRef, ProcessClass, Reclass, WaitMode,
};

use crate::guardian::ManagerExit;
use crate::shm::PageWaitMode;
use crate::suspend::Suspender;
pub use crate::sys::Owner;
use crate::sys::{self, Pid};

mod adopt;
mod exits;
mod process;
mod start;

pub use adopt::Adopt;
pub use exits::ExitWatch;
use process::{Handle, Proc};

/// `SCHED_FIFO` priority of the manager threads when
/// [`Config::realtime`](crate::machine::Config::realtime) is set: low, so
/// that it only outranks ordinary processes.
pub const MANAGER_RT_PRIORITY: i32 = 10;

/// Environment variable with the job's id.
pub const JOB_ENV: &str = "KEEL_COSCHED_JOB";
/// Bytes of a failed process's stderr kept for its job's report.
pub const STDERR_TAIL_BYTES: u64 = 600;

/// A multi-context-switch: the machine manager's heartbeat for one node.
#[derive(Clone, Debug)]
pub struct Heartbeat {
    /// Slot number since the start of the run.
    pub slot: u64,
    /// The matrix row that becomes active.
    pub row: usize,
    /// When to switch (all nodes switch at this instant).
    pub switch_at: Instant,
    /// The row's cell for each of the node's PEs, in the node's PE order:
    /// (job, rank) or empty.
    pub cells: Vec<Option<(JobId, usize)>>,
}

/// Start one process of a job on one of the node's PEs.
#[derive(Clone, Debug)]
pub struct Launch {
    /// The job.
    pub job: JobId,
    /// The rank.
    pub rank: usize,
    /// The job's number of ranks.
    pub size: usize,
    /// The node-local PE index.
    pub pe: usize,
    /// Program and arguments.
    pub command: Vec<OsString>,
    /// Run as.
    pub owner: Owner,
    /// The job's rendezvous directory.
    pub rendezvous: PathBuf,
    /// The page to create.
    pub page: PathBuf,
    /// Where the process's stderr goes.
    pub stderr: PathBuf,
}

/// Messages to a node manager.
#[derive(Debug)]
pub enum NodeMsg {
    /// Start a process.
    Launch(Box<Launch>),
    /// Take charge of a process someone else started (a Slurm task).
    Adopt(Box<Adopt>),
    /// No heartbeat arrives (the machine manager is gone or cut off):
    /// every process runs until the next heartbeat.
    Detach,
    /// Switch slots at the given time.
    Heartbeat(Heartbeat),
    /// Resume and kill the job's processes on this node.
    KillJob(JobId),
    /// A process exited (from the [`ExitWatch`]).
    Exited {
        /// Job.
        job: JobId,
        /// Rank.
        rank: usize,
        /// When the exit was seen.
        at: Instant,
    },
    /// Kill everything and stop.
    Shutdown,
}

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExitKind {
    /// Exited with this status.
    Code(i32),
    /// Killed by this signal.
    Signal(i32),
    /// An adopted process ended; its parent, not the node manager, saw
    /// how.
    Unobserved,
}

impl ExitKind {
    /// Exit status 0.
    pub fn success(self) -> bool {
        self == ExitKind::Code(0)
    }
}

impl std::fmt::Display for ExitKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExitKind::Code(c) => write!(f, "exit status {c}"),
            ExitKind::Signal(s) => write!(f, "signal {s}"),
            ExitKind::Unobserved => f.write_str("ended (its launcher has the status)"),
        }
    }
}

/// What a node manager tells the machine manager.
#[derive(Debug)]
pub enum NodeEvent {
    /// A process started.
    Started {
        /// Job.
        job: JobId,
        /// Rank.
        rank: usize,
        /// Its pid.
        pid: Pid,
    },
    /// A process could not be started.
    StartFailed {
        /// Job.
        job: JobId,
        /// Rank.
        rank: usize,
        /// Why.
        error: String,
    },
    /// A process ended and was cleaned up.
    Exited {
        /// Job.
        job: JobId,
        /// Rank.
        rank: usize,
        /// How.
        status: ExitKind,
        /// When.
        at: Instant,
        /// The end of its stderr when it failed.
        stderr_tail: Option<String>,
    },
    /// FCS changed a process's class.
    Classified {
        /// Job.
        job: JobId,
        /// Rank.
        rank: usize,
        /// Old class.
        from: ProcessClass,
        /// New class.
        to: ProcessClass,
        /// Slot at whose start it happened.
        slot: u64,
        /// The statistics that decided it: (avg T_cpu, avg T_comm) in s.
        stats: (f64, f64),
    },
    /// Something the operator should know once (e.g. a refused boost).
    Notice(String),
    /// The node enacted a slot's switch (only with
    /// [`NodeConfig::report_switches`]).
    Switched {
        /// The slot.
        slot: u64,
        /// When its last decision was enacted.
        at: Instant,
    },
}

/// The node manager's settings.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    /// Node number.
    pub id: usize,
    /// The CPU of each of the node's PEs.
    pub cpus: Vec<usize>,
    /// Nice value of a boosted (F) process; others run at 0.
    pub boost_nice: i32,
    /// Give job processes `PR_SET_PDEATHSIG = SIGKILL` (only coherent
    /// with [`ManagerExit::Kill`]).
    pub pdeathsig: bool,
    /// What the guardians do with the processes if the manager dies.
    pub on_manager_exit: ManagerExit,
    /// Try `SCHED_FIFO` for the manager thread.
    pub realtime: bool,
    /// Send [`NodeEvent::Switched`] after every switch (the cluster mode
    /// measures the switch skew between nodes with it).
    pub report_switches: bool,
}

/// A running node manager.
pub struct NodeManager {
    cfg: NodeConfig,
    policy: Arc<dyn CoschedPolicy>,
    suspender: Arc<Suspender>,
    procs: BTreeMap<(JobId, usize), Proc>,
    cells: Vec<Option<(JobId, usize)>>,
    slot: u64,
    inbox: Sender<NodeMsg>,
    events: Sender<(usize, NodeEvent)>,
    /// Where this node's processes' ends are watched (shared by a
    /// machine's node managers).
    exits: Arc<ExitWatch>,
    boost_refused: bool,
    /// No heartbeat: every process runs (see [`NodeMsg::Detach`]).
    detached: bool,
}

impl NodeManager {
    /// Runs a node manager on the calling thread until [`NodeMsg::Shutdown`]
    /// or until every sender of `rx` is gone. `inbox` is a sender to `rx`
    /// (given to `exits`, which reports the processes' ends there).
    pub fn run(
        cfg: NodeConfig,
        policy: Arc<dyn CoschedPolicy>,
        suspender: Arc<Suspender>,
        rx: Receiver<NodeMsg>,
        inbox: Sender<NodeMsg>,
        events: Sender<(usize, NodeEvent)>,
        exits: Arc<ExitWatch>,
    ) {
        sys::set_timer_slack(1_000);
        if cfg.realtime {
            if let Err(e) = sys::set_realtime(MANAGER_RT_PRIORITY) {
                let _ = events.send((
                    cfg.id,
                    NodeEvent::Notice(format!(
                        "node {}: cannot use SCHED_FIFO for the node manager ({e}); slot switches may lag",
                        cfg.id
                    )),
                ));
            }
        }
        let pes = cfg.cpus.len();
        let mut nm = NodeManager {
            cfg,
            policy,
            suspender,
            procs: BTreeMap::new(),
            cells: vec![None; pes],
            slot: 0,
            inbox,
            events,
            exits,
            boost_refused: false,
            detached: false,
        };
        nm.serve(rx);
        nm.shutdown();
    }

    fn serve(&mut self, rx: Receiver<NodeMsg>) {
        let mut pending: Option<Heartbeat> = None;
        loop {
            let msg = match &pending {
                Some(hb) => {
                    let wait = hb.switch_at.saturating_duration_since(Instant::now());
                    match rx.recv_timeout(wait) {
                        Ok(m) => Some(m),
                        Err(RecvTimeoutError::Timeout) => None,
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
                None => match rx.recv() {
                    Ok(m) => Some(m),
                    Err(_) => return,
                },
            };
            match msg {
                None => {
                    if let Some(hb) = pending.take() {
                        self.switch(hb);
                    }
                }
                Some(NodeMsg::Heartbeat(hb)) => {
                    // A newer heartbeat supersedes an unapplied one only
                    // after the older one's switch has happened.
                    if let Some(old) = pending.take() {
                        self.switch(old);
                    }
                    if hb.switch_at <= Instant::now() {
                        self.switch(hb);
                    } else {
                        pending = Some(hb);
                    }
                }
                Some(NodeMsg::Launch(l)) => self.launch(*l),
                Some(NodeMsg::Adopt(a)) => self.adopt(*a),
                Some(NodeMsg::Detach) => {
                    // What was due still happens; then everything runs.
                    if let Some(old) = pending.take() {
                        self.switch(old);
                    }
                    self.detach();
                }
                Some(NodeMsg::KillJob(job)) => {
                    for p in self.procs.values_mut().filter(|p| p.job == job) {
                        p.kill(&self.suspender);
                    }
                }
                Some(NodeMsg::Exited { job, rank, at }) => self.exited(job, rank, at),
                Some(NodeMsg::Shutdown) => return,
            }
        }
    }

    fn notice(&self, text: String) {
        let _ = self.events.send((self.cfg.id, NodeEvent::Notice(text)));
    }

    fn event(&self, e: NodeEvent) {
        let _ = self.events.send((self.cfg.id, e));
    }

    /// A multi-context-switch.
    fn switch(&mut self, hb: Heartbeat) {
        if self.policy.classifies() {
            self.classify_ending_slot();
        }
        self.detached = false;
        self.slot = hb.slot;
        self.cells = hb.cells;
        self.release_cancelled();
        for pe in 0..self.cfg.cpus.len() {
            self.enact(pe);
        }
        if self.cfg.report_switches {
            self.event(NodeEvent::Switched {
                slot: hb.slot,
                at: Instant::now(),
            });
        }
    }

    /// Algorithm 2 for every process whose assigned slot ends now.
    fn classify_ending_slot(&mut self) {
        let Some(params) = self.policy.fcs_params().copied() else {
            return;
        };
        let mut changes = Vec::new();
        for cell in self.cells.iter().flatten() {
            let Some(p) = self.procs.get_mut(cell) else {
                continue;
            };
            if p.dying {
                continue;
            }
            // A torn read (the process is stopped mid-update) skips this
            // slot for it: no data is better than mixed data.
            let Ok(now) = p.page.counters() else {
                continue;
            };
            let d = now.since(&p.baseline);
            let Ok(stats) = CommStats::new(
                d.compute_ns() as f64 * 1e-9,
                d.comm_wait_ns as f64 * 1e-9,
                d.comm_count,
            ) else {
                continue;
            };
            let r = p.sched.finish_slot(&stats, &params);
            if r.resets_stats() {
                p.baseline = now;
            }
            if let Reclass::Changed { from, to } = r {
                changes.push(NodeEvent::Classified {
                    job: p.job,
                    rank: p.rank,
                    from,
                    to,
                    slot: self.slot,
                    stats: (stats.avg_cpu(), stats.avg_comm()),
                });
            }
        }
        for c in changes {
            self.event(c);
        }
    }

    /// Asks the policy about local PE `pe` and enacts the decision.
    fn enact(&mut self, pe: usize) {
        let classifies = self.policy.classifies();
        let live = |p: &&Proc| p.pe == pe && !p.dying;
        let assigned = self.cells[pe]
            .and_then(|key| self.procs.get(&key))
            .filter(|p| live(p))
            .map(|p| p.proc_ref(classifies));
        let resident: Vec<ProcRef> = self
            .procs
            .values()
            .filter(live)
            .map(|p| p.proc_ref(classifies))
            .collect();
        let slot = PeSlot { assigned, resident };
        let decision = if self.detached {
            PeDecision {
                runnable: slot.resident.clone(),
                exclusive: false,
                boosted: None,
                wait: WaitMode::Block,
            }
        } else {
            self.policy.decide(&slot)
        };
        self.apply(&slot, &decision);
    }

    fn apply(&mut self, slot: &PeSlot, d: &PeDecision) {
        let released: Vec<(JobId, usize)> = slot
            .resident
            .iter()
            .filter(|r| self.procs.get(&(r.job, r.rank)).is_some_and(|p| p.released))
            .map(|r| (r.job, r.rank))
            .collect();
        let runs = |r: &ProcRef| {
            released.contains(&(r.job, r.rank))
                || d.runnable
                    .iter()
                    .any(|q| q.job == r.job && q.rank == r.rank)
        };
        let mode = page_mode(d.wait);
        let mut refused: Option<io::Error> = None;
        // Suspend first, so that a PE never holds both the outgoing and the
        // incoming process runnable at once.
        for r in slot.resident.iter().filter(|r| !runs(r)) {
            if let Some(p) = self.procs.get_mut(&(r.job, r.rank)) {
                if !p.suspended {
                    match p.suspend(&self.suspender) {
                        Ok(()) => p.suspended = true,
                        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                        Err(e) => {
                            let text =
                                format!("node {}: cannot suspend pid {}: {e}", self.cfg.id, p.pid);
                            self.notice(text);
                        }
                    }
                }
            }
        }
        for r in &slot.resident {
            let Some(p) = self.procs.get_mut(&(r.job, r.rank)) else {
                continue;
            };
            let boosted = d
                .boosted
                .is_some_and(|b| b.job == r.job && b.rank == r.rank);
            let want = if boosted && !self.boost_refused {
                self.cfg.boost_nice
            } else {
                0
            };
            if p.nice != want {
                match sys::set_process_nice(p.pid, want) {
                    Ok(()) => p.nice = want,
                    Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM | libc::EACCES)) => {
                        refused = Some(e);
                    }
                    Err(_) => {}
                }
            }
            if runs(r) {
                if p.mode != Some(mode) {
                    p.page.set_wait_mode(mode);
                    p.mode = Some(mode);
                }
                if p.suspended {
                    match p.resume(&self.suspender) {
                        Ok(()) => p.suspended = false,
                        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => p.suspended = false,
                        Err(e) => {
                            let text =
                                format!("node {}: cannot resume pid {}: {e}", self.cfg.id, p.pid);
                            self.notice(text);
                        }
                    }
                }
            }
        }
        if let Some(e) = refused {
            if !self.boost_refused {
                self.boost_refused = true;
                self.notice(format!(
                    "node {}: cannot raise F processes' priority to nice {} ({e}; needs CAP_SYS_NICE): F processes run unboosted",
                    self.cfg.id, self.cfg.boost_nice
                ));
            }
        }
    }

    fn launch(&mut self, l: Launch) {
        let (job, rank) = (l.job, l.rank);
        match self.start(l) {
            Ok(pid) => {
                self.event(NodeEvent::Started { job, rank, pid });
                let pe = self.procs[&(job, rank)].pe;
                self.enact(pe);
            }
            Err(error) => self.event(NodeEvent::StartFailed { job, rank, error }),
        }
    }

    fn exited(&mut self, job: JobId, rank: usize, at: Instant) {
        let Some(mut p) = self.procs.remove(&(job, rank)) else {
            return;
        };
        let status = p.reap();
        let stderr_tail = match (&p.stderr, status) {
            (Some(path), s) if !s.success() && s != ExitKind::Unobserved => tail(path),
            _ => None,
        };
        let pe = p.pe;
        drop(p);
        self.event(NodeEvent::Exited {
            job,
            rank,
            status,
            at,
            stderr_tail,
        });
        self.enact(pe);
    }

    fn shutdown(&mut self) {
        // Adopted processes belong to their launcher: they run on.
        for p in self.procs.values_mut().filter(|p| p.adopted()) {
            p.let_go(&self.suspender);
        }
        self.procs.retain(|_, p| !p.adopted());
        for p in self.procs.values_mut() {
            p.kill(&self.suspender);
        }
        let keys: Vec<_> = self.procs.keys().copied().collect();
        for (job, rank) in keys {
            if let Some(mut p) = self.procs.remove(&(job, rank)) {
                let status = p.reap();
                drop(p);
                self.event(NodeEvent::Exited {
                    job,
                    rank,
                    status,
                    at: Instant::now(),
                    stderr_tail: None,
                });
            }
        }
    }
}

impl NodeManager {
    /// Every process runs until the next heartbeat.
    fn detach(&mut self) {
        if !self.detached {
            self.detached = true;
            for pe in 0..self.cfg.cpus.len() {
                self.enact(pe);
            }
        }
    }

    /// Adopted processes their launcher is ending run from now on.
    fn release_cancelled(&mut self) {
        for p in self.procs.values_mut() {
            if !p.released && p.being_cancelled() {
                p.released = true;
            }
        }
    }
}

/// The page's form of a policy wait mode.
pub fn page_mode(w: WaitMode) -> PageWaitMode {
    match w {
        WaitMode::Poll => PageWaitMode::Poll,
        WaitMode::SpinBlock { spin } => PageWaitMode::SpinBlock {
            spin_ns: (spin * 1e9).round().max(0.0) as u64,
        },
        WaitMode::Block => PageWaitMode::Block,
    }
}

/// The last [`STDERR_TAIL_BYTES`] of a file, lossily decoded.
fn tail(path: &std::path::Path) -> Option<String> {
    let mut f = File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(STDERR_TAIL_BYTES)))
        .ok()?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).ok()?;
    let s = String::from_utf8_lossy(&buf).trim().to_string();
    (!s.is_empty()).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_modes_convert_to_page_modes() {
        assert_eq!(page_mode(WaitMode::Poll), PageWaitMode::Poll);
        assert_eq!(
            page_mode(WaitMode::SpinBlock { spin: 100e-6 }),
            PageWaitMode::SpinBlock { spin_ns: 100_000 }
        );
        assert_eq!(page_mode(WaitMode::Block), PageWaitMode::Block);
    }

    #[test]
    fn exit_kinds_read_well() {
        assert!(ExitKind::Code(0).success());
        assert!(!ExitKind::Signal(9).success());
        assert_eq!(ExitKind::Signal(9).to_string(), "signal 9");
    }
}
