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

/// The timeline is physically possible: no kernel starts before the call
/// that launched it, device work on one stream never overlaps, one thread
/// makes one call at a time, and graph nodes belong to a graph launch.
#[test]
fn nsight_timeline_is_consistent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("report.sqlite");
    let counts = write_nsight(&spec(12), &path).expect("write");
    let conn = Connection::open(&path).expect("open");
    let count =
        |sql: &str| -> u64 { conn.query_row(sql, [], |r| r.get::<_, i64>(0)).expect(sql) as u64 };
    let before = "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k
        JOIN CUPTI_ACTIVITY_KIND_RUNTIME r USING (correlationId) WHERE k.start < r.start";
    assert_eq!(count(before), 0, "kernel before its launch");
    let overlaps = "SELECT count(*) FROM (SELECT start, lag(end) OVER (
          PARTITION BY deviceId, streamId ORDER BY start) AS prev FROM (
          SELECT start, end, deviceId, streamId FROM CUPTI_ACTIVITY_KIND_KERNEL
          UNION ALL SELECT start, end, deviceId, streamId FROM CUPTI_ACTIVITY_KIND_MEMCPY
          UNION ALL SELECT start, end, deviceId, streamId FROM CUPTI_ACTIVITY_KIND_MEMSET))
        WHERE start < prev";
    assert_eq!(count(overlaps), 0, "overlapping work on a stream");
    let host = "SELECT count(*) FROM (SELECT start, lag(end) OVER (
          PARTITION BY globalTid ORDER BY start) AS prev FROM CUPTI_ACTIVITY_KIND_RUNTIME)
        WHERE start < prev";
    assert_eq!(count(host), 0, "overlapping calls on a thread");
    let graph_nodes = "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k
        JOIN CUPTI_ACTIVITY_KIND_RUNTIME r USING (correlationId)
        JOIN StringIds s ON s.id = r.nameId
        WHERE k.graphId IS NOT NULL AND s.value = 'cudaGraphLaunch_v10000'";
    assert_eq!(count(graph_nodes), counts.graph_kernels);
    let streams =
        "SELECT count(DISTINCT deviceId * 1000 + streamId) FROM CUPTI_ACTIVITY_KIND_KERNEL";
    // Compute, NCCL and one side stream per thread (the copy stream has no kernels).
    assert_eq!(count(streams), 6);
}
