//! One row of an export's table as the table readers see it: cells by
//! field position, whichever source (SQLite, parquetdir, arrowdir, the
//! read-ahead thread) produced them.

use crate::api::ExtractError;

/// One value as the readers see it (SQLite's storage classes; a BLOB
/// reads as NULL, as it always did).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cell<'a> {
    Null,
    Int(i64),
    Real(f64),
    Text(&'a [u8]),
}

/// One row of the fields a reader asked for, by position.
pub trait RowView {
    fn cell(&self, i: usize) -> Cell<'_>;
}

/// A row callback: return `Err` to stop with that error.
pub type EachRow<'f> = dyn FnMut(&dyn RowView) -> Result<(), ExtractError> + 'f;

/// An integer cell (reals truncate, numeric text parses), as SQLite reads.
pub fn int(row: &dyn RowView, i: usize) -> Option<i64> {
    match row.cell(i) {
        Cell::Int(v) => Some(v),
        Cell::Real(f) if f.is_finite() => Some(f as i64),
        Cell::Text(t) => std::str::from_utf8(t).ok()?.trim().parse().ok(),
        _ => None,
    }
}

/// A text cell (numbers shown as text).
pub fn text(row: &dyn RowView, i: usize) -> Option<String> {
    match row.cell(i) {
        Cell::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
        Cell::Int(v) => Some(v.to_string()),
        Cell::Real(f) => Some(f.to_string()),
        Cell::Null => None,
    }
}
