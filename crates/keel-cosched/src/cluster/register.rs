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

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::sys::PeerCred;

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

mod server;
pub use server::{register, serve, RegisterServer};
