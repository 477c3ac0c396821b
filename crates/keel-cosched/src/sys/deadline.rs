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

/// What ends the one line [`read_line_by`] reads, and what may follow it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LineRule {
    /// The line must end with a newline and nothing may follow it: the end
    /// of the stream before the newline, or a byte after it, is refused.
    OnlyLine,
    /// The line ends at the first newline or at the end of the stream;
    /// what follows the newline is left unread or ignored.
    FirstLineOrEof,
}

/// Why [`read_line_by`] returned no line. The callers word these with the
/// names of their own bounds.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LineError {
    /// `max_bytes` arrived without a newline.
    #[error("the request is longer than the byte limit")]
    TooLong,
    /// The deadline passed before the line was complete.
    #[error("the request did not arrive in time")]
    TimedOut,
    /// The peer closed without sending a byte ([`LineRule::OnlyLine`]).
    #[error("no request arrived")]
    Empty,
    /// The peer closed before the newline ([`LineRule::OnlyLine`]).
    #[error("the request ended without a newline")]
    Unterminated,
    /// Bytes followed the newline ([`LineRule::OnlyLine`]).
    #[error("the request holds more than one line")]
    SecondLine,
    /// The read itself failed.
    #[error("cannot read the request: {0}")]
    Io(io::Error),
}

/// Reads one line from a non-blocking stream: all of it by `deadline`
/// (not per read: a peer trickling a byte at a time is cut off too) and
/// within `max_bytes`, its newline included. The line comes back with its
/// newline when it had one; `rule` says whether the end of the stream may
/// end it and whether bytes may follow it.
pub(crate) fn read_line_by(
    stream: &UnixStream,
    max_bytes: usize,
    deadline: Instant,
    rule: LineRule,
) -> Result<Vec<u8>, LineError> {
    // Under `OnlyLine` one byte past the limit is read, so that a byte
    // sent after a line that fills the limit is seen (and refused) rather
    // than left unread; the buffer stays bounded all the same.
    let read_limit = match rule {
        LineRule::OnlyLine => max_bytes + 1,
        LineRule::FirstLineOrEof => max_bytes,
    };
    let mut buf: Vec<u8> = Vec::with_capacity(256);
    let mut chunk = [0u8; 512];
    loop {
        if let Some(end) = buf.iter().position(|&b| b == b'\n') {
            if end + 1 > max_bytes {
                return Err(LineError::TooLong);
            }
            if rule == LineRule::OnlyLine && end + 1 < buf.len() {
                return Err(LineError::SecondLine);
            }
            buf.truncate(end + 1);
            return Ok(buf);
        }
        if buf.len() >= max_bytes {
            return Err(LineError::TooLong);
        }
        let ms = ms_until(deadline).ok_or(LineError::TimedOut)?;
        if !poll_fd(stream.as_raw_fd(), libc::POLLIN, ms) {
            continue;
        }
        let room = (read_limit - buf.len()).min(chunk.len());
        match (&*stream).read(&mut chunk[..room]) {
            Ok(0) => {
                return match rule {
                    LineRule::FirstLineOrEof => Ok(buf),
                    LineRule::OnlyLine if buf.is_empty() => Err(LineError::Empty),
                    LineRule::OnlyLine => Err(LineError::Unterminated),
                }
            }
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(LineError::Io(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A connected pair: the reading end non-blocking, as the servers
    /// hold theirs, and the peer end to write from.
    fn pair() -> (UnixStream, UnixStream) {
        let (ours, peer) = UnixStream::pair().expect("socket pair");
        ours.set_nonblocking(true).expect("non-blocking");
        (ours, peer)
    }

    fn read(sent: &[u8], close: bool, max: usize, rule: LineRule) -> Result<Vec<u8>, LineError> {
        let (ours, mut peer) = pair();
        peer.write_all(sent).expect("write");
        // Held open unless `close`: an open peer that sent nothing more
        // would otherwise show as the deadline passing.
        let _open = (!close).then_some(peer);
        read_line_by(&ours, max, Instant::now() + Duration::from_secs(5), rule)
    }

    const RULES: [LineRule; 2] = [LineRule::OnlyLine, LineRule::FirstLineOrEof];

    #[test]
    fn a_line_comes_back_with_its_newline() {
        for rule in RULES {
            assert_eq!(read(b"list\n", false, 64, rule).unwrap(), b"list\n");
        }
    }

    #[test]
    fn a_line_sent_in_pieces_is_put_together() {
        for rule in RULES {
            let (ours, mut peer) = pair();
            let writer = std::thread::spawn(move || {
                for piece in [&b"sta"[..], b"tus ", b"7\n"] {
                    peer.write_all(piece).unwrap();
                    std::thread::sleep(Duration::from_millis(20));
                }
                peer
            });
            let got = read_line_by(&ours, 64, Instant::now() + Duration::from_secs(5), rule);
            let _peer = writer.join().unwrap();
            assert_eq!(got.unwrap(), b"status 7\n");
        }
    }

    #[test]
    fn the_byte_limit_holds_the_newline_too() {
        for rule in RULES {
            // Exactly the limit, newline included: accepted.
            let fits = [vec![b'a'; 63], vec![b'\n']].concat();
            assert_eq!(read(&fits, false, 64, rule).unwrap(), fits);
            // The limit reached without a newline, the peer still open.
            let long = vec![b'a'; 100];
            assert!(
                matches!(read(&long, false, 64, rule), Err(LineError::TooLong)),
                "{rule:?}"
            );
            let line_too_long = [vec![b'a'; 65], vec![b'\n']].concat();
            assert!(
                matches!(
                    read(&line_too_long, false, 64, rule),
                    Err(LineError::TooLong)
                ),
                "{rule:?}"
            );
        }
    }

    #[test]
    fn under_the_strict_rule_the_byte_past_the_limit_is_read_but_never_lengthens_the_line() {
        let fits = [vec![b'a'; 63], vec![b'\n']].concat();
        // A byte after a line that fills the limit is seen.
        let fits_then_more = [fits.clone(), b"x".to_vec()].concat();
        assert!(matches!(
            read(&fits_then_more, false, 64, LineRule::OnlyLine),
            Err(LineError::SecondLine)
        ));
        assert_eq!(
            read(&fits_then_more, false, 64, LineRule::FirstLineOrEof).unwrap(),
            fits
        );
        // A line whose newline is that byte is one byte too long.
        let over = [vec![b'a'; 64], vec![b'\n']].concat();
        for rule in RULES {
            assert!(matches!(
                read(&over, false, 64, rule),
                Err(LineError::TooLong)
            ));
        }
    }

    #[test]
    fn a_silent_peer_is_cut_off_at_the_deadline() {
        for rule in RULES {
            let (ours, _peer) = pair();
            let t0 = Instant::now();
            let got = read_line_by(&ours, 64, t0 + Duration::from_millis(100), rule);
            let took = t0.elapsed();
            assert!(matches!(got, Err(LineError::TimedOut)), "{rule:?}: {got:?}");
            assert!(
                took >= Duration::from_millis(100) && took < Duration::from_secs(3),
                "{took:?}"
            );
        }
    }

    #[test]
    fn a_trickling_peer_is_cut_off_at_the_deadline_too() {
        let (ours, mut peer) = pair();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = std::sync::Arc::clone(&stop);
        let writer = std::thread::spawn(move || {
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = peer.write_all(b"a");
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        let t0 = Instant::now();
        let got = read_line_by(
            &ours,
            4096,
            t0 + Duration::from_millis(200),
            LineRule::OnlyLine,
        );
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        writer.join().unwrap();
        assert!(matches!(got, Err(LineError::TimedOut)), "{got:?}");
        assert!(t0.elapsed() < Duration::from_secs(3));
    }

    #[test]
    fn the_end_of_the_stream_ends_the_line_only_where_the_rule_says() {
        assert!(matches!(
            read(b"list", true, 64, LineRule::OnlyLine),
            Err(LineError::Unterminated)
        ));
        assert!(matches!(
            read(b"", true, 64, LineRule::OnlyLine),
            Err(LineError::Empty)
        ));
        assert_eq!(
            read(b"list", true, 64, LineRule::FirstLineOrEof).unwrap(),
            b"list"
        );
        assert_eq!(read(b"", true, 64, LineRule::FirstLineOrEof).unwrap(), b"");
    }

    #[test]
    fn a_second_line_is_refused_only_under_the_strict_rule() {
        assert!(matches!(
            read(b"one\ntwo\n", false, 64, LineRule::OnlyLine),
            Err(LineError::SecondLine)
        ));
        assert_eq!(
            read(b"one\ntwo\n", false, 64, LineRule::FirstLineOrEof).unwrap(),
            b"one\n"
        );
    }

    #[test]
    fn errors_say_what_went_wrong() {
        let e = LineError::Io(io::Error::from(io::ErrorKind::ConnectionReset));
        assert!(
            e.to_string().starts_with("cannot read the request: "),
            "{e}"
        );
        assert_eq!(
            LineError::SecondLine.to_string(),
            "the request holds more than one line"
        );
    }
}
