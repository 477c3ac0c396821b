//! The machine manager as a network daemon (`keel-cosched mm`): node
//! managers connect to it, their Slurm tasks register through them, and it
//! packs each step into the Ousterhout matrix on the PEs Slurm put it on
//! and strobes every node with one heartbeat per slot (FCS paper, §2.1).
//!
//! Slurm launches the tasks; a step is packed once every one of its tasks
//! has registered, or [`STEP_GATHER`] after its first did (a task whose
//! registration failed must not hold the others back), and leaves the
//! matrix when every task ended or sits on a node that is down.
//!
//! A node whose connection drops is marked down; its tasks run unmanaged
//! (its NM resumes them) and the other nodes go on. When it reconnects it
//! reports its live tasks again and rejoins its steps' slots.

use std::collections::BTreeMap;
use std::io;
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use keel_policy::cosched::{self, CoschedPolicy, JobId, Matrix, TimeSharing};

use super::auth::Authenticator;
use super::report::{MmReport, SkewLog, StepRecord};
use super::wire::{Cell, ConnTx, Msg, PeerPolicy, StepId};
use crate::sys;

/// How long a step waits for all its tasks to register before it is
/// packed with those that did.
pub const STEP_GATHER: Duration = Duration::from_secs(10);
/// Most node managers one machine manager accepts.
pub const MAX_NODES: usize = 4096;
/// Most steps tracked at once (registered, packed or queued).
pub const MAX_STEPS: usize = 65_536;
/// How long a connecting NM has to complete the handshake and say hello.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(5);

/// The machine manager's settings.
#[derive(Debug, Clone)]
pub struct MmConfig {
    /// The cosched policy spec.
    pub policy: String,
    /// Slot length of policies without a time slice of their own.
    pub tick: Duration,
    /// How long before a switch its heartbeat leaves.
    pub lead: Duration,
    /// Stop after this many slots (`None`: until stopped).
    pub slots: Option<u64>,
    /// Log events on stderr.
    pub verbose: bool,
}

/// Why the machine manager could not run.
#[derive(Debug, thiserror::Error)]
pub enum MmError {
    /// The policy spec does not build.
    #[error("policy: {0}")]
    Policy(#[from] keel_policy::PolicyError),
    /// A setting is out of range.
    #[error("{0}")]
    Config(String),
    /// The listening socket failed.
    #[error("listening socket: {0}")]
    Io(#[from] io::Error),
}

type Link = Arc<Mutex<ConnTx>>;

mod accept;
use accept::accept;

enum Event {
    Joined {
        conn: u64,
        node: String,
        pes: u32,
        boot_id: String,
        link: Link,
    },
    Msg(u64, Msg),
    Left(u64, String),
}

struct Node {
    name: String,
    pes: usize,
    base: usize,
    conn: Option<(u64, Link)>,
    same_host: bool,
}

struct Step {
    id: StepId,
    size: u32,
    /// Registered ranks: (node index, node-local PE).
    ranks: BTreeMap<u32, (usize, u32)>,
    ended: Vec<u32>,
    first_seen: Instant,
    /// The matrix's rank order: Slurm rank of matrix rank `i`.
    order: Vec<u32>,
    packed: Option<Instant>,
    record: StepRecord,
}

struct Mm<'a> {
    cfg: &'a MmConfig,
    policy: Arc<dyn CoschedPolicy>,
    nodes: Vec<Node>,
    steps: BTreeMap<StepId, Step>,
    matrix: Matrix,
    row: usize,
    slot: u64,
    t0: Instant,
    boot_id: String,
    skew: SkewLog,
    report: MmReport,
}

/// The job id a step has in the matrix and the node managers.
pub fn job_of(step: StepId) -> JobId {
    (u64::from(step.job) << 32) | u64::from(step.step)
}

/// The step a [`job_of`] id names.
pub fn step_of(job: JobId) -> StepId {
    StepId {
        job: (job >> 32) as u32,
        step: job as u32,
    }
}

/// This host's boot id (`/proc/sys/kernel/random/boot_id`): hosts with
/// the same id share one monotonic clock.
pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Runs a machine manager on `listener` until `stop` is set or the
/// configured number of slots has passed.
pub fn run_machine_manager(
    cfg: &MmConfig,
    listener: TcpListener,
    auth: Arc<dyn Authenticator>,
    peer: PeerPolicy,
    stop: Arc<AtomicBool>,
) -> Result<MmReport, MmError> {
    let policy: Arc<dyn CoschedPolicy> = Arc::from(cosched::registry().build(&cfg.policy)?);
    let slot_s = policy.time_slice().unwrap_or(cfg.tick.as_secs_f64());
    if !(1e-3..=3600.0).contains(&slot_s) {
        return Err(MmError::Config(format!(
            "slot length {slot_s} s is outside 1 ms ..= 1 h"
        )));
    }
    if cfg.lead >= Duration::from_secs_f64(slot_s) {
        return Err(MmError::Config(format!(
            "heartbeat lead {:?} is not shorter than the slot ({slot_s} s)",
            cfg.lead
        )));
    }
    let (tx, rx) = mpsc::channel();
    listener.set_nonblocking(true)?;
    let accept_stop = Arc::clone(&stop);
    let welcome = (policy.spec().to_string(), (slot_s * 1e9) as u64);
    let acceptor = std::thread::Builder::new()
        .name("keel-mm-accept".into())
        .spawn(move || accept(listener, auth, peer, welcome, tx, accept_stop))?;
    let row_limit = (policy.time_sharing() == TimeSharing::Batch).then_some(1);
    let mut mm = Mm {
        cfg,
        nodes: Vec::new(),
        steps: BTreeMap::new(),
        matrix: matrix(0, row_limit),
        row: 0,
        slot: 0,
        t0: Instant::now(),
        boot_id: boot_id(),
        skew: SkewLog::default(),
        report: MmReport::new(policy.spec().to_string(), slot_s),
        policy,
    };
    mm.run(&rx, Duration::from_secs_f64(slot_s), &stop);
    stop.store(true, Ordering::Release);
    for n in &mm.nodes {
        if let Some((_, link)) = &n.conn {
            if let Ok(l) = link.lock() {
                l.shutdown();
            }
        }
    }
    let _ = acceptor.join();
    mm.report.skew = mm.skew.summary();
    mm.report.nodes = mm.nodes.iter().map(|n| n.name.clone()).collect();
    let open: Vec<StepRecord> = mm.steps.values().map(|s| s.record.clone()).collect();
    mm.report.steps.extend(open);
    Ok(mm.report)
}

fn matrix(pes: usize, row_limit: Option<usize>) -> Matrix {
    match row_limit {
        Some(r) => Matrix::with_row_limit(pes, r),
        None => Matrix::new(pes),
    }
}

impl Mm<'_> {
    fn log(&self, text: &str) {
        if self.cfg.verbose {
            eprintln!(
                "[{:9.4}] keel-cosched mm: {text}",
                self.t0.elapsed().as_secs_f64()
            );
        }
    }

    fn run(&mut self, rx: &Receiver<Event>, slot: Duration, stop: &AtomicBool) {
        let mut next_switch = Instant::now() + self.cfg.lead;
        loop {
            if stop.load(Ordering::Acquire) || self.cfg.slots.is_some_and(|n| self.slot >= n) {
                return;
            }
            let send_at = next_switch
                .checked_sub(self.cfg.lead)
                .unwrap_or(next_switch);
            let now = Instant::now();
            if now < send_at {
                let wait = (send_at - now).min(Duration::from_millis(100));
                match rx.recv_timeout(wait) {
                    Ok(ev) => self.event(ev),
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => return,
                }
                self.gather_overdue();
                continue;
            }
            self.heartbeat(next_switch);
            next_switch += slot;
            // A manager that fell behind skips slots rather than sending
            // a burst of stale ones.
            if next_switch < Instant::now() + self.cfg.lead / 2 {
                next_switch = Instant::now() + self.cfg.lead;
            }
        }
    }

    fn node_of_conn(&self, conn: u64) -> Option<usize> {
        self.nodes
            .iter()
            .position(|n| n.conn.as_ref().is_some_and(|(c, _)| *c == conn))
    }

    fn event(&mut self, ev: Event) {
        match ev {
            Event::Joined {
                conn,
                node,
                pes,
                boot_id,
                link,
            } => self.joined(conn, node, pes as usize, boot_id, link),
            Event::Left(conn, why) => {
                if let Some(i) = self.node_of_conn(conn) {
                    self.nodes[i].conn = None;
                    let text = format!("node {} is down: {why}", self.nodes[i].name);
                    self.log(&text);
                    self.report.notices.push(text);
                    self.retire_finished();
                }
            }
            Event::Msg(conn, msg) => {
                if let Some(i) = self.node_of_conn(conn) {
                    self.message(i, msg);
                }
            }
        }
    }

    fn joined(&mut self, conn: u64, name: String, pes: usize, boot_id: String, link: Link) {
        let same_host = !boot_id.is_empty() && boot_id == self.boot_id;
        let refuse = |why: String| {
            if let Ok(mut l) = link.lock() {
                let _ = l.send(&Msg::Refused { reason: why });
                l.shutdown();
            }
        };
        match self.nodes.iter().position(|n| n.name == name) {
            Some(i) if self.nodes[i].conn.is_some() => {
                refuse(format!("node {name} is connected already"));
            }
            Some(i) if self.nodes[i].pes != pes => refuse(format!(
                "node {name} came back with {pes} PEs instead of {}",
                self.nodes[i].pes
            )),
            Some(i) => {
                self.nodes[i].conn = Some((conn, link));
                self.nodes[i].same_host = same_host;
                self.log(&format!("node {name} is back"));
                // It reports its live tasks again; the others ended.
                for s in self.steps.values_mut() {
                    let gone: Vec<u32> = s
                        .ranks
                        .iter()
                        .filter(|(_, (n, _))| *n == i)
                        .map(|(r, _)| *r)
                        .collect();
                    for r in gone {
                        if !s.ended.contains(&r) {
                            s.ended.push(r);
                        }
                    }
                }
            }
            None if self.nodes.len() >= MAX_NODES => {
                refuse(format!("this manager has {MAX_NODES} nodes already"));
            }
            None => {
                let base = self.nodes.iter().map(|n| n.pes).sum();
                self.nodes.push(Node {
                    name: name.clone(),
                    pes,
                    base,
                    conn: Some((conn, link)),
                    same_host,
                });
                self.log(&format!("node {name} joined with {pes} PEs"));
                self.repack();
            }
        }
    }

    fn message(&mut self, node: usize, msg: Msg) {
        match msg {
            Msg::TaskUp {
                step,
                rank,
                size,
                pe,
            } => self.task_up(node, step, rank, size, pe),
            Msg::TaskDown { step, rank, end } => {
                if let Some(s) = self.steps.get_mut(&step) {
                    if s.ranks.get(&rank).is_some_and(|(n, _)| *n == node)
                        && !s.ended.contains(&rank)
                    {
                        s.ended.push(rank);
                        s.record.ends.push(end);
                    }
                }
                self.retire_finished();
            }
            Msg::Classified {
                step,
                rank,
                class,
                slot,
            } => {
                self.log(&format!(
                    "step {step:?} rank {rank} is {class} from slot {slot}"
                ));
                if let Some(s) = self.steps.get_mut(&step) {
                    s.record.reclassified += 1;
                    if let Some(c) = s.record.classes.get_mut(rank as usize) {
                        *c = class;
                    }
                }
            }
            Msg::Enacted {
                slot,
                local_ns,
                mm_ns,
            } => {
                let same_host = self.nodes[node].same_host;
                self.skew.enacted(slot, node, local_ns, mm_ns, same_host);
            }
            Msg::Notice { text } => {
                let text = format!("node {}: {text}", self.nodes[node].name);
                self.log(&text);
                if !self.report.notices.contains(&text) {
                    self.report.notices.push(text);
                }
            }
            // What only an MM sends, or a second hello: ignored.
            _ => {}
        }
    }

    fn task_up(&mut self, node: usize, step: StepId, rank: u32, size: u32, pe: u32) {
        if pe as usize >= self.nodes[node].pes || rank >= size {
            return;
        }
        if !self.steps.contains_key(&step) {
            if self.steps.len() >= MAX_STEPS {
                self.report.notices.push(format!(
                    "step {step:?} not managed: {MAX_STEPS} steps tracked"
                ));
                return;
            }
            let now = Instant::now();
            self.steps.insert(
                step,
                Step {
                    id: step,
                    size,
                    ranks: BTreeMap::new(),
                    ended: Vec::new(),
                    first_seen: now,
                    order: Vec::new(),
                    packed: None,
                    record: StepRecord::new(step, size, now.duration_since(self.t0)),
                },
            );
        }
        let Some(s) = self.steps.get_mut(&step) else {
            return;
        };
        if s.size != size {
            return;
        }
        s.ranks.insert(rank, (node, pe));
        s.ended.retain(|r| *r != rank);
        if s.packed.is_some() {
            // A node that came back: its cells are the same PEs.
            return;
        }
        if s.ranks.len() == s.size as usize {
            self.pack(step);
        }
    }

    /// Packs steps whose tasks did not all register in time.
    fn gather_overdue(&mut self) {
        let overdue: Vec<StepId> = self
            .steps
            .values()
            // A complete step that waits for PEs (a batch policy) is not
            // gathering: it is packed when a step ends.
            .filter(|s| {
                s.packed.is_none()
                    && s.ranks.len() < s.size as usize
                    && s.first_seen.elapsed() >= STEP_GATHER
            })
            .map(|s| s.id)
            .collect();
        for id in overdue {
            let text = format!(
                "step {}.{}: {} of {} tasks registered within {:?}; packed without the others",
                id.job,
                id.step,
                self.steps[&id].ranks.len(),
                self.steps[&id].size,
                STEP_GATHER
            );
            self.log(&text);
            self.report.notices.push(text);
            self.pack(id);
        }
    }

    fn global_pes(&self, s: &Step) -> Vec<usize> {
        s.order
            .iter()
            .map(|r| {
                let (n, pe) = s.ranks[r];
                self.nodes[n].base + pe as usize
            })
            .collect()
    }

    fn pack(&mut self, id: StepId) {
        let Some(s) = self.steps.get_mut(&id) else {
            return;
        };
        s.order = s.ranks.keys().copied().collect();
        let pes = self.global_pes(&self.steps[&id]);
        match self.matrix.pack_on(job_of(id), &pes) {
            Ok(row) => {
                let now = Instant::now();
                let t = now.duration_since(self.t0);
                let s = self.steps.get_mut(&id).expect("present");
                s.packed = Some(now);
                s.record.packed_s = Some(t.as_secs_f64());
                self.log(&format!(
                    "step {}.{} packed in row {row} on PEs {pes:?}",
                    id.job, id.step
                ));
            }
            Err(e) => {
                // Batch: it waits for PEs (its tasks stay suspended);
                // anything else is reported and the step waits as well.
                self.log(&format!("step {}.{} waits: {e}", id.job, id.step));
            }
        }
    }

    /// Rebuilds the matrix for the current nodes, placing packed steps
    /// again in the order they were packed.
    fn repack(&mut self) {
        let pes = self.nodes.iter().map(|n| n.pes).sum();
        let row_limit = self.matrix.row_limit();
        self.matrix = matrix(pes, row_limit);
        let mut packed: Vec<(Instant, StepId)> = self
            .steps
            .values()
            .filter_map(|s| s.packed.map(|t| (t, s.id)))
            .collect();
        packed.sort();
        for (_, id) in packed {
            let pes = self.global_pes(&self.steps[&id]);
            if self.matrix.pack_on(job_of(id), &pes).is_err() {
                if let Some(s) = self.steps.get_mut(&id) {
                    s.packed = None;
                }
            }
        }
        self.row = 0;
    }

    /// Removes steps whose every task ended or sits on a down node, then
    /// packs waiting steps that now fit.
    fn retire_finished(&mut self) {
        let done: Vec<StepId> = self
            .steps
            .values()
            .filter(|s| {
                s.packed.is_some()
                    && s.ranks
                        .iter()
                        .all(|(r, (n, _))| s.ended.contains(r) || self.nodes[*n].conn.is_none())
            })
            .map(|s| s.id)
            .collect();
        for id in &done {
            let _ = self.matrix.remove(job_of(*id));
            if let Some(mut s) = self.steps.remove(id) {
                s.record.ended_s = Some(self.t0.elapsed().as_secs_f64());
                self.log(&format!("step {}.{} ended", id.job, id.step));
                self.report.steps.push(s.record);
            }
        }
        if !done.is_empty() {
            let waiting: Vec<StepId> = self
                .steps
                .values()
                .filter(|s| s.packed.is_none() && s.ranks.len() == s.size as usize)
                .map(|s| s.id)
                .collect();
            for id in waiting {
                self.pack(id);
            }
        }
    }

    fn heartbeat(&mut self, at: Instant) {
        self.row = match self.policy.time_sharing() {
            TimeSharing::Batch => 0,
            _ if self.slot == 0 => 0,
            _ => self.matrix.next_row(self.row),
        };
        if self.row >= self.matrix.rows() {
            self.row = 0;
        }
        let switch_at_ns =
            sys::monotonic_ns() + at.saturating_duration_since(Instant::now()).as_nanos() as u64;
        self.skew.switch(self.slot, switch_at_ns);
        for n in &self.nodes {
            let Some((_, link)) = &n.conn else {
                continue;
            };
            let cells = (0..n.pes)
                .map(|pe| {
                    let (job, i) = self.matrix.cell(self.row, n.base + pe)?;
                    let step = step_of(job);
                    let rank = *self.steps.get(&step)?.order.get(i)?;
                    Some(Cell { step, rank })
                })
                .collect();
            let hb = Msg::Heartbeat {
                slot: self.slot,
                row: self.row as u32,
                switch_at_ns,
                cells,
            };
            if let Ok(mut l) = link.lock() {
                // A failed send shows up as the reader's `Left`.
                let _ = l.send(&hb);
            }
        }
        self.report.slots = self.slot + 1;
        self.slot += 1;
    }
}
