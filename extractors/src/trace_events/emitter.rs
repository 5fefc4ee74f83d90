//! The writer every trace-event table goes through: adds the run and
//! artifact columns to each batch, hands it to the sink and counts rows
//! per table for the extraction summary.

use std::collections::BTreeMap;

use arrow::array::ArrayRef;
use arrow::record_batch::RecordBatch;

use crate::api::{BatchSink, ExtractError, ExtractOptions};
use crate::arrow_util::const_dict;
use crate::schema::EvidenceTable;

/// Writes batches to the sink and counts rows per table.
pub struct Emitter<'a> {
    pub run_id: &'a str,
    pub artifact_id: &'a str,
    pub batch_rows: usize,
    pub sink: &'a mut dyn BatchSink,
    pub rows: BTreeMap<String, u64>,
}

impl<'a> Emitter<'a> {
    /// An emitter for the run and artifact of `options`.
    pub fn new(options: &'a ExtractOptions, sink: &'a mut dyn BatchSink) -> Self {
        Emitter {
            run_id: &options.run_id,
            artifact_id: &options.artifact_id,
            batch_rows: options.batch_rows.max(1),
            sink,
            rows: BTreeMap::new(),
        }
    }

    /// Rows written per table, every table named (0 for none).
    pub fn into_rows(self) -> BTreeMap<String, u64> {
        let mut rows = self.rows;
        for table in EvidenceTable::ALL {
            rows.entry(table.name().to_string()).or_insert(0);
        }
        rows
    }

    pub(crate) fn write(
        &mut self,
        table: EvidenceTable,
        mut columns: Vec<ArrayRef>,
        len: usize,
    ) -> Result<(), ExtractError> {
        let mut all = vec![
            const_dict(self.run_id, len),
            const_dict(self.artifact_id, len),
        ];
        all.append(&mut columns);
        let batch = RecordBatch::try_new(table.schema(), all)
            .map_err(|e| ExtractError::Sink(Box::new(e)))?;
        *self.rows.entry(table.name().to_string()).or_insert(0) += len as u64;
        self.sink
            .write_batch(table, batch)
            .map_err(ExtractError::Sink)
    }
}
