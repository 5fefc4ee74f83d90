//! The tables of an `nsys export --type parquetdir` / `arrowdir` folder,
//! read from the ustar archive the engine stored it as (see [`crate::ustar`]).
//!
//! Each member `<TABLE>.parquet` / `<TABLE>.arrow` is one table with the
//! SQLite export's table and column names. Members are read in place (a
//! byte range of the archive, never unpacked or loaded whole): Parquet
//! through the `parquet` crate's Arrow reader (it needs random access to
//! its footer), Arrow IPC as a file (`ARROW1` magic) or a stream
//! (continuation marker), whichever the bytes are.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, RecordBatch};
use arrow::datatypes::{DataType, Schema as ArrowSchema};
use arrow::ipc::reader::{FileReader, StreamReader};
use bytes::Bytes;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::reader::{ChunkReader, Length};

use crate::api::ExtractError;
use crate::ustar::{self, Member};

use super::ipc_check;
use crate::decoder_guard::guard;

/// Rows per batch read from a table file.
const BATCH_ROWS: usize = 8192;

/// How a table file is encoded, from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableFileFormat {
    Parquet,
    ArrowFile,
    ArrowStream,
}

/// The format of a table file from its first 8 bytes, if it is one.
pub fn table_file_format(head: &[u8]) -> Option<TableFileFormat> {
    if head.starts_with(b"PAR1") {
        Some(TableFileFormat::Parquet)
    } else if head.starts_with(b"ARROW1") {
        Some(TableFileFormat::ArrowFile)
    } else if head.starts_with(&[0xFF, 0xFF, 0xFF, 0xFF]) {
        Some(TableFileFormat::ArrowStream)
    } else {
        None
    }
}

/// The table a file name holds: the name without its last extension.
pub fn table_of_file(name: &str) -> &str {
    match name.rfind('.') {
        Some(at) if at > 0 => &name[..at],
        _ => name,
    }
}

/// True when table names look like an nsys export: `StringIds` plus at
/// least one CUPTI, NVTX, OSRT or TARGET_INFO table.
pub fn is_nsys_table_set<'a>(tables: impl IntoIterator<Item = &'a str>) -> bool {
    let (mut strings, mut events) = (false, false);
    for t in tables {
        let upper = t.to_ascii_uppercase();
        strings |= upper == "STRINGIDS";
        events |= ["CUPTI_", "NVTX_", "OSRT_", "TARGET_INFO_"]
            .iter()
            .any(|p| upper.starts_with(p));
    }
    strings && events
}

/// A byte range of a file, read with positional reads (no shared cursor).
#[derive(Clone)]
struct FileRange {
    file: Arc<File>,
    start: u64,
    len: u64,
}

impl FileRange {
    fn read_at(&self, pos: u64, buf: &mut [u8]) -> io::Result<usize> {
        if pos >= self.len {
            return Ok(0);
        }
        let n = buf.len().min((self.len - pos) as usize);
        read_at(&self.file, &mut buf[..n], self.start + pos)
    }
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, at)
}

#[cfg(windows)]
fn read_at(file: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, at)
}

/// A reader over a [`FileRange`] with its own position.
struct RangeReader {
    range: FileRange,
    pos: u64,
}

impl Read for RangeReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.range.read_at(self.pos, buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for RangeReader {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let next = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => self.range.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos = next
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before the start"))?;
        Ok(self.pos)
    }
}

impl Length for FileRange {
    fn len(&self) -> u64 {
        self.len
    }
}

impl ChunkReader for FileRange {
    type T = io::BufReader<RangeReader>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(io::BufReader::new(RangeReader {
            range: self.clone(),
            pos: start,
        }))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        // A corrupt footer may claim any length: never allocate past the member.
        let end = start.saturating_add(length as u64);
        if end > self.len {
            return Err(parquet::errors::ParquetError::EOF(format!(
                "a read of {length} bytes at {start} passes the end of a {}-byte member",
                self.len
            )));
        }
        let mut buf = vec![0u8; length];
        let mut reader = RangeReader {
            range: self.clone(),
            pos: start,
        };
        reader.read_exact(&mut buf)?;
        Ok(Bytes::from(buf))
    }
}

/// One table file of the archive.
struct TableFile {
    table: String,
    member: Member,
    format: TableFileFormat,
}

/// The table files of a stored export folder.
pub struct ExportDirTables {
    file: Arc<File>,
    /// Lower-case table name → its file.
    tables: BTreeMap<String, TableFile>,
    /// Members that are not table files (kept in the artifact, not read).
    pub other_members: Vec<String>,
}

fn parse_error(message: String) -> ExtractError {
    ExtractError::Parse {
        message,
        offset: None,
    }
}

fn table_error(table: &str, e: impl std::fmt::Display) -> ExtractError {
    parse_error(format!(
        "reading table {table} of the export folder failed: {e}"
    ))
}

impl ExportDirTables {
    /// Indexes the archive at `path` and classifies each member by content.
    pub fn open(path: &Path) -> Result<ExportDirTables, ExtractError> {
        let mut file = File::open(path)?;
        let members = ustar::index(&mut file)
            .map_err(|e| parse_error(format!("not a stored export folder: {e}")))?;
        let file = Arc::new(file);
        let mut tables = BTreeMap::new();
        let mut other_members = Vec::new();
        for member in members {
            let range = FileRange {
                file: Arc::clone(&file),
                start: member.offset,
                len: member.len,
            };
            let mut head = [0u8; 8];
            let n = range.read_at(0, &mut head)?;
            let format = table_file_format(&head[..n]);
            let framing = match format {
                Some(TableFileFormat::ArrowFile) => {
                    ipc_check::check_file(&|pos, buf| range.read_at(pos, buf), range.len)
                }
                Some(TableFileFormat::ArrowStream) => {
                    ipc_check::check_stream(&|pos, buf| range.read_at(pos, buf), range.len)
                }
                _ => Ok(()),
            };
            if let Err(problem) = framing {
                return Err(parse_error(format!(
                    "the table file {} is not valid Arrow IPC: {problem}",
                    member.name
                )));
            }
            match format {
                Some(format) => {
                    let table = table_of_file(&member.name).to_string();
                    tables.insert(
                        table.to_ascii_lowercase(),
                        TableFile {
                            table,
                            member,
                            format,
                        },
                    );
                }
                None => other_members.push(member.name),
            }
        }
        if !is_nsys_table_set(tables.values().map(|t| t.table.as_str())) {
            return Err(parse_error(
                "the folder has no StringIds table plus a CUPTI/NVTX/OSRT/TARGET_INFO table"
                    .to_string(),
            ));
        }
        Ok(ExportDirTables {
            file,
            tables,
            other_members,
        })
    }

    fn range(&self, t: &TableFile) -> FileRange {
        FileRange {
            file: Arc::clone(&self.file),
            start: t.member.offset,
            len: t.member.len,
        }
    }

    fn file_of(&self, table: &str) -> Result<&TableFile, ExtractError> {
        self.tables
            .get(&table.to_ascii_lowercase())
            .ok_or_else(|| parse_error(format!("no table file for {table}")))
    }

    /// Every table with its column names in file order.
    pub fn columns(&self) -> Result<Vec<(String, Vec<String>)>, ExtractError> {
        let mut out = Vec::with_capacity(self.tables.len());
        for t in self.tables.values() {
            let schema = self.schema_of(t)?;
            let cols = schema.fields().iter().map(|f| f.name().clone()).collect();
            out.push((t.table.clone(), cols));
        }
        Ok(out)
    }

    fn schema_of(&self, t: &TableFile) -> Result<Arc<ArrowSchema>, ExtractError> {
        let range = self.range(t);
        let e = |e: &dyn std::fmt::Display| table_error(&t.table, e);
        let what = format!("the table file of {}", t.table);
        guard(&what, || -> Result<Arc<ArrowSchema>, ExtractError> {
            Ok(match t.format {
                TableFileFormat::Parquet => ParquetRecordBatchReaderBuilder::try_new(range)
                    .map_err(|x| e(&x))?
                    .schema()
                    .clone(),
                TableFileFormat::ArrowFile => FileReader::try_new(range.get_read_seek(), None)
                    .map_err(|x| e(&x))?
                    .schema(),
                TableFileFormat::ArrowStream => StreamReader::try_new(range.get_read_seek(), None)
                    .map_err(|x| e(&x))?
                    .schema(),
            })
        })?
    }

    /// Calls `each` with every record batch of `table`, reading only the
    /// named columns (those present; absent ones are simply not in the batch).
    /// Decoding runs inside [`guard`]; `each` (flameox's own code) does not.
    pub fn for_each_batch(
        &self,
        table: &str,
        columns: &[&str],
        each: &mut dyn FnMut(&RecordBatch) -> Result<(), ExtractError>,
    ) -> Result<(), ExtractError> {
        let t = self.file_of(table)?;
        let schema = self.schema_of(t)?;
        let mut projection: Vec<usize> = columns
            .iter()
            .filter_map(|c| schema.index_of(c).ok())
            .collect();
        projection.sort_unstable();
        projection.dedup();
        let range = self.range(t);
        let e = |x: &dyn std::fmt::Display| table_error(&t.table, x);
        let what = format!("the table file of {}", t.table);
        type Batches = Box<dyn Iterator<Item = Result<RecordBatch, arrow::error::ArrowError>>>;
        let mut batches = guard(&what, || -> Result<Batches, ExtractError> {
            Ok(match t.format {
                TableFileFormat::Parquet => {
                    let builder =
                        ParquetRecordBatchReaderBuilder::try_new(range).map_err(|x| e(&x))?;
                    let mask = ProjectionMask::roots(builder.parquet_schema(), projection);
                    Box::new(
                        builder
                            .with_projection(mask)
                            .with_batch_size(BATCH_ROWS)
                            .build()
                            .map_err(|x| e(&x))?,
                    )
                }
                TableFileFormat::ArrowFile => Box::new(
                    FileReader::try_new(range.get_read_seek(), Some(projection))
                        .map_err(|x| e(&x))?,
                ),
                TableFileFormat::ArrowStream => Box::new(
                    StreamReader::try_new(range.get_read_seek(), Some(projection))
                        .map_err(|x| e(&x))?,
                ),
            })
        })??;
        while let Some(batch) = guard(&what, || batches.next())? {
            each(&batch.map_err(|x| e(&x))?)?;
        }
        Ok(())
    }

    /// Whether `table` holds at least one row.
    pub fn has_rows(&self, table: &str) -> Result<bool, ExtractError> {
        let t = self.file_of(table)?;
        if t.format == TableFileFormat::Parquet {
            let what = format!("the table file of {}", t.table);
            let builder = guard(&what, || {
                ParquetRecordBatchReaderBuilder::try_new(self.range(t))
            })?
            .map_err(|x| table_error(&t.table, x))?;
            return Ok(builder.metadata().file_metadata().num_rows() > 0);
        }
        let mut any = false;
        self.for_each_batch(table, &[], &mut |b| {
            any |= b.num_rows() > 0;
            Ok(())
        })?;
        Ok(any)
    }
}

impl FileRange {
    fn get_read_seek(&self) -> io::BufReader<RangeReader> {
        io::BufReader::new(RangeReader {
            range: self.clone(),
            pos: 0,
        })
    }
}

/// A column of one batch, widened to the three types the readers use:
/// any integer (or boolean, timestamp) → Int64, floats → Float64, strings
/// (plain, large, view, dictionary) → Utf8. Real nsys Parquet exports use
/// narrower integers than the SQLite export; this makes them read the same.
pub enum Column {
    Int(arrow::array::Int64Array),
    Real(arrow::array::Float64Array),
    Text(arrow::array::StringArray),
    Missing,
}

impl Column {
    pub fn of(array: Option<&ArrayRef>) -> Result<Column, ExtractError> {
        use arrow::compute::cast;
        let Some(array) = array else {
            return Ok(Column::Missing);
        };
        let value_type = match array.data_type() {
            DataType::Dictionary(_, v) => v.as_ref().clone(),
            other => other.clone(),
        };
        let target = if value_type.is_integer()
            || matches!(
                value_type,
                DataType::Boolean
                    | DataType::Timestamp(..)
                    | DataType::Duration(_)
                    | DataType::Date64
                    | DataType::Date32
            ) {
            DataType::Int64
        } else if value_type.is_floating() || matches!(value_type, DataType::Decimal128(..)) {
            DataType::Float64
        } else if matches!(
            value_type,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
        ) {
            DataType::Utf8
        } else {
            return Ok(Column::Missing);
        };
        let cast_err = |e: arrow::error::ArrowError| {
            parse_error(format!(
                "a {:?} column cannot be read: {e}",
                array.data_type()
            ))
        };
        let widened = cast(array, &target).map_err(cast_err)?;
        let any = widened.as_any();
        let column = match target {
            DataType::Int64 => any
                .downcast_ref::<arrow::array::Int64Array>()
                .cloned()
                .map(Column::Int),
            DataType::Float64 => any
                .downcast_ref::<arrow::array::Float64Array>()
                .cloned()
                .map(Column::Real),
            _ => any
                .downcast_ref::<arrow::array::StringArray>()
                .cloned()
                .map(Column::Text),
        };
        Ok(column.unwrap_or(Column::Missing))
    }
}
