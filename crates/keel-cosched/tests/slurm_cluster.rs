//! Keel's cluster mode on the real Slurm cluster of
//! `scripts/slurm-local.sh`: a machine manager and one node manager per
//! slurmd (MUNGE authentication), MPICH ring programs launched by
//! `srun --mpi=pmi2 --keel-cosched` across the two nodes and wired by
//! Slurm's PMI.
//!
//! Needs root (the node managers stop root's tasks; the plugin is
//! installed under /run/keel-slurm), the cluster (`SLURM_CONF`,
//! `KEEL_SLURM_PLUGSTACK`), munged, Slurm's spank.h and MPICH's mpicc;
//! without them each test prints `SKIPPED:` unless `KEEL_TESTS_REQUIRE`
//! names `slurm` (CI brings the cluster up), in which case it fails.

mod cluster;
mod common;
mod slurm;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cluster::{sample_gangs, Cluster, GangSamples};
use keel_cosched::sys::{self, Pid};

/// Whether everything the tests need is here; says why not.
fn ready(test: &str) -> bool {
    let root = sys::geteuid() == 0;
    let plugstack = slurm::live_plugstack().is_some();
    // A previous test's jobs may still be completing.
    let nodes = std::env::var_os("SLURM_CONF").is_some()
        && common::wait_until(Duration::from_secs(30), || slurm::live_nodes().len() >= 2);
    let mpicc = Command::new("mpicc")
        .arg("-show")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let spank = Path::new("/usr/include/slurm/spank.h").exists();
    let munge = keel_cosched::cluster::auth::Munge::new(None).is_ok();
    common::can_run(
        test,
        "slurm",
        root && plugstack && nodes && mpicc && spank && munge,
    )
}

/// The MPICH ring (`pmpi/tests/ring.c`), built once.
fn ring() -> PathBuf {
    static RING: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    RING.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("slurm-cluster-ring");
        std::fs::create_dir_all(&dir).unwrap();
        let out = Command::new("make")
            .arg("-C")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("pmpi"))
            .arg(format!("BUILD={}", dir.display()))
            .output()
            .expect("make runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        dir.join("ring")
    })
    .clone()
}

/// The live cluster has one registration socket per node: one test at a
/// time drives it.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A machine manager and node managers n1, n2 on the live cluster's
/// registration sockets, MUNGE-authenticated.
fn start(policy: &str) -> Cluster {
    slurm::install_live_plugin();
    let mut c = Cluster::new();
    c.auth = "munge".into();
    c.socket_dir = PathBuf::from("/run/keel-slurm");
    let (a, b) = cluster::two_cpus();
    c.start_mm(&["--policy", policy]);
    c.start_nm("n1", &a, &[]);
    c.start_nm("n2", &b, &[]);
    // Registration is refused until a node manager has its policy.
    let connected = |n: &str| c.socket(n).exists();
    assert!(
        common::wait_until(Duration::from_secs(10), || connected("n1")
            && connected("n2")),
        "the node managers' sockets did not appear"
    );
    std::thread::sleep(Duration::from_millis(500));
    c
}

/// `srun` of a 2-task ring across the two nodes, managed by Keel.
fn srun_ring(name: &str, policy: &str, iterations: u32, compute_us: u32) -> Child {
    Command::new("srun")
        .args([
            "--mpi=pmi2",
            "-N2",
            "-n2",
            "-J",
            name,
            &format!("--keel-cosched={policy}"),
        ])
        .arg(ring())
        .args([iterations.to_string(), compute_us.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("srun starts")
}

/// The ring processes running now: (pid, Slurm job id, rank).
fn rings() -> Vec<(Pid, u32, u32)> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<Pid>() else {
            continue;
        };
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim() != "ring" {
            continue;
        }
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        let var = |name: &str| {
            env.split(|&b| b == 0)
                .filter_map(|kv| std::str::from_utf8(kv).ok())
                .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
        };
        if let (Some(job), Some(rank)) = (var("SLURM_JOB_ID"), var("SLURM_PROCID")) {
            found.push((pid, job, rank));
        }
    }
    found
}

/// The id of the running job called `name`.
fn job_id(name: &str) -> Option<u32> {
    let out = Command::new("squeue")
        .args(["-h", "-n", name, "-o", "%i"])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

fn wait_srun(child: &mut Child, timeout: Duration) -> (bool, String) {
    let ok = cluster::wait_child(child, timeout);
    if !ok {
        let _ = child.kill();
    }
    let out = child.wait_with_output_ref();
    (ok, out)
}

trait OutputRef {
    fn wait_with_output_ref(&mut self) -> String;
}

impl OutputRef for Child {
    /// What the child wrote (stdout then stderr), once it has ended.
    fn wait_with_output_ref(&mut self) -> String {
        use std::io::Read;
        let _ = self.wait();
        let mut text = String::new();
        if let Some(mut o) = self.stdout.take() {
            let _ = o.read_to_string(&mut text);
        }
        if let Some(mut e) = self.stderr.take() {
            let _ = e.read_to_string(&mut text);
        }
        text
    }
}

#[test]
fn two_srun_steps_are_gang_scheduled_across_slurm_nodes() {
    if !ready("two_srun_steps_are_gang_scheduled_across_slurm_nodes") {
        return;
    }
    let _serial = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut c = start("gs:t-slice=0.05");
    let mut a = srun_ring("keel-a", "gs", 300, 3_000);
    let mut b = srun_ring("keel-b", "gs", 300, 3_000);
    // The two ranks of a job must be stopped together.
    let GangSamples {
        samples,
        split,
        stopped,
    } = sample_gangs(
        Duration::from_secs(90),
        Duration::from_millis(4),
        || a.try_wait().ok().flatten().is_none() || b.try_wait().ok().flatten().is_none(),
        || {
            let now = rings();
            (now.len() == 4).then(|| {
                now.iter()
                    .map(|&(pid, job, rank)| (job, (job, rank), sys::proc_state(pid) == Some('T')))
                    .collect()
            })
        },
    );
    let (ok_a, out_a) = wait_srun(&mut a, Duration::from_secs(30));
    let (ok_b, out_b) = wait_srun(&mut b, Duration::from_secs(30));
    assert!(ok_a && ok_b, "a ring failed:\n{out_a}\n{out_b}");
    assert!(
        samples >= 20,
        "only {samples} samples with both rings' four ranks"
    );
    assert_eq!(stopped.len(), 4, "{stopped:?}");
    assert!(
        stopped.values().all(|&n| n > 0),
        "a rank was never stopped: {stopped:?} of {samples}"
    );
    assert!(
        f64::from(split) <= 0.2 * f64::from(2 * samples),
        "{split} split gang samples of {}",
        2 * samples
    );
    let report = c.stop_mm();
    let steps = report["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 2, "{report}");
    assert!(
        steps
            .iter()
            .all(|s| s["ended_s"].is_number() && s["size"] == 2),
        "{report}"
    );
    c.stop_nm(0);
    c.stop_nm(1);
    assert!(c.leftover_pages().is_empty(), "{:?}", c.leftover_pages());
}

#[test]
fn scancel_of_a_suspended_step_ends_it_and_the_other_step_completes() {
    if !ready("scancel_of_a_suspended_step_ends_it_and_the_other_step_completes") {
        return;
    }
    let _serial = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut c = start("gs:t-slice=0.05");
    let mut long = srun_ring("keel-long", "gs", 1_000_000, 3_000);
    let mut short = srun_ring("keel-short", "gs", 400, 3_000);
    // The long job's id, once one of its ranks is seen stopped.
    let mut victim = None;
    let t0 = Instant::now();
    while victim.is_none() && t0.elapsed() < Duration::from_secs(30) {
        let long_job = job_id("keel-long");
        victim = rings()
            .iter()
            .find(|r| Some(r.1) == long_job && sys::proc_state(r.0) == Some('T'))
            .map(|r| r.1);
        std::thread::sleep(Duration::from_millis(3));
    }
    let victim = victim.expect("no rank of the first job was seen stopped");
    let status = Command::new("scancel")
        .arg(victim.to_string())
        .status()
        .expect("scancel");
    assert!(status.success());
    let (ok_long, _) = wait_srun(&mut long, Duration::from_secs(20));
    assert!(!ok_long, "a cancelled ring cannot succeed");
    assert!(
        common::wait_until(Duration::from_secs(10), || rings()
            .iter()
            .all(|r| r.1 != victim)),
        "the cancelled job's ranks still run: {:?}",
        rings()
    );
    let (ok_short, out) = wait_srun(&mut short, Duration::from_secs(60));
    assert!(ok_short, "the other ring failed:\n{out}");
    let report = c.stop_mm();
    assert_eq!(
        report["steps"].as_array().map(Vec::len),
        Some(2),
        "{report}"
    );
    c.stop_nm(0);
    c.stop_nm(1);
    assert!(c.leftover_pages().is_empty(), "{:?}", c.leftover_pages());
}
