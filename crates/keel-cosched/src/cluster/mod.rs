//! The cluster mode: the machine manager (MM) and the node managers (NMs)
//! as separate processes on separate hosts, with the job processes
//! launched and wired by Slurm (FCS paper, §2.1: the MM strobes the NMs;
//! §2.5: the NMs enact).
//!
//! - [`auth`]: every message is sealed by an [`auth::Authenticator`]:
//!   MUNGE (the credential service of Slurm clusters) or a shared key.
//! - [`wire`]: the TCP protocol between the MM and the NMs: versioned,
//!   length-prefixed, bounded frames; replays refused.
//! - [`register`]: the NM's local socket where the SPANK plugin registers
//!   each Slurm task (peer credentials checked).

pub mod auth;
pub mod bench;
pub mod mm;
pub mod nm;
pub mod register;
pub mod report;
pub mod wire;
