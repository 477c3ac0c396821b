//! Traces: the user's own loads, read from JSON or CSV files.
//!
//! **JSON** (one object; only `task_loads` is required; unknown fields are
//! errors so that a misspelt field is not silently ignored):
//!
//! ```json
//! {"task_loads": [3.0, 1.5, 2.0],
//!  "pu_loads": [0.0, 0.5], "pu_speeds": [1.0, 2.0], "pu_available": [true, true],
//!  "migratable": [true, false, true], "current_mapping": [0, 1, null],
//!  "task_ids": ["a", "b", "c"], "num_pus": 2}
//! ```
//!
//! **CSV tasks** (a header row, then one row per task; `#` starts a comment
//! line; cells are trimmed): column `load` is required; `migratable`
//! (`true`/`false`/`1`/`0`), `current_pu` (a PU index, empty for an
//! unplaced task) and the task's name, `id` or `task` (any non-empty text,
//! unique; kept in [`MappingProblem::task_ids`] for the output mapping) are
//! optional. Any other column is an error.
//!
//! **CSV PUs** (optional, one row per PU): any of `background` (time already
//! committed, default 0), `speed` (relative, default 1) and `available`
//! (default true).
//!
//! The number of PUs comes from whatever states it — `num_pus`, the length
//! of a per-PU array, the rows of the PU file, or the caller (`--pus`) — and
//! every source that states it must agree, and be at most [`MAX_PUS`]. Loads are in any unit, the same
//! for tasks and PU background. A trace is a measurement, so its loads are
//! registered as [`keel_policy::Model::Dynamic`].
//!
//! Reading never panics: every malformed input is a [`TraceError`] that
//! names the file and, where there is one, the line, column or field.
//!
//! A JSON task file parsed from memory:
//!
//! ```
//! use keel_workloads::trace::{parse_trace, TaskFormat};
//! let json = br#"{"task_loads": [3.0, 1.5, 2.0], "num_pus": 2}"#;
//! let problem = parse_trace(TaskFormat::Json, "tasks.json", json, None, None).unwrap();
//! assert_eq!(problem.task_loads, vec![3.0, 1.5, 2.0]);
//! assert_eq!(problem.pu_loads, vec![0.0, 0.0]);
//! ```

mod csv_file;
mod json_file;

use std::path::Path;

use keel_policy::{Model, PolicyError, NO_PU};

use crate::error::TraceError;
use crate::MappingProblem;

/// The most PUs a trace may have (the generators' limit): the PU arrays are
/// allocated from the count before anything else is read into them.
pub use crate::generate::MAX_PUS;

/// The syntax of a task file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskFormat {
    /// The JSON object described in the module docs.
    Json,
    /// The CSV task table described in the module docs.
    Csv,
}

impl TaskFormat {
    /// The format a file's extension names (`.json` or `.csv`, any case).
    pub fn from_path(path: &Path) -> Result<TaskFormat, TraceError> {
        match extension(path).as_deref() {
            Some("json") => Ok(TaskFormat::Json),
            Some("csv") => Ok(TaskFormat::Csv),
            _ => Err(TraceError::UnknownFormat {
                path: path.display().to_string(),
                expected: "a .json or .csv task file",
            }),
        }
    }
}

fn extension(path: &Path) -> Option<String> {
    path.extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
}

/// Reads a task file (`.json` or `.csv`), an optional CSV PU file, and an
/// optional number of PUs, into a validated mapping problem.
pub fn read_trace(
    tasks: &Path,
    pu_file: Option<&Path>,
    pus: Option<usize>,
) -> Result<MappingProblem, TraceError> {
    let format = TaskFormat::from_path(tasks)?;
    let pu_file = match pu_file {
        None => None,
        Some(path) if extension(path).as_deref() == Some("csv") => {
            Some((path.display().to_string(), read(path)?))
        }
        Some(path) => {
            return Err(TraceError::UnknownFormat {
                path: path.display().to_string(),
                expected: "a .csv PU file",
            })
        }
    };
    let name = tasks.display().to_string();
    let bytes = read(tasks)?;
    parse_trace(
        format,
        &name,
        &bytes,
        pu_file.as_ref().map(|(n, b)| (n.as_str(), b.as_slice())),
        pus,
    )
}

fn read(path: &Path) -> Result<Vec<u8>, TraceError> {
    std::fs::read(path).map_err(|source| TraceError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// [`read_trace`] on contents already in memory; `name` and the PU file's
/// name are used in messages.
pub fn parse_trace(
    format: TaskFormat,
    name: &str,
    tasks: &[u8],
    pu_file: Option<(&str, &[u8])>,
    pus: Option<usize>,
) -> Result<MappingProblem, TraceError> {
    let (tasks, mut pu_fields) = match format {
        TaskFormat::Json => json_file::parse(name, tasks)?,
        TaskFormat::Csv => (csv_file::parse_tasks(name, tasks)?, PuFields::default()),
    };
    if let Some((pu_name, bytes)) = pu_file {
        pu_fields.merge(csv_file::parse_pus(pu_name, bytes)?)?;
    }
    if let Some(n) = pus {
        pu_fields
            .counts
            .push(("the PU count given (--pus)".to_string(), n));
    }
    assemble(name, tasks, pu_fields)
}

/// Per-task columns, as parsed.
#[derive(Debug, Default)]
struct TaskFields {
    loads: Vec<f64>,
    migratable: Option<Vec<bool>>,
    current: Option<Vec<usize>>,
    /// The name of each task, when the trace gives them.
    ids: Option<Vec<String>>,
    /// The line of each task, for CSV files.
    lines: Option<Vec<u64>>,
}

/// A per-PU array and who gave it.
#[derive(Debug)]
struct Sourced<T> {
    values: Vec<T>,
    source: String,
}

/// Per-PU data, as parsed, and every statement of how many PUs there are.
#[derive(Debug, Default)]
struct PuFields {
    background: Option<Sourced<f64>>,
    speed: Option<Sourced<f64>>,
    available: Option<Sourced<bool>>,
    counts: Vec<(String, usize)>,
}

impl PuFields {
    fn merge(&mut self, other: PuFields) -> Result<(), TraceError> {
        fn one<T>(
            field: &'static str,
            mine: &mut Option<Sourced<T>>,
            theirs: Option<Sourced<T>>,
        ) -> Result<(), TraceError> {
            match (mine.as_ref(), theirs) {
                (Some(a), Some(b)) => Err(TraceError::DuplicateField {
                    field,
                    first: a.source.clone(),
                    second: b.source,
                }),
                (None, Some(b)) => {
                    *mine = Some(b);
                    Ok(())
                }
                (_, None) => Ok(()),
            }
        }
        one(
            "the PU background load",
            &mut self.background,
            other.background,
        )?;
        one("the PU speed", &mut self.speed, other.speed)?;
        one("the PU availability", &mut self.available, other.available)?;
        self.counts.extend(other.counts);
        Ok(())
    }
}

/// Resolves the PU count, builds the problem and validates it as a whole.
fn assemble(name: &str, tasks: TaskFields, pus: PuFields) -> Result<MappingProblem, TraceError> {
    if tasks.loads.is_empty() {
        return Err(TraceError::NoTasks {
            path: name.to_string(),
        });
    }
    if let Some((who, count)) = pus.counts.iter().find(|&&(_, n)| n > MAX_PUS) {
        return Err(TraceError::TooManyPus {
            who: who.clone(),
            count: *count,
            limit: MAX_PUS,
        });
    }
    if let Some(ids) = &tasks.ids {
        let place = |t: usize| match tasks.lines.as_ref().and_then(|l| l.get(t)) {
            Some(line) => format!("{name}:{line}"),
            None => format!("{name}, task_ids[{t}]"),
        };
        let mut seen = std::collections::HashMap::with_capacity(ids.len());
        for (t, id) in ids.iter().enumerate() {
            if let Some(first) = seen.insert(id.as_str(), t) {
                return Err(TraceError::DuplicateTaskId {
                    at: place(t),
                    id: id.clone(),
                    first: place(first),
                });
            }
        }
    }
    let npus = match pus.counts.first() {
        None => {
            return Err(TraceError::UnknownPuCount {
                path: name.to_string(),
            })
        }
        Some(&(_, n)) if pus.counts.iter().all(|&(_, m)| m == n) => n,
        Some(_) => return Err(TraceError::PuCountConflict { counts: pus.counts }),
    };
    let problem = MappingProblem {
        task_loads: tasks.loads,
        pu_loads: pus.background.map_or_else(|| vec![0.0; npus], |b| b.values),
        pu_speeds: pus.speed.map(|s| s.values),
        pu_available: pus.available.map(|a| a.values),
        migratable: tasks.migratable,
        current: tasks.current,
        task_ids: tasks.ids,
        model: Model::Dynamic,
    };
    if let Err(source) = problem.input() {
        let task = match source {
            PolicyError::PuOutOfRange { task, .. }
            | PolicyError::UnplacedUnmigratable { task }
            | PolicyError::PinnedToUnavailable { task, .. } => Some(task),
            _ => None,
        };
        let line = task.and_then(|t| tasks.lines.as_ref().and_then(|l| l.get(t)));
        let at = match line {
            Some(line) => format!("{name}:{line}"),
            None => name.to_string(),
        };
        return Err(TraceError::Invalid { at, source });
    }
    Ok(problem)
}

/// The check every load passes: finite and non-negative.
fn valid_load(v: f64) -> bool {
    v.is_finite() && v >= 0.0
}

/// The check every speed passes: finite and positive.
fn valid_speed(v: f64) -> bool {
    v.is_finite() && v > 0.0
}

const LOAD_EXPECTED: &str = "a finite number >= 0";
const SPEED_EXPECTED: &str = "a finite number > 0";
const BOOL_EXPECTED: &str = "true, false, 1 or 0";
const PU_EXPECTED: &str = "a PU index (an integer >= 0), or empty for an unplaced task";
const JSON_PU_EXPECTED: &str = "a PU index (an integer >= 0), or null for an unplaced task";
const ID_EXPECTED: &str = "a non-empty task id";

/// `true`/`false`/`1`/`0`, any case.
fn parse_bool(text: &str) -> Option<bool> {
    if text == "1" || text.eq_ignore_ascii_case("true") {
        Some(true)
    } else if text == "0" || text.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// A placement entry: a PU index, or [`NO_PU`] for an empty cell. The
/// index [`NO_PU`] itself is refused: written out it would silently mean
/// "unplaced" (JSON refuses it too).
fn parse_pu(text: &str) -> Option<usize> {
    if text.is_empty() {
        Some(NO_PU)
    } else {
        text.parse().ok().filter(|&p| p != NO_PU)
    }
}
