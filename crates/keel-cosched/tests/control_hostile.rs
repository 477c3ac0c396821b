//! The control socket is world-connectable, so every request is hostile:
//! none may crash the daemon (whose death would end every user's jobs),
//! and no client may hold the server for others. Each test runs a real
//! daemon (`keel-cosched run --serve --control SOCK`) as the current user;
//! none needs privileges.

mod common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{manager_binary, wait_until, KillOnDrop};
use keel_cosched::control::{self, MAX_CONNECTIONS_PER_USER, MAX_REQUEST, REQUEST_DEADLINE};

/// A daemon serving on a socket in its own temporary directory.
struct Daemon {
    guard: KillOnDrop,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Daemon {
    fn start() -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("ctl.sock");
        let child = Command::new(manager_binary())
            .args(["run", "--serve", "--policy", "gs", "--no-realtime"])
            .args(["--suspend", "signals", "--control"])
            .arg(&socket)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut guard = KillOnDrop::default();
        guard.children.push(child);
        assert!(
            wait_until(Duration::from_secs(20), || socket.exists()),
            "the daemon did not create its socket"
        );
        Daemon {
            guard,
            socket,
            _dir: dir,
        }
    }

    fn child(&mut self) -> &mut Child {
        &mut self.guard.children[0]
    }

    /// Whether the daemon process is still running.
    fn alive(&mut self) -> bool {
        self.child().try_wait().unwrap().is_none()
    }

    fn ask(&self, line: &str) -> String {
        control::request(&self.socket, line).unwrap()
    }

    /// Asks for `shutdown` and waits for the daemon to exit.
    fn stop(mut self) {
        assert!(self.ask("shutdown").starts_with("ok"));
        let socket = self.socket.clone();
        assert!(wait_until(Duration::from_secs(10), || !socket.exists()));
        let _ = self.child().wait();
    }
}

fn connect(socket: &Path) -> UnixStream {
    UnixStream::connect(socket).unwrap()
}

/// Reads a connection's whole reply (the server closes after it).
fn reply_of(mut s: &UnixStream) -> String {
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text.trim_end().to_string()
}

#[test]
fn requests_that_used_to_crash_the_daemon_are_refused_and_it_answers_on() {
    let mut d = Daemon::start();
    let long_arg = "x".repeat(keel_cosched::job::MAX_ARG_BYTES + 1);
    for (request, needle) in [
        // Duration::from_secs_f64 panicked on these.
        ("submit a 1 arrival=1e20 -- true", "MAX_ARRIVAL_SECS"),
        ("submit a 1 arrival=inf -- true", "arrival"),
        // Instant + Duration overflowed.
        ("submit a 1 arrival=1e19 -- true", "MAX_ARRIVAL_SECS"),
        // The manager allocated one entry per rank before admission.
        ("submit x 1000000000000 -- true", "MAX_RANKS"),
        ("submit x 4096 -- true", "needs 4096 PEs"),
        ("submit x 1 pes=4000 -- true", "PE 4000 does not exist"),
        (&format!("submit x 1 -- {long_arg}"), "MAX_ARG_BYTES"),
        ("submit x 1 -- 'a", "unterminated"),
        ("status 99999999999999999999999", "job id"),
    ] {
        let reply = d.ask(request);
        assert!(
            reply.starts_with("error: ") && reply.contains(needle),
            "{request:.60}: `{reply}` lacks `{needle}`"
        );
        assert!(d.alive(), "the daemon died on `{request:.60}`");
    }
    // Still serving, and nothing was recorded for the refused jobs.
    assert_eq!(d.ask("list"), "ok");
    let ok = d.ask("submit fine 1 -- /bin/true");
    assert!(ok.starts_with("ok submitted job "), "{ok}");
    assert!(d.alive());
    d.stop();
}

#[test]
fn a_trickling_client_is_cut_off_at_the_deadline_and_holds_no_one() {
    let d = Daemon::start();
    // Idle connections that never send anything, and one client sending
    // a byte every 0.5 s, each well inside any per-read timeout.
    let idle: Vec<UnixStream> = (0..MAX_CONNECTIONS_PER_USER - 3)
        .map(|_| connect(&d.socket))
        .collect();
    let trickle = connect(&d.socket);
    let t0 = Instant::now();
    let writer = {
        let mut s = trickle.try_clone().unwrap();
        std::thread::spawn(move || {
            for b in b"list".iter().cycle().take(40) {
                if s.write_all(&[*b]).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(500));
            }
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    // Another client is answered meanwhile, without waiting for any of
    // them (served one at a time, it would wait for the idle ones' and
    // the trickler's deadlines: 10 s and more). The bounds leave seconds
    // of slack for a loaded machine.
    let asked = Instant::now();
    assert_eq!(d.ask("list"), "ok");
    let took = asked.elapsed();
    assert!(
        took < REQUEST_DEADLINE,
        "`list` took {took:?} while other connections were open"
    );
    // The trickler is cut off at the whole-request deadline.
    let reply = reply_of(&trickle);
    let cut = t0.elapsed();
    assert!(reply.contains("REQUEST_DEADLINE"), "{reply}");
    assert!(
        cut >= REQUEST_DEADLINE && cut < REQUEST_DEADLINE + Duration::from_secs(5),
        "cut off after {cut:?}"
    );
    // So are the idle connections.
    for s in &idle {
        assert!(reply_of(s).contains("REQUEST_DEADLINE"));
    }
    drop(trickle);
    let _ = writer.join();
    d.stop();
}

#[test]
fn connections_over_the_per_user_cap_are_told_busy_at_once() {
    let d = Daemon::start();
    let held: Vec<UnixStream> = (0..MAX_CONNECTIONS_PER_USER)
        .map(|_| connect(&d.socket))
        .collect();
    // Let the server accept them all before the next one arrives.
    std::thread::sleep(Duration::from_millis(300));
    let asked = Instant::now();
    let reply = d.ask("list");
    assert!(
        reply.starts_with("error: busy") && reply.contains("MAX_CONNECTIONS_PER_USER"),
        "{reply}"
    );
    assert!(asked.elapsed() < REQUEST_DEADLINE);
    // Every refusal arrives whole: none is lost under a connection reset.
    for _ in 0..100 {
        let reply = control::request(&d.socket, "list").expect("a reply, not a reset");
        assert!(reply.starts_with("error: busy"), "{reply}");
    }
    // Once they end, the user is served again.
    drop(held);
    assert!(wait_until(Duration::from_secs(5), || d.ask("list") == "ok"));
    d.stop();
}

#[test]
fn an_oversized_request_is_refused_without_waiting_for_its_end() {
    let d = Daemon::start();
    let mut s = connect(&d.socket);
    // No newline, more than MAX_REQUEST bytes, and the stream left open.
    let big = vec![b'a'; MAX_REQUEST as usize + 100];
    let _ = s.write_all(&big);
    let t0 = Instant::now();
    let reply = reply_of(&s);
    assert!(reply.contains("MAX_REQUEST"), "{reply}");
    assert!(
        t0.elapsed() < REQUEST_DEADLINE,
        "answered before the deadline"
    );
    assert_eq!(d.ask("list"), "ok");
    d.stop();
}

#[test]
fn unended_submissions_are_capped() {
    let d = Daemon::start();
    // Jobs arriving far in the future cost no process, only a record.
    for i in 0..control::MAX_LIVE_JOBS {
        let reply = d.ask(&format!("submit w{i} 1 arrival=100000 -- /bin/true"));
        assert!(reply.starts_with("ok submitted"), "{i}: {reply}");
    }
    let reply = d.ask("submit one-more 1 arrival=100000 -- /bin/true");
    assert!(
        reply.starts_with("error: ") && reply.contains("MAX_LIVE_JOBS"),
        "{reply}"
    );
    // Killing one makes room.
    let list = d.ask("list");
    let first = list
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();
    assert!(d.ask(&format!("kill {first}")).starts_with("ok"));
    let reply = d.ask("submit one-more 1 arrival=100000 -- /bin/true");
    assert!(reply.starts_with("ok submitted"), "{reply}");
    d.stop();
}
