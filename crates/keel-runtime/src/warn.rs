//! Warnings on stderr for what the environment got wrong, one per process
//! per (variable, value), as libgomp warns once about a bad `OMP_SCHEDULE`
//! and goes on with the default: a program whose environment is wrong
//! still runs, and says so once rather than on every loop. The one
//! process-wide record of what was said serves Keel's libraries alike
//! (the OpenMP interposer prints through it too).

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

/// Prints `keel: {message}` on stderr unless a warning with the same
/// `(subject, value)` was printed before in this process.
pub(crate) fn once(subject: &str, value: &str, message: impl FnOnce() -> String) {
    once_as("keel", subject, value, message);
}

/// Prints `{speaker}: {message}` on stderr unless a warning with the same
/// `(subject, value)` was printed before in this process (by any
/// speaker); `message` is built only when it is printed.
///
/// ```
/// // A bad value of a variable, reported once however often it is read.
/// for _ in 0..3 {
///     keel::warn::once_as("my-tool: warning", "MY_VAR", "bogus", || {
///         "MY_VAR=\"bogus\" is not a number; the default is used".to_string()
///     });
/// }
/// ```
pub fn once_as(speaker: &str, subject: &str, value: &str, message: impl FnOnce() -> String) {
    static SEEN: OnceLock<Mutex<HashSet<(String, String)>>> = OnceLock::new();
    let mut seen = SEEN
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if first_time(&mut seen, subject, value) {
        eprintln!("{speaker}: {}", message());
    }
}

/// Whether `(subject, value)` is new to `seen`, recording it: the
/// decision [`once`] prints on.
fn first_time(seen: &mut HashSet<(String, String)>, subject: &str, value: &str) -> bool {
    seen.insert((subject.to_string(), value.to_string()))
}

#[cfg(test)]
mod tests {
    use super::first_time;
    use std::collections::HashSet;

    #[test]
    fn each_variable_and_value_warns_once() {
        let mut seen = HashSet::new();
        assert!(first_time(&mut seen, "KEEL_SCHEDULE", "garbage"));
        assert!(!first_time(&mut seen, "KEEL_SCHEDULE", "garbage"));
        assert!(first_time(&mut seen, "KEEL_SCHEDULE", "junk"));
        assert!(first_time(&mut seen, "KEEL_NUM_THREADS", "garbage"));
        assert!(!first_time(&mut seen, "KEEL_NUM_THREADS", "garbage"));
        assert_eq!(seen.len(), 3);
    }
}
