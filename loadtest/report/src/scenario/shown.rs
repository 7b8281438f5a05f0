//! What a scenario page shows of its table: the columns whose cells differ from row to row (the
//! first, which names the row, always) — a column with one value in every row says nothing a row
//! can be told apart by, so it is left out of the table and said once beside it (unless it only
//! says "not measured": `—`); how many of them stand above the fold, so that dropping a column
//! lets a measured one take its place; and which hold text, aligned left like their headers.

use super::ScenarioTable;

/// A cell that stands for no value.
const NONE: &str = "—";

/// The columns a page shows, in the table's order.
pub struct Shown {
    /// Indices into the table's columns.
    pub columns: Vec<usize>,
    /// How many of `columns` the page shows above the fold.
    pub main: usize,
    /// Per shown column: its cells are text (names, words), not figures.
    pub text: Vec<bool>,
    /// The left-out columns with a value: `heading value`.
    pub same: Vec<String>,
}

impl Shown {
    pub fn of(t: &ScenarioTable) -> Shown {
        let constant = |c: usize| {
            t.rows.len() > 1 && c > 0 && t.rows.iter().all(|r| cell(r, c) == cell(&t.rows[0], c))
        };
        let mut columns = Vec::new();
        let mut same = Vec::new();
        for (c, heading) in t.columns.iter().enumerate() {
            if !constant(c) {
                columns.push(c);
                continue;
            }
            let value = cell(&t.rows[0], c);
            if !value.is_empty() && value != NONE {
                same.push(format!("{heading} {value}"));
            }
        }
        let asked = if t.main_columns == 0 {
            t.columns.len()
        } else {
            t.main_columns
        };
        let text = columns
            .iter()
            .map(|&c| is_text(t.rows.iter().map(|r| cell(r, c))))
            .collect();
        Shown {
            main: asked.min(columns.len()),
            columns,
            text,
            same,
        }
    }

    /// The sentence under the table naming what every row shares, if anything.
    pub fn same_line(&self) -> Option<String> {
        (!self.same.is_empty()).then(|| format!("In every row: {}.", self.same.join("; ")))
    }
}

/// Row `row`'s cell in column `c` (`""` past its last).
fn cell(row: &[String], c: usize) -> &str {
    row.get(c).map_or("", String::as_str)
}

/// A column of text: no cell (those with a value) starts with a figure.
fn is_text<'a>(cells: impl Iterator<Item = &'a str>) -> bool {
    let mut any = false;
    for c in cells.filter(|c| !c.is_empty() && *c != NONE) {
        any = true;
        let figure = c
            .trim_start_matches(['~', '≈', '≥', '≤', '<', '>', '+', '−', '-', ' '])
            .starts_with(|ch: char| ch.is_ascii_digit());
        if figure {
            return false;
        }
    }
    any
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(columns: &[&str], rows: &[&[&str]], main: usize) -> ScenarioTable {
        ScenarioTable {
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows: rows
                .iter()
                .map(|r| r.iter().map(|c| c.to_string()).collect())
                .collect(),
            main_columns: main,
            ..ScenarioTable::default()
        }
    }

    #[test]
    fn a_column_with_one_value_in_every_row_is_left_out_and_a_measured_one_moves_up() {
        let t = table(
            &["API", "batch_max", "pool", "req/s", "lost", "mode"],
            &[
                &["blocking-api", "—", "10", "188.3", "0", "outbox"],
                &["reactive-api", "—", "10", "229.7", "5", "two-phase"],
            ],
            3,
        );
        let s = Shown::of(&t);
        assert_eq!(s.columns, [0, 3, 4, 5]);
        assert_eq!(
            s.main, 3,
            "req/s and lost take the places of the two left out"
        );
        assert_eq!(s.text, [true, false, false, true]);
        assert_eq!(s.same_line().as_deref(), Some("In every row: pool 10."));
    }

    #[test]
    fn one_row_or_the_first_column_is_never_left_out() {
        let one = table(&["API", "x"], &[&["blocking-api", "—"]], 0);
        assert_eq!(Shown::of(&one).columns, [0, 1]);
        let same = table(&["API", "x"], &[&["a", "1"], &["a", "2"]], 0);
        let s = Shown::of(&same);
        assert_eq!((s.columns.as_slice(), s.main), (&[0, 1][..], 2));
        assert_eq!(s.same_line(), None);
    }

    #[test]
    fn a_figure_is_a_cell_that_starts_with_a_digit() {
        assert!(!is_text(["12 ms", "—", "≥ 400"].into_iter()));
        assert!(!is_text(["−3 %", "yes"].into_iter()));
        assert!(is_text(["kill -9", "—", "**no**"].into_iter()));
        assert!(!is_text(["—", ""].into_iter()), "no value, no text");
    }
}
