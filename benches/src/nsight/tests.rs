//! Determinism of the generated export and its import through the normal
//! path, with the row counts the generator reports.

use super::*;
use crate::testing::{RowCounts, import_path};
use flameox_extractors::nsight::{
    KERNEL_TABLE, MEMCPY_TABLE, MEMSET_TABLE, NVTX_TABLE, RUNTIME_TABLE, SYNC_TABLE,
};
use flameox_extractors::{EvidenceTable, ExtractOptions, NoObserver, extract_nsight_sqlite};

fn spec(seed: u64) -> NsightSpec {
    NsightSpec {
        seed,
        events: 6_000,
        threads: 2,
        streams: 4,
        gpus: 2,
    }
}

#[test]
fn nsight_same_seed_same_bytes_other_seed_other_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b, c) = (
        dir.path().join("a.sqlite"),
        dir.path().join("b.sqlite"),
        dir.path().join("c.sqlite"),
    );
    let counts = write_nsight(&spec(4), &a).expect("write");
    // Writing over an existing file replaces it.
    std::fs::write(&b, b"stale").expect("write");
    assert_eq!(write_nsight(&spec(4), &b).expect("write"), counts);
    write_nsight(&spec(5), &c).expect("write");
    let (a, b, c) = (
        std::fs::read(a).expect("read"),
        std::fs::read(b).expect("read"),
        std::fs::read(c).expect("read"),
    );
    assert_eq!(a.len() as u64, counts.bytes);
    assert!(a == b, "same seed, different bytes");
    assert!(a != c, "different seed, same bytes");
    assert!(counts.events() >= 6_000 && counts.events() < 6_400);
}

#[test]
fn nsight_extracts_and_imports_with_the_counts_the_generator_reports() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("report.sqlite");
    let counts = write_nsight(&spec(8), &path).expect("write");
    assert!(counts.graph_launches > 0 && counts.graph_kernels > counts.graph_launches);
    assert!(counts.memset > 0 && counts.nvtx_marks > 0);

    let mut rows = RowCounts::default();
    let options = ExtractOptions::new("r", "a");
    let summary = extract_nsight_sqlite(&path, &options, &mut rows, &NoObserver).expect("extract");
    let read = &summary.metadata["tables_read"];
    for (table, n) in [
        (KERNEL_TABLE, counts.kernels),
        (RUNTIME_TABLE, counts.runtime),
        (MEMCPY_TABLE, counts.memcpy),
        (MEMSET_TABLE, counts.memset),
        (SYNC_TABLE, counts.sync),
        (NVTX_TABLE, counts.nvtx_rows),
        ("StringIds", counts.strings),
    ] {
        assert_eq!(read[table], n, "{table}");
    }
    assert_eq!(summary.input_events, counts.events());
    // Every kernel, graph nodes included, is tied to its launch call.
    assert_eq!(summary.metadata["correlated_kernels"], counts.kernels);
    let codes: Vec<&str> = summary
        .limitations
        .iter()
        .map(|l| l.code.as_str())
        .collect();
    assert_eq!(
        codes,
        ["missing_optional_tables"],
        "{:?}",
        summary.limitations
    );
    for flag in [
        "kernels",
        "runtime_api",
        "memcpy",
        "memset",
        "synchronization",
        "nvtx",
        "correlation_ids",
        "launch_geometry",
        "thread_names",
        "device_names",
        "phase_annotations",
    ] {
        assert!(summary.coverage[flag], "{flag}");
    }
    // Every row but the domain creation becomes one trace event.
    let events = counts.events() - 1;
    assert_eq!(rows.get(EvidenceTable::TraceEvents), events);

    let imported = import_path(dir.path(), &path);
    assert_eq!(imported.kind, "nsight_systems_sqlite");
    assert_eq!(imported.rows["trace_events"], events);
    assert!(
        imported
            .limitations
            .iter()
            .all(|l| l.code == "missing_optional_tables")
    );
}
