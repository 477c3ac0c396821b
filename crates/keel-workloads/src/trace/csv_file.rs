//! The CSV task and PU tables (see the module docs of [`super`]).

use csv::{ErrorKind, ReaderBuilder, StringRecord, Trim};

use super::{
    parse_bool, parse_pu, valid_load, valid_speed, PuFields, Sourced, TaskFields, BOOL_EXPECTED,
    LOAD_EXPECTED, PU_EXPECTED, SPEED_EXPECTED,
};
use crate::error::TraceError;

const TASK_COLUMNS: [&str; 3] = ["load", "migratable", "current_pu"];
const PU_COLUMNS: [&str; 3] = ["background", "speed", "available"];

/// A CSV table: its rows, the line each starts on, and where each known
/// column sits.
struct Table {
    name: String,
    rows: Vec<(u64, StringRecord)>,
    columns: Vec<Option<usize>>,
    header: Vec<String>,
    /// Bytes examined to number the rows' lines.
    line_bytes_scanned: usize,
}

impl Table {
    fn read(name: &str, bytes: &[u8], valid: &[&'static str]) -> Result<Table, TraceError> {
        let mut reader = ReaderBuilder::new()
            .trim(Trim::All)
            .comment(Some(b'#'))
            .from_reader(bytes);
        let header: Vec<String> = reader
            .headers()
            .map_err(|e| csv_error(name, bytes, e))?
            .iter()
            .map(str::to_ascii_lowercase)
            .collect();
        if header.iter().all(String::is_empty) {
            return Err(TraceError::Empty {
                path: name.to_string(),
                valid: valid.to_vec(),
            });
        }
        for (i, column) in header.iter().enumerate() {
            if !valid.contains(&column.as_str()) {
                return Err(TraceError::UnknownColumn {
                    path: name.to_string(),
                    column: column.clone(),
                    valid: valid.to_vec(),
                });
            }
            if header[..i].contains(column) {
                return Err(TraceError::DuplicateColumn {
                    path: name.to_string(),
                    column: column.clone(),
                });
            }
        }
        let columns = valid
            .iter()
            .map(|v| header.iter().position(|h| h == v))
            .collect();
        let mut rows = Vec::new();
        // Records come in file order, so one cursor counts every newline
        // once: reading stays linear in the file's size.
        let mut lines = LineCursor::new(bytes);
        for record in reader.records() {
            let record = record.map_err(|e| csv_error(name, bytes, e))?;
            let line = record.position().map_or(0, |p| lines.line_of(p.byte()));
            rows.push((line, record));
        }
        Ok(Table {
            name: name.to_string(),
            rows,
            columns,
            header,
            line_bytes_scanned: lines.scanned,
        })
    }

    /// Parses column `valid[index]` of every row, if the header has it.
    fn column<T>(
        &self,
        index: usize,
        field: &'static str,
        parse: impl Fn(&str) -> Option<T>,
        expected: &'static str,
    ) -> Result<Option<Vec<T>>, TraceError> {
        let Some(col) = self.columns[index] else {
            return Ok(None);
        };
        self.rows
            .iter()
            .map(|(line, record)| {
                let text = record.get(col).unwrap_or("");
                parse(text).ok_or_else(|| TraceError::BadValue {
                    at: format!("{}:{line}, column {}", self.name, col + 1),
                    field: field.to_string(),
                    value: text.to_string(),
                    expected,
                })
            })
            .collect::<Result<Vec<T>, _>>()
            .map(Some)
    }
}

fn number(valid: fn(f64) -> bool) -> impl Fn(&str) -> Option<f64> {
    move |text| text.parse::<f64>().ok().filter(|&v| valid(v))
}

/// Finds the line on which the record that the csv crate places at a byte
/// offset starts. The crate's own line numbers skip blank lines and
/// mishandle `\r\n`, and its offset is where it *started looking* for the
/// record: just after the previous one, before any blank or comment lines.
/// So step over those first, then count newlines.
///
/// The cursor remembers how far it has counted, so asking for
/// non-decreasing offsets (as records arrive) scans each byte once; an
/// earlier offset restarts the count from the file's start.
struct LineCursor<'a> {
    bytes: &'a [u8],
    /// Bytes before `at` have been counted.
    at: usize,
    /// 1 + the newlines in `bytes[..at]`.
    line: u64,
    /// How many bytes the newline count has examined in all; a test checks
    /// that reading a table examines each byte at most once.
    scanned: usize,
}

impl<'a> LineCursor<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        LineCursor {
            bytes,
            at: 0,
            line: 1,
            scanned: 0,
        }
    }

    fn line_of(&mut self, offset: u64) -> u64 {
        let bytes = self.bytes;
        let mut at = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(bytes.len());
        loop {
            match bytes.get(at) {
                Some(b'\r' | b'\n') => at += 1,
                Some(b'#') => {
                    at = bytes[at..]
                        .iter()
                        .position(|&b| b == b'\n')
                        .map_or(bytes.len(), |n| at + n + 1);
                }
                _ => break,
            }
        }
        if at < self.at {
            self.at = 0;
            self.line = 1;
        }
        self.line += bytes[self.at..at].iter().filter(|&&b| b == b'\n').count() as u64;
        self.scanned += at - self.at;
        self.at = at;
        self.line
    }
}

fn csv_error(name: &str, bytes: &[u8], error: csv::Error) -> TraceError {
    let line = error
        .position()
        .map(|p| LineCursor::new(bytes).line_of(p.byte()));
    let at = match line {
        Some(line) => format!("{name}:{line}"),
        None => name.to_string(),
    };
    let message = match error.kind() {
        ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("this row has {len} fields but the header has {expected_len}"),
        ErrorKind::Utf8 { .. } => "the file is not valid UTF-8".to_string(),
        _ => error.to_string(),
    };
    TraceError::Syntax { at, message }
}

/// Parses a CSV task table.
pub(super) fn parse_tasks(name: &str, bytes: &[u8]) -> Result<TaskFields, TraceError> {
    let table = Table::read(name, bytes, &TASK_COLUMNS)?;
    let loads = table
        .column(0, "load", number(valid_load), LOAD_EXPECTED)?
        .ok_or_else(|| TraceError::MissingColumn {
            path: name.to_string(),
            column: "load",
            found: table.header.clone(),
        })?;
    Ok(TaskFields {
        loads,
        migratable: table.column(1, "migratable", parse_bool, BOOL_EXPECTED)?,
        current: table.column(2, "current_pu", parse_pu, PU_EXPECTED)?,
        lines: Some(table.rows.iter().map(|(line, _)| *line).collect()),
    })
}

/// Parses a CSV PU table; each row is a PU.
pub(super) fn parse_pus(name: &str, bytes: &[u8]) -> Result<PuFields, TraceError> {
    let table = Table::read(name, bytes, &PU_COLUMNS)?;
    let sourced = |values| Sourced {
        values,
        source: name.to_string(),
    };
    Ok(PuFields {
        background: table
            .column(0, "background", number(valid_load), LOAD_EXPECTED)?
            .map(sourced),
        speed: table
            .column(1, "speed", number(valid_speed), SPEED_EXPECTED)?
            .map(sourced),
        available: table
            .column(2, "available", parse_bool, BOOL_EXPECTED)?
            .map(|values| Sourced {
                values,
                source: name.to_string(),
            }),
        counts: vec![(format!("the rows of {name}"), table.rows.len())],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Numbering the rows must stay linear in the file's size: a count
    /// restarted from the file's start for each row (quadratic, hours for a
    /// few million rows) examines far more bytes than the file holds.
    #[test]
    fn numbering_rows_examines_each_byte_at_most_once() {
        let mut text = String::from("# a trace\nload,current_pu\n");
        let rows = 20_000;
        for i in 0..rows {
            if i % 7 == 0 {
                text.push_str("# note\n\n");
            }
            text.push_str(&format!("{}.5,{}\r\n", i % 13, i % 4));
        }
        let table = Table::read("t.csv", text.as_bytes(), &TASK_COLUMNS).unwrap();
        assert_eq!(table.rows.len(), rows);
        assert!(
            table.line_bytes_scanned <= text.len(),
            "{} bytes examined for a file of {}",
            table.line_bytes_scanned,
            text.len()
        );
        // The last row's line, counted independently.
        let last_line = text.lines().count() as u64;
        assert_eq!(table.rows.last().unwrap().0, last_line);
        let first = table.rows.first().unwrap().0;
        assert_eq!(first, 5, "header on line 2, then a comment and a blank line");
    }

    #[test]
    fn a_bad_value_deep_in_a_big_file_names_its_line() {
        let mut text = String::from("load\n");
        for _ in 0..50_000 {
            text.push_str("1\n\n");
        }
        text.push_str("-1\n");
        let err = parse_tasks("t.csv", text.as_bytes()).unwrap_err();
        assert!(
            err.to_string().starts_with("t.csv:100002, column 1"),
            "{err}"
        );
    }

    #[test]
    fn an_earlier_offset_restarts_the_count() {
        let mut cursor = LineCursor::new(b"a\nb\nc\n");
        assert_eq!(cursor.line_of(4), 3);
        assert_eq!(cursor.line_of(2), 2);
        assert_eq!(cursor.line_of(0), 1);
    }
}
