//! The cluster protocol: frames, greetings, envelopes and sessions over
//! loopback TCP, with a shared key, a fake authenticator that vouches for
//! a chosen uid, and (where munged runs) MUNGE. Hostile peers are played
//! by raw sockets that send exactly the bytes each test needs. (The shared
//! key's file checks are unit tests of `cluster::auth`.)

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Write;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::can_run;
use keel_cosched::cluster::auth::{AuthError, Authenticator, Munge, Opened, SharedKey};
use keel_cosched::cluster::wire::{
    decode_envelope, decode_greeting, encode_envelope, encode_frame, encode_greeting, handshake,
    read_frame, write_frame, Cell as WireCell, ConnRx, ConnTx, Msg, PeerPolicy, Role, StepId,
    TaskEnd, WireError, MAX_CELLS, MAX_FRAME_BYTES, MAX_TEXT_BYTES,
};

// ------------------------------------------------------------ helpers

/// Records the largest allocation each thread asks for, to show that a
/// hostile frame length is refused before anything is allocated for it.
struct Counting;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    let _ = LARGEST.try_with(|c| c.set(c.get().max(size)));
}

// SAFETY: every call goes to the system allocator unchanged; `note` only
// reads a size and never allocates. (The default `alloc_zeroed` and
// `realloc` allocate through `alloc`, so they are noted too.)
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's guarantees for `alloc` are passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` and `layout` come from this allocator, which is
        // the system's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const TIMEOUT: Duration = Duration::from_secs(5);

fn key(byte: u8) -> Arc<dyn Authenticator> {
    Arc::new(SharedKey::from_bytes(&[byte; 32]).unwrap())
}

/// A shared key that claims the sender's uid is `uid` (as MUNGE would
/// vouch for it).
#[derive(Debug)]
struct Fake {
    key: SharedKey,
    uid: AtomicU32,
}

impl Fake {
    fn new(uid: u32) -> Arc<Fake> {
        let key = SharedKey::from_bytes(&[1; 32]).unwrap();
        let uid = AtomicU32::new(uid);
        Arc::new(Fake { key, uid })
    }
}

impl Authenticator for Fake {
    fn name(&self) -> &'static str {
        "fake"
    }
    fn seal(&self, payload: &[u8]) -> Result<Vec<u8>, AuthError> {
        self.key.seal(payload)
    }
    fn open(&self, sealed: &[u8]) -> Result<Opened, AuthError> {
        let mut opened = self.key.open(sealed)?;
        opened.uid = Some(self.uid.load(Ordering::SeqCst));
        Ok(opened)
    }
}

/// A connected loopback pair.
fn pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (b, _) = listener.accept().unwrap();
    (a, b)
}

type Session = Result<(ConnTx, ConnRx), WireError>;

/// Handshakes an MM and an NM on a loopback pair, each in its own thread.
fn sessions(
    mm: (Arc<dyn Authenticator>, PeerPolicy),
    nm: (Arc<dyn Authenticator>, PeerPolicy),
) -> (Session, Session) {
    let (a, b) = pair();
    let nm = std::thread::spawn(move || handshake(b, Role::Nm, nm.0, nm.1, TIMEOUT));
    let mm = handshake(a, Role::Mm, mm.0, mm.1, TIMEOUT);
    (mm, nm.join().unwrap())
}

const ANY: PeerPolicy = PeerPolicy { uid: None };

/// An NM played by hand: it greets and then writes whatever it is told.
struct RawNm {
    stream: TcpStream,
    auth: Arc<dyn Authenticator>,
    /// The MM's nonce, read from its greeting.
    to: u64,
    /// The sealed greeting this side sent.
    greeting: Vec<u8>,
}

impl RawNm {
    /// The sealed frame of envelope `seq` carrying `msg`.
    fn frame(&self, seq: u64, msg: &Msg) -> Vec<u8> {
        let sealed = self.auth.seal(&encode_envelope(self.to, seq, msg)).unwrap();
        encode_frame(&sealed).unwrap()
    }
    fn write(&self, bytes: &[u8]) {
        (&self.stream).write_all(bytes).unwrap();
    }
}

/// An MM session whose peer is a [`RawNm`] greeting with `greeting`.
fn mm_and_raw_nm(auth: Arc<dyn Authenticator>, greeting: Vec<u8>) -> (Session, RawNm) {
    let (a, b) = pair();
    let nm_auth = Arc::clone(&auth);
    let nm = std::thread::spawn(move || {
        let sealed = nm_auth.seal(&greeting).unwrap();
        write_frame(&mut &b, &sealed).unwrap();
        let theirs = nm_auth.open(&read_frame(&mut &b).unwrap()).unwrap();
        let to = decode_greeting(&theirs.payload).unwrap().nonce;
        RawNm {
            stream: b,
            auth: nm_auth,
            to,
            greeting: sealed,
        }
    });
    let mm = handshake(a, Role::Mm, auth, ANY, TIMEOUT);
    (mm, nm.join().unwrap())
}

fn raw_session(auth: Arc<dyn Authenticator>) -> (ConnTx, ConnRx, RawNm) {
    let (mm, nm) = mm_and_raw_nm(auth, encode_greeting(Role::Nm, 77));
    let (tx, rx) = mm.expect("the MM accepts the raw NM");
    (tx, rx, nm)
}

#[track_caller]
fn protocol_error(r: Result<impl std::fmt::Debug, WireError>, piece: &str) {
    match r {
        Err(WireError::Protocol(text)) => assert!(text.contains(piece), "`{piece}` not in: {text}"),
        other => panic!("expected a protocol error with `{piece}`, got {other:?}"),
    }
}

fn step(job: u32) -> StepId {
    StepId { job, step: 0 }
}

fn every_variant() -> Vec<Msg> {
    let plausible = WireCell {
        step: StepId {
            job: 9_999_999,
            step: 3,
        },
        rank: 1023,
    };
    vec![
        Msg::Hello {
            node: "node-01.é".into(),
            pes: MAX_CELLS as u32,
            boot_id: "0f1e2d3c-\"quoted\"\\".into(),
        },
        Msg::Welcome {
            node_index: 3,
            policy: "fcs:t-slice=0.05".into(),
            slot_ns: u64::MAX,
        },
        Msg::Refused {
            reason: "x".repeat(MAX_TEXT_BYTES),
        },
        Msg::Ping { id: 0, sent_ns: 1 },
        Msg::Pong {
            id: u64::MAX,
            ping_sent_ns: 1,
            received_ns: 2,
            sent_ns: 3,
        },
        Msg::Heartbeat {
            slot: 9,
            row: 1,
            switch_at_ns: 123,
            cells: vec![
                None,
                Some(WireCell {
                    step: step(5),
                    rank: 0,
                }),
            ],
        },
        // A full heartbeat of a 1024-PE node with plausible numbers (the
        // largest numbers in every cell do not fit a frame: see
        // `a_message_too_large_once_sealed_is_not_sent`).
        Msg::Heartbeat {
            slot: u64::MAX,
            row: u32::MAX,
            switch_at_ns: u64::MAX,
            cells: vec![Some(plausible); MAX_CELLS],
        },
        Msg::TaskUp {
            step: step(5),
            rank: 3,
            size: 4,
            pe: 1,
        },
        Msg::TaskDown {
            step: step(5),
            rank: 3,
            end: TaskEnd::Released,
        },
        Msg::TaskDown {
            step: step(5),
            rank: 2,
            end: TaskEnd::Exited,
        },
        Msg::Classified {
            step: step(5),
            rank: 3,
            class: "dc".into(),
            slot: 10,
        },
        Msg::Enacted {
            slot: 10,
            local_ns: 5,
            mm_ns: i64::MIN,
        },
        Msg::Notice {
            text: "line one\nline two".into(),
        },
    ]
}

// ------------------------------------------------------------ sessions

#[test]
fn connection_halves_and_authenticators_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Munge>();
    send_sync::<SharedKey>();
    send::<ConnTx>();
    send::<ConnRx>();
}

#[test]
fn every_message_round_trips_both_ways_over_loopback() {
    let (mm, nm) = sessions((key(1), ANY), (key(1), ANY));
    let ((mut mm_tx, mut mm_rx), (mut nm_tx, mut nm_rx)) = (mm.unwrap(), nm.unwrap());
    for msg in every_variant() {
        mm_tx.send(&msg).unwrap();
        assert_eq!(nm_rx.recv(Some(TIMEOUT)).unwrap(), Some(msg.clone()));
        nm_tx.send(&msg).unwrap();
        assert_eq!(mm_rx.recv(None).unwrap(), Some(msg));
    }
    assert_eq!(nm_rx.peer_uid(), None, "a shared key vouches for no uid");
}

#[test]
fn recv_returns_none_when_nothing_comes_and_the_session_goes_on() {
    let (mm, nm) = sessions((key(1), ANY), (key(1), ANY));
    let ((mut mm_tx, _mm_rx), (_nm_tx, mut nm_rx)) = (mm.unwrap(), nm.unwrap());
    let t0 = Instant::now();
    assert_eq!(nm_rx.recv(Some(Duration::from_millis(100))).unwrap(), None);
    assert!(t0.elapsed() >= Duration::from_millis(100));
    assert_eq!(nm_rx.recv(Some(Duration::ZERO)).unwrap(), None);
    let ping = Msg::Ping { id: 1, sent_ns: 2 };
    mm_tx.send(&ping).unwrap();
    assert_eq!(nm_rx.recv(Some(TIMEOUT)).unwrap(), Some(ping));
}

#[test]
fn shutdown_is_closed_for_the_peer_and_stays_closed() {
    let (mm, nm) = sessions((key(1), ANY), (key(1), ANY));
    let ((mm_tx, _mm_rx), (_nm_tx, mut nm_rx)) = (mm.unwrap(), nm.unwrap());
    mm_tx.shutdown();
    assert!(matches!(nm_rx.recv(Some(TIMEOUT)), Err(WireError::Closed)));
    assert!(matches!(nm_rx.recv(Some(TIMEOUT)), Err(WireError::Closed)));
}

#[test]
fn a_peer_with_another_key_is_refused() {
    let (mm, nm) = sessions((key(1), ANY), (key(2), ANY));
    for side in [mm, nm] {
        assert!(
            matches!(side, Err(WireError::Auth(AuthError::Invalid(_)))),
            "{side:?}"
        );
    }
}

#[test]
fn two_peers_of_the_same_role_are_refused() {
    let (a, b) = pair();
    let other = std::thread::spawn(move || handshake(b, Role::Mm, key(1), ANY, TIMEOUT));
    protocol_error(handshake(a, Role::Mm, key(1), ANY, TIMEOUT), "mm too");
    protocol_error(other.join().unwrap(), "mm too");
}

#[test]
fn a_silent_peer_times_the_handshake_out() {
    let (a, _b) = pair();
    let t0 = Instant::now();
    let e = handshake(a, Role::Mm, key(1), ANY, Duration::from_millis(200)).unwrap_err();
    assert!(
        matches!(&e, WireError::Io(io) if io.kind() == std::io::ErrorKind::TimedOut),
        "{e:?}"
    );
    assert!(t0.elapsed() < TIMEOUT);
}

#[test]
fn another_version_is_reported_as_its_version() {
    let v2 = br#"{"v":2,"role":"nm","nonce":5,"features":["x"]}"#.to_vec();
    let (mm, _nm) = mm_and_raw_nm(key(1), v2);
    assert!(matches!(mm, Err(WireError::Version(2))), "{mm:?}");
    protocol_error(decode_greeting(br#"{"v":70000}"#), "no u16");
    protocol_error(decode_greeting(br#"{"role":"nm"}"#), "without a version");
    protocol_error(decode_greeting(br#"{"v":1,"role":"nm"}"#), "nonce");
}

#[test]
fn a_tampered_frame_is_refused() {
    let (_tx, mut rx, nm) = raw_session(key(1));
    let mut frame = nm.frame(1, &Msg::Ping { id: 1, sent_ns: 1 });
    let at = frame.len() / 2;
    frame[at] ^= 0x20;
    nm.write(&frame);
    let e = rx.recv(Some(TIMEOUT)).unwrap_err();
    assert!(matches!(e, WireError::Auth(AuthError::Invalid(_))), "{e:?}");
    // The connection is dead from then on.
    assert!(rx.recv(Some(TIMEOUT)).is_err());
}

#[test]
fn a_replayed_envelope_is_refused() {
    let (_tx, mut rx, nm) = raw_session(key(1));
    let ping = Msg::Ping { id: 1, sent_ns: 1 };
    let frame = nm.frame(1, &ping);
    nm.write(&frame);
    assert_eq!(rx.recv(Some(TIMEOUT)).unwrap(), Some(ping.clone()));
    nm.write(&frame);
    protocol_error(rx.recv(Some(TIMEOUT)), "envelope number 1 where 2 was due");
    // Skipping one is refused as well (a message lost or held back).
    let (_tx, mut rx, nm) = raw_session(key(1));
    nm.write(&nm.frame(2, &ping));
    protocol_error(rx.recv(Some(TIMEOUT)), "envelope number 2 where 1 was due");
}

#[test]
fn an_envelope_from_another_session_is_refused() {
    let (_tx1, mut rx1, nm1) = raw_session(key(1));
    let (_tx2, mut rx2, nm2) = raw_session(key(1));
    let ping = Msg::Ping { id: 1, sent_ns: 1 };
    let for_session_1 = nm1.frame(1, &ping);
    nm2.write(&for_session_1);
    protocol_error(rx2.recv(Some(TIMEOUT)), "another connection");
    nm1.write(&for_session_1);
    assert_eq!(rx1.recv(Some(TIMEOUT)).unwrap(), Some(ping));
}

#[test]
fn a_greeting_replayed_into_the_session_is_refused() {
    let (_tx, mut rx, nm) = raw_session(key(1));
    nm.write(&encode_frame(&nm.greeting).unwrap());
    protocol_error(rx.recv(Some(TIMEOUT)), "greeting");
}

#[test]
fn hostile_frame_lengths_are_refused_on_a_session() {
    for header in [[0u8; 4], [0xff; 4]] {
        let (_tx, mut rx, nm) = raw_session(key(1));
        nm.write(&header);
        protocol_error(rx.recv(Some(TIMEOUT)), "frame of");
    }
}

#[test]
fn a_frame_cut_or_stalled_midway_is_refused() {
    let ping = Msg::Ping { id: 1, sent_ns: 1 };
    // Closed in the payload.
    let (_tx, mut rx, nm) = raw_session(key(1));
    let frame = nm.frame(1, &ping);
    nm.write(&frame[..frame.len() - 3]);
    nm.stream.shutdown(Shutdown::Write).unwrap();
    protocol_error(rx.recv(Some(TIMEOUT)), "closed in a frame's payload");
    // Closed in the length.
    let (_tx, mut rx, nm) = raw_session(key(1));
    nm.write(&frame[..2]);
    nm.stream.shutdown(Shutdown::Write).unwrap();
    protocol_error(rx.recv(Some(TIMEOUT)), "closed in a frame's length");
    // Stalled: the frame deadline applies, whatever the caller's timeout.
    let (_tx, mut rx, nm) = raw_session(key(1));
    rx.set_frame_deadline(Duration::from_millis(200));
    nm.write(&frame[..10]);
    let t0 = Instant::now();
    protocol_error(rx.recv(None), "stalled");
    assert!(t0.elapsed() < TIMEOUT);
}

#[test]
fn the_uid_policy_is_checked_at_the_greeting_and_on_every_message() {
    let want = |uid| PeerPolicy { uid: Some(uid) };
    // The NM's credential says 4242; the MM wants 1000.
    let (mm, _nm) = sessions((Fake::new(4242), want(1000)), (Fake::new(0), ANY));
    match mm {
        Err(WireError::Auth(AuthError::Invalid(text))) => {
            assert!(text.contains("4242") && text.contains("1000"), "{text}")
        }
        other => panic!("expected a uid refusal, got {other:?}"),
    }
    // Allowed, then a message under another uid.
    let mm_auth = Fake::new(4242);
    let (mm, nm) = sessions((mm_auth.clone(), want(4242)), (Fake::new(0), ANY));
    let ((_mm_tx, mut mm_rx), (mut nm_tx, _nm_rx)) = (mm.unwrap(), nm.unwrap());
    assert_eq!(mm_rx.peer_uid(), Some(4242));
    let ping = Msg::Ping { id: 1, sent_ns: 1 };
    nm_tx.send(&ping).unwrap();
    assert_eq!(mm_rx.recv(Some(TIMEOUT)).unwrap(), Some(ping.clone()));
    mm_auth.uid.store(4243, Ordering::SeqCst);
    nm_tx.send(&ping).unwrap();
    let e = mm_rx.recv(Some(TIMEOUT)).unwrap_err();
    assert!(e.to_string().contains("4243"), "{e}");
}

/// A shared key whose seals grow by `pad` bytes (as a credential service
/// with a large envelope would): what is too large once sealed.
#[derive(Debug)]
struct Bloating {
    key: SharedKey,
    pad: usize,
}

impl Authenticator for Bloating {
    fn name(&self) -> &'static str {
        "bloating"
    }
    fn seal(&self, payload: &[u8]) -> Result<Vec<u8>, AuthError> {
        let mut sealed = self.key.seal(payload)?;
        sealed.resize(sealed.len() + self.pad, b' ');
        Ok(sealed)
    }
    fn open(&self, sealed: &[u8]) -> Result<Opened, AuthError> {
        self.key
            .open(&sealed[..sealed.len().saturating_sub(self.pad)])
    }
}

#[test]
fn the_largest_heartbeat_fits_and_a_message_too_large_once_sealed_is_not_sent() {
    let full = WireCell {
        step: StepId {
            job: u32::MAX,
            step: u32::MAX,
        },
        rank: u32::MAX,
    };
    let big = Msg::Heartbeat {
        slot: u64::MAX,
        row: u32::MAX,
        switch_at_ns: u64::MAX,
        cells: vec![Some(full); MAX_CELLS],
    };
    // The largest heartbeat a node can get, with the widest ids, fits.
    let (mm, nm) = sessions((key(1), ANY), (key(1), ANY));
    let ((mut mm_tx, _mm_rx), (_nm_tx, mut nm_rx)) = (mm.unwrap(), nm.unwrap());
    mm_tx.send(&big).unwrap();
    assert_eq!(nm_rx.recv(Some(TIMEOUT)).unwrap(), Some(big.clone()));
    // Sealed into more than a frame holds, it is refused unsent.
    let bloat = |pad| -> Arc<dyn Authenticator> {
        Arc::new(Bloating {
            key: SharedKey::from_bytes(&[1; 32]).unwrap(),
            pad,
        })
    };
    let (mm, nm) = sessions(
        (bloat(MAX_FRAME_BYTES - 2048), ANY),
        (bloat(MAX_FRAME_BYTES - 2048), ANY),
    );
    let ((mut mm_tx, _mm_rx), (_nm_tx, mut nm_rx)) = (mm.unwrap(), nm.unwrap());
    protocol_error(mm_tx.send(&big), "more than a frame's");
    // Nothing was written, so the session goes on.
    let ping = Msg::Ping { id: 1, sent_ns: 1 };
    mm_tx.send(&ping).unwrap();
    assert_eq!(nm_rx.recv(Some(TIMEOUT)).unwrap(), Some(ping));
}

// --------------------------------------------------------- pure codec

#[test]
fn hostile_lengths_are_refused_before_any_allocation_or_read() {
    for (header, piece) in [
        (0u32, "length 0"),
        (MAX_FRAME_BYTES as u32 + 1, "more than"),
        (u32::MAX, "more than"),
    ] {
        let mut bytes = header.to_be_bytes().to_vec();
        bytes.extend_from_slice(b"rest");
        let mut r = &bytes[..];
        LARGEST.with(|c| c.set(0));
        let e = read_frame(&mut r);
        let largest = LARGEST.with(Cell::get);
        protocol_error(e, piece);
        assert_eq!(r, b"rest", "nothing past the length is read");
        assert!(
            largest < 4096,
            "{largest} bytes allocated for length {header}"
        );
    }
    protocol_error(encode_frame(&[]), "not 0");
    let over = format!("not {}", MAX_FRAME_BYTES + 1);
    protocol_error(encode_frame(&vec![0; MAX_FRAME_BYTES + 1]), &over);
    assert!(encode_frame(&vec![0; MAX_FRAME_BYTES]).is_ok());
}

#[test]
fn a_cut_frame_is_a_protocol_error_and_a_clean_end_is_closed() {
    let frame = encode_frame(b"payload").unwrap();
    assert!(matches!(read_frame(&mut &[][..]), Err(WireError::Closed)));
    protocol_error(read_frame(&mut &frame[..3]), "length: 3 of 4");
    protocol_error(read_frame(&mut &frame[..6]), "payload: 2 of 7");
    assert_eq!(read_frame(&mut &frame[..]).unwrap(), b"payload");
}

#[test]
fn envelopes_are_strict() {
    let ping = Msg::Ping { id: 1, sent_ns: 1 };
    let good = encode_envelope(9, 1, &ping);
    assert_eq!(decode_envelope(&good, 9, 1).unwrap(), ping);
    for (text, piece) in [
        (
            r#"{"to":9,"seq":1,"msg":{"type":"ping","id":1,"sent_ns":1},"x":1}"#,
            "unknown field",
        ),
        (
            r#"{"to":9,"seq":1,"msg":{"type":"ping","id":1,"sent_ns":1,"x":1}}"#,
            "unknown field",
        ),
        (
            r#"{"to":9,"seq":1,"msg":{"type":"pingg","id":1,"sent_ns":1}}"#,
            "unknown variant",
        ),
        (
            r#"{"to":9,"seq":1,"msg":{"type":"ping","id":-1,"sent_ns":1}}"#,
            "not an envelope",
        ),
        (
            r#"{"to":9,"msg":{"type":"ping","id":1,"sent_ns":1}}"#,
            "missing field",
        ),
        (r#"{"v":1,"role":"nm","nonce":9}"#, "greeting"),
        ("", "not an envelope"),
    ] {
        protocol_error(decode_envelope(text.as_bytes(), 9, 1), piece);
    }
}

#[test]
fn messages_out_of_bounds_are_refused_when_decoded() {
    let long = "x".repeat(MAX_TEXT_BYTES + 1);
    let hello = |node: &str, pes| Msg::Hello {
        node: node.into(),
        pes,
        boot_id: "b".into(),
    };
    let task_up = |rank, size, pe| Msg::TaskUp {
        step: step(1),
        rank,
        size,
        pe,
    };
    let beat = |n| Msg::Heartbeat {
        slot: 0,
        row: 0,
        switch_at_ns: 0,
        cells: vec![None; n],
    };
    let good = [
        hello("n", 1),
        hello("n", MAX_CELLS as u32),
        beat(MAX_CELLS),
        task_up(0, 1, MAX_CELLS as u32 - 1),
    ];
    for msg in good {
        assert!(msg.validate().is_ok(), "{msg:?}");
    }
    let bad = [
        (hello("", 1), "empty node"),
        (hello("a\tb", 1), "control character"),
        (hello("a\u{7f}", 1), "control character"),
        (hello("n", 0), "0 PEs"),
        (hello("n", MAX_CELLS as u32 + 1), "1025 PEs"),
        (hello(&long, 1), "node of 1025 bytes"),
        (beat(MAX_CELLS + 1), "1025 cells"),
        (task_up(0, 0, 0), "0 tasks"),
        (task_up(4, 4, 0), "rank 4"),
        (task_up(0, 1, MAX_CELLS as u32), "PE 1024"),
        (Msg::Notice { text: long.clone() }, "text of"),
        (
            Msg::Refused {
                reason: long.clone(),
            },
            "reason of",
        ),
        (
            Msg::Welcome {
                node_index: 0,
                policy: "gs".into(),
                slot_ns: 0,
            },
            "slot length 0",
        ),
        (
            Msg::Classified {
                step: step(1),
                rank: 0,
                class: long,
                slot: 0,
            },
            "class of",
        ),
    ];
    for (msg, piece) in bad {
        // Encoded by hand (a session's sender refuses to send them).
        protocol_error(decode_envelope(&encode_envelope(1, 1, &msg), 1, 1), piece);
    }
}

// -------------------------------------------------------------- MUNGE

/// A MUNGE authenticator on munged's default socket, or `None` (the test
/// is skipped, or fails where `KEEL_TESTS_REQUIRE` lists `munge`).
fn munge(test: &str) -> Option<Munge> {
    match Munge::new(None) {
        Ok(m) => can_run(test, "munge", true).then_some(m),
        Err(e) => {
            eprintln!("{test}: {e}");
            can_run(test, "munge", false);
            None
        }
    }
}

#[test]
fn munge_round_trips_with_the_senders_ids_and_refuses_replays() {
    let Some(m) = munge("munge_round_trips_with_the_senders_ids_and_refuses_replays") else {
        return;
    };
    let cred = m.seal(b"payload\0with a NUL").unwrap();
    assert!(cred.iter().all(u8::is_ascii), "a credential is ASCII text");
    let opened = m.open(&cred).unwrap();
    assert_eq!(opened.payload, b"payload\0with a NUL");
    assert_eq!(opened.uid, Some(keel_cosched::sys::geteuid()));
    assert_eq!(opened.gid, Some(keel_cosched::sys::getgid()));
    assert_eq!(m.open(&cred), Err(AuthError::Replayed));
    let empty = m.seal(b"").unwrap();
    assert_eq!(m.open(&empty).unwrap().payload, b"");
    let mut bad = m.seal(b"x").unwrap();
    let at = bad.len() / 2;
    bad[at] = if bad[at] == b'A' { b'B' } else { b'A' };
    assert!(
        matches!(m.open(&bad), Err(AuthError::Invalid(_))),
        "{:?}",
        m.open(&bad)
    );
    assert!(matches!(
        m.open(b"MUNGE:garbage:"),
        Err(AuthError::Invalid(_))
    ));
}

#[test]
fn munge_on_a_named_socket() {
    let Some(_) = munge("munge_on_a_named_socket") else {
        return;
    };
    let named = Munge::new(Some(std::path::Path::new("/run/munge/munge.socket.2")));
    if let Ok(m) = named {
        let opened = m.open(&m.seal(b"hi").unwrap()).unwrap();
        assert_eq!(opened.payload, b"hi");
    }
    let absent = Munge::new(Some(std::path::Path::new("/nonexistent/munge.sock")));
    match absent {
        Err(AuthError::Unavailable(text)) => {
            assert!(text.contains("/nonexistent/munge.sock"), "{text}")
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

#[test]
fn munge_sessions_check_the_uid() {
    let Some(m) = munge("munge_sessions_check_the_uid") else {
        return;
    };
    let m: Arc<dyn Authenticator> = Arc::new(m);
    let me = PeerPolicy {
        uid: Some(keel_cosched::sys::geteuid()),
    };
    let (mm, nm) = sessions((m.clone(), me), (m.clone(), me));
    let ((mut mm_tx, _mm_rx), (_nm_tx, mut nm_rx)) = (mm.unwrap(), nm.unwrap());
    assert_eq!(nm_rx.peer_uid(), me.uid);
    for msg in every_variant().into_iter().take(6) {
        mm_tx.send(&msg).unwrap();
        assert_eq!(nm_rx.recv(Some(TIMEOUT)).unwrap(), Some(msg));
    }
    let other = PeerPolicy {
        uid: Some(keel_cosched::sys::geteuid() + 1),
    };
    let (mm, _nm) = sessions((m.clone(), other), (m, ANY));
    assert!(
        matches!(mm, Err(WireError::Auth(AuthError::Invalid(_)))),
        "{mm:?}"
    );
}
