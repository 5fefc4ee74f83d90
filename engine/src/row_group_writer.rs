//! A Parquet file written a row group at a time, its columns encoded on two
//! threads.
//!
//! `ArrowWriter` encodes and compresses every column of a row group on the
//! calling thread; at the end of a JSON import that is the writer thread's
//! whole load and the longest step. This writer gathers a row group's
//! batches and encodes its columns on the calling thread and a scoped helper
//! thread, each taking the costliest column left until none is. (Splitting
//! by bytes in advance left `args_json` alone on one side and every per-row
//! column on the other: the helper idled for most of each row group.) The
//! bytes are `ArrowWriter`'s: the same column writers are fed the same
//! slices in the same order (`tests::files_are_byte_identical_to_arrow_writer`).

use flameox_extractors::phase_cpu::{self, Phase};
use std::fs::File;
use std::sync::Mutex;

use datafusion::arrow::array::Array;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::arrow::arrow_writer::{
    ArrowColumnChunk, ArrowColumnWriter, ArrowLeafColumn, ArrowRowGroupWriterFactory,
    compute_leaves,
};
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::parquet::file::writer::SerializedFileWriter;

type Result<T> = std::result::Result<T, ParquetError>;

/// One column writer with the leaves it still has to encode.
struct ColumnJob {
    position: usize,
    writer: ArrowColumnWriter,
    leaves: Vec<ArrowLeafColumn>,
    bytes: usize,
    rows: usize,
}

impl ColumnJob {
    /// What encoding the column is expected to cost, in bytes' worth: each
    /// value costs about as much as 48 bytes of input (dictionary lookup,
    /// levels, statistics), whatever its size (measured per column with
    /// `writer-cost`: an integer column of 824 K rows takes ~40 ms, a
    /// 80 MB text column ~170 ms).
    fn cost(&self) -> usize {
        self.bytes.saturating_add(self.rows.saturating_mul(48))
    }
}

/// Writes `RecordBatch`es as row groups of at most the properties' row count.
pub struct RowGroupWriter {
    file: SerializedFileWriter<File>,
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    max_rows: usize,
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    row_groups: usize,
}

impl RowGroupWriter {
    pub fn try_new(file: File, schema: SchemaRef, props: WriterProperties) -> Result<Self> {
        let max_rows = props.max_row_group_row_count().unwrap_or(usize::MAX).max(1);
        let (file, factory) =
            ArrowWriter::try_new(file, schema.clone(), Some(props))?.into_serialized_writer()?;
        Ok(RowGroupWriter {
            file,
            factory,
            schema,
            max_rows,
            pending: Vec::new(),
            pending_rows: 0,
            row_groups: 0,
        })
    }

    /// Buffers `batch`, encoding each row group as soon as it is full. A
    /// batch is cut at row group boundaries exactly where `ArrowWriter`
    /// cuts it.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let mut rest = batch.clone();
        while rest.num_rows() > 0 {
            let take = (self.max_rows - self.pending_rows).min(rest.num_rows());
            self.pending.push(rest.slice(0, take));
            self.pending_rows += take;
            rest = rest.slice(take, rest.num_rows() - take);
            if self.pending_rows >= self.max_rows {
                self.flush()?;
            }
        }
        Ok(())
    }

    /// Encodes the buffered rows as one row group and appends it.
    fn flush(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let batches = std::mem::take(&mut self.pending);
        self.pending_rows = 0;
        let mut jobs: Vec<ColumnJob> = self
            .factory
            .create_column_writers(self.row_groups)?
            .into_iter()
            .enumerate()
            .map(|(position, writer)| ColumnJob {
                position,
                writer,
                leaves: Vec::new(),
                bytes: 0,
                rows: 0,
            })
            .collect();
        for batch in &batches {
            let mut next = jobs.iter_mut();
            for (field, column) in self.schema.fields().iter().zip(batch.columns()) {
                let size = column.to_data().get_slice_memory_size().unwrap_or(0);
                for leaf in compute_leaves(field.as_ref(), column)? {
                    let job = next.next().ok_or_else(|| {
                        ParquetError::General("more leaves than column writers".into())
                    })?;
                    job.leaves.push(leaf);
                    job.bytes += size;
                    job.rows += batch.num_rows();
                }
            }
        }
        // Costliest last: each thread pops the costliest column left.
        jobs.sort_unstable_by_key(ColumnJob::cost);
        let queue = Mutex::new(jobs);
        let (mine, theirs) = std::thread::scope(|scope| {
            let helper = scope.spawn(|| {
                let _phase = phase_cpu::enter(Phase::Write);
                encode_from(&queue)
            });
            let mine = encode_from(&queue);
            let theirs = helper
                .join()
                .unwrap_or_else(|_| Err(ParquetError::General("a column encoder panicked".into())));
            (mine, theirs)
        });
        let mut chunks = mine?;
        chunks.extend(theirs?);
        chunks.sort_unstable_by_key(|(position, _)| *position);
        let mut row_group = self.file.next_row_group()?;
        for (_, chunk) in chunks {
            chunk.append_to_row_group(&mut row_group)?;
        }
        row_group.close()?;
        self.row_groups += 1;
        Ok(())
    }

    /// Writes the last row group and the footer; returns the file.
    pub fn into_inner(mut self) -> Result<File> {
        self.flush()?;
        self.file.into_inner()
    }
}

/// Encodes the columns taken from `queue`, costliest first, until none is
/// left (or one fails: the other thread then drains the rest).
fn encode_from(queue: &Mutex<Vec<ColumnJob>>) -> Result<Vec<(usize, ArrowColumnChunk)>> {
    let mut done = Vec::new();
    loop {
        let next = queue.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let Some(mut job) = next else {
            return Ok(done);
        };
        for leaf in &job.leaves {
            job.writer.write(leaf)?;
        }
        done.push((job.position, job.writer.close()?));
    }
}

#[cfg(test)]
mod tests;
