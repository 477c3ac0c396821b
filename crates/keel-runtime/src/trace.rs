//! `KEEL_TRACE=file.json`: what every loop participant, farm worker and
//! objects PU ran, as a Chrome / Perfetto trace (the JSON *object* format:
//! open the file at `ui.perfetto.dev` or `chrome://tracing`), so that a
//! schedule can be looked at as a timeline — one track per participant,
//! worker or PU, one box per chunk, item, object step or task chunk.
//!
//! ```text
//! {"traceEvents":[
//! {"name":"process_name","ph":"M","pid":..,"tid":0,"args":{"name":"keel: prog"}},
//! {"name":"thread_name","ph":"M",...,"args":{"name":"loop participant 0"}},
//! {"name":"sweep [ss:chunk=7]","cat":"loop","ph":"X","ts":..,"dur":..,"pid":..,"tid":0,
//!  "args":{"from":0,"to":7,"schedule":"ss:chunk=7","loop":"sweep"}},
//! ...
//! ],"displayTimeUnit":"ms"}
//! ```
//!
//! Tracks: `loop participant N` (tid `N`), `farm worker N` (tid
//! `10000 + N`) and `farm emitter/collector` (tid `19999`), `objects PU N`
//! (tid `20000 + N`). Loop chunks are named `<loop id> [<schedule>]`
//! (the schedule's canonical spec, `dynamic,7` reads `ss:chunk=7`; under `auto`, it reads `<method> → <choice> (<phase>)`);
//! farm items `item` with `args.n` the worker's item count so far; emitter
//! waits `wait`; object steps `object <id>` with `args {step, object}`;
//! potential-task chunks `chunk` (cat `task`) or `stolen chunk` (cat
//! `stolen`, on the thief's track) with `args {step, object, from, to,
//! owner, stolen}`.
//!
//! Tracing is opt-in and decided once per process, when the first loop,
//! farm or objects step starts. When it is off, the hot paths pay one check
//! of a cached flag per chunk or item. When it is on, each participant
//! buffers its events and appends them after its share (a farm worker also
//! every [`FLUSH_EVERY`] items).
//!
//! The file is complete once [`finish`] ran: it writes the closing `]}`,
//! and events that come later are dropped. The `keel` binary calls it on
//! every normal exit; a program using the library calls it (or holds a
//! [`FinishGuard`] in `main`). A process that never calls it — killed, or
//! a library user who does not — leaves the array open, which Perfetto and
//! `chrome://tracing` still read, but strict JSON parsers do not.
//!
//! The file is created afresh (truncated, mode 0644 before the umask). A
//! symbolic link or anything but a regular file at the path is refused
//! with one warning on stderr, and tracing stays off: the trace must not
//! write through a link someone else planted nor block on a FIFO. A write
//! that fails (a full disk) is reported once, naming the file, and tracing
//! stops there.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?; // a fresh directory: no predictable path
//! let path = dir.path().join("trace.json");
//! std::env::set_var(keel::trace::ENV_TRACE, &path);
//! let pool = keel::ThreadPool::builder().threads(2).build()?;
//! pool.parallel(0..100u32)
//!     .schedule("dynamic,10".parse()?)
//!     .id("doc")
//!     .for_each(|_| {});
//! keel::trace::finish();
//! keel::trace::finish(); // harmless
//! let trace: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
//! let events = trace["traceEvents"].as_array().unwrap();
//! let chunks = events.iter().filter(|e| e["name"] == "doc [ss:chunk=10]").count();
//! assert_eq!(chunks, 10);
//! # Ok(()) }
//! ```

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, TryLockError};
use std::time::Instant;

use serde::Serialize;

/// The environment variable naming the trace file
/// (`docs/conventions.md#environment-variables`).
pub const ENV_TRACE: &str = "KEEL_TRACE";

/// A farm worker writes its buffered items every this many, so that a long
/// run's trace does not sit in memory.
pub const FLUSH_EVERY: usize = 1 << 14;

/// Track ids (Chrome's `tid`) of the contexts' first tracks.
const FARM_TID: u64 = 10_000;
const EMITTER_TID: u64 = 19_999;
const PU_TID: u64 = 20_000;
const BALANCER_TID: u64 = 29_999;

/// How often [`finish`] tries for the file's lock before it gives up and
/// leaves the file open (a writer that never lets go, at exit).
const FINISH_TRIES: u32 = 10_000;

/// One executed loop chunk.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ChunkEvent {
    pub(crate) start: Instant,
    pub(crate) end: Instant,
    pub(crate) from: u64,
    pub(crate) to: u64,
}

/// How one loop instance's chunks are named.
#[derive(Debug)]
pub(crate) struct LoopLabel {
    /// `<loop id> [<schedule>]`.
    pub(crate) name: String,
    pub(crate) schedule: String,
    pub(crate) id: String,
}

/// One timed span of a farm or objects track.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Span {
    pub(crate) start: Instant,
    pub(crate) end: Instant,
    pub(crate) what: What,
}

/// What a [`Span`] was; serialised as the event's `args` (its fields, or
/// `{}` for a wait).
#[derive(Clone, Copy, Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum What {
    /// A farm item, the worker's `n`-th (from 0).
    Item { n: u64 },
    /// The emitter waiting for room, a marker, a result or the end.
    EmitterWait {},
    /// An object's step.
    Object { step: u64, object: u64 },
    /// A potential task's chunk; `owner` is the PU whose object it is.
    Task {
        step: u64,
        object: u64,
        from: u64,
        to: u64,
        owner: u64,
        stolen: bool,
    },
}

/// A row of the timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Track {
    Loop(usize),
    FarmWorker(usize),
    FarmEmitter,
    Pu(usize),
    /// The objects runtime's decisions whether to remap.
    Balancer,
}

impl Track {
    fn tid(self) -> u64 {
        match self {
            Track::Loop(i) => i as u64,
            Track::FarmWorker(i) => FARM_TID + i as u64,
            Track::FarmEmitter => EMITTER_TID,
            Track::Pu(i) => PU_TID + i as u64,
            Track::Balancer => BALANCER_TID,
        }
    }

    fn name(self) -> String {
        match self {
            Track::Loop(i) => format!("loop participant {i}"),
            Track::FarmWorker(i) => format!("farm worker {i}"),
            Track::FarmEmitter => "farm emitter/collector".to_string(),
            Track::Pu(i) => format!("objects PU {i}"),
            Track::Balancer => "objects balancer".to_string(),
        }
    }
}

/// One trace event as written.
#[derive(Serialize)]
struct Event<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    cat: &'a str,
    ph: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ts: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    pid: u32,
    tid: u64,
    args: Args<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Args<'a> {
    Name {
        name: &'a str,
    },
    Chunk {
        from: u64,
        to: u64,
        schedule: &'a str,
        #[serde(rename = "loop")]
        id: &'a str,
    },
    /// A farm or objects span: its own fields.
    Span(What),
    /// Whether the objects runtime remapped after a step, and why.
    Decision {
        step: u64,
        reason: &'a str,
    },
}

pub(crate) struct Tracer {
    origin: Instant,
    path: PathBuf,
    pid: u32,
    out: Mutex<Output>,
}

struct Output {
    file: BufWriter<File>,
    /// A write failed: reported once, nothing more is written.
    failed: bool,
    /// [`finish`] closed the object: nothing more is written.
    finished: bool,
    /// Tracks whose `thread_name` is written.
    named: Vec<u64>,
}

fn cell() -> &'static OnceLock<Option<Tracer>> {
    static TRACER: OnceLock<Option<Tracer>> = OnceLock::new();
    &TRACER
}

/// The tracer, if `KEEL_TRACE` names a file that could be created. A file
/// that cannot be created is reported once on stderr and tracing stays off:
/// a trace is a diagnostic, it must not stop the program.
/// Whether tracing is off (`KEEL_TRACE` unset, empty or unusable).
#[inline]
pub(crate) fn off() -> bool {
    tracer().is_none()
}

pub(crate) fn tracer() -> Option<&'static Tracer> {
    cell()
        .get_or_init(|| {
            let path = std::env::var_os(ENV_TRACE).filter(|p| !p.is_empty())?;
            match Tracer::create(Path::new(&path)) {
                Ok(tracer) => Some(tracer),
                Err(e) => {
                    // Not eprintln!: it panics when stderr is closed.
                    let _ = writeln!(
                        io::stderr(),
                        "keel: {ENV_TRACE}={}: {e}; tracing is off",
                        path.to_string_lossy()
                    );
                    None
                }
            }
        })
        .as_ref()
}

/// Completes the trace file: writes the closing `]}` and flushes, so that
/// the file is strict JSON. Events recorded later are dropped.
///
/// Idempotent, and safe from a destructor or an `atexit` handler: it never
/// panics, allocates nothing, does nothing when tracing is off or never
/// started, and does not wait forever for a writer that holds the file
/// (then the file stays open, as a killed process leaves it). Errors are
/// reported once on stderr, as for any write.
pub fn finish() {
    let Some(Some(tracer)) = cell().get() else {
        return;
    };
    tracer.finish();
}

/// Calls [`finish`] when dropped: hold one in `main`, so that every normal
/// return completes the trace file.
///
/// ```
/// // The first statement of `main`:
/// let _trace = keel::trace::FinishGuard::new();
/// // ... loops, farms, objects: the trace file is complete when `main`
/// // returns, by `?` or panic unwinding too.
/// ```
#[derive(Debug, Default)]
#[must_use = "the trace is finished when the guard is dropped"]
pub struct FinishGuard {
    _private: (),
}

impl FinishGuard {
    /// A guard; dropping it calls [`finish`].
    pub fn new() -> Self {
        FinishGuard { _private: () }
    }
}

impl Drop for FinishGuard {
    fn drop(&mut self) {
        finish();
    }
}

/// Opens `path` for the trace ([`crate::output::create_regular_file`]).
fn open(path: &Path) -> io::Result<File> {
    crate::output::create_regular_file(path, "the trace")
}

/// `keel: <program name>`, for the process track.
fn process_name() -> String {
    let program = std::env::args_os()
        .next()
        .map(PathBuf::from)
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "?".to_string());
    format!("keel: {program}")
}

impl Tracer {
    fn create(path: &Path) -> io::Result<Tracer> {
        Tracer::with_file(open(path)?, path)
    }

    /// A tracer writing to `file` (the opening and the process name are
    /// buffered: a file that cannot take them fails at the first flush).
    fn with_file(file: File, path: &Path) -> io::Result<Tracer> {
        let pid = std::process::id();
        let mut file = BufWriter::new(file);
        file.write_all(b"{\"traceEvents\":[\n")?;
        let name = process_name();
        serde_json::to_writer(&mut file, &metadata("process_name", pid, 0, &name))?;
        Ok(Tracer {
            origin: Instant::now(),
            path: path.to_path_buf(),
            pid,
            out: Mutex::new(Output {
                file,
                failed: false,
                finished: false,
                named: Vec::new(),
            }),
        })
    }

    /// [`finish`] for this tracer.
    fn finish(&self) {
        let mut tries = 0;
        let mut guard = loop {
            match self.out.try_lock() {
                Ok(guard) => break guard,
                Err(TryLockError::Poisoned(e)) => break e.into_inner(),
                Err(TryLockError::WouldBlock) if tries < FINISH_TRIES => {
                    tries += 1;
                    std::thread::yield_now();
                }
                Err(TryLockError::WouldBlock) => return,
            }
        };
        let out = &mut *guard;
        if out.finished || out.failed {
            out.finished = true;
            return;
        }
        out.finished = true;
        let result = out
            .file
            .write_all(b"\n],\"displayTimeUnit\":\"ms\"}\n")
            .and_then(|()| out.file.flush());
        if let Err(e) = result {
            out.failed = true;
            let _ = writeln!(
                io::stderr(),
                "keel: {ENV_TRACE}={}: cannot finish the trace: {e}",
                self.path.display()
            );
        }
    }

    fn micros(&self, t: Instant) -> f64 {
        let us = t.saturating_duration_since(self.origin).as_secs_f64() * 1e6;
        // Nanoseconds are all the clock gives: fewer digits in the file.
        (us * 1e3).round() / 1e3
    }

    /// Appends loop participant `me`'s chunks (naming its track first).
    pub(crate) fn write_loop(&self, label: &LoopLabel, me: usize, events: &[ChunkEvent]) {
        if events.is_empty() {
            // No track for a participant that ran nothing.
            return;
        }
        self.write_with(Track::Loop(me), |tracer, out| {
            for e in events {
                let (ts, end) = (tracer.micros(e.start), tracer.micros(e.end));
                tracer.event(
                    out,
                    &Event {
                        name: &label.name,
                        cat: "loop",
                        ph: "X",
                        ts: Some(ts),
                        dur: Some(((end - ts) * 1e3).round() / 1e3),
                        pid: tracer.pid,
                        tid: me as u64,
                        args: Args::Chunk {
                            from: e.from,
                            to: e.to,
                            schedule: &label.schedule,
                            id: &label.id,
                        },
                    },
                )?;
            }
            Ok(())
        });
    }

    /// Appends a farm or objects track's spans.
    pub(crate) fn write(&self, track: Track, spans: &[Span]) {
        if spans.is_empty() {
            return;
        }
        let tid = track.tid();
        self.write_with(track, |tracer, out| {
            let mut object_name = String::new();
            for s in spans {
                let (name, cat) = match s.what {
                    What::Item { .. } => ("item", "farm"),
                    What::EmitterWait {} => ("wait", "farm"),
                    What::Object { object, .. } => {
                        object_name.clear();
                        // Writing to a String cannot fail.
                        let _ = std::fmt::Write::write_fmt(
                            &mut object_name,
                            format_args!("object {object}"),
                        );
                        (object_name.as_str(), "object")
                    }
                    What::Task { stolen: true, .. } => ("stolen chunk", "stolen"),
                    What::Task { stolen: false, .. } => ("chunk", "task"),
                };
                let args = Args::Span(s.what);
                let (ts, end) = (tracer.micros(s.start), tracer.micros(s.end));
                tracer.event(
                    out,
                    &Event {
                        name,
                        cat,
                        ph: "X",
                        ts: Some(ts),
                        dur: Some(((end - ts) * 1e3).round() / 1e3),
                        pid: tracer.pid,
                        tid,
                        args,
                    },
                )?;
            }
            Ok(())
        });
    }

    /// Appends the objects runtime's decision after step `step`: a
    /// `balance` span over the remap's `remap_s` seconds, ending now, or a
    /// `skip` instant; `reason` says why.
    pub(crate) fn write_decision(&self, step: usize, remap_s: Option<f64>, reason: &str) {
        let now = self.micros(Instant::now());
        self.write_with(Track::Balancer, |tracer, out| {
            let (name, ph, ts, dur) = match remap_s {
                Some(s) => {
                    let dur = (s * 1e6 * 1e3).round() / 1e3;
                    ("balance", "X", (now - dur).max(0.0), Some(dur))
                }
                None => ("skip", "i", now, None),
            };
            tracer.event(
                out,
                &Event {
                    name,
                    cat: "balancer",
                    ph,
                    ts: Some(ts),
                    dur,
                    pid: tracer.pid,
                    tid: BALANCER_TID,
                    args: Args::Decision {
                        step: step as u64,
                        reason,
                    },
                },
            )
        });
    }

    fn event(&self, out: &mut Output, event: &Event<'_>) -> io::Result<()> {
        out.file.write_all(b",\n")?;
        serde_json::to_writer(&mut out.file, event)?;
        Ok(())
    }

    /// Names `track` if it is new, appends what `events` writes and
    /// flushes; the first failed write is reported on stderr.
    fn write_with(
        &self,
        track: Track,
        events: impl FnOnce(&Tracer, &mut Output) -> io::Result<()>,
    ) {
        if let Some(warning) = self.append(track, events) {
            let _ = writeln!(io::stderr(), "{warning}");
        }
    }

    /// As [`Tracer::write_with`]; returns the warning to print when a write
    /// fails for the first time (`None` otherwise, and once a write has
    /// failed or the trace is finished nothing more is written).
    fn append(
        &self,
        track: Track,
        events: impl FnOnce(&Tracer, &mut Output) -> io::Result<()>,
    ) -> Option<String> {
        let mut guard = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let out = &mut *guard;
        if out.failed || out.finished {
            return None;
        }
        let result = (|| {
            let tid = track.tid();
            if !out.named.contains(&tid) {
                let name = track.name();
                self.event(out, &metadata("thread_name", self.pid, tid, &name))?;
                out.named.push(tid);
            }
            events(self, out)?;
            out.file.flush()
        })();
        let e = result.err()?;
        out.failed = true;
        Some(format!(
            "keel: {ENV_TRACE}={}: cannot write the trace: {e}; tracing stops (the file is incomplete)",
            self.path.display()
        ))
    }
}

fn metadata<'a>(what: &'a str, pid: u32, tid: u64, name: &'a str) -> Event<'a> {
    Event {
        name: what,
        cat: "",
        ph: "M",
        ts: None,
        dur: None,
        pid,
        tid,
        args: Args::Name { name },
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
