//! The control socket: a Unix stream socket on which users list, inspect,
//! kill and submit jobs, authenticated by the kernel's peer credentials
//! (`SO_PEERCRED`), never by anything the client says.
//!
//! Protocol: one request line per connection, one reply (first line `ok`
//! or `error: ...`, then data lines), then the server closes.
//!
//! | request | who may |
//! |---|---|
//! | `list` | anyone: lists only the caller's own jobs |
//! | `status ID` | the job's owner |
//! | `kill ID` | the job's owner |
//! | `submit JOB-LINE` | anyone the daemon can run jobs for: the job is the caller's (a root daemon runs it under the caller's uid and gid; a non-root daemon accepts only its own user) |
//! | `shutdown` | the daemon's own user |
//!
//! **Only the user who submitted a job may control it — root included.**
//! An exemption would add nothing:
//! root can signal any process anyway, outside this interface, while the
//! daemon's answer to "who may control job N through me" stays one rule
//! with no exception to audit. The socket file is made world-connectable
//! (0666) on purpose, so that the refusal is the credential check's and
//! can be tested, not the file mode's.
//!
//! **No client can hold the server or crash the manager.** Every
//! connection is served on its own thread, at most [`MAX_CONNECTIONS`] at
//! once and [`MAX_CONNECTIONS_PER_USER`] per uid (beyond that the client
//! is answered `error: busy ...` at once and closed); the whole request
//! must arrive within [`REQUEST_DEADLINE`] (not per read: a client
//! trickling one byte at a time is cut off at the deadline) and within
//! [`MAX_REQUEST`] bytes; the reply must be taken within
//! [`REPLY_DEADLINE`]. Job lines are bounded field by field when parsed
//! (`job.rs`), checked against the machine before anything is allocated
//! for them, and at most [`MAX_LIVE_JOBS`] submitted jobs may be unended.
//!
//! Parsing requests, and the ownership rule (root is no exception):
//!
//! ```
//! use keel_cosched::control::{authorize, ControlCommand};
//! assert_eq!(ControlCommand::parse("kill 7"), Ok(ControlCommand::Kill(7)));
//! assert!(ControlCommand::parse("kill seven").is_err());
//! assert!(authorize(1000, 1000).is_ok());
//! assert!(authorize(0, 1000).is_err());
//! ```

use std::collections::{HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::sys::deadline::{drain_by, ms_until, read_line_by, write_by, LineError, LineRule};

use keel_policy::cosched::JobId;

use crate::sys::{self, PeerCred};

/// Longest request, bytes, its newline included.
pub const MAX_REQUEST: u64 = 8192;
/// How long a client may take to send its whole request.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(2);
/// How long a client may take to read the whole reply.
pub const REPLY_DEADLINE: Duration = Duration::from_secs(2);
/// How long the server waits for the manager's answer.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections served at once; one more is answered `error: busy`.
pub const MAX_CONNECTIONS: usize = 64;
/// Connections of one uid served at once, so that one user cannot take
/// every slot.
pub const MAX_CONNECTIONS_PER_USER: usize = 8;
/// Submitted jobs that may be waiting or running at once.
pub const MAX_LIVE_JOBS: usize = 256;
/// Job records a daemon keeps; past that, the oldest ended ones are
/// forgotten.
pub const MAX_KEPT_JOBS: usize = 10_000;
/// Longest reply [`request`] reads, bytes.
pub const MAX_REPLY: u64 = 16 * 1024 * 1024;
/// How often the server checks whether it should stop, ms.
const STOP_POLL_MS: libc::c_int = 100;

/// A parsed request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControlCommand {
    /// The caller's jobs.
    List,
    /// One job.
    Status(JobId),
    /// End one job.
    Kill(JobId),
    /// A job line, as in a job file.
    Submit(String),
    /// Stop the daemon.
    Shutdown,
}

impl ControlCommand {
    /// Parses a request line.
    pub fn parse(line: &str) -> Result<ControlCommand, String> {
        let line = line.trim();
        let (verb, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let rest = rest.trim();
        let id = |what: &str| -> Result<JobId, String> {
            rest.parse()
                .map_err(|_| format!("`{what}` needs a job id, got `{rest}`"))
        };
        match verb {
            "list" if rest.is_empty() => Ok(ControlCommand::List),
            "status" => id("status").map(ControlCommand::Status),
            "kill" => id("kill").map(ControlCommand::Kill),
            "submit" if !rest.is_empty() => Ok(ControlCommand::Submit(rest.to_string())),
            "submit" => Err("`submit` needs a job line: NAME RANKS [KEY=VALUE ...] -- COMMAND [ARG ...]".into()),
            "shutdown" if rest.is_empty() => Ok(ControlCommand::Shutdown),
            _ => Err(format!(
                "unknown request `{line}`; valid: list, status ID, kill ID, submit JOB-LINE, shutdown"
            )),
        }
    }
}

/// A peer that may not control a job.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("permission denied: the job belongs to uid {owner}, and you are uid {peer}")]
pub struct Denied {
    /// The job's owner.
    pub owner: u32,
    /// The caller.
    pub peer: u32,
}

/// The rule: only the job's owner may control it (no root exemption).
pub fn authorize(peer_uid: u32, owner_uid: u32) -> Result<(), Denied> {
    if peer_uid == owner_uid {
        Ok(())
    } else {
        Err(Denied {
            owner: owner_uid,
            peer: peer_uid,
        })
    }
}

/// A request on its way to the manager.
pub(crate) struct ControlRequest {
    pub(crate) peer: PeerCred,
    pub(crate) command: ControlCommand,
    pub(crate) reply: Sender<String>,
}

/// Where the server hands each request it read and authenticated: the
/// machine manager's queue. A trait, so that this module — the socket's
/// trust boundary — reads alone, without the manager it serves.
pub(crate) trait ToManager: Clone + Send + 'static {
    /// Hands `request` over; `false` when the manager is gone.
    fn hand_over(&self, request: ControlRequest) -> bool;
}

/// The listening side, run on its own thread.
pub(crate) struct ControlServer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    path: PathBuf,
}

impl ControlServer {
    /// Binds `path` (replacing a stale socket, refusing a live one) and
    /// serves until [`ControlServer::stop`].
    pub(crate) fn start(path: &Path, to_manager: impl ToManager) -> io::Result<ControlServer> {
        if path.exists() {
            if UnixStream::connect(path).is_ok() {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    "another daemon is listening there",
                ));
            }
            std::fs::remove_file(path)?;
        }
        let listener = UnixListener::bind(path)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))?;
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("keel-control".into())
            .spawn(move || serve(listener, flag, to_manager))?;
        Ok(ControlServer {
            stop,
            thread: Some(thread),
            path: path.to_path_buf(),
        })
    }

    /// Stops serving and removes the socket file.
    pub(crate) fn stop(mut self) {
        self.shut();
    }

    fn shut(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.shut();
    }
}

/// Connections in progress, in all and per uid.
#[derive(Default)]
struct Slots {
    total: usize,
    per_uid: HashMap<u32, usize>,
}

/// One connection's hold on [`Slots`], given back when dropped.
struct Slot {
    slots: Arc<Mutex<Slots>>,
    uid: u32,
}

impl Slot {
    /// Takes a slot for `uid`, or says why not.
    fn take(slots: &Arc<Mutex<Slots>>, uid: u32) -> Result<Slot, String> {
        let mut s = slots.lock().unwrap_or_else(|e| e.into_inner());
        if s.total >= MAX_CONNECTIONS {
            return Err(format!(
                "error: busy: {MAX_CONNECTIONS} requests are in progress (MAX_CONNECTIONS); try again"
            ));
        }
        let mine = s.per_uid.entry(uid).or_insert(0);
        if *mine >= MAX_CONNECTIONS_PER_USER {
            return Err(format!(
                "error: busy: uid {uid} has {MAX_CONNECTIONS_PER_USER} requests in progress (MAX_CONNECTIONS_PER_USER); try again"
            ));
        }
        *mine += 1;
        s.total += 1;
        Ok(Slot {
            slots: Arc::clone(slots),
            uid,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut s = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        s.total -= 1;
        if let Some(n) = s.per_uid.get_mut(&self.uid) {
            *n -= 1;
            if *n == 0 {
                s.per_uid.remove(&self.uid);
            }
        }
    }
}

/// Refused (busy) connections held open at once, so that their message
/// is not lost; the oldest is closed to make room.
const MAX_REFUSED_HELD: usize = 64;
/// How long a refused connection is held open at most.
const REFUSED_LINGER: Duration = Duration::from_millis(500);

/// Accepts connections and hands each to its own thread, so that a slow
/// or silent client delays nobody else.
fn serve(listener: UnixListener, stop: Arc<AtomicBool>, to_manager: impl ToManager) {
    let slots = Arc::new(Mutex::new(Slots::default()));
    // Closing a Unix socket with unread data resets it, and the client
    // would lose the `busy` message under the reset: refused connections
    // stay open here, their input read away, until the client closes or
    // REFUSED_LINGER passes.
    let mut refused: VecDeque<(UnixStream, Instant)> = VecDeque::new();
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        refused.retain(|(_, until)| *until > now);
        let mut fds: Vec<libc::pollfd> = std::iter::once(listener.as_raw_fd())
            .chain(refused.iter().map(|(s, _)| s.as_raw_fd()))
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let wait = refused
            .iter()
            .map(|(_, until)| ms_until(*until).unwrap_or(0))
            .fold(STOP_POLL_MS, libc::c_int::min);
        // SAFETY: `fds` is a valid array of fds.len() pollfds for the call.
        if unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, wait) } <= 0 {
            continue;
        }
        let mut i = 0;
        refused.retain(|(s, _)| {
            i += 1;
            fds[i].revents == 0 || drain_now(s)
        });
        if fds[0].revents == 0 {
            continue;
        }
        let Ok((stream, _)) = listener.accept() else {
            continue;
        };
        if stream.set_nonblocking(true).is_err() {
            continue;
        }
        let taken = sys::peer_cred(&stream)
            .map_err(|e| format!("error: cannot read your credentials: {e}"))
            .and_then(|peer| Slot::take(&slots, peer.uid).map(|slot| (peer, slot)));
        let (peer, slot) = match taken {
            Ok(t) => t,
            Err(why) => {
                // One non-blocking write: a client that does not read
                // loses the message, the server loses nothing.
                let _ = (&stream).write((why + "\n").as_bytes());
                let _ = stream.shutdown(std::net::Shutdown::Write);
                if drain_now(&stream) {
                    if refused.len() >= MAX_REFUSED_HELD {
                        refused.pop_front();
                    }
                    refused.push_back((stream, Instant::now() + REFUSED_LINGER));
                }
                continue;
            }
        };
        let to_manager = to_manager.clone();
        // A failed spawn drops the closure, closing the stream and giving
        // the slot back.
        let _ = std::thread::Builder::new()
            .name("keel-control-conn".into())
            .spawn(move || {
                let _slot = slot;
                let reply = handle(&stream, peer, &to_manager);
                let deadline = Instant::now() + REPLY_DEADLINE;
                if write_by(&stream, format!("{reply}\n").as_bytes(), deadline).is_ok() {
                    let _ = stream.shutdown(std::net::Shutdown::Write);
                    drain_by(&stream, deadline);
                }
            });
    }
}

/// Reads away what a non-blocking stream holds now (at most
/// [`MAX_REQUEST`] bytes); false once the client has closed or failed.
fn drain_now(stream: &UnixStream) -> bool {
    let mut chunk = [0u8; 4096];
    let mut left = MAX_REQUEST;
    while left > 0 {
        match (&*stream).read(&mut chunk) {
            Ok(0) => return false,
            Ok(n) => left = left.saturating_sub(n as u64),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return e.kind() == io::ErrorKind::WouldBlock,
        }
    }
    true
}

/// Reads one request line (up to a newline or the end of the stream),
/// without its newline: within [`MAX_REQUEST`] bytes and by `deadline`.
fn read_request(stream: &UnixStream, deadline: Instant) -> Result<String, String> {
    let mut line = read_line_by(
        stream,
        MAX_REQUEST as usize,
        deadline,
        LineRule::FirstLineOrEof,
    )
    .map_err(|e| match e {
        LineError::TooLong => {
            format!("the request is longer than {MAX_REQUEST} bytes (MAX_REQUEST)")
        }
        LineError::TimedOut => format!(
            "the request did not arrive within {} s (REQUEST_DEADLINE)",
            REQUEST_DEADLINE.as_secs_f64()
        ),
        other => other.to_string(),
    })?;
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    String::from_utf8(line).map_err(|_| "the request is not UTF-8 text".to_string())
}

/// Reads one request and asks the manager.
fn handle(stream: &UnixStream, peer: PeerCred, to_manager: &impl ToManager) -> String {
    let line = match read_request(stream, Instant::now() + REQUEST_DEADLINE) {
        Ok(l) => l,
        Err(e) => return format!("error: {e}"),
    };
    let command = match ControlCommand::parse(&line) {
        Ok(c) => c,
        Err(e) => return format!("error: {e}"),
    };
    let (tx, rx) = mpsc::channel();
    let req = ControlRequest {
        peer,
        command,
        reply: tx,
    };
    if !to_manager.hand_over(req) {
        return "error: the manager is shutting down".into();
    }
    rx.recv_timeout(ANSWER_TIMEOUT)
        .unwrap_or_else(|_| "error: the manager did not answer".into())
}

/// Sends one request line to a daemon and returns its reply.
pub fn request(path: &Path, line: &str) -> io::Result<String> {
    let mut s = UnixStream::connect(path)?;
    s.set_read_timeout(Some(ANSWER_TIMEOUT + REQUEST_DEADLINE + REPLY_DEADLINE))?;
    s.set_write_timeout(Some(REQUEST_DEADLINE))?;
    let sent = s
        .write_all(line.trim_end().as_bytes())
        .and_then(|()| s.write_all(b"\n"));
    // The server may have answered already (busy, too long) and closed:
    // its reply is still there to read.
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut reply = String::new();
    let read = (&s).take(MAX_REPLY).read_to_string(&mut reply);
    if reply.is_empty() {
        sent?;
        read?;
    }
    Ok(reply.trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse() {
        assert_eq!(ControlCommand::parse("list\n"), Ok(ControlCommand::List));
        assert_eq!(
            ControlCommand::parse("kill 42"),
            Ok(ControlCommand::Kill(42))
        );
        assert_eq!(
            ControlCommand::parse(" status  7 "),
            Ok(ControlCommand::Status(7))
        );
        assert_eq!(
            ControlCommand::parse("submit a 1 -- true"),
            Ok(ControlCommand::Submit("a 1 -- true".into()))
        );
        assert!(ControlCommand::parse("kill x")
            .unwrap_err()
            .contains("job id"));
        assert!(ControlCommand::parse("submit").is_err());
        assert!(ControlCommand::parse("reboot")
            .unwrap_err()
            .contains("valid: list"));
    }

    #[test]
    fn only_the_owner_is_authorized() {
        assert!(authorize(1000, 1000).is_ok());
        assert_eq!(
            authorize(65534, 0),
            Err(Denied {
                owner: 0,
                peer: 65534
            })
        );
        // Root gets no exemption.
        assert!(authorize(0, 1000).is_err());
    }
}
