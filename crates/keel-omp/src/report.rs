//! `KEEL_OMP_REPORT=file`: every loop Keel takes is recorded, and when the
//! process exits it appends one line of JSON to `file` — its per-loop
//! report (`keel::loops::report`), each loop with the object and offset
//! of its call site — which `keel omp report` prints as a table. One line
//! per process, so that a script running several OpenMP programs under
//! one report keeps them all; a forked child that calls `exit` writes
//! nothing (its parent's loops are not its own).
//!
//! The line's format is `keel::loops::process_report`'s, shared with
//! the reader (`docs/openmp-interposer.md#the-loop-report`).

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::OnceLock;

use keel::loops::process_report::{ProcessReport, SiteReport};

/// The environment variable naming the report file.
pub(crate) const ENV_REPORT: &str = "KEEL_OMP_REPORT";

/// The process that armed the report, and the file.
static ARMED: OnceLock<(u32, PathBuf)> = OnceLock::new();

/// With `KEEL_OMP_REPORT` set, records every loop Keel takes from now on
/// and writes the report when the process exits.
pub(crate) fn arm() {
    let Some(path) = std::env::var_os(ENV_REPORT).filter(|v| !v.is_empty()) else {
        return;
    };
    keel::loops::record_all(true);
    if ARMED.set((std::process::id(), PathBuf::from(path))).is_ok() {
        // SAFETY: `write_at_exit` is an `extern "C" fn()` that never unwinds.
        unsafe { libc::atexit(write_at_exit) };
    }
}

extern "C" fn write_at_exit() {
    let Some((pid, path)) = ARMED.get() else {
        return;
    };
    if *pid != std::process::id() {
        return;
    }
    let written = std::panic::catch_unwind(|| {
        let line = process_report()?;
        // One write of the whole line: lines of processes that exit at
        // once do not interleave.
        keel::output::append_regular_file(path, "the loop report")?.write_all(&line)
    });
    match written {
        Ok(Ok(())) => {}
        Ok(Err(err)) => eprintln!(
            "keel-omp: warning: the loop report was not written to {}: {err}",
            path.display()
        ),
        Err(_) => eprintln!("keel-omp: warning: the loop report could not be made"),
    }
}

/// This process's report line, as it stands.
fn process_report() -> serde_json::Result<Vec<u8>> {
    // Keel's own report of its recorded loops (the most time first),
    // each with its call site located.
    let sites: std::collections::HashMap<String, usize> = crate::team::taken_sites()
        .into_iter()
        .map(|(site, id)| (id.to_string(), site))
        .collect();
    let loops: Vec<SiteReport> = keel::loops::report()
        .into_iter()
        .filter_map(|report| {
            let located = crate::site::locate(*sites.get(&report.name)?);
            Some(SiteReport {
                object: located.as_ref().map(|(path, _)| path.clone()),
                offset: located.map(|(_, offset)| offset as u64),
                symbol: None,
                report,
            })
        })
        .collect();
    ProcessReport::new(
        std::env::current_exe()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id(),
        crate::team::COUNTS.0.taken.load(Relaxed),
        crate::team::COUNTS.0.forwarded.load(Relaxed),
        loops,
    )
    .to_line()
}
