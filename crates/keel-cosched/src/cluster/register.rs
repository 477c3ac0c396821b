//! The NM's registration socket: where the SPANK plugin
//! (`crates/keel-cosched/spank/`) registers each Slurm task with the node
//! manager of its node, from the task's own process, before the task's
//! program is executed.
//!
//! Protocol: one request line per connection, one reply line, then the
//! server closes.
//!
//! ```text
//! keel-register 1 job=J step=S rank=R size=N local_rank=L local_size=M nodes=K pid=P uid=U gid=G [policy=NAME]\n
//! ok page=/abs/path\n            (registered: the task's monitoring page)
//! refused REASON\n               (not registered, and why)
//! ```
//!
//! **The kernel says who is registering, not the request.** The request
//! names the task's pid and uid; the server reads the connecting
//! process's credentials (`SO_PEERCRED`) and refuses, before the handler
//! sees anything, a request whose pid is not the peer's own (a process
//! registers only itself, so nobody can put another process under the
//! gang scheduler's `SIGSTOP`/`SIGCONT`) or whose uid is neither the
//! peer's nor the peer root's (the plugin registers from
//! `slurm_spank_task_init_privileged`, which runs as root in the task's
//! process before it becomes the job's user).
//!
//! **The socket is root's alone.** It is made mode 0600 in a directory
//! that must belong to the server's user and be writable by nobody else,
//! so that no other user can replace it or reach it; an existing entry
//! at the path is replaced only when it is a socket of ours that nobody
//! answers on (a stale one), never followed when it is a link.
//!
//! **No client can hold the server.** Every connection is served on its
//! own thread, at most [`MAX_CONNECTIONS`] at once (one more is answered
//! `refused busy ...` at once); the whole request must arrive within
//! [`REQUEST_DEADLINE`] and [`MAX_REQUEST_BYTES`], the reply must be
//! taken within [`REPLY_DEADLINE`].
//!
//! ```
//! use keel_cosched::cluster::register::{Registration, Reply};
//! let line = b"keel-register 1 job=7 step=0 rank=1 size=2 local_rank=0 local_size=1 nodes=2 pid=4242 uid=1000 gid=1000 policy=fcs\n";
//! let reg = Registration::parse(line).unwrap();
//! assert_eq!((reg.job, reg.rank, reg.policy.as_deref()), (7, 1, Some("fcs")));
//! assert_eq!(Registration::parse(reg.encode().as_bytes()), Ok(reg));
//! let ok = Reply::Accepted { page: "/run/keel-cosched/7.0.1".into() };
//! assert_eq!(ok.encode(), "ok page=/run/keel-cosched/7.0.1\n");
//! assert_eq!(Reply::parse(&ok.encode()), Ok(ok));
//! ```

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::sys::deadline::{drain_by, ms_until, poll_fd, write_by};
use crate::sys::{self, PeerCred};

/// Protocol version of a registration line.
pub const REGISTER_VERSION: u32 = 1;
/// Longest request accepted, bytes.
pub const MAX_REQUEST_BYTES: usize = 1024;
/// Default socket path.
pub const DEFAULT_SOCKET: &str = "/run/keel-cosched/nm.sock";

/// The first word of every request line.
pub const REQUEST_MAGIC: &str = "keel-register";
/// Longest reply line, bytes, its newline included: a page path of up to
/// `PATH_MAX` (4096) bytes less the `ok page=` and the newline. The
/// plugin reads replies into a buffer of this size.
pub const MAX_REPLY_BYTES: usize = 4096;
/// Longest policy name.
pub const MAX_POLICY_LEN: usize = 64;
/// How long a client may take to send its whole request.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(2);
/// How long a client may take to read the whole reply.
pub const REPLY_DEADLINE: Duration = Duration::from_secs(2);
/// Connections served at once; one more is refused `busy` at once. The
/// tasks of a node register as they start, so this bounds a burst of
/// task starts, not the tasks a node may run.
pub const MAX_CONNECTIONS: usize = 64;
/// How often the accepting thread checks whether it should stop, ms.
const STOP_POLL_MS: libc::c_int = 100;

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

fn err(msg: impl Into<String>) -> RegisterError {
    RegisterError(msg.into())
}

/// The keys of a request, in the order [`Registration::encode`] writes
/// them: the numbers, then the optional `policy`.
pub const KEYS: [&str; 11] = [
    "job",
    "step",
    "rank",
    "size",
    "local_rank",
    "local_size",
    "nodes",
    "pid",
    "uid",
    "gid",
    "policy",
];

/// A decimal `u32`: digits only (no sign, no `0x`, no spaces), which is
/// what the plugin's `%u` writes; anything else is refused rather than
/// guessed at.
fn decimal(key: &str, value: &str) -> Result<u32, RegisterError> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(err(format!("`{key}`: `{value}` is not a decimal number")));
    }
    value.parse::<u32>().map_err(|_| {
        err(format!(
            "`{key}`: {value} is out of range (at most {})",
            u32::MAX
        ))
    })
}

/// Whether `name` is a policy name: `[a-z0-9:=.,_-]{1,64}`, so that it
/// can travel in a line, a log and a file name without quoting.
pub fn valid_policy(name: &str) -> bool {
    (1..=MAX_POLICY_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b":=.,_-".contains(&b))
}

impl Registration {
    /// Parses one request line (its newline optional).
    pub fn parse(bytes: &[u8]) -> Result<Registration, RegisterError> {
        if bytes.len() > MAX_REQUEST_BYTES {
            return Err(err(format!(
                "the request is {} bytes, longer than {MAX_REQUEST_BYTES} (MAX_REQUEST_BYTES)",
                bytes.len()
            )));
        }
        let line = std::str::from_utf8(bytes).map_err(|_| err("the request is not UTF-8 text"))?;
        let line = line.strip_suffix('\n').unwrap_or(line);
        // Every value is a number or a policy name: a control character
        // (a second line, a NUL, a carriage return) is never part of a
        // well-formed request, and is refused rather than carried into
        // the NM's logs.
        if let Some(c) = line.chars().find(|c| c.is_control()) {
            return Err(err(format!(
                "the request holds the control character {:?}",
                c
            )));
        }
        let mut words = line.split(' ').filter(|w| !w.is_empty());
        match words.next() {
            Some(REQUEST_MAGIC) => {}
            other => {
                return Err(err(format!(
                    "not a registration: the line starts with `{}`, not `{REQUEST_MAGIC}`",
                    other.unwrap_or("")
                )))
            }
        }
        match words.next() {
            Some(v) if v == REGISTER_VERSION.to_string() => {}
            other => {
                return Err(err(format!(
                "`version`: `{}` is not supported (this node manager speaks {REGISTER_VERSION})",
                other.unwrap_or("")
            )))
            }
        }
        let mut seen: [Option<&str>; KEYS.len()] = [None; KEYS.len()];
        for word in words {
            let Some((key, value)) = word.split_once('=') else {
                return Err(err(format!("`{word}` is not KEY=VALUE")));
            };
            let Some(i) = KEYS.iter().position(|k| *k == key) else {
                return Err(err(format!(
                    "unknown key `{key}`; valid: {}",
                    KEYS.join(", ")
                )));
            };
            if seen[i].replace(value).is_some() {
                return Err(err(format!("`{key}` is given twice")));
            }
        }
        let number = |i: usize| -> Result<u32, RegisterError> {
            let key = KEYS[i];
            let value = seen[i].ok_or_else(|| err(format!("`{key}` is missing")))?;
            decimal(key, value)
        };
        let job = number(0)?;
        let step = number(1)?;
        let rank = number(2)?;
        let size = number(3)?;
        let local_rank = number(4)?;
        let local_size = number(5)?;
        let nodes = number(6)?;
        let pid = number(7)?;
        let uid = number(8)?;
        let gid = number(9)?;
        if rank >= size {
            return Err(err(format!(
                "`rank`: {rank} is not below the step's size {size}"
            )));
        }
        if local_rank >= local_size {
            return Err(err(format!(
                "`local_rank`: {local_rank} is not below local_size {local_size}"
            )));
        }
        if local_size > size {
            return Err(err(format!(
                "`local_size`: {local_size} tasks on this node, more than the step's size {size}"
            )));
        }
        if nodes == 0 || nodes > size {
            return Err(err(format!(
                "`nodes`: {nodes} is not between 1 and the step's size {size}"
            )));
        }
        // 0 and 1 are the kernel's and init's: never a task's.
        let pid = match i32::try_from(pid) {
            Ok(p) if p > 1 => p,
            _ => {
                return Err(err(format!(
                    "`pid`: {pid} is not a task's process id (2 to {})",
                    i32::MAX
                )))
            }
        };
        // (uid_t)-1 and (gid_t)-1 mean "unchanged" to the kernel, never
        // an identity.
        if uid == u32::MAX {
            return Err(err(format!("`uid`: {uid} is not a user id")));
        }
        if gid == u32::MAX {
            return Err(err(format!("`gid`: {gid} is not a group id")));
        }
        let policy = match seen[10] {
            None => None,
            Some(p) if valid_policy(p) => Some(p.to_string()),
            Some(p) => {
                return Err(err(format!(
                    "`policy`: `{p}` is not a policy name ([a-z0-9:=.,_-], 1 to {MAX_POLICY_LEN} characters)"
                )))
            }
        };
        Ok(Registration {
            job,
            step,
            rank,
            size,
            local_rank,
            local_size,
            nodes,
            pid,
            uid,
            gid,
            policy,
        })
    }

    /// The request line for this registration, newline included: what
    /// the plugin sends.
    pub fn encode(&self) -> String {
        let mut line = format!(
            "{REQUEST_MAGIC} {REGISTER_VERSION} job={} step={} rank={} size={} local_rank={} local_size={} nodes={} pid={} uid={} gid={}",
            self.job,
            self.step,
            self.rank,
            self.size,
            self.local_rank,
            self.local_size,
            self.nodes,
            self.pid,
            self.uid,
            self.gid
        );
        if let Some(p) = &self.policy {
            line.push_str(" policy=");
            line.push_str(p);
        }
        line.push('\n');
        line
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

/// Why `page` cannot travel in an `ok` reply, if it cannot.
fn page_problem(page: &Path) -> Option<String> {
    let Some(text) = page.to_str() else {
        return Some(format!("the page path {page:?} is not UTF-8"));
    };
    if !page.is_absolute() {
        return Some(format!("the page path `{text}` is not absolute"));
    }
    if text.chars().any(|c| c.is_control()) {
        return Some(format!("the page path {text:?} holds a control character"));
    }
    if "ok page=".len() + text.len() + 1 > MAX_REPLY_BYTES {
        return Some(format!(
            "the page path is {} bytes, too long for a {MAX_REPLY_BYTES}-byte reply",
            text.len()
        ));
    }
    None
}

impl Reply {
    /// The reply line, newline included. A reason is made one line
    /// (control characters become spaces) and cut to fit
    /// [`MAX_REPLY_BYTES`]; a page that cannot travel (not absolute, not
    /// UTF-8, a control character, too long) is turned into a refusal
    /// saying so, so that the line always parses.
    pub fn encode(&self) -> String {
        match self {
            Reply::Accepted { page } => match page_problem(page) {
                None => format!("ok page={}\n", page.to_string_lossy()),
                Some(why) => Reply::Refused {
                    reason: format!("the node manager's reply is invalid: {why}"),
                }
                .encode(),
            },
            Reply::Refused { reason } => {
                let room = MAX_REPLY_BYTES - "refused \n".len();
                let mut line = String::with_capacity(reason.len().min(room) + 9);
                line.push_str("refused ");
                for c in reason.chars() {
                    let c = if c.is_control() { ' ' } else { c };
                    if line.len() + c.len_utf8() > room + "refused ".len() {
                        break;
                    }
                    line.push(c);
                }
                line.push('\n');
                line
            }
        }
    }

    /// Parses a reply line (its newline optional). The bound counts the
    /// newline, as [`Reply::encode`] and the plugin's buffer do, so that
    /// every reply accepted here is one `encode` writes back unchanged.
    pub fn parse(line: &str) -> Result<Reply, RegisterError> {
        let body = line.strip_suffix('\n').unwrap_or(line);
        if body.len() + 1 > MAX_REPLY_BYTES {
            return Err(err(format!(
                "the reply is {} bytes with its newline, longer than {MAX_REPLY_BYTES} (MAX_REPLY_BYTES)",
                body.len() + 1
            )));
        }
        if let Some(c) = body.chars().find(|c| c.is_control()) {
            return Err(err(format!("the reply holds the control character {c:?}")));
        }
        if let Some(page) = body.strip_prefix("ok page=") {
            let page = PathBuf::from(page);
            if let Some(why) = page_problem(&page) {
                return Err(err(why));
            }
            return Ok(Reply::Accepted { page });
        }
        if body == "refused" {
            return Ok(Reply::Refused {
                reason: String::new(),
            });
        }
        if let Some(reason) = body.strip_prefix("refused ") {
            return Ok(Reply::Refused {
                reason: reason.to_string(),
            });
        }
        Err(err(format!(
            "not a registration reply (`ok page=PATH` or `refused REASON`): `{body}`"
        )))
    }
}

/// The rule the server enforces before any handler sees a request: a
/// process registers only itself (`peer.pid == reg.pid`), for its own
/// user unless it is root (the plugin's privileged callback is).
pub fn authorize(reg: &Registration, peer: &PeerCred) -> Result<(), RegisterError> {
    if peer.pid != reg.pid {
        return Err(err(format!(
            "`pid`: process {} may register only itself, not process {}",
            peer.pid, reg.pid
        )));
    }
    if peer.uid != 0 && peer.uid != reg.uid {
        return Err(err(format!(
            "`uid`: uid {} may register only its own tasks, not uid {}'s",
            peer.uid, reg.uid
        )));
    }
    Ok(())
}

/// The handler a server calls for each authorized registration.
type Handler = dyn Fn(Registration, PeerCred) -> Reply + Send + Sync;

/// A running registration server.
#[derive(Debug)]
pub struct RegisterServer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    path: PathBuf,
    /// The bound socket's device and inode, so that stopping removes our
    /// socket and nothing that has replaced it since.
    inode: (u64, u64),
}

impl RegisterServer {
    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stops serving and removes the socket file. Connections being
    /// served finish on their own threads, within their deadlines.
    pub fn stop(mut self) {
        self.shut();
    }

    fn shut(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
            if let Ok(m) = std::fs::symlink_metadata(&self.path) {
                if (m.dev(), m.ino()) == self.inode {
                    let _ = std::fs::remove_file(&self.path);
                }
            }
        }
    }
}

impl Drop for RegisterServer {
    fn drop(&mut self) {
        self.shut();
    }
}

fn refuse_setup(path: &Path, why: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("cannot serve registrations at {}: {why}", path.display()),
    )
}

/// Checks that the socket's directory belongs to us and nobody else can
/// write it: otherwise another user could replace the socket, or a link
/// to it, between our checks and a client's connect.
fn check_parent(path: &Path) -> io::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let meta = std::fs::metadata(parent).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "cannot serve registrations at {}: its directory {}: {e}",
                path.display(),
                parent.display()
            ),
        )
    })?;
    if !meta.is_dir() {
        return Err(refuse_setup(
            path,
            format_args!("{} is not a directory", parent.display()),
        ));
    }
    let euid = sys::geteuid();
    if meta.uid() != euid {
        return Err(refuse_setup(
            path,
            format_args!(
                "its directory {} is owned by uid {}, not by this server's uid {euid}",
                parent.display(),
                meta.uid()
            ),
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(refuse_setup(
            path,
            format_args!(
                "its directory {} is writable by group or others (mode {:o}); make it 0755 or stricter",
                parent.display(),
                meta.mode() & 0o7777
            ),
        ));
    }
    Ok(())
}

/// Makes room for the socket: nothing there, or a stale socket of ours,
/// which is removed. A link is never followed, and anything else there
/// (a file, a directory, someone else's socket, a live server) is left
/// alone and refused.
fn clear_path(path: &Path) -> io::Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let kind = meta.file_type();
    if kind.is_symlink() {
        return Err(refuse_setup(path, "a symbolic link is there"));
    }
    if !kind.is_socket() {
        return Err(refuse_setup(
            path,
            "something that is not a socket is there (remove it if it is stale)",
        ));
    }
    let euid = sys::geteuid();
    if meta.uid() != euid {
        return Err(refuse_setup(
            path,
            format_args!(
                "the socket there is owned by uid {}, not by this server's uid {euid}",
                meta.uid()
            ),
        ));
    }
    if UnixStream::connect(path).is_ok() {
        return Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!(
                "cannot serve registrations at {}: another server is listening there",
                path.display()
            ),
        ));
    }
    std::fs::remove_file(path)
}

/// Serves registrations at `path`.
pub fn serve(
    path: &Path,
    handler: Box<dyn Fn(Registration, PeerCred) -> Reply + Send + Sync>,
) -> std::io::Result<RegisterServer> {
    check_parent(path)?;
    clear_path(path)?;
    let listener = UnixListener::bind(path)?;
    // Between bind and chmod the socket has the umask's mode; a client
    // that connects then is still held to the peer-credential checks,
    // and the directory (checked above) is writable by nobody else.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    let meta = std::fs::symlink_metadata(path)?;
    listener.set_nonblocking(true)?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let handler: Arc<Handler> = Arc::from(handler);
    let thread = std::thread::Builder::new()
        .name("keel-register".into())
        .spawn(move || accept_loop(listener, flag, handler))?;
    Ok(RegisterServer {
        stop,
        thread: Some(thread),
        path: path.to_path_buf(),
        inode: (meta.dev(), meta.ino()),
    })
}

/// One connection's hold on the connection count, given back when
/// dropped.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(count: &Arc<AtomicUsize>) -> Option<Slot> {
        count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_CONNECTIONS).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot(Arc::clone(count)))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Accepts connections and hands each to its own thread, so that a slow
/// or silent client delays nobody else.
fn accept_loop(listener: UnixListener, stop: Arc<AtomicBool>, handler: Arc<Handler>) {
    let count = Arc::new(AtomicUsize::new(0));
    while !stop.load(Ordering::Relaxed) {
        if !poll_fd(listener.as_raw_fd(), libc::POLLIN, STOP_POLL_MS) {
            continue;
        }
        let Ok((stream, _)) = listener.accept() else {
            continue;
        };
        if stream.set_nonblocking(true).is_err() {
            continue;
        }
        let Some(slot) = Slot::take(&count) else {
            // One non-blocking write: a client that does not read loses
            // the message, the server loses nothing.
            let busy = Reply::Refused {
                reason: format!(
                    "busy: {MAX_CONNECTIONS} registrations are in progress (MAX_CONNECTIONS); try again"
                ),
            };
            let _ = (&stream).write(busy.encode().as_bytes());
            continue;
        };
        let handler = Arc::clone(&handler);
        // A failed spawn drops the closure, closing the stream and giving
        // the slot back.
        let _ = std::thread::Builder::new()
            .name("keel-register-conn".into())
            .spawn(move || {
                let _slot = slot;
                let reply = answer(&stream, &*handler);
                let deadline = Instant::now() + REPLY_DEADLINE;
                if write_by(&stream, reply.encode().as_bytes(), deadline).is_ok() {
                    let _ = stream.shutdown(std::net::Shutdown::Write);
                    drain_by(&stream, deadline);
                }
            });
    }
}

/// Reads, checks and answers one registration.
fn answer(stream: &UnixStream, handler: &Handler) -> Reply {
    let refused = |reason: String| Reply::Refused { reason };
    let peer = match sys::peer_cred(stream) {
        Ok(p) => p,
        Err(e) => return refused(format!("cannot read your credentials: {e}")),
    };
    let line = match read_request(stream, Instant::now() + REQUEST_DEADLINE) {
        Ok(l) => l,
        Err(e) => return refused(e),
    };
    let reg = match Registration::parse(&line) {
        Ok(r) => r,
        Err(e) => return refused(e.0),
    };
    if let Err(e) = authorize(&reg, &peer) {
        return refused(e.0);
    }
    // A handler that panics costs this registration, not the server.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(reg, peer)))
        .unwrap_or_else(|_| refused("the node manager failed while registering the task".into()))
}

/// Reads one request line, its newline included, from a non-blocking
/// stream: all of it by `deadline` (not per read: a client trickling a
/// byte at a time is cut off too) and within [`MAX_REQUEST_BYTES`].
fn read_request(stream: &UnixStream, deadline: Instant) -> Result<Vec<u8>, String> {
    let mut buf: Vec<u8> = Vec::with_capacity(256);
    let mut chunk = [0u8; 512];
    loop {
        if let Some(end) = buf.iter().position(|&b| b == b'\n') {
            if end + 1 < buf.len() {
                return Err("the request holds more than one line".into());
            }
            return Ok(buf);
        }
        if buf.len() >= MAX_REQUEST_BYTES {
            return Err(format!(
                "the request is longer than {MAX_REQUEST_BYTES} bytes (MAX_REQUEST_BYTES)"
            ));
        }
        let Some(ms) = ms_until(deadline) else {
            return Err(format!(
                "the request did not arrive within {} s (REQUEST_DEADLINE)",
                REQUEST_DEADLINE.as_secs_f64()
            ));
        };
        if !poll_fd(stream.as_raw_fd(), libc::POLLIN, ms) {
            continue;
        }
        // One byte past the bound is enough to know the request is too
        // long; reading no further keeps the buffer bounded.
        let room = (MAX_REQUEST_BYTES + 1 - buf.len()).min(chunk.len());
        match (&*stream).read(&mut chunk[..room]) {
            Ok(0) if buf.is_empty() => return Err("no request arrived".into()),
            Ok(0) => return Err("the request ended without a newline".into()),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(format!("cannot read the request: {e}")),
        }
    }
}

/// Registers `reg` with the server at `path` and returns its reply: what
/// the plugin does, for tests and tools. The whole exchange is bounded
/// by the server's deadlines.
pub fn register(path: &Path, reg: &Registration) -> io::Result<Reply> {
    let mut s = UnixStream::connect(path)?;
    s.set_read_timeout(Some(REQUEST_DEADLINE + REPLY_DEADLINE))?;
    s.set_write_timeout(Some(REQUEST_DEADLINE))?;
    let sent = s.write_all(reg.encode().as_bytes());
    // The server may have answered already (busy) and closed: its reply
    // is still there to read.
    let mut reply = String::new();
    let read = (&s).take(MAX_REPLY_BYTES as u64).read_to_string(&mut reply);
    if reply.is_empty() {
        sent?;
        read?;
    }
    Reply::parse(&reply).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.0))
}
