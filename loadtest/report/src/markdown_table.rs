//! The one Markdown table writer of the lab: `summary.md`, the scenarios' tables and `bench.md`
//! all write their tables through [`Table`], so they escape cells and align columns the same way.
//!
//! The rows are written unpadded (`| a | 12 |`), one line each, which keeps a table's source
//! diffable line by line when one figure changes. `tabled`'s Markdown style was weighed and
//! declined: it pads every cell to its column's widest (`| a     |`, `|-------|`), so one long
//! cell rewrites every line of its table, and it would have changed every table the lab has
//! committed.

use std::fmt::{self, Display, Formatter};

/// How a column's cells line up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// `---`: text, names.
    Left,
    /// `---:`: figures, so that their digits line up.
    Right,
}

/// One column: its heading and how its cells line up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub heading: String,
    pub align: Align,
}

impl Column {
    /// A column of text.
    pub fn left(heading: impl Into<String>) -> Self {
        Self {
            heading: heading.into(),
            align: Align::Left,
        }
    }

    /// A column of figures.
    pub fn right(heading: impl Into<String>) -> Self {
        Self {
            heading: heading.into(),
            align: Align::Right,
        }
    }
}

/// A Markdown table: the heading row, the alignment row, then one row per [`Table::push_row`].
///
/// Every cell, headings included, is escaped when written (`|` as `\|`, a line break as a space),
/// so a value from the results cannot end its cell or its row; Markdown inside a cell (`**no**`,
/// `` `code` ``) is kept. A row is written with the cells it was given, as many or as few as
/// there are columns. The table is written as it is when it has no rows: its two heading lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    columns: Vec<Column>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with `columns`, and no rows yet.
    pub fn new(columns: impl IntoIterator<Item = Column>) -> Self {
        Self {
            columns: columns.into_iter().collect(),
            rows: Vec::new(),
        }
    }

    /// A table whose columns all hold text (left-aligned).
    pub fn left(headings: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self::new(headings.into_iter().map(Column::left))
    }

    /// Adds a row of cells, written in the columns' order.
    pub fn push_row(&mut self, cells: impl IntoIterator<Item = impl Into<String>>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// How many rows were pushed.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// `true` before the first row.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// `| a | b |` and a line break; an empty cell is written `| |`.
fn write_row<'a>(f: &mut Formatter<'_>, cells: impl Iterator<Item = &'a str>) -> fmt::Result {
    f.write_str("|")?;
    for cell in cells {
        if cell.is_empty() {
            f.write_str(" |")?;
        } else {
            write!(f, " {} |", escape(cell))?;
        }
    }
    f.write_str("\n")
}

/// A cell's text with the characters that would break its table escaped.
fn escape(cell: &str) -> String {
    cell.replace('|', "\\|").replace(['\r', '\n'], " ")
}

impl Display for Table {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write_row(f, self.columns.iter().map(|c| c.heading.as_str()))?;
        f.write_str("|")?;
        for c in &self.columns {
            f.write_str(match c.align {
                Align::Left => "---|",
                Align::Right => "---:|",
            })?;
        }
        f.write_str("\n")?;
        for row in &self.rows {
            write_row(f, row.iter().map(String::as_str))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_writes_its_headings_alignment_and_rows_unpadded() {
        let mut t = Table::new([
            Column::left("API"),
            Column::right("orders/s"),
            Column::left("met"),
        ]);
        t.push_row(["blocking-api", "90", "**no**"]);
        t.push_row(["reactive-api".to_owned(), 299.to_string(), "yes".to_owned()]);
        assert_eq!(
            t.to_string(),
            "| API | orders/s | met |\n\
             |---|---:|---|\n\
             | blocking-api | 90 | **no** |\n\
             | reactive-api | 299 | yes |\n"
        );
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn a_pipe_or_a_line_break_in_a_cell_cannot_end_it() {
        let mut t = Table::left(["a|b", "frame"]);
        t.push_row(["x | y", "`<F as Fn>::call|once`"]);
        t.push_row(["two\nlines", "crlf\r\n"]);
        assert_eq!(
            t.to_string(),
            "| a\\|b | frame |\n\
             |---|---|\n\
             | x \\| y | `<F as Fn>::call\\|once` |\n\
             | two lines | crlf   |\n"
        );
    }

    #[test]
    fn an_empty_table_is_its_two_heading_lines() {
        let t = Table::new([Column::right("calls/order"), Column::left("statement")]);
        assert!(t.is_empty());
        assert_eq!(t.to_string(), "| calls/order | statement |\n|---:|---|\n");
    }

    #[test]
    fn an_empty_cell_is_one_space_wide() {
        let mut t = Table::left(["figure", ""]);
        t.push_row(["instructions", ""]);
        assert_eq!(
            t.to_string(),
            "| figure | |\n|---|---|\n| instructions | |\n"
        );
    }
}
