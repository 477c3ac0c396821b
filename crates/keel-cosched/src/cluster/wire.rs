//! The MM ↔ NM protocol: TCP, one connection per NM, each message sealed
//! by an [`Authenticator`].
//!
//! - A frame is a 4-byte big-endian length `N` (`1..=MAX_FRAME_BYTES`),
//!   then `N` bytes: one sealed payload ([`read_frame`], [`write_frame`]).
//!   A length is checked before anything is allocated for it.
//! - Each side first sends a [`Greeting`] (`{"v":1,"role":"nm","nonce":N}`)
//!   and checks the peer's ([`handshake`]): authenticated, the allowed
//!   uid, the same version, the other role.
//! - Then each message is an envelope `{"to":NONCE,"seq":K,"msg":MSG}`
//!   ([`encode_envelope`], [`decode_envelope`]): `to` is the receiver's
//!   greeting nonce, so an envelope replayed into another connection is
//!   refused; `seq` counts 1, 2, 3, ... per direction, so one replayed or
//!   reordered within a connection is refused. MUNGE refuses a replayed
//!   credential as well; a shared key relies on these two checks alone.
//! - Every message is checked against the bounds of [`Msg::validate`].
//!
//! Frame size: a heartbeat of [`MAX_CELLS`] cells with plausible ids (job
//! ids of 7 digits, ranks of 4) is about 47 KB of JSON, 63 KB once sealed
//! as a MUNGE credential (base64), within [`MAX_FRAME_BYTES`]; with every
//! id at `u32::MAX` it is 66 KB before sealing, which no frame carries.
//! [`ConnTx::send`] refuses a message that does not fit, naming its size.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::auth::{random_u64, AuthError, Authenticator};

mod codec;
mod validate;

use codec::cut;
pub use codec::{
    decode_envelope, decode_greeting, encode_envelope, encode_frame, encode_greeting, frame_len,
    read_frame, write_frame, Greeting, HEADER_BYTES,
};

/// The protocol version; a peer speaking another is refused.
pub const WIRE_VERSION: u16 = 1;
/// Largest frame accepted, bytes.
pub const MAX_FRAME_BYTES: usize = 256 * 1024;
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

/// How long a frame, once its first byte has arrived, may take to arrive
/// in full before [`ConnRx::recv`] gives up on the peer (by default; see
/// [`ConnRx::set_frame_deadline`]): a frame is at most 64 KiB, which any
/// live link carries in far less, so a peer that stalls mid-frame is
/// broken or hostile, and must not hold the receiver.
pub const FRAME_DEADLINE: Duration = Duration::from_secs(5);

/// How long [`ConnTx::send`] may block on a peer that does not read
/// (its receive buffer and ours full) before it fails.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

impl Role {
    /// `mm` or `nm`, as on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Role::Mm => "mm",
            Role::Nm => "nm",
        }
    }

    /// The role at the other end of a connection.
    pub fn other(self) -> Role {
        match self {
            Role::Mm => Role::Nm,
            Role::Nm => Role::Mm,
        }
    }
}

/// The sending half of an established connection.
#[derive(Debug)]
pub struct ConnTx {
    stream: TcpStream,
    auth: Arc<dyn Authenticator>,
    /// The peer's greeting nonce, which each envelope carries.
    to: u64,
    /// The last sequence number sent (0 before the first).
    seq: u64,
    /// Why an earlier send failed: a frame may be half written, so the
    /// stream is unusable.
    failed: Option<String>,
}

/// The receiving half of an established connection.
#[derive(Debug)]
pub struct ConnRx {
    stream: TcpStream,
    auth: Arc<dyn Authenticator>,
    peer: PeerPolicy,
    /// The uid the peer's greeting carried, where the authenticator
    /// vouches for one.
    peer_uid: Option<u32>,
    /// This side's greeting nonce: every envelope must be addressed to it.
    nonce: u64,
    /// The last sequence number received (0 before the first).
    seq: u64,
    frame_deadline: Duration,
    /// Set once the connection ended or broke: later calls say so again
    /// rather than read from a stream in an unknown state.
    broken: Option<Broken>,
}

#[derive(Debug)]
enum Broken {
    Closed,
    Failed(String),
}

/// `now + t`, or `None` (no limit) past what an `Instant` holds.
fn deadline_after(t: Duration) -> Option<Instant> {
    Instant::now().checked_add(t)
}

/// Refuses an opened message whose credential names a uid other than the
/// one `peer` allows (only where both are known: a shared key names none).
fn check_uid(peer: PeerPolicy, uid: Option<u32>) -> Result<(), WireError> {
    match (peer.uid, uid) {
        (Some(want), Some(got)) if want != got => Err(WireError::Auth(AuthError::Invalid(
            format!("the peer's credential carries uid {got}, but only uid {want} may connect"),
        ))),
        _ => Ok(()),
    }
}

/// Establishes an authenticated session on `stream` as `role` (greetings
/// exchanged and checked within `timeout`), then splits it.
///
/// Each side first sends its sealed [`Greeting`] (version, role and a
/// random nonce), then reads the peer's and refuses it unless the
/// authenticator opens it, its credential's uid is the one `peer` allows
/// (where both are known), its version is [`WIRE_VERSION`]
/// ([`WireError::Version`] otherwise) and its role is the other one.
/// Every later message is an envelope addressed to the receiver's nonce
/// and numbered from 1 ([`encode_envelope`]), which makes replays from
/// another session or within this one detectable.
///
/// Sets `TCP_NODELAY` (heartbeats are small and late ones are useless)
/// and a [`WRITE_TIMEOUT`] on the socket.
pub fn handshake(
    stream: TcpStream,
    role: Role,
    auth: Arc<dyn Authenticator>,
    peer: PeerPolicy,
    timeout: Duration,
) -> Result<(ConnTx, ConnRx), WireError> {
    let by = deadline_after(timeout);
    stream.set_nodelay(true)?;
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    let nonce = random_u64()?;
    let sealed = auth.seal(&encode_greeting(role, nonce))?;
    write_frame(&mut &stream, &sealed)?;
    let frame = recv_frame(&stream, by, |_| by)?.ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!("no greeting from the peer within {timeout:?}"),
        )
    })?;
    let opened = auth.open(&frame)?;
    check_uid(peer, opened.uid)?;
    let greeting = decode_greeting(&opened.payload)?;
    if greeting.role == role {
        return Err(WireError::Protocol(format!(
            "the peer greets as {0} too, where an {1} belongs",
            role.name(),
            role.other().name()
        )));
    }
    if greeting.nonce == nonce {
        return Err(WireError::Protocol(
            "the peer's nonce is ours: our own greeting reflected back".into(),
        ));
    }
    let rx = ConnRx {
        stream: stream.try_clone()?,
        auth: Arc::clone(&auth),
        peer,
        peer_uid: opened.uid,
        nonce,
        seq: 0,
        frame_deadline: FRAME_DEADLINE,
        broken: None,
    };
    let tx = ConnTx {
        stream,
        auth,
        to: greeting.nonce,
        seq: 0,
        failed: None,
    };
    Ok((tx, rx))
}

/// What one read attempt found.
enum Got {
    Bytes(usize),
    TimedOut,
}

/// One `read` into `buf`, waiting until `by` (`None`: for ever). Tries
/// once even when `by` has passed, so that a zero wait polls.
fn read_some(stream: &TcpStream, buf: &mut [u8], by: Option<Instant>) -> Result<Got, WireError> {
    let mut tried = false;
    loop {
        let wait = match by {
            None => None,
            Some(by) => {
                let left = by.saturating_duration_since(Instant::now());
                if left.is_zero() && tried {
                    return Ok(Got::TimedOut);
                }
                // A zero read timeout means "none" to the socket: wait a
                // moment instead.
                Some(left.max(Duration::from_micros(1)))
            }
        };
        stream.set_read_timeout(wait)?;
        tried = true;
        match (&*stream).read(buf) {
            Ok(n) => return Ok(Got::Bytes(n)),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::Interrupted
                        | io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(WireError::Io(e)),
        }
    }
}

/// Reads until `buf` is full, by `by`: the rest of a frame whose start
/// (`before` bytes of the `want` of this `part`) has been read.
fn finish(
    stream: &TcpStream,
    buf: &mut [u8],
    by: Option<Instant>,
    part: &str,
    before: usize,
    want: usize,
) -> Result<(), WireError> {
    let mut got = 0;
    while got < buf.len() {
        match read_some(stream, &mut buf[got..], by)? {
            Got::Bytes(0) => return Err(cut(part, before + got, want)),
            Got::Bytes(n) => got += n,
            Got::TimedOut => {
                return Err(WireError::Protocol(format!(
                    "the peer stalled in a frame's {part}: {} of {want} bytes in time",
                    before + got
                )))
            }
        }
    }
    Ok(())
}

/// Reads one frame from `stream`: its first byte until `first_by` (`None`:
/// for ever; `Ok(None)` when it passes with nothing read), the rest until
/// `rest_by(instant of the first byte)`. The same checks as
/// [`read_frame`].
fn recv_frame(
    stream: &TcpStream,
    first_by: Option<Instant>,
    rest_by: impl FnOnce(Instant) -> Option<Instant>,
) -> Result<Option<Vec<u8>>, WireError> {
    let mut header = [0u8; HEADER_BYTES];
    let n = match read_some(stream, &mut header, first_by)? {
        Got::TimedOut => return Ok(None),
        Got::Bytes(0) => return Err(WireError::Closed),
        Got::Bytes(n) => n,
    };
    let by = rest_by(Instant::now());
    finish(stream, &mut header[n..], by, "length", n, HEADER_BYTES)?;
    let len = frame_len(header)?;
    let mut payload = vec![0u8; len];
    finish(stream, &mut payload, by, "payload", 0, len)?;
    Ok(Some(payload))
}

impl ConnTx {
    /// Seals and sends one message.
    ///
    /// The message is checked first ([`Msg::validate`]), and a message
    /// whose sealed form would exceed [`MAX_FRAME_BYTES`] is refused
    /// ([`WireError::Protocol`]), so that nothing the peer would refuse is
    /// sent. A write blocked for [`WRITE_TIMEOUT`] fails with
    /// [`WireError::Io`]; after a failed write every later send fails too
    /// (a frame may be half written).
    pub fn send(&mut self, msg: &Msg) -> Result<(), WireError> {
        if let Some(why) = &self.failed {
            return Err(WireError::Protocol(format!(
                "an earlier send failed: {why}"
            )));
        }
        msg.validate()?;
        let seq = self.seq + 1;
        let sealed = self.auth.seal(&encode_envelope(self.to, seq, msg))?;
        let frame = encode_frame(&sealed).map_err(|_| {
            WireError::Protocol(format!(
                "{} message of {} bytes sealed ({}), more than a frame's {MAX_FRAME_BYTES}",
                msg.kind(),
                sealed.len(),
                self.auth.name()
            ))
        })?;
        if let Err(e) = (&self.stream).write_all(&frame) {
            let e = if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) {
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("the peer has not read for {WRITE_TIMEOUT:?}"),
                )
            } else {
                e
            };
            self.failed = Some(e.to_string());
            return Err(WireError::Io(e));
        }
        self.seq = seq;
        Ok(())
    }

    /// Closes both directions (the reader sees `Closed`).
    pub fn shutdown(&self) {
        // Fails only when the peer is gone already, which is the goal.
        let _ = self.stream.shutdown(Shutdown::Both);
    }
}

impl ConnRx {
    /// Receives, opens and checks the next message (blocks; `timeout`
    /// bounds the wait: `Ok(None)` when it passes with nothing read).
    ///
    /// Once a frame has begun, it must arrive in full within the frame
    /// deadline ([`FRAME_DEADLINE`] by default) whatever `timeout` says.
    /// The message must open under the authenticator, carry the allowed
    /// uid (where known), and be the next envelope of this session
    /// ([`decode_envelope`]). After an error every later call fails the
    /// same way ([`WireError::Closed`] once the peer closed).
    pub fn recv(&mut self, timeout: Option<Duration>) -> Result<Option<Msg>, WireError> {
        match &self.broken {
            Some(Broken::Closed) => return Err(WireError::Closed),
            Some(Broken::Failed(why)) => {
                return Err(WireError::Protocol(format!(
                    "the connection failed earlier: {why}"
                )))
            }
            None => {}
        }
        let result = self.recv_checked(timeout);
        match &result {
            Err(WireError::Closed) => self.broken = Some(Broken::Closed),
            Err(e) => self.broken = Some(Broken::Failed(e.to_string())),
            Ok(_) => {}
        }
        result
    }

    fn recv_checked(&mut self, timeout: Option<Duration>) -> Result<Option<Msg>, WireError> {
        let frame_deadline = self.frame_deadline;
        let first_by = timeout.and_then(deadline_after);
        let Some(frame) = recv_frame(&self.stream, first_by, |start| {
            start.checked_add(frame_deadline)
        })?
        else {
            return Ok(None);
        };
        let opened = self.auth.open(&frame)?;
        check_uid(self.peer, opened.uid)?;
        let msg = decode_envelope(&opened.payload, self.nonce, self.seq + 1)?;
        self.seq += 1;
        Ok(Some(msg))
    }

    /// Sets how long a frame may take to arrive in full once its first
    /// byte has ([`FRAME_DEADLINE`] by default).
    pub fn set_frame_deadline(&mut self, deadline: Duration) {
        self.frame_deadline = deadline;
    }

    /// The uid the peer's credential carried in its greeting, where the
    /// authenticator vouches for one (MUNGE); `None` for a shared key.
    pub fn peer_uid(&self) -> Option<u32> {
        self.peer_uid
    }
}
