//! The SPANK plugin (`spank/keel_cosched_spank.c`) that registers each
//! Slurm task with its node's NM (`cluster::register`).
//!
//! Three levels: the plugin builds with `-Werror` and exports the
//! callbacks Slurm looks up (needs Slurm's headers: `spank.h`); it
//! registers through a stand-in for slurmstepd (`spank/tests/
//! keel_spank_host.c`) against real and hostile servers, which needs no
//! cluster; and on a live cluster (`scripts/slurm-local.sh up`) `srun
//! --keel-cosched` tasks register with one NM per node and see their
//! page, which needs the cluster's plugstack to load the plugin (see
//! [`live_plugstack`]).

mod common;
mod slurm;

use slurm::{install_live_plugin, live_nodes, live_plugstack, spank_dir, srun};

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use keel_cosched::cluster::register::{self, Registration, Reply, MAX_REPLY_BYTES};
use keel_cosched::sys::{self, PeerCred};

/// Slurm's SPANK header, which the plugin is built against.
const SPANK_H: &str = "/usr/include/slurm/spank.h";

/// Whether `program --version` runs.
fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The plugin and the stand-in host, built into a temporary directory.
struct Built {
    dir: tempfile::TempDir,
}

impl Built {
    fn plugin(&self) -> PathBuf {
        self.dir.path().join("keel_cosched_spank.so")
    }
    fn host(&self) -> PathBuf {
        self.dir.path().join("keel_spank_host")
    }
}

/// Builds the plugin and the host with the Makefile, or `None` (skipped)
/// where Slurm's headers, gcc or make are missing.
fn build(test: &str) -> Option<Built> {
    let have = Path::new(SPANK_H).exists() && runs("gcc") && runs("make");
    if !common::can_run(test, "spank.h", have) {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new("make")
        .arg("-C")
        .arg(spank_dir())
        .arg(format!("OUT={}", dir.path().display()))
        .args(["all", "host"])
        .output()
        .expect("make runs");
    assert!(
        out.status.success(),
        "make failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(Built { dir })
}

#[test]
fn the_plugin_builds_with_werror_and_exports_its_callbacks() {
    let test = "the_plugin_builds_with_werror_and_exports_its_callbacks";
    let Some(built) = build(test) else {
        return;
    };
    assert!(built.plugin().is_file());
    if !common::can_run(test, "nm", runs("nm")) {
        return;
    }
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(built.plugin())
        .output()
        .unwrap();
    assert!(out.status.success());
    let symbols = String::from_utf8_lossy(&out.stdout);
    let defined: Vec<&str> = symbols
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .collect();
    for wanted in [
        "slurm_spank_init",
        "slurm_spank_task_init_privileged",
        "plugin_name",
        "plugin_type",
        "plugin_version",
        "spank_plugin_version",
    ] {
        assert!(defined.contains(&wanted), "{wanted} missing:\n{symbols}");
    }
    // Nothing of libslurm is linked in: slurmstepd provides spank_*.
    let out = Command::new("nm")
        .args(["-D", "--undefined-only"])
        .arg(built.plugin())
        .output()
        .unwrap();
    let undefined = String::from_utf8_lossy(&out.stdout);
    assert!(undefined.contains("spank_get_item"), "{undefined}");
}

/// What a run of the stand-in host did.
struct HostRun {
    code: Option<i32>,
    pid: i32,
    stdout: String,
    stderr: String,
    took: Duration,
}

impl HostRun {
    /// The value the plugin set for `name` in the task's environment.
    fn set(&self, name: &str) -> Option<&str> {
        self.stdout.lines().find_map(|l| {
            l.strip_prefix("setenv ")?
                .strip_prefix(name)?
                .strip_prefix('=')
        })
    }
}

/// Runs the host: loads the plugin with `args` and the option `option`
/// (`-` for none), with `SLURMD_NODENAME=n7`.
fn host(built: &Built, option: &str, args: &[&str]) -> HostRun {
    let t0 = Instant::now();
    let mut child = Command::new(built.host())
        .arg(built.plugin())
        .arg(option)
        .args(args)
        .env("SLURMD_NODENAME", "n7")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = t0 + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the host still ran after 30 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let took = t0.elapsed();
    let out: Output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let pid = stdout
        .lines()
        .find_map(|l| l.strip_prefix("pid="))
        .and_then(|p| p.parse().ok())
        .unwrap_or(-1);
    HostRun {
        code: out.status.code(),
        pid,
        stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        took,
    }
}

/// A registration server in a private directory whose handler records
/// what it saw and answers `reply(reg)`.
struct Nm {
    dir: tempfile::TempDir,
    seen: Arc<Mutex<Vec<(Registration, PeerCred)>>>,
    _server: register::RegisterServer,
}

impl Nm {
    fn start(reply: impl Fn(&Registration) -> Reply + Send + Sync + 'static) -> Nm {
        let dir = tempfile::tempdir().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = Arc::clone(&seen);
        let server = register::serve(
            &dir.path().join("nm-n7.sock"),
            Box::new(move |reg, peer| {
                let r = reply(&reg);
                s.lock().unwrap().push((reg, peer));
                r
            }),
        )
        .unwrap();
        Nm {
            dir,
            seen,
            _server: server,
        }
    }

    /// The plugin argument that reaches this NM through `%n`.
    fn socket_arg(&self) -> String {
        format!("socket={}/nm-%n.sock", self.dir.path().display())
    }
}

#[test]
fn a_task_registers_through_a_stand_in_slurmstepd() {
    let Some(built) = build("a_task_registers_through_a_stand_in_slurmstepd") else {
        return;
    };
    let nm = Nm::start(|reg| Reply::Accepted {
        page: format!("/dev/shm/keel page {}.{}.{}", reg.job, reg.step, reg.rank).into(),
    });
    let sock = nm.socket_arg();
    let run = host(&built, "--keel-cosched=fcs", &[&sock, "timeout_ms=5000"]);
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    assert_eq!(
        run.set("KEEL_COSCHED_PAGE"),
        Some("/dev/shm/keel page 77.3.1")
    );
    assert_eq!(run.set("KEEL_COSCHED_JOB"), Some("77.3"));
    let seen = nm.seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    let (reg, peer) = &seen[0];
    assert_eq!(
        *reg,
        Registration {
            job: 77,
            step: 3,
            rank: 1,
            size: 4,
            local_rank: 1,
            local_size: 2,
            nodes: 2,
            pid: run.pid,
            uid: sys::getuid(),
            gid: sys::getgid(),
            policy: Some("fcs".into()),
        }
    );
    assert_eq!(peer.pid, run.pid, "the task registered itself");
    drop(seen);
    // No policy: none is sent, and the NM chooses.
    for option in ["--keel-cosched", "--keel-cosched="] {
        let run = host(&built, option, &[&sock]);
        assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
        assert_eq!(nm.seen.lock().unwrap().last().unwrap().0.policy, None);
    }
}

#[test]
fn without_the_option_nothing_registers_and_no_page_is_inherited() {
    let Some(built) = build("without_the_option_nothing_registers_and_no_page_is_inherited") else {
        return;
    };
    let nm = Nm::start(|_| unreachable!("nothing registers"));
    let run = host(&built, "-", &[&nm.socket_arg()]);
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("unsetenv KEEL_COSCHED_PAGE\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("unsetenv KEEL_COSCHED_JOB\n"),
        "{}",
        run.stdout
    );
    assert_eq!(run.set("KEEL_COSCHED_PAGE"), None);
    assert!(nm.seen.lock().unwrap().is_empty());
}

#[test]
fn a_refusal_stops_the_task_unless_not_required() {
    let Some(built) = build("a_refusal_stops_the_task_unless_not_required") else {
        return;
    };
    let nm = Nm::start(|reg| Reply::Refused {
        reason: format!("no room for job {}", reg.job),
    });
    let sock = nm.socket_arg();
    for args in [vec![sock.as_str()], vec![sock.as_str(), "required=1"]] {
        let run = host(&built, "--keel-cosched=gs", &args);
        // The plugin ends the task itself (exit 1), whether plugstack.conf
        // says `required` or `optional`.
        assert_eq!(run.code, Some(1), "{}{}", run.stdout, run.stderr);
        assert!(!run.stdout.contains("rc="), "{}", run.stdout);
        assert!(
            run.stderr
                .contains("refused task 1 of job 77.3: no room for job 77")
                && run.stderr.contains("required=1")
                && run.stderr.starts_with("error: keel-cosched: "),
            "{}",
            run.stderr
        );
        assert_eq!(run.set("KEEL_COSCHED_PAGE"), None);
    }
    let run = host(&built, "--keel-cosched=gs", &[&sock, "required=0"]);
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("rc=0"), "{}", run.stdout);
    assert!(
        run.stderr.starts_with("info: keel-cosched: ") && run.stderr.contains("no room"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.contains("unsetenv KEEL_COSCHED_PAGE"));
    assert_eq!(run.set("KEEL_COSCHED_PAGE"), None);
    assert_eq!(nm.seen.lock().unwrap().len(), 3);
}

/// How a raw server answers a connection, after reading the request.
type Answer = fn(&mut UnixStream);

/// A raw server at `dir/nm-n7.sock` that answers every connection with
/// `answer(stream)`, until dropped.
struct RawNm {
    dir: tempfile::TempDir,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    connections: Arc<AtomicUsize>,
}

impl RawNm {
    fn start(answer: Answer) -> RawNm {
        let dir = tempfile::tempdir().unwrap();
        let listener = UnixListener::bind(dir.path().join("nm-n7.sock")).unwrap();
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(AtomicUsize::new(0));
        let (flag, count) = (Arc::clone(&stop), Arc::clone(&connections));
        let thread = std::thread::spawn(move || {
            let mut held = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((mut s, _)) => {
                        count.fetch_add(1, Ordering::SeqCst);
                        s.set_nonblocking(false).unwrap();
                        s.set_read_timeout(Some(Duration::from_millis(200)))
                            .unwrap();
                        let mut line = [0u8; 2048];
                        let _ = s.read(&mut line);
                        answer(&mut s);
                        held.push(s);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        RawNm {
            dir,
            stop,
            thread: Some(thread),
            connections,
        }
    }

    fn socket_arg(&self) -> String {
        format!("socket={}/nm-%n.sock", self.dir.path().display())
    }
}

impl Drop for RawNm {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn hostile_or_absent_node_managers_cost_a_bounded_wait() {
    let Some(built) = build("hostile_or_absent_node_managers_cost_a_bounded_wait") else {
        return;
    };
    let cases: [(Answer, &str); 7] = [
        // Accepts, reads, never answers (and keeps the connection).
        (|_| {}, "did not answer within 300 ms"),
        // An endless line.
        (
            |s| {
                let _ = s.write_all(&vec![b'x'; MAX_REPLY_BYTES + 10]);
            },
            "longer than 4096 bytes",
        ),
        // Half a reply, then closes.
        (
            |s| {
                let _ = s.write_all(b"ok page=/x");
                let _ = s.shutdown(std::net::Shutdown::Both);
            },
            "closed without a complete reply",
        ),
        (
            |s| {
                let _ = s.write_all(b"ok page=/a\x01b\n");
            },
            "control character",
        ),
        (
            |s| {
                let _ = s.write_all(b"ok page=relative\n");
            },
            "unreadable reply",
        ),
        (
            |s| {
                let _ = s.write_all(b"maybe\n");
            },
            "unreadable reply: maybe",
        ),
        (
            |s| {
                let _ = s.write_all(b"refused\n");
            },
            "refused task 1 of job 77.3: no reason given",
        ),
    ];
    for (answer, why) in cases {
        let nm = RawNm::start(answer);
        let run = host(
            &built,
            "--keel-cosched=fcs",
            &[&nm.socket_arg(), "timeout_ms=300"],
        );
        assert_eq!(run.code, Some(1), "{why}: {}{}", run.stdout, run.stderr);
        assert!(run.stderr.contains(why), "wanted {why}: {}", run.stderr);
        assert!(
            run.took < Duration::from_secs(3),
            "{why}: took {:?}",
            run.took
        );
        assert_eq!(run.set("KEEL_COSCHED_PAGE"), None);
        assert_eq!(nm.connections.load(Ordering::SeqCst), 1);
    }
    // Nobody there at all.
    let dir = tempfile::tempdir().unwrap();
    let arg = format!("socket={}/nm-%n.sock", dir.path().display());
    let run = host(&built, "--keel-cosched", &[&arg]);
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr.contains(&format!(
            "cannot reach the node manager at {}/nm-n7.sock",
            dir.path().display()
        )),
        "{}",
        run.stderr
    );
    // A page that fills the reply exactly is taken whole.
    let nm = RawNm::start(|s| {
        let page = format!("/{}", "p".repeat(MAX_REPLY_BYTES - "ok page=/\n".len()));
        let _ = s.write_all(format!("ok page={page}\n").as_bytes());
    });
    let run = host(&built, "--keel-cosched", &[&nm.socket_arg()]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(
        run.set("KEEL_COSCHED_PAGE").map(str::len),
        Some(MAX_REPLY_BYTES - "ok page=\n".len())
    );
}

#[test]
fn bad_plugin_arguments_and_policies_are_refused() {
    let Some(built) = build("bad_plugin_arguments_and_policies_are_refused") else {
        return;
    };
    for (arg, why) in [
        ("sockets=/x", "unknown plugin argument sockets=/x"),
        ("socket=relative.sock", "absolute path"),
        ("socket=/run/%h.sock", "%-escapes"),
        ("socket=/run/x%", "%-escapes"),
        ("timeout_ms=0", "timeout_ms must be"),
        ("timeout_ms=10s", "timeout_ms must be"),
        ("timeout_ms=-5", "timeout_ms must be"),
        ("timeout_ms=99999999999999999999", "timeout_ms must be"),
        ("required=yes", "unknown plugin argument"),
    ] {
        let run = host(&built, "--keel-cosched", &[arg]);
        assert_eq!(run.code, Some(2), "{arg}: {}", run.stderr);
        assert!(run.stderr.contains(why), "{arg}: {}", run.stderr);
    }
    let long = format!("socket=/{}/%n", "d".repeat(200));
    let run = host(&built, "--keel-cosched", &[&long]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains("longer than 107 bytes"),
        "{}",
        run.stderr
    );
    for policy in ["FCS", "a b", "x/y", &"p".repeat(65)] {
        let run = host(&built, &format!("--keel-cosched={policy}"), &[]);
        assert_eq!(run.code, Some(3), "{policy}: {}", run.stderr);
        assert!(run.stderr.contains("not a policy name"), "{}", run.stderr);
    }
    // `%%` is a literal `%`.
    let dir = tempfile::tempdir().unwrap();
    let arg = format!("socket={}/100%%-%n", dir.path().display());
    let run = host(&built, "--keel-cosched", &[&arg]);
    assert!(
        run.stderr
            .contains(&format!("{}/100%-n7:", dir.path().display())),
        "{}",
        run.stderr
    );
}

/// One task's line: what it printed from its environment.
#[derive(Debug)]
struct TaskLine {
    page: String,
    job_env: String,
    rank: u32,
    job: u32,
    step: u32,
    node: String,
    pid: i32,
}

fn task_lines(stdout: &str) -> Vec<TaskLine> {
    stdout
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            assert_eq!(f.len(), 7, "{l}");
            TaskLine {
                page: f[0].into(),
                job_env: f[1].into(),
                rank: f[2].parse().unwrap(),
                job: f[3].parse().unwrap(),
                step: f[4].parse().unwrap(),
                node: f[5].into(),
                pid: f[6].parse().unwrap(),
            }
        })
        .collect()
}

/// The command each task runs: prints its page, job, rank, Slurm job and
/// step, node and its own pid (the shell is the exec'd task).
const PRINT: &str = "echo \"$KEEL_COSCHED_PAGE|$KEEL_COSCHED_JOB|$SLURM_PROCID|$SLURM_JOB_ID|$SLURM_STEP_ID|$SLURMD_NODENAME|$$\"";

#[test]
fn srun_tasks_register_with_their_nodes_managers() {
    let test = "srun_tasks_register_with_their_nodes_managers";
    let nodes = live_nodes();
    let plugstack = live_plugstack();
    let have = nodes.len() >= 2 && plugstack.is_some() && Path::new(SPANK_H).exists();
    if !common::can_run(test, "slurm", have) || !common::can_run_as_root(test) {
        return;
    }
    let args = plugstack.unwrap();
    let arg = |key: &str| {
        args.iter()
            .find_map(|a| a.strip_prefix(key)?.strip_prefix('='))
            .map(str::to_string)
    };
    let template = arg("socket").unwrap_or_else(|| register::DEFAULT_SOCKET.into());
    assert!(
        template.contains("%n"),
        "the plugstack's socket={template} must hold %n: every slurmd of this cluster runs on one host, and each node needs its own NM socket"
    );
    let required = arg("required").as_deref() != Some("0");
    install_live_plugin();

    let nodes = &nodes[..2];
    let pages = tempfile::tempdir().unwrap();
    let refuse = Arc::new(AtomicBool::new(false));
    type Seen = Arc<Mutex<Vec<(String, Registration, PeerCred)>>>;
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let _servers: Vec<register::RegisterServer> = nodes
        .iter()
        .map(|node| {
            let socket = template.replace("%n", node).replace("%%", "%");
            let (name, seen, refuse) = (node.clone(), Arc::clone(&seen), Arc::clone(&refuse));
            let dir = pages.path().to_path_buf();
            register::serve(
                Path::new(&socket),
                Box::new(move |reg, peer| {
                    seen.lock().unwrap().push((name.clone(), reg.clone(), peer));
                    if refuse.load(Ordering::SeqCst) {
                        return Reply::Refused {
                            reason: format!(
                                "keel test refuses job {}.{} rank {}",
                                reg.job, reg.step, reg.rank
                            ),
                        };
                    }
                    let page =
                        dir.join(format!("page-{name}-{}.{}.{}", reg.job, reg.step, reg.rank));
                    match std::fs::write(&page, b"") {
                        Ok(()) => Reply::Accepted { page },
                        Err(e) => Reply::Refused {
                            reason: format!("cannot make the page: {e}"),
                        },
                    }
                }),
            )
            .unwrap_or_else(|e| panic!("an NM for {node} at {socket}: {e}"))
        })
        .collect();
    let on = format!("{},{}", nodes[0], nodes[1]);
    let base = ["-N", "2", "-n", "2", "-w", &on, "--chdir=/tmp"];

    // Registered: each task was itself, on its node's NM, and sees its page.
    let mut a: Vec<&str> = base.to_vec();
    a.extend(["--keel-cosched=fcs", "sh", "-c", PRINT]);
    let out = srun(&a, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = task_lines(&stdout);
    let regs = std::mem::take(&mut *seen.lock().unwrap());
    assert_eq!(lines.len(), 2, "{stdout}");
    assert_eq!(regs.len(), 2, "{regs:?}");
    for t in &lines {
        let (node, reg, peer) = regs
            .iter()
            .find(|(_, r, _)| r.rank == t.rank)
            .unwrap_or_else(|| panic!("rank {} did not register: {regs:?}", t.rank));
        assert_eq!(*node, t.node, "registered with its own node's NM");
        assert_eq!(
            *reg,
            Registration {
                job: t.job,
                step: t.step,
                rank: t.rank,
                size: 2,
                local_rank: 0,
                local_size: 1,
                nodes: 2,
                pid: t.pid,
                uid: sys::getuid(),
                gid: sys::getgid(),
                policy: Some("fcs".into()),
            }
        );
        assert_eq!(peer.pid, t.pid, "the task's own process registered");
        let page = pages
            .path()
            .join(format!("page-{node}-{}.{}.{}", t.job, t.step, t.rank));
        assert_eq!(t.page, page.to_str().unwrap());
        assert!(page.exists());
        assert_eq!(t.job_env, format!("{}.{}", t.job, t.step));
    }
    assert_ne!(lines[0].node, lines[1].node);

    // Without the option: no registration, and no page inherited from
    // srun's environment.
    let mut a: Vec<&str> = base.to_vec();
    a.extend(["sh", "-c", PRINT]);
    let out = srun(&a, &[("KEEL_COSCHED_PAGE", "/stale/page")]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = task_lines(&stdout);
    assert_eq!(lines.len(), 2);
    assert!(
        lines
            .iter()
            .all(|t| t.page.is_empty() && t.job_env.is_empty()),
        "{stdout}"
    );
    assert!(seen.lock().unwrap().is_empty());

    // Refused: the step fails and says why (unless the plugstack says
    // required=0, when the tasks run unmanaged).
    refuse.store(true, Ordering::SeqCst);
    let mut a: Vec<&str> = base.to_vec();
    a.extend(["--keel-cosched=fcs", "sh", "-c", PRINT]);
    let out = srun(&a, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(seen.lock().unwrap().len(), 2);
    if required {
        assert!(!out.status.success(), "{stdout}{stderr}");
        assert!(stdout.trim().is_empty(), "no task ran: {stdout}");
        assert!(
            stderr.contains("keel test refuses job") && stderr.contains("refused task"),
            "{stderr}"
        );
    } else {
        assert!(out.status.success(), "{stderr}");
        assert!(task_lines(&stdout).iter().all(|t| t.page.is_empty()));
    }
}
