//! The FCS paper's verification scenarios (§3.2) on a Slurm cluster: real
//! MPICH BSP programs (`pmpi/bsp_mpi.c`, monitored by the PMPI wrapper)
//! launched by `srun` across two Slurm nodes, gang-scheduled by this
//! crate's cluster managers under each policy, and beside them under
//! Slurm's own gang scheduling on the same jobs.
//!
//! Each scenario keeps the single-machine runs' jobs ([`Scenario::jobs`]):
//! a 2-rank job is `srun -N 2 -n 2` (rank 0 on the first node, rank 1 on
//! the second), a 1-rank job pinned to PE 1 is `srun -w <second node>`.
//! The managers run in this process (threads, a fresh shared key per
//! run); the jobs register through the SPANK plugin, which this module
//! builds and installs where the cluster's plugstack loads it from.
//!
//! Slurm's gang scheduling is a controller setting (`PreemptMode=GANG`):
//! the `slurm-gang` rows switch the cluster to it with the script that
//! manages it (`scripts/slurm-local.sh mode gang`) and back afterwards.
//!
//! A row's cells are the jobs' termination times (s since the workload
//! was submitted) and the makespan, as in the single-machine tables:
//!
//! ```
//! use keel_cosched::cluster::bench::srun_shape;
//! assert_eq!(srun_shape(2, None, &["n1".into(), "n2".into()]), vec!["-N2", "-n2"]);
//! assert_eq!(srun_shape(1, Some(&[1]), &["n1".into(), "n2".into()]), vec!["-N1", "-n1", "-w", "n2"]);
//! ```

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::auth::{Authenticator, SharedKey};
use super::mm::{run_machine_manager, MmConfig};
use super::nm::{run_node_manager, NmConfig};
use super::report::{MmReport, SkewReport};
use super::wire::PeerPolicy;
use crate::job::JobSpec;
use crate::scenario::{policy_spec, Row, Scenario, ScenarioParams, Table};
use crate::sys;

/// The row name of Slurm's own gang scheduling.
pub const SLURM_GANG: &str = "slurm-gang";

const BSP_SOURCE: &str = include_str!("../../pmpi/bsp_mpi.c");
const PMPI_SOURCE: &str = include_str!("../../pmpi/keel_pmpi.c");
const SPANK_SOURCE: &str = include_str!("../../spank/keel_cosched_spank.c");

/// What to run.
#[derive(Clone, Debug)]
pub struct ClusterBench {
    /// The scenarios.
    pub scenarios: Vec<Scenario>,
    /// Policy names (`fcfs`, `local`, `gs`, `sb`, `fcs`) and
    /// [`SLURM_GANG`].
    pub policies: Vec<String>,
    /// Step size, supersteps, slice.
    pub params: ScenarioParams,
    /// Where the plugstack loads the SPANK plugin from.
    pub plugin: PathBuf,
    /// The registration sockets, `%n` standing for the node name.
    pub sockets: String,
    /// The script that switches Slurm's gang scheduling on and off.
    pub slurm_local: PathBuf,
    /// Slots of the idle switch-skew run (0: none).
    pub skew_slots: u64,
    /// Runs of each (scenario, scheduler); cells are medians.
    pub reps: usize,
}

/// One run's extras beside its table row.
#[derive(Clone, Debug, Serialize)]
pub struct ClusterRun {
    /// Scenario.
    pub scenario: String,
    /// Policy row.
    pub policy: String,
    /// Which repetition (from 1).
    pub rep: usize,
    /// The machine manager's report (Keel rows).
    pub manager: Option<MmReport>,
}

/// Everything measured.
#[derive(Clone, Debug, Serialize)]
pub struct ClusterReport {
    /// The scenarios' parameters.
    pub params: ScenarioParams,
    /// The two Slurm nodes.
    pub nodes: Vec<String>,
    /// One table per scenario.
    pub tables: Vec<Table>,
    /// Each Keel run's manager report.
    pub runs: Vec<ClusterRun>,
    /// The idle switch-skew run.
    pub skew: Option<SkewReport>,
}

/// Why the benchmark could not run.
#[derive(Debug, thiserror::Error)]
#[error("cosched cluster: {0}")]
pub struct BenchError(pub String);

fn err(text: impl Into<String>) -> BenchError {
    BenchError(text.into())
}

/// `srun`'s placement arguments for a job of `ranks` ranks, pinned to
/// `pes` (PE i = node i, one PE per node) or spread one rank per node.
pub fn srun_shape(ranks: usize, pes: Option<&[usize]>, nodes: &[String]) -> Vec<String> {
    let mut a = vec![
        format!("-N{}", ranks.min(nodes.len()).max(1)),
        format!("-n{ranks}"),
    ];
    if let Some(pes) = pes {
        let names: Vec<&str> = pes
            .iter()
            .filter_map(|&p| nodes.get(p).map(String::as_str))
            .collect();
        a[0] = format!("-N{}", names.len().max(1));
        a.push("-w".into());
        a.push(names.join(","));
    }
    a
}

/// The programs built for the runs.
struct Built {
    dir: tempfile::TempDir,
}

impl Built {
    fn bsp(&self) -> PathBuf {
        self.dir.path().join("bsp_mpi")
    }
    fn pmpi(&self) -> PathBuf {
        self.dir.path().join("libkeel_pmpi.so")
    }
}

fn run_tool(cmd: &mut Command, what: &str) -> Result<(), BenchError> {
    let out = cmd
        .output()
        .map_err(|e| err(format!("cannot run {what}: {e}")))?;
    if !out.status.success() {
        return Err(err(format!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// Builds the BSP program, the PMPI wrapper and the SPANK plugin (the
/// plugin into `plugin`, atomically).
fn build(plugin: &Path) -> Result<Built, BenchError> {
    let dir = tempfile::Builder::new()
        .prefix("keel-cosched-cluster-")
        .tempdir()
        .map_err(|e| err(format!("temporary directory: {e}")))?;
    let write = |name: &str, text: &str| {
        std::fs::write(dir.path().join(name), text).map_err(|e| err(format!("{name}: {e}")))
    };
    write("bsp_mpi.c", BSP_SOURCE)?;
    write("keel_pmpi.c", PMPI_SOURCE)?;
    write("keel_cosched_spank.c", SPANK_SOURCE)?;
    let d = dir.path();
    run_tool(
        Command::new("mpicc")
            .args(["-O2", "-o"])
            .arg(d.join("bsp_mpi"))
            .arg(d.join("bsp_mpi.c")),
        "mpicc (MPICH: scripts/install-mpich.sh)",
    )?;
    run_tool(
        Command::new("mpicc")
            .args(["-O2", "-fPIC", "-shared", "-o"])
            .arg(d.join("libkeel_pmpi.so"))
            .arg(d.join("keel_pmpi.c"))
            .arg("-lpthread"),
        "mpicc of the PMPI wrapper",
    )?;
    let fresh = plugin.with_extension("so.new");
    run_tool(
        Command::new("gcc")
            .args(["-O2", "-fPIC", "-shared", "-I/usr/include/slurm", "-o"])
            .arg(&fresh)
            .arg(d.join("keel_cosched_spank.c")),
        "gcc of the SPANK plugin (needs libslurm-dev)",
    )?;
    std::fs::rename(&fresh, plugin)
        .map_err(|e| err(format!("cannot install {}: {e}", plugin.display())))?;
    Ok(Built { dir })
}

/// The first two nodes `sinfo` lists.
fn slurm_nodes() -> Result<Vec<String>, BenchError> {
    let out = Command::new("sinfo")
        .args(["-h", "-N", "-o", "%N"])
        .output()
        .map_err(|e| err(format!("cannot run sinfo (is SLURM_CONF set?): {e}")))?;
    let mut nodes: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    nodes.sort();
    nodes.dedup();
    if nodes.len() < 2 {
        return Err(err(format!(
            "the cluster needs two nodes; sinfo lists {nodes:?}"
        )));
    }
    nodes.truncate(2);
    Ok(nodes)
}

/// The BSP arguments of a scenario job: iterations, granularity (µs),
/// scales.
fn bsp_args(job: &JobSpec) -> Vec<String> {
    let flag = |name: &str| {
        job.command
            .iter()
            .position(|a| a == name)
            .and_then(|i| job.command.get(i + 1))
            .cloned()
    };
    let ms: f64 = flag("--granularity-ms")
        .and_then(|g| g.parse().ok())
        .unwrap_or(0.0);
    let mut a = vec![
        flag("--iterations").unwrap_or_else(|| "1".into()),
        format!("{}", (ms * 1e3).round()),
    ];
    if let Some(scale) = flag("--scale") {
        a.push(scale);
    }
    a
}

/// The in-process managers of one Keel run.
struct Managers {
    stop_mm: Arc<AtomicBool>,
    stop_nm: Arc<AtomicBool>,
    mm: std::thread::JoinHandle<Result<MmReport, String>>,
    nms: Vec<std::thread::JoinHandle<Result<(), String>>>,
}

impl Managers {
    fn start(
        bench: &ClusterBench,
        nodes: &[String],
        policy: &str,
        work: &Path,
        run: usize,
    ) -> Result<Managers, BenchError> {
        let key = work.join(format!("key-{run}"));
        let auth: Arc<dyn Authenticator> =
            Arc::new(SharedKey::generate(&key).map_err(|e| err(e.to_string()))?);
        let peer = PeerPolicy { uid: None };
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .map_err(|e| err(format!("cannot listen on loopback: {e}")))?;
        let addr = listener
            .local_addr()
            .map_err(|e| err(e.to_string()))?
            .to_string();
        let slot = Duration::from_secs_f64(bench.params.time_slice);
        let cfg = MmConfig {
            policy: policy.to_string(),
            tick: slot,
            lead: (slot / 5).min(Duration::from_millis(5)),
            slots: None,
            verbose: false,
        };
        let (stop_mm, stop_nm) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let (a, s) = (Arc::clone(&auth), Arc::clone(&stop_mm));
        let mm = std::thread::spawn(move || {
            run_machine_manager(&cfg, listener, a, peer, s).map_err(|e| e.to_string())
        });
        let cpus = sys::allowed_cpus().map_err(|e| err(e.to_string()))?;
        let pages = work.join("pages");
        std::fs::create_dir_all(&pages).map_err(|e| err(e.to_string()))?;
        let mut nms = Vec::new();
        for (i, node) in nodes.iter().enumerate() {
            let socket = PathBuf::from(bench.sockets.replace("%n", node));
            let _ = std::fs::remove_file(&socket);
            let cfg = NmConfig {
                node: node.clone(),
                mm: addr.clone(),
                cpus: vec![*cpus.get(i).unwrap_or(&cpus[0])],
                socket,
                run_parent: pages.clone(),
                boost_nice: crate::machine::DEFAULT_BOOST_NICE,
                realtime: true,
                clock_offset_ns: 0,
                verbose: false,
            };
            let (a, s) = (Arc::clone(&auth), Arc::clone(&stop_nm));
            nms.push(std::thread::spawn(move || {
                run_node_manager(cfg, a, peer, s).map_err(|e| e.to_string())
            }));
        }
        let sockets: Vec<PathBuf> = nodes
            .iter()
            .map(|n| PathBuf::from(bench.sockets.replace("%n", n)))
            .collect();
        let t0 = Instant::now();
        while !sockets.iter().all(|s| s.exists()) {
            if t0.elapsed() > Duration::from_secs(10) {
                return Err(err("the node managers' sockets did not appear within 10 s"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // Registrations are refused until each node manager has heard the
        // machine manager's policy.
        std::thread::sleep(Duration::from_millis(500));
        Ok(Managers {
            stop_mm,
            stop_nm,
            mm,
            nms,
        })
    }

    /// Stops the machine manager first, so that its report does not list
    /// the node managers' stopping as nodes going down.
    fn stop(self) -> Result<MmReport, BenchError> {
        self.stop_mm.store(true, Ordering::Release);
        let report = self
            .mm
            .join()
            .map_err(|_| err("the machine manager panicked"))?
            .map_err(err);
        self.stop_nm.store(true, Ordering::Release);
        for n in self.nms {
            n.join()
                .map_err(|_| err("a node manager panicked"))?
                .map_err(err)?;
        }
        report
    }
}

/// What [`run_jobs`] saw.
struct JobsRun {
    /// Each job's termination time, s (`None`: it failed).
    ends: Vec<Option<f64>>,
    /// Each job's Slurm job id, as it printed it.
    ids: Vec<Option<u32>>,
    /// What went wrong.
    notes: Vec<String>,
}

/// Runs the jobs with `srun` (`keel`: under Keel with `policy`), waits for
/// them; each job's termination time and whether every job succeeded.
fn run_jobs(
    jobs: &[JobSpec],
    nodes: &[String],
    built: &Built,
    keel: Option<&str>,
    limit: Duration,
) -> Result<JobsRun, BenchError> {
    let t0 = Instant::now();
    let mut children: Vec<Child> = Vec::new();
    for (i, job) in jobs.iter().enumerate() {
        let mut cmd = Command::new("srun");
        cmd.args(["--mpi=pmi2", "-J", &format!("keel-{}", job.name)])
            .args(srun_shape(job.ranks, job.pes.as_deref(), nodes));
        if let Some(policy) = keel {
            cmd.arg(format!("--keel-cosched={policy}")).arg(format!(
                "--export=ALL,LD_PRELOAD={}",
                built.pmpi().display()
            ));
        }
        cmd.arg(built.bsp())
            .args(bsp_args(job))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = cmd
            .spawn()
            .map_err(|e| err(format!("cannot run srun for job {i}: {e}")))?;
        children.push(child);
    }
    let mut ends = vec![None; jobs.len()];
    let mut ids = vec![None; jobs.len()];
    let mut notes = Vec::new();
    let mut open: Vec<usize> = (0..jobs.len()).collect();
    while !open.is_empty() {
        if t0.elapsed() > limit {
            for &i in &open {
                let _ = children[i].kill();
                notes.push(format!(
                    "{}: still ran after {limit:?}; killed",
                    jobs[i].name
                ));
            }
            break;
        }
        open.retain(|&i| match children[i].try_wait() {
            Ok(Some(status)) => {
                let at = t0.elapsed().as_secs_f64();
                let mut out = String::new();
                if let Some(mut o) = children[i].stdout.take() {
                    let _ = std::io::Read::read_to_string(&mut o, &mut out);
                }
                if status.success() && out.contains("bsp_mpi ok") {
                    ends[i] = Some(at);
                    ids[i] = out
                        .split_whitespace()
                        .find_map(|w| w.strip_prefix("job=")?.parse().ok());
                } else {
                    let mut e = String::new();
                    if let Some(mut s) = children[i].stderr.take() {
                        let _ = std::io::Read::read_to_string(&mut s, &mut e);
                    }
                    notes.push(format!("{}: {status}: {}", jobs[i].name, e.trim()));
                }
                false
            }
            Ok(None) => true,
            Err(_) => false,
        });
        std::thread::sleep(Duration::from_millis(5));
    }
    for c in &mut children {
        let _ = c.wait();
    }
    Ok(JobsRun { ends, ids, notes })
}

/// Switches Slurm's gang scheduling on for its rows and off after them.
struct GangMode<'a> {
    script: &'a Path,
    on: bool,
}

impl GangMode<'_> {
    fn set(&mut self, on: bool) -> Result<(), BenchError> {
        if self.on == on {
            return Ok(());
        }
        run_tool(
            Command::new("bash")
                .arg(self.script)
                .args(["mode", if on { "gang" } else { "keel" }]),
            "slurm-local.sh mode",
        )?;
        self.on = on;
        Ok(())
    }
}

impl Drop for GangMode<'_> {
    fn drop(&mut self) {
        let _ = self.set(false);
    }
}

/// One run of a scenario under one scheduler.
#[derive(Clone)]
struct OneRun {
    ends: Vec<Option<f64>>,
    classes: Vec<Vec<String>>,
    notes: Vec<String>,
    manager: Option<MmReport>,
}

#[allow(clippy::too_many_arguments)]
fn run_one(
    bench: &ClusterBench,
    jobs: &[JobSpec],
    name: &str,
    nodes: &[String],
    built: &Built,
    gang: &mut GangMode<'_>,
    run_no: usize,
    limit: Duration,
) -> Result<OneRun, BenchError> {
    let (done, manager) = if name == SLURM_GANG {
        gang.set(true)?;
        (run_jobs(jobs, nodes, built, None, limit)?, None)
    } else {
        gang.set(false)?;
        let spec = policy_spec(name, bench.params.time_slice);
        let managers = Managers::start(bench, nodes, &spec, built.dir.path(), run_no)?;
        let outcome = run_jobs(jobs, nodes, built, Some(name), limit);
        let report = managers.stop()?;
        (outcome?, Some(report))
    };
    let JobsRun {
        ends,
        ids,
        mut notes,
    } = done;
    // Each scenario job's classes, found by its Slurm job id.
    let classes = manager
        .as_ref()
        .map(|m| {
            ids.iter()
                .map(|id| {
                    m.steps
                        .iter()
                        .find(|s| Some(s.job) == *id)
                        .map(|s| s.classes.clone())
                        .unwrap_or_default()
                })
                .collect()
        })
        .unwrap_or_default();
    if let Some(m) = &manager {
        notes.extend(m.notices.iter().cloned());
    }
    Ok(OneRun {
        ends,
        classes,
        notes,
        manager,
    })
}

/// A table row from a scheduler's runs: medians over the runs, a job (or
/// the makespan) failed if it failed in any run.
fn row(name: &str, runs: &[OneRun], jobs: usize) -> Row {
    let median = |v: Vec<f64>| keel_policy::stats::median_of(&v);
    let per_job = (0..jobs)
        .map(|j| {
            let ends: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.ends.get(j).copied().flatten())
                .collect();
            (ends.len() == runs.len()).then(|| median(ends)).flatten()
        })
        .collect();
    let maxes: Vec<f64> = runs
        .iter()
        .filter(|r| r.ends.iter().all(Option::is_some))
        .map(|r| r.ends.iter().flatten().copied().fold(0.0, f64::max))
        .collect();
    let max = (maxes.len() == runs.len()).then(|| median(maxes)).flatten();
    let mut notes: Vec<String> = Vec::new();
    for n in runs.iter().flat_map(|r| r.notes.iter()) {
        if !notes.contains(n) {
            notes.push(n.clone());
        }
    }
    Row {
        policy: name.to_string(),
        jobs: per_job,
        max,
        classes: runs.last().map(|r| r.classes.clone()).unwrap_or_default(),
        notes,
        runs: Vec::new(),
    }
}

/// Runs the benchmark; `progress` hears each run as it starts.
pub fn run_cluster_bench(
    bench: &ClusterBench,
    progress: &mut dyn FnMut(&str),
) -> Result<ClusterReport, BenchError> {
    if sys::geteuid() != 0 {
        return Err(err(
            "needs root: the node managers stop other users' tasks and the plugin is installed for slurmd",
        ));
    }
    for p in &bench.policies {
        if p != SLURM_GANG && !crate::scenario::POLICIES.contains(&p.as_str()) {
            return Err(err(format!(
                "unknown scheduler `{p}`; valid: {}, {SLURM_GANG}",
                crate::scenario::POLICIES.join(", ")
            )));
        }
    }
    let nodes = slurm_nodes()?;
    let built = build(&bench.plugin)?;
    let work = built.dir.path().to_path_buf();
    let mut gang = GangMode {
        script: &bench.slurm_local,
        on: false,
    };
    let alone = bench.params.iterations as f64 * bench.params.granularity_ms * 1e-3;
    let limit = Duration::from_secs_f64(60.0 + 40.0 * alone);
    let mut tables = Vec::new();
    let mut runs = Vec::new();
    let mut run_no = 0;
    for &scenario in &bench.scenarios {
        let jobs = scenario.jobs(&bench.params);
        let mut done: Vec<Vec<OneRun>> = vec![Vec::new(); bench.policies.len()];
        // Repetitions go round the schedulers, so that a slow spell of the
        // machine is spread over them rather than falling on one.
        for rep in 0..bench.reps.max(1) {
            for (p, name) in bench.policies.iter().enumerate() {
                progress(&format!("{} / {name} / run {}", scenario.name(), rep + 1));
                run_no += 1;
                let one = run_one(bench, &jobs, name, &nodes, &built, &mut gang, run_no, limit)?;
                runs.push(ClusterRun {
                    scenario: scenario.name().into(),
                    policy: name.clone(),
                    rep: rep + 1,
                    manager: one.manager.clone(),
                });
                done[p].push(one);
            }
        }
        let rows = bench
            .policies
            .iter()
            .zip(done)
            .map(|(name, runs)| row(name, &runs, jobs.len()))
            .collect();
        tables.push(Table {
            scenario,
            title: format!("{} (Slurm, 2 nodes)", scenario.title()),
            job_names: jobs.iter().map(|j| j.name.clone()).collect(),
            rows,
        });
    }
    gang.set(false)?;
    let skew = if bench.skew_slots > 0 {
        progress(&format!("switch skew: {} slots", bench.skew_slots));
        skew_run(bench, &nodes, &work)?
    } else {
        None
    };
    Ok(ClusterReport {
        params: bench.params.clone(),
        nodes,
        tables,
        runs,
        skew,
    })
}

/// The machine manager alone with the node managers for
/// `bench.skew_slots` slots of the scenarios' slice, under `local` (every
/// slot a switch, nothing suspended).
fn skew_run(
    bench: &ClusterBench,
    nodes: &[String],
    work: &Path,
) -> Result<Option<SkewReport>, BenchError> {
    let managers = Managers::start(bench, nodes, "local", work, 0)?;
    let slot = Duration::from_secs_f64(bench.params.time_slice);
    std::thread::sleep(slot * bench.skew_slots as u32 + Duration::from_millis(200));
    Ok(managers.stop()?.skew)
}
