//! Job files: what to run, how wide, where, and when.
//!
//! One job per line; `#` starts a comment (outside quotes); blank lines are
//! skipped:
//!
//! ```text
//! # NAME   RANKS [KEY=VALUE ...] -- COMMAND [ARG ...]
//! fine-0   2                     -- @bsp --iterations 500 --granularity-ms 6
//! filler-1 1     pes=1 arrival=0.5 -- /usr/bin/stress-ng --cpu 1 --timeout 3
//! ```
//!
//! - `NAME`: letters, digits, `-`, `_`, `.`; unique in the file.
//! - `RANKS`: processes of the job, at least 1 (one per PE).
//! - `pes=A,B,...`: explicit placement, one distinct PE per rank (default:
//!   the matrix's first fit).
//! - `arrival=SECONDS`: submission time after the run starts (default 0).
//! - `COMMAND`: started once per rank; `@bsp` stands for the synthetic BSP
//!   job of this crate (`keel-bsp-job`). Arguments may be quoted with `'`
//!   or `"` (inside `"`, `\"` and `\\` escape).
//!
//! Every error names the file and the line.
//!
//! Job lines also arrive on the control socket from any local user, so
//! every field is bounded here (the `MAX_*` constants) and a line over a
//! limit is refused with a message naming the limit, before anything is
//! allocated for the job; whether a job fits a particular machine (ranks
//! and PEs against its PE count) is [`JobSpec::check_fits`].
//!
//! Parsing a job file's text:
//!
//! ```
//! use keel_cosched::parse_jobs;
//! let jobs = parse_jobs("# two jobs\nfine-0 2 -- @bsp --iterations 500\nfiller 1 arrival=0.5 -- /bin/true\n", "jobs").unwrap();
//! assert_eq!((jobs[0].name.as_str(), jobs[0].ranks), ("fine-0", 2));
//! assert_eq!(jobs[1].arrival, 0.5);
//! assert_eq!(jobs[1].command, vec!["/bin/true"]);
//! ```

use std::collections::HashSet;
use std::io::Read;
use std::path::Path;

/// The command word that stands for the synthetic BSP job binary.
pub const BSP_COMMAND: &str = "@bsp";

/// The keys a job line accepts before `--`.
pub const JOB_KEYS: [&str; 2] = ["pes", "arrival"];

/// Longest job name, bytes.
pub const MAX_NAME_BYTES: usize = 64;
/// Most ranks a job line may ask for, whatever the machine; a machine
/// further refuses more ranks than it has PEs ([`JobSpec::check_fits`]).
pub const MAX_RANKS: usize = 4096;
/// Latest arrival, seconds after the start of the run (about 11.6 days):
/// far enough for any experiment, near enough that the arrival instant
/// cannot overflow the clock.
pub const MAX_ARRIVAL_SECS: f64 = 1_000_000.0;
/// Most words after `--` (the program and its arguments).
pub const MAX_ARGS: usize = 256;
/// Longest program name or argument, bytes.
pub const MAX_ARG_BYTES: usize = 4096;
/// Longest job line, bytes.
pub const MAX_LINE_BYTES: usize = 64 * 1024;
/// Largest job file, bytes.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Why a job line was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JobLineError {
    /// A field is over one of this module's limits.
    #[error("{field} is {found}, over the limit of {limit}")]
    OverLimit {
        /// What is too large, with the job's name when known.
        field: String,
        /// How large it is.
        found: String,
        /// The limit, with its unit and the constant that sets it.
        limit: String,
    },
    /// The job has more ranks than the machine has PEs.
    #[error("job `{job}` needs {ranks} PEs but this machine has only {pes} (one rank per PE)")]
    TooWide {
        /// The job's name.
        job: String,
        /// Its ranks.
        ranks: usize,
        /// The machine's PEs.
        pes: usize,
    },
    /// The line is malformed; the message says what is expected.
    #[error("{0}")]
    Malformed(String),
}

impl From<String> for JobLineError {
    fn from(message: String) -> JobLineError {
        JobLineError::Malformed(message)
    }
}

impl From<&str> for JobLineError {
    fn from(message: &str) -> JobLineError {
        JobLineError::Malformed(message.to_string())
    }
}

fn over(field: String, found: impl ToString, limit: String) -> JobLineError {
    JobLineError::OverLimit {
        field,
        found: found.to_string(),
        limit,
    }
}

/// One job of a job file.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct JobSpec {
    /// Unique name.
    pub name: String,
    /// Number of processes (ranks).
    pub ranks: usize,
    /// Explicit PE per rank, if given.
    pub pes: Option<Vec<usize>>,
    /// Seconds after the start of the run at which the job is submitted.
    pub arrival: f64,
    /// Program and arguments, started once per rank; the program may be
    /// [`BSP_COMMAND`].
    pub command: Vec<String>,
}

impl JobSpec {
    /// A job of `ranks` processes running `command`, arriving at once,
    /// placed by the matrix.
    pub fn new(name: &str, ranks: usize, command: Vec<String>) -> JobSpec {
        JobSpec {
            name: name.to_string(),
            ranks,
            pes: None,
            arrival: 0.0,
            command,
        }
    }

    /// The same job with an explicit placement.
    pub fn on_pes(mut self, pes: Vec<usize>) -> JobSpec {
        self.pes = Some(pes);
        self
    }

    /// Parses one job line (no comment-only or blank lines); the message
    /// of an error carries no line number. Every field is checked against
    /// this module's limits before anything is allocated for it.
    pub fn parse_line(line: &str) -> Result<JobSpec, JobLineError> {
        if line.len() > MAX_LINE_BYTES {
            return Err(over(
                "the job line".into(),
                format!("{} bytes", line.len()),
                format!("{MAX_LINE_BYTES} bytes (MAX_LINE_BYTES)"),
            ));
        }
        let tokens = tokenize(line)?;
        let mut it = tokens.into_iter();
        let name = it
            .next()
            .ok_or("expected `NAME RANKS [KEY=VALUE ...] -- COMMAND [ARG ...]`")?;
        check_name(&name)?;
        let ranks_text = it.next().ok_or(format!(
            "job `{name}`: expected the number of ranks after the name"
        ))?;
        let digits = !ranks_text.is_empty() && ranks_text.bytes().all(|b| b.is_ascii_digit());
        let ranks = match ranks_text.parse::<usize>() {
            Ok(r) if (1..=MAX_RANKS).contains(&r) => r,
            // All digits and not zero: an integer, just too large.
            _ if digits && ranks_text.bytes().any(|b| b != b'0') => {
                let found = if ranks_text.len() > 24 {
                    format!("({} digits)", ranks_text.len())
                } else {
                    ranks_text
                };
                return Err(over(
                    format!("job `{name}`: ranks"),
                    found,
                    format!("{MAX_RANKS} (MAX_RANKS)"),
                ));
            }
            _ => {
                return Err(
                    format!("job `{name}`: ranks `{ranks_text}` is not an integer >= 1").into(),
                )
            }
        };
        let mut job = JobSpec::new(&name, ranks, Vec::new());
        let mut seen_dashes = false;
        for tok in it.by_ref() {
            if tok == "--" {
                seen_dashes = true;
                break;
            }
            let (key, value) = tok.split_once('=').ok_or(format!(
                "job `{name}`: expected KEY=VALUE or `--` before the command, found `{tok}`"
            ))?;
            match key {
                "pes" => {
                    // Counted before collecting, so a long list costs nothing.
                    let listed = value.split(',').count();
                    if listed != ranks {
                        return Err(format!(
                            "job `{name}`: pes names {listed} PEs for {ranks} ranks (need one per rank)"
                        )
                        .into());
                    }
                    let pes = value
                        .split(',')
                        .map(|p| p.trim().parse::<usize>())
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|_| format!("job `{name}`: pes `{value}` is not a comma-separated list of PE numbers"))?;
                    job.pes = Some(pes);
                }
                "arrival" => {
                    let arrival = value
                        .parse::<f64>()
                        .ok()
                        .filter(|a| a.is_finite() && *a >= 0.0)
                        .ok_or(format!(
                            "job `{name}`: arrival `{value}` is not a number of seconds >= 0"
                        ))?;
                    job.arrival = arrival;
                }
                other => {
                    return Err(format!(
                        "job `{name}`: unknown key `{other}`; valid keys: {}",
                        JOB_KEYS.join(", ")
                    )
                    .into())
                }
            }
        }
        if !seen_dashes {
            return Err(format!("job `{name}`: expected `--` and then the command").into());
        }
        job.command = it.collect();
        if job.command.is_empty() {
            return Err(format!("job `{name}`: no command after `--`").into());
        }
        job.validate()?;
        Ok(job)
    }

    /// Checks every field against this module's limits: what
    /// [`JobSpec::parse_line`] guarantees, for jobs built in code too.
    pub fn validate(&self) -> Result<(), JobLineError> {
        check_name(&self.name)?;
        let name = &self.name;
        if self.ranks == 0 {
            return Err(format!("job `{name}`: ranks 0 is not an integer >= 1").into());
        }
        if self.ranks > MAX_RANKS {
            return Err(over(
                format!("job `{name}`: ranks"),
                self.ranks,
                format!("{MAX_RANKS} (MAX_RANKS)"),
            ));
        }
        if let Some(pes) = &self.pes {
            if pes.len() != self.ranks {
                return Err(format!(
                    "job `{name}`: pes names {} PEs for {} ranks (need one per rank)",
                    pes.len(),
                    self.ranks
                )
                .into());
            }
            let mut seen = HashSet::with_capacity(pes.len());
            if let Some(pe) = pes.iter().find(|&&p| !seen.insert(p)) {
                return Err(format!("job `{name}`: PE {pe} is named twice in pes").into());
            }
        }
        if !(self.arrival.is_finite() && self.arrival >= 0.0) {
            return Err(format!(
                "job `{name}`: arrival `{}` is not a number of seconds >= 0",
                self.arrival
            )
            .into());
        }
        if self.arrival > MAX_ARRIVAL_SECS {
            return Err(over(
                format!("job `{name}`: arrival"),
                if self.arrival < 1e12 {
                    format!("{} s", self.arrival)
                } else {
                    format!("{:e} s", self.arrival)
                },
                format!("{MAX_ARRIVAL_SECS} s (MAX_ARRIVAL_SECS)"),
            ));
        }
        if self.command.is_empty() {
            return Err(format!("job `{name}`: no command after `--`").into());
        }
        if self.command.len() > MAX_ARGS {
            return Err(over(
                format!("job `{name}`: the number of command words"),
                self.command.len(),
                format!("{MAX_ARGS} (MAX_ARGS)"),
            ));
        }
        for (i, arg) in self.command.iter().enumerate() {
            if arg.len() > MAX_ARG_BYTES {
                return Err(over(
                    format!("job `{name}`: command word {i}"),
                    format!("{} bytes", arg.len()),
                    format!("{MAX_ARG_BYTES} bytes (MAX_ARG_BYTES)"),
                ));
            }
            if arg.contains('\0') {
                return Err(format!(
                    "job `{name}`: command word {i} contains a NUL byte, which no program can receive"
                )
                .into());
            }
        }
        Ok(())
    }

    /// Whether the job fits a machine of `pes` PEs: one PE per rank, and
    /// every explicit PE in range. Checked before the machine allocates
    /// anything for the job.
    pub fn check_fits(&self, pes: usize) -> Result<(), JobLineError> {
        let name = &self.name;
        if self.ranks > pes {
            return Err(JobLineError::TooWide {
                job: name.clone(),
                ranks: self.ranks,
                pes,
            });
        }
        if let Some(pe) = self.pes.iter().flatten().find(|&&p| p >= pes) {
            return Err(format!(
                "job `{name}`: PE {pe} does not exist (this machine has PEs 0..{pes})"
            )
            .into());
        }
        Ok(())
    }

    /// The job as one line of a job file (quoting arguments when needed).
    pub fn to_line(&self) -> String {
        let mut out = format!("{} {}", self.name, self.ranks);
        if let Some(pes) = &self.pes {
            let list: Vec<String> = pes.iter().map(|p| p.to_string()).collect();
            out.push_str(&format!(" pes={}", list.join(",")));
        }
        if self.arrival > 0.0 {
            out.push_str(&format!(" arrival={}", self.arrival));
        }
        out.push_str(" --");
        for arg in &self.command {
            out.push(' ');
            if !arg.is_empty()
                && arg
                    .chars()
                    .all(|c| !c.is_whitespace() && !"'\"\\#".contains(c))
            {
                out.push_str(arg);
            } else {
                out.push('"');
                for c in arg.chars() {
                    if c == '"' || c == '\\' {
                        out.push('\\');
                    }
                    out.push(c);
                }
                out.push('"');
            }
        }
        out
    }
}

/// A job file that does not read or parse.
#[derive(Debug, thiserror::Error)]
pub enum JobFileError {
    /// A line is malformed.
    #[error("{file}:{line}: {message}")]
    Line {
        /// The file's name (or `<input>`).
        file: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong and what is expected.
        message: String,
    },
    /// The file could not be read.
    #[error("cannot read job file {file}: {source}")]
    Read {
        /// The file.
        file: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file holds no job.
    #[error("{file}: no jobs (expected lines `NAME RANKS [KEY=VALUE ...] -- COMMAND [ARG ...]`)")]
    Empty {
        /// The file.
        file: String,
    },
}

/// Parses a whole job file; `file` names it in errors.
pub fn parse_jobs(text: &str, file: &str) -> Result<Vec<JobSpec>, JobFileError> {
    let mut jobs: Vec<JobSpec> = Vec::new();
    let mut names: HashSet<String> = HashSet::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let err = |message: String| JobFileError::Line {
            file: file.to_string(),
            line,
            message,
        };
        if raw.len() <= MAX_LINE_BYTES && tokenize(raw).map_err(|e| err(e.to_string()))?.is_empty()
        {
            continue;
        }
        let job = JobSpec::parse_line(raw).map_err(|e| err(e.to_string()))?;
        if !names.insert(job.name.clone()) {
            return Err(err(format!("job name `{}` is used twice", job.name)));
        }
        jobs.push(job);
    }
    if jobs.is_empty() {
        return Err(JobFileError::Empty {
            file: file.to_string(),
        });
    }
    Ok(jobs)
}

/// Reads and parses a job file of at most [`MAX_FILE_BYTES`].
pub fn read_jobs(path: &Path) -> Result<Vec<JobSpec>, JobFileError> {
    let file = path.display().to_string();
    let read_err = |source| JobFileError::Read {
        file: file.clone(),
        source,
    };
    let text = read_regular(path).map_err(read_err)?;
    parse_jobs(&text, &file)
}

/// The text of `path` if it is a regular file of at most
/// [`MAX_FILE_BYTES`]: a FIFO, a device or a directory is refused at once
/// (the open does not wait for a FIFO's writer).
fn read_regular(path: &Path) -> std::io::Result<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        // Reads of a regular file never return `WouldBlock`.
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("the file is over the limit of {MAX_FILE_BYTES} bytes (MAX_FILE_BYTES)"),
        ));
    }
    Ok(text)
}

/// A job name: 1 to [`MAX_NAME_BYTES`] letters, digits, `-`, `_`, `.`.
fn check_name(name: &str) -> Result<(), JobLineError> {
    if name.len() > MAX_NAME_BYTES {
        let head: String = name.chars().take(16).collect();
        return Err(over(
            format!("job name `{head}...`"),
            format!("{} bytes", name.len()),
            format!("{MAX_NAME_BYTES} bytes (MAX_NAME_BYTES)"),
        ));
    }
    if name.is_empty()
        || name == "--"
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(
            format!("job name `{name}` is invalid: use letters, digits, `-`, `_` and `.`").into(),
        );
    }
    Ok(())
}

/// Splits a line into words: whitespace separates, quotes group, `#`
/// outside quotes at the start of a word ends the line.
fn tokenize(line: &str) -> Result<Vec<String>, JobLineError> {
    let mut tokens = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.peek() {
            None | Some('#') => return Ok(tokens),
            _ => {}
        }
        let mut word = String::new();
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() {
                break;
            }
            chars.next();
            match c {
                '\'' => loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(ch) => word.push(ch),
                        None => return Err("unterminated ' quote".into()),
                    }
                },
                '"' => loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(ch @ ('"' | '\\')) => word.push(ch),
                            Some(ch) => {
                                word.push('\\');
                                word.push(ch);
                            }
                            None => return Err("unterminated \" quote".into()),
                        },
                        Some(ch) => word.push(ch),
                        None => return Err("unterminated \" quote".into()),
                    }
                },
                _ => word.push(c),
            }
        }
        tokens.push(word);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_file_parses() {
        let text = "# jobs\n\nfine-0 2 -- @bsp --iterations 5   # trailing comment\n\
                    f.1 1 pes=1 arrival=0.5 -- /bin/echo 'a b' \"c \\\"d\\\"\"\n";
        let jobs = parse_jobs(text, "t").unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[0].command, vec!["@bsp", "--iterations", "5"]);
        assert_eq!(jobs[0].pes, None);
        assert_eq!(jobs[1].pes, Some(vec![1]));
        assert_eq!(jobs[1].arrival, 0.5);
        assert_eq!(jobs[1].command, vec!["/bin/echo", "a b", "c \"d\""]);
    }

    #[test]
    fn lines_round_trip() {
        let job =
            JobSpec::new("x", 2, vec!["a b".into(), "c\"".into(), "d".into()]).on_pes(vec![1, 0]);
        assert_eq!(JobSpec::parse_line(&job.to_line()).unwrap(), job);
    }

    fn line_error(text: &str) -> (usize, String) {
        match parse_jobs(text, "jobs.txt").unwrap_err() {
            JobFileError::Line { line, message, .. } => (line, message),
            other => panic!("expected a line error, got {other}"),
        }
    }

    #[test]
    fn malformed_lines_name_their_line() {
        let ok = "a 1 -- true\n";
        for (bad, needle) in [
            ("b zero -- true", "not an integer >= 1"),
            ("b 0 -- true", "not an integer >= 1"),
            ("b 2 pes=0 -- true", "one per rank"),
            ("b 2 pes=1,1 -- true", "named twice"),
            ("b 2 pes=x,1 -- true", "comma-separated"),
            ("b 1 arrival=-1 -- true", "arrival"),
            ("b 1 colour=red -- true", "valid keys: pes, arrival"),
            ("b 1 true", "KEY=VALUE or `--`"),
            ("b 1 --", "no command"),
            ("b 1 pes=0", "expected `--`"),
            ("b", "number of ranks"),
            ("b 1 -- 'oops", "unterminated"),
            ("b$ 1 -- true", "job name"),
            ("a 1 -- true", "used twice"),
        ] {
            let (line, message) = line_error(&format!("{ok}# c\n{bad}\n"));
            assert_eq!(line, 3, "{bad}: {message}");
            assert!(
                message.contains(needle),
                "{bad}: `{message}` lacks `{needle}`"
            );
        }
        let full = parse_jobs("a 1 -- true\nb 1 colour=red -- x\n", "jobs.txt").unwrap_err();
        assert!(full.to_string().starts_with("jobs.txt:2: "), "{full}");
    }

    #[test]
    fn empty_files_and_missing_files_are_errors() {
        assert!(matches!(
            parse_jobs("# only\n\n", "e"),
            Err(JobFileError::Empty { .. })
        ));
        let e = read_jobs(Path::new("/nonexistent/jobs.txt")).unwrap_err();
        assert!(matches!(e, JobFileError::Read { .. }), "{e}");
    }
}
