//! Job logs in the Parallel Workloads Archive's Standard Workload Format
//! (SWF, version 2.2), for throughput studies of the coscheduling policies
//! (the FCS paper's job mixes; issue 8).
//!
//! **The format.** One ASCII line per job, 18 whitespace-separated numeric
//! fields, in this order (units are seconds, kilobytes and counts):
//!
//! | # | field | # | field |
//! |---|---|---|---|
//! | 1 | job number | 10 | requested memory (KB per processor) |
//! | 2 | submit time (s from the log's start) | 11 | status |
//! | 3 | wait time (start − submit) | 12 | user id |
//! | 4 | run time (end − start, wall clock) | 13 | group id |
//! | 5 | allocated processors | 14 | executable (application) number |
//! | 6 | average CPU time per processor | 15 | queue number |
//! | 7 | used memory (KB per processor) | 16 | partition number |
//! | 8 | requested processors | 17 | preceding job number |
//! | 9 | requested time | 18 | think time after the preceding job |
//!
//! `-1` means unknown or not applicable, in any field but the first two
//! (every job has a number and a submit time); it reads as `None`. Any other
//! negative number is an error. Counts, ids and the status are integers
//! (`4.0` is accepted as 4); times and memory may have fractions. Lines
//! whose first non-blank character is `;` are comments; the comments before
//! the first job are the header, whose `; Key: value` lines are kept as
//! [`HeaderField`]s (keys such as `MaxProcs`, `MaxNodes`, `UnixStartTime`,
//! [`STANDARD_HEADER_KEYS`]). Blank lines are skipped.
//!
//! **Errors.** Parsing never panics: a malformed line is a [`SwfError`]
//! that names its 1-based line number and, for a bad field, the field's
//! number and name: a wrong number of fields, a field that is not a number
//! (or not an integer where one is required, or not finite), a negative
//! value other than -1, an unknown job number or submit time, a status
//! outside 0–5, and a job number that an earlier line already used.
//!
//! **Arrivals.** [`arrivals`] turns a log into the job stream a simulated
//! cluster of `P` PEs receives: each usable job's submit time, width and
//! run time, sorted by submit time. Jobs whose width or run time the log
//! does not know, and jobs of width 0, are skipped and listed in
//! [`Arrivals::dropped`] with the reason; jobs wider than the cluster are
//! dropped the same way or make the call fail, as [`WideJobs`] says.
//!
//! ```
//! use keel_workloads::swf::{arrivals, parse_swf, WideJobs};
//! let log = parse_swf(
//!     "; Version: 2.2\n; MaxProcs: 4\n\
//!      1 0 5 100 2 -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1\n\
//!      2 10 0 50 8 -1 -1 8 60 -1 1 2 1 -1 1 -1 -1 -1\n",
//! )
//! .unwrap();
//! assert_eq!(log.max_procs().unwrap(), Some(4));
//! let stream = arrivals(&log.jobs, 4, WideJobs::Drop).unwrap();
//! assert_eq!(stream.jobs.len(), 1);
//! assert_eq!(stream.dropped.len(), 1); // job 2 wants 8 PEs
//! ```

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

/// Fields on every job line.
pub const FIELDS: usize = 18;

/// The fields' names, in order, as error messages print them.
pub const FIELD_NAMES: [&str; FIELDS] = [
    "job number",
    "submit time",
    "wait time",
    "run time",
    "allocated processors",
    "average CPU time",
    "used memory",
    "requested processors",
    "requested time",
    "requested memory",
    "status",
    "user id",
    "group id",
    "executable number",
    "queue number",
    "partition number",
    "preceding job number",
    "think time",
];

/// The header keys the SWF definition and the archive's converters use.
/// Other `Key: value` comments are kept too; this list only lets callers
/// tell the standard ones apart ([`HeaderField::is_standard`]).
pub const STANDARD_HEADER_KEYS: &[&str] = &[
    "Version",
    "Computer",
    "Installation",
    "Acknowledge",
    "Information",
    "Conversion",
    "MaxJobs",
    "MaxRecords",
    "Preemption",
    "UnixStartTime",
    "TimeZone",
    "TimeZoneString",
    "StartTime",
    "EndTime",
    "MaxNodes",
    "MaxProcs",
    "MaxRuntime",
    "MaxMemory",
    "AllowOveruse",
    "MaxQueues",
    "Queues",
    "Queue",
    "MaxPartitions",
    "Partitions",
    "Partition",
    "Note",
];

/// An SWF file or text that cannot be read, or a log that does not fit a
/// cluster.
#[derive(Debug, thiserror::Error)]
pub enum SwfError {
    /// The file could not be read.
    #[error("cannot read `{path}`: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },

    /// An error inside a named file.
    #[error("`{path}`: {source}")]
    InFile {
        /// The file.
        path: String,
        /// The error, which names the line.
        #[source]
        source: Box<SwfError>,
    },

    /// A job line without exactly [`FIELDS`] fields.
    #[error(
        "line {line}: a job line has {FIELDS} whitespace-separated fields, this one has {found}"
    )]
    FieldCount {
        /// 1-based line number.
        line: usize,
        /// Fields found.
        found: usize,
    },

    /// A field that is not a number of the kind it must be.
    #[error("line {line}: field {field} ({name}) = `{value}` is not {expected}")]
    NotANumber {
        /// 1-based line number.
        line: usize,
        /// 1-based field number.
        field: usize,
        /// The field's name.
        name: &'static str,
        /// The text found.
        value: String,
        /// What would be valid.
        expected: &'static str,
    },

    /// A negative value other than -1 (unknown).
    #[error("line {line}: field {field} ({name}) = `{value}` is negative; the only negative value allowed is -1 (unknown)")]
    Negative {
        /// 1-based line number.
        line: usize,
        /// 1-based field number.
        field: usize,
        /// The field's name.
        name: &'static str,
        /// The text found.
        value: String,
    },

    /// -1 (unknown) in a field every job must have.
    #[error("line {line}: field {field} ({name}) is -1 (unknown), but every job needs one")]
    Unknown {
        /// 1-based line number.
        line: usize,
        /// 1-based field number.
        field: usize,
        /// The field's name.
        name: &'static str,
    },

    /// A status code SWF does not define.
    #[error("line {line}: field 11 (status) = {value} is not a status: expected 0 (failed), 1 (completed), 2 to 4 (partial execution), 5 (cancelled) or -1 (unknown)")]
    BadStatus {
        /// 1-based line number.
        line: usize,
        /// The code found.
        value: u64,
    },

    /// A job number used twice.
    #[error("line {line}: job number {id} already appears on line {first_line}")]
    DuplicateJob {
        /// 1-based line number of the second use.
        line: usize,
        /// The job number.
        id: u64,
        /// 1-based line number of the first use.
        first_line: usize,
    },

    /// A header value of the wrong kind (read on request, see
    /// [`SwfLog::header_u64`]).
    #[error("line {line}: header `{key}: {value}` is invalid: expected {expected}")]
    BadHeader {
        /// 1-based line number.
        line: usize,
        /// The key.
        key: String,
        /// The value found.
        value: String,
        /// What would be valid.
        expected: &'static str,
    },

    /// [`arrivals`] for a cluster of no PEs.
    #[error("a cluster needs at least one PE, not 0")]
    NoPes,

    /// A job wider than the cluster, with [`WideJobs::Reject`].
    #[error("line {line}: job {id} needs {procs} processors but the cluster has {pes} PEs")]
    TooWide {
        /// 1-based line number (0 for a job not read from text).
        line: usize,
        /// The job number.
        id: u64,
        /// The processors it needs.
        procs: u64,
        /// The cluster's PEs.
        pes: usize,
    },
}

/// Field 11: how the job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwfStatus {
    /// 0: failed.
    Failed,
    /// 1: completed.
    Completed,
    /// 2, 3 or 4: one part of a job that was checkpointed or swapped out
    /// and ran in several pieces (logs differ on the exact meaning of each
    /// code, so the code is kept as written).
    Partial(u8),
    /// 5: cancelled.
    Cancelled,
}

impl SwfStatus {
    /// The status for an SWF code, if it is one.
    pub fn from_code(code: u64) -> Option<SwfStatus> {
        match code {
            0 => Some(SwfStatus::Failed),
            1 => Some(SwfStatus::Completed),
            2..=4 => Some(SwfStatus::Partial(code as u8)),
            5 => Some(SwfStatus::Cancelled),
            _ => None,
        }
    }

    /// The SWF code.
    pub fn code(self) -> u64 {
        match self {
            SwfStatus::Failed => 0,
            SwfStatus::Completed => 1,
            SwfStatus::Partial(code) => u64::from(code),
            SwfStatus::Cancelled => 5,
        }
    }
}

/// One job line. `None` stands for the log's -1 (unknown).
#[derive(Clone, Debug, PartialEq)]
pub struct SwfJob {
    /// The 1-based line it was read from (0 for a job built in code).
    pub line: usize,
    /// Field 1: the job number, unique in the log.
    pub id: u64,
    /// Field 2: submit time, seconds from the start of the log.
    pub submit_time: f64,
    /// Field 3: seconds between submission and start.
    pub wait_time: Option<f64>,
    /// Field 4: wall-clock seconds from start to end (0 means under 0.5 s).
    pub run_time: Option<f64>,
    /// Field 5: processors the job ran on.
    pub allocated_procs: Option<u64>,
    /// Field 6: user plus system CPU seconds, averaged over its processors.
    pub avg_cpu_time: Option<f64>,
    /// Field 7: memory used, KB per processor on average.
    pub used_memory_kb: Option<f64>,
    /// Field 8: processors requested.
    pub requested_procs: Option<u64>,
    /// Field 9: seconds requested (wall clock or CPU time per processor;
    /// the log's header says which).
    pub requested_time: Option<f64>,
    /// Field 10: memory requested, KB per processor.
    pub requested_memory_kb: Option<f64>,
    /// Field 11: how the job ended.
    pub status: Option<SwfStatus>,
    /// Field 12: user, numbered from 1.
    pub user_id: Option<u64>,
    /// Field 13: group.
    pub group_id: Option<u64>,
    /// Field 14: executable (application).
    pub executable: Option<u64>,
    /// Field 15: queue.
    pub queue: Option<u64>,
    /// Field 16: partition.
    pub partition: Option<u64>,
    /// Field 17: the job this one waited for (a dependency or a user's
    /// feedback loop).
    pub preceding_job: Option<u64>,
    /// Field 18: seconds between the preceding job's end and this job's
    /// submission.
    pub think_time: Option<f64>,
}

/// A `; Key: value` line of the header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderField {
    /// The 1-based line it was read from.
    pub line: usize,
    /// The key, as written (letters, digits, `_` and `-`).
    pub key: String,
    /// The value, trimmed.
    pub value: String,
}

impl HeaderField {
    /// Whether the key is one of [`STANDARD_HEADER_KEYS`] (any case).
    pub fn is_standard(&self) -> bool {
        STANDARD_HEADER_KEYS
            .iter()
            .any(|k| k.eq_ignore_ascii_case(&self.key))
    }
}

/// A parsed log: its header and its jobs, in file order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SwfLog {
    /// The header's `Key: value` lines, in order (a key may repeat, as
    /// `Note` often does).
    pub header: Vec<HeaderField>,
    /// The jobs, in file order.
    pub jobs: Vec<SwfJob>,
}

impl SwfLog {
    /// The first header field with this key (any case).
    pub fn header(&self, key: &str) -> Option<&HeaderField> {
        self.header.iter().find(|f| f.key.eq_ignore_ascii_case(key))
    }

    /// A header value that must be a non-negative integer, or `None` when
    /// the header does not have the key.
    pub fn header_u64(&self, key: &str) -> Result<Option<u64>, SwfError> {
        let Some(field) = self.header(key) else {
            return Ok(None);
        };
        field
            .value
            .parse::<u64>()
            .map(Some)
            .map_err(|_| SwfError::BadHeader {
                line: field.line,
                key: field.key.clone(),
                value: field.value.clone(),
                expected: "a non-negative integer",
            })
    }

    /// `MaxProcs`: the machine's processors.
    pub fn max_procs(&self) -> Result<Option<u64>, SwfError> {
        self.header_u64("MaxProcs")
    }

    /// `MaxNodes`: the machine's nodes (on SMP machines, fewer than
    /// `MaxProcs`).
    pub fn max_nodes(&self) -> Result<Option<u64>, SwfError> {
        self.header_u64("MaxNodes")
    }

    /// `UnixStartTime`: the log's time 0, in seconds since the Unix epoch.
    pub fn unix_start_time(&self) -> Result<Option<u64>, SwfError> {
        self.header_u64("UnixStartTime")
    }

    /// `Version`: the SWF version the log declares.
    pub fn version(&self) -> Option<&str> {
        self.header("Version").map(|f| f.value.as_str())
    }
}

/// Parses an SWF text (see the module docs for what is accepted).
pub fn parse_swf(text: &str) -> Result<SwfLog, SwfError> {
    let mut log = SwfLog::default();
    let mut first_line_of: HashMap<u64, usize> = HashMap::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            continue;
        }
        if let Some(comment) = trimmed.strip_prefix(';') {
            if log.jobs.is_empty() {
                if let Some((key, value)) = header_pair(comment) {
                    log.header.push(HeaderField {
                        line,
                        key: key.to_string(),
                        value: value.to_string(),
                    });
                }
            }
            continue;
        }
        let job = parse_job(line, trimmed)?;
        if let Some(&first_line) = first_line_of.get(&job.id) {
            return Err(SwfError::DuplicateJob {
                line,
                id: job.id,
                first_line,
            });
        }
        first_line_of.insert(job.id, line);
        log.jobs.push(job);
    }
    Ok(log)
}

/// Reads and parses an SWF file. Bytes that are not UTF-8 (some archive
/// headers are Latin-1) are replaced, which can only affect comments: job
/// fields must be ASCII numbers anyway.
pub fn read_swf(path: &Path) -> Result<SwfLog, SwfError> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| SwfError::Io {
        path: shown.clone(),
        source,
    })?;
    parse_swf(&String::from_utf8_lossy(&bytes)).map_err(|e| SwfError::InFile {
        path: shown,
        source: Box::new(e),
    })
}

/// `Key: value` in a comment's text, if it has that shape.
fn header_pair(comment: &str) -> Option<(&str, &str)> {
    let (key, value) = comment.split_once(':')?;
    let key = key.trim();
    let is_key = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    is_key.then(|| (key, value.trim()))
}

/// One field's text, where it is, and how to read it.
struct Field<'a> {
    line: usize,
    /// 0-based.
    index: usize,
    text: &'a str,
}

impl Field<'_> {
    fn not_a_number(&self, expected: &'static str) -> SwfError {
        SwfError::NotANumber {
            line: self.line,
            field: self.index + 1,
            name: FIELD_NAMES[self.index],
            value: self.text.to_string(),
            expected,
        }
    }

    fn negative(&self) -> SwfError {
        SwfError::Negative {
            line: self.line,
            field: self.index + 1,
            name: FIELD_NAMES[self.index],
            value: self.text.to_string(),
        }
    }

    fn unknown(&self) -> SwfError {
        SwfError::Unknown {
            line: self.line,
            field: self.index + 1,
            name: FIELD_NAMES[self.index],
        }
    }

    /// A non-negative number of seconds or kilobytes, or -1.
    fn real(&self) -> Result<Option<f64>, SwfError> {
        const EXPECTED: &str = "a finite number";
        let value: f64 = self.text.parse().map_err(|_| self.not_a_number(EXPECTED))?;
        if !value.is_finite() {
            return Err(self.not_a_number(EXPECTED));
        }
        if value == -1.0 {
            Ok(None)
        } else if value < 0.0 {
            Err(self.negative())
        } else {
            // `-0` is 0; keep the sign out of later output.
            Ok(Some(value + 0.0))
        }
    }

    /// A non-negative integer, or -1.
    fn integer(&self) -> Result<Option<u64>, SwfError> {
        const EXPECTED: &str = "an integer";
        if let Ok(value) = self.text.parse::<i64>() {
            return match value {
                -1 => Ok(None),
                v if v < 0 => Err(self.negative()),
                v => Ok(Some(v as u64)),
            };
        }
        // Some converters print counts as `4.0`: accept integral reals
        // that fit, nothing else.
        let value: f64 = self.text.parse().map_err(|_| self.not_a_number(EXPECTED))?;
        if !value.is_finite() || value.fract() != 0.0 || value.abs() >= 9.0e15 {
            return Err(self.not_a_number(EXPECTED));
        }
        if value == -1.0 {
            Ok(None)
        } else if value < 0.0 {
            Err(self.negative())
        } else {
            Ok(Some(value as u64))
        }
    }
}

fn parse_job(line: usize, text: &str) -> Result<SwfJob, SwfError> {
    let texts: Vec<&str> = text.split_whitespace().collect();
    if texts.len() != FIELDS {
        return Err(SwfError::FieldCount {
            line,
            found: texts.len(),
        });
    }
    let field = |index: usize| Field {
        line,
        index,
        text: texts[index],
    };
    let id = field(0).integer()?.ok_or_else(|| field(0).unknown())?;
    let submit_time = field(1).real()?.ok_or_else(|| field(1).unknown())?;
    let status = match field(10).integer()? {
        None => None,
        Some(code) => {
            Some(SwfStatus::from_code(code).ok_or(SwfError::BadStatus { line, value: code })?)
        }
    };
    Ok(SwfJob {
        line,
        id,
        submit_time,
        wait_time: field(2).real()?,
        run_time: field(3).real()?,
        allocated_procs: field(4).integer()?,
        avg_cpu_time: field(5).real()?,
        used_memory_kb: field(6).real()?,
        requested_procs: field(7).integer()?,
        requested_time: field(8).real()?,
        requested_memory_kb: field(9).real()?,
        status,
        user_id: field(11).integer()?,
        group_id: field(12).integer()?,
        executable: field(13).integer()?,
        queue: field(14).integer()?,
        partition: field(15).integer()?,
        preceding_job: field(16).integer()?,
        think_time: field(17).real()?,
    })
}

/// Writes a job as one SWF line (no newline). Reals print in Rust's
/// shortest round-trip form, so [`parse_swf`] reads back the same values.
impl fmt::Display for SwfJob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn real(f: &mut fmt::Formatter<'_>, value: Option<f64>) -> fmt::Result {
            match value {
                Some(v) => write!(f, " {v}"),
                None => f.write_str(" -1"),
            }
        }
        fn integer(f: &mut fmt::Formatter<'_>, value: Option<u64>) -> fmt::Result {
            match value {
                Some(v) => write!(f, " {v}"),
                None => f.write_str(" -1"),
            }
        }
        write!(f, "{} {}", self.id, self.submit_time)?;
        real(f, self.wait_time)?;
        real(f, self.run_time)?;
        integer(f, self.allocated_procs)?;
        real(f, self.avg_cpu_time)?;
        real(f, self.used_memory_kb)?;
        integer(f, self.requested_procs)?;
        real(f, self.requested_time)?;
        real(f, self.requested_memory_kb)?;
        integer(f, self.status.map(SwfStatus::code))?;
        integer(f, self.user_id)?;
        integer(f, self.group_id)?;
        integer(f, self.executable)?;
        integer(f, self.queue)?;
        integer(f, self.partition)?;
        integer(f, self.preceding_job)?;
        real(f, self.think_time)
    }
}

/// Writes the log in SWF: the header as `; Key: value` lines, then one line
/// per job.
impl fmt::Display for SwfLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for field in &self.header {
            writeln!(f, "; {}: {}", field.key, field.value)?;
        }
        for job in &self.jobs {
            writeln!(f, "{job}")?;
        }
        Ok(())
    }
}

/// What [`arrivals`] does with a job wider than the cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WideJobs {
    /// Skip it and list it in [`Arrivals::dropped`] (for replaying a big
    /// machine's log on a small cluster).
    Drop,
    /// Fail with [`SwfError::TooWide`] (for logs that should fit).
    Reject,
}

/// One job as a cluster receives it.
#[derive(Clone, Debug, PartialEq)]
pub struct Arrival {
    /// The job number.
    pub id: u64,
    /// The log line it came from.
    pub line: usize,
    /// Submit time, seconds from the start of the log.
    pub submit_time: f64,
    /// PEs it needs: its allocated processors, or its requested ones when
    /// the log does not say what it got.
    pub procs: usize,
    /// Wall-clock seconds it ran for in the log (0: under 0.5 s).
    pub run_time: f64,
    /// The time limit it asked for, if known.
    pub requested_time: Option<f64>,
    /// Its user, if known.
    pub user_id: Option<u64>,
}

/// Why [`arrivals`] skipped a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// Neither its allocated nor its requested processors are known.
    UnknownWidth,
    /// It had 0 processors (typically a job cancelled before it started).
    ZeroWidth,
    /// Its run time is unknown.
    UnknownRunTime,
    /// It needs more processors than the cluster has ([`WideJobs::Drop`]).
    TooWide {
        /// The processors it needs.
        procs: u64,
    },
}

/// A job [`arrivals`] skipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dropped {
    /// The job number.
    pub id: u64,
    /// The log line.
    pub line: usize,
    /// Why.
    pub reason: DropReason,
}

/// The arrival stream of a log on a given cluster.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Arrivals {
    /// Usable jobs, by submit time (job number breaks ties).
    pub jobs: Vec<Arrival>,
    /// Skipped jobs, in log order.
    pub dropped: Vec<Dropped>,
}

/// The jobs a cluster of `pes` PEs receives from a log (see the module
/// docs for which jobs are skipped).
pub fn arrivals(jobs: &[SwfJob], pes: usize, wide: WideJobs) -> Result<Arrivals, SwfError> {
    if pes == 0 {
        return Err(SwfError::NoPes);
    }
    let mut out = Arrivals::default();
    for job in jobs {
        let drop = |reason| Dropped {
            id: job.id,
            line: job.line,
            reason,
        };
        let Some(procs) = job.allocated_procs.or(job.requested_procs) else {
            out.dropped.push(drop(DropReason::UnknownWidth));
            continue;
        };
        if procs == 0 {
            out.dropped.push(drop(DropReason::ZeroWidth));
            continue;
        }
        let fits = usize::try_from(procs).ok().filter(|&p| p <= pes);
        let Some(width) = fits else {
            match wide {
                WideJobs::Drop => {
                    out.dropped.push(drop(DropReason::TooWide { procs }));
                    continue;
                }
                WideJobs::Reject => {
                    return Err(SwfError::TooWide {
                        line: job.line,
                        id: job.id,
                        procs,
                        pes,
                    })
                }
            }
        };
        let Some(run_time) = job.run_time else {
            out.dropped.push(drop(DropReason::UnknownRunTime));
            continue;
        };
        out.jobs.push(Arrival {
            id: job.id,
            line: job.line,
            submit_time: job.submit_time,
            procs: width,
            run_time,
            requested_time: job.requested_time,
            user_id: job.user_id,
        });
    }
    // Logs are meant to be sorted by submit time; do not rely on it.
    out.jobs.sort_by(|a, b| {
        a.submit_time
            .total_cmp(&b.submit_time)
            .then(a.id.cmp(&b.id))
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SAMPLE: &str = "\
; Version: 2.2
; Computer: Test cluster
; Installation: nowhere
; MaxJobs: 5
; MaxRecords: 5
; Preemption: No
; UnixStartTime: 1000000000
; TimeZoneString: Europe/Rome
; MaxNodes: 4
; MaxProcs: 8
; Note: a hand-written sample
;       continued on a line with no key
;
1   0      10    3600  4  3500.5 1024 4  7200 2048 1  1  1  3  1  1 -1 -1
2   5.5    0     60    8  -1     -1   8  -1   -1   0  2  1  -1 2  -1 -1 -1

3   30     -1    -1    -1 -1     -1   2  600  -1   5  1  1  -1 1  -1 -1 -1
; a comment between jobs is not header
4   20     100   0     2  0      -1   2  60   -1   1  3  2  4  1  1  1  12.25
5   40     0     100   16 -1     -1   16 100  -1   1  1  1  -1 1  -1 -1 -1
";

    #[test]
    fn swf_sample_parses_header_and_jobs() {
        let log = parse_swf(SAMPLE).unwrap();
        assert_eq!(log.version(), Some("2.2"));
        assert_eq!(log.max_procs().unwrap(), Some(8));
        assert_eq!(log.max_nodes().unwrap(), Some(4));
        assert_eq!(log.unix_start_time().unwrap(), Some(1_000_000_000));
        assert_eq!(log.header("computer").unwrap().value, "Test cluster");
        assert_eq!(log.header("Note").unwrap().line, 11);
        // The continuation line, the bare `;` and the comment between jobs
        // are not key/value pairs.
        assert_eq!(log.header.len(), 11);
        assert!(log.header.iter().all(HeaderField::is_standard));

        assert_eq!(log.jobs.len(), 5);
        let first = &log.jobs[0];
        assert_eq!(
            *first,
            SwfJob {
                line: 14,
                id: 1,
                submit_time: 0.0,
                wait_time: Some(10.0),
                run_time: Some(3600.0),
                allocated_procs: Some(4),
                avg_cpu_time: Some(3500.5),
                used_memory_kb: Some(1024.0),
                requested_procs: Some(4),
                requested_time: Some(7200.0),
                requested_memory_kb: Some(2048.0),
                status: Some(SwfStatus::Completed),
                user_id: Some(1),
                group_id: Some(1),
                executable: Some(3),
                queue: Some(1),
                partition: Some(1),
                preceding_job: None,
                think_time: None,
            }
        );
        assert_eq!(log.jobs[1].line, 15);
        assert_eq!(log.jobs[1].submit_time, 5.5);
        assert_eq!(log.jobs[1].status, Some(SwfStatus::Failed));
        assert_eq!(log.jobs[2].line, 17);
        assert_eq!(log.jobs[2].status, Some(SwfStatus::Cancelled));
        assert_eq!(log.jobs[2].allocated_procs, None);
        assert_eq!(log.jobs[3].line, 19);
        assert_eq!(log.jobs[3].preceding_job, Some(1));
        assert_eq!(log.jobs[3].think_time, Some(12.25));
    }

    #[test]
    fn swf_arrivals_sort_fall_back_and_drop() {
        let log = parse_swf(SAMPLE).unwrap();
        let stream = arrivals(&log.jobs, 8, WideJobs::Drop).unwrap();
        // Job 3 has no run time (it is requested-width only); job 5 needs 16.
        let ids: Vec<u64> = stream.jobs.iter().map(|a| a.id).collect();
        assert_eq!(ids, [1, 2, 4]);
        assert_eq!(
            stream.dropped,
            [
                Dropped {
                    id: 3,
                    line: 17,
                    reason: DropReason::UnknownRunTime
                },
                Dropped {
                    id: 5,
                    line: 20,
                    reason: DropReason::TooWide { procs: 16 }
                },
            ]
        );
        assert_eq!(stream.jobs[1].procs, 8);
        assert_eq!(stream.jobs[2].run_time, 0.0);

        // Unsorted input comes out sorted; requested width stands in for an
        // unknown allocation; width 0 and unknown width are dropped.
        let text = "\
7 50 -1 10 -1 -1 -1 3 -1 -1 1 -1 -1 -1 -1 -1 -1 -1
6 20 -1 10 2 -1 -1 -1 -1 -1 1 -1 -1 -1 -1 -1 -1 -1
8 20 -1 10 0 -1 -1 0 -1 -1 1 -1 -1 -1 -1 -1 -1 -1
9 10 -1 10 -1 -1 -1 -1 -1 -1 1 -1 -1 -1 -1 -1 -1 -1
";
        let stream = arrivals(&parse_swf(text).unwrap().jobs, 4, WideJobs::Reject).unwrap();
        let got: Vec<(u64, usize)> = stream.jobs.iter().map(|a| (a.id, a.procs)).collect();
        assert_eq!(got, [(6, 2), (7, 3)]);
        let reasons: Vec<DropReason> = stream.dropped.iter().map(|d| d.reason).collect();
        assert_eq!(reasons, [DropReason::ZeroWidth, DropReason::UnknownWidth]);
    }

    #[test]
    fn swf_arrivals_reject_wide_jobs_and_empty_clusters() {
        let log = parse_swf(SAMPLE).unwrap();
        let err = arrivals(&log.jobs, 8, WideJobs::Reject).unwrap_err();
        assert!(
            matches!(
                err,
                SwfError::TooWide {
                    line: 20,
                    id: 5,
                    procs: 16,
                    pes: 8
                }
            ),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "line 20: job 5 needs 16 processors but the cluster has 8 PEs"
        );
        assert!(matches!(
            arrivals(&log.jobs, 0, WideJobs::Drop),
            Err(SwfError::NoPes)
        ));
        assert_eq!(
            arrivals(&log.jobs, 16, WideJobs::Reject)
                .unwrap()
                .jobs
                .len(),
            4
        );
    }

    /// A valid job line with field `index` (0-based) replaced.
    fn with_field(index: usize, value: &str) -> String {
        let mut fields: Vec<&str> = "1 0 10 3600 4 -1 -1 4 7200 -1 1 1 1 -1 1 -1 -1 -1"
            .split(' ')
            .collect();
        fields[index] = value;
        format!("; Version: 2.2\n\n{}\n", fields.join(" "))
    }

    fn error_of(text: &str) -> SwfError {
        parse_swf(text).unwrap_err()
    }

    #[test]
    fn swf_wrong_field_count_names_the_line() {
        let err = error_of("; header\n1 0 10 3600 4\n");
        assert!(
            matches!(err, SwfError::FieldCount { line: 2, found: 5 }),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "line 2: a job line has 18 whitespace-separated fields, this one has 5"
        );
        let err = error_of(&format!("{}\n", with_field(17, "-1 7").trim_end()));
        assert!(
            matches!(err, SwfError::FieldCount { line: 3, found: 19 }),
            "{err:?}"
        );
    }

    #[test]
    fn swf_non_numbers_name_line_and_field() {
        for (index, value, expected) in [
            (1, "soon", "a finite number"),
            (3, "NaN", "a finite number"),
            (3, "inf", "a finite number"),
            (4, "four", "an integer"),
            (4, "4.5", "an integer"),
            (0, "1e300", "an integer"),
            (11, "alice", "an integer"),
        ] {
            let err = error_of(&with_field(index, value));
            match &err {
                SwfError::NotANumber {
                    line,
                    field,
                    name,
                    value: v,
                    expected: e,
                } => {
                    assert_eq!(*line, 3);
                    assert_eq!(*field, index + 1);
                    assert_eq!(*name, FIELD_NAMES[index]);
                    assert_eq!(v, value);
                    assert_eq!(*e, expected);
                }
                other => panic!("{value} in field {}: {other:?}", index + 1),
            }
        }
        let err = error_of(&with_field(4, "four"));
        assert_eq!(
            err.to_string(),
            "line 3: field 5 (allocated processors) = `four` is not an integer"
        );
    }

    #[test]
    fn swf_negative_values_other_than_minus_one_are_errors() {
        for index in 0..FIELDS {
            let err = error_of(&with_field(index, "-2"));
            assert!(
                matches!(err, SwfError::Negative { line: 3, field, .. } if field == index + 1),
                "field {}: {err:?}",
                index + 1
            );
        }
        let err = error_of(&with_field(3, "-0.5"));
        assert_eq!(
            err.to_string(),
            "line 3: field 4 (run time) = `-0.5` is negative; the only negative value allowed is -1 (unknown)"
        );
        // -1 in any spelling is unknown; `4.0` is an integer.
        let log = parse_swf(&with_field(3, "-1.0")).unwrap();
        assert_eq!(log.jobs[0].run_time, None);
        let log = parse_swf(&with_field(4, "4.0")).unwrap();
        assert_eq!(log.jobs[0].allocated_procs, Some(4));
        let log = parse_swf(&with_field(4, "-1.0")).unwrap();
        assert_eq!(log.jobs[0].allocated_procs, None);
    }

    #[test]
    fn swf_required_fields_cannot_be_unknown() {
        for index in [0, 1] {
            let err = error_of(&with_field(index, "-1"));
            assert!(
                matches!(err, SwfError::Unknown { line: 3, field, .. } if field == index + 1),
                "{err:?}"
            );
        }
        assert_eq!(
            error_of(&with_field(1, "-1")).to_string(),
            "line 3: field 2 (submit time) is -1 (unknown), but every job needs one"
        );
    }

    #[test]
    fn swf_status_codes() {
        for (code, status) in [
            ("0", Some(SwfStatus::Failed)),
            ("1", Some(SwfStatus::Completed)),
            ("3", Some(SwfStatus::Partial(3))),
            ("5", Some(SwfStatus::Cancelled)),
            ("-1", None),
        ] {
            assert_eq!(
                parse_swf(&with_field(10, code)).unwrap().jobs[0].status,
                status
            );
        }
        let err = error_of(&with_field(10, "6"));
        assert!(
            matches!(err, SwfError::BadStatus { line: 3, value: 6 }),
            "{err:?}"
        );
    }

    #[test]
    fn swf_duplicate_job_numbers_name_both_lines() {
        let line = "1 0 10 3600 4 -1 -1 4 7200 -1 1 1 1 -1 1 -1 -1 -1";
        let other = "2 0 10 3600 4 -1 -1 4 7200 -1 1 1 1 -1 1 -1 -1 -1";
        let err = error_of(&format!("{line}\n{other}\n; note\n{line}\n"));
        assert!(
            matches!(
                err,
                SwfError::DuplicateJob {
                    line: 4,
                    id: 1,
                    first_line: 1
                }
            ),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "line 4: job number 1 already appears on line 1"
        );
    }

    #[test]
    fn swf_bad_header_values_are_reported_on_request() {
        let log = parse_swf("; MaxProcs: lots\n; MaxNodes: 12\n").unwrap();
        assert!(log.jobs.is_empty());
        let err = log.max_procs().unwrap_err();
        assert!(
            matches!(err, SwfError::BadHeader { line: 1, .. }),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "line 1: header `MaxProcs: lots` is invalid: expected a non-negative integer"
        );
        assert_eq!(log.max_nodes().unwrap(), Some(12));
        assert_eq!(log.unix_start_time().unwrap(), None);
    }

    #[test]
    fn swf_files_name_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.swf");
        std::fs::write(&path, b"; Computer: caf\xe9\n1 2 3\n").unwrap();
        let err = read_swf(&path).unwrap_err();
        assert!(
            matches!(&err, SwfError::InFile { source, .. }
                if matches!(**source, SwfError::FieldCount { line: 2, found: 3 })),
            "{err:?}"
        );
        assert!(
            err.to_string().ends_with(
                "log.swf`: line 2: a job line has 18 whitespace-separated fields, this one has 3"
            ),
            "{err}"
        );
        std::fs::write(&path, SAMPLE).unwrap();
        assert_eq!(read_swf(&path).unwrap(), parse_swf(SAMPLE).unwrap());
        let err = read_swf(&dir.path().join("missing.swf")).unwrap_err();
        assert!(matches!(err, SwfError::Io { .. }), "{err:?}");
    }

    fn real() -> impl Strategy<Value = Option<f64>> {
        prop::option::of(prop_oneof![
            0.0f64..1e9,
            (0u32..100_000).prop_map(f64::from)
        ])
    }

    fn integer() -> impl Strategy<Value = Option<u64>> {
        prop::option::of(prop_oneof![0u64..10, any::<u32>().prop_map(u64::from)])
    }

    fn status() -> impl Strategy<Value = Option<SwfStatus>> {
        prop::option::of((0u64..=5).prop_map(|c| SwfStatus::from_code(c).unwrap()))
    }

    prop_compose! {
        fn job()(
            submit_time in 0.0f64..1e9,
            times in prop::array::uniform6(real()),
            counts in prop::array::uniform9(integer()),
            status in status(),
            memory in real(),
        ) -> SwfJob {
            SwfJob {
                line: 0,
                id: 0,
                submit_time,
                wait_time: times[0],
                run_time: times[1],
                allocated_procs: counts[0],
                avg_cpu_time: times[2],
                used_memory_kb: times[3],
                requested_procs: counts[1],
                requested_time: times[4],
                requested_memory_kb: memory,
                status,
                user_id: counts[2],
                group_id: counts[3],
                executable: counts[4],
                queue: counts[5],
                partition: counts[6],
                preceding_job: counts[7],
                think_time: times[5],
            }
        }
    }

    proptest! {
        #[test]
        fn swf_write_then_parse_round_trips(
            mut jobs in prop::collection::vec(job(), 0..20),
            ids in prop::collection::hash_set(1u64..1_000_000, 20),
            header in prop::collection::vec(
                (prop::sample::select(STANDARD_HEADER_KEYS), "[A-Za-z0-9./-]{1,20}"),
                0..6,
            ),
        ) {
            let header: Vec<HeaderField> = header
                .into_iter()
                .enumerate()
                .map(|(i, (key, value))| HeaderField { line: i + 1, key: key.to_string(), value })
                .collect();
            for ((i, job), id) in jobs.iter_mut().enumerate().zip(ids) {
                job.id = id;
                job.line = header.len() + i + 1;
            }
            let log = SwfLog { header, jobs };
            let text = log.to_string();
            prop_assert_eq!(parse_swf(&text).unwrap(), log);
        }

        #[test]
        fn swf_arbitrary_text_gives_a_result_not_a_panic(
            text in prop::collection::vec(
                prop::sample::select(b"0123456789 -.;:\neEinfNaMxPrcos\t".to_vec()),
                0..300,
            ),
        ) {
            let text = String::from_utf8(text).unwrap();
            if let Ok(log) = parse_swf(&text) {
                let _ = log.max_procs();
                let _ = arrivals(&log.jobs, 4, WideJobs::Reject);
            }
        }
    }
}
