//! The registration server: the socket made safely, one thread per
//! connection (at most `MAX_CONNECTIONS`), every read and write bounded by
//! a deadline, the peer checked by `authorize` before the handler runs;
//! and the client side, `register`.

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use super::{
    authorize, Registration, Reply, MAX_CONNECTIONS, MAX_REPLY_BYTES, MAX_REQUEST_BYTES,
    REPLY_DEADLINE, REQUEST_DEADLINE, STOP_POLL_MS,
};
use crate::sys::deadline::{drain_by, poll_fd, read_line_by, write_by, LineError, LineRule};
use crate::sys::{self, PeerCred};

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

/// Reads one request line, its newline included: by `deadline`, alone on
/// its connection, and within [`MAX_REQUEST_BYTES`].
fn read_request(stream: &UnixStream, deadline: Instant) -> Result<Vec<u8>, String> {
    read_line_by(stream, MAX_REQUEST_BYTES, deadline, LineRule::OnlyLine).map_err(|e| match e {
        LineError::TooLong => {
            format!("the request is longer than {MAX_REQUEST_BYTES} bytes (MAX_REQUEST_BYTES)")
        }
        LineError::TimedOut => format!(
            "the request did not arrive within {} s (REQUEST_DEADLINE)",
            REQUEST_DEADLINE.as_secs_f64()
        ),
        other => other.to_string(),
    })
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
