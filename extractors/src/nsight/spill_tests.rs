//! An Nsight export read through spill runs lands what the in-memory path
//! lands: every batch of every table and the summary, with NVTX range
//! phases, correlation inheritance and the correlated-kernel count.

use std::path::{Path, PathBuf};

use arrow::record_batch::RecordBatch;

use super::{Input, NSIGHT_EXTRACTOR_NAME, TableSource, extract_tables, open_readonly};
use crate::api::{ExtractOptions, ExtractionSummary, NoObserver};
use crate::detect::FormatKind;
use crate::stream_gaps::tests::Collect;

fn extract(path: &Path, spill: Option<(&Path, usize)>) -> (ExtractionSummary, Collect, u64) {
    let mut options = ExtractOptions::new("run", "sha256:a");
    options.batch_rows = 500;
    if let Some((dir, after)) = spill {
        options.spill_dir = Some(dir.to_path_buf());
        options.spill_after_events = after;
    }
    let source = TableSource::Sqlite {
        conn: open_readonly(path).unwrap(),
        path: path.to_path_buf(),
    };
    let input = Input {
        extractor: NSIGHT_EXTRACTOR_NAME,
        format: FormatKind::NsightSqlite,
        bytes: std::fs::metadata(path).unwrap().len(),
    };
    let mut sink = Collect::default();
    let (summary, spilled) =
        extract_tables(&source, input, &options, &mut sink, &NoObserver).unwrap();
    (summary, sink, spilled)
}

fn corpus(name: &str) -> PathBuf {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/corpus/nsys"
    ))
    .join(name)
}

fn rows_of(c: &Collect, table: crate::schema::EvidenceTable) -> Vec<RecordBatch> {
    c.0.iter()
        .filter(|(t, _)| *t == table)
        .map(|(_, b)| b.clone())
        .collect()
}

/// Extracts `name` in memory and with runs of `after` events: both agree
/// exactly, and the second really spilled every event.
fn assert_same_output(name: &str, after: usize) -> (ExtractionSummary, Vec<String>) {
    let dir = std::env::temp_dir().join(format!(
        "flameox-nsight-spill-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = corpus(name);
    let (want, want_batches, none) = extract(&path, None);
    let (got, got_batches, spilled) = extract(&path, Some((&dir, after)));
    assert_eq!(none, 0);
    let events = want.rows["trace_events"];
    assert!(events > 3 * after as u64, "{name}: only {events} events");
    assert_eq!(spilled, events, "{name}: events through runs of {after}");
    assert_eq!(got, want, "{name}: summaries differ (runs of {after})");
    for table in crate::schema::EvidenceTable::ALL {
        let (g, w) = (rows_of(&got_batches, table), rows_of(&want_batches, table));
        assert_eq!(g.len(), w.len(), "{name}: {} batch count", table.name());
        for (k, (g, w)) in g.iter().zip(&w).enumerate() {
            assert_eq!(g, w, "{name}: batch {k} of {} differs", table.name());
        }
    }
    // The spill files were unlinked when created.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
    (want, phase_sources(&want_batches))
}

/// The distinct `phase_source` values of `trace_events`.
fn phase_sources(c: &Collect) -> Vec<String> {
    use arrow::array::{Array, AsArray};
    let mut out = std::collections::BTreeSet::new();
    for batch in rows_of(c, crate::schema::EvidenceTable::TraceEvents) {
        let column = arrow::compute::cast(
            batch.column_by_name("phase_source").unwrap(),
            &arrow::datatypes::DataType::Utf8,
        )
        .unwrap();
        let text = column.as_string::<i32>();
        out.extend(
            (0..text.len())
                .filter(|&i| text.is_valid(i))
                .map(|i| text.value(i).to_string()),
        );
    }
    out.into_iter().collect()
}

#[test]
fn corpus_exports_land_the_same_rows_through_spill_runs() {
    for name in [
        "flameox_smoke_nsys2025.5.2.sqlite",
        "pipit_cloverleaf_a100_nsys2024.5.sqlite",
        "pipit_saxpy_mpi_a100_nsys2022.2.sqlite",
    ] {
        for after in [1, 7] {
            let (summary, sources) = assert_same_output(name, after);
            let ranged = summary.coverage["phase_annotations"];
            assert_eq!(ranged, name.starts_with("pipit_saxpy"), "{name}");
            if ranged {
                assert_eq!(sources, ["correlation", "nvtx_range"], "{name}");
            }
        }
    }
}
