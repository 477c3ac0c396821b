//! Running cases: a worker process and its supervisor.
//!
//! A stack overflow or a failed allocation aborts a process and cannot be
//! caught, so cases run in a worker process ([`work`], the `keel-fuzz work`
//! command). Before each case the worker writes the case number and input
//! to `current-<target>.bin` in the output folder; the supervisor
//! ([`supervise`]) reads it back when the worker dies, reports that case as
//! a crash, and starts a new worker at the next case. Panics are caught in
//! the worker; a case running past [`CASE_LIMIT`] makes the worker report
//! it and exit with [`HANG_EXIT`].
//!
//! Worker protocol, one line per event on stdout, tab-separated:
//! `FAIL <case> <kind> <escaped message> <file of the input>` and, at the
//! end, `DONE <cases run> <seconds> <failures not reported>` (a worker
//! reports its first [`MAX_REPORTS`] failures in full and counts the rest,
//! so a parser failing on most inputs cannot fill the memory or the disk).

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::FileExt;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::{case_input, corpus, escape, unescape, Target, CASE_LIMIT, CASE_STACK, MEMORY_LIMIT};

/// Exit status of a worker that stopped on a hang.
pub const HANG_EXIT: i32 = 3;

/// How a case failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The parser panicked.
    Panic,
    /// The parser accepted something unusable (the target's check).
    Check,
    /// The case ran past [`CASE_LIMIT`].
    Hang,
    /// The worker died (stack overflow, allocation failure, signal).
    Crash,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Panic => "panic",
            Kind::Check => "check",
            Kind::Hang => "hang",
            Kind::Crash => "crash",
        }
    }

    fn from_name(name: &str) -> Option<Kind> {
        [Kind::Panic, Kind::Check, Kind::Hang, Kind::Crash]
            .into_iter()
            .find(|k| k.name() == name)
    }
}

/// One failing case.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The target.
    pub target: String,
    /// The case number (in its run's seed).
    pub case: u64,
    /// How it failed.
    pub kind: Kind,
    /// The panic message, the check's message, or the worker's last words.
    pub message: String,
    /// The input.
    pub input: Vec<u8>,
    /// Where the input was written.
    pub file: PathBuf,
}

impl Failure {
    /// What distinguishes this failure from others: its kind and its
    /// message's first line with digits dropped (so one bug found with
    /// different numbers counts once).
    pub fn signature(&self) -> String {
        let first = self.message.lines().next().unwrap_or("");
        let shape: String = first.chars().filter(|c| !c.is_ascii_digit()).collect();
        format!("{}: {shape}", self.kind.name())
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} at case {}: {}\n  input ({} bytes, in {}): {}",
            self.target,
            self.kind.name(),
            self.case,
            self.message.replace('\n', "\n  "),
            self.input.len(),
            self.file.display(),
            escape(&self.input, 600)
        )
    }
}

/// What a run did.
#[derive(Debug, Default)]
pub struct Summary {
    /// Cases run.
    pub cases: u64,
    /// Seconds spent.
    pub seconds: f64,
    /// Every failing case.
    pub failures: Vec<Failure>,
    /// Failures counted but not reported (past [`MAX_REPORTS`] per worker).
    pub unreported: u64,
}

impl Summary {
    /// The failures, one per [`Failure::signature`] (the shortest input).
    pub fn distinct(&self) -> Vec<&Failure> {
        let mut by: std::collections::BTreeMap<String, &Failure> = Default::default();
        for f in &self.failures {
            let e = by.entry(f.signature()).or_insert(f);
            if f.input.len() < e.input.len() {
                *e = f;
            }
        }
        by.into_values().collect()
    }
}

/// Most failures one worker reports in full.
pub const MAX_REPORTS: u64 = 50;

/// Which cases a run covers.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The run's seed.
    pub seed: u64,
    /// The first case number.
    pub first: u64,
    /// Stop after this many cases.
    pub cases: Option<u64>,
    /// Stop after this long.
    pub time: Option<Duration>,
    /// Where inputs of failures (and the current case) are written.
    pub out: PathBuf,
}

struct Shared {
    /// Nanoseconds since `t0` at which the current case started; 0 = idle.
    started: AtomicU64,
    finished: AtomicBool,
    t0: Instant,
}

thread_local! {
    static LAST_PANIC: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

fn limit_memory() {
    let limit = libc::rlimit {
        rlim_cur: MEMORY_LIMIT,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: setrlimit reads a valid, initialised rlimit; a failure only
    // leaves the process without the limit, which the worker tolerates.
    unsafe {
        libc::setrlimit(libc::RLIMIT_AS, &limit);
    }
}

/// Runs `plan`'s cases of `target` in this process (which should be a
/// `keel-fuzz work` child: a case may abort it), printing the protocol
/// lines. Returns once the plan is done.
pub fn work(target: &'static Target, plan: &Plan) -> std::io::Result<()> {
    limit_memory();
    std::fs::create_dir_all(&plan.out)?;
    let seeds = corpus::seeds(target.name)?;
    let current_path = plan.out.join(format!("current-{}.bin", target.name));
    let current = File::create(&current_path)?;
    panic::set_hook(Box::new(|info| {
        let text = info.to_string();
        LAST_PANIC.with(|p| *p.borrow_mut() = text);
    }));
    let shared = Arc::new(Shared {
        started: AtomicU64::new(0),
        finished: AtomicBool::new(false),
        t0: Instant::now(),
    });
    let stdout = Arc::new(Mutex::new(std::io::stdout()));
    let runner = {
        let shared = Arc::clone(&shared);
        let stdout = Arc::clone(&stdout);
        let plan = plan.clone();
        std::thread::Builder::new()
            .name(format!("fuzz-{}", target.name))
            .stack_size(CASE_STACK)
            .spawn(move || run_cases(target, &plan, &seeds, &current, &shared, &stdout))?
    };
    while !shared.finished.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(20));
        let started = shared.started.load(Ordering::Acquire);
        let now = shared.t0.elapsed().as_nanos() as u64;
        if started != 0 && now.saturating_sub(started) > CASE_LIMIT.as_nanos() as u64 {
            let (case, input) = read_current(&current_path)?;
            let file = save(&plan.out, target.name, case, &input)?;
            let message = format!("no answer after {:?}", CASE_LIMIT);
            let mut out = stdout.lock().unwrap_or_else(|e| e.into_inner());
            print_fail(&mut *out, case, Kind::Hang, &message, &file)?;
            out.flush()?;
            std::process::exit(HANG_EXIT);
        }
    }
    let (cases, seconds, unreported) = runner
        .join()
        .map_err(|_| std::io::Error::other("the case runner panicked outside a case"))??;
    let mut out = stdout.lock().unwrap_or_else(|e| e.into_inner());
    writeln!(out, "DONE\t{cases}\t{seconds}\t{unreported}")?;
    out.flush()
}

fn run_cases(
    target: &'static Target,
    plan: &Plan,
    seeds: &[Vec<u8>],
    current: &File,
    shared: &Shared,
    stdout: &Mutex<std::io::Stdout>,
) -> std::io::Result<(u64, f64, u64)> {
    let grammar = (target.grammar)();
    let t0 = Instant::now();
    let mut done = 0u64;
    let mut reported = 0u64;
    let mut unreported = 0u64;
    let result = loop {
        if plan.cases.is_some_and(|n| done >= n) || plan.time.is_some_and(|t| t0.elapsed() >= t) {
            break Ok(());
        }
        let case = plan.first + done;
        let input = case_input(&grammar, seeds, plan.seed, target.name, case);
        if let Err(e) = record_current(current, case, &input) {
            break Err(e);
        }
        shared.started.store(
            shared.t0.elapsed().as_nanos().max(1) as u64,
            Ordering::Release,
        );
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| (target.run)(&input)));
        shared.started.store(0, Ordering::Release);
        done += 1;
        let failure = match outcome {
            Ok(Ok(())) => None,
            Ok(Err(message)) => Some((Kind::Check, message)),
            Err(_) => Some((Kind::Panic, LAST_PANIC.with(|p| p.borrow().clone()))),
        };
        if failure.is_some() && reported >= MAX_REPORTS {
            unreported += 1;
        } else if let Some((kind, message)) = failure {
            reported += 1;
            let report = save(&plan.out, target.name, case, &input).and_then(|file| {
                let mut out = stdout.lock().unwrap_or_else(|e| e.into_inner());
                print_fail(&mut *out, case, kind, &message, &file)?;
                out.flush()
            });
            if let Err(e) = report {
                break Err(e);
            }
        }
    };
    shared.finished.store(true, Ordering::Release);
    result.map(|()| (done, t0.elapsed().as_secs_f64(), unreported))
}

fn record_current(file: &File, case: u64, input: &[u8]) -> std::io::Result<()> {
    let mut bytes = Vec::with_capacity(8 + input.len());
    bytes.extend_from_slice(&case.to_le_bytes());
    bytes.extend_from_slice(input);
    file.write_all_at(&bytes, 0)?;
    file.set_len(bytes.len() as u64)
}

fn read_current(path: &Path) -> std::io::Result<(u64, Vec<u8>)> {
    let mut bytes = Vec::new();
    File::open(path)?.read_to_end(&mut bytes)?;
    if bytes.len() < 8 {
        return Err(std::io::Error::other("no case was started"));
    }
    let mut case = [0u8; 8];
    case.copy_from_slice(&bytes[..8]);
    Ok((u64::from_le_bytes(case), bytes[8..].to_vec()))
}

fn save(out: &Path, target: &str, case: u64, input: &[u8]) -> std::io::Result<PathBuf> {
    let file = out.join(format!("fail-{target}-{case}.bin"));
    std::fs::write(&file, input)?;
    Ok(file)
}

fn print_fail(
    out: &mut dyn Write,
    case: u64,
    kind: Kind,
    message: &str,
    file: &Path,
) -> std::io::Result<()> {
    writeln!(
        out,
        "FAIL\t{case}\t{}\t{}\t{}",
        kind.name(),
        escape(message.as_bytes(), 2000),
        file.display()
    )
}

/// Most worker restarts in one supervised run: a target that crashes on
/// nearly every case is reported without spending the whole budget.
pub const MAX_RESTARTS: usize = 20;

/// Runs `plan` for `target` in `keel-fuzz work` children of `exe` (the
/// `keel-fuzz` binary), restarting after each crash or hang at the next
/// case, and collects the failures.
pub fn supervise(exe: &Path, target: &Target, plan: &Plan) -> std::io::Result<Summary> {
    std::fs::create_dir_all(&plan.out)?;
    let t0 = Instant::now();
    let mut summary = Summary::default();
    let mut next = plan.first;
    for _ in 0..=MAX_RESTARTS {
        let left_cases = plan.cases.map(|n| n.saturating_sub(next - plan.first));
        let left_time = plan.time.map(|t| t.saturating_sub(t0.elapsed()));
        if left_cases == Some(0) || left_time == Some(Duration::ZERO) {
            break;
        }
        let mut cmd = Command::new(exe);
        cmd.arg("work")
            .args(["--target", target.name])
            .args(["--seed", &plan.seed.to_string()])
            .args(["--first", &next.to_string()])
            .arg("--out")
            .arg(&plan.out)
            .env("RUST_BACKTRACE", "0")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(n) = left_cases {
            cmd.args(["--cases", &n.to_string()]);
        }
        if let Some(t) = left_time {
            cmd.args(["--seconds", &t.as_secs_f64().to_string()]);
        }
        let mut child = cmd.spawn()?;
        let mut stderr = child.stderr.take().expect("stderr is piped");
        let err_reader = std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = stderr.read_to_end(&mut text);
            String::from_utf8_lossy(&text).into_owned()
        });
        let mut done = None;
        let mut last_fail = None;
        for line in BufReader::new(child.stdout.take().expect("stdout is piped")).lines() {
            let line = line?;
            let fields: Vec<&str> = line.split('\t').collect();
            match fields.as_slice() {
                ["FAIL", case, kind, message, file] => {
                    let case: u64 = case.parse().unwrap_or(next);
                    let file = PathBuf::from(file);
                    summary.failures.push(Failure {
                        target: target.name.to_string(),
                        case,
                        kind: Kind::from_name(kind).unwrap_or(Kind::Crash),
                        message: String::from_utf8_lossy(&unescape(message)).into_owned(),
                        input: std::fs::read(&file).unwrap_or_default(),
                        file,
                    });
                    last_fail = Some(case);
                }
                ["DONE", cases, _, unreported] => {
                    done = cases.parse::<u64>().ok();
                    summary.unreported += unreported.parse::<u64>().unwrap_or(0);
                }
                _ => {}
            }
        }
        let status = child.wait()?;
        let stderr = err_reader.join().unwrap_or_default();
        if let (Some(cases), true) = (done, status.success()) {
            next += cases;
            break;
        }
        if status.code() == Some(HANG_EXIT) {
            next = last_fail.map_or(next + 1, |c| c + 1);
            continue;
        }
        let current = plan.out.join(format!("current-{}.bin", target.name));
        let (case, input) = read_current(&current).unwrap_or((next, Vec::new()));
        let file = save(&plan.out, target.name, case, &input)?;
        summary.failures.push(Failure {
            target: target.name.to_string(),
            case,
            kind: Kind::Crash,
            message: format!("worker {status}: {}", last_words(&stderr)),
            input,
            file,
        });
        next = case + 1;
    }
    summary.cases = next - plan.first;
    summary.seconds = t0.elapsed().as_secs_f64();
    Ok(summary)
}

/// Runs one input through `target` in a `keel-fuzz one` child of `exe`
/// (on a [`CASE_STACK`] thread, under [`MEMORY_LIMIT`] and [`CASE_LIMIT`]):
/// `Ok` when the parser answered, the failure's description otherwise.
pub fn check_in_child(exe: &Path, target: &str, input: &[u8]) -> Result<(), String> {
    // A fresh directory of our own: nothing at a predictable path.
    let dir = tempfile::Builder::new()
        .prefix("keel-fuzz-one-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    let file = dir.path().join(format!(
        "{target}-{:016x}.bin",
        crate::case_seed(0, target, input.len() as u64) ^ hash(input)
    ));
    std::fs::write(&file, input).map_err(|e| e.to_string())?;
    let output = Command::new(exe)
        .args(["one", "--target", target])
        .arg(&file)
        .env("RUST_BACKTRACE", "0")
        .output()
        .map_err(|e| e.to_string());
    let _ = std::fs::remove_file(&file);
    let output = output?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{target} on {} ({status}):\n{}{}",
            escape(input, 300),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            status = output.status
        ))
    }
}

/// What a dead worker said about its death: the runtime's lines on a
/// stack overflow, a failed allocation or a panic, else its last lines.
fn last_words(stderr: &str) -> String {
    const MARKS: [&str; 4] = [
        "overflowed its stack",
        "memory allocation",
        "panicked",
        "fatal",
    ];
    let marked: Vec<&str> = stderr
        .lines()
        .filter(|l| MARKS.iter().any(|m| l.contains(m)))
        .take(3)
        .collect();
    if !marked.is_empty() {
        return marked.join(" | ");
    }
    let last: Vec<&str> = stderr.lines().rev().take(4).collect();
    last.into_iter().rev().collect::<Vec<_>>().join(" | ")
}

fn hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Runs one input through `target` in this process on a [`CASE_STACK`]
/// thread with the [`CASE_LIMIT`] watchdog: `Err` describes a panic, a
/// failed check or a hang. (A stack overflow or failed allocation still
/// aborts the process: run this in a child, as [`check_in_child`] does.)
pub fn run_one(target: &'static Target, input: Vec<u8>) -> Result<(), String> {
    limit_memory();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .stack_size(CASE_STACK)
        .spawn(move || {
            let outcome = panic::catch_unwind(AssertUnwindSafe(|| (target.run)(&input)));
            let _ = tx.send(match outcome {
                Ok(Ok(())) => Ok(()),
                Ok(Err(message)) => Err(format!("check failed: {message}")),
                Err(p) => Err(format!(
                    "panicked: {}",
                    p.downcast_ref::<String>()
                        .map(String::as_str)
                        .or_else(|| p.downcast_ref::<&str>().copied())
                        .unwrap_or("(non-text payload)")
                )),
            });
        })
        .map_err(|e| e.to_string())?;
    match rx.recv_timeout(CASE_LIMIT) {
        Ok(result) => result,
        Err(_) => Err(format!("no answer after {CASE_LIMIT:?}")),
    }
}
