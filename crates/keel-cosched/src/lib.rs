//! `keel-cosched`: a real user-space gang scheduler for Linux implementing
//! Flexible CoScheduling (FCS paper, §2) and its
//! baselines FCFS, GS, Local and SB (§3), with the policies of
//! `keel_policy::cosched` enacted on real processes.
//!
//! - [`machine`]: the machine manager (MM) packs jobs into the Ousterhout
//!   matrix and sends every node manager a heartbeat per time slot that
//!   carries the slot, the row and the switch time.
//! - [`node`]: a node manager (NM) per node (a disjoint CPU set) starts the
//!   job processes (own process group, pinned, page created first), and at
//!   each heartbeat reads the monitoring pages, reclassifies (FCS), asks the
//!   policy for each PE's decision and enacts it: suspend / resume, priority
//!   boost, wait mode.
//! - [`suspend`]: cgroup v2 freezer, or `SIGSTOP`/`SIGCONT`.
//! - [`guardian`]: no job process outlives its manager stopped.
//! - [`shm`]: the shared monitoring page and its seqlock.
//! - [`job`]: job files. [`control`]: the control socket (peer credentials).
//! - [`bsp`]: the synthetic BSP job. [`scenario`]: the paper's §3.2
//!   verification scenarios, scaled to two PEs.
//!
//! The crate's README describes the job file format, the control protocol,
//! the reliability guarantees and the measured tables.

// On docs.rs, items that exist only on some platforms or features say so.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod bsp;
pub mod cluster;
pub mod control;
pub mod guardian;
pub mod job;
pub mod machine;
pub mod node;
pub mod rundir;
pub mod scenario;
pub mod shm;
pub mod suspend;
pub mod sys;

pub use job::{parse_jobs, read_jobs, JobFileError, JobSpec};
pub use machine::{Config, JobOutcome, JobReport, Machine, MachineError, RunReport};
pub use shm::{Counters, Page, PageWaitMode};
pub use suspend::{SuspendChoice, SuspendKind};
