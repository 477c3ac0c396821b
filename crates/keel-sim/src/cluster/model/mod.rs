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
//!
//! Any policy object runs through [`simulate`]; the report names it by its canonical spec:
//!
//! ```
//! use keel_sim::cluster::{simulate, CoschedModel};
//! use keel_workloads::bsp::{BspJob, Pattern};
//! let policy = keel_policy::cosched::parse("gs").unwrap();
//! let job = BspJob::new(2, 0.001, 10, Pattern::Barrier).unwrap();
//! let run = simulate(&CoschedModel::new(1, 2).unwrap(), policy.as_ref(), &[job]).unwrap();
//! assert_eq!(run.policy, policy.spec().to_string());
//! assert_eq!(run.jobs.len(), 1);
//! ```

use std::collections::VecDeque;

use keel_policy::cosched::{
    CoschedError, CoschedPolicy, FcsParams, Matrix, PeDecision, ProcessClass, ProcessSched,
    TimeSharing, WaitMode,
};
use keel_workloads::bsp::{BspJob, Pattern};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::comm::CommCounters;
use super::params::CoschedModel;
use super::run::{ClassChange, CoschedRun, RunSegment};
use crate::engine::EventQueue;
use crate::error::SimError;

mod decide;
mod jobs;
mod messages;
mod os;
mod process;
mod report;
mod strobe;

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
}
