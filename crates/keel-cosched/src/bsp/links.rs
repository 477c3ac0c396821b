//! The job's connections: the rendezvous over Unix stream sockets, the
//! ring and barrier exchanges, and waiting for a socket the way the
//! rank's page says.

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::monitor::Monitor;
use super::{BspError, Pattern, MODE_RECHECK_POLLS};
use crate::shm::PageWaitMode;
use crate::sys;

/// The job's connections.
pub(super) enum Links {
    /// One rank: nothing to exchange.
    Alone,
    /// Ring: to the right neighbour, from the left.
    Ring { right: UnixStream, left: UnixStream },
    /// Barrier, rank 0: one stream per other rank (index = rank - 1).
    Root { peers: Vec<UnixStream> },
    /// Barrier, other ranks: the stream to rank 0.
    Leaf { root: UnixStream },
}

impl Links {
    pub(super) fn connect(
        dir: &Path,
        rank: usize,
        size: usize,
        pattern: Pattern,
        timeout: Duration,
    ) -> Result<Links, BspError> {
        let io_err = |what: String| move |source| BspError::Io { rank, what, source };
        let sock = |r: usize| dir.join(format!("r{r}.sock"));
        let deadline = Instant::now() + timeout;
        let listen = |path: PathBuf| -> Result<UnixListener, BspError> {
            let _ = std::fs::remove_file(&path);
            UnixListener::bind(&path)
                .map_err(io_err(format!("cannot listen on {}", path.display())))
        };
        let links = match pattern {
            Pattern::Ring => {
                let listener = listen(sock(rank))?;
                let right_rank = (rank + 1) % size;
                let mut right = connect_retry(&sock(right_rank), deadline)
                    .map_err(io_err(format!("cannot reach rank {right_rank}")))?;
                right
                    .write_all(&(rank as u64).to_ne_bytes())
                    .map_err(io_err("handshake".into()))?;
                let left = accept_from(&listener, deadline, rank)?;
                let _ = std::fs::remove_file(sock(rank));
                let left_rank = (rank + size - 1) % size;
                if left.1 != left_rank {
                    return Err(BspError::Protocol(
                        format!(
                            "expected rank {left_rank} on the left, rank {} connected",
                            left.1
                        ),
                        rank,
                    ));
                }
                Links::Ring {
                    right,
                    left: left.0,
                }
            }
            Pattern::Barrier if rank == 0 => {
                let listener = listen(sock(0))?;
                let mut peers: Vec<Option<UnixStream>> = (1..size).map(|_| None).collect();
                for _ in 1..size {
                    let (s, r) = accept_from(&listener, deadline, rank)?;
                    match peers.get_mut(r.wrapping_sub(1)) {
                        Some(slot @ None) => *slot = Some(s),
                        _ => {
                            return Err(BspError::Protocol(
                                format!("unexpected rank {r} at the barrier root"),
                                rank,
                            ))
                        }
                    }
                }
                let _ = std::fs::remove_file(sock(0));
                Links::Root {
                    peers: peers.into_iter().flatten().collect(),
                }
            }
            Pattern::Barrier => {
                let mut root = connect_retry(&sock(0), deadline)
                    .map_err(io_err("cannot reach rank 0".into()))?;
                root.write_all(&(rank as u64).to_ne_bytes())
                    .map_err(io_err("handshake".into()))?;
                Links::Leaf { root }
            }
        };
        for s in links.streams() {
            s.set_nonblocking(true)
                .map_err(io_err("cannot make a socket non-blocking".into()))?;
        }
        Ok(links)
    }

    fn streams(&self) -> Vec<&UnixStream> {
        match self {
            Links::Alone => vec![],
            Links::Ring { right, left } => vec![right, left],
            Links::Root { peers } => peers.iter().collect(),
            Links::Leaf { root } => vec![root],
        }
    }

    /// One superstep's communication, each send and receive a monitored
    /// blocking call.
    pub(super) fn exchange(
        &self,
        step: u64,
        mon: &mut Monitor,
        rank: usize,
    ) -> Result<(), BspError> {
        match self {
            Links::Alone => Ok(()),
            Links::Ring { right, left } => {
                send(right, step, mon, rank)?;
                expect(left, step, mon, rank)
            }
            Links::Root { peers } => {
                for p in peers {
                    expect(p, step, mon, rank)?;
                }
                for p in peers {
                    send(p, step, mon, rank)?;
                }
                Ok(())
            }
            Links::Leaf { root } => {
                send(root, step, mon, rank)?;
                expect(root, step, mon, rank)
            }
        }
    }
}

fn connect_retry(path: &Path, deadline: Instant) -> io::Result<UnixStream> {
    loop {
        match UnixStream::connect(path) {
            Ok(s) => return Ok(s),
            Err(e) if Instant::now() >= deadline => return Err(e),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
                ) =>
            {
                std::thread::sleep(Duration::from_micros(500));
            }
            Err(e) => return Err(e),
        }
    }
}

fn accept_from(
    listener: &UnixListener,
    deadline: Instant,
    rank: usize,
) -> Result<(UnixStream, usize), BspError> {
    let err = |what: &str, source| BspError::Io {
        rank,
        what: what.into(),
        source,
    };
    listener
        .set_nonblocking(true)
        .map_err(|e| err("cannot poll the listener", e))?;
    let (mut s, _) = loop {
        match listener.accept() {
            Ok(x) => break x,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_micros(500));
            }
            Err(e) => return Err(err("no peer connected in time", e)),
        }
    };
    s.set_nonblocking(false)
        .map_err(|e| err("socket mode", e))?;
    s.set_read_timeout(Some(
        deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1)),
    ))
    .map_err(|e| err("socket mode", e))?;
    let mut buf = [0u8; 8];
    s.read_exact(&mut buf).map_err(|e| err("handshake", e))?;
    s.set_read_timeout(None)
        .map_err(|e| err("socket mode", e))?;
    Ok((s, u64::from_ne_bytes(buf) as usize))
}

/// Sends one step number (a monitored call). Eight bytes always fit in an
/// empty socket buffer; a full one (a peer far behind) is waited out with
/// the page's wait mode like a receive.
fn send(s: &UnixStream, step: u64, mon: &mut Monitor, rank: usize) -> Result<(), BspError> {
    let start = mon.begin();
    let bytes = step.to_ne_bytes();
    let mut sent = 0;
    let mut spin = 0;
    while sent < bytes.len() {
        match (&*s).write(&bytes[sent..]) {
            Ok(n) => sent += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                spin += wait_ready(s, libc::POLLOUT, mon);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(BspError::Io {
                    rank,
                    what: "send".into(),
                    source,
                })
            }
        }
    }
    mon.end(start, spin);
    Ok(())
}

/// Receives one step number (a monitored call) and checks it.
fn expect(s: &UnixStream, step: u64, mon: &mut Monitor, rank: usize) -> Result<(), BspError> {
    let start = mon.begin();
    let mut buf = [0u8; 8];
    let mut got = 0;
    let mut spin = 0;
    while got < buf.len() {
        match (&*s).read(&mut buf[got..]) {
            Ok(0) => {
                return Err(BspError::Protocol(
                    format!("a peer closed its connection at superstep {step}"),
                    rank,
                ))
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                spin += wait_ready(s, libc::POLLIN, mon);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(BspError::Io {
                    rank,
                    what: "receive".into(),
                    source,
                })
            }
        }
    }
    mon.end(start, spin);
    let v = u64::from_ne_bytes(buf);
    if v != step {
        return Err(BspError::Protocol(
            format!("expected superstep {step}, a peer sent {v}"),
            rank,
        ));
    }
    Ok(())
}

/// Waits until `s` is ready for `events` the way the page says; returns
/// the CPU time spent spinning, ns.
fn wait_ready(s: &UnixStream, events: libc::c_short, mon: &Monitor) -> u64 {
    let ready = |timeout_ms: libc::c_int| {
        let mut p = libc::pollfd {
            fd: s.as_raw_fd(),
            events,
            revents: 0,
        };
        // SAFETY: `p` is one valid pollfd for the duration of the call.
        let n = unsafe { libc::poll(&mut p, 1, timeout_ms) };
        n > 0
    };
    let spin_from = sys::thread_cpu_ns();
    let wall_from = sys::monotonic_ns();
    let mut polls = 0u32;
    let mut mode = mon.wait_mode();
    loop {
        match mode {
            PageWaitMode::Poll => {}
            PageWaitMode::SpinBlock { spin_ns } => {
                if sys::monotonic_ns().saturating_sub(wall_from) >= spin_ns {
                    break;
                }
            }
            PageWaitMode::Block => break,
        }
        if ready(0) {
            return sys::thread_cpu_ns().saturating_sub(spin_from);
        }
        std::hint::spin_loop();
        polls += 1;
        if polls.is_multiple_of(MODE_RECHECK_POLLS) {
            mode = mon.wait_mode();
        }
    }
    // No poll, no spin: block mode must report none.
    let spun = if polls == 0 {
        0
    } else {
        sys::thread_cpu_ns().saturating_sub(spin_from)
    };
    // Block; a poll error or hang-up also returns, and the caller's read
    // then reports it.
    while !ready(-1) {}
    spun
}
