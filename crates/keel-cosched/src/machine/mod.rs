//! The machine manager (MM): one per machine (paper §2.2 and §2.5).
//!
//! It packs arriving jobs into the Ousterhout matrix of
//! `keel_policy::cosched` (explicit placements with `pack_on`), starts
//! their processes through the node managers, and drives time: every
//! time slice it sends each node manager a [`Heartbeat`] carrying the slot
//! number, the active row, that row's cells on the node and the **switch
//! time**, sent [`Config::heartbeat_lead`] ahead so that every node
//! switches at the same instant rather than when the message lands
//! (as STORM does). On one machine the node managers are
//! threads and the messages travel over channels.
//!
//! How time is shared follows the policy's `TimeSharing`:
//! - `Gang` (GS, FCS): the rows take turns, one per time slice;
//! - `Batch` (FCFS): a row limit of 1, jobs start in strict arrival order
//!   when their PEs are free and run to completion; a start or an end
//!   sends an immediate heartbeat;
//! - `Uncoordinated` (Local, SB): every job is resident; heartbeats still
//!   run (every slice) but change nothing.
//!
//! A job ends when all its processes have exited. If one fails (non-zero
//! status or a signal) or cannot start, the job's other processes are
//! resumed and killed, and its matrix slots are freed once they are gone.
//!
//! The configuration: one node per allowed CPU by default.
//!
//! ```
//! use keel_cosched::Config;
//! let config = Config::new("gs:t-slice=0.05").unwrap();
//! assert_eq!(config.policy, "gs:t-slice=0.05");
//! assert!(!config.nodes.is_empty());
//! ```
//!
//! Running jobs starts real processes (hence not run here):
//!
//! ```no_run
//! use keel_cosched::{parse_jobs, Config, Machine};
//! let jobs = parse_jobs("ring 2 -- @bsp --iterations 100 --granularity-ms 5\n", "jobs").unwrap();
//! let report = Machine::new(Config::new("fcs").unwrap()).unwrap().run(jobs).unwrap();
//! println!("makespan {:.3} s", report.makespan);
//! ```

use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use keel_policy::cosched::{
    self, CoschedError, CoschedPolicy, JobId, Matrix, ProcessClass, TimeSharing,
};

use crate::control::{self, ControlCommand, ControlRequest, ControlServer, ToManager};
pub use crate::guardian::ManagerExit;
use crate::job::{JobSpec, BSP_COMMAND};
use crate::node::{
    ExitWatch, Heartbeat, Launch, NodeConfig, NodeEvent, NodeManager, NodeMsg, Owner,
};
use crate::rundir::{JobDir, RunDir};
use crate::shm;
use crate::suspend::{FreezerUnavailable, SuspendChoice, SuspendKind, Suspender};
use crate::sys::{self, Pid};

mod answer;
mod manager;

pub use crate::node::MANAGER_RT_PRIORITY;
/// Default heartbeat lead: how long before a switch its heartbeat is sent.
pub const DEFAULT_HEARTBEAT_LEAD: f64 = 0.001;
/// Default nice value of a boosted F process.
pub const DEFAULT_BOOST_NICE: i32 = -10;

/// Machine manager settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// The CPU of each PE, per node; nodes are disjoint CPU sets and PEs
    /// are numbered node by node.
    pub nodes: Vec<Vec<usize>>,
    /// The cosched policy spec (`fcs`, `gs:t-slice=0.05`, ...).
    pub policy: String,
    /// Heartbeat period (s) of policies without a time slice of their own
    /// (FCFS, Local, SB); Gang policies use theirs.
    pub tick: f64,
    /// How long before each switch its heartbeat is sent, s.
    pub heartbeat_lead: f64,
    /// How processes are suspended.
    pub suspend: SuspendChoice,
    /// Nice value for a boosted (F) process.
    pub boost_nice: i32,
    /// Program and leading arguments that stand for `@bsp` in commands.
    pub bsp_command: Vec<OsString>,
    /// Try `SCHED_FIFO` for the manager threads.
    pub realtime: bool,
    /// Give job processes `PR_SET_PDEATHSIG = SIGKILL` (the guardians
    /// alone also suffice; turning this off tests them). Only under
    /// [`ManagerExit::Kill`]: with [`ManagerExit::Resume`] it would kill
    /// the jobs the guardians are to leave running, so it is not set.
    pub pdeathsig: bool,
    /// What happens to the jobs when the manager dies (default: they are
    /// resumed and left running).
    pub on_manager_exit: ManagerExit,
    /// Listen for control requests on this Unix socket.
    pub control: Option<PathBuf>,
    /// Keep running when no job is left, until a `shutdown` request.
    pub serve: bool,
    /// Print one line per event on stderr.
    pub verbose: bool,
    /// Where pages are created (normally `/dev/shm`).
    pub shm_dir: PathBuf,
    /// Give up (killing every job) after this long.
    pub time_limit: Option<Duration>,
}

impl Config {
    /// One node per allowed CPU, one PE each, running `policy`.
    pub fn new(policy: &str) -> Result<Config, MachineError> {
        let cpus = sys::allowed_cpus()
            .map_err(|e| MachineError::Nodes(format!("cannot read the CPU set: {e}")))?;
        Ok(Config {
            nodes: cpus.into_iter().map(|c| vec![c]).collect(),
            policy: policy.to_string(),
            tick: cosched::DEFAULT_T_SLICE,
            heartbeat_lead: DEFAULT_HEARTBEAT_LEAD,
            suspend: SuspendChoice::Auto,
            boost_nice: DEFAULT_BOOST_NICE,
            bsp_command: default_bsp_command(),
            realtime: true,
            pdeathsig: true,
            on_manager_exit: ManagerExit::Resume,
            control: None,
            serve: false,
            verbose: false,
            shm_dir: PathBuf::from("/dev/shm"),
            time_limit: None,
        })
    }

    /// `nodes` nodes of `pes_per_node` PEs from the allowed CPUs, in order.
    pub fn split_cpus(&mut self, nodes: usize, pes_per_node: usize) -> Result<(), MachineError> {
        let cpus = sys::allowed_cpus()
            .map_err(|e| MachineError::Nodes(format!("cannot read the CPU set: {e}")))?;
        if nodes == 0 || pes_per_node == 0 || nodes * pes_per_node > cpus.len() {
            return Err(MachineError::Nodes(format!(
                "{nodes} nodes × {pes_per_node} PEs need {} CPUs; this process may use {} ({cpus:?})",
                nodes * pes_per_node,
                cpus.len()
            )));
        }
        self.nodes = cpus
            .chunks(pes_per_node)
            .take(nodes)
            .map(|c| c.to_vec())
            .collect();
        Ok(())
    }
}

/// `keel-bsp-job` beside the current executable, else on `PATH`.
pub fn default_bsp_command() -> Vec<OsString> {
    let name = "keel-bsp-job";
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.to_path_buf()))
    {
        for d in [Some(dir.clone()), dir.parent().map(|p| p.to_path_buf())]
            .into_iter()
            .flatten()
        {
            let candidate = d.join(name);
            if candidate.is_file() {
                return vec![candidate.into_os_string()];
            }
        }
    }
    vec![OsString::from(name)]
}

/// Why the machine manager could not run.
#[derive(Debug, thiserror::Error)]
pub enum MachineError {
    /// The node layout is unusable.
    #[error("bad node layout: {0}")]
    Nodes(String),
    /// The policy spec does not build (unknown name, bad parameter).
    #[error(transparent)]
    Policy(#[from] keel_policy::PolicyError),
    /// The freezer was required and is unusable.
    #[error(transparent)]
    Freezer(#[from] FreezerUnavailable),
    /// A setting is out of range.
    #[error("{0}")]
    Setting(String),
    /// The control socket could not be opened.
    #[error("control socket {path}: {source}")]
    Control {
        /// The socket path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A file or thread operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// How a job ended.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum JobOutcome {
    /// Every process exited with status 0.
    Completed,
    /// A process failed or could not start; the others were killed.
    Failed {
        /// The rank that failed first.
        rank: usize,
        /// What happened to it.
        reason: String,
    },
    /// Its owner killed it through the control socket.
    Killed {
        /// Who asked.
        by_uid: u32,
    },
    /// It could not be placed (too wide, PEs out of range).
    Rejected {
        /// Why.
        reason: String,
    },
    /// The run's time limit or a shutdown ended it.
    Stopped,
}

impl JobOutcome {
    /// The outcome's name, as reports and `ctl status` show it.
    ///
    /// ```
    /// use keel_cosched::JobOutcome;
    /// assert_eq!(JobOutcome::Completed.kind(), "completed");
    /// let failed = JobOutcome::Failed { rank: 0, reason: "did not start".into() };
    /// assert_eq!(failed.kind(), "failed");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            JobOutcome::Completed => "completed",
            JobOutcome::Failed { .. } => "failed",
            JobOutcome::Killed { .. } => "killed",
            JobOutcome::Rejected { .. } => "rejected",
            JobOutcome::Stopped => "stopped",
        }
    }
}

/// A class change FCS made.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ClassChange {
    /// Seconds since the start of the run.
    pub t: f64,
    /// The rank.
    pub rank: usize,
    /// Old class.
    pub from: String,
    /// New class.
    pub to: String,
    /// Average CPU time per communication at the decision, s.
    pub avg_cpu: f64,
    /// Average wait per communication, s.
    pub avg_comm: f64,
}

/// One job's record.
#[derive(Clone, Debug, serde::Serialize)]
pub struct JobReport {
    /// Job id.
    pub id: JobId,
    /// Name from the job file.
    pub name: String,
    /// Ranks.
    pub ranks: usize,
    /// PE of each rank (empty if never placed).
    pub pes: Vec<usize>,
    /// Owner's uid.
    pub uid: u32,
    /// Submission time, s since the start of the run.
    pub submitted: f64,
    /// Start of its processes, s (None if never started).
    pub started: Option<f64>,
    /// When its last process ended, s (None if it never ended).
    pub ended: Option<f64>,
    /// How it ended.
    pub outcome: JobOutcome,
    /// Each rank's final class (FCS; "CS" for other policies).
    pub classes: Vec<String>,
    /// FCS's class changes, in order.
    pub class_changes: Vec<ClassChange>,
}

impl JobReport {
    /// Termination time (end since the start of the run), s.
    pub fn termination(&self) -> Option<f64> {
        self.ended
    }
}

/// The outcome of one run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RunReport {
    /// The policy's canonical spec.
    pub policy: String,
    /// The slice or heartbeat period, s.
    pub time_slice: f64,
    /// How processes were suspended.
    pub suspend: SuspendKind,
    /// Why the freezer was not used, if it was not.
    pub suspend_note: Option<String>,
    /// Notices from the managers (refused boost or real-time priority).
    pub notices: Vec<String>,
    /// Heartbeats sent.
    pub slots: u64,
    /// The jobs, in submission order.
    pub jobs: Vec<JobReport>,
    /// Latest job end, s.
    pub makespan: f64,
    /// Fraction of the nodes' CPU time that processes outside this run
    /// used while it ran (0 = a quiet machine); `None` if unknown. Runs
    /// on a shared machine are only comparable when this is small.
    pub background_load: Option<f64>,
}

/// A job's life in the manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Submitted for a later time.
    Future,
    /// Arrived; waiting for a place (FCFS).
    Queued,
    /// In the matrix; processes starting or running.
    Running,
    /// Processes being killed.
    Ending,
    /// All processes gone.
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RankState {
    Launching,
    Running(Pid),
    Gone,
}

struct JobState {
    id: JobId,
    spec: JobSpec,
    owner: Owner,
    phase: Phase,
    arrive_at: Instant,
    pes: Vec<usize>,
    ranks: Vec<RankState>,
    started: Option<Instant>,
    ended: Option<Instant>,
    outcome: Option<JobOutcome>,
    /// When the rank the outcome names exited, for a failure: a later
    /// report of a rank that exited earlier names that rank instead (the
    /// others usually fail because it did).
    failed_at: Option<Instant>,
    classes: Vec<ProcessClass>,
    changes: Vec<ClassChange>,
}

/// Events the machine manager waits for.
pub(crate) enum MmEvent {
    Node(usize, NodeEvent),
    Control(ControlRequest),
}

impl ToManager for mpsc::Sender<MmEvent> {
    fn hand_over(&self, request: ControlRequest) -> bool {
        self.send(MmEvent::Control(request)).is_ok()
    }
}

/// Job ids are unique per machine: the manager's pid and a counter, so
/// pages of concurrent managers never collide.
fn next_job_id() -> JobId {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(1);
    sys::getpid() as u64 * 10_000 + SEQ.fetch_add(1, Ordering::Relaxed) % 10_000
}

/// Checks a configuration's node layout and settings.
fn validate(config: &Config) -> Result<(), MachineError> {
    if config.nodes.is_empty() || config.nodes.iter().any(|n| n.is_empty()) {
        return Err(MachineError::Nodes(
            "every node needs at least one CPU".into(),
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for &cpu in config.nodes.iter().flatten() {
        if !seen.insert(cpu) {
            return Err(MachineError::Nodes(format!(
                "CPU {cpu} is in two nodes (nodes must be disjoint)"
            )));
        }
    }
    let allowed = sys::allowed_cpus().unwrap_or_default();
    if let Some(cpu) = seen.iter().find(|c| !allowed.contains(c)) {
        return Err(MachineError::Nodes(format!(
            "CPU {cpu} is not available to this process (allowed: {allowed:?})"
        )));
    }
    for (what, v) in [
        ("tick", config.tick),
        ("heartbeat lead", config.heartbeat_lead),
    ] {
        if !(v.is_finite() && v >= 0.0) || (what == "tick" && v == 0.0) {
            return Err(MachineError::Setting(format!(
                "{what} = {v} s is invalid: expected a finite number of seconds > 0"
            )));
        }
    }
    if !(-20..=19).contains(&config.boost_nice) {
        return Err(MachineError::Setting(format!(
            "boost nice {} is outside -20..=19",
            config.boost_nice
        )));
    }
    if config.bsp_command.is_empty() {
        return Err(MachineError::Setting("the @bsp command is empty".into()));
    }
    Ok(())
}

/// A machine manager with its node managers.
pub struct Machine {
    config: Config,
    policy: Arc<dyn CoschedPolicy>,
    suspender: Arc<Suspender>,
    /// (node, node-local PE) of each global PE.
    pe_home: Vec<(usize, usize)>,
}

impl Machine {
    /// Checks the configuration, builds the policy and picks the suspend
    /// method.
    pub fn new(config: Config) -> Result<Machine, MachineError> {
        // Policies come only through the registry, so every context builds them alike.
        let policy: Arc<dyn CoschedPolicy> = Arc::from(cosched::registry().build(&config.policy)?);
        Machine::with_policy(config, policy)
    }

    /// As [`Machine::new`], with a policy built elsewhere (e.g. from a
    /// registry the caller extended); `config.policy` is then only a label.
    pub fn with_policy(
        config: Config,
        policy: Arc<dyn CoschedPolicy>,
    ) -> Result<Machine, MachineError> {
        validate(&config)?;
        let suspender = Arc::new(Suspender::new(config.suspend)?);
        let pe_home = config
            .nodes
            .iter()
            .enumerate()
            .flat_map(|(n, cpus)| (0..cpus.len()).map(move |i| (n, i)))
            .collect();
        Ok(Machine {
            config,
            policy,
            suspender,
            pe_home,
        })
    }

    /// The number of PEs.
    pub fn pes(&self) -> usize {
        self.pe_home.len()
    }

    /// The suspend method in use.
    pub fn suspend_kind(&self) -> SuspendKind {
        self.suspender.kind()
    }

    /// Runs `jobs` (owned by the calling user) to completion, plus any job
    /// submitted through the control socket, and reports.
    pub fn run(&self, jobs: Vec<JobSpec>) -> Result<RunReport, MachineError> {
        let (ev_tx, ev_rx) = mpsc::channel::<MmEvent>();
        let control = match &self.config.control {
            Some(path) => Some(ControlServer::start(path, ev_tx.clone()).map_err(|source| {
                MachineError::Control {
                    path: path.clone(),
                    source,
                }
            })?),
            None => None,
        };
        // A fresh directory of ours (never one that already existed):
        // see `rundir` for why and for its layout. Dropping it at the end
        // of the run removes it.
        let run_dir_guard =
            RunDir::create(&std::env::temp_dir()).map_err(|source| MachineError::Io {
                what: "cannot create the run directory".into(),
                source,
            })?;
        let run_dir = run_dir_guard.path().to_path_buf();

        let all_cpus: Vec<usize> = self.config.nodes.iter().flatten().copied().collect();
        let ours = || sys::rusage_ns(libc::RUSAGE_SELF) + sys::rusage_ns(libc::RUSAGE_CHILDREN);
        let (busy0, ours0, wall0) = (sys::cpu_busy_ns(&all_cpus), ours(), Instant::now());
        // One watch for every node: ranks that end close together on
        // different nodes keep their order.
        let exits = Arc::new(ExitWatch::start().map_err(|source| MachineError::Io {
            what: "cannot start watching the jobs' processes".into(),
            source,
        })?);
        let (node_ev_tx, node_ev_rx) = mpsc::channel::<(usize, NodeEvent)>();
        let mut nodes: Vec<(Sender<NodeMsg>, JoinHandle<()>)> = Vec::new();
        for (id, cpus) in self.config.nodes.iter().enumerate() {
            let (tx, rx) = mpsc::channel();
            let cfg = NodeConfig {
                id,
                cpus: cpus.clone(),
                boost_nice: self.config.boost_nice,
                // The parent-death signal kills the job with its
                // manager: it only belongs to `ManagerExit::Kill`.
                pdeathsig: self.config.pdeathsig
                    && self.config.on_manager_exit == ManagerExit::Kill,
                on_manager_exit: self.config.on_manager_exit,
                realtime: self.config.realtime,
                report_switches: false,
            };
            let (policy, suspender, inbox, events, exits) = (
                Arc::clone(&self.policy),
                Arc::clone(&self.suspender),
                tx.clone(),
                node_ev_tx.clone(),
                Arc::clone(&exits),
            );
            let handle = std::thread::Builder::new()
                .name(format!("keel-nm-{id}"))
                .spawn(move || NodeManager::run(cfg, policy, suspender, rx, inbox, events, exits))
                .map_err(|source| MachineError::Io {
                    what: "cannot start a node manager thread".into(),
                    source,
                })?;
            nodes.push((tx, handle));
        }
        drop(node_ev_tx);
        // Funnel node events into the manager's single queue.
        let fwd_tx = ev_tx.clone();
        let forwarder = std::thread::spawn(move || {
            for (n, e) in node_ev_rx {
                if fwd_tx.send(MmEvent::Node(n, e)).is_err() {
                    break;
                }
            }
        });
        drop(ev_tx);

        let mut mm = Manager {
            m: self,
            nodes: nodes.iter().map(|(tx, _)| tx.clone()).collect(),
            jobs: BTreeMap::new(),
            order: Vec::new(),
            queue: VecDeque::new(),
            matrix: match self.policy.time_sharing() {
                TimeSharing::Batch => Matrix::with_row_limit(self.pes(), 1),
                _ => Matrix::new(self.pes()),
            },
            row: 0,
            slot: 0,
            notices: Vec::new(),
            run_dir: run_dir.clone(),
            t0: Instant::now(),
            shutdown: false,
        };
        if self.config.realtime {
            sys::set_timer_slack(1_000);
            if let Err(e) = sys::set_realtime(MANAGER_RT_PRIORITY) {
                let text = format!(
                    "cannot use SCHED_FIFO for the machine manager ({e}); heartbeats may lag"
                );
                let _ = writeln!(std::io::stderr(), "keel-cosched: {text}");
                mm.notices.push(text);
            }
        }
        let me = Owner {
            uid: sys::getuid(),
            gid: sys::getgid(),
        };
        for spec in jobs {
            mm.submit(spec, me);
        }
        mm.event_loop(&ev_rx);
        for tx in &mm.nodes {
            let _ = tx.send(NodeMsg::Shutdown);
        }
        // Drain what the node managers report while shutting down.
        mm.nodes.clear();
        for (tx, handle) in nodes {
            drop(tx);
            let _ = handle.join();
        }
        while let Ok(ev) = ev_rx.recv_timeout(Duration::from_millis(50)) {
            if let MmEvent::Node(n, e) = ev {
                mm.node_event(n, e);
            }
        }
        if let Some(c) = control {
            c.stop();
        }
        let _ = forwarder.join();
        if self.config.realtime {
            // This thread may be the caller's: hand it back as it was.
            sys::set_normal_scheduling();
        }
        let mut report = mm.report();
        let wall = wall0.elapsed().as_nanos() as f64 * all_cpus.len() as f64;
        report.background_load = match (busy0, sys::cpu_busy_ns(&all_cpus)) {
            (Some(b0), Some(b1)) if wall > 0.0 => {
                let foreign = b1.saturating_sub(b0) as f64 - ours().saturating_sub(ours0) as f64;
                Some((foreign / wall).clamp(0.0, 1.0))
            }
            _ => None,
        };
        drop(run_dir_guard);
        Ok(report)
    }
}

/// The manager's state during one run.
struct Manager<'a> {
    m: &'a Machine,
    nodes: Vec<Sender<NodeMsg>>,
    jobs: BTreeMap<JobId, JobState>,
    order: Vec<JobId>,
    queue: VecDeque<JobId>,
    matrix: Matrix,
    row: usize,
    slot: u64,
    notices: Vec<String>,
    run_dir: PathBuf,
    t0: Instant,
    shutdown: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Config {
        let mut c = Config::new("gs").unwrap();
        c.nodes = vec![vec![sys::allowed_cpus().unwrap()[0]]];
        c.suspend = SuspendChoice::Signals;
        c
    }

    fn err(c: Config) -> String {
        match Machine::new(c) {
            Ok(_) => panic!("expected an error"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn bad_configurations_are_refused_with_reasons() {
        let mut c = base();
        c.nodes = vec![vec![0], vec![0]];
        assert!(err(c).contains("disjoint"));
        let mut c = base();
        c.nodes = vec![vec![]];
        assert!(err(c).contains("at least one CPU"));
        let mut c = base();
        c.nodes = vec![vec![1000]];
        assert!(err(c).contains("not available"));
        let mut c = base();
        c.boost_nice = -40;
        assert!(err(c).contains("-20..=19"));
        let mut c = base();
        c.tick = 0.0;
        assert!(err(c).contains("tick"));
        let mut c = base();
        c.policy = "lottery".into();
        assert!(err(c).contains("fcfs, gs, local, sb, fcs"));
        let mut c = base();
        c.policy = "fcs:f-thresh=0.5".into();
        assert!(err(c).contains("f-thresh"));
        assert_eq!(Machine::new(base()).unwrap().pes(), 1);
    }

    #[test]
    fn cpus_split_into_nodes() {
        let mut c = base();
        let n = sys::allowed_cpus().unwrap().len();
        c.split_cpus(n, 1).unwrap();
        assert_eq!(c.nodes.len(), n);
        assert!(c
            .split_cpus(n + 1, 1)
            .unwrap_err()
            .to_string()
            .contains("need"));
        assert!(c.split_cpus(0, 1).is_err());
    }

    #[test]
    fn job_ids_are_unique_and_carry_the_pid() {
        let a = next_job_id();
        let b = next_job_id();
        assert_ne!(a, b);
        assert_eq!(a / 10_000, sys::getpid() as u64);
    }
}
