//! The loop report of one process as a line of JSON: what the OpenMP
//! interposer (`libkeel_omp.so`, `KEEL_OMP_REPORT=file`) appends to its
//! report file when a process exits, and what `keel omp report` reads
//! back. Both go through these types, so the format is declared once; its
//! name and version are [`FORMAT`] and [`VERSION`], and a reader rejects a
//! line of another format or version instead of misreading it.
//!
//! A line: `{"format":"keel-omp-report","version":1,"program":…,"pid":…,
//! "taken":…,"forwarded":…,"loops":[{"object":…,"offset":…,"name":…,
//! "instances":…,"total_time":…,"mean_lib_percent":…,…}]}` — each loop's
//! fields after `offset` are its [`LoopReport`].

use serde::{Deserialize, Serialize};

use super::LoopReport;

/// The `format` field of every line: what a reader checks first.
pub const FORMAT: &str = "keel-omp-report";

/// The version of the line's layout; a change a reader of the previous
/// version would misread raises it.
pub const VERSION: u32 = 1;

/// One process's report line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcessReport {
    /// [`FORMAT`] in lines this crate writes.
    pub format: String,
    /// [`VERSION`] in lines this crate writes.
    pub version: u32,
    /// The program's executable.
    pub program: String,
    /// Its process id.
    pub pid: u32,
    /// Loop instances Keel took.
    pub taken: u64,
    /// Loop instances Keel forwarded to the OpenMP runtime after deciding.
    pub forwarded: u64,
    /// The loops Keel took, the one that took the most time first.
    pub loops: Vec<SiteReport>,
}

/// One loop of a process's report: where its call site is, and what its
/// recorded instances measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SiteReport {
    /// The loaded object (executable or library) holding the call site.
    pub object: Option<String>,
    /// The call site's offset in `object`.
    pub offset: Option<u64>,
    /// The symbol holding the call site, when a reader found it (the
    /// interposer writes none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    /// What the loop's recorded instances measured.
    #[serde(flatten)]
    pub report: LoopReport,
}

impl ProcessReport {
    /// A report of the current [`FORMAT`] and [`VERSION`].
    pub fn new(
        program: String,
        pid: u32,
        taken: u64,
        forwarded: u64,
        loops: Vec<SiteReport>,
    ) -> Self {
        ProcessReport {
            format: FORMAT.to_string(),
            version: VERSION,
            program,
            pid,
            taken,
            forwarded,
            loops,
        }
    }

    /// The report as one line of JSON, newline included.
    ///
    /// ```
    /// use keel::loops::process_report::{ProcessReport, FORMAT, VERSION};
    /// let report = ProcessReport::new("/bin/solver".into(), 42, 10, 0, Vec::new());
    /// let line = report.to_line().unwrap();
    /// assert!(line.ends_with(b"\n"));
    /// let back = ProcessReport::from_line(std::str::from_utf8(&line).unwrap()).unwrap();
    /// assert_eq!(back, report);
    /// assert!((back.format.as_str(), back.version) == (FORMAT, VERSION));
    /// ```
    pub fn to_line(&self) -> serde_json::Result<Vec<u8>> {
        let mut line = serde_json::to_vec(self)?;
        line.push(b'\n');
        Ok(line)
    }

    /// Reads one line, which must be of this crate's [`FORMAT`] and
    /// [`VERSION`].
    ///
    /// ```
    /// use keel::loops::process_report::{LineError, ProcessReport};
    /// let newer = r#"{"format":"keel-omp-report","version":2,"program":"p","pid":1,"taken":0,"forwarded":0,"loops":[]}"#;
    /// assert!(matches!(
    ///     ProcessReport::from_line(newer),
    ///     Err(LineError::Version { version: 2, .. })
    /// ));
    /// assert!(matches!(ProcessReport::from_line("{}"), Err(LineError::Json(_))));
    /// ```
    pub fn from_line(line: &str) -> Result<Self, LineError> {
        let report: ProcessReport = serde_json::from_str(line).map_err(LineError::Json)?;
        if report.format != FORMAT || report.version != VERSION {
            return Err(LineError::Version {
                format: report.format,
                version: report.version,
            });
        }
        Ok(report)
    }
}

/// Why a line is not a report this crate reads.
#[derive(Debug)]
pub enum LineError {
    /// Not JSON of a report's shape.
    Json(serde_json::Error),
    /// A report of another format or version.
    Version {
        /// The line's `format`.
        format: String,
        /// The line's `version`.
        version: u32,
    },
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LineError::Json(e) => write!(f, "not a keel-omp loop report ({e})"),
            LineError::Version { format, version } => write!(
                f,
                "format {format:?} version {version}; this keel reads {FORMAT:?} version {VERSION}"
            ),
        }
    }
}

impl std::error::Error for LineError {}
