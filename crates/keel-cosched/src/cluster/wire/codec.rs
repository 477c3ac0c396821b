//! The codec: frames, greetings and envelopes as pure functions of bytes.
//! The session ([`super::handshake`]) adds sockets, sealing and deadlines;
//! the tests and the `cosched-wire` fuzz target call these directly.

use std::io::{self, Read, Write};

use serde::{Deserialize, Serialize};

use super::{Msg, Role, WireError, MAX_FRAME_BYTES, WIRE_VERSION};

/// Bytes of a frame's length prefix (big-endian `u32`).
pub const HEADER_BYTES: usize = 4;

/// The payload length a frame header announces, if the protocol allows
/// it: `1..=MAX_FRAME_BYTES`. Checked before anything is allocated or read
/// past the header, so a hostile length costs the receiver nothing.
pub fn frame_len(header: [u8; HEADER_BYTES]) -> Result<usize, WireError> {
    let len = u32::from_be_bytes(header) as usize;
    if len == 0 {
        return Err(WireError::Protocol("frame of length 0".into()));
    }
    if len > MAX_FRAME_BYTES {
        return Err(WireError::Protocol(format!(
            "frame of {len} bytes announced, more than the {MAX_FRAME_BYTES} allowed"
        )));
    }
    Ok(len)
}

/// The error for a frame that ended early: `got` of `want` bytes of its
/// `part` (the length or the payload).
pub(super) fn cut(part: &str, got: usize, want: usize) -> WireError {
    WireError::Protocol(format!(
        "connection closed in a frame's {part}: {got} of {want} bytes"
    ))
}

/// Reads into `buf` until it is full or the reader ends; the bytes read.
fn fill(r: &mut impl Read, buf: &mut [u8]) -> Result<usize, WireError> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(WireError::Io(e)),
        }
    }
    Ok(got)
}

/// Reads one frame's payload: the 4-byte big-endian length `N`, then `N`
/// bytes. The end of the reader before the first byte is
/// [`WireError::Closed`]; within a frame, or a length of 0 or over
/// [`MAX_FRAME_BYTES`], it is [`WireError::Protocol`] (and nothing past
/// the length is read).
///
/// ```
/// use keel_cosched::cluster::wire::{encode_frame, read_frame, WireError};
///
/// let mut bytes = encode_frame(b"one")?;
/// bytes.extend(encode_frame(b"two")?);
/// let mut r = &bytes[..];
/// assert_eq!(read_frame(&mut r)?, b"one");
/// assert_eq!(read_frame(&mut r)?, b"two");
/// assert!(matches!(read_frame(&mut r), Err(WireError::Closed)));
///
/// // A length of 4 GiB is refused before a byte of it is read or allocated.
/// let mut r: &[u8] = &[0xff, 0xff, 0xff, 0xff, b'x'];
/// assert!(matches!(read_frame(&mut r), Err(WireError::Protocol(_))));
/// assert_eq!(r, b"x");
/// # Ok::<(), WireError>(())
/// ```
pub fn read_frame(r: &mut impl Read) -> Result<Vec<u8>, WireError> {
    let mut header = [0u8; HEADER_BYTES];
    match fill(r, &mut header)? {
        0 => return Err(WireError::Closed),
        HEADER_BYTES => {}
        got => return Err(cut("length", got, HEADER_BYTES)),
    }
    let len = frame_len(header)?;
    let mut payload = vec![0u8; len];
    let got = fill(r, &mut payload)?;
    if got < len {
        return Err(cut("payload", got, len));
    }
    Ok(payload)
}

/// `payload` as a frame: its length (big-endian `u32`), then itself. A
/// payload the receiver would refuse (empty, or over [`MAX_FRAME_BYTES`])
/// is [`WireError::Protocol`].
pub fn encode_frame(payload: &[u8]) -> Result<Vec<u8>, WireError> {
    if payload.is_empty() || payload.len() > MAX_FRAME_BYTES {
        return Err(WireError::Protocol(format!(
            "a frame carries 1 to {MAX_FRAME_BYTES} bytes, not {}",
            payload.len()
        )));
    }
    let mut frame = Vec::with_capacity(HEADER_BYTES + payload.len());
    frame.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    frame.extend_from_slice(payload);
    Ok(frame)
}

/// Writes `payload` as one frame ([`encode_frame`]) with a single
/// `write_all`, so that a frame is never interleaved with another.
pub fn write_frame(w: &mut impl Write, payload: &[u8]) -> Result<(), WireError> {
    let frame = encode_frame(payload)?;
    w.write_all(&frame)?;
    w.flush()?;
    Ok(())
}

/// The first message each side sends: who it is and the nonce that names
/// this session, which every later envelope to it must carry in `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Greeting {
    /// The sender's [`WIRE_VERSION`].
    pub v: u16,
    /// The sender's role.
    pub role: Role,
    /// A random number the sender chose for this session.
    pub nonce: u64,
}

/// The JSON of a [`Greeting`] from `role` with `nonce` at this version.
pub fn encode_greeting(role: Role, nonce: u64) -> Vec<u8> {
    let g = Greeting {
        v: WIRE_VERSION,
        role,
        nonce,
    };
    serde_json::to_vec(&g).expect("a greeting is integers and a unit variant")
}

/// Parses a greeting. The version is read first and on its own, so that a
/// peer of another version is reported as [`WireError::Version`] even when
/// the rest of its greeting differs; anything else wrong is
/// [`WireError::Protocol`].
pub fn decode_greeting(payload: &[u8]) -> Result<Greeting, WireError> {
    let value: serde_json::Value = serde_json::from_slice(payload)
        .map_err(|e| WireError::Protocol(format!("greeting is not JSON: {e}")))?;
    let Some(v) = value.get("v") else {
        return Err(WireError::Protocol(
            "greeting without a version field `v`".into(),
        ));
    };
    let v = v
        .as_u64()
        .and_then(|v| u16::try_from(v).ok())
        .ok_or_else(|| WireError::Protocol(format!("greeting's version `{v}` is no u16")))?;
    if v != WIRE_VERSION {
        return Err(WireError::Version(v));
    }
    serde_json::from_value(value).map_err(|e| WireError::Protocol(format!("greeting: {e}")))
}

/// An envelope as sent (borrowing its message).
#[derive(Serialize)]
struct EnvelopeOut<'a> {
    to: u64,
    seq: u64,
    msg: &'a Msg,
}

/// An envelope as received.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EnvelopeIn {
    to: u64,
    seq: u64,
    msg: Msg,
}

/// The JSON envelope `{"to":TO,"seq":SEQ,"msg":MSG}`: `to` is the
/// receiver's greeting nonce, `seq` counts the sender's envelopes in this
/// session from 1.
pub fn encode_envelope(to: u64, seq: u64, msg: &Msg) -> Vec<u8> {
    serde_json::to_vec(&EnvelopeOut { to, seq, msg })
        .expect("a message is structs, strings and integers, which always serialize")
}

/// Parses an envelope and checks it: addressed to this session
/// (`expect_to`, the receiver's greeting nonce; another value is an
/// envelope replayed from another session), the next in sequence
/// (`expect_seq`; another is replayed, reordered or lost), and a valid
/// message ([`Msg::validate`]). Every failure is [`WireError::Protocol`]
/// and says which check failed.
///
/// ```
/// use keel_cosched::cluster::wire::{decode_envelope, encode_envelope, Msg, WireError};
///
/// let ping = Msg::Ping { id: 7, sent_ns: 1_000 };
/// let bytes = encode_envelope(42, 1, &ping);
/// assert_eq!(decode_envelope(&bytes, 42, 1)?, ping);
/// assert!(decode_envelope(&bytes, 43, 1).is_err()); // another session
/// assert!(decode_envelope(&bytes, 42, 2).is_err()); // a replay
/// # Ok::<(), WireError>(())
/// ```
pub fn decode_envelope(payload: &[u8], expect_to: u64, expect_seq: u64) -> Result<Msg, WireError> {
    let env: EnvelopeIn = serde_json::from_slice(payload).map_err(|e| {
        if looks_like_greeting(payload) {
            WireError::Protocol(
                "a greeting where an envelope belongs (a greeting replayed into the session?)"
                    .into(),
            )
        } else {
            WireError::Protocol(format!("not an envelope: {e}"))
        }
    })?;
    if env.to != expect_to {
        return Err(WireError::Protocol(format!(
            "envelope addressed to session {}, this is session {expect_to} \
             (replayed from another connection?)",
            env.to
        )));
    }
    if env.seq != expect_seq {
        return Err(WireError::Protocol(format!(
            "envelope number {} where {expect_seq} was due (replayed, reordered or lost)",
            env.seq
        )));
    }
    env.msg.validate()?;
    Ok(env.msg)
}

/// Whether `payload` is a JSON object with a greeting's `role` and `nonce`.
fn looks_like_greeting(payload: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(payload)
        .is_ok_and(|v| v.get("role").is_some() && v.get("nonce").is_some())
}
