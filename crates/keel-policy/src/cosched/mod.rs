//! Cluster coscheduling: Flexible CoScheduling and its baselines (FCS
//! paper, §2 for FCS and §3 for FCFS, GS, Local and SB; Ousterhout's
//! matrix of gang scheduling, ICDCS 1982).
//!
//! A machine manager packs jobs into an Ousterhout [`Matrix`] (rows = time
//! slots, columns = PEs) and, every time slice, tells every node manager to
//! switch to the next row (a *multi-context-switch*). Each node manager then
//! asks its [`CoschedPolicy`] what to do on each of its PEs: given the
//! process the matrix assigns to the PE in the new row and every process
//! resident on the PE ([`PeSlot`]), the policy returns a [`PeDecision`]:
//! which processes may run, whether the assigned one runs alone, which one
//! gets a priority boost, and how waiting processes wait ([`WaitMode`]).
//! Policies are pure: they never suspend a process or read a clock; the
//! contexts (`keel-sim`'s cluster model, the `keel-cosched` daemons) enact
//! the decisions.
//!
//! | name | paper | time sharing | in a slot | waiting |
//! |---|---|---|---|---|
//! | `fcfs` | §3, FCFS batch | [`TimeSharing::Batch`] | the job's process alone | busy-wait |
//! | `gs` | §3, gang scheduling | [`TimeSharing::Gang`] | the assigned process alone; an empty cell idles | busy-wait |
//! | `local` | §3, local scheduling | [`TimeSharing::Uncoordinated`] | every resident process, OS-scheduled | busy-wait |
//! | `sb` | §3, spin-block (≈ implicit coscheduling) | [`TimeSharing::Uncoordinated`] | every resident process, OS-scheduled | spin `spin`, then block |
//! | `fcs` | §2, Algorithms 1 and 2 | [`TimeSharing::Gang`] | a CS process alone; otherwise every resident process, an F one boosted | CS polls; otherwise spin-block |
//!
//! FCS alone classifies processes ([`CoschedPolicy::classifies`]): the node
//! manager keeps a [`ProcessSched`] per process and, when a process's
//! assigned slot ends, calls [`ProcessSched::finish_slot`] with the
//! process's [`CommStats`] since the last reset (Algorithm 2).
//!
//! Spec strings follow `docs/conventions.md#spec-strings`: `sb:spin=5e-5`,
//! `fcs:cs-thresh=0.02,t-spin=1e-4`, `gs:t-slice=0.05`. Build them with
//! [`parse`] (typed [`CoschedError`]s) or through the generic [`registry()`].
//!
//! A spec string builds a policy, and first fit packs jobs into the matrix:
//!
//! ```
//! use keel_policy::cosched::{parse, Matrix, ProcessClass, TimeSharing, WaitMode};
//! let sb = parse("sb:spin=5e-5").unwrap();
//! assert_eq!(sb.time_sharing(), TimeSharing::Uncoordinated);
//! assert_eq!(sb.wait_mode(ProcessClass::Cs), WaitMode::SpinBlock { spin: 5e-5 });
//! // Four PEs: a 3-process job and a 2-process job cannot share a row.
//! let mut matrix = Matrix::new(4);
//! assert_eq!(matrix.pack(1, 3).unwrap(), 0);
//! assert_eq!(matrix.pack(2, 2).unwrap(), 1);
//! assert_eq!(matrix.pack(3, 1).unwrap(), 0); // fills row 0's free PE
//! assert_eq!(matrix.rows(), 2);
//! ```

mod classify;
pub mod clock;
mod fcfs;
mod fcs;
mod gs;
mod local;
mod matrix;
mod node;
mod sb;

use std::fmt;

pub use classify::{
    classify, reclassify, CommStats, FcsParams, ProcessSched, Reclass, DEFAULT_CSLOTS_MIN,
    DEFAULT_CS_THRESH, DEFAULT_DC_THRESH, DEFAULT_TSLOTS_MAX, DEFAULT_T_SLICE, DEFAULT_T_SPIN,
    F_THRESH_RATIO,
};
pub use fcfs::Fcfs;
pub use fcs::Fcs;
pub use gs::Gang;
pub use local::Local;
pub use matrix::{Matrix, Placement, SlotIndex};
pub use node::{all_resident, context_switch, exclusive};
pub use sb::{SpinBlocking, DEFAULT_SB_SPIN};

use crate::error::PolicyError;
use crate::registry::Registry;
use crate::spec::Spec;

/// The cosched names (`docs/conventions.md#policy-names`), in registry order.
pub const NAMES: [&str; 5] = ["fcfs", "gs", "local", "sb", "fcs"];

/// Identifies a parallel job (the context's job id).
pub type JobId = u64;

/// A process's FCS class (paper §2.1, Fig. 1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProcessClass {
    /// Coscheduled: fine-grained and communicating well when gang-scheduled;
    /// runs alone and polls in its assigned slot. New processes start here.
    #[default]
    Cs,
    /// Frustrated: fine-grained but waiting long (load imbalance); runs in
    /// its slot with a raised priority, others fill its gaps.
    F,
    /// Don't-care: coarse-grained or rarely synchronising; scheduled freely.
    Dc,
}

impl ProcessClass {
    /// The paper's label: `CS`, `F` or `DC`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProcessClass::Cs => "CS",
            ProcessClass::F => "F",
            ProcessClass::Dc => "DC",
        }
    }
}

impl fmt::Display for ProcessClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One process of a job, as a policy sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProcRef {
    /// Its job.
    pub job: JobId,
    /// Its rank within the job (`0..processes`).
    pub rank: usize,
    /// Its current class (always [`ProcessClass::Cs`] for policies that do
    /// not classify).
    pub class: ProcessClass,
}

/// What a policy sees of one PE at a multi-context-switch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PeSlot {
    /// The process the matrix assigns to this PE in the slot starting now
    /// (Algorithm 1's `next_process`); `None` for an empty cell.
    pub assigned: Option<ProcRef>,
    /// Every process placed on this PE, in any row, the assigned one
    /// included (a missing assigned process is treated as resident).
    pub resident: Vec<ProcRef>,
}

/// How a process waits for a blocking communication to complete.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WaitMode {
    /// Busy-wait (poll) and never yield the CPU.
    Poll,
    /// Poll for `spin` seconds, then block until the operation completes.
    SpinBlock {
        /// Seconds to poll before blocking.
        spin: f64,
    },
    /// Block at once.
    Block,
}

/// What a node manager enacts on one PE for the slot starting now.
///
/// A decision depends only on its [`PeSlot`], so a context may skip
/// enacting one equal to the PE's previous decision (Algorithm 1's
/// "`current_process == next_process` → return").
#[derive(Clone, Debug, PartialEq)]
pub struct PeDecision {
    /// The processes that may run in this slot; every other process on the
    /// PE is suspended. The assigned process, when runnable, comes first;
    /// the rest keep the order of [`PeSlot::resident`], without duplicates.
    /// Empty: the PE idles for the slot.
    pub runnable: Vec<ProcRef>,
    /// The assigned process runs alone for the whole slot and is not
    /// preempted (`runnable` is exactly that process).
    pub exclusive: bool,
    /// A process to run at a priority above every other runnable one, so
    /// that it runs uninterrupted when it can (FCS's F case).
    pub boosted: Option<ProcRef>,
    /// How every runnable process waits on blocking communication during
    /// this slot.
    pub wait: WaitMode,
}

/// How a policy shares the machine between jobs over time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimeSharing {
    /// Space slicing, no time slicing (FCFS): each PE runs at most one job's
    /// process; jobs start strictly in arrival order, each when its PEs are
    /// free (no backfilling), and run to completion. With a
    /// [`Matrix::with_row_limit`] of 1 a failed [`Matrix::pack`] means
    /// "the head of the queue waits, and so does everyone behind it".
    Batch,
    /// The matrix's rows take turns, switching every
    /// [`CoschedPolicy::time_slice`] on every node together (GS, FCS).
    Gang,
    /// Every job is resident all the time and each node's OS schedules its
    /// processes with no coordination (Local, SB); no slot switches.
    Uncoordinated,
}

/// A coscheduling policy: a registry policy of the `cosched` family.
pub trait CoschedPolicy: Send + Sync + fmt::Debug {
    /// The registry name (`fcfs`, `gs`, `local`, `sb`, `fcs`).
    fn name(&self) -> &'static str;

    /// The canonical spec: rebuilds this policy through [`parse`].
    fn spec(&self) -> Spec;

    /// How jobs share the machine over time.
    fn time_sharing(&self) -> TimeSharing;

    /// Seconds per time slot for [`TimeSharing::Gang`] policies; `None`
    /// for the others, which never switch slots.
    fn time_slice(&self) -> Option<f64>;

    /// What to do on one PE at a multi-context-switch (Algorithm 1 for FCS).
    fn decide(&self, pe: &PeSlot) -> PeDecision;

    /// How a process of `class` waits when it runs in its own assigned
    /// slot — the [`PeDecision::wait`] of a slot that assigns it. (Under
    /// FCS a CS process running in another process's slot spin-blocks.)
    fn wait_mode(&self, class: ProcessClass) -> WaitMode;

    /// Whether the context must classify processes (Algorithm 2) and put
    /// their classes in [`ProcRef::class`]. Only FCS does.
    fn classifies(&self) -> bool {
        self.fcs_params().is_some()
    }

    /// FCS's constants (Table 2), for a policy that classifies.
    fn fcs_params(&self) -> Option<&FcsParams> {
        None
    }
}

/// Why a cosched policy, its parameters, its inputs or a matrix operation
/// were rejected.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CoschedError {
    /// A parameter is NaN, infinite, zero or negative where it must be a
    /// positive number, or a count is below its minimum.
    #[error("`{key}` = {value} is invalid: expected {expected}")]
    Parameter {
        /// The parameter's spec key (`cs-thresh`, `spin`, ...).
        key: &'static str,
        /// The value given.
        value: String,
        /// What would be valid.
        expected: &'static str,
    },

    /// The thresholds are out of order: FCS needs
    /// `f-thresh <= cs-thresh <= dc-thresh` for its phase diagram (Fig. 2).
    #[error(
        "FCS thresholds must satisfy f-thresh <= cs-thresh <= dc-thresh; got f-thresh = {}, cs-thresh = {}, dc-thresh = {}",
        crate::error::compact(*f_thresh),
        crate::error::compact(*cs_thresh),
        crate::error::compact(*dc_thresh)
    )]
    ThresholdOrder {
        /// F_thresh (s).
        f_thresh: f64,
        /// CS_thresh (s).
        cs_thresh: f64,
        /// DC_thresh (s).
        dc_thresh: f64,
    },

    /// A communication statistic is NaN, infinite or negative.
    #[error(
        "communication statistic {what} is {}: expected a finite number >= 0",
        crate::error::compact(*value)
    )]
    Statistic {
        /// `T_cpu` or `T_comm`.
        what: &'static str,
        /// The value found.
        value: f64,
    },

    /// A job with no processes cannot be placed.
    #[error("job {job} has no processes (need at least 1)")]
    EmptyJob {
        /// The job.
        job: JobId,
    },

    /// A job needs more PEs than the machine has.
    #[error("job {job} needs {processes} PEs but the matrix has only {pes}")]
    JobTooWide {
        /// The job.
        job: JobId,
        /// Its processes.
        processes: usize,
        /// The matrix's PEs.
        pes: usize,
    },

    /// The job is already in the matrix.
    #[error("job {job} is already in the matrix")]
    DuplicateJob {
        /// The job.
        job: JobId,
    },

    /// The job is not in the matrix.
    #[error("job {job} is not in the matrix")]
    UnknownJob {
        /// The job.
        job: JobId,
    },

    /// An explicit placement names a PE that does not exist.
    #[error("job {job}: PE {pe} does not exist (the matrix has {pes} PEs)")]
    PeOutOfRange {
        /// The job.
        job: JobId,
        /// The PE named.
        pe: usize,
        /// The matrix's PEs.
        pes: usize,
    },

    /// An explicit placement puts two processes of one job on the same PE.
    #[error("job {job}: PE {pe} is named twice (a job has at most one process per PE)")]
    RepeatedPe {
        /// The job.
        job: JobId,
        /// The PE named twice.
        pe: usize,
    },

    /// No row can take the job and the matrix may not grow (its row limit,
    /// e.g. 1 for FCFS, is reached): the job must wait.
    #[error("job {job} does not fit: every one of the {rows} allowed rows lacks free PEs for it")]
    MatrixFull {
        /// The job.
        job: JobId,
        /// The row limit.
        rows: usize,
    },

    /// The spec did not parse, names an unknown policy or parameter, or a
    /// value is not a number.
    #[error(transparent)]
    Spec(#[from] PolicyError),
}

impl From<CoschedError> for PolicyError {
    fn from(e: CoschedError) -> Self {
        let (policy, key, value) = match &e {
            CoschedError::Spec(inner) => return inner.clone(),
            CoschedError::Parameter {
                key,
                value,
                expected,
            } => {
                return PolicyError::InvalidParameter {
                    policy: "cosched".into(),
                    key: (*key).into(),
                    value: value.clone(),
                    expected: (*expected).into(),
                }
            }
            CoschedError::ThresholdOrder { f_thresh, .. } => {
                ("fcs", "f-thresh", crate::error::compact(*f_thresh))
            }
            CoschedError::Statistic { what, value } => {
                ("fcs", *what, crate::error::compact(*value))
            }
            CoschedError::EmptyJob { job }
            | CoschedError::JobTooWide { job, .. }
            | CoschedError::DuplicateJob { job }
            | CoschedError::UnknownJob { job }
            | CoschedError::PeOutOfRange { job, .. }
            | CoschedError::RepeatedPe { job, .. }
            | CoschedError::MatrixFull { job, .. } => ("matrix", "job", job.to_string()),
        };
        PolicyError::InvalidParameter {
            policy: policy.into(),
            key: key.into(),
            value,
            expected: e.to_string(),
        }
    }
}

type Builder = fn(&Spec) -> Result<Box<dyn CoschedPolicy>, CoschedError>;

const BUILTINS: [(&str, &str, Builder); 5] = [
    (
        "fcfs",
        "first-come-first-served batch: one job per PE, run to completion, busy-wait",
        |s| Ok(Box::new(Fcfs::from_spec(s)?)),
    ),
    (
        "gs",
        "gang scheduling: matrix rows take turns, the assigned process runs alone and busy-waits [t-slice=0.025]",
        |s| Ok(Box::new(Gang::from_spec(s)?)),
    ),
    (
        "local",
        "local scheduling: every job resident, OS-scheduled, busy-wait",
        |s| Ok(Box::new(Local::from_spec(s)?)),
    ),
    (
        "sb",
        "spin-block: every job resident, OS-scheduled, spin then block [spin=1e-4]",
        |s| Ok(Box::new(SpinBlocking::from_spec(s)?)),
    ),
    (
        "fcs",
        "flexible coscheduling, the paper's Algorithms 1 and 2 [t-slice, t-spin, cslots-min, dc-thresh, cs-thresh, f-thresh, tslots-max: Table 2]",
        |s| Ok(Box::new(Fcs::from_spec(s)?)),
    ),
];

/// Builds a cosched policy from a spec string, e.g. `fcs:cs-thresh=0.02`.
///
/// ```
/// use keel_policy::cosched::{self, CoschedError, TimeSharing};
/// assert_eq!(cosched::parse("gs").unwrap().time_sharing(), TimeSharing::Gang);
/// assert!(matches!(
///     cosched::parse("fcs:f-thresh=0.5").unwrap_err(),
///     CoschedError::ThresholdOrder { .. }
/// ));
/// assert!(cosched::parse("lottery").unwrap_err().to_string().contains("fcfs, gs, local, sb, fcs"));
/// ```
pub fn parse(text: &str) -> Result<Box<dyn CoschedPolicy>, CoschedError> {
    parse_spec(&Spec::parse(text).map_err(PolicyError::from)?)
}

/// Builds a cosched policy from a parsed spec.
pub fn parse_spec(spec: &Spec) -> Result<Box<dyn CoschedPolicy>, CoschedError> {
    let (_, _, build) = BUILTINS
        .iter()
        .find(|(name, _, _)| *name == spec.name)
        .ok_or_else(|| PolicyError::UnknownPolicy {
            family: "cosched",
            name: spec.name.clone(),
            valid: NAMES.iter().map(|s| s.to_string()).collect(),
        })?;
    build(spec)
}

/// The `cosched` registry with the built-in policies; users may register
/// their own.
pub fn registry() -> Registry<dyn CoschedPolicy> {
    let mut r: Registry<dyn CoschedPolicy> = Registry::empty("cosched");
    for (name, summary, build) in BUILTINS {
        r.register(name, summary, move |spec, _| Ok(build(spec)?))
            .expect("built-in cosched names are unique and kebab-case");
    }
    r
}

/// The spec's keys with `_` read as `-`, so `cs_thresh` and `cs-thresh`
/// name the same parameter.
pub(crate) fn kebab_keys(spec: &Spec) -> Spec {
    Spec {
        name: spec.name.clone(),
        params: spec
            .params
            .iter()
            .map(|(k, v)| (k.replace('_', "-"), v.clone()))
            .collect(),
    }
}

/// A finite number `> 0` under `key`, if given.
pub(crate) fn positive_seconds(
    spec: &Spec,
    key: &'static str,
) -> Result<Option<f64>, CoschedError> {
    const EXPECTED: &str = "a finite number of seconds > 0";
    match spec.parsed::<f64>(key, EXPECTED)? {
        Some(v) if !(v.is_finite() && v > 0.0) => Err(CoschedError::Parameter {
            key,
            value: crate::error::compact(v),
            expected: EXPECTED,
        }),
        other => Ok(other),
    }
}

#[cfg(test)]
mod tests;
