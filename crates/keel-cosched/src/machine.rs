//! The machine manager (MM): one per machine (paper §2.2 and §2.5).
//!
//! It packs arriving jobs into the Ousterhout matrix of
//! `keel_policy::cosched` (explicit placements with `pack_on`), starts
//! their processes through the node managers, and drives time: every
//! time slice it sends each node manager a [`Heartbeat`] carrying the slot
//! number, the active row, that row's cells on the node and the **switch
//! time**, sent [`Config::heartbeat_lead`] ahead so that every node
//! switches at the same instant rather than when the message lands
//! (`research/farm_cosched.md` §B.7). On one machine the node managers are
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

use crate::control::{self, ControlCommand, ControlRequest, ControlServer};
pub use crate::guardian::ManagerExit;
use crate::job::{JobSpec, BSP_COMMAND};
use crate::node::{Heartbeat, Launch, NodeConfig, NodeEvent, NodeManager, NodeMsg, Owner};
use crate::rundir::{JobDir, RunDir};
use crate::shm;
use crate::suspend::{FreezerUnavailable, SuspendChoice, SuspendKind, Suspender};
use crate::sys::{self, Pid};

/// `SCHED_FIFO` priority of the manager threads when [`Config::realtime`]
/// is set: low, so that it only outranks ordinary processes.
pub const MANAGER_RT_PRIORITY: i32 = 10;
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
    classes: Vec<ProcessClass>,
    changes: Vec<ClassChange>,
}

/// Events the machine manager waits for.
pub(crate) enum MmEvent {
    Node(usize, NodeEvent),
    Control(ControlRequest),
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
        // Policies come only through the registry (DESIGN.md).
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
            };
            let (policy, suspender, inbox, events) = (
                Arc::clone(&self.policy),
                Arc::clone(&self.suspender),
                tx.clone(),
                node_ev_tx.clone(),
            );
            let handle = std::thread::Builder::new()
                .name(format!("keel-nm-{id}"))
                .spawn(move || NodeManager::run(cfg, policy, suspender, rx, inbox, events))
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

impl Manager<'_> {
    fn secs(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.t0).as_secs_f64()
    }

    fn log(&self, text: &str) {
        if self.m.config.verbose {
            let t = self.secs(Instant::now());
            let _ = writeln!(std::io::stderr(), "[{t:9.4}] {text}");
        }
    }

    /// Records a job. One that breaks a limit of `job.rs` or does not fit
    /// this machine is recorded as rejected, before anything is allocated
    /// per rank, so that no spec (built in code, read from a file) can
    /// exhaust memory or overflow the clock.
    fn submit(&mut self, spec: JobSpec, owner: Owner) -> JobId {
        self.forget_old_jobs();
        let id = next_job_id();
        let now = Instant::now();
        let checked = spec
            .validate()
            .and_then(|()| spec.check_fits(self.m.pes()))
            .map_err(|e| e.to_string())
            .and_then(|()| {
                Duration::try_from_secs_f64(spec.arrival)
                    .ok()
                    .and_then(|d| now.checked_add(d))
                    .ok_or_else(|| {
                        format!("arrival {} s is beyond the clock's range", spec.arrival)
                    })
            });
        let (phase, arrive_at, ranks, outcome) = match checked {
            Ok(at) => (Phase::Future, at, spec.ranks, None),
            Err(reason) => {
                self.log(&format!("job {id} rejected: {reason}"));
                (Phase::Done, now, 0, Some(JobOutcome::Rejected { reason }))
            }
        };
        self.jobs.insert(
            id,
            JobState {
                id,
                spec,
                owner,
                phase,
                arrive_at,
                pes: Vec::new(),
                ranks: vec![RankState::Launching; ranks],
                started: None,
                ended: None,
                outcome,
                classes: vec![ProcessClass::Cs; ranks],
                changes: Vec::new(),
            },
        );
        self.order.push(id);
        id
    }

    /// A daemon serves for ever: past [`control::MAX_KEPT_JOBS`] records,
    /// the oldest ended jobs are forgotten (and miss from the final report)
    /// so that memory stays bounded however many jobs are submitted.
    fn forget_old_jobs(&mut self) {
        if self.jobs.len() < control::MAX_KEPT_JOBS {
            return;
        }
        let excess = self.jobs.len() + 1 - control::MAX_KEPT_JOBS;
        let old: Vec<JobId> = self
            .order
            .iter()
            .copied()
            .filter(|id| self.jobs[id].phase == Phase::Done)
            .take(excess)
            .collect();
        for id in &old {
            self.jobs.remove(id);
        }
        self.order.retain(|id| self.jobs.contains_key(id));
    }

    fn slice(&self) -> Duration {
        Duration::from_secs_f64(self.m.policy.time_slice().unwrap_or(self.m.config.tick))
    }

    fn event_loop(&mut self, rx: &mpsc::Receiver<MmEvent>) {
        let lead = Duration::from_secs_f64(self.m.config.heartbeat_lead);
        let deadline = self.m.config.time_limit.map(|l| self.t0 + l);
        let first = self.admit();
        self.launch_all(&first);
        // The first slot starts as soon as the first jobs are launched.
        let mut next_switch = Instant::now() + lead;
        loop {
            if self.finished() {
                return;
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                self.notices
                    .push("the run's time limit was reached: every job was stopped".into());
                self.stop_all();
            }
            let send_at = next_switch.checked_sub(lead).unwrap_or(next_switch);
            let next_arrival = self
                .jobs
                .values()
                .filter(|j| j.phase == Phase::Future)
                .map(|j| j.arrive_at)
                .min();
            let wake = next_arrival.map_or(send_at, |a| a.min(send_at));
            let ev = if wake > now {
                match rx.recv_timeout(wake - now) {
                    Ok(ev) => Some(ev),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            } else {
                None
            };
            let changed = match ev {
                Some(MmEvent::Node(n, e)) => self.node_event(n, e),
                Some(MmEvent::Control(req)) => {
                    self.control(req);
                    false
                }
                None => false,
            };
            let admitted = self.admit();
            if (changed || !admitted.is_empty())
                && self.m.policy.time_sharing() != TimeSharing::Gang
            {
                // Batch starts the next job at once; Uncoordinated jobs are
                // resident from their arrival. The heartbeat goes first so
                // that a new process starts runnable instead of being
                // suspended until the next one.
                self.heartbeat(Instant::now());
                next_switch = Instant::now() + self.slice();
                self.launch_all(&admitted);
            } else {
                self.launch_all(&admitted);
            }
            if Instant::now() >= send_at {
                self.heartbeat(next_switch);
                next_switch += self.slice();
                // A manager that fell behind skips slots instead of
                // sending a burst of stale ones.
                if next_switch < Instant::now() {
                    next_switch = Instant::now() + lead;
                }
            }
        }
    }

    fn finished(&self) -> bool {
        if self.m.config.serve && !self.shutdown {
            return false;
        }
        self.jobs.values().all(|j| j.phase == Phase::Done)
    }

    fn launch_all(&mut self, ids: &[JobId]) {
        for &id in ids {
            self.launch(id);
        }
    }

    /// Moves arrived jobs into the queue and places what fits in the
    /// matrix; returns the placed jobs, to be launched by the caller.
    fn admit(&mut self) -> Vec<JobId> {
        let now = Instant::now();
        for id in self.order.clone() {
            let j = self.jobs.get_mut(&id).expect("ordered jobs exist");
            if j.phase == Phase::Future && j.arrive_at <= now {
                j.phase = Phase::Queued;
                self.queue.push_back(id);
            }
        }
        let mut placed = Vec::new();
        while let Some(&id) = self.queue.front() {
            let (ranks, pes) = {
                let j = &self.jobs[&id];
                (j.spec.ranks, j.spec.pes.clone())
            };
            let packed = match &pes {
                Some(pes) => self.matrix.pack_on(id, pes),
                None => self.matrix.pack(id, ranks),
            };
            match packed {
                Ok(_) => {
                    self.queue.pop_front();
                    placed.push(id);
                }
                // FCFS: the head waits, and so does everyone behind it.
                Err(CoschedError::MatrixFull { .. }) => break,
                Err(e) => {
                    self.queue.pop_front();
                    let j = self.jobs.get_mut(&id).expect("queued jobs exist");
                    j.phase = Phase::Done;
                    j.outcome = Some(JobOutcome::Rejected {
                        reason: e.to_string(),
                    });
                    self.log(&format!("job {id} rejected: {e}"));
                }
            }
        }
        placed
    }

    fn launch(&mut self, id: JobId) {
        let placement = self.matrix.placement(id).expect("just packed").clone();
        let job = self.jobs.get_mut(&id).expect("job exists");
        let dirs = JobDir::create(&self.run_dir, id, job.owner);
        job.phase = Phase::Running;
        job.pes = placement.pes.clone();
        job.started = Some(Instant::now());
        let command: Vec<OsString> = match job.spec.command.split_first() {
            Some((first, rest)) if first == BSP_COMMAND => self
                .m
                .config
                .bsp_command
                .iter()
                .cloned()
                .chain(rest.iter().map(OsString::from))
                .collect(),
            _ => job.spec.command.iter().map(OsString::from).collect(),
        };
        let size = job.spec.ranks;
        let owner = job.owner;
        let name = job.spec.name.clone();
        let dirs = match dirs {
            Ok(d) => d,
            Err(e) => {
                // No rank can start without its files: each fails as a
                // rank that did not start would.
                for (rank, &pe) in placement.pes.iter().enumerate() {
                    let error = e.to_string();
                    self.node_event(
                        self.m.pe_home[pe].0,
                        NodeEvent::StartFailed { job: id, rank, error },
                    );
                }
                return;
            }
        };
        for (rank, &pe) in placement.pes.iter().enumerate() {
            let (node, local) = self.m.pe_home[pe];
            let launch = Launch {
                job: id,
                rank,
                size,
                pe: local,
                command: command.clone(),
                owner,
                rendezvous: dirs.rendezvous.clone(),
                page: shm::page_path(&self.m.config.shm_dir, owner.uid, id, rank),
                stderr: dirs.stderr(rank),
            };
            let _ = self.nodes[node].send(NodeMsg::Launch(Box::new(launch)));
        }
        self.log(&format!(
            "job {id} ({name}) placed in row {} on PEs {:?}",
            placement.row, placement.pes
        ));
    }

    /// Sends every node the heartbeat of the next slot, switching at `at`.
    fn heartbeat(&mut self, at: Instant) {
        self.row = match self.m.policy.time_sharing() {
            TimeSharing::Batch => 0,
            _ if self.slot == 0 => 0,
            _ => self.matrix.next_row(self.row),
        };
        if self.row >= self.matrix.rows() {
            self.row = 0;
        }
        for (n, tx) in self.nodes.iter().enumerate() {
            let cells = self
                .m
                .pe_home
                .iter()
                .enumerate()
                .filter(|(_, (node, _))| *node == n)
                .map(|(pe, _)| self.matrix.cell(self.row, pe))
                .collect();
            let _ = tx.send(NodeMsg::Heartbeat(Heartbeat {
                slot: self.slot,
                row: self.row,
                switch_at: at,
                cells,
            }));
        }
        self.slot += 1;
    }

    /// Handles a node event; true when the matrix changed.
    fn node_event(&mut self, node: usize, e: NodeEvent) -> bool {
        match e {
            NodeEvent::Notice(text) => {
                // Each notice is said once, on stderr and in the report.
                if !self.notices.contains(&text) {
                    let _ = writeln!(std::io::stderr(), "keel-cosched: {text}");
                    self.notices.push(text);
                }
                false
            }
            NodeEvent::Started { job, rank, pid } => {
                self.log(&format!(
                    "started job={job} rank={rank} pid={pid} node={node}"
                ));
                if let Some(j) = self.jobs.get_mut(&job) {
                    j.ranks[rank] = RankState::Running(pid);
                }
                false
            }
            NodeEvent::StartFailed { job, rank, error } => {
                self.log(&format!("job {job} rank {rank} did not start: {error}"));
                if let Some(j) = self.jobs.get_mut(&job) {
                    j.ranks[rank] = RankState::Gone;
                    if j.outcome.is_none() {
                        j.outcome = Some(JobOutcome::Failed {
                            rank,
                            reason: format!("did not start: {error}"),
                        });
                    }
                }
                self.end_job(job);
                self.maybe_done(job)
            }
            NodeEvent::Exited {
                job,
                rank,
                status,
                at,
                stderr_tail,
            } => {
                self.log(&format!("exited job={job} rank={rank} {status}"));
                let mut failed = false;
                if let Some(j) = self.jobs.get_mut(&job) {
                    j.ranks[rank] = RankState::Gone;
                    j.ended = Some(j.ended.map_or(at, |e| e.max(at)));
                    if !status.success() && j.outcome.is_none() {
                        let mut reason = status.to_string();
                        if let Some(t) = stderr_tail {
                            reason.push_str(&format!(": {t}"));
                        }
                        j.outcome = Some(JobOutcome::Failed { rank, reason });
                        failed = true;
                    }
                }
                if failed {
                    self.end_job(job);
                }
                self.maybe_done(job)
            }
            NodeEvent::Classified {
                job,
                rank,
                from,
                to,
                stats,
                ..
            } => {
                let t = self.secs(Instant::now());
                if let Some(j) = self.jobs.get_mut(&job) {
                    j.classes[rank] = to;
                    j.changes.push(ClassChange {
                        t,
                        rank,
                        from: from.to_string(),
                        to: to.to_string(),
                        avg_cpu: stats.0,
                        avg_comm: stats.1,
                    });
                }
                self.log(&format!(
                    "job {job} rank {rank}: {from} -> {to} (avg cpu {:.2} ms, avg comm {:.2} ms)",
                    stats.0 * 1e3,
                    stats.1 * 1e3
                ));
                false
            }
        }
    }

    /// Kills a job's processes (resuming them first) on every node.
    fn end_job(&mut self, id: JobId) {
        let Some(j) = self.jobs.get_mut(&id) else {
            return;
        };
        if matches!(j.phase, Phase::Running) {
            j.phase = Phase::Ending;
            let mut nodes: Vec<usize> = j.pes.iter().map(|&pe| self.m.pe_home[pe].0).collect();
            nodes.dedup();
            for n in nodes {
                let _ = self.nodes[n].send(NodeMsg::KillJob(id));
            }
        } else if matches!(j.phase, Phase::Future | Phase::Queued) {
            j.phase = Phase::Done;
            self.queue.retain(|q| *q != id);
        }
    }

    /// Frees a job's matrix slots once none of its processes is left;
    /// true when it did.
    fn maybe_done(&mut self, id: JobId) -> bool {
        let Some(j) = self.jobs.get_mut(&id) else {
            return false;
        };
        if !matches!(j.phase, Phase::Running | Phase::Ending)
            || j.ranks.iter().any(|r| *r != RankState::Gone)
        {
            return false;
        }
        j.phase = Phase::Done;
        if j.outcome.is_none() {
            j.outcome = Some(JobOutcome::Completed);
        }
        if j.ended.is_none() {
            j.ended = Some(Instant::now());
        }
        let _ = std::fs::remove_dir_all(self.run_dir.join(format!("job-{id}")));
        let _ = self.matrix.remove(id);
        self.log(&format!("job {id} done"));
        true
    }

    fn stop_all(&mut self) {
        self.shutdown = true;
        let ids: Vec<JobId> = self.jobs.keys().copied().collect();
        for id in ids {
            let j = self.jobs.get_mut(&id).expect("listed");
            if j.phase != Phase::Done && j.outcome.is_none() {
                j.outcome = Some(JobOutcome::Stopped);
            }
            self.end_job(id);
        }
    }

    fn control(&mut self, req: ControlRequest) {
        let reply = self.answer(&req);
        let _ = req.reply.send(reply);
    }

    fn answer(&mut self, req: &ControlRequest) -> String {
        let peer = req.peer;
        let job_of = |mm: &Self, id: JobId| -> Result<(), String> {
            let j = mm.jobs.get(&id).ok_or(format!("error: no job {id}"))?;
            control::authorize(peer.uid, j.owner.uid).map_err(|e| format!("error: {e}"))
        };
        match &req.command {
            ControlCommand::List => {
                let mut lines = vec!["ok".to_string()];
                for id in &self.order {
                    let j = &self.jobs[id];
                    if j.owner.uid == peer.uid {
                        lines.push(self.describe(j));
                    }
                }
                lines.join("\n")
            }
            ControlCommand::Status(id) => match job_of(self, *id) {
                Ok(()) => format!("ok\n{}", self.describe(&self.jobs[id])),
                Err(e) => e,
            },
            ControlCommand::Kill(id) => match job_of(self, *id) {
                Ok(()) => {
                    let j = self.jobs.get_mut(id).expect("checked");
                    if j.phase == Phase::Done {
                        return format!("error: job {id} has already ended");
                    }
                    if j.outcome.is_none() {
                        j.outcome = Some(JobOutcome::Killed { by_uid: peer.uid });
                    }
                    self.end_job(*id);
                    format!("ok killing job {id}")
                }
                Err(e) => e,
            },
            ControlCommand::Submit(line) => {
                let me = sys::geteuid();
                if me != 0 && peer.uid != me {
                    return format!(
                        "error: permission denied: this daemon runs as uid {me} and cannot run jobs for uid {}",
                        peer.uid
                    );
                }
                // Parsing bounds every field; the fit to this machine and the
                // number of live jobs are checked before `submit` allocates.
                let pes = self.m.pes();
                let parsed = JobSpec::parse_line(line).and_then(|s| s.check_fits(pes).map(|()| s));
                match parsed {
                    Ok(spec) => {
                        if self
                            .jobs
                            .values()
                            .any(|j| j.spec.name == spec.name && j.phase != Phase::Done)
                        {
                            return format!("error: a job named `{}` is still running", spec.name);
                        }
                        let live = self
                            .jobs
                            .values()
                            .filter(|j| j.phase != Phase::Done)
                            .count();
                        if live >= control::MAX_LIVE_JOBS {
                            return format!(
                                "error: {live} jobs have not ended, the limit of {} (MAX_LIVE_JOBS); try again later",
                                control::MAX_LIVE_JOBS
                            );
                        }
                        let id = self.submit(
                            spec,
                            Owner {
                                uid: peer.uid,
                                gid: peer.gid,
                            },
                        );
                        format!("ok submitted job {id}")
                    }
                    Err(e) => format!("error: {e}"),
                }
            }
            ControlCommand::Shutdown => {
                if peer.uid != sys::getuid() {
                    return format!(
                        "error: permission denied: only uid {} (the daemon's user) may shut it down",
                        sys::getuid()
                    );
                }
                self.stop_all();
                "ok shutting down".into()
            }
        }
    }

    fn describe(&self, j: &JobState) -> String {
        let phase = match j.phase {
            Phase::Future | Phase::Queued => "waiting",
            Phase::Running => "running",
            Phase::Ending => "ending",
            Phase::Done => "done",
        };
        let pids: Vec<String> = j
            .ranks
            .iter()
            .map(|r| match r {
                RankState::Running(p) => p.to_string(),
                _ => "-".into(),
            })
            .collect();
        let classes: Vec<&str> = j.classes.iter().map(|c| c.as_str()).collect();
        format!(
            "{} {} {} ranks={} pids={} classes={}",
            j.id,
            j.spec.name,
            phase,
            j.spec.ranks,
            pids.join(","),
            classes.join(",")
        )
    }

    fn report(&self) -> RunReport {
        let jobs: Vec<JobReport> = self
            .order
            .iter()
            .map(|id| {
                let j = &self.jobs[id];
                JobReport {
                    id: j.id,
                    name: j.spec.name.clone(),
                    ranks: j.spec.ranks,
                    pes: j.pes.clone(),
                    uid: j.owner.uid,
                    submitted: self.secs(j.arrive_at),
                    started: j.started.map(|t| self.secs(t)),
                    ended: j.ended.map(|t| self.secs(t)),
                    outcome: j.outcome.clone().unwrap_or(JobOutcome::Stopped),
                    classes: j.classes.iter().map(|c| c.to_string()).collect(),
                    class_changes: j.changes.clone(),
                }
            })
            .collect();
        let makespan = jobs.iter().filter_map(|j| j.ended).fold(0.0, f64::max);
        RunReport {
            policy: self.m.policy.spec().to_string(),
            time_slice: self.slice().as_secs_f64(),
            suspend: self.m.suspender.kind(),
            suspend_note: self.m.suspender.fallback_reason().map(str::to_string),
            notices: self.notices.clone(),
            slots: self.slot,
            jobs,
            makespan,
            background_load: None,
        }
    }
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
