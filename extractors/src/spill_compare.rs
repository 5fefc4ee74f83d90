//! Test support shared by the spill tests of every trace extractor: a
//! private spill folder, and the check that a spilled extraction wrote
//! what the in-memory one wrote, batch for batch.

use std::path::{Path, PathBuf};

use arrow::array::{Array, Int64Array, StringArray};
use arrow::datatypes::DataType;
use arrow::record_batch::RecordBatch;

use crate::api::{ExtractOptions, ExtractionSummary};
use crate::schema::EvidenceTable;
use crate::stream_gaps::tests::Collect;

/// One extraction: its summary, its batches, and how many events went
/// through spill runs.
pub type Extracted = (ExtractionSummary, Collect, u64);

/// Options with 500-row batches that spill into `spill.0` past `spill.1`
/// events when given.
pub fn options(spill: Option<(&Path, usize)>) -> ExtractOptions {
    let mut options = ExtractOptions::new("run", "sha256:a");
    options.batch_rows = 500;
    if let Some((dir, after)) = spill {
        options.spill_dir = Some(dir.to_path_buf());
        options.spill_after_events = after;
    }
    options
}

/// Runs `extract` in memory and with runs of `after` events: both agree
/// exactly (summary and every batch), the second spilled every event and
/// left no file. Returns the in-memory summary and batches.
pub fn assert_every_event_spills_the_same(
    name: &str,
    after: usize,
    extract: impl Fn(Option<(&Path, usize)>) -> Extracted,
) -> (ExtractionSummary, Collect) {
    let dir = spill_dir("cmp");
    let (want, want_batches, none) = extract(None);
    let (got, got_batches, spilled) = extract(Some((&dir, after)));
    assert_eq!(none, 0);
    let events = want.rows["trace_events"];
    assert!(events > 3 * after as u64, "{name}: only {events} events");
    assert_eq!(spilled, events, "{name}: events through runs of {after}");
    assert_eq!(got, want, "{name}: summaries differ (runs of {after})");
    assert_same_tables(name, &got_batches, &want_batches);
    assert_no_spill_files_left(&dir);
    (want, want_batches)
}

/// A fresh folder for one test's spill files.
pub fn spill_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "flameox-spill-{tag}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The batches `c` received for `table`, in order.
pub fn batches_of(c: &Collect, table: EvidenceTable) -> Vec<RecordBatch> {
    c.0.iter()
        .filter(|(t, _)| *t == table)
        .map(|(_, b)| b.clone())
        .collect()
}

/// Every table got the same batches in the same places. Tables may come
/// in another order (each is its own file).
pub fn assert_same_tables(name: &str, got: &Collect, want: &Collect) {
    for table in EvidenceTable::ALL {
        let (g, w) = (batches_of(got, table), batches_of(want, table));
        assert_eq!(g.len(), w.len(), "{name}: {} batch count", table.name());
        for (k, (g, w)) in g.iter().zip(&w).enumerate() {
            assert_eq!(g, w, "{name}: batch {k} of {} differs", table.name());
        }
    }
    assert_eq!(got.0.len(), want.0.len(), "{name}: batches");
}

/// The spill files were unlinked when created: `dir` is empty; removes it.
pub fn assert_no_spill_files_left(dir: &Path) {
    assert_eq!(std::fs::read_dir(dir).unwrap().count(), 0);
    std::fs::remove_dir_all(dir).unwrap();
}

/// A column as text (any type cast to Utf8), nulls kept.
pub fn texts(b: &RecordBatch, name: &str) -> Vec<Option<String>> {
    let c = arrow::compute::cast(b.column_by_name(name).unwrap(), &DataType::Utf8).unwrap();
    let c = c.as_any().downcast_ref::<StringArray>().unwrap();
    (0..c.len())
        .map(|i| c.is_valid(i).then(|| c.value(i).to_owned()))
        .collect()
}

/// A column as i64 (any integer type cast), nulls kept.
pub fn ints(b: &RecordBatch, name: &str) -> Vec<Option<i64>> {
    let c = arrow::compute::cast(b.column_by_name(name).unwrap(), &DataType::Int64).unwrap();
    let c = c.as_any().downcast_ref::<Int64Array>().unwrap();
    (0..c.len())
        .map(|i| c.is_valid(i).then(|| c.value(i)))
        .collect()
}
