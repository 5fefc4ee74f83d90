//! An Nsight export read through spill runs lands what the in-memory path
//! lands: every batch of every table and the summary, with NVTX range
//! phases, correlation inheritance and the correlated-kernel count.

use std::path::{Path, PathBuf};

use super::{Input, NSIGHT_EXTRACTOR_NAME, TableSource, extract_tables, open_readonly};
use crate::api::{ExtractionSummary, NoObserver};
use crate::format_kind::FormatKind;
use crate::spill_compare::{Extracted, assert_every_event_spills_the_same, batches_of, options};
use crate::stream_gaps::tests::Collect;

fn extract(path: &Path, spill: Option<(&Path, usize)>) -> Extracted {
    let options = options(spill);
    let source = TableSource::Sqlite {
        conn: open_readonly(path).unwrap(),
        path: path.to_path_buf(),
        interrupts: &Default::default(),
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
    Path::new(env!("FLAMEOX_CORPUS_DIR"))
        .join("nsys")
        .join(name)
}

/// Extracts `name` in memory and with runs of `after` events: both agree
/// exactly, and the second really spilled every event.
fn assert_same_output(name: &str, after: usize) -> (ExtractionSummary, Vec<String>) {
    let path = corpus(name);
    let (want, want_batches) =
        assert_every_event_spills_the_same(name, after, |spill| extract(&path, spill));
    (want, phase_sources(&want_batches))
}

/// The distinct `phase_source` values of `trace_events`.
fn phase_sources(c: &Collect) -> Vec<String> {
    use arrow::array::{Array, AsArray};
    let mut out = std::collections::BTreeSet::new();
    for batch in batches_of(c, crate::schema::EvidenceTable::TraceEvents) {
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
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
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
