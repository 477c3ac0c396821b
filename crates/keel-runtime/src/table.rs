//! Plain-text tables: rows of cells laid out in columns as wide as their
//! widest cell, for the reports Keel's tools print (`keel`'s tables,
//! `keel-bench-loops`'). One layout, so that every table pads, aligns and
//! trims alike.
//!
//! Widths count characters, not bytes: headers use `λ`, `÷`, `×`, and a
//! multi-byte character must not widen its column.
//!
//! ```
//! let rows = [
//!     vec!["policy".to_string(), "λ".into()],
//!     vec!["greedy".into(), "1.25".into()],
//!     vec!["rr".into(), "10.5".into()],
//! ];
//! assert_eq!(
//!     keel::table::align(&rows),
//!     ["  policy     λ", "  greedy  1.25", "  rr      10.5"]
//! );
//! ```

/// Where a cell sits in its column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Padded on the right (names, words).
    Left,
    /// Padded on the left (numbers, so that their digits line up).
    Right,
}

/// How a table is laid out: two spaces between columns always, no
/// trailing spaces on a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableStyle {
    /// Put before every line.
    pub indent: &'static str,
    /// The first column's alignment.
    pub first: Align,
    /// Every other column's alignment.
    pub others: Align,
    /// Whether a rule of dashes, each as wide as its column, follows the
    /// first row (the header).
    pub rule_under_header: bool,
}

impl TableStyle {
    /// The `keel` command's tables: indented by two, the first column (a
    /// name) left-aligned, the others (figures) right-aligned, no rule.
    pub const REPORT: TableStyle = TableStyle {
        indent: "  ",
        first: Align::Left,
        others: Align::Right,
        rule_under_header: false,
    };

    /// Every column left-aligned under a rule of dashes, not indented.
    ///
    /// ```
    /// use keel::table::TableStyle;
    /// let rows = [
    ///     vec!["runtime".to_string(), "ns".into()],
    ///     vec!["keel".into(), "12.5".into()],
    /// ];
    /// assert_eq!(
    ///     TableStyle::RULED.lines(&rows),
    ///     ["runtime  ns", "-------  ----", "keel     12.5"]
    /// );
    /// ```
    pub const RULED: TableStyle = TableStyle {
        indent: "",
        first: Align::Left,
        others: Align::Left,
        rule_under_header: true,
    };

    /// The lines of the table of `rows` (the first row, the header, is
    /// laid out like the others). A row may have fewer cells than the
    /// widest: its line simply ends earlier.
    pub fn lines<R: AsRef<[String]>>(&self, rows: &[R]) -> Vec<String> {
        let columns = rows.iter().map(|r| r.as_ref().len()).max().unwrap_or(0);
        let mut widths = vec![0usize; columns];
        for row in rows {
            for (width, cell) in widths.iter_mut().zip(row.as_ref()) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let mut lines: Vec<String> = rows
            .iter()
            .map(|r| self.line(r.as_ref(), &widths))
            .collect();
        if self.rule_under_header && !lines.is_empty() {
            let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
            lines.insert(1, self.line(&rule, &widths));
        }
        lines
    }

    fn line(&self, cells: &[String], widths: &[usize]) -> String {
        let mut line = String::from(self.indent);
        for (i, (cell, &width)) in cells.iter().zip(widths).enumerate() {
            let pad = " ".repeat(width - cell.chars().count());
            if i > 0 {
                line.push_str("  ");
            }
            match if i == 0 { self.first } else { self.others } {
                Align::Left => {
                    line.push_str(cell);
                    line.push_str(&pad);
                }
                Align::Right => {
                    line.push_str(&pad);
                    line.push_str(cell);
                }
            }
        }
        line.truncate(line.trim_end().len());
        line
    }
}

/// The lines of `rows` as the `keel` command prints its tables
/// ([`TableStyle::REPORT`]).
pub fn align<R: AsRef<[String]>>(rows: &[R]) -> Vec<String> {
    TableStyle::REPORT.lines(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(cells: &[&[&str]]) -> Vec<Vec<String>> {
        cells
            .iter()
            .map(|r| r.iter().map(|c| c.to_string()).collect())
            .collect()
    }

    #[test]
    fn columns_are_as_wide_as_their_widest_cell_in_characters() {
        let table = rows(&[
            &["name", "÷ best", "n"],
            &["a", "1.5", "10"],
            &["longer", "", "7"],
        ]);
        assert_eq!(
            align(&table),
            [
                "  name    ÷ best   n",
                "  a          1.5  10",
                "  longer           7"
            ]
        );
    }

    #[test]
    fn short_rows_end_early_and_no_line_ends_in_spaces() {
        let table = rows(&[&["a", "b", "c"], &["long", "x"], &["", "", ""]]);
        assert_eq!(align(&table), ["  a     b  c", "  long  x", ""]);
        let ruled = TableStyle::RULED.lines(&rows(&[&["goal", "figure", ""], &["g", "1", ""]]));
        assert_eq!(ruled, ["goal  figure", "----  ------", "g     1"]);
        assert!(align::<Vec<String>>(&[]).is_empty());
        assert!(TableStyle::RULED.lines::<Vec<String>>(&[]).is_empty());
    }
}
