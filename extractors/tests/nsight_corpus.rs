//! The Nsight Systems SQLite extractor on the three real exports in the
//! corpus (nsys 2022.2 / schema 2.9.1, 2024.5 / 3.13.2, 2025.5 / 3.24.0),
//! checked against numbers computed here with plain SQL on the same file
//! (rusqlite directly, not the extractor's code path), plus hand-made
//! exports for the edge cases (no runtime table, no CUPTI table at all).

mod common;

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use common::*;
use flameox_extractors::{
    EvidenceTable as T, ExtractError, ExtractionSummary, NoObserver, detect, extract_nsight_sqlite,
};
use rusqlite::{Connection, OpenFlags};

/// Numbers computed with plain SQL.
#[derive(Debug, PartialEq)]
struct Expected {
    kernels: i64,
    runtime: i64,
    memcpy: i64,
    top_kernel: (String, i64),
    correlated: i64,
}

fn open(path: &Path) -> Connection {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).expect("open")
}

fn scalar(c: &Connection, sql: &str) -> i64 {
    c.query_row(sql, [], |r| r.get(0)).expect(sql)
}

fn expected(path: &Path) -> Expected {
    let c = open(path);
    let top_kernel = c
        .query_row(
            "SELECT s.value, sum(k.\"end\" - k.start) AS t
             FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName
             GROUP BY s.value ORDER BY t DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("top kernel");
    Expected {
        kernels: scalar(&c, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"),
        runtime: scalar(&c, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME"),
        memcpy: scalar(&c, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY"),
        top_kernel,
        correlated: scalar(
            &c,
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL
             WHERE correlationId IN (SELECT correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME)",
        ),
    }
}

fn extract(path: &Path) -> Result<(ExtractionSummary, MemorySink), ExtractError> {
    let mut sink = MemorySink::default();
    let summary = extract_nsight_sqlite(path, &options(), &mut sink, &NoObserver)?;
    Ok((summary, sink))
}

/// The same numbers, from the emitted `trace_events` rows.
fn measured(sink: &MemorySink) -> Expected {
    let kind = sink.strs(T::TraceEvents, "kind");
    let cat = sink.strs(T::TraceEvents, "category");
    let name = sink.strs(T::TraceEvents, "name");
    let dur = sink.i64s(T::TraceEvents, "dur_ns");
    let corr = sink.i64s(T::TraceEvents, "correlation_id");
    let is = |i: usize, k: &str| kind[i].as_deref() == Some(k);
    let n = kind.len();
    let count = |k: &str| (0..n).filter(|&i| is(i, k)).count() as i64;
    let runtime_cat = |i: usize| cat[i].as_deref() == Some("cuda_runtime");
    let launches: HashSet<i64> = (0..n)
        .filter(|&i| runtime_cat(i))
        .filter_map(|i| corr[i])
        .collect();
    let mut by_name: BTreeMap<String, i64> = BTreeMap::new();
    for i in (0..n).filter(|&i| is(i, "kernel")) {
        *by_name
            .entry(name[i].clone().unwrap_or_default())
            .or_default() += dur[i].unwrap_or(0);
    }
    let top_kernel = by_name
        .into_iter()
        .max_by_key(|(_, t)| *t)
        .unwrap_or_default();
    Expected {
        kernels: count("kernel"),
        runtime: (0..n).filter(|&i| runtime_cat(i)).count() as i64,
        memcpy: count("memcpy"),
        top_kernel,
        correlated: (0..n)
            .filter(|&i| is(i, "kernel") && corr[i].is_some_and(|c| launches.contains(&c)))
            .count() as i64,
    }
}

/// CUPTI's "no stream" (0xFFFFFFFF) on a device-wide synchronization is no
/// stream: every synchronization row SQL finds with it comes out with a
/// null stream, and no row carries 4294967295.
#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn the_no_stream_sentinel_is_no_stream() {
    let path = corpus("nsys/pipit_cloverleaf_a100_nsys2024.5.sqlite");
    let sentinel = scalar(
        &open(&path),
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION WHERE streamId = 4294967295",
    );
    assert!(sentinel > 0, "the export has device-wide synchronizations");
    let (_, sink) = extract(&path).expect("extract");
    let kind = sink.strs(T::TraceEvents, "kind");
    let stream = sink.i64s(T::TraceEvents, "stream");
    assert!(stream.iter().all(|s| *s != Some(0xFFFF_FFFF)));
    let streamless_syncs = (0..kind.len())
        .filter(|&i| kind[i].as_deref() == Some("sync") && stream[i].is_none())
        .count() as i64;
    assert_eq!(streamless_syncs, sentinel);
}

const FILES: [&str; 3] = [
    "nsys/flameox_smoke_nsys2025.5.2.sqlite",
    "nsys/pipit_cloverleaf_a100_nsys2024.5.sqlite",
    "nsys/pipit_saxpy_mpi_a100_nsys2022.2.sqlite",
];

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn corpus_exports_match_plain_sql() {
    for file in FILES {
        let path = corpus(file);
        let want = expected(&path);
        let (summary, sink) = extract(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
        let got = measured(&sink);
        assert_eq!(got, want, "{file}");
        assert!(want.kernels > 0 && want.correlated > 0, "{file}: {want:?}");
        assert_eq!(
            summary.metadata["correlated_kernels"],
            serde_json::json!(want.correlated),
            "{file}"
        );
        assert_eq!(summary.format, "nsight_systems_sqlite");
        assert_eq!(summary.producer, "nsys");
        for flag in [
            "kernels",
            "runtime_api",
            "correlation_ids",
            "stream_identity",
        ] {
            assert_eq!(summary.coverage.get(flag), Some(&true), "{file}: {flag}");
        }
        assert_eq!(
            summary.rows["trace_events"] as usize,
            sink.rows(T::TraceEvents)
        );
        assert!(
            summary.metadata["schema_fingerprint"]
                .as_str()
                .is_some_and(|f| f.len() == 64)
        );
        assert!(summary.metadata.contains_key("nsys_version"), "{file}");
        // Kernels run on GPU stream tracks with their device and stream.
        let kind = sink.strs(T::TraceEvents, "kind");
        let stream = sink.i64s(T::TraceEvents, "stream");
        let device = sink.i64s(T::TraceEvents, "device");
        for i in (0..kind.len()).filter(|&i| kind[i].as_deref() == Some("kernel")) {
            assert!(stream[i].is_some() && device[i].is_some(), "{file} row {i}");
        }
        let track_kinds = sink.strs(T::Tracks, "kind");
        assert!(
            track_kinds
                .iter()
                .any(|k| k.as_deref() == Some("gpu_stream"))
        );
        // Device names from TARGET_INFO_GPU.
        assert!(summary.metadata["gpus"][0]["name"].is_string(), "{file}");
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn per_file_details() {
    // The 2022 export: NVTX push/pop ranges become user annotations and
    // contain the runtime calls they wrap.
    let (summary, sink) = extract(&corpus(FILES[2])).expect("saxpy");
    let c = open(&corpus(FILES[2]));
    let ranges = scalar(
        &c,
        "SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60)",
    );
    let kind = sink.strs(T::TraceEvents, "kind");
    let annotations = kind
        .iter()
        .filter(|k| k.as_deref() == Some("nvtx_range"))
        .count() as i64;
    assert_eq!(annotations, ranges);
    assert!(summary.coverage["nvtx"]);
    assert_eq!(summary.metadata["export_schema_version"], "2.9.1");
    let name = sink.strs(T::TraceEvents, "name");
    assert!(name.iter().any(|n| n.as_deref() == Some("MPI_Init")));
    // MPI_Init's range is in the MPI domain.
    let args = sink.strs(T::TraceEvents, "args_json");
    let at = name
        .iter()
        .position(|n| n.as_deref() == Some("MPI_Init"))
        .expect("MPI_Init");
    assert!(
        args[at]
            .as_deref()
            .unwrap_or("")
            .contains("\"domain\":\"MPI\"")
    );
    // Memcpy rows carry their bytes.
    let bytes = sink.i64s(T::TraceEvents, "bytes");
    let want: i64 = scalar(&c, "SELECT sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY");
    let got: i64 = (0..kind.len())
        .filter(|&i| kind[i].as_deref() == Some("memcpy"))
        .filter_map(|i| bytes[i])
        .sum();
    assert_eq!(got, want);

    // The 2025 export with whole-graph tracing: GRAPH_TRACE rows are
    // `graph_launch` device activity with their graph id, and the host
    // `cudaGraphLaunch` calls are `graph_launch` too.
    let (summary, sink) = extract(&corpus(FILES[0])).expect("smoke");
    let c = open(&corpus(FILES[0]));
    let graphs = scalar(&c, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE");
    let cat = sink.strs(T::TraceEvents, "category");
    let graph_id = sink.i64s(T::TraceEvents, "graph_id");
    let traced: Vec<usize> = (0..cat.len())
        .filter(|&i| cat[i].as_deref() == Some("cuda_graph_trace"))
        .collect();
    assert_eq!(traced.len() as i64, graphs);
    assert!(traced.iter().all(|&i| graph_id[i].is_some()));
    assert!(summary.coverage["graph_trace"]);
    let syncs = scalar(
        &c,
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    );
    let kind = sink.strs(T::TraceEvents, "kind");
    assert_eq!(
        kind.iter().filter(|k| k.as_deref() == Some("sync")).count() as i64,
        syncs
    );
    // Sync rows never nest kernels: kernels have no parent.
    let parent = sink.i64s(T::TraceEvents, "parent_event_id");
    for i in (0..kind.len()).filter(|&i| kind[i].as_deref() == Some("kernel")) {
        assert_eq!(parent[i], None);
    }
}

fn temp_db(name: &str, sql: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("flameox-nsight-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    let c = Connection::open(&path).expect("create");
    c.execute_batch(sql).expect("schema");
    drop(c);
    path
}

#[test]
fn kernels_without_runtime_import_with_coverage_saying_so() {
    let path = temp_db(
        "kernels_only.sqlite",
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
         INSERT INTO StringIds VALUES (1, 'my_kernel'), (2, 'other');
         CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, \"end\" INT, deviceId INT,
             contextId INT, streamId INT, correlationId INT, globalPid INT,
             DemangledName INT, shortName INT);
         INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
             (100, 200, 0, 1, 7, 11, 16777216, 1, 1),
             (300, 350, 0, 1, 7, 12, 16777216, 2, 2),
             (400, 900, 0, 1, 8, 13, 16777216, 1, 1);",
    );
    let head = std::fs::read(&path).expect("read");
    assert_eq!(
        detect(&head[..head.len().min(64 * 1024)], None).kind,
        flameox_extractors::FormatKind::NsightSqlite
    );
    let (summary, sink) = extract(&path).expect("extracts");
    assert_eq!(sink.rows(T::TraceEvents), 3);
    assert!(summary.coverage["kernels"]);
    assert!(!summary.coverage["runtime_api"]);
    assert!(!summary.coverage["correlation_ids"]);
    assert!(!summary.coverage["nvtx"]);
    assert_eq!(limitation(&summary, "missing_api_tables"), 1);
    assert_eq!(summary.time_span_ns, Some((100, 900)));
    let m = measured(&sink);
    assert_eq!(m.top_kernel, ("my_kernel".to_string(), 600));
    // Two streams → two GPU stream tracks, pid 1 from globalPid.
    assert_eq!(sink.rows(T::Tracks), 2);
    assert!(sink.i64s(T::Tracks, "pid").iter().all(|p| *p == Some(1)));
    // The file was only read.
    assert_eq!(std::fs::read(&path).expect("read"), head);
}

#[test]
fn an_export_without_cupti_tables_still_succeeds_and_garbage_fails() {
    let path = temp_db(
        "strings_only.sqlite",
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);",
    );
    let (summary, sink) = extract(&path).expect("extracts");
    assert_eq!(sink.rows(T::TraceEvents), 0);
    assert!(!summary.coverage["kernels"]);
    assert_eq!(limitation(&summary, "missing_kernel_table"), 1);
    // Not a plain SQLite with unrelated tables: detection keeps it `sqlite`.
    let head = std::fs::read(&path).expect("read");
    assert_eq!(
        detect(&head, None).kind,
        flameox_extractors::FormatKind::Sqlite
    );
    let mut bad = b"SQLite format 3\0".to_vec();
    bad.resize(4096, 0);
    let garbage =
        std::env::temp_dir().join(format!("flameox-nsight-bad-{}.sqlite", std::process::id()));
    std::fs::write(&garbage, &bad).expect("write");
    assert!(matches!(extract(&garbage), Err(ExtractError::Parse { .. })));
    let _ = std::fs::remove_file(&garbage);
}
