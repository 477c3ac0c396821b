//! The node manager's registration socket (`cluster::register`): the
//! request and reply lines, the peer-credential rule, the server's
//! resistance to hostile clients, and how it makes its socket file.

mod common;

use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use keel_cosched::cluster::register::{
    self, authorize, serve, Registration, Reply, MAX_CONNECTIONS, MAX_REPLY_BYTES,
    MAX_REQUEST_BYTES, REQUEST_DEADLINE,
};
use keel_cosched::sys::{self, PeerCred};

/// A well-formed line; tests replace one `key=value` of it at a time.
const GOOD: &str = "keel-register 1 job=41 step=2 rank=3 size=8 local_rank=1 local_size=4 nodes=2 pid=4242 uid=1000 gid=100 policy=fcs";

fn good() -> Registration {
    Registration {
        job: 41,
        step: 2,
        rank: 3,
        size: 8,
        local_rank: 1,
        local_size: 4,
        nodes: 2,
        pid: 4242,
        uid: 1000,
        gid: 100,
        policy: Some("fcs".into()),
    }
}

/// `GOOD` with `key=...` replaced by `word` (or removed, when `word` is
/// empty).
fn with(key: &str, word: &str) -> String {
    GOOD.split(' ')
        .map(|w| {
            if w.split_once('=').is_some_and(|(k, _)| k == key) {
                word
            } else {
                w
            }
        })
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn a_good_line_parses_in_any_key_order() {
    assert_eq!(Registration::parse(GOOD.as_bytes()), Ok(good()));
    assert_eq!(
        Registration::parse(format!("{GOOD}\n").as_bytes()),
        Ok(good())
    );
    let shuffled = "keel-register 1 policy=fcs gid=100 uid=1000 pid=4242 nodes=2 local_size=4 local_rank=1 size=8 rank=3 step=2 job=41\n";
    assert_eq!(Registration::parse(shuffled.as_bytes()), Ok(good()));
    // No policy: the NM's default.
    let plain = Registration::parse(with("policy", "").as_bytes()).unwrap();
    assert_eq!(plain.policy, None);
    // Every character a policy may hold, at the longest length.
    let long = format!("{}{}", "a:=.,_-09", "z".repeat(55));
    assert_eq!(long.len(), 64);
    let p = Registration::parse(with("policy", &format!("policy={long}")).as_bytes()).unwrap();
    assert_eq!(p.policy.as_deref(), Some(long.as_str()));
    // Slurm's special steps (batch, extern, interactive, ...) are step
    // ids near u32::MAX, taken as numbers.
    for special in [0xffff_fffbu32, 0xffff_fffc, 0xffff_fffd, 0xffff_fffe] {
        let r = Registration::parse(with("step", &format!("step={special}")).as_bytes()).unwrap();
        assert_eq!(r.step, special);
    }
    // The limits, inclusive.
    let edge = "keel-register 1 job=4294967295 step=0 rank=4294967294 size=4294967295 local_rank=0 local_size=1 nodes=4294967295 pid=2147483647 uid=0 gid=0";
    let r = Registration::parse(edge.as_bytes()).unwrap();
    assert_eq!((r.job, r.rank, r.pid), (u32::MAX, u32::MAX - 1, i32::MAX));
    // Encoding gives the line back.
    for reg in [good(), plain, r] {
        let line = reg.encode();
        assert!(
            line.ends_with('\n') && line.len() <= MAX_REQUEST_BYTES,
            "{line}"
        );
        assert_eq!(Registration::parse(line.as_bytes()), Ok(reg));
    }
}

#[test]
fn each_bad_line_is_refused_naming_its_fault() {
    let numbers = &keel_cosched::cluster::register::KEYS[..10];
    let mut cases: Vec<(String, String)> = Vec::new();
    for &key in numbers {
        cases.push((with(key, ""), format!("`{key}` is missing")));
        cases.push((format!("{GOOD} {key}=1"), format!("`{key}` is given twice")));
        for bad in ["", "-1", "+1", "0x10", "1e3", "12a", "1.0", "١"] {
            cases.push((with(key, &format!("{key}={bad}")), format!("`{key}`")));
        }
        cases.push((with(key, &format!("{key}=4294967296")), format!("`{key}`")));
        cases.push((
            with(key, &format!("{key}=99999999999999999999999")),
            format!("`{key}`"),
        ));
    }
    let more: &[(&str, &str, &str)] = &[
        ("rank", "rank=8", "`rank`"),
        ("rank", "rank=9", "`rank`"),
        ("local_rank", "local_rank=4", "`local_rank`"),
        ("local_size", "local_size=9", "`local_size`"),
        ("nodes", "nodes=0", "`nodes`"),
        ("nodes", "nodes=9", "`nodes`"),
        ("pid", "pid=0", "`pid`"),
        ("pid", "pid=1", "`pid`"),
        ("pid", "pid=2147483648", "`pid`"),
        ("uid", "uid=4294967295", "`uid`"),
        ("gid", "gid=4294967295", "`gid`"),
        ("policy", "policy=", "`policy`"),
        ("policy", "policy=FCS", "`policy`"),
        ("policy", "policy=fcs;rm", "`policy`"),
        ("policy", "policy=a/b", "`policy`"),
        ("policy", "policy=gang\u{e9}", "`policy`"),
    ];
    for (key, word, why) in more {
        cases.push((with(key, word), why.to_string()));
    }
    cases.push((
        with("policy", &format!("policy={}", "a".repeat(65))),
        "`policy`".into(),
    ));
    cases.push((
        format!("{GOOD} policy=gs"),
        "`policy` is given twice".into(),
    ));
    cases.push((format!("{GOOD} color=red"), "unknown key `color`".into()));
    cases.push((format!("{GOOD} =1"), "unknown key ``".into()));
    cases.push((format!("{GOOD} bare"), "`bare` is not KEY=VALUE".into()));
    cases.push((with("job", "job= 41"), "`41` is not KEY=VALUE".into()));
    cases.push((GOOD.replace(" 1 ", " 2 "), "`version`".into()));
    cases.push((GOOD.replace(" 1 ", " "), "`version`".into()));
    cases.push((
        GOOD.replace("keel-register", "register"),
        "keel-register".into(),
    ));
    cases.push((String::new(), "keel-register".into()));
    cases.push((format!("{GOOD}\n\n"), "control character".into()));
    cases.push((format!("{GOOD}\r\n"), "control character".into()));
    cases.push((
        GOOD.replace("job=41", "job=41\0"),
        "control character".into(),
    ));
    cases.push((GOOD.replace(' ', "\t"), "control character".into()));
    cases.push((
        format!("{GOOD} {}", "x".repeat(MAX_REQUEST_BYTES)),
        "MAX_REQUEST_BYTES".into(),
    ));
    for (line, why) in &cases {
        match Registration::parse(line.as_bytes()) {
            Ok(r) => panic!("accepted {line:?} as {r:?}"),
            Err(e) => assert!(e.0.contains(why.as_str()), "{line:?}: {e} (wanted {why})"),
        }
    }
    let not_utf8 = [GOOD.as_bytes(), b" policy=\xff\xfe"].concat();
    assert!(Registration::parse(&not_utf8)
        .unwrap_err()
        .0
        .contains("UTF-8"));
}

#[test]
fn replies_round_trip_and_stay_one_line() {
    let ok = Reply::Accepted {
        page: "/dev/shm/keel cosched/page 7.0.1".into(),
    };
    assert_eq!(ok.encode(), "ok page=/dev/shm/keel cosched/page 7.0.1\n");
    let no = Reply::Refused {
        reason: "the step is not known to the machine manager".into(),
    };
    assert_eq!(
        no.encode(),
        "refused the step is not known to the machine manager\n"
    );
    let empty = Reply::Refused {
        reason: String::new(),
    };
    for r in [&ok, &no, &empty] {
        assert_eq!(Reply::parse(&r.encode()).as_ref(), Ok(r));
        // Without the newline too.
        assert_eq!(
            Reply::parse(r.encode().trim_end_matches('\n')).as_ref(),
            Ok(r)
        );
    }
    assert_eq!(
        Reply::parse("refused"),
        Ok(Reply::Refused {
            reason: String::new()
        })
    );
    // A reason is made one line and cut to fit the plugin's buffer.
    let multi = Reply::Refused {
        reason: "one\ntwo\r\0three".into(),
    };
    assert_eq!(multi.encode(), "refused one two  three\n");
    let long = Reply::Refused {
        reason: "\u{e9}".repeat(MAX_REPLY_BYTES),
    };
    let line = long.encode();
    assert!(line.len() <= MAX_REPLY_BYTES && line.ends_with('\n'));
    assert!(matches!(Reply::parse(&line), Ok(Reply::Refused { .. })));
    // A page that cannot travel becomes a refusal that says so.
    for page in ["relative/page", "/a\nb"] {
        let bad = Reply::Accepted { page: page.into() };
        match Reply::parse(&bad.encode()) {
            Ok(Reply::Refused { reason }) => assert!(reason.contains("page"), "{reason}"),
            other => panic!("{page:?}: {other:?}"),
        }
    }
    let huge = Reply::Accepted {
        page: format!("/{}", "p".repeat(MAX_REPLY_BYTES)).into(),
    };
    assert!(matches!(
        Reply::parse(&huge.encode()),
        Ok(Reply::Refused { .. })
    ));
    // What the plugin refuses to read.
    for bad in [
        "",
        "ok",
        "ok page=",
        "ok page=relative",
        "OK page=/x",
        "refusedx",
        "ok page=/x\nrefused y",
        "ok page=/x\r",
        "yes",
    ] {
        assert!(Reply::parse(bad).is_err(), "{bad:?}");
    }
    assert!(Reply::parse(&format!("refused {}", "r".repeat(MAX_REPLY_BYTES))).is_err());
}

#[test]
fn a_process_registers_only_itself() {
    let reg = good();
    let me = |pid, uid| PeerCred { pid, uid, gid: 100 };
    assert!(authorize(&reg, &me(4242, 1000)).is_ok());
    // Root (the plugin's privileged callback) registers a task of any user.
    assert!(authorize(&reg, &me(4242, 0)).is_ok());
    let e = authorize(&reg, &me(4243, 0)).unwrap_err();
    assert!(e.0.contains("`pid`"), "{e}");
    let e = authorize(&reg, &me(4242, 1001)).unwrap_err();
    assert!(e.0.contains("`uid`"), "{e}");
}

/// What a test server saw.
#[derive(Default)]
struct Seen {
    calls: AtomicUsize,
    last: Mutex<Option<(Registration, PeerCred)>>,
}

/// A private directory, and a server in it whose handler records each
/// registration and accepts it with page `/run/page/<rank>`.
fn server(dir: &Path) -> (register::RegisterServer, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let s = Arc::clone(&seen);
    let server = serve(
        &dir.join("nm.sock"),
        Box::new(move |reg: Registration, peer: PeerCred| {
            s.calls.fetch_add(1, Ordering::SeqCst);
            let page = PathBuf::from(format!("/run/page/{}", reg.rank));
            *s.last.lock().unwrap() = Some((reg, peer));
            Reply::Accepted { page }
        }),
    )
    .expect("the server starts");
    (server, seen)
}

/// This process's registration.
fn mine() -> Registration {
    Registration {
        pid: sys::getpid(),
        uid: sys::geteuid(),
        gid: sys::getgid(),
        ..good()
    }
}

/// Sends raw bytes and reads the reply, within `timeout`.
fn exchange(path: &Path, bytes: &[u8], timeout: Duration) -> String {
    let mut s = UnixStream::connect(path).unwrap();
    s.set_read_timeout(Some(timeout)).unwrap();
    let _ = s.write_all(bytes);
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

#[test]
fn a_task_registering_itself_gets_the_handlers_reply() {
    let dir = tempfile::tempdir().unwrap();
    let (server, seen) = server(dir.path());
    assert_eq!(server.path(), dir.path().join("nm.sock"));
    let mode = std::fs::symlink_metadata(server.path()).unwrap().mode();
    assert_eq!(mode & 0o777, 0o600, "the socket is its owner's alone");
    let reply = register::register(server.path(), &mine()).unwrap();
    assert_eq!(
        reply,
        Reply::Accepted {
            page: "/run/page/3".into()
        }
    );
    let (reg, peer) = seen.last.lock().unwrap().clone().unwrap();
    assert_eq!(reg, mine());
    assert_eq!(peer.pid, sys::getpid());
    assert_eq!(peer.uid, sys::geteuid());
    // The line as the plugin writes it, by hand.
    let raw = exchange(
        server.path(),
        mine().encode().as_bytes(),
        Duration::from_secs(5),
    );
    assert_eq!(raw, "ok page=/run/page/3\n");
    let path = server.path().to_path_buf();
    server.stop();
    assert!(!path.exists(), "stop removes the socket");
    assert_eq!(seen.calls.load(Ordering::SeqCst), 2);
}

#[test]
fn another_processs_pid_is_refused_before_the_handler() {
    let dir = tempfile::tempdir().unwrap();
    let (server, seen) = server(dir.path());
    // SAFETY: getppid cannot fail and touches no memory.
    let parent = unsafe { libc::getppid() };
    for pid in [parent, sys::getpid() + 1] {
        let reply = register::register(server.path(), &Registration { pid, ..mine() }).unwrap();
        match reply {
            Reply::Refused { reason } => {
                assert!(reason.contains("`pid`"), "{reason}");
                assert!(reason.contains(&pid.to_string()), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    }
    // A malformed line is refused with the parser's reason.
    let raw = exchange(
        server.path(),
        format!("{}\n", with("rank", "rank=99")).as_bytes(),
        Duration::from_secs(5),
    );
    assert!(
        raw.starts_with("refused ") && raw.contains("`rank`"),
        "{raw}"
    );
    assert_eq!(seen.calls.load(Ordering::SeqCst), 0);
}

/// Set in the copy of this test binary that [`another_users_task_is_refused`]
/// runs as nobody: the socket to register at.
const HELPER_ENV: &str = "KEEL_REGISTER_TEST_SOCKET";

/// Not a test of its own: the body of the process that
/// [`another_users_task_is_refused`] starts as nobody. It claims a task of
/// uid 0 and prints the server's reply.
#[test]
fn helper_register_as_another_user() {
    let Some(path) = std::env::var_os(HELPER_ENV) else {
        return;
    };
    let claim = Registration { uid: 0, ..mine() };
    let reply =
        register::register(Path::new(&path), &claim).expect("the helper reaches the server");
    println!("REPLY {}", reply.encode().trim_end());
}

#[test]
fn another_users_task_is_refused() {
    if !common::can_run_as_root("another_users_task_is_refused") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (server, seen) = server(dir.path());
    // Let nobody reach the socket, so that the refusal is the credential
    // check's and not the file mode's.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(server.path(), std::fs::Permissions::from_mode(0o666)).unwrap();
    // A copy of this binary nobody can run, wherever the checkout is.
    let bin_dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(bin_dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = bin_dir.path().join("cluster_register");
    std::fs::copy(std::env::current_exe().unwrap(), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    use std::os::unix::process::CommandExt;
    let out = std::process::Command::new(&bin)
        .args([
            "--exact",
            "helper_register_as_another_user",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HELPER_ENV, server.path())
        .current_dir("/")
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reply = stdout
        .lines()
        .find_map(|l| l.split_once("REPLY ").map(|(_, r)| r))
        .unwrap_or_else(|| panic!("no reply: {stdout}"));
    assert!(
        reply.starts_with("refused ") && reply.contains("`uid`"),
        "{reply}"
    );
    assert!(reply.contains("65534"), "{reply}");
    assert_eq!(seen.calls.load(Ordering::SeqCst), 0);
}

#[test]
fn hostile_clients_do_not_block_a_good_one() {
    let dir = tempfile::tempdir().unwrap();
    let (server, seen) = server(dir.path());
    let path = server.path().to_path_buf();
    // Too long and still sending nothing more; not UTF-8; a start and then
    // silence; a connection that sends nothing at all.
    let mut long = UnixStream::connect(&path).unwrap();
    long.write_all(&vec![b'a'; MAX_REQUEST_BYTES + 100])
        .unwrap();
    let mut garbage = UnixStream::connect(&path).unwrap();
    garbage.write_all(b"\xff\xfe\xfd keel\n").unwrap();
    let mut slow = UnixStream::connect(&path).unwrap();
    slow.write_all(b"keel-register 1 job=1").unwrap();
    let mut silent = UnixStream::connect(&path).unwrap();
    let t0 = Instant::now();
    // The good client is served while all of those are held open.
    let reply = register::register(&path, &mine()).unwrap();
    assert!(matches!(reply, Reply::Accepted { .. }), "{reply:?}");
    assert!(
        t0.elapsed() < REQUEST_DEADLINE / 2,
        "the good client waited {:?}",
        t0.elapsed()
    );
    let read = |s: &mut UnixStream| {
        s.set_read_timeout(Some(REQUEST_DEADLINE * 3)).unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    };
    let r = read(&mut long);
    assert!(
        r.starts_with("refused ") && r.contains("MAX_REQUEST_BYTES"),
        "{r}"
    );
    let r = read(&mut garbage);
    assert!(r.starts_with("refused ") && r.contains("UTF-8"), "{r}");
    let r = read(&mut slow);
    assert!(
        r.starts_with("refused ") && r.contains("REQUEST_DEADLINE"),
        "{r}"
    );
    let r = read(&mut silent);
    assert!(
        r.starts_with("refused ") && r.contains("REQUEST_DEADLINE"),
        "{r}"
    );
    assert!(
        t0.elapsed() < REQUEST_DEADLINE * 2,
        "the slow clients were cut off after {:?}",
        t0.elapsed()
    );
    // A client that closes at once, and one that sends half a line and
    // closes, cost nothing.
    drop(UnixStream::connect(&path).unwrap());
    exchange(&path, b"keel-register 1", Duration::from_millis(1));
    let reply = register::register(&path, &mine()).unwrap();
    assert!(matches!(reply, Reply::Accepted { .. }), "{reply:?}");
    assert_eq!(seen.calls.load(Ordering::SeqCst), 2);
}

#[test]
fn connections_beyond_the_cap_are_told_busy() {
    let dir = tempfile::tempdir().unwrap();
    let (server, _seen) = server(dir.path());
    let path = server.path().to_path_buf();
    // MAX_CONNECTIONS silent clients hold every slot until the deadline.
    let held: Vec<UnixStream> = (0..MAX_CONNECTIONS)
        .map(|_| UnixStream::connect(&path).unwrap())
        .collect();
    let t0 = Instant::now();
    let r = exchange(&path, mine().encode().as_bytes(), REQUEST_DEADLINE * 3);
    assert!(r.starts_with("refused busy"), "{r}");
    assert!(
        t0.elapsed() < REQUEST_DEADLINE,
        "busy took {:?}",
        t0.elapsed()
    );
    drop(held);
    // Once they are gone, registrations are served again.
    assert!(common::wait_until(REQUEST_DEADLINE * 3, || matches!(
        register::register(&path, &mine()),
        Ok(Reply::Accepted { .. })
    )));
}

#[test]
fn a_panicking_handler_refuses_and_the_server_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&calls);
    let server = serve(
        &dir.path().join("nm.sock"),
        Box::new(move |_, _| {
            if c.fetch_add(1, Ordering::SeqCst) == 0 {
                panic!("the first registration fails");
            }
            Reply::Refused {
                reason: "second".into(),
            }
        }),
    )
    .unwrap();
    // A panic prints its message and, with RUST_BACKTRACE set, a symbolized
    // backtrace of this debug build, which can outlast the client's usual
    // deadlines on a loaded machine: wait longer for this one reply.
    let mut s = UnixStream::connect(server.path()).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    s.write_all(mine().encode().as_bytes()).unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    match Reply::parse(&reply).unwrap() {
        Reply::Refused { reason } => assert!(reason.contains("node manager failed"), "{reason}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        register::register(server.path(), &mine()).unwrap(),
        Reply::Refused {
            reason: "second".into()
        }
    );
}

#[test]
fn a_stale_socket_is_replaced_and_a_live_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nm.sock");
    // A socket nobody listens on any more (a crashed NM's).
    drop(UnixListener::bind(&path).unwrap());
    assert!(path.exists());
    let (server, _seen) = server(dir.path());
    assert!(matches!(
        register::register(&path, &mine()),
        Ok(Reply::Accepted { .. })
    ));
    // A second server at a live socket is refused, and the first one
    // still serves.
    let e = serve(&path, Box::new(|_, _| unreachable!())).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse, "{e}");
    assert!(matches!(
        register::register(&path, &mine()),
        Ok(Reply::Accepted { .. })
    ));
    // Dropping the server removes its socket.
    drop(server);
    assert!(std::fs::symlink_metadata(&path).is_err());
}

#[test]
fn a_link_or_other_file_at_the_path_is_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nm.sock");
    let refused = |why: &str| {
        let e = serve(&path, Box::new(|_, _| unreachable!())).unwrap_err();
        assert!(e.to_string().contains(why), "{e}");
    };
    // A link to a file: neither followed nor removed.
    let target = dir.path().join("precious");
    std::fs::write(&target, "keep me").unwrap();
    std::os::unix::fs::symlink(&target, &path).unwrap();
    refused("symbolic link");
    assert!(std::fs::symlink_metadata(&path)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    std::fs::remove_file(&path).unwrap();
    // A link to a stale socket is refused too.
    let other = dir.path().join("other.sock");
    drop(UnixListener::bind(&other).unwrap());
    std::os::unix::fs::symlink(&other, &path).unwrap();
    refused("symbolic link");
    assert!(other.exists());
    std::fs::remove_file(&path).unwrap();
    // A regular file, and a directory.
    std::fs::write(&path, "data").unwrap();
    refused("not a socket");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "data");
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    refused("not a socket");
    assert!(path.is_dir());
}

#[test]
fn an_unsafe_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let refused = |path: &Path, why: &str| {
        let e = serve(path, Box::new(|_, _| unreachable!())).unwrap_err();
        assert!(e.to_string().contains(why), "{e}");
        assert!(std::fs::symlink_metadata(path).is_err(), "nothing was made");
    };
    for mode in [0o770, 0o707, 0o777, 0o1777] {
        let d = dir.path().join(format!("mode-{mode:o}"));
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)).unwrap();
        refused(&d.join("nm.sock"), "writable by group or others");
    }
    refused(&dir.path().join("missing/nm.sock"), "missing");
    // 0755 is fine: others may reach the socket's name, not replace it.
    let ok = dir.path().join("ok");
    std::fs::create_dir(&ok).unwrap();
    std::fs::set_permissions(&ok, std::fs::Permissions::from_mode(0o755)).unwrap();
    drop(serve(&ok.join("nm.sock"), Box::new(|_, _| unreachable!())).unwrap());
    if sys::geteuid() == 0 {
        // Root's server refuses a directory it does not own.
        let theirs = dir.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        refused(&theirs.join("nm.sock"), "owned by uid 65534");
    }
}
