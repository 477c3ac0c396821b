//! Reading and writing SWF text: the header's `; Key: value` comments,
//! each job line's 18 fields with line- and field-numbered errors, and the
//! [`std::fmt::Display`] forms that write a log back out.

use std::collections::HashMap;
use std::fmt;
use std::io::Read;
use std::path::Path;

use super::{
    HeaderField, SwfError, SwfJob, SwfLog, SwfStatus, FIELDS, FIELD_NAMES, MAX_SWF_BYTES,
    MAX_SWF_JOBS,
};

/// Parses an SWF text (see the module docs for what is accepted).
pub fn parse_swf(text: &str) -> Result<SwfLog, SwfError> {
    parse_at_most(text, MAX_SWF_JOBS)
}

/// [`parse_swf`] with a job limit of `max_jobs`.
pub(super) fn parse_at_most(text: &str, max_jobs: usize) -> Result<SwfLog, SwfError> {
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
        if log.jobs.len() == max_jobs {
            return Err(SwfError::TooManyJobs {
                line,
                limit: max_jobs,
            });
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

/// Reads and parses an SWF file of at most [`MAX_SWF_BYTES`]. Bytes that
/// are not UTF-8 (some archive headers are Latin-1) are replaced, which can
/// only affect comments: job fields must be ASCII numbers anyway.
pub fn read_swf(path: &Path) -> Result<SwfLog, SwfError> {
    read_at_most(path, MAX_SWF_BYTES)
}

/// [`read_swf`] with a size limit of `max_bytes`.
pub(super) fn read_at_most(path: &Path, max_bytes: u64) -> Result<SwfLog, SwfError> {
    let shown = path.display().to_string();
    let io = |source| SwfError::Io {
        path: shown.clone(),
        source,
    };
    // Read at most one byte past the limit: the file's reported size means
    // nothing for pipes and devices.
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .map_err(io)?
        .take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > max_bytes {
        return Err(SwfError::TooLarge {
            path: shown,
            limit: max_bytes,
        });
    }
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
