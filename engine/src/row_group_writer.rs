//! A Parquet file written a row group at a time, its columns encoded on two
//! threads.
//!
//! `ArrowWriter` encodes and compresses every column of a row group on the
//! calling thread; at the end of a JSON import that is the writer thread's
//! whole load and the longest step. This writer gathers a row group's
//! batches, splits its columns into two sets of about equal size and encodes
//! one set on a scoped helper thread. The bytes are `ArrowWriter`'s: the
//! same column writers are fed the same slices in the same order
//! (`tests::files_are_byte_identical_to_arrow_writer`).

use std::fs::File;

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
                }
            }
        }
        let (here, there) = split_by_size(jobs);
        let (mine, theirs) = std::thread::scope(|scope| {
            let helper = scope.spawn(move || encode(there));
            let mine = encode(here);
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

/// Two sets of columns of about equal input size (largest first, each to
/// the lighter set).
fn split_by_size(mut jobs: Vec<ColumnJob>) -> (Vec<ColumnJob>, Vec<ColumnJob>) {
    jobs.sort_unstable_by_key(|job| std::cmp::Reverse(job.bytes));
    let (mut here, mut there) = (Vec::new(), Vec::new());
    let (mut here_bytes, mut there_bytes) = (0usize, 0usize);
    for job in jobs {
        if here_bytes <= there_bytes {
            here_bytes += job.bytes;
            here.push(job);
        } else {
            there_bytes += job.bytes;
            there.push(job);
        }
    }
    (here, there)
}

fn encode(jobs: Vec<ColumnJob>) -> Result<Vec<(usize, ArrowColumnChunk)>> {
    jobs.into_iter()
        .map(|mut job| {
            for leaf in &job.leaves {
                job.writer.write(leaf)?;
            }
            Ok((job.position, job.writer.close()?))
        })
        .collect()
}

#[cfg(test)]
mod tests;
