//! The MM ↔ NM protocol (CONTRACT STUB: the helper implementing this file
//! keeps every public item below and adds the codec).

use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::auth::{AuthError, Authenticator};

/// The protocol version; a peer speaking another is refused.
pub const WIRE_VERSION: u16 = 1;
/// Largest frame accepted, bytes.
pub const MAX_FRAME_BYTES: usize = 64 * 1024;
/// Most cells in one heartbeat (PEs of one node).
pub const MAX_CELLS: usize = 1024;
/// Longest text field, bytes.
pub const MAX_TEXT_BYTES: usize = 1024;

/// A Slurm job step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepId {
    /// Slurm job id.
    pub job: u32,
    /// Step id.
    pub step: u32,
}

/// One cell of a heartbeat's row: a step's rank on this PE.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cell {
    /// The step.
    pub step: StepId,
    /// The rank (Slurm's global task id).
    pub rank: u32,
}

/// How a task ended, as its NM saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum TaskEnd {
    /// It exited (the status is Slurm's to report).
    Exited,
    /// It was killed or ended while Keel held it; the NM resumed it first.
    Released,
}

/// Every message between the MM and an NM. Times are nanoseconds of the
/// sender's monotonic clock unless the field says otherwise.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Msg {
    /// NM → MM, first message: the node and its PEs.
    Hello {
        /// Node name (Slurm's).
        node: String,
        /// PEs (CPUs) the NM schedules.
        pes: u32,
        /// The host's boot id: NMs with the MM's boot id share its clock.
        boot_id: String,
    },
    /// MM → NM: accepted, with the MM's policy and slot length.
    Welcome {
        /// The node's index in the MM's matrix.
        node_index: u32,
        /// The policy spec the MM runs.
        policy: String,
        /// Slot length, ns.
        slot_ns: u64,
    },
    /// MM → NM: not accepted (the connection closes after).
    Refused {
        /// Why.
        reason: String,
    },
    /// NM → MM: a clock probe.
    Ping {
        /// Probe id.
        id: u64,
        /// NM clock at sending.
        sent_ns: u64,
    },
    /// MM → NM: the answer to a probe.
    Pong {
        /// The probe's id.
        id: u64,
        /// The probe's `sent_ns` (NM clock).
        ping_sent_ns: u64,
        /// MM clock when the probe arrived.
        received_ns: u64,
        /// MM clock when this answer left.
        sent_ns: u64,
    },
    /// MM → NM: switch to `row` at `switch_at_ns` (MM clock).
    Heartbeat {
        /// Slot number.
        slot: u64,
        /// Matrix row.
        row: u32,
        /// Switch instant, MM clock.
        switch_at_ns: u64,
        /// The row's cell on each of the node's PEs.
        cells: Vec<Option<Cell>>,
    },
    /// NM → MM: a Slurm task registered on PE `pe`.
    TaskUp {
        /// Its step.
        step: StepId,
        /// Its rank.
        rank: u32,
        /// Tasks in the step.
        size: u32,
        /// The node-local PE it was given.
        pe: u32,
    },
    /// NM → MM: a task ended.
    TaskDown {
        /// Its step.
        step: StepId,
        /// Its rank.
        rank: u32,
        /// How.
        end: TaskEnd,
    },
    /// NM → MM: FCS changed a task's class.
    Classified {
        /// Its step.
        step: StepId,
        /// Its rank.
        rank: u32,
        /// New class: `cs`, `f`, `dc`.
        class: String,
        /// Slot at whose start it happened.
        slot: u64,
    },
    /// NM → MM: when the NM enacted a slot's switch.
    Enacted {
        /// The slot.
        slot: u64,
        /// The enactment instant, NM clock.
        local_ns: u64,
        /// The same instant on the MM's clock by the NM's estimate of
        /// their offset (signed: an estimate can fall before the MM's 0).
        mm_ns: i64,
    },
    /// NM → MM: something the operator should read once.
    Notice {
        /// The text.
        text: String,
    },
}

/// Why a connection failed.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// Socket error.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// Authentication failed.
    #[error("authentication: {0}")]
    Auth(#[from] AuthError),
    /// A frame or message broke the protocol.
    #[error("protocol: {0}")]
    Protocol(String),
    /// The peer speaks another version.
    #[error("peer speaks wire version {0}, this is {WIRE_VERSION}")]
    Version(u16),
    /// The peer closed the connection.
    #[error("connection closed")]
    Closed,
}

/// Which side of a connection this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// The machine manager.
    Mm,
    /// A node manager.
    Nm,
}

/// Who may talk to us.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerPolicy {
    /// The uid the peer's credential must carry, where the authenticator
    /// vouches for uids (MUNGE). `None`: any.
    pub uid: Option<u32>,
}

/// The sending half of an established connection.
#[derive(Debug)]
pub struct ConnTx {
    _private: (),
}

/// The receiving half of an established connection.
#[derive(Debug)]
pub struct ConnRx {
    _private: (),
}

/// Establishes an authenticated session on `stream` as `role` (greetings
/// exchanged and checked within `timeout`), then splits it.
pub fn handshake(
    _stream: TcpStream,
    _role: Role,
    _auth: Arc<dyn Authenticator>,
    _peer: PeerPolicy,
    _timeout: Duration,
) -> Result<(ConnTx, ConnRx), WireError> {
    todo!()
}

impl ConnTx {
    /// Seals and sends one message.
    pub fn send(&mut self, _msg: &Msg) -> Result<(), WireError> {
        todo!()
    }
    /// Closes both directions (the reader sees `Closed`).
    pub fn shutdown(&self) {
        todo!()
    }
}

impl ConnRx {
    /// Receives, opens and checks the next message (blocks; `timeout`
    /// bounds the wait: `Ok(None)` when it passes with nothing read).
    pub fn recv(&mut self, _timeout: Option<Duration>) -> Result<Option<Msg>, WireError> {
        todo!()
    }
}
