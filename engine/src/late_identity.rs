//! An artifact id that becomes known while its extraction runs.
//!
//! A new file's sha256 used to be computed by a read-only pass before the
//! copy and the extraction started — about 0.2–0.4 s per 200 MB on the
//! critical path, and a second sha256 of the same bytes. Now the copier's
//! own hash is the id: extraction starts at once with
//! [`PENDING_ARTIFACT_ID`] in its options, and [`LateIdSink`] writes every
//! batch with the real id in its `artifact_id` column. Extractors only put
//! the id in that column (dictionary-encoded, one value), so the stamp is a
//! swap of the dictionary's one value.
//!
//! The sink never blocks while the extractor may still be reading (the
//! copier could be waiting for the extractor to take a block): batches that
//! arrive before the id are held, and [`LateIdSink::finish`] — called after
//! the extractor has returned and dropped its stream — waits for the id and
//! writes them. Every extractor emits after its input ends, so in practice
//! nothing waits long.

use std::sync::{Arc, Condvar, Mutex};

use datafusion::arrow::array::{Array, ArrayRef, DictionaryArray, StringArray};
use datafusion::arrow::datatypes::Int32Type;
use datafusion::arrow::record_batch::RecordBatch;
use flameox_extractors::{BatchSink, EvidenceTable, SinkError};

/// The id extractors stamp until the real one is known (never published:
/// [`LateIdSink`] replaces it in every batch or fails).
pub const PENDING_ARTIFACT_ID: &str = "sha256:pending";

/// A one-time slot for the id (or the reason there is none).
#[derive(Default)]
pub struct LateArtifactId {
    slot: Mutex<Option<Result<String, String>>>,
    ready: Condvar,
}

impl LateArtifactId {
    pub fn new() -> Arc<LateArtifactId> {
        Arc::new(LateArtifactId::default())
    }

    /// Sets the outcome once; later calls are ignored.
    pub fn resolve(&self, outcome: Result<String, String>) {
        let mut slot = self.slot.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(outcome);
            self.ready.notify_all();
        }
    }

    /// The outcome if it is known.
    pub fn try_get(&self) -> Option<Result<String, String>> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Waits for the outcome.
    pub fn wait(&self) -> Result<String, String> {
        let mut slot = self.slot.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(outcome) = slot.as_ref() {
                return outcome.clone();
            }
            slot = self.ready.wait(slot).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// Resolves the slot with an error when dropped unresolved (a copier that
/// returned early or panicked must not leave [`LateArtifactId::wait`]
/// blocked forever).
pub struct ResolveOnDrop(pub Arc<LateArtifactId>);

impl Drop for ResolveOnDrop {
    fn drop(&mut self) {
        self.0
            .resolve(Err("the artifact copy stopped before its end".into()));
    }
}

/// Writes batches with the real artifact id once it is known.
pub struct LateIdSink<'a> {
    inner: &'a mut dyn BatchSink,
    id: Arc<LateArtifactId>,
    held: Vec<(EvidenceTable, RecordBatch)>,
}

impl<'a> LateIdSink<'a> {
    pub fn new(inner: &'a mut dyn BatchSink, id: Arc<LateArtifactId>) -> Self {
        LateIdSink {
            inner,
            id,
            held: Vec::new(),
        }
    }

    /// Waits for the id, writes what was held and returns the id. Call it
    /// only once the extractor has dropped its input stream.
    pub fn finish(mut self) -> Result<String, SinkError> {
        let id = self.id.wait()?;
        self.flush(&id)?;
        Ok(id)
    }

    fn flush(&mut self, id: &str) -> Result<(), SinkError> {
        for (table, batch) in std::mem::take(&mut self.held) {
            self.inner.write_batch(table, stamp(batch, id)?)?;
        }
        Ok(())
    }
}

impl BatchSink for LateIdSink<'_> {
    fn write_batch(&mut self, table: EvidenceTable, batch: RecordBatch) -> Result<(), SinkError> {
        match self.id.try_get() {
            Some(Ok(id)) => {
                self.flush(&id)?;
                self.inner.write_batch(table, stamp(batch, &id)?)
            }
            Some(Err(why)) => Err(why.into()),
            None => {
                self.held.push((table, batch));
                Ok(())
            }
        }
    }
}

/// `batch` with its `artifact_id` column's one dictionary value, which must
/// be [`PENDING_ARTIFACT_ID`], replaced by `id`.
fn stamp(batch: RecordBatch, id: &str) -> Result<RecordBatch, SinkError> {
    let Ok(index) = batch.schema().index_of("artifact_id") else {
        return Ok(batch);
    };
    let column = batch.column(index);
    let Some(dict) = column.as_any().downcast_ref::<DictionaryArray<Int32Type>>() else {
        return Err("artifact_id is not a dictionary column".into());
    };
    let values = dict.values().as_any().downcast_ref::<StringArray>();
    let pending_only = values
        .is_some_and(|v| (0..v.len()).all(|i| v.is_valid(i) && v.value(i) == PENDING_ARTIFACT_ID));
    if !pending_only {
        return Err("artifact_id holds a value other than the pending id".into());
    }
    let values: ArrayRef = Arc::new(StringArray::from(vec![id; dict.values().len()]));
    let stamped: ArrayRef = Arc::new(dict.with_values(values));
    let mut columns = batch.columns().to_vec();
    columns[index] = stamped;
    Ok(RecordBatch::try_new(batch.schema(), columns)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Int64Array;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    struct Collect(Vec<RecordBatch>);
    impl BatchSink for Collect {
        fn write_batch(&mut self, _: EvidenceTable, b: RecordBatch) -> Result<(), SinkError> {
            self.0.push(b);
            Ok(())
        }
    }

    fn batch(artifact: &str, n: i64) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new(
                "artifact_id",
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
                false,
            ),
            Field::new("x", DataType::Int64, false),
        ]));
        let keys = datafusion::arrow::array::Int32Array::from(vec![0; n as usize]);
        let dict = DictionaryArray::<Int32Type>::try_new(
            keys,
            Arc::new(StringArray::from(vec![artifact])),
        )
        .unwrap();
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(dict),
                Arc::new(Int64Array::from((0..n).collect::<Vec<_>>())),
            ],
        )
        .unwrap()
    }

    fn ids(b: &RecordBatch) -> Vec<String> {
        let dict = b
            .column(0)
            .as_any()
            .downcast_ref::<DictionaryArray<Int32Type>>()
            .unwrap();
        let typed = dict.downcast_dict::<StringArray>().unwrap();
        typed.into_iter().map(|v| v.unwrap().to_string()).collect()
    }

    #[test]
    fn batches_before_the_id_are_held_and_all_are_stamped() {
        let id = LateArtifactId::new();
        let mut out = Collect(Vec::new());
        let mut sink = LateIdSink::new(&mut out, id.clone());
        sink.write_batch(EvidenceTable::TraceEvents, batch(PENDING_ARTIFACT_ID, 3))
            .unwrap();
        id.resolve(Ok("sha256:abc".into()));
        sink.write_batch(EvidenceTable::TraceEvents, batch(PENDING_ARTIFACT_ID, 2))
            .unwrap();
        assert_eq!(sink.finish().unwrap(), "sha256:abc");
        assert_eq!(out.0.len(), 2);
        assert_eq!(ids(&out.0[0]), vec!["sha256:abc"; 3]);
        assert_eq!(ids(&out.0[1]), vec!["sha256:abc"; 2]);
    }

    #[test]
    fn a_batch_naming_another_artifact_or_a_failed_copy_is_an_error() {
        let id = LateArtifactId::new();
        id.resolve(Ok("sha256:abc".into()));
        let mut out = Collect(Vec::new());
        let mut sink = LateIdSink::new(&mut out, id);
        assert!(
            sink.write_batch(EvidenceTable::TraceEvents, batch("sha256:other", 1))
                .is_err()
        );
        let failed = LateArtifactId::new();
        let mut out = Collect(Vec::new());
        let mut sink = LateIdSink::new(&mut out, failed.clone());
        sink.write_batch(EvidenceTable::TraceEvents, batch(PENDING_ARTIFACT_ID, 1))
            .unwrap();
        drop(ResolveOnDrop(failed.clone()));
        assert!(sink.finish().is_err());
        assert!(out.0.is_empty());
        // Resolving twice keeps the first outcome.
        failed.resolve(Ok("sha256:late".into()));
        assert!(failed.wait().is_err());
    }
}
