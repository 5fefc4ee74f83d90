//! Where an export's tables come from: a SQLite file, or a stored
//! parquetdir/arrowdir folder. The per-table readers see only rows of
//! [`Cell`]s addressed by field position, so both sources give identical
//! evidence for the same table contents.

use std::path::PathBuf;

use rusqlite::Connection;

use super::export_dir::{Column, ExportDirTables};
use super::interrupt::SqliteInterrupts;
use super::row::{Cell, EachRow, RowView};
use super::schema::{Schema, Table};
use crate::api::ExtractError;

struct BatchRow<'c> {
    columns: &'c [Column],
    row: usize,
}

impl RowView for BatchRow<'_> {
    fn cell(&self, i: usize) -> Cell<'_> {
        use arrow::array::Array;
        let row = self.row;
        match self.columns.get(i) {
            Some(Column::Int(a)) if a.is_valid(row) => Cell::Int(a.value(row)),
            Some(Column::Real(a)) if a.is_valid(row) => Cell::Real(a.value(row)),
            Some(Column::Text(a)) if a.is_valid(row) => Cell::Text(a.value(row).as_bytes()),
            _ => Cell::Null,
        }
    }
}

/// The tables of one export.
pub enum TableSource<'i> {
    /// A SQLite export: `conn` answers schema questions, table rows are
    /// read on a second connection to `path` ([`super::read_ahead`]).
    Sqlite {
        conn: Connection,
        path: PathBuf,
        /// Every connection reading the export, for cancellation.
        interrupts: &'i SqliteInterrupts,
    },
    ExportDir(ExportDirTables),
}

impl TableSource<'_> {
    /// Every table and its columns.
    pub fn schema(&self) -> Result<Schema, ExtractError> {
        match self {
            TableSource::Sqlite { conn, .. } => Ok(Schema::read(conn)?),
            TableSource::ExportDir(dir) => Ok(Schema::from_tables(dir.columns()?)),
        }
    }

    /// Calls `each` for every row of `table` in stored order, with one cell
    /// per entry of `fields` (the first candidate column that exists; NULL
    /// when none does).
    pub fn for_each_row(
        &self,
        table: &Table,
        fields: &[&[&str]],
        each: &mut EachRow<'_>,
    ) -> Result<(), ExtractError> {
        match self {
            TableSource::Sqlite {
                path, interrupts, ..
            } => super::read_ahead::for_each_row_read_ahead(
                path,
                interrupts,
                &table.select(fields, None),
                fields.len(),
                each,
            ),
            TableSource::ExportDir(dir) => {
                let names: Vec<Option<&str>> = fields.iter().map(|c| table.column(c)).collect();
                let wanted: Vec<&str> = names.iter().flatten().copied().collect();
                dir.for_each_batch(&table.name, &wanted, &mut |batch| {
                    let columns = names
                        .iter()
                        .map(|n| Column::of(n.and_then(|n| batch.column_by_name(n))))
                        .collect::<Result<Vec<_>, _>>()?;
                    for row in 0..batch.num_rows() {
                        each(&BatchRow {
                            columns: &columns,
                            row,
                        })?;
                    }
                    Ok(())
                })
            }
        }
    }

    /// Whether `table` has at least one row.
    pub fn has_rows(&self, table: &Table) -> Result<bool, ExtractError> {
        match self {
            TableSource::Sqlite { conn, .. } => {
                let sql = format!(
                    "SELECT EXISTS(SELECT 1 FROM {})",
                    super::schema::quote(&table.name)
                );
                let n: i64 = conn.query_row(&sql, [], |r| r.get(0))?;
                Ok(n != 0)
            }
            TableSource::ExportDir(dir) => dir.has_rows(&table.name),
        }
    }
}
