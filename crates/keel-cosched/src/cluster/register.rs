//! The NM's registration socket (CONTRACT STUB: the helper implementing
//! this file keeps every public item below).

use std::path::{Path, PathBuf};

use crate::sys::PeerCred;

/// Protocol version of a registration line.
pub const REGISTER_VERSION: u32 = 1;
/// Longest request accepted, bytes.
pub const MAX_REQUEST_BYTES: usize = 1024;
/// Default socket path.
pub const DEFAULT_SOCKET: &str = "/run/keel-cosched/nm.sock";

/// A Slurm task's registration, as the SPANK plugin sends it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registration {
    /// Slurm job id.
    pub job: u32,
    /// Step id.
    pub step: u32,
    /// Global task id (the MPI rank).
    pub rank: u32,
    /// Tasks in the step.
    pub size: u32,
    /// Node-local task id.
    pub local_rank: u32,
    /// Tasks of the step on this node.
    pub local_size: u32,
    /// Nodes of the step.
    pub nodes: u32,
    /// The task's pid (the registering process itself).
    pub pid: i32,
    /// The job's uid.
    pub uid: u32,
    /// The job's gid.
    pub gid: u32,
    /// The policy the user asked for (`--keel-cosched=POLICY`), if any.
    pub policy: Option<String>,
}

/// Why a registration was refused.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[error("{0}")]
pub struct RegisterError(pub String);

impl Registration {
    /// Parses one request line.
    pub fn parse(_bytes: &[u8]) -> Result<Registration, RegisterError> {
        todo!()
    }
}

/// The NM's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Registered: the task's monitoring page.
    Accepted {
        /// The page's path (the plugin sets `KEEL_COSCHED_PAGE`).
        page: PathBuf,
    },
    /// Not registered.
    Refused {
        /// Why (one line).
        reason: String,
    },
}

/// A running registration server.
#[derive(Debug)]
pub struct RegisterServer {
    _private: (),
}

/// Serves registrations at `path`.
pub fn serve(
    _path: &Path,
    _handler: Box<dyn Fn(Registration, PeerCred) -> Reply + Send + Sync>,
) -> std::io::Result<RegisterServer> {
    todo!()
}
