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

use std::fs::File;
use std::io::{BufWriter, Write};
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
    out: Mutex<(BufWriter<File>, bool)>,
}

/// The tracer, if `KEEL_TRACE` names a file that could be created. A file
/// that cannot be created is reported once on stderr and tracing stays off:
/// a trace is a diagnostic, it must not stop the program.
pub(crate) fn tracer() -> Option<&'static Tracer> {
    static TRACER: OnceLock<Option<Tracer>> = OnceLock::new();
    TRACER
        .get_or_init(|| {
            let path = std::env::var_os("KEEL_TRACE").filter(|p| !p.is_empty())?;
            match File::create(&path) {
                Ok(file) => {
                    let mut out = BufWriter::new(file);
                    let _ = out.write_all(b"[\n");
                    Some(Tracer {
                        origin: Instant::now(),
                        out: Mutex::new((out, true)),
                    })
                }
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
    /// Appends participant `thread`'s chunks of loop `name`.
    pub(crate) fn write(&self, name: &str, thread: usize, events: &[ChunkEvent]) {
        let micros = |t: Instant| t.saturating_duration_since(self.origin).as_secs_f64() * 1e6;
        let mut guard = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let (out, first) = &mut *guard;
        for e in events {
            let separator = if std::mem::take(first) { "" } else { ",\n" };
            let _ = write!(
                out,
                "{separator}{{\"name\":\"{}\",\"cat\":\"loop\",\"ph\":\"X\",\"pid\":1,\"tid\":{thread},\"ts\":{:.3},\"dur\":{:.3},\"args\":{{\"from\":{},\"to\":{}}}}}",
                escape(name),
                micros(e.start),
                micros(e.end) - micros(e.start),
                e.from,
                e.to,
            );
        }
        let _ = out.flush();
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
