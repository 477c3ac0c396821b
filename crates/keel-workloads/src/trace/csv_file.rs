//! The CSV task and PU tables (see the module docs of [`super`]).

use csv::{ErrorKind, ReaderBuilder, StringRecord};

use super::{
    parse_bool, parse_pu, valid_load, valid_speed, PuFields, Sourced, TaskFields, BOOL_EXPECTED,
    ID_EXPECTED, LOAD_EXPECTED, PU_EXPECTED, SPEED_EXPECTED,
};
use crate::error::TraceError;

const TASK_COLUMNS: [&str; 5] = ["load", "migratable", "current_pu", "id", "task"];
const PU_COLUMNS: [&str; 3] = ["background", "speed", "available"];

/// An open CSV table: its header, where each known column sits, and a
/// reader positioned at the first row.
struct Table<'a> {
    name: &'a str,
    bytes: &'a [u8],
    reader: csv::Reader<&'a [u8]>,
    columns: Vec<Option<usize>>,
    header: Vec<String>,
}

impl<'a> Table<'a> {
    fn open(name: &'a str, bytes: &'a [u8], valid: &[&'static str]) -> Result<Self, TraceError> {
        // Cells are trimmed where they are parsed (`cell`): the csv crate's
        // own trimming builds a new record for every row.
        let mut reader = ReaderBuilder::new().comment(Some(b'#')).from_reader(bytes);
        let header: Vec<String> = reader
            .headers()
            .map_err(|e| csv_error(name, bytes, e))?
            .iter()
            .map(|h| h.trim().to_ascii_lowercase())
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
        Ok(Table {
            name,
            bytes,
            reader,
            columns,
            header,
        })
    }

    /// Calls `row` on every record, in file order, with the line it starts
    /// on; one record buffer serves every row. Returns the number of rows
    /// and the bytes examined to number their lines.
    fn rows(
        &mut self,
        mut row: impl FnMut(u64, &StringRecord) -> Result<(), TraceError>,
    ) -> Result<(usize, usize), TraceError> {
        // Records come in file order, so one cursor counts every newline
        // once: reading stays linear in the file's size.
        let mut lines = LineCursor::new(self.bytes);
        let mut record = StringRecord::new();
        let mut count = 0;
        loop {
            match self.reader.read_record(&mut record) {
                Ok(false) => break,
                Ok(true) => {}
                Err(e) => return Err(csv_error(self.name, self.bytes, e)),
            }
            let line = record.position().map_or(0, |p| lines.line_of(p.byte()));
            row(line, &record)?;
            count += 1;
        }
        Ok((count, lines.scanned))
    }
}

/// One cell of a row, parsed; a typed error naming the line and column.
fn cell<T>(
    name: &str,
    (line, record): (u64, &StringRecord),
    col: usize,
    field: &'static str,
    parse: &impl Fn(&str) -> Option<T>,
    expected: &'static str,
) -> Result<T, TraceError> {
    let text = record.get(col).unwrap_or("").trim();
    parse(text).ok_or_else(|| TraceError::BadValue {
        at: format!("{name}:{line}, column {}", col + 1),
        field: field.to_string(),
        value: text.to_string(),
        expected,
    })
}

/// A column being filled: where it sits and its values so far.
struct Column<T> {
    col: usize,
    values: Vec<T>,
}

impl<T> Column<T> {
    fn new(col: Option<usize>) -> Option<Self> {
        col.map(|col| Column {
            col,
            values: Vec::new(),
        })
    }

    fn push(
        column: &mut Option<Self>,
        name: &str,
        row: (u64, &StringRecord),
        field: &'static str,
        parse: &impl Fn(&str) -> Option<T>,
        expected: &'static str,
    ) -> Result<(), TraceError> {
        if let Some(c) = column {
            c.values
                .push(cell(name, row, c.col, field, parse, expected)?);
        }
        Ok(())
    }

    fn values(column: Option<Self>) -> Option<Vec<T>> {
        column.map(|c| c.values)
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

/// Parses a CSV task table; values are checked row by row, so the first
/// bad cell in file order is the one reported.
pub(super) fn parse_tasks(name: &str, bytes: &[u8]) -> Result<TaskFields, TraceError> {
    parse_tasks_counted(name, bytes).map(|(fields, _)| fields)
}

/// [`parse_tasks`], also returning the bytes examined to number the lines.
fn parse_tasks_counted(name: &str, bytes: &[u8]) -> Result<(TaskFields, usize), TraceError> {
    let mut table = Table::open(name, bytes, &TASK_COLUMNS)?;
    let Some(load_col) = table.columns[0] else {
        return Err(TraceError::MissingColumn {
            path: name.to_string(),
            column: "load",
            found: table.header,
        });
    };
    let id_col = match (table.columns[3], table.columns[4]) {
        (Some(_), Some(_)) => {
            return Err(TraceError::TwoIdColumns {
                path: name.to_string(),
            })
        }
        (id, task) => id.or(task),
    };
    let mut loads = Column::new(Some(load_col));
    let mut migratable = Column::new(table.columns[1]);
    let mut current = Column::new(table.columns[2]);
    let mut ids = Column::new(id_col);
    let id = |text: &str| (!text.is_empty()).then(|| text.to_string());
    let mut lines = Vec::new();
    let load = number(valid_load);
    let (_, scanned) = table.rows(|line, record| {
        let row = (line, record);
        Column::push(&mut loads, name, row, "load", &load, LOAD_EXPECTED)?;
        Column::push(
            &mut migratable,
            name,
            row,
            "migratable",
            &parse_bool,
            BOOL_EXPECTED,
        )?;
        Column::push(
            &mut current,
            name,
            row,
            "current_pu",
            &parse_pu,
            PU_EXPECTED,
        )?;
        Column::push(&mut ids, name, row, "id", &id, ID_EXPECTED)?;
        lines.push(line);
        Ok(())
    })?;
    let fields = TaskFields {
        loads: Column::values(loads).unwrap_or_default(),
        migratable: Column::values(migratable),
        current: Column::values(current),
        ids: Column::values(ids),
        lines: Some(lines),
    };
    Ok((fields, scanned))
}

/// Parses a CSV PU table; each row is a PU.
pub(super) fn parse_pus(name: &str, bytes: &[u8]) -> Result<PuFields, TraceError> {
    let mut table = Table::open(name, bytes, &PU_COLUMNS)?;
    let mut background = Column::new(table.columns[0]);
    let mut speed = Column::new(table.columns[1]);
    let mut available = Column::new(table.columns[2]);
    let (load, fast) = (number(valid_load), number(valid_speed));
    let (rows, _) = table.rows(|line, record| {
        let row = (line, record);
        Column::push(
            &mut background,
            name,
            row,
            "background",
            &load,
            LOAD_EXPECTED,
        )?;
        Column::push(&mut speed, name, row, "speed", &fast, SPEED_EXPECTED)?;
        Column::push(
            &mut available,
            name,
            row,
            "available",
            &parse_bool,
            BOOL_EXPECTED,
        )
    })?;
    let sourced = |values| Sourced {
        values,
        source: name.to_string(),
    };
    Ok(PuFields {
        background: Column::values(background).map(sourced),
        speed: Column::values(speed).map(sourced),
        available: Column::values(available).map(|values| Sourced {
            values,
            source: name.to_string(),
        }),
        counts: vec![(format!("the rows of {name}"), rows)],
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
        let (fields, scanned) = parse_tasks_counted("t.csv", text.as_bytes()).unwrap();
        let lines = fields.lines.unwrap();
        assert_eq!(lines.len(), rows);
        assert!(
            scanned <= text.len(),
            "{scanned} bytes examined for a file of {}",
            text.len()
        );
        // The last row's line, counted independently.
        let last_line = text.lines().count() as u64;
        assert_eq!(*lines.last().unwrap(), last_line);
        let first = lines[0];
        assert_eq!(
            first, 5,
            "header on line 2, then a comment and a blank line"
        );
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
