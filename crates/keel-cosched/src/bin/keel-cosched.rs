//! `keel-cosched`: run a job file under a cosched policy (the machine and
//! node managers in one process), or talk to a running one's control
//! socket.
//!
//! ```text
//! keel-cosched run --policy fcs jobs.txt
//! keel-cosched run --policy gs --control /run/keel-cosched.sock --serve
//! keel-cosched ctl /run/keel-cosched.sock submit 'a 2 -- @bsp --iterations 100'
//! ```

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Cmd::Run(args) => run(args),
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
