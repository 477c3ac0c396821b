//! Bounded I/O on non-blocking Unix sockets: every wait has a deadline,
//! so that no client of a root daemon's socket can hold it (the control
//! socket and the node manager's registration socket share these).

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::Instant;

/// Waits up to `timeout_ms` for `events` on `fd`.
pub(crate) fn poll_fd(fd: libc::c_int, events: libc::c_short, timeout_ms: libc::c_int) -> bool {
    let mut p = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    unsafe { libc::poll(&mut p, 1, timeout_ms) > 0 }
}

/// Milliseconds left until `deadline`, rounded up, for `poll`.
pub(crate) fn ms_until(deadline: Instant) -> Option<libc::c_int> {
    let left = deadline.checked_duration_since(Instant::now())?;
    if left.is_zero() {
        return None;
    }
    Some(
        left.as_micros()
            .div_ceil(1000)
            .min(libc::c_int::MAX as u128) as libc::c_int,
    )
}

/// Writes all of `bytes` to a non-blocking stream by `deadline`.
pub(crate) fn write_by(stream: &UnixStream, mut bytes: &[u8], deadline: Instant) -> io::Result<()> {
    while !bytes.is_empty() {
        match (&*stream).write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) =>
            {
                let ms = ms_until(deadline).ok_or(io::ErrorKind::TimedOut)?;
                poll_fd(stream.as_raw_fd(), libc::POLLOUT, ms);
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads and discards what the client still sends, until it closes or
/// `deadline`: closing a Unix socket with unread data resets it, and the
/// client would lose the reply (to a request too long, or too slow).
pub(crate) fn drain_by(stream: &UnixStream, deadline: Instant) {
    let mut chunk = [0u8; 4096];
    while let Some(ms) = ms_until(deadline) {
        if !poll_fd(stream.as_raw_fd(), libc::POLLIN, ms) {
            continue;
        }
        match (&*stream).read(&mut chunk) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) => {}
            Err(_) => return,
        }
    }
}
