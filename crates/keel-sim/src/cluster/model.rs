//! The cluster model's engine: BSP processes on PEs, a global strobe, the
//! nodes' local OS schedulers and the network, driven by any
//! `keel_policy::cosched` policy through its trait.
//!
//! # What happens, and when
//!
//! - **Jobs** arrive at their submission times. A time-sharing policy's
//!   machine manager packs each into the Ousterhout [`Matrix`] at once
//!   (`pack_on` for pinned jobs, first fit otherwise); FCFS (batch) packs
//!   into a one-row matrix, so the head of the queue waits until its PEs
//!   are free and everyone waits behind it.
//! - **Processes** repeat: compute (the job's cost for that rank and
//!   iteration, at the PE's speed, only while they hold the CPU), then a
//!   blocking exchange. Ending a compute phase sends the iteration's
//!   messages, which arrive `latency` later whatever the CPUs do (the NIC
//!   moves them: this is the overlap that lets a gang-scheduled job's
//!   messages complete during another job's slot); a barrier releases
//!   everyone `latency` after its last arrival. A process that finds its
//!   messages in leaves the wait at once; otherwise it waits in the mode
//!   its PE's current decision gives ([`WaitMode`]): *poll* keeps the CPU
//!   until the messages arrive or the process is preempted; *spin-block*
//!   polls until `spin` seconds after it entered the wait, then blocks
//!   (gives up the CPU until its messages arrive); *block* blocks at once.
//! - **Strobes** (gang policies): every time slice the machine manager
//!   moves to the next matrix row and each node manager asks the policy's
//!   [`CoschedPolicy::decide`] for each PE. The decision's runnable
//!   processes are resumed and every other process on the PE is suspended;
//!   an unchanged decision is not re-enacted (Algorithm 1's early return).
//!   Uncoordinated and batch policies are asked when a PE's residents
//!   change (a job starts or ends).
//! - **The local OS scheduler** time-shares a PE between the runnable
//!   processes the way the paper's Linux 2.4 kernel does: every process
//!   has a *counter*, the CPU time left of its time slice, spent while it
//!   runs (spinning included); the scheduler runs the runnable process
//!   with the largest counter (the first queued on ties), switches when the
//!   running one's counter is spent, and when every runnable counter is
//!   spent gives every process on the PE `counter / 2 + quantum` (so a
//!   process that blocks a lot keeps a larger counter and is favoured: a
//!   round-robin with a quantum among CPU-bound processes). A process woken
//!   by its messages preempts the running one at the PE's next OS tick if
//!   its counter is larger. A boosted process (FCS's F) always goes first,
//!   is never preempted and preempts at once when it wakes. A process that
//!   blocks or exits hands the CPU over at once. An exclusive decision (a
//!   CS or GS slot) leaves one process runnable, which runs alone and
//!   spends no counter.
//! - **Costs**: dispatching a process other than the one last on the PE
//!   costs the cluster's context switch; a woken process also pays the
//!   wake-up cost; under a classifying policy every blocking communication
//!   costs the monitoring layer's CPU time.
//! - **FCS**: each process's Table 1 counters ([`CommCounters`]) run all
//!   the time; at each strobe, every process of the slot that just ended
//!   goes through [`ProcessSched::finish_slot`] (Algorithm 2) with its
//!   statistics since its last reset, and is re-baselined when the policy
//!   says so. The class feeds the next decisions.
//!
//! Not modelled: memory and caches beyond the switch cost, message sizes
//! (every exchange costs one latency), contention in the network, OS
//! noise other than the jitter of the time slices, SMP migration between a
//! node's PEs (each process stays on the PE the matrix gives it).

use std::collections::VecDeque;

use keel_policy::cosched::{
    CoschedError, CoschedPolicy, FcsParams, JobId, Matrix, PeDecision, PeSlot, ProcRef,
    ProcessClass, ProcessSched, TimeSharing, WaitMode,
};
use keel_workloads::bsp::{BspJob, Pattern};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::comm::CommCounters;
use super::params::{CommClock, CoschedModel, CpuClock};
use super::run::{ClassChange, CoschedRun, JobResult, PeUsage, ProcessResult, RunSegment};
use crate::engine::EventQueue;
use crate::error::SimError;

/// Runs `jobs` on `model`'s machine under the policy built from `spec`
/// (`fcfs`, `gs`, `local`, `sb`, `fcs:cs-thresh=0.02`, ...).
pub fn simulate_spec(
    model: &CoschedModel,
    spec: &str,
    jobs: &[BspJob],
) -> Result<CoschedRun, SimError> {
    let policy = keel_policy::cosched::parse(spec).map_err(policy_error)?;
    simulate(model, policy.as_ref(), jobs)
}

/// Runs `jobs` (job `k` is `jobs[k]`) on `model`'s machine under `policy`.
pub fn simulate(
    model: &CoschedModel,
    policy: &dyn CoschedPolicy,
    jobs: &[BspJob],
) -> Result<CoschedRun, SimError> {
    let mut sim = Sim::new(model, policy, jobs)?;
    sim.run()?;
    Ok(sim.finish())
}

fn policy_error(e: CoschedError) -> SimError {
    SimError::Policy(e.to_string())
}

/// Class index in [`ProcessResult::class_time`].
fn class_index(c: ProcessClass) -> usize {
    match c {
        ProcessClass::Cs => 0,
        ProcessClass::F => 1,
        ProcessClass::Dc => 2,
    }
}

const CLASSES: [ProcessClass; 3] = [ProcessClass::Cs, ProcessClass::F, ProcessClass::Dc];

/// Events processed at one instant before the run is declared stalled (a
/// model bug, never a legitimate run).
const MAX_EVENTS_AT_ONE_TIME: u64 = 10_000_000;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// Not yet placed.
    Idle,
    /// Computing; seconds of work (at speed 1) left in this iteration.
    Compute { remaining: f64 },
    /// In the iteration's blocking exchange (since the process's
    /// `phase_since`).
    Wait,
    /// Exited.
    Done,
}

struct Proc {
    job: usize,
    rank: usize,
    pe: usize,
    iter: u64,
    phase: Phase,
    blocked: bool,
    woken: bool,
    eligible: bool,
    queued: bool,
    /// Messages (or barrier releases) arrived for iterations of each parity.
    arrived: [u32; 2],
    need: u32,
    neighbours: Vec<usize>,
    counters: CommCounters,
    base: CommCounters,
    iterations: u64,
    blocks: u64,
    sched: ProcessSched,
    class_time: [f64; 3],
    class_since: f64,
    /// The OS scheduler's counter: CPU seconds left of its time slice.
    counter: f64,
    /// Since when the node manager has kept it suspended, if it does.
    suspended_at: Option<f64>,
    /// When its current compute or wait phase began.
    phase_since: f64,
    /// Seconds of the current phase spent suspended.
    suspended_in_phase: f64,
    /// CPU seconds computing, whatever T_cpu's clock.
    cpu: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum JobPhase {
    Pending,
    Queued,
    Active,
    Finished,
}

struct Job {
    spec: BspJob,
    first: usize,
    phase: JobPhase,
    start: f64,
    end: f64,
    alive: usize,
    barrier: usize,
    pes: Vec<usize>,
}

struct Pe {
    speed: f64,
    running: Option<usize>,
    /// Whose context is on the CPU (no switch cost to resume it).
    loaded: Option<usize>,
    /// The current dispatch's switch/wake-up overhead ends here.
    busy_until: f64,
    /// Accounting done up to here.
    settled: f64,
    /// Every process placed on the PE (for the counters' recalculation).
    members: Vec<usize>,
    preempt_at: Option<f64>,
    queue: VecDeque<usize>,
    eligible: Vec<usize>,
    exclusive: bool,
    boosted: Option<usize>,
    wait: WaitMode,
    last: Option<PeDecision>,
    gen: u64,
    tick_phase: f64,
    segment_start: f64,
    compute: f64,
    spin: f64,
    overhead: f64,
}

#[derive(Debug, Clone, Copy)]
enum Event {
    Arrive(usize),
    Strobe,
    Pe { pe: usize, gen: u64 },
    Delivered { from: usize, iter: u64 },
    Release { job: usize, iter: u64 },
    JobDone(usize),
}

struct Sim<'a> {
    model: &'a CoschedModel,
    policy: &'a dyn CoschedPolicy,
    fcs: Option<FcsParams>,
    sharing: TimeSharing,
    slice: f64,
    monitor: f64,
    q: EventQueue<Event>,
    now: f64,
    rng: ChaCha8Rng,
    jobs: Vec<Job>,
    procs: Vec<Proc>,
    pes: Vec<Pe>,
    matrix: Matrix,
    batch_queue: VecDeque<usize>,
    row: Option<usize>,
    slot_jobs: Vec<usize>,
    strobe_pending: bool,
    finished: usize,
    time_limit: f64,
    changes: Vec<ClassChange>,
    segments: Vec<RunSegment>,
    strobes: u64,
    switches: u64,
}

impl<'a> Sim<'a> {
    fn new(
        model: &'a CoschedModel,
        policy: &'a dyn CoschedPolicy,
        specs: &[BspJob],
    ) -> Result<Self, SimError> {
        model.validate()?;
        let npes = model.cluster.pes();
        let sharing = policy.time_sharing();
        let slice = policy.time_slice().unwrap_or(model.cluster.time_slice);
        super::check_quantum("policy time slice", slice)?;
        let fcs = if policy.classifies() {
            policy.fcs_params().copied()
        } else {
            None
        };
        super::check_work(specs)?;
        let mut jobs = Vec::with_capacity(specs.len());
        let mut procs = Vec::new();
        let mut horizon = 0.0f64;
        let mut latest = 0.0f64;
        for (k, spec) in specs.iter().enumerate() {
            spec.validate().map_err(|e| {
                SimError::invalid("job", format!("job {k}: {e}"), "a valid BSP job")
            })?;
            if spec.processes > npes {
                return Err(SimError::invalid(
                    "job size",
                    format!("job {k} has {} processes", spec.processes),
                    "at most one process per PE of the cluster",
                ));
            }
            if let Some(pe) = spec.pes.iter().flatten().find(|&&pe| pe >= npes) {
                return Err(SimError::invalid(
                    "job placement",
                    format!("job {k} names PE {pe}"),
                    "PEs of the cluster (0 ..= PEs − 1)",
                ));
            }
            horizon += spec.dedicated_time(model.net.latency)
                * (1.0 + spec.variability)
                * if model.pe_speeds.is_empty() {
                    1.0
                } else {
                    1.0 / model
                        .pe_speeds
                        .iter()
                        .copied()
                        .fold(f64::INFINITY, f64::min)
                };
            latest = latest.max(spec.arrival);
            let first = procs.len();
            let p = spec.processes;
            for rank in 0..p {
                let (neighbours, need) = match spec.pattern {
                    _ if !spec.communicates() => (Vec::new(), 0),
                    Pattern::Barrier => (Vec::new(), 1),
                    pattern => {
                        let n: Vec<usize> = pattern
                            .neighbours(rank, p)
                            .into_iter()
                            .map(|r| first + r)
                            .collect();
                        let need = n.len() as u32;
                        (n, need)
                    }
                };
                procs.push(Proc {
                    job: k,
                    rank,
                    pe: usize::MAX,
                    iter: 0,
                    phase: Phase::Idle,
                    blocked: false,
                    woken: false,
                    eligible: false,
                    queued: false,
                    arrived: [0; 2],
                    need,
                    neighbours,
                    counters: CommCounters::default(),
                    base: CommCounters::default(),
                    iterations: 0,
                    blocks: 0,
                    sched: ProcessSched::new(),
                    class_time: [0.0; 3],
                    class_since: 0.0,
                    counter: 0.0,
                    suspended_at: None,
                    phase_since: 0.0,
                    suspended_in_phase: 0.0,
                    cpu: 0.0,
                });
            }
            jobs.push(Job {
                spec: spec.clone(),
                first,
                phase: JobPhase::Pending,
                start: 0.0,
                end: 0.0,
                alive: p,
                barrier: 0,
                pes: Vec::new(),
            });
        }
        let mut rng = ChaCha8Rng::seed_from_u64(model.seed);
        let pes = (0..npes)
            .map(|pe| Pe {
                speed: model.speed(pe),
                running: None,
                loaded: None,
                busy_until: 0.0,
                settled: 0.0,
                members: Vec::new(),
                preempt_at: None,
                queue: VecDeque::new(),
                eligible: Vec::new(),
                exclusive: false,
                boosted: None,
                wait: WaitMode::Poll,
                last: None,
                gen: 0,
                tick_phase: rng.gen_range(0.0..model.os.tick),
                segment_start: 0.0,
                compute: 0.0,
                spin: 0.0,
                overhead: 0.0,
            })
            .collect();
        let matrix = match sharing {
            TimeSharing::Batch => Matrix::with_row_limit(npes, 1),
            TimeSharing::Gang | TimeSharing::Uncoordinated => Matrix::new(npes),
        };
        let mut q = EventQueue::new();
        for (k, job) in jobs.iter().enumerate() {
            q.schedule(job.spec.arrival, Event::Arrive(k));
        }
        // Generous: every policy here finishes well within this unless the
        // model is broken; a broken model must end in an error, not a hang.
        let time_limit = latest + 1000.0 * (horizon + 100.0 * slice) + 1.0;
        Ok(Sim {
            model,
            policy,
            fcs,
            sharing,
            slice,
            monitor: if fcs.is_some() {
                model.monitor_cost
            } else {
                0.0
            },
            q,
            now: 0.0,
            rng,
            jobs,
            procs,
            pes,
            matrix,
            batch_queue: VecDeque::new(),
            row: None,
            slot_jobs: Vec::new(),
            strobe_pending: false,
            finished: 0,
            time_limit,
            changes: Vec::new(),
            segments: Vec::new(),
            strobes: 0,
            switches: 0,
        })
    }

    /// A tolerance for comparing times near `now`: 1 ns, or the rounding
    /// of `now` if larger.
    fn tol(&self) -> f64 {
        (self.now.abs() * 1e-12).max(1e-9)
    }

    fn run(&mut self) -> Result<(), SimError> {
        let mut last_t = f64::NEG_INFINITY;
        let mut same = 0u64;
        while self.finished < self.jobs.len() {
            let Some((t, ev)) = self.q.pop() else {
                return Err(SimError::invalid(
                    "workload",
                    format!("{} of {} jobs finished", self.finished, self.jobs.len()),
                    "every job must be able to finish (the model stalled)",
                ));
            };
            if t > self.time_limit {
                return Err(SimError::invalid(
                    "simulated time",
                    t,
                    "the run exceeded 1000 × its dedicated time (the model stalled)",
                ));
            }
            if t == last_t {
                same += 1;
                if same > MAX_EVENTS_AT_ONE_TIME {
                    return Err(SimError::invalid(
                        "events at one instant",
                        same,
                        "the model stalled in zero simulated time",
                    ));
                }
            } else {
                last_t = t;
                same = 0;
            }
            self.now = t;
            match ev {
                Event::Arrive(k) => self.arrive(k)?,
                Event::Strobe => self.strobe()?,
                Event::Pe { pe, gen } => {
                    if self.pes[pe].gen == gen {
                        self.service(pe)?;
                    }
                }
                Event::Delivered { from, iter } => {
                    for i in 0..self.procs[from].neighbours.len() {
                        let to = self.procs[from].neighbours[i];
                        self.deliver(to, iter)?;
                    }
                }
                Event::Release { job, iter } => {
                    let first = self.jobs[job].first;
                    for p in first..first + self.jobs[job].spec.processes {
                        self.deliver(p, iter)?;
                    }
                }
                Event::JobDone(k) => self.job_done(k)?,
            }
        }
        Ok(())
    }

    // -----------------------------------------------------------------
    // Jobs.

    fn arrive(&mut self, k: usize) -> Result<(), SimError> {
        match self.sharing {
            TimeSharing::Batch => {
                self.jobs[k].phase = JobPhase::Queued;
                self.batch_queue.push_back(k);
                self.start_batch()
            }
            TimeSharing::Gang => {
                self.place(k)?;
                self.activate(k);
                if !self.strobe_pending {
                    let boundary = (self.now / self.slice).ceil() * self.slice;
                    self.q.schedule(boundary.max(self.now), Event::Strobe);
                    self.strobe_pending = true;
                }
                Ok(())
            }
            TimeSharing::Uncoordinated => {
                self.place(k)?;
                self.activate(k);
                for pe in self.jobs[k].pes.clone() {
                    self.redecide(pe)?;
                }
                Ok(())
            }
        }
    }

    /// Packs job `k` into the matrix; `Ok(false)` when a row-limited matrix
    /// has no room yet.
    fn try_place(&mut self, k: usize) -> Result<bool, SimError> {
        let id = k as JobId;
        let packed = match &self.jobs[k].spec.pes {
            Some(pes) => self.matrix.pack_on(id, pes),
            None => self.matrix.pack(id, self.jobs[k].spec.processes),
        };
        match packed {
            Ok(_) => {}
            Err(CoschedError::MatrixFull { .. }) => return Ok(false),
            Err(e) => return Err(policy_error(e)),
        }
        let pes = self
            .matrix
            .placement(id)
            .map(|p| p.pes.clone())
            .ok_or_else(|| SimError::Policy(format!("job {k} vanished from the matrix")))?;
        let first = self.jobs[k].first;
        for (rank, &pe) in pes.iter().enumerate() {
            self.procs[first + rank].pe = pe;
            self.pes[pe].members.push(first + rank);
        }
        self.jobs[k].pes = pes;
        Ok(true)
    }

    fn place(&mut self, k: usize) -> Result<(), SimError> {
        if self.try_place(k)? {
            Ok(())
        } else {
            Err(SimError::Policy(format!("job {k} does not fit the matrix")))
        }
    }

    fn activate(&mut self, k: usize) {
        let now = self.now;
        let quantum = self.model.os.quantum;
        let job = &mut self.jobs[k];
        job.phase = JobPhase::Active;
        job.start = now;
        for rank in 0..job.spec.processes {
            let p = &mut self.procs[job.first + rank];
            p.phase = Phase::Compute {
                remaining: job.spec.compute(rank, 0),
            };
            p.class_since = now;
            p.phase_since = now;
            p.suspended_in_phase = 0.0;
            // A process starts at an arbitrary point of its time slice, so
            // the PEs' schedulers are not in phase.
            p.counter = quantum * (1.0 - self.rng.gen::<f64>());
        }
    }

    fn start_batch(&mut self) -> Result<(), SimError> {
        while let Some(&k) = self.batch_queue.front() {
            if !self.try_place(k)? {
                break;
            }
            self.batch_queue.pop_front();
            self.activate(k);
            for pe in self.jobs[k].pes.clone() {
                self.redecide(pe)?;
            }
        }
        Ok(())
    }

    fn job_done(&mut self, k: usize) -> Result<(), SimError> {
        self.matrix.remove(k as JobId).map_err(policy_error)?;
        match self.sharing {
            TimeSharing::Gang => Ok(()),
            TimeSharing::Uncoordinated => {
                for pe in self.jobs[k].pes.clone() {
                    self.redecide(pe)?;
                }
                Ok(())
            }
            TimeSharing::Batch => {
                for pe in self.jobs[k].pes.clone() {
                    self.redecide(pe)?;
                }
                self.start_batch()
            }
        }
    }

    // -----------------------------------------------------------------
    // Policy decisions.

    fn class_of(&self, job: JobId, rank: usize) -> ProcessClass {
        let first = self.jobs.get(job as usize).map_or(usize::MAX, |j| j.first);
        self.procs
            .get(first.wrapping_add(rank))
            .map_or(ProcessClass::Cs, |p| p.sched.class)
    }

    fn slot_for(&self, row: usize, pe: usize) -> PeSlot {
        self.matrix.pe_slot(row, pe, |j, r| self.class_of(j, r))
    }

    /// Asks the policy again for `pe` outside a strobe (a job started or
    /// ended there).
    fn redecide(&mut self, pe: usize) -> Result<(), SimError> {
        let row = match self.sharing {
            TimeSharing::Batch => 0,
            // No assigned process: every resident is the OS's to schedule.
            TimeSharing::Uncoordinated => usize::MAX,
            TimeSharing::Gang => self.row.unwrap_or(0),
        };
        let slot = self.slot_for(row, pe);
        let decision = self.policy.decide(&slot);
        self.apply(pe, decision)
    }

    fn pid(&self, r: &ProcRef) -> Option<usize> {
        let job = self.jobs.get(r.job as usize)?;
        (r.rank < job.spec.processes).then_some(job.first + r.rank)
    }

    fn active(&self, p: usize) -> bool {
        matches!(self.procs[p].phase, Phase::Compute { .. } | Phase::Wait)
    }

    fn apply(&mut self, pe: usize, d: PeDecision) -> Result<(), SimError> {
        if self.pes[pe].last.as_ref() == Some(&d) {
            return Ok(());
        }
        self.settle(pe);
        let mut new: Vec<usize> = Vec::with_capacity(d.runnable.len());
        for r in &d.runnable {
            let p = self.pid(r).ok_or_else(|| {
                SimError::Policy(format!(
                    "policy `{}` named an unknown process (job {}, rank {})",
                    self.policy.name(),
                    r.job,
                    r.rank
                ))
            })?;
            if self.procs[p].pe != pe {
                return Err(SimError::Policy(format!(
                    "policy `{}` made job {} rank {} runnable on PE {pe}, but it lives on PE {}",
                    self.policy.name(),
                    r.job,
                    r.rank,
                    self.procs[p].pe
                )));
            }
            if self.active(p) && !new.contains(&p) {
                new.push(p);
            }
        }
        let old = std::mem::take(&mut self.pes[pe].eligible);
        for &p in &old {
            if !new.contains(&p) {
                self.procs[p].eligible = false;
                if matches!(self.procs[p].phase, Phase::Wait | Phase::Compute { .. }) {
                    self.procs[p].suspended_at = Some(self.now);
                }
                self.dequeue(pe, p);
                if self.pes[pe].running == Some(p) {
                    self.stop_running(pe);
                }
            }
        }
        let mut resumed = Vec::new();
        for &p in &new {
            self.procs[p].eligible = true;
            if let Some(at) = self.procs[p].suspended_at.take() {
                self.procs[p].suspended_in_phase += self.now - at;
            }
            if !self.procs[p].blocked && self.pes[pe].running != Some(p) && !self.procs[p].queued {
                self.enqueue_back(pe, p);
                resumed.push(p);
            }
        }
        let boosted = d.boosted.as_ref().and_then(|r| self.pid(r));
        let st = &mut self.pes[pe];
        st.eligible = new;
        st.exclusive = d.exclusive;
        st.boosted = boosted.filter(|b| st.eligible.contains(b));
        st.wait = d.wait;
        st.last = Some(d);
        // The node manager raises the boosted process's priority at the
        // switch itself: it takes the CPU now if it can run.
        if let (Some(b), Some(r)) = (st.boosted, st.running) {
            if b != r && self.procs[b].queued {
                self.preempt(pe);
            }
        }
        // A resumed process is a woken one to the OS scheduler.
        for p in resumed {
            self.contend(pe, p);
        }
        self.service(pe)
    }

    // -----------------------------------------------------------------
    // The strobe.

    fn strobe(&mut self) -> Result<(), SimError> {
        self.strobe_pending = false;
        if self.matrix.is_empty() {
            self.row = None;
            return Ok(());
        }
        self.strobes += 1;
        if let Some(params) = self.fcs {
            for pe in 0..self.pes.len() {
                self.settle(pe);
            }
            for j in std::mem::take(&mut self.slot_jobs) {
                if self.jobs[j].phase != JobPhase::Active {
                    continue;
                }
                let first = self.jobs[j].first;
                for p in first..first + self.jobs[j].spec.processes {
                    if self.active(p) {
                        self.end_of_slot(p, &params)?;
                    }
                }
            }
        }
        let row = match self.row {
            None => 0,
            Some(r) => self.matrix.next_row(r),
        };
        self.row = Some(row);
        self.slot_jobs = self
            .matrix
            .jobs_in_row(row)
            .into_iter()
            .map(|j| j as usize)
            .collect();
        for pe in 0..self.pes.len() {
            let slot = self.slot_for(row, pe);
            let decision = self.policy.decide(&slot);
            self.apply(pe, decision)?;
        }
        self.q.schedule(self.now + self.slice, Event::Strobe);
        self.strobe_pending = true;
        Ok(())
    }

    /// Algorithm 2 for process `p` whose assigned slot just ended.
    fn end_of_slot(&mut self, p: usize, params: &FcsParams) -> Result<(), SimError> {
        let now = self.now;
        let proc = &mut self.procs[p];
        let stats = proc.counters.since(&proc.base)?;
        let before = proc.sched.class;
        let outcome = proc.sched.finish_slot(&stats, params);
        if outcome.resets_stats() {
            proc.base = proc.counters;
        }
        let after = proc.sched.class;
        if after != before {
            proc.class_time[class_index(before)] += now - proc.class_since;
            proc.class_since = now;
            self.changes.push(ClassChange {
                time: now,
                job: proc.job,
                rank: proc.rank,
                from: before.as_str(),
                to: after.as_str(),
            });
        }
        Ok(())
    }

    // -----------------------------------------------------------------
    // Messages.

    fn deliver(&mut self, p: usize, iter: u64) -> Result<(), SimError> {
        let proc = &mut self.procs[p];
        proc.arrived[(iter % 2) as usize] += 1;
        let waiting = proc.iter == iter && matches!(proc.phase, Phase::Wait);
        if waiting && self.complete(p) {
            self.notify(p)?;
        }
        Ok(())
    }

    fn complete(&self, p: usize) -> bool {
        let proc = &self.procs[p];
        proc.arrived[(proc.iter % 2) as usize] >= proc.need
    }

    /// Process `p`'s wait has become complete.
    fn notify(&mut self, p: usize) -> Result<(), SimError> {
        let pe = self.procs[p].pe;
        if self.pes[pe].running == Some(p) {
            return self.service(pe);
        }
        if !self.procs[p].blocked {
            // Runnable or suspended while spinning: it sees its messages
            // when it next runs.
            return Ok(());
        }
        self.procs[p].blocked = false;
        self.procs[p].woken = true;
        if !self.procs[p].eligible {
            return Ok(());
        }
        self.enqueue_front(pe, p);
        self.contend(pe, p);
        self.service(pe)
    }

    /// Process `p` has just become runnable on `pe` while another runs:
    /// the OS preempts that one at the next tick if `p` has a larger
    /// counter, at once if `p` is boosted (the caller services the PE).
    fn contend(&mut self, pe: usize, p: usize) {
        self.settle(pe);
        let st = &self.pes[pe];
        let Some(r) = st.running else {
            return;
        };
        let at = if st.boosted == Some(p) {
            Some(self.now)
        } else if r != p
            && st.boosted != Some(r)
            && !st.exclusive
            && self.procs[p].counter > self.procs[r].counter
        {
            Some(self.next_tick(pe))
        } else {
            None
        };
        if let Some(at) = at {
            let st = &mut self.pes[pe];
            st.preempt_at = Some(st.preempt_at.map_or(at, |t: f64| t.min(at)));
        }
    }

    fn next_tick(&self, pe: usize) -> f64 {
        let tick = self.model.os.tick;
        let phase = self.pes[pe].tick_phase;
        let k = ((self.now - phase) / tick).ceil();
        (phase + k * tick).max(self.now)
    }

    // -----------------------------------------------------------------
    // The PE: accounting, the OS scheduler, the running process.

    fn settle(&mut self, pe: usize) {
        let now = self.now;
        let cpu_clock = self.model.cpu_clock;
        let st = &mut self.pes[pe];
        if let Some(p) = st.running {
            st.overhead += (now.min(st.busy_until) - st.settled).max(0.0);
            let from = st.settled.max(st.busy_until);
            if now > from {
                let dt = now - from;
                let proc = &mut self.procs[p];
                if !st.exclusive {
                    proc.counter = (proc.counter - dt).max(0.0);
                }
                match &mut proc.phase {
                    Phase::Compute { remaining } => {
                        *remaining = (*remaining - dt * st.speed).max(0.0);
                        proc.cpu += dt;
                        if cpu_clock == CpuClock::Cpu {
                            proc.counters.computed(dt);
                        }
                        st.compute += dt;
                    }
                    Phase::Wait => {
                        proc.counters.spun(dt);
                        st.spin += dt;
                    }
                    Phase::Idle | Phase::Done => {}
                }
            }
        }
        st.settled = now;
    }

    /// One time slice: the quantum with its jitter.
    fn refill(&mut self) -> f64 {
        let os = self.model.os;
        if os.quantum_jitter == 0.0 {
            os.quantum
        } else {
            os.quantum * (1.0 + os.quantum_jitter * self.rng.gen_range(-1.0..=1.0))
        }
    }

    /// Every runnable counter on `pe` is spent: every process placed there
    /// gets `counter / 2 + quantum` (Linux 2.4's recalculation, which also
    /// credits sleeping and suspended processes).
    fn recalculate(&mut self, pe: usize) {
        for i in 0..self.pes[pe].members.len() {
            let p = self.pes[pe].members[i];
            if self.active(p) {
                let refill = self.refill();
                let proc = &mut self.procs[p];
                proc.counter = proc.counter / 2.0 + refill;
            }
        }
    }

    fn enqueue_back(&mut self, pe: usize, p: usize) {
        if self.procs[p].queued {
            return;
        }
        self.procs[p].queued = true;
        self.pes[pe].queue.push_back(p);
    }

    fn enqueue_front(&mut self, pe: usize, p: usize) {
        if self.procs[p].queued {
            self.dequeue(pe, p);
        }
        self.procs[p].queued = true;
        self.pes[pe].queue.push_front(p);
    }

    fn dequeue(&mut self, pe: usize, p: usize) {
        if self.procs[p].queued {
            self.procs[p].queued = false;
            let q = &mut self.pes[pe].queue;
            if let Some(i) = q.iter().position(|&x| x == p) {
                q.remove(i);
            }
        }
    }

    fn end_segment(&mut self, pe: usize, p: usize) {
        if self.segments.len() < self.model.trace_limit {
            let proc = &self.procs[p];
            self.segments.push(RunSegment {
                pe,
                job: proc.job,
                rank: proc.rank,
                from: self.pes[pe].segment_start,
                to: self.now,
            });
        }
    }

    /// The running process leaves the CPU without rejoining the queue
    /// (suspended, blocked or exited).
    fn stop_running(&mut self, pe: usize) {
        self.settle(pe);
        if let Some(p) = self.pes[pe].running.take() {
            self.end_segment(pe, p);
        }
    }

    /// The running process goes back to the queue.
    fn preempt(&mut self, pe: usize) {
        self.settle(pe);
        let Some(p) = self.pes[pe].running.take() else {
            return;
        };
        self.end_segment(pe, p);
        self.procs[p].queued = true;
        self.pes[pe].queue.push_back(p);
    }

    /// The next process to run: the boosted one if it is queued, else the
    /// queued process with the largest counter (the first on ties), after a
    /// recalculation if every queued counter is spent.
    fn pick(&mut self, pe: usize) -> Option<usize> {
        let tol = self.tol();
        let boosted = self.pes[pe].boosted.filter(|&b| self.procs[b].queued);
        let best = |sim: &Self| {
            let q = &sim.pes[pe].queue;
            let mut best: Option<(usize, f64)> = None;
            for (i, &p) in q.iter().enumerate() {
                let c = sim.procs[p].counter;
                if best.is_none_or(|(_, b)| c > b) {
                    best = Some((i, c));
                }
            }
            best
        };
        let index = match boosted {
            Some(b) => self.pes[pe].queue.iter().position(|&x| x == b)?,
            None => {
                let (mut i, c) = best(self)?;
                if c <= tol {
                    self.recalculate(pe);
                    i = best(self)?.0;
                }
                i
            }
        };
        let p = self.pes[pe].queue.remove(index)?;
        self.procs[p].queued = false;
        Some(p)
    }

    fn dispatch(&mut self, pe: usize, p: usize) {
        let now = self.now;
        let mut cost = 0.0;
        if self.pes[pe].loaded != Some(p) {
            cost += self.model.cluster.context_switch;
            self.switches += 1;
        }
        if std::mem::replace(&mut self.procs[p].woken, false) {
            cost += self.model.os.wakeup;
        }
        let st = &mut self.pes[pe];
        st.running = Some(p);
        st.loaded = Some(p);
        st.busy_until = now + cost;
        st.settled = now;
        st.segment_start = now;
    }

    fn block(&mut self, p: usize) {
        let pe = self.procs[p].pe;
        self.procs[p].blocked = true;
        self.procs[p].blocks += 1;
        self.stop_running(pe);
    }

    /// Everything due on `pe` now, then the next timer.
    fn service(&mut self, pe: usize) -> Result<(), SimError> {
        self.settle(pe);
        let tol = self.tol();
        let now = self.now;
        if let Some(t) = self.pes[pe].preempt_at {
            if t <= now + tol {
                self.pes[pe].preempt_at = None;
                if self.pes[pe].running.is_some() && !self.pes[pe].queue.is_empty() {
                    self.preempt(pe);
                }
            }
        }
        loop {
            let Some(p) = self.pes[pe].running else {
                if let Some(next) = self.pick(pe) {
                    self.dispatch(pe, next);
                    continue;
                }
                break;
            };
            if now + tol < self.pes[pe].busy_until {
                break;
            }
            match self.procs[p].phase {
                Phase::Compute { remaining } => {
                    if remaining <= tol * self.pes[pe].speed {
                        self.end_compute(p);
                    } else {
                        break;
                    }
                }
                Phase::Wait => {
                    if self.complete(p) {
                        self.end_wait(p);
                    } else {
                        match self.pes[pe].wait {
                            WaitMode::Poll => break,
                            WaitMode::SpinBlock { spin } => {
                                if now + tol >= self.procs[p].phase_since + spin {
                                    self.block(p);
                                } else {
                                    break;
                                }
                            }
                            WaitMode::Block => self.block(p),
                        }
                    }
                }
                Phase::Idle | Phase::Done => self.stop_running(pe),
            }
        }
        // The time slice: a spent counter hands the CPU to the best queued
        // process (possibly the same one again, after a recalculation).
        let st = &self.pes[pe];
        if let Some(r) = st.running {
            if !st.exclusive
                && st.boosted != Some(r)
                && self.procs[r].counter <= tol
                && now + tol >= st.busy_until
            {
                self.preempt(pe);
                if let Some(next) = self.pick(pe) {
                    self.dispatch(pe, next);
                }
                // A dispatched process may have something due at once (its
                // messages came while it was queued): the timer below fires
                // at `busy_until`, which is now at the earliest.
            }
        }
        self.arm(pe);
        Ok(())
    }

    fn arm(&mut self, pe: usize) {
        let now = self.now;
        let st = &self.pes[pe];
        let mut t = f64::INFINITY;
        if let Some(p) = st.running {
            let start = st.busy_until.max(now);
            match self.procs[p].phase {
                Phase::Compute { remaining } => t = start + remaining / st.speed,
                Phase::Wait => {
                    if self.complete(p) {
                        t = start;
                    } else {
                        match st.wait {
                            WaitMode::Poll => {}
                            WaitMode::SpinBlock { spin } => {
                                t = (self.procs[p].phase_since + spin).max(start)
                            }
                            WaitMode::Block => t = start,
                        }
                    }
                }
                Phase::Idle | Phase::Done => t = now,
            }
            if !st.exclusive && st.boosted != Some(p) {
                t = t.min(start + self.procs[p].counter);
            }
        }
        if let Some(at) = st.preempt_at {
            t = t.min(at.max(now));
        }
        let st = &mut self.pes[pe];
        st.gen += 1;
        if t.is_finite() {
            let gen = st.gen;
            self.q.schedule(t, Event::Pe { pe, gen });
        }
    }

    // -----------------------------------------------------------------
    // The BSP process.

    fn end_compute(&mut self, p: usize) {
        let now = self.now;
        let latency = self.model.net.latency;
        self.procs[p].iterations += 1;
        if self.model.cpu_clock == CpuClock::Elapsed {
            let elapsed = self.phase_elapsed(p);
            self.procs[p].counters.computed(elapsed);
        }
        let (iter, job) = (self.procs[p].iter, self.procs[p].job);
        if !self.jobs[job].spec.communicates() {
            self.next_iteration(p);
            return;
        }
        self.procs[p].phase = Phase::Wait;
        self.procs[p].phase_since = now;
        self.procs[p].suspended_in_phase = 0.0;
        if self.jobs[job].spec.pattern == Pattern::Barrier {
            let j = &mut self.jobs[job];
            j.barrier += 1;
            if j.barrier == j.spec.processes {
                j.barrier = 0;
                self.q.schedule(now + latency, Event::Release { job, iter });
            }
        } else {
            self.q
                .schedule(now + latency, Event::Delivered { from: p, iter });
        }
    }

    /// Wall seconds of process `p`'s current phase, less its suspensions
    /// where the clock counts only scheduled time.
    fn phase_elapsed(&self, p: usize) -> f64 {
        let proc = &self.procs[p];
        let wall = self.now - proc.phase_since;
        match self.model.comm_clock {
            CommClock::Wall => wall,
            CommClock::Scheduled => wall - proc.suspended_in_phase,
        }
    }

    fn end_wait(&mut self, p: usize) {
        let merge = self.model.merge_epsilon;
        let waited = self.phase_elapsed(p);
        let proc = &mut self.procs[p];
        proc.counters.communicated(waited, merge);
        let slot = (proc.iter % 2) as usize;
        debug_assert_eq!(proc.arrived[slot], proc.need, "messages of one iteration");
        proc.arrived[slot] = 0;
        self.next_iteration(p);
    }

    fn next_iteration(&mut self, p: usize) {
        self.procs[p].iter += 1;
        let (iter, rank, job) = (self.procs[p].iter, self.procs[p].rank, self.procs[p].job);
        let spec = &self.jobs[job].spec;
        if iter >= spec.iterations {
            self.exit(p);
        } else {
            let remaining = spec.compute(rank, iter) + self.monitor;
            self.procs[p].phase = Phase::Compute { remaining };
            self.procs[p].phase_since = self.now;
            self.procs[p].suspended_in_phase = 0.0;
        }
    }

    fn exit(&mut self, p: usize) {
        let now = self.now;
        let pe = self.procs[p].pe;
        if self.pes[pe].running == Some(p) {
            self.stop_running(pe);
        }
        self.dequeue(pe, p);
        let proc = &mut self.procs[p];
        proc.phase = Phase::Done;
        proc.eligible = false;
        proc.class_time[class_index(proc.sched.class)] += now - proc.class_since;
        proc.class_since = now;
        self.pes[pe].eligible.retain(|&x| x != p);
        if self.pes[pe].boosted == Some(p) {
            self.pes[pe].boosted = None;
        }
        let k = proc.job;
        let job = &mut self.jobs[k];
        job.alive -= 1;
        if job.alive == 0 {
            job.phase = JobPhase::Finished;
            job.end = now;
            self.finished += 1;
            // Decisions for the freed PEs are taken outside the service
            // loop that is running now.
            self.q.schedule(now, Event::JobDone(k));
        }
    }

    // -----------------------------------------------------------------
    // The report.

    fn finish(self) -> CoschedRun {
        let latency = self.model.net.latency;
        let first_arrival = self
            .jobs
            .iter()
            .map(|j| j.spec.arrival)
            .fold(f64::INFINITY, f64::min);
        let last_end = self.jobs.iter().map(|j| j.end).fold(0.0, f64::max);
        let makespan = if self.jobs.is_empty() {
            0.0
        } else {
            last_end - first_arrival
        };
        let jobs = self
            .jobs
            .iter()
            .map(|j| JobResult {
                name: j.spec.name.clone(),
                arrival: j.spec.arrival,
                start: j.start,
                end: j.end,
                turnaround: j.end - j.spec.arrival,
                runtime: j.end - j.start,
                dedicated: j.spec.dedicated_time(latency),
            })
            .collect();
        let classifies = self.fcs.is_some();
        let processes = self
            .procs
            .iter()
            .map(|p| {
                let dominant = (0..3)
                    .max_by(|&a, &b| p.class_time[a].total_cmp(&p.class_time[b]).then(b.cmp(&a)))
                    .map(|i| CLASSES[i].as_str());
                ProcessResult {
                    job: p.job,
                    rank: p.rank,
                    pe: p.pe,
                    iterations: p.iterations,
                    cpu: p.cpu,
                    spin: p.counters.spin,
                    comm_wait: p.counters.t_comm,
                    comm_events: p.counters.c_comm,
                    blocks: p.blocks,
                    final_class: classifies.then(|| p.sched.class.as_str()),
                    dominant_class: if classifies { dominant } else { None },
                    class_time: p.class_time,
                }
            })
            .collect();
        let pes = self
            .pes
            .iter()
            .map(|pe| {
                let busy = pe.compute + pe.spin + pe.overhead;
                PeUsage {
                    compute: pe.compute,
                    spin: pe.spin,
                    overhead: pe.overhead,
                    idle: (makespan - busy).max(0.0),
                }
            })
            .collect();
        CoschedRun {
            policy: self.policy.spec().to_string(),
            makespan,
            jobs,
            processes,
            pes,
            class_changes: self.changes,
            strobes: self.strobes,
            context_switches: self.switches,
            events: self.q.events_processed(),
            segments: self.segments,
        }
    }
}
