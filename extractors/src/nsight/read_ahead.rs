//! Reading a SQLite export's rows on a second thread, so SQLite's stepping
//! and column decoding overlap the per-row work of the table readers on the
//! other core.
//!
//! The reader thread opens its own read-only connection, steps the query
//! and copies each row's cells into a [`RowBatch`] (numbers in place, text
//! into one byte buffer per batch); full batches go over a bounded channel
//! and come back empty for reuse. The consumer sees the same cells in the
//! same order as reading on one connection did ([`Cell`] for [`Cell`]),
//! so the evidence does not change: `nsight_read_ahead_gives_every_cell`
//! (below) and the corpus imports compare both paths.

use std::path::Path;
use std::sync::mpsc::{Receiver, SyncSender, channel, sync_channel};

use rusqlite::types::ValueRef;

use super::interrupt::SqliteInterrupts;
use super::row::{Cell, EachRow, RowView};
use crate::api::ExtractError;

/// Rows per batch handed over (bounded again by [`BATCH_TEXT_BYTES`]).
const BATCH_ROWS: usize = 2048;
/// Text bytes after which a batch is handed over early.
const BATCH_TEXT_BYTES: usize = 1 << 20;
/// Full batches in flight: enough to ride over scheduling hiccups, small
/// enough that memory stays a few MiB.
const BATCHES_IN_FLIGHT: usize = 4;

/// One cell of a batch; text points into [`RowBatch::text`].
#[derive(Clone, Copy)]
enum Slot {
    Null,
    Int(i64),
    Real(f64),
    Text { start: usize, end: usize },
}

/// Rows of `width` cells each, row-major.
#[derive(Default)]
struct RowBatch {
    width: usize,
    slots: Vec<Slot>,
    text: Vec<u8>,
}

impl RowBatch {
    fn rows(&self) -> usize {
        self.slots.len().checked_div(self.width).unwrap_or(0)
    }

    fn clear(&mut self) {
        self.slots.clear();
        self.text.clear();
    }

    fn push_row(&mut self, row: &rusqlite::Row<'_>) {
        for i in 0..self.width {
            let slot = match row.get_ref(i) {
                Ok(ValueRef::Integer(v)) => Slot::Int(v),
                Ok(ValueRef::Real(v)) => Slot::Real(v),
                Ok(ValueRef::Text(t)) => {
                    let start = self.text.len();
                    self.text.extend_from_slice(t);
                    Slot::Text {
                        start,
                        end: self.text.len(),
                    }
                }
                // A BLOB reads as NULL, as on the single-connection path.
                _ => Slot::Null,
            };
            self.slots.push(slot);
        }
    }

    fn full(&self) -> bool {
        self.slots.len() >= BATCH_ROWS * self.width.max(1) || self.text.len() >= BATCH_TEXT_BYTES
    }
}

/// Row `row` of a batch, as the table readers see rows.
struct BatchedRow<'b> {
    batch: &'b RowBatch,
    row: usize,
}

impl RowView for BatchedRow<'_> {
    fn cell(&self, i: usize) -> Cell<'_> {
        if i >= self.batch.width {
            return Cell::Null;
        }
        match self.batch.slots.get(self.row * self.batch.width + i) {
            Some(Slot::Int(v)) => Cell::Int(*v),
            Some(Slot::Real(v)) => Cell::Real(*v),
            Some(&Slot::Text { start, end }) => {
                Cell::Text(self.batch.text.get(start..end).unwrap_or_default())
            }
            Some(Slot::Null) | None => Cell::Null,
        }
    }
}

/// Calls `each` for every row of `sql` (with `width` columns) over the
/// export at `path`, the rows being read on a second thread.
pub fn for_each_row_read_ahead(
    path: &Path,
    interrupts: &SqliteInterrupts,
    sql: &str,
    width: usize,
    each: &mut EachRow<'_>,
) -> Result<(), ExtractError> {
    let (full_tx, full_rx) = sync_channel::<RowBatch>(BATCHES_IN_FLIGHT);
    let (empty_tx, empty_rx) = channel::<RowBatch>();
    std::thread::scope(|scope| {
        let reader = std::thread::Builder::new()
            .name("nsight-sqlite".into())
            .spawn_scoped(scope, move || {
                let _phase = crate::phase_cpu::enter(crate::phase_cpu::Phase::Decode);
                read_batches(path, interrupts, sql, width, full_tx, empty_rx)
            })?;
        let mut consumed = Ok(());
        'batches: for batch in full_rx.iter() {
            for row in 0..batch.rows() {
                if let Err(e) = each(&BatchedRow { batch: &batch, row }) {
                    consumed = Err(e);
                    break 'batches;
                }
            }
            // The reader may have finished already; then the batch is dropped.
            let _ = empty_tx.send(batch);
        }
        // Stops the reader at its next hand-over if `each` failed.
        drop(full_rx);
        let read = match reader.join() {
            Ok(read) => read,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        // An error of `each` wins: the reader then only saw the channel close.
        consumed.and(read)
    })
}

/// The reader thread: steps the query, handing over full batches; returns
/// early (without error) when the consumer hung up.
fn read_batches(
    path: &Path,
    interrupts: &SqliteInterrupts,
    sql: &str,
    width: usize,
    full_tx: SyncSender<RowBatch>,
    empty_rx: Receiver<RowBatch>,
) -> Result<(), ExtractError> {
    let conn = super::open_readonly(path)?;
    interrupts.register(&conn);
    // A table cell takes at least 4 bytes of the file; a corrupt file
    // whose pages repeat each other would yield rows without end.
    let max_rows = std::fs::metadata(path)?.len() / 4 + 1;
    let mut read = 0u64;
    let mut stmt = conn.prepare(sql)?;
    let mut rows = stmt.query([])?;
    let fresh = || RowBatch {
        width,
        ..RowBatch::default()
    };
    let mut batch = fresh();
    while let Some(row) = rows.next()? {
        read += 1;
        if read > max_rows {
            return Err(ExtractError::Parse {
                message: format!(
                    "the SQLite file is corrupt: a table yields more than {max_rows} rows, \
                     more than a file of its size can hold"
                ),
                offset: None,
            });
        }
        batch.push_row(row);
        if batch.full() {
            let next = empty_rx.try_recv().unwrap_or_else(|_| fresh());
            if full_tx.send(std::mem::replace(&mut batch, next)).is_err() {
                return Ok(());
            }
            batch.clear();
        }
    }
    if !batch.slots.is_empty() {
        // A send error means the consumer stopped; its error is reported.
        let _ = full_tx.send(batch);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cell as owned data, to compare the two reading paths.
    #[derive(Debug, PartialEq)]
    enum Owned {
        Null,
        Int(i64),
        Real(f64),
        Text(Vec<u8>),
    }

    fn owned(cell: Cell<'_>) -> Owned {
        match cell {
            Cell::Null => Owned::Null,
            Cell::Int(v) => Owned::Int(v),
            Cell::Real(v) => Owned::Real(v),
            Cell::Text(t) => Owned::Text(t.to_vec()),
        }
    }

    /// An export-like file with every storage class, more rows than one
    /// batch holds and text large enough to end batches early.
    fn sample_db(dir: &Path) -> std::path::PathBuf {
        let path = dir.join("rows.sqlite");
        let conn = Connection::open(&path).unwrap();
        // One transaction: a commit per row would sync per row.
        conn.execute_batch("CREATE TABLE t (a, b, c); BEGIN")
            .unwrap();
        let mut insert = conn.prepare("INSERT INTO t VALUES (?1, ?2, ?3)").unwrap();
        for k in 0..(BATCH_ROWS as i64 * 3 + 17) {
            let text = "é".repeat((k as usize * 37) % 3000);
            match k % 4 {
                0 => insert.execute(rusqlite::params![k, text, 0.5 * k as f64]),
                1 => insert.execute(rusqlite::params![None::<i64>, vec![1u8, 2], k]),
                2 => insert.execute(rusqlite::params![format!("{k}"), k, None::<i64>]),
                _ => insert.execute(rusqlite::params![-k, text, "x\"y"]),
            }
            .unwrap();
        }
        drop(insert);
        conn.execute_batch("COMMIT").unwrap();
        path
    }

    use rusqlite::Connection;

    #[test]
    fn nsight_read_ahead_gives_every_cell() {
        let dir = std::env::temp_dir().join(format!("flameox-readahead-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = sample_db(&dir);
        // Four fields: the last selects a constant NULL, as a missing column does.
        let sql = "SELECT a, b, c, NULL FROM t";
        let conn = Connection::open(&path).unwrap();
        let mut expected = Vec::new();
        let mut stmt = conn.prepare(sql).unwrap();
        let mut rows = stmt.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            let cells: Vec<Owned> = (0..5)
                .map(|i| match row.get_ref(i) {
                    Ok(ValueRef::Integer(v)) => Owned::Int(v),
                    Ok(ValueRef::Real(v)) => Owned::Real(v),
                    Ok(ValueRef::Text(t)) => Owned::Text(t.to_vec()),
                    _ => Owned::Null,
                })
                .collect();
            expected.push(cells);
        }
        let mut got = Vec::new();
        for_each_row_read_ahead(&path, &Default::default(), sql, 4, &mut |row| {
            got.push((0..5).map(|i| owned(row.cell(i))).collect::<Vec<_>>());
            Ok(())
        })
        .unwrap();
        assert_eq!(got.len(), BATCH_ROWS * 3 + 17);
        assert!(
            got.iter()
                .any(|r| matches!(r[1], Owned::Text(ref t) if t.len() > 1000))
        );
        assert_eq!(got, expected);

        // A failing callback stops the read with its own error.
        let mut seen = 0;
        let stopped = for_each_row_read_ahead(&path, &Default::default(), sql, 4, &mut |_| {
            seen += 1;
            if seen == 10 {
                return Err(ExtractError::Cancelled);
            }
            Ok(())
        });
        assert!(matches!(stopped, Err(ExtractError::Cancelled)));
        assert_eq!(seen, 10);
        // A query error surfaces from the reader thread.
        let bad = for_each_row_read_ahead(
            &path,
            &Default::default(),
            "SELECT x FROM missing",
            1,
            &mut |_| Ok(()),
        );
        assert!(matches!(bad, Err(ExtractError::Parse { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
