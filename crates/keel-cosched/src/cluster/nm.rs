//! The node manager as a network daemon (`keel-cosched nm`), one per
//! node: it connects to the machine manager, estimates its clock offset to
//! the MM's (NTP's on-wire exchange, `keel_policy::cosched::clock`),
//! adopts the Slurm tasks the SPANK plugin registers on its socket and
//! enacts the MM's heartbeats on them at the switch instant, converted to
//! its own clock (FCS paper, §2.5).
//!
//! Heartbeats that stop (the MM died, the network split) make the NM stop
//! suspending: after [`MISSED_HEARTBEATS`] slots without one, every task
//! runs until heartbeats return, and the MM is told when they do. The NM
//! never kills a task: Slurm launched it and Slurm ends it; a task being
//! cancelled (an ending signal pending) is resumed and never stopped
//! again; if the NM itself dies, each task's guardian resumes it.

use std::collections::BTreeMap;
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use keel_policy::cosched::clock::{ClockEstimate, ClockEstimator, ClockSample};
use keel_policy::cosched::{self, CoschedPolicy};

use super::auth::Authenticator;
use super::mm::{boot_id, job_of, step_of};
use super::register::{self, Registration, Reply};
use super::wire::{self, ConnTx, Msg, PeerPolicy, Role, StepId, TaskEnd};
use crate::guardian::ManagerExit;
use crate::node::Adopt;
use crate::node::{
    ExitKind, ExitWatch, Heartbeat, NodeConfig, NodeEvent, NodeManager, NodeMsg, Owner,
};
use crate::rundir::RunDir;
use crate::shm::page_path;
use crate::suspend::{SuspendChoice, Suspender};
use crate::sys::{self, PeerCred};

/// Slots without a heartbeat after which every task runs.
pub const MISSED_HEARTBEATS: u32 = 4;
/// The shortest wait for a heartbeat before tasks run unmanaged, whatever
/// the slot length.
pub const MIN_SILENCE: Duration = Duration::from_millis(200);
/// Clock probes sent at (re)connection, 20 ms apart, before the first
/// heartbeat is trusted.
pub const FIRST_PROBES: u32 = 8;
/// Period of clock probes once the estimate stands.
pub const PROBE_PERIOD: Duration = Duration::from_millis(250);
/// How long a registration waits for the node manager thread.
pub const ADOPT_TIMEOUT: Duration = Duration::from_secs(2);

/// The node manager's settings.
#[derive(Debug, Clone)]
pub struct NmConfig {
    /// Node name (Slurm's `SLURMD_NODENAME`).
    pub node: String,
    /// The MM's address, `host:port`.
    pub mm: String,
    /// The CPU of each PE.
    pub cpus: Vec<usize>,
    /// The registration socket.
    pub socket: PathBuf,
    /// Where the run directory (the tasks' pages) is created.
    pub run_parent: PathBuf,
    /// Nice value of boosted (F) tasks.
    pub boost_nice: i32,
    /// Try `SCHED_FIFO` for the enacting thread.
    pub realtime: bool,
    /// Added to this node's clock as the protocol sees it: tests give
    /// nodes on one host different clocks so that the offset estimate is
    /// exercised. 0 in service.
    pub clock_offset_ns: i64,
    /// Log on stderr.
    pub verbose: bool,
}

/// Why the node manager stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum NmError {
    /// A setting is unusable.
    #[error("{0}")]
    Config(String),
    /// A local resource (socket, run directory) failed.
    #[error("{0}")]
    Io(String),
}

/// A live task as the MM must know it (sent again after a reconnection).
#[derive(Clone, Copy, Debug)]
struct Task {
    size: u32,
    pe: u32,
}

/// What the threads of a node manager share.
struct Shared {
    cfg: NmConfig,
    link: Mutex<Option<ConnTx>>,
    clock: Mutex<ClockEstimator>,
    tasks: Mutex<BTreeMap<(StepId, u32), Task>>,
    inbox: Mutex<Option<Sender<NodeMsg>>>,
    /// The MM's policy, as the enacting thread was built with it: set once,
    /// when that thread starts, and kept across reconnections.
    policy: OnceLock<String>,
    t0: Instant,
}

impl Shared {
    /// This node's clock as the protocol sees it, ns.
    fn wire_ns(&self) -> u64 {
        (sys::monotonic_ns() as i64).saturating_add(self.cfg.clock_offset_ns) as u64
    }

    fn send(&self, msg: &Msg) {
        if let Ok(mut l) = self.link.lock() {
            if let Some(tx) = l.as_mut() {
                if tx.send(msg).is_err() {
                    tx.shutdown();
                    *l = None;
                }
            }
        }
    }

    fn log(&self, text: &str) {
        if self.cfg.verbose {
            eprintln!(
                "[{:9.4}] keel-cosched nm {}: {text}",
                self.t0.elapsed().as_secs_f64(),
                self.cfg.node
            );
        }
    }

    fn estimate(&self) -> Option<ClockEstimate> {
        self.clock.lock().ok()?.estimate()
    }

    fn to_node(&self, msg: NodeMsg) -> bool {
        match self.inbox.lock() {
            Ok(i) => i.as_ref().is_some_and(|tx| tx.send(msg).is_ok()),
            Err(_) => false,
        }
    }
}

/// Runs a node manager until `stop` is set. Tasks are left running.
pub fn run_node_manager(
    cfg: NmConfig,
    auth: Arc<dyn Authenticator>,
    peer: PeerPolicy,
    stop: Arc<AtomicBool>,
) -> Result<(), NmError> {
    if cfg.cpus.is_empty() || cfg.cpus.len() > wire::MAX_CELLS {
        return Err(NmError::Config(format!(
            "a node needs 1 ..= {} CPUs, not {}",
            wire::MAX_CELLS,
            cfg.cpus.len()
        )));
    }
    let run = RunDir::create(&cfg.run_parent).map_err(|e| {
        NmError::Io(format!(
            "cannot create a run directory in {}: {e}",
            cfg.run_parent.display()
        ))
    })?;
    let shared = Arc::new(Shared {
        cfg,
        link: Mutex::new(None),
        clock: Mutex::new(ClockEstimator::new()),
        tasks: Mutex::new(BTreeMap::new()),
        inbox: Mutex::new(None),
        policy: OnceLock::new(),
        t0: Instant::now(),
    });
    let handler_shared = Arc::clone(&shared);
    let run_path = run.path().to_path_buf();
    let server = register::serve(
        &shared.cfg.socket,
        Box::new(move |reg, peer| registered(&handler_shared, &run_path, reg, peer)),
    )
    .map_err(|e| {
        NmError::Io(format!(
            "registration socket {}: {e}",
            shared.cfg.socket.display()
        ))
    })?;
    let mut manager: Option<std::thread::JoinHandle<()>> = None;
    let mut forwarder: Option<std::thread::JoinHandle<()>> = None;
    let mut backoff = Duration::from_millis(50);
    while !stop.load(Ordering::Acquire) {
        match connect(&shared, &auth, peer) {
            Ok((rx, policy, slot)) => {
                backoff = Duration::from_millis(50);
                if manager.is_none() {
                    match start_manager(&shared, &policy) {
                        Ok((m, f)) => {
                            manager = Some(m);
                            forwarder = Some(f);
                        }
                        Err(e) => {
                            drop(server);
                            return Err(e);
                        }
                    }
                }
                resend_tasks(&shared);
                serve_mm(&shared, rx, slot, &stop);
                shared.to_node(NodeMsg::Detach);
            }
            Err(e) => {
                shared.log(&format!("cannot reach the machine manager: {e}"));
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
        }
    }
    drop(server);
    if let Ok(mut l) = shared.link.lock() {
        if let Some(tx) = l.take() {
            tx.shutdown();
        }
    }
    shared.to_node(NodeMsg::Shutdown);
    if let Ok(mut i) = shared.inbox.lock() {
        i.take();
    }
    if let Some(m) = manager {
        let _ = m.join();
    }
    if let Some(f) = forwarder {
        let _ = f.join();
    }
    drop(run);
    Ok(())
}

/// Connects, greets and learns the MM's policy; the receiving half.
fn connect(
    shared: &Shared,
    auth: &Arc<dyn Authenticator>,
    peer: PeerPolicy,
) -> Result<(wire::ConnRx, String, Duration), String> {
    let addr = shared
        .cfg
        .mm
        .to_socket_addrs()
        .map_err(|e| format!("{}: {e}", shared.cfg.mm))?
        .next()
        .ok_or_else(|| format!("{} names no address", shared.cfg.mm))?;
    let stream =
        TcpStream::connect_timeout(&addr, Duration::from_secs(2)).map_err(|e| e.to_string())?;
    let (mut tx, mut rx) = wire::handshake(
        stream,
        Role::Nm,
        Arc::clone(auth),
        peer,
        Duration::from_secs(5),
    )
    .map_err(|e| e.to_string())?;
    tx.send(&Msg::Hello {
        node: shared.cfg.node.clone(),
        pes: shared.cfg.cpus.len() as u32,
        boot_id: boot_id(),
    })
    .map_err(|e| e.to_string())?;
    let (policy, slot) = match rx.recv(Some(Duration::from_secs(5))) {
        Ok(Some(Msg::Welcome {
            policy, slot_ns, ..
        })) => (policy, Duration::from_nanos(slot_ns.min(3_600_000_000_000))),
        Ok(Some(Msg::Refused { reason })) => return Err(format!("refused: {reason}")),
        Ok(_) => return Err("no welcome from the machine manager".into()),
        Err(e) => return Err(e.to_string()),
    };
    if let Ok(mut c) = shared.clock.lock() {
        // The path may have changed with the connection.
        c.clear();
    }
    if let Ok(mut l) = shared.link.lock() {
        *l = Some(tx);
    }
    shared.log(&format!("connected to {} ({policy})", shared.cfg.mm));
    Ok((rx, policy, slot))
}

/// Starts the enacting thread with the MM's policy, and the thread that
/// forwards its events to the MM.
fn start_manager(
    shared: &Arc<Shared>,
    policy_spec: &str,
) -> Result<(std::thread::JoinHandle<()>, std::thread::JoinHandle<()>), NmError> {
    let policy: Arc<dyn CoschedPolicy> = Arc::from(
        cosched::registry()
            .build(policy_spec)
            .map_err(|e| NmError::Config(format!("the MM's policy {policy_spec}: {e}")))?,
    );
    // Signals: a Slurm task is not ours to move into a cgroup.
    let suspender =
        Arc::new(Suspender::new(SuspendChoice::Signals).map_err(|e| NmError::Config(e.0))?);
    let (tx, rx) = mpsc::channel();
    let (etx, erx) = mpsc::channel();
    let cfg = NodeConfig {
        id: 0,
        cpus: shared.cfg.cpus.clone(),
        boost_nice: shared.cfg.boost_nice,
        pdeathsig: false,
        on_manager_exit: ManagerExit::Resume,
        realtime: shared.cfg.realtime,
        report_switches: true,
    };
    let inbox = tx.clone();
    let exits = Arc::new(
        ExitWatch::start()
            .map_err(|e| NmError::Io(format!("cannot start watching the tasks' ends: {e}")))?,
    );
    let manager = std::thread::Builder::new()
        .name("keel-nm".into())
        .spawn(move || NodeManager::run(cfg, policy, suspender, rx, inbox, etx, exits))
        .map_err(|e| NmError::Io(format!("cannot start the node manager thread: {e}")))?;
    if let Ok(mut i) = shared.inbox.lock() {
        *i = Some(tx);
    }
    // This runs once per node manager, while no enacting thread exists:
    // the cell is still empty here.
    let _ = shared.policy.set(policy_spec.to_string());
    let fwd = Arc::clone(shared);
    let forwarder = std::thread::Builder::new()
        .name("keel-nm-events".into())
        .spawn(move || forward_events(&fwd, erx))
        .map_err(|e| NmError::Io(format!("cannot start the event thread: {e}")))?;
    Ok((manager, forwarder))
}

fn resend_tasks(shared: &Shared) {
    let tasks: Vec<_> = match shared.tasks.lock() {
        Ok(t) => t.iter().map(|(k, v)| (*k, *v)).collect(),
        Err(_) => return,
    };
    for ((step, rank), t) in tasks {
        shared.send(&Msg::TaskUp {
            step,
            rank,
            size: t.size,
            pe: t.pe,
        });
    }
}

/// Reads the MM until the connection fails or `stop`: clock answers,
/// heartbeats (converted to this node's clock), and the silence watchdog.
fn serve_mm(shared: &Arc<Shared>, mut rx: wire::ConnRx, slot: Duration, stop: &AtomicBool) {
    let mut last_heartbeat = Instant::now();
    let silence = (slot * MISSED_HEARTBEATS).max(MIN_SILENCE);
    let mut detached = false;
    let mut probes_sent = 0u32;
    let mut next_probe = Instant::now();
    loop {
        if stop.load(Ordering::Acquire) {
            return;
        }
        let now = Instant::now();
        if now >= next_probe {
            probes_sent += 1;
            shared.send(&Msg::Ping {
                id: u64::from(probes_sent),
                sent_ns: shared.wire_ns(),
            });
            next_probe = now
                + if probes_sent < FIRST_PROBES {
                    Duration::from_millis(20)
                } else {
                    PROBE_PERIOD
                };
        }
        if !detached && last_heartbeat.elapsed() >= silence {
            detached = true;
            shared.to_node(NodeMsg::Detach);
            let text = format!(
                "no heartbeat for {:.0} ms: every task runs until the machine manager is heard again",
                last_heartbeat.elapsed().as_secs_f64() * 1e3
            );
            shared.log(&text);
        }
        let wait = next_probe
            .saturating_duration_since(Instant::now())
            .min(Duration::from_millis(50))
            .max(Duration::from_millis(1));
        let msg = match rx.recv(Some(wait)) {
            Ok(Some(m)) => m,
            Ok(None) => continue,
            Err(e) => {
                shared.log(&format!("machine manager connection lost: {e}"));
                if let Ok(mut l) = shared.link.lock() {
                    if let Some(tx) = l.take() {
                        tx.shutdown();
                    }
                }
                return;
            }
        };
        match msg {
            Msg::Pong {
                ping_sent_ns,
                received_ns,
                sent_ns,
                ..
            } => {
                let returned = shared.wire_ns();
                let sample = ClockSample {
                    sent: ping_sent_ns as f64 * 1e-9,
                    received: received_ns as f64 * 1e-9,
                    replied: sent_ns as f64 * 1e-9,
                    returned: returned as f64 * 1e-9,
                };
                if let Ok(mut c) = shared.clock.lock() {
                    c.add(sample);
                }
            }
            Msg::Heartbeat {
                slot,
                row,
                switch_at_ns,
                cells,
            } => {
                let Some(est) = shared.estimate() else {
                    continue;
                };
                if cells.len() != shared.cfg.cpus.len() {
                    continue;
                }
                let local = est.to_local(switch_at_ns as f64 * 1e-9);
                let ahead = local - shared.wire_ns() as f64 * 1e-9;
                let switch_at = if ahead > 0.0 {
                    Instant::now() + Duration::from_secs_f64(ahead.min(3600.0))
                } else {
                    Instant::now()
                };
                let cells = cells
                    .iter()
                    .map(|c| c.map(|c| (job_of(c.step), c.rank as usize)))
                    .collect();
                shared.to_node(NodeMsg::Heartbeat(Heartbeat {
                    slot,
                    row: row as usize,
                    switch_at,
                    cells,
                }));
                if detached {
                    detached = false;
                    shared.log("heartbeats are back: tasks are gang-scheduled again");
                    shared.send(&Msg::Notice {
                        text: format!(
                            "tasks ran unmanaged for {:.0} ms without heartbeats",
                            last_heartbeat.elapsed().as_secs_f64() * 1e3
                        ),
                    });
                }
                last_heartbeat = Instant::now();
            }
            Msg::Refused { reason } => {
                shared.log(&format!("refused by the machine manager: {reason}"));
                return;
            }
            _ => {}
        }
    }
}

fn forward_events(shared: &Shared, rx: Receiver<(usize, NodeEvent)>) {
    let t_mono = Instant::now();
    let ns_mono = sys::monotonic_ns();
    for (_, e) in rx {
        match e {
            NodeEvent::Switched { slot, at } => {
                // `at` on the monotonic clock, then as the MM's clock.
                let local_ns = if at >= t_mono {
                    ns_mono + at.duration_since(t_mono).as_nanos() as u64
                } else {
                    ns_mono.saturating_sub(t_mono.duration_since(at).as_nanos() as u64)
                };
                let wire = (local_ns as i64).saturating_add(shared.cfg.clock_offset_ns);
                let Some(est) = shared.estimate() else {
                    continue;
                };
                let mm_ns = (est.to_manager(wire as f64 * 1e-9) * 1e9).round() as i64;
                shared.send(&Msg::Enacted {
                    slot,
                    local_ns,
                    mm_ns,
                });
            }
            NodeEvent::Exited {
                job, rank, status, ..
            } => {
                let step = step_of(job);
                let rank = rank as u32;
                if let Ok(mut t) = shared.tasks.lock() {
                    t.remove(&(step, rank));
                }
                let end = if status == ExitKind::Unobserved {
                    TaskEnd::Exited
                } else {
                    TaskEnd::Released
                };
                shared.send(&Msg::TaskDown { step, rank, end });
            }
            NodeEvent::Classified {
                job,
                rank,
                to,
                slot,
                ..
            } => {
                shared.send(&Msg::Classified {
                    step: step_of(job),
                    rank: rank as u32,
                    class: to.as_str().to_string(),
                    slot,
                });
            }
            NodeEvent::Notice(text) => {
                shared.log(&text);
                shared.send(&Msg::Notice { text });
            }
            NodeEvent::Started { .. } | NodeEvent::StartFailed { .. } => {}
        }
    }
}

/// The registration handler: checks what the NM can enact, adopts the
/// task and tells the MM.
fn registered(shared: &Shared, run: &std::path::Path, reg: Registration, peer: PeerCred) -> Reply {
    let refuse = |reason: String| {
        shared.log(&format!(
            "task {}.{} rank {} refused: {reason}",
            reg.job, reg.step, reg.rank
        ));
        Reply::Refused { reason }
    };
    let Some(policy) = shared.policy.get() else {
        return refuse(format!(
            "the node manager on {} is not connected to its machine manager yet",
            shared.cfg.node
        ));
    };
    if let Some(asked) = &reg.policy {
        let name = policy.split(':').next().unwrap_or("");
        if asked != name && asked != policy {
            return refuse(format!(
                "--keel-cosched={asked} asked, but this cluster's machine manager runs {policy}"
            ));
        }
    }
    let pes = shared.cfg.cpus.len() as u32;
    if reg.local_size > pes {
        return refuse(format!(
            "{} tasks of the step on node {} with {pes} PEs: Keel gang-schedules one task per PE \
             (ask for at most {pes} tasks per node)",
            reg.local_size, shared.cfg.node
        ));
    }
    let step = StepId {
        job: reg.job,
        step: reg.step,
    };
    let pe = reg.local_rank;
    let job = job_of(step);
    let (done, result) = mpsc::channel();
    let adopt = Adopt {
        job,
        rank: reg.rank as usize,
        pe: pe as usize,
        pid: peer.pid,
        owner: Owner {
            uid: reg.uid,
            gid: reg.gid,
        },
        page: page_path(run, reg.uid, job, reg.rank as usize),
        done,
    };
    let page = adopt.page.clone();
    if !shared.to_node(NodeMsg::Adopt(Box::new(adopt))) {
        return refuse("the node manager is stopping".into());
    }
    match result.recv_timeout(ADOPT_TIMEOUT) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return refuse(e),
        Err(_) => return refuse("the node manager did not answer in time".into()),
    }
    if let Ok(mut t) = shared.tasks.lock() {
        t.insert((step, reg.rank), Task { size: reg.size, pe });
    }
    shared.send(&Msg::TaskUp {
        step,
        rank: reg.rank,
        size: reg.size,
        pe,
    });
    shared.log(&format!(
        "task {}.{} rank {} (pid {}) on PE {pe}",
        reg.job, reg.step, reg.rank, peer.pid
    ));
    Reply::Accepted { page }
}
