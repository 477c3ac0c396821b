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

use std::path::Path;

/// The command word that stands for the synthetic BSP job binary.
pub const BSP_COMMAND: &str = "@bsp";

/// The keys a job line accepts before `--`.
pub const JOB_KEYS: [&str; 2] = ["pes", "arrival"];

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
    /// of an error carries no line number.
    pub fn parse_line(line: &str) -> Result<JobSpec, String> {
        let tokens = tokenize(line)?;
        let mut it = tokens.into_iter();
        let name = it
            .next()
            .ok_or("expected `NAME RANKS [KEY=VALUE ...] -- COMMAND [ARG ...]`")?;
        if name == "--"
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(format!(
                "job name `{name}` is invalid: use letters, digits, `-`, `_` and `.`"
            ));
        }
        let ranks_text = it.next().ok_or(format!(
            "job `{name}`: expected the number of ranks after the name"
        ))?;
        let ranks: usize = ranks_text.parse().ok().filter(|&r| r >= 1).ok_or(format!(
            "job `{name}`: ranks `{ranks_text}` is not an integer >= 1"
        ))?;
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
                    let pes = value
                        .split(',')
                        .map(|p| p.trim().parse::<usize>())
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|_| format!("job `{name}`: pes `{value}` is not a comma-separated list of PE numbers"))?;
                    if pes.len() != ranks {
                        return Err(format!(
                            "job `{name}`: pes names {} PEs for {ranks} ranks (need one per rank)",
                            pes.len()
                        ));
                    }
                    let mut sorted = pes.clone();
                    sorted.sort_unstable();
                    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
                        return Err(format!("job `{name}`: PE {} is named twice in pes", w[0]));
                    }
                    job.pes = Some(pes);
                }
                "arrival" => {
                    job.arrival = value
                        .parse::<f64>()
                        .ok()
                        .filter(|a| a.is_finite() && *a >= 0.0)
                        .ok_or(format!(
                            "job `{name}`: arrival `{value}` is not a number of seconds >= 0"
                        ))?;
                }
                other => {
                    return Err(format!(
                        "job `{name}`: unknown key `{other}`; valid keys: {}",
                        JOB_KEYS.join(", ")
                    ))
                }
            }
        }
        if !seen_dashes {
            return Err(format!("job `{name}`: expected `--` and then the command"));
        }
        job.command = it.collect();
        if job.command.is_empty() {
            return Err(format!("job `{name}`: no command after `--`"));
        }
        Ok(job)
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
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let err = |message: String| JobFileError::Line {
            file: file.to_string(),
            line,
            message,
        };
        if tokenize(raw).map_err(&err)?.is_empty() {
            continue;
        }
        let job = JobSpec::parse_line(raw).map_err(&err)?;
        if jobs.iter().any(|j| j.name == job.name) {
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

/// Reads and parses a job file.
pub fn read_jobs(path: &Path) -> Result<Vec<JobSpec>, JobFileError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| JobFileError::Read {
        file: file.clone(),
        source,
    })?;
    parse_jobs(&text, &file)
}

/// Splits a line into words: whitespace separates, quotes group, `#`
/// outside quotes at the start of a word ends the line.
fn tokenize(line: &str) -> Result<Vec<String>, String> {
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
