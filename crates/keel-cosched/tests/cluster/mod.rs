//! A cluster mode harness: a machine manager and node managers as
//! separate processes of the `keel-cosched` binary on loopback, and tasks
//! that register themselves (`keel-cosched task`) as the SPANK plugin
//! registers Slurm's.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use keel_cosched::sys::{self, Pid};

/// A workload with a checksum: `iterations` steps of an LCG in `sh`,
/// the result written to `out`.
pub fn lcg_script(iterations: u64, out: &Path) -> String {
    format!(
        "i=0; s=1; while [ $i -lt {iterations} ]; do s=$(( (s*31+i) % 1000003 )); i=$((i+1)); done; echo $s > {}",
        out.display()
    )
}

/// What [`lcg_script`] writes.
pub fn lcg_expected(iterations: u64) -> u64 {
    let mut s = 1u64;
    for i in 0..iterations {
        s = (s * 31 + i) % 1_000_003;
    }
    s
}

/// A free loopback port (released for the caller to bind).
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// Whether a socket listens on loopback `port` within `limit`, read from
/// `/proc/net/tcp` so that the check is not itself a connection.
pub fn listening_on(port: u16, limit: Duration) -> bool {
    const LISTEN: &str = "0A";
    let local = format!("0100007F:{port:04X}");
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
        let listening = table.lines().skip(1).any(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            fields.get(1) == Some(&local.as_str()) && fields.get(3) == Some(&LISTEN)
        });
        if listening {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

/// The daemons and tasks of one test, killed (after a `SIGCONT`) when
/// dropped.
pub struct Cluster {
    pub dir: tempfile::TempDir,
    pub key: PathBuf,
    pub port: u16,
    /// `--auth` of every daemon.
    pub auth: String,
    /// Where the registration sockets are (`nm-NODE.sock`).
    pub socket_dir: PathBuf,
    pub mm: Option<Child>,
    pub nms: Vec<(String, Child)>,
    pub tasks: Vec<Child>,
}

impl Cluster {
    /// A directory, a shared key and a port.
    pub fn new() -> Cluster {
        let dir = tempfile::tempdir().expect("tempdir");
        let key = dir.path().join("key");
        keel_cosched::cluster::auth::SharedKey::generate(&key).expect("key");
        Cluster {
            auth: format!("key:{}", key.display()),
            socket_dir: dir.path().to_path_buf(),
            dir,
            key,
            port: free_port(),
            mm: None,
            nms: Vec::new(),
            tasks: Vec::new(),
        }
    }

    fn auth(&self) -> String {
        self.auth.clone()
    }

    /// Starts the machine manager with `args` (policy, tick, ...).
    pub fn start_mm(&mut self, args: &[&str]) {
        let report = self.dir.path().join("mm.json");
        let child = Command::new(env!("CARGO_BIN_EXE_keel-cosched"))
            .args(["mm", "--listen", &format!("127.0.0.1:{}", self.port)])
            .args(["--auth", &self.auth(), "--report"])
            .arg(&report)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("mm starts");
        self.mm = Some(child);
        // Node managers retry until the port answers, but a test that
        // connects itself must not race the manager's bind.
        assert!(
            listening_on(self.port, Duration::from_secs(20)),
            "the machine manager is not listening on port {} after 20 s",
            self.port
        );
    }

    /// The registration socket of node `name`.
    pub fn socket(&self, name: &str) -> PathBuf {
        self.socket_dir.join(format!("nm-{name}.sock"))
    }

    /// The pages' directory.
    pub fn pages(&self) -> PathBuf {
        self.dir.path().join("pages")
    }

    /// Starts node manager `name` on `cpus`, with `extra` arguments.
    pub fn start_nm(&mut self, name: &str, cpus: &str, extra: &[&str]) {
        let pages = self.pages();
        let _ = std::fs::create_dir(&pages);
        let child = Command::new(env!("CARGO_BIN_EXE_keel-cosched"))
            .args(["nm", "--mm", &format!("127.0.0.1:{}", self.port)])
            .args(["--node", name, "--cpus", cpus, "--auth", &self.auth()])
            .arg("--socket")
            .arg(self.socket(name))
            .arg("--page-dir")
            .arg(&pages)
            .arg("-v")
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("nm starts");
        self.nms.push((name.to_string(), child));
    }

    /// Starts task `rank` of job `job` (size `size`) on node `node` running
    /// `sh -c script`, retrying while the node manager is not yet
    /// connected; the task's pid.
    pub fn start_task(&mut self, node: &str, job: u32, rank: u32, size: u32, script: &str) -> Pid {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let mut child = Command::new(env!("CARGO_BIN_EXE_keel-cosched"))
                .args([
                    "task",
                    "--job",
                    &job.to_string(),
                    "--rank",
                    &rank.to_string(),
                ])
                .args(["--size", &size.to_string(), "--socket"])
                .arg(self.socket(node))
                .args(["--", "sh", "-c", script])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("task starts");
            // Registered, it execs `sh` (same pid) or is stopped; refused, it
            // exits. Wait for one or the other rather than guess from the
            // time taken.
            let pid = child.id() as Pid;
            let t0 = Instant::now();
            let outcome = loop {
                if let Some(status) = child.try_wait().expect("try_wait") {
                    break Some(status);
                }
                let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
                // Stopped: only its node manager stops it, so it registered
                // (a step's tasks wait stopped until all have registered).
                if comm.trim() == "sh" || sys::proc_state(pid) == Some('T') {
                    break None;
                }
                assert!(
                    t0.elapsed() < Duration::from_secs(10),
                    "task {job}.{rank} on {node} neither registered nor exited in 10 s"
                );
                std::thread::sleep(Duration::from_millis(2));
            };
            match outcome {
                Some(status) if !status.success() => {
                    let mut err = String::new();
                    let _ = child.stderr.take().map(|mut e| e.read_to_string(&mut err));
                    assert!(
                        Instant::now() < deadline,
                        "task {job}.{rank} on {node} never registered: {err}"
                    );
                    std::thread::sleep(Duration::from_millis(100));
                }
                _ => {
                    self.tasks.push(child);
                    return pid;
                }
            }
        }
    }

    /// Waits for every task to exit, each successfully, within `timeout`.
    pub fn wait_tasks(&mut self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        for t in &mut self.tasks {
            loop {
                if let Some(status) = t.try_wait().expect("try_wait") {
                    let mut err = String::new();
                    let _ = t.stderr.take().map(|mut e| e.read_to_string(&mut err));
                    assert!(status.success(), "task {} failed: {status}: {err}", t.id());
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "task {} still ran after {timeout:?} (state {:?})",
                    t.id(),
                    sys::proc_state(t.id() as Pid)
                );
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }

    /// Stops the machine manager (SIGTERM) and returns its JSON report.
    pub fn stop_mm(&mut self) -> serde_json::Value {
        let mut mm = self.mm.take().expect("mm running");
        let _ = sys::kill(mm.id() as Pid, libc::SIGTERM);
        let status = wait_child(&mut mm, Duration::from_secs(10));
        let mut err = String::new();
        let _ = mm.stderr.take().map(|mut e| e.read_to_string(&mut err));
        assert!(status, "mm did not stop cleanly: {err}");
        let text = std::fs::read_to_string(self.dir.path().join("mm.json"))
            .unwrap_or_else(|e| panic!("no mm report ({e}); stderr: {err}"));
        serde_json::from_str(&text).expect("report is JSON")
    }

    /// Stops node manager `i` (SIGTERM) and returns its stderr.
    pub fn stop_nm(&mut self, i: usize) -> String {
        let nm = &mut self.nms[i].1;
        let _ = sys::kill(nm.id() as Pid, libc::SIGTERM);
        let ok = wait_child(nm, Duration::from_secs(10));
        let mut err = String::new();
        let _ = nm.stderr.take().map(|mut e| e.read_to_string(&mut err));
        assert!(ok, "nm {} did not stop cleanly: {err}", self.nms[i].0);
        err
    }

    /// Files left in the pages' directory (run directories included).
    pub fn leftover_pages(&self) -> Vec<PathBuf> {
        let mut left = Vec::new();
        let mut stack = vec![self.pages()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                if e.path().is_dir() {
                    stack.push(e.path());
                }
                left.push(e.path());
            }
        }
        left
    }
}

/// Waits for `child` to exit successfully within `timeout`.
pub fn wait_child(child: &mut Child, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return status.success();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for c in self
            .tasks
            .iter_mut()
            .chain(self.nms.iter_mut().map(|(_, c)| c))
            .chain(self.mm.iter_mut())
        {
            let _ = sys::kill(c.id() as Pid, libc::SIGCONT);
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The CPUs for two nodes: one each where there are two, else both on
/// the one there is.
pub fn two_cpus() -> (String, String) {
    let cpus = sys::allowed_cpus().expect("cpus");
    let a = cpus[0];
    let b = *cpus.get(1).unwrap_or(&a);
    (a.to_string(), b.to_string())
}

/// What sampling which processes are stopped found, for gang scheduling:
/// the members of a gang must be stopped together, and each sometimes.
#[derive(Debug)]
pub struct GangSamples<K> {
    /// Samples taken (those `sample` did not skip).
    pub samples: u32,
    /// Gangs, summed over the samples, whose members were not all stopped
    /// or all running.
    pub split: u32,
    /// Per member, the samples in which it was stopped.
    pub stopped: BTreeMap<K, u32>,
}

/// Samples every `every`, while `running` says so and for at most
/// `limit`: `sample` gives each member's gang, key and whether it is
/// stopped now, or `None` to skip a moment when not every member is
/// there to be seen.
pub fn sample_gangs<G: PartialEq, K: Ord>(
    limit: Duration,
    every: Duration,
    mut running: impl FnMut() -> bool,
    mut sample: impl FnMut() -> Option<Vec<(G, K, bool)>>,
) -> GangSamples<K> {
    let mut found = GangSamples {
        samples: 0,
        split: 0,
        stopped: BTreeMap::new(),
    };
    let t0 = Instant::now();
    while t0.elapsed() < limit && running() {
        if let Some(members) = sample() {
            found.samples += 1;
            for (i, (gang, _, stopped)) in members.iter().enumerate() {
                // Each gang is judged once, at its first member.
                if members[..i].iter().any(|(g, _, _)| g == gang) {
                    continue;
                }
                let split = members.iter().any(|(g, _, s)| g == gang && s != stopped);
                found.split += u32::from(split);
            }
            for (_, key, stopped) in members {
                *found.stopped.entry(key).or_default() += u32::from(stopped);
            }
        }
        std::thread::sleep(every);
    }
    found
}
