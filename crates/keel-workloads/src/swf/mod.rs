//! Job logs in the Parallel Workloads Archive's Standard Workload Format
//! (SWF, version 2.2), for throughput studies of the coscheduling policies
//! (the FCS paper's job mixes).
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

mod arrivals;
mod parse;
#[cfg(test)]
mod tests;

pub use arrivals::{arrivals, Arrival, Arrivals, DropReason, Dropped, WideJobs};
pub use parse::{parse_swf, read_swf};

/// The largest SWF file [`read_swf`] reads: 1 GiB (the Parallel Workloads
/// Archive's largest logs are a few hundred MB). Past it the read stops
/// with [`SwfError::TooLarge`] instead of exhausting memory.
pub const MAX_SWF_BYTES: u64 = 1 << 30;

/// The most jobs one log may hold: 2²³ ≈ 8.4 million (the archive's
/// largest logs have a few million). Past it [`parse_swf`] stops with
/// [`SwfError::TooManyJobs`].
pub const MAX_SWF_JOBS: usize = 1 << 23;

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

    /// A file past [`MAX_SWF_BYTES`].
    #[error("`{path}` is larger than the limit of MAX_SWF_BYTES = {limit} bytes")]
    TooLarge {
        /// The file.
        path: String,
        /// The limit.
        limit: u64,
    },

    /// A log with more than [`MAX_SWF_JOBS`] jobs.
    #[error("line {line}: more than MAX_SWF_JOBS = {limit} jobs in one log")]
    TooManyJobs {
        /// The line of the first job past the limit.
        line: usize,
        /// The limit.
        limit: usize,
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
