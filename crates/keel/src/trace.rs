//! `KEEL_TRACE=file.json`: every chunk every participant runs, as Chrome /
//! Perfetto trace events (the JSON array format: open the file at
//! `ui.perfetto.dev` or `chrome://tracing`), so a schedule can be looked at
//! as a timeline — one row per participant, one box per chunk.
//!
//! Tracing is opt-in and decided once, when the first loop starts. When it
//! is off, the loop's hot path pays one check of a cached flag per chunk.
//! When it is on, each participant buffers its chunks and appends them to
//! the file after its share of the loop. The array is never closed: the
//! format allows a missing `]`, so nothing has to run at process exit.
//! A write that fails (a full disk, `/dev/full`) is reported once on stderr,
//! naming the file and the error, and tracing stops: the trace is lost
//! from there, but never silently.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// One executed chunk.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ChunkEvent {
    pub(crate) start: Instant,
    pub(crate) end: Instant,
    pub(crate) from: u64,
    pub(crate) to: u64,
}

pub(crate) struct Tracer {
    origin: Instant,
    path: PathBuf,
    out: Mutex<Output>,
}

struct Output {
    file: BufWriter<File>,
    /// No event written yet (no separator before the next).
    first: bool,
    /// A write failed: reported once, nothing more is written.
    failed: bool,
}

/// The tracer, if `KEEL_TRACE` names a file that could be created. A file
/// that cannot be created is reported once on stderr and tracing stays off:
/// a trace is a diagnostic, it must not stop the program.
pub(crate) fn tracer() -> Option<&'static Tracer> {
    static TRACER: OnceLock<Option<Tracer>> = OnceLock::new();
    TRACER
        .get_or_init(|| {
            let path = std::env::var_os("KEEL_TRACE").filter(|p| !p.is_empty())?;
            match Tracer::create(Path::new(&path)) {
                Ok(tracer) => Some(tracer),
                Err(e) => {
                    eprintln!(
                        "keel: KEEL_TRACE={}: {e}; tracing is off",
                        path.to_string_lossy()
                    );
                    None
                }
            }
        })
        .as_ref()
}

impl Tracer {
    /// A tracer writing to a new file at `path` (the array's opening `[`
    /// is buffered: a file that cannot take it fails at the first write).
    fn create(path: &Path) -> io::Result<Tracer> {
        let mut file = BufWriter::new(File::create(path)?);
        file.write_all(b"[\n")?;
        Ok(Tracer {
            origin: Instant::now(),
            path: path.to_path_buf(),
            out: Mutex::new(Output {
                file,
                first: true,
                failed: false,
            }),
        })
    }

    /// Appends participant `thread`'s chunks of loop `name`; the first
    /// failed write is reported on stderr.
    pub(crate) fn write(&self, name: &str, thread: usize, events: &[ChunkEvent]) {
        if let Some(warning) = self.append(name, thread, events) {
            // Not eprintln!: it panics when stderr is closed.
            let _ = writeln!(io::stderr(), "{warning}");
        }
    }

    /// Appends the chunks; returns the warning to print when a write
    /// fails for the first time (`None` otherwise, and once a write has
    /// failed nothing more is written).
    fn append(&self, name: &str, thread: usize, events: &[ChunkEvent]) -> Option<String> {
        let micros = |t: Instant| t.saturating_duration_since(self.origin).as_secs_f64() * 1e6;
        let mut guard = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let out = &mut *guard;
        if out.failed {
            return None;
        }
        let result = Self::append_to(out, name, thread, events, micros);
        let e = result.err()?;
        out.failed = true;
        Some(format!(
            "keel: KEEL_TRACE={}: cannot write the trace: {e}; tracing stops (the file is incomplete)",
            self.path.display()
        ))
    }

    fn append_to(
        out: &mut Output,
        name: &str,
        thread: usize,
        events: &[ChunkEvent],
        micros: impl Fn(Instant) -> f64,
    ) -> io::Result<()> {
        for e in events {
            let separator = if std::mem::take(&mut out.first) {
                ""
            } else {
                ",\n"
            };
            write!(
                out.file,
                "{separator}{{\"name\":\"{}\",\"cat\":\"loop\",\"ph\":\"X\",\"pid\":1,\"tid\":{thread},\"ts\":{:.3},\"dur\":{:.3},\"args\":{{\"from\":{},\"to\":{}}}}}",
                escape(name),
                micros(e.start),
                micros(e.end) - micros(e.start),
                e.from,
                e.to,
            )?;
        }
        out.file.flush()
    }
}

fn escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| match c {
            '"' => vec!['\\', '"'],
            '\\' => vec!['\\', '\\'],
            c if c.is_control() => vec![' '],
            c => vec![c],
        })
        .collect()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn chunk() -> ChunkEvent {
        let now = Instant::now();
        ChunkEvent {
            start: now,
            end: now,
            from: 0,
            to: 1,
        }
    }

    #[test]
    fn a_full_device_is_reported_once_naming_the_path() {
        let path = Path::new("/dev/full");
        if !path.exists() {
            // On the real stderr, not the captured one, so that the skip
            // shows in `cargo test`'s output.
            let _ = writeln!(io::stderr().lock(), "SKIPPED: no /dev/full here");
            return;
        }
        let tracer = Tracer::create(path).unwrap();
        let warning = tracer.append("loop", 0, &[chunk()]).expect("a warning");
        assert!(warning.contains("KEEL_TRACE=/dev/full"), "{warning}");
        assert!(warning.contains("cannot write the trace"), "{warning}");
        // Once: later chunks are dropped without a second warning.
        assert_eq!(tracer.append("loop", 1, &[chunk()]), None);
    }

    #[test]
    fn a_writable_file_gets_every_chunk() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.json");
        let tracer = Tracer::create(&path).unwrap();
        assert_eq!(tracer.append("l\"oop", 0, &[chunk(), chunk()]), None);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches("\"ph\":\"X\"").count(), 2, "{text}");
        assert!(text.contains("l\\\"oop"), "{text}");
    }
}
