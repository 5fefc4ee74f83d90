//! Staging: where a publisher writes before anything becomes visible.
//!
//! Each writer owns one folder under `staging/` and holds a lock on it for its
//! whole life. A folder whose lock is free belongs to a dead writer and is
//! removed by [`clean_abandoned`] (run by the next writer and by `recover`).
//! Evidence batches become Parquet files here through [`ParquetStagingSink`].

use flameox_extractors::phase_cpu::{self, Phase};
use std::collections::BTreeMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::thread::JoinHandle;

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::parquet::basic::{Compression, Encoding, ZstdLevel};
use datafusion::parquet::file::metadata::{KeyValue, SortingColumn};
use datafusion::parquet::file::properties::{EnabledStatistics, WriterProperties};
use datafusion::parquet::schema::types::ColumnPath;
use flameox_extractors::{BatchSink, EvidenceTable, SCHEMA_VERSION, SinkError};

use crate::error::{Result, io_error};
use crate::lock::FileLock;
use crate::row_group_writer::RowGroupWriter;
use crate::workspace::Workspace;

/// Rows per Parquet row group (the unit of pruning).
pub const ROW_GROUP_ROWS: usize = 64 * 1024;
/// Rows per file before a table rolls over to the next part.
pub const FILE_ROWS: u64 = 8 * 1024 * 1024;

/// A writer's private staging folder, removed on drop.
#[derive(Debug)]
pub struct StagingArea {
    dir: PathBuf,
    _held: Held,
}

/// What keeps a staging folder from the cleaner.
#[derive(Debug)]
enum Held {
    /// Its own lock (a folder directly under `staging/`).
    Lock { _lock: FileLock },
    /// The lock of the folder it lies in (one import's many generations
    /// share one lock: open files stay bounded however many ranks).
    Within { _parent: Arc<StagingArea> },
}

impl StagingArea {
    /// Creates `staging/<name>` already locked: the folder is built under a
    /// `.new-` name the cleaner leaves alone, locked, then renamed into
    /// place (the open lock survives the rename). A cleaner can therefore
    /// never see a live writer's folder without its held lock.
    pub fn create(ws: &Workspace, name: &str) -> Result<StagingArea> {
        let building = ws.staging_dir().join(format!("{NEW_PREFIX}{name}"));
        let dir = ws.staging_dir().join(name);
        fs::create_dir_all(&building).map_err(|e| io_error("creating a staging folder", e))?;
        // A failure here (a full disk, say) must not leave the folder behind.
        let named = FileLock::acquire(&building.join(".lock"), std::time::Duration::from_secs(5))
            .and_then(|lock| {
                fs::rename(&building, &dir)
                    .map(|()| lock)
                    .map_err(|e| io_error("naming a staging folder", e))
            });
        match named {
            Ok(lock) => Ok(StagingArea {
                dir,
                _held: Held::Lock { _lock: lock },
            }),
            Err(err) => {
                let _ = fs::remove_dir_all(&building);
                Err(err)
            }
        }
    }

    /// Creates `<parent>/<name>`, kept from the cleaner by the parent's
    /// lock (which it holds on to) and removed on drop like any area.
    pub fn create_within(parent: &Arc<StagingArea>, name: &str) -> Result<StagingArea> {
        let dir = parent.dir.join(name);
        fs::create_dir(&dir).map_err(|e| io_error("creating a staging folder", e))?;
        Ok(StagingArea {
            dir,
            _held: Held::Within {
                _parent: Arc::clone(parent),
            },
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for StagingArea {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Prefix of a staging folder still being set up by [`StagingArea::create`].
const NEW_PREFIX: &str = ".new-";
/// A `.new-` folder older than this lost its writer before it was named.
const NEW_FOLDER_GRACE: std::time::Duration = std::time::Duration::from_secs(600);

/// Removes staging folders whose writer is gone. Returns how many.
pub fn clean_abandoned(ws: &Workspace) -> Result<usize> {
    let mut removed = 0;
    let Ok(entries) = fs::read_dir(ws.staging_dir()) else {
        return Ok(0);
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if !path.is_dir() {
            let _ = fs::remove_file(&path);
            removed += 1;
            continue;
        }
        if entry.file_name().to_string_lossy().starts_with(NEW_PREFIX) {
            let stale = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > NEW_FOLDER_GRACE);
            if stale && fs::remove_dir_all(&path).is_ok() {
                removed += 1;
            }
            continue;
        }
        let lock_path = path.join(".lock");
        // Never creates the lock file: its owner may be removing the folder.
        let free = FileLock::try_acquire_existing(&lock_path)?;
        if free.is_some() || !lock_path.exists() {
            drop(free);
            if fs::remove_dir_all(&path).is_ok() {
                removed += 1;
            }
        }
    }
    Ok(removed)
}

/// A file finished in staging: where it is and what it holds.
#[derive(Debug, Clone)]
pub struct StagedFile {
    pub table: EvidenceTable,
    pub part: u32,
    pub path: PathBuf,
    pub rows: u64,
}

struct OpenPart {
    writer: RowGroupWriter,
    path: PathBuf,
    part: u32,
    rows: u64,
}

/// A [`BatchSink`] that writes each table as zstd Parquet with statistics,
/// the table name and schema version in the key-value metadata, and the
/// declared sort order.
pub struct ParquetStagingSink {
    dir: PathBuf,
    open: BTreeMap<EvidenceTable, OpenPart>,
    next_part: BTreeMap<EvidenceTable, u32>,
    finished: Vec<StagedFile>,
}

impl ParquetStagingSink {
    pub fn new(dir: &Path) -> ParquetStagingSink {
        ParquetStagingSink {
            dir: dir.to_path_buf(),
            open: BTreeMap::new(),
            next_part: BTreeMap::new(),
            finished: Vec::new(),
        }
    }

    fn open_part(&mut self, table: EvidenceTable) -> std::result::Result<OpenPart, SinkError> {
        let part = *self.next_part.get(&table).unwrap_or(&0);
        self.next_part.insert(table, part + 1);
        let table_dir = self.dir.join(table.name());
        fs::create_dir_all(&table_dir)?;
        let path = table_dir.join(format!("part-{part:05}.parquet"));
        let file = File::create(&path)?;
        let writer = RowGroupWriter::try_new(file, table.schema(), writer_properties(table)?)?;
        Ok(OpenPart {
            writer,
            path,
            part,
            rows: 0,
        })
    }

    fn close_part(
        &mut self,
        table: EvidenceTable,
        open: OpenPart,
    ) -> std::result::Result<(), SinkError> {
        let file = open.writer.into_inner()?;
        file.sync_all()?;
        self.finished.push(StagedFile {
            table,
            part: open.part,
            path: open.path,
            rows: open.rows,
        });
        Ok(())
    }

    /// Closes every open file (fsynced) and returns all staged files.
    pub fn finish(mut self) -> std::result::Result<Vec<StagedFile>, SinkError> {
        let open = std::mem::take(&mut self.open);
        for (table, part) in open {
            self.close_part(table, part)?;
        }
        self.finished.sort_by_key(|f| (f.table, f.part));
        Ok(self.finished)
    }
}

impl BatchSink for ParquetStagingSink {
    fn write_batch(
        &mut self,
        table: EvidenceTable,
        batch: RecordBatch,
    ) -> std::result::Result<(), SinkError> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let mut open = match self.open.remove(&table) {
            Some(open) => open,
            None => self.open_part(table)?,
        };
        open.writer.write(&batch)?;
        open.rows += batch.num_rows() as u64;
        if open.rows >= FILE_ROWS {
            self.close_part(table, open)?;
        } else {
            self.open.insert(table, open);
        }
        Ok(())
    }
}

/// A [`ParquetStagingSink`] on its own thread: batches go through a short
/// bounded queue, so Parquet encoding and zstd (about a fifth of a JSON
/// import's CPU) run beside the extractor building the next batches (and a
/// row group's columns on two threads, see [`RowGroupWriter`]). Dropped without [`finish`](Self::finish), it still waits for the
/// thread, so the staging folder is never removed under a live writer.
pub struct BackgroundParquetSink {
    queue: Option<SyncSender<(EvidenceTable, RecordBatch)>>,
    worker: Option<JoinHandle<std::result::Result<Vec<StagedFile>, SinkError>>>,
}

/// Batches queued ahead of the writer thread (bounds the memory in flight).
const QUEUED_BATCHES: usize = 2;

impl BackgroundParquetSink {
    pub fn new(dir: &Path) -> std::result::Result<BackgroundParquetSink, SinkError> {
        let (queue, batches) = sync_channel::<(EvidenceTable, RecordBatch)>(QUEUED_BATCHES);
        let mut sink = ParquetStagingSink::new(dir);
        let worker = std::thread::Builder::new()
            .name("parquet-writer".into())
            .spawn(move || {
                let _phase = phase_cpu::enter(Phase::Write);
                for (table, batch) in batches {
                    sink.write_batch(table, batch)?;
                }
                sink.finish()
            })?;
        Ok(BackgroundParquetSink {
            queue: Some(queue),
            worker: Some(worker),
        })
    }

    /// Waits for every queued batch to be written; returns the staged files.
    pub fn finish(mut self) -> std::result::Result<Vec<StagedFile>, SinkError> {
        self.queue.take();
        self.join()
    }

    fn join(&mut self) -> std::result::Result<Vec<StagedFile>, SinkError> {
        match self.worker.take() {
            Some(worker) => worker
                .join()
                .map_err(|_| SinkError::from("the Parquet writer thread panicked"))?,
            None => Err("the Parquet writer thread already ended".into()),
        }
    }
}

impl BatchSink for BackgroundParquetSink {
    fn write_batch(
        &mut self,
        table: EvidenceTable,
        batch: RecordBatch,
    ) -> std::result::Result<(), SinkError> {
        let sent = match &self.queue {
            Some(queue) => queue.send((table, batch)).is_ok(),
            None => false,
        };
        if sent {
            return Ok(());
        }
        // The writer stopped: its error is the one to report.
        self.queue.take();
        match self.join() {
            Err(e) => Err(e),
            Ok(_) => Err("the Parquet writer thread ended early".into()),
        }
    }
}

impl Drop for BackgroundParquetSink {
    fn drop(&mut self) {
        self.queue.take();
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

pub(crate) fn writer_properties(
    table: EvidenceTable,
) -> std::result::Result<WriterProperties, SinkError> {
    let schema = table.schema();
    let sorting: Vec<SortingColumn> = table
        .sort_columns()
        .iter()
        .filter_map(|name| schema.index_of(name).ok())
        .map(|column_idx| SortingColumn {
            column_idx: column_idx as i32,
            descending: false,
            nulls_first: false,
        })
        .collect();
    let metadata = vec![
        KeyValue::new("flameox.table".to_owned(), table.name().to_owned()),
        KeyValue::new(
            "flameox.schema_version".to_owned(),
            SCHEMA_VERSION.to_string(),
        ),
    ];
    let mut builder = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1)?))
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_key_value_metadata(Some(metadata));
    if !sorting.is_empty() {
        builder = builder.set_sorting_columns(Some(sorting));
    }
    if table == EvidenceTable::TraceEvents {
        // The columns every window query decodes: delta bit-packing, no
        // zstd, so reading them costs no decompression.
        for name in FAST_DECODE_COLUMNS {
            let column = ColumnPath::from(name);
            builder = builder
                .set_column_dictionary_enabled(column.clone(), false)
                .set_column_encoding(column.clone(), Encoding::DELTA_BINARY_PACKED)
                .set_column_compression(column, Compression::UNCOMPRESSED);
        }
        // Nearly unique per row: a dictionary would hold the whole row
        // group (64 Ki rows never reach the 1 MiB dictionary limit), so
        // every value was hashed for nothing.
        for name in UNIQUE_COLUMNS {
            builder = builder.set_column_dictionary_enabled(ColumnPath::from(name), false);
        }
    }
    Ok(builder.build())
}

/// `trace_events` columns written without a dictionary.
const UNIQUE_COLUMNS: [&str; 5] = [
    "event_id",
    "parent_event_id",
    "correlation_id",
    "external_id",
    "args_json",
];

/// `trace_events` columns stored delta-packed and uncompressed.
const FAST_DECODE_COLUMNS: [&str; 3] = ["ts_ns", "dur_ns", "self_ns"];

/// Shared so the validator can check a file's metadata the same way.
pub fn expected_metadata(table: EvidenceTable, version: u32) -> Vec<(String, String)> {
    vec![
        ("flameox.table".to_owned(), table.name().to_owned()),
        ("flameox.schema_version".to_owned(), version.to_string()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// A cleaner running flat out never removes a live writer's folder: every
    /// freshly created staging area still exists with its lock file.
    #[test]
    fn a_concurrent_cleaner_never_takes_a_live_folder() {
        let project = tempfile::tempdir().unwrap();
        let (ws, _) = Workspace::init(project.path()).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let cleaner = {
            let (ws, stop) = (ws.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut passes = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let _ = clean_abandoned(&ws);
                    passes += 1;
                }
                passes
            })
        };
        for i in 0..300 {
            let area = StagingArea::create(&ws, &format!("t-{i}")).unwrap();
            assert!(area.dir().join(".lock").is_file(), "folder {i} was removed");
            fs::write(area.dir().join("part"), b"x").unwrap();
            assert!(area.dir().join("part").is_file());
        }
        stop.store(true, Ordering::Relaxed);
        assert!(cleaner.join().unwrap() > 0);
    }
}
