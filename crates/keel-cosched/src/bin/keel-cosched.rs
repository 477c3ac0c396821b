//! `keel-cosched`: run a job file under a cosched policy (the machine and
//! node managers in one process), or talk to a running one's control
//! socket.
//!
//! ```text
//! keel-cosched run --policy fcs jobs.txt
//! keel-cosched run --policy gs --control /run/keel-cosched.sock --serve
//! keel-cosched ctl /run/keel-cosched.sock submit 'a 2 -- @bsp --iterations 100'
//! keel-cosched mm --listen 0.0.0.0:6840 --policy fcs
//! keel-cosched nm --mm head:6840 --node n1
//! ```
//!
//! `mm` and `nm` are the cluster mode's daemons (`keel_cosched::cluster`):
//! Slurm launches the tasks, `srun --keel-cosched` registers them.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::{Parser, Subcommand};
use keel_cosched::cluster::auth::{Authenticator, Munge, SharedKey};
use keel_cosched::cluster::mm::{run_machine_manager, MmConfig};
use keel_cosched::cluster::nm::{run_node_manager, NmConfig};
use keel_cosched::cluster::wire::PeerPolicy;
use keel_cosched::machine::{Config, Machine, ManagerExit};
use keel_cosched::{control, read_jobs, SuspendChoice};

/// The user-space gang scheduler of Keel (FCS, GS, SB, Local, FCFS).
#[derive(Debug, Parser)]
#[command(name = "keel-cosched", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Run the jobs of a job file (and any submitted on the control socket).
    Run(RunArgs),
    /// The cluster's machine manager: node managers connect to it.
    Mm(MmArgs),
    /// A node's manager: connects to the machine manager and enacts its
    /// heartbeats on the Slurm tasks registered on this node.
    Nm(NmArgs),
    /// Register this process with a node manager as one task of a step,
    /// then run COMMAND in its place (same pid): what the SPANK plugin does
    /// for a Slurm task, for launchers other than Slurm and for tests.
    Task(TaskArgs),
    /// Send one request to a daemon's control socket and print the reply.
    Ctl {
        /// The daemon's socket.
        socket: PathBuf,
        /// The request: list | status ID | kill ID | submit JOB-LINE | shutdown.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        request: Vec<String>,
    },
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// The job file (see the crate README for its format).
    jobs: Option<PathBuf>,
    /// Cosched policy spec: fcfs, gs, local, sb, fcs (with parameters).
    #[arg(long, default_value = "fcs")]
    policy: String,
    /// Number of nodes (default: one per CPU).
    #[arg(long)]
    nodes: Option<usize>,
    /// PEs per node.
    #[arg(long, default_value_t = 1)]
    pes_per_node: usize,
    /// Suspend method: auto, freezer, signals.
    #[arg(long, default_value = "auto")]
    suspend: SuspendChoice,
    /// Heartbeat period of FCFS, Local and SB, ms.
    #[arg(long, default_value_t = 25.0)]
    tick_ms: f64,
    /// Nice value given to F processes.
    #[arg(long, default_value_t = keel_cosched::machine::DEFAULT_BOOST_NICE, allow_hyphen_values = true)]
    boost_nice: i32,
    /// Control socket path.
    #[arg(long)]
    control: Option<PathBuf>,
    /// Keep running after the last job, until `shutdown`.
    #[arg(long)]
    serve: bool,
    /// Program for `@bsp` (default: keel-bsp-job beside this binary).
    #[arg(long)]
    bsp: Option<PathBuf>,
    /// Do not give job processes PR_SET_PDEATHSIG (the guardians still
    /// clean up after a dead manager). Only matters with
    /// `--on-manager-exit kill`.
    #[arg(long)]
    no_pdeathsig: bool,
    /// What happens to the jobs if this manager dies: `resume` (thaw them
    /// and leave them running) or `kill`.
    #[arg(long, default_value = "resume", value_name = "resume|kill")]
    on_manager_exit: ManagerExit,
    /// Do not try SCHED_FIFO for the manager threads.
    #[arg(long)]
    no_realtime: bool,
    /// Stop every job after this many seconds.
    #[arg(long)]
    time_limit: Option<f64>,
    /// One line per event on stderr.
    #[arg(short, long)]
    verbose: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// How the cluster daemons authenticate messages.
#[derive(Debug, clap::Args)]
struct AuthArgs {
    /// `munge` (munged's credentials, as Slurm uses) or `key:PATH` (HMAC
    /// with a key file of mode 0600 shared by every daemon).
    #[arg(long, default_value = "munge")]
    auth: String,
    /// munged's socket (default: libmunge's).
    #[arg(long)]
    munge_socket: Option<PathBuf>,
    /// The uid the peer's MUNGE credential must carry (default: ours).
    #[arg(long)]
    peer_uid: Option<u32>,
}

impl AuthArgs {
    fn build(&self) -> Result<(Arc<dyn Authenticator>, PeerPolicy), String> {
        let auth: Arc<dyn Authenticator> = match self.auth.as_str() {
            "munge" => {
                Arc::new(Munge::new(self.munge_socket.as_deref()).map_err(|e| e.to_string())?)
            }
            other => match other.strip_prefix("key:") {
                Some(path) => {
                    Arc::new(SharedKey::from_file(path.as_ref()).map_err(|e| e.to_string())?)
                }
                None => return Err(format!("--auth {other}: expected munge or key:PATH")),
            },
        };
        let uid = Some(self.peer_uid.unwrap_or_else(keel_cosched::sys::geteuid));
        Ok((auth, PeerPolicy { uid }))
    }
}

#[derive(Debug, clap::Args)]
struct MmArgs {
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0:6840")]
    listen: String,
    /// Cosched policy spec: gs, fcs, sb, local, fcfs (with parameters).
    #[arg(long, default_value = "fcs")]
    policy: String,
    /// Slot length of policies without a time slice of their own, ms.
    #[arg(long, default_value_t = 25.0)]
    tick_ms: f64,
    /// How long before its switch a heartbeat leaves, ms.
    #[arg(long, default_value_t = 5.0)]
    lead_ms: f64,
    /// Stop after this many slots.
    #[arg(long)]
    slots: Option<u64>,
    /// Write the report (steps, switch skew) as JSON here at exit.
    #[arg(long)]
    report: Option<PathBuf>,
    #[command(flatten)]
    auth: AuthArgs,
    /// Log events on stderr.
    #[arg(long, short)]
    verbose: bool,
}

#[derive(Debug, clap::Args)]
struct NmArgs {
    /// The machine manager, host:port.
    #[arg(long)]
    mm: String,
    /// This node's name (default: $SLURMD_NODENAME, else the host name).
    #[arg(long)]
    node: Option<String>,
    /// The CPUs this node schedules, one PE each (default: every CPU
    /// allowed to this process), e.g. `0,1` or `0-3`.
    #[arg(long)]
    cpus: Option<String>,
    /// The registration socket the SPANK plugin connects to.
    #[arg(long, default_value = keel_cosched::cluster::register::DEFAULT_SOCKET)]
    socket: PathBuf,
    /// Where the tasks' monitoring pages go.
    #[arg(long, default_value = "/dev/shm")]
    page_dir: PathBuf,
    /// Nice value given to F tasks.
    #[arg(long, default_value_t = keel_cosched::machine::DEFAULT_BOOST_NICE, allow_hyphen_values = true)]
    boost_nice: i32,
    /// Do not try SCHED_FIFO for the enacting thread.
    #[arg(long)]
    no_realtime: bool,
    /// Pretend this node's clock is this far ahead (tests of the offset
    /// estimate on one host), ms.
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true, hide = true)]
    clock_offset_ms: f64,
    #[command(flatten)]
    auth: AuthArgs,
    /// Log events on stderr.
    #[arg(long, short)]
    verbose: bool,
}

#[derive(Debug, clap::Args)]
struct TaskArgs {
    /// The node manager's registration socket.
    #[arg(long, default_value = keel_cosched::cluster::register::DEFAULT_SOCKET)]
    socket: PathBuf,
    /// Job id.
    #[arg(long)]
    job: u32,
    /// Step id.
    #[arg(long, default_value_t = 0)]
    step: u32,
    /// This task's rank.
    #[arg(long)]
    rank: u32,
    /// Tasks in the step.
    #[arg(long)]
    size: u32,
    /// This task's index among the step's tasks on this node.
    #[arg(long, default_value_t = 0)]
    local_rank: u32,
    /// The step's tasks on this node.
    #[arg(long, default_value_t = 1)]
    local_size: u32,
    /// Nodes of the step (default: one per task).
    #[arg(long)]
    nodes: Option<u32>,
    /// The policy this task expects the cluster to run.
    #[arg(long)]
    policy: Option<String>,
    /// The program and its arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    command: Vec<std::ffi::OsString>,
}

fn task(args: TaskArgs) -> Result<(), String> {
    use keel_cosched::cluster::register::{register, Registration, Reply};
    use std::os::unix::process::CommandExt;
    let reg = Registration {
        job: args.job,
        step: args.step,
        rank: args.rank,
        size: args.size,
        local_rank: args.local_rank,
        local_size: args.local_size,
        nodes: args.nodes.unwrap_or(args.size),
        pid: keel_cosched::sys::getpid(),
        uid: keel_cosched::sys::geteuid(),
        gid: keel_cosched::sys::getgid(),
        policy: args.policy.clone(),
    };
    // The server's own checks say the same, with the key named.
    Registration::parse(reg.encode().as_bytes()).map_err(|e| e.to_string())?;
    let page = match register(&args.socket, &reg)
        .map_err(|e| format!("cannot register with {}: {e}", args.socket.display()))?
    {
        Reply::Accepted { page } => page,
        Reply::Refused { reason } => return Err(format!("registration refused: {reason}")),
    };
    let (program, rest) = args.command.split_first().ok_or("no command")?;
    let err = std::process::Command::new(program)
        .args(rest)
        .env(keel_cosched::shm::PAGE_ENV, &page)
        .env(
            keel_cosched::node::JOB_ENV,
            format!("{}.{}", args.job, args.step),
        )
        .exec();
    Err(format!("cannot run {}: {err}", program.to_string_lossy()))
}

/// Set by SIGTERM, SIGINT or SIGHUP.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Release);
}

/// A flag that turns true when the process is told to stop.
fn stop_flag() -> Arc<AtomicBool> {
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic, which is
        // async-signal-safe.
        unsafe { libc::signal(sig, on_stop_signal as *const () as libc::sighandler_t) };
    }
    let flag = Arc::new(AtomicBool::new(false));
    let f = Arc::clone(&flag);
    std::thread::spawn(move || loop {
        if STOP.load(Ordering::Acquire) {
            f.store(true, Ordering::Release);
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    });
    flag
}

fn mm(args: MmArgs) -> Result<(), String> {
    let positive = |name: &str, v: f64| {
        if v.is_finite() && v > 0.0 {
            Ok(Duration::from_secs_f64(v / 1e3))
        } else {
            Err(format!("{name} {v} is not a positive number of ms"))
        }
    };
    let cfg = MmConfig {
        policy: args.policy.clone(),
        tick: positive("--tick-ms", args.tick_ms)?,
        lead: positive("--lead-ms", args.lead_ms)?,
        slots: args.slots,
        verbose: args.verbose,
    };
    let (auth, peer) = args.auth.build()?;
    let listener = std::net::TcpListener::bind(&args.listen)
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    if args.verbose {
        eprintln!(
            "keel-cosched mm: listening on {} ({} authentication), policy {}",
            listener.local_addr().map_err(|e| e.to_string())?,
            auth.name(),
            args.policy
        );
    }
    let report =
        run_machine_manager(&cfg, listener, auth, peer, stop_flag()).map_err(|e| e.to_string())?;
    let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    match &args.report {
        Some(path) => {
            let mut f = keel_cosched::rundir::create_private_file(path, None)
                .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
            writeln!(f, "{text}").map_err(|e| e.to_string())?;
        }
        None => println!("{text}"),
    }
    Ok(())
}

/// A CPU list such as `0,2-3`.
fn parse_cpus(text: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for part in text.split(',') {
        let bad = || format!("--cpus {text}: `{part}` is not a CPU or range");
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (
                a.trim().parse().map_err(|_| bad())?,
                b.trim().parse().map_err(|_| bad())?,
            ),
            None => {
                let c: usize = part.trim().parse().map_err(|_| bad())?;
                (c, c)
            }
        };
        if lo > hi
            || hi >= 1 << 16
            || cpus.len() + (hi - lo) >= keel_cosched::cluster::wire::MAX_CELLS
        {
            return Err(bad());
        }
        cpus.extend(lo..=hi);
    }
    Ok(cpus)
}

fn nm(args: NmArgs) -> Result<(), String> {
    let node = match args
        .node
        .clone()
        .or_else(|| std::env::var("SLURMD_NODENAME").ok())
    {
        Some(n) => n,
        None => std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .map_err(|e| format!("no --node and no host name: {e}"))?,
    };
    let cpus = match &args.cpus {
        Some(text) => parse_cpus(text)?,
        None => keel_cosched::sys::allowed_cpus().map_err(|e| e.to_string())?,
    };
    if !args.clock_offset_ms.is_finite() || args.clock_offset_ms.abs() > 1e9 {
        return Err(format!(
            "--clock-offset-ms {} is out of range",
            args.clock_offset_ms
        ));
    }
    let cfg = NmConfig {
        node,
        mm: args.mm.clone(),
        cpus,
        socket: args.socket.clone(),
        run_parent: args.page_dir.clone(),
        boost_nice: args.boost_nice,
        realtime: !args.no_realtime,
        clock_offset_ns: (args.clock_offset_ms * 1e6) as i64,
        verbose: args.verbose,
    };
    let (auth, peer) = args.auth.build()?;
    run_node_manager(cfg, auth, peer, stop_flag()).map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Cmd::Run(args) => run(args),
        Cmd::Mm(args) => mm(args),
        Cmd::Nm(args) => nm(args),
        Cmd::Task(args) => task(args),
        Cmd::Ctl { socket, request } => match control::request(&socket, &request.join(" ")) {
            Ok(reply) => {
                println!("{reply}");
                if reply.starts_with("ok") {
                    Ok(())
                } else {
                    Err(String::new())
                }
            }
            Err(e) => Err(format!("cannot reach {}: {e}", socket.display())),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if !e.is_empty() {
                let _ = writeln!(std::io::stderr(), "error: {e}");
            }
            ExitCode::from(2)
        }
    }
}

fn run(args: RunArgs) -> Result<(), String> {
    let jobs = match &args.jobs {
        Some(p) => read_jobs(p).map_err(|e| e.to_string())?,
        None if args.serve => Vec::new(),
        None => return Err("give a job file, or --serve to wait for submissions".into()),
    };
    let mut config = Config::new(&args.policy).map_err(|e| e.to_string())?;
    if let Some(n) = args.nodes {
        config
            .split_cpus(n, args.pes_per_node)
            .map_err(|e| e.to_string())?;
    } else if args.pes_per_node != 1 {
        let cpus = config.nodes.len();
        config
            .split_cpus(cpus / args.pes_per_node, args.pes_per_node)
            .map_err(|e| e.to_string())?;
    }
    config.suspend = args.suspend;
    config.tick = args.tick_ms / 1e3;
    config.boost_nice = args.boost_nice;
    config.control = args.control;
    config.serve = args.serve;
    config.pdeathsig = !args.no_pdeathsig;
    config.on_manager_exit = args.on_manager_exit;
    config.realtime = !args.no_realtime;
    config.verbose = args.verbose;
    if let Some(t) = args.time_limit {
        if !(t.is_finite() && t > 0.0) {
            return Err(format!(
                "--time-limit {t} is not a positive number of seconds"
            ));
        }
        config.time_limit = Some(Duration::from_secs_f64(t));
    }
    if let Some(b) = args.bsp {
        config.bsp_command = vec![b.into_os_string()];
    }
    let machine = Machine::new(config).map_err(|e| e.to_string())?;
    if args.verbose {
        let _ = writeln!(
            std::io::stderr(),
            "keel-cosched: pid {} policy {} on {} PEs, suspending with the {}",
            std::process::id(),
            args.policy,
            machine.pes(),
            machine.suspend_kind()
        );
    }
    let report = machine.run(jobs).map_err(|e| e.to_string())?;
    let mut out = std::io::stdout().lock();
    if args.json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        let _ = writeln!(out, "{text}");
    } else {
        let _ = writeln!(
            out,
            "policy {}  suspend: {}  slots: {}  makespan: {:.3} s  background load: {}",
            report.policy,
            report.suspend,
            report.slots,
            report.makespan,
            report
                .background_load
                .map_or("unknown".to_string(), |b| format!("{:.1}%", b * 100.0))
        );
        let _ = writeln!(
            out,
            "{:>12} {:<16} {:>8} {:>8}  {:<10} classes",
            "id", "name", "start", "end", "outcome"
        );
        for j in &report.jobs {
            let t = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.3}"));
            let outcome = j.outcome.kind();
            let _ = writeln!(
                out,
                "{:>12} {:<16} {:>8} {:>8}  {:<10} {}",
                j.id,
                j.name,
                t(j.started),
                t(j.ended),
                outcome,
                j.classes.join(",")
            );
        }
        for n in &report.notices {
            let _ = writeln!(out, "note: {n}");
        }
    }
    if report
        .jobs
        .iter()
        .all(|j| j.outcome == keel_cosched::JobOutcome::Completed)
    {
        Ok(())
    } else {
        Err("not every job completed".into())
    }
}
