//! The MPI calls of an Nsight export beside the collectives, against SQL
//! over the export: per operation the calls, time and median of the NVTX
//! ranges in the `MPI` domain, and the part of them the device spent idle
//! (the union of kernels, copies and sets, computed here). A second rank,
//! the same export with its sends started 5 ms later, is matched call by
//! call: each send's start spread is 5 ms, each receive's 0.

use std::collections::BTreeMap;

use flameox_tests::{Project, corpus};
use serde_json::Value;

const EXPORT: &str = "nsys/pipit_saxpy_mpi_a100_nsys2022.2.sqlite";

/// Per MPI operation: its calls' (start, end).
fn mpi_calls(c: &rusqlite::Connection) -> BTreeMap<String, Vec<(i64, i64)>> {
    let mut q = c
        .prepare(
            "SELECT name, start, end FROM (SELECT COALESCE(e.text, s.value) AS name, e.start, e.end, e.domainId \
             FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId) \
             WHERE domainId = (SELECT domainId FROM NVTX_EVENTS WHERE eventType = 75 AND text = 'MPI') \
             AND name LIKE 'MPI!_%' ESCAPE '!' AND end IS NOT NULL",
        )
        .expect("query");
    let mut out: BTreeMap<String, Vec<(i64, i64)>> = BTreeMap::new();
    let rows = q
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get(1)?, r.get(2)?)))
        .expect("rows");
    for row in rows {
        let (name, s, e) = row.expect("row");
        out.entry(name).or_default().push((s, e));
    }
    out
}

/// The device's busy time as disjoint segments.
fn device_union(c: &rusqlite::Connection) -> Vec<(i64, i64)> {
    let mut all: Vec<(i64, i64)> = Vec::new();
    for table in [
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
    ] {
        let mut q = c
            .prepare(&format!("SELECT start, end FROM {table}"))
            .expect("query");
        let rows = q
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("rows");
        all.extend(rows.map(|r| r.expect("row")));
    }
    all.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::new();
    for (s, e) in all {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

fn rows_of(a: &Value) -> Vec<Value> {
    a["collectives"]["mpi"]["rows"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn mpi_calls_match_sql_over_the_saxpy_export_and_match_across_ranks() {
    let db = corpus().join(EXPORT);
    let c = rusqlite::Connection::open(&db).expect("export");
    let calls = mpi_calls(&c);
    let busy = device_union(&c);
    assert!(calls.len() >= 3, "{calls:?}");
    let project = Project::new();
    let run = project.import_corpus(EXPORT);
    let a = project.json(&[
        "analyze",
        "gpu-diagnosis",
        &run,
        "--section",
        "collectives",
        "--limit",
        "10",
    ]);
    let rows = rows_of(&a);
    assert_eq!(rows.len(), calls.len(), "{a}");
    for row in &rows {
        let list = &calls[row["operation"].as_str().expect("operation")];
        let mut durs: Vec<i64> = list.iter().map(|(s, e)| e - s).collect();
        durs.sort_unstable();
        let overlapped: i64 = list
            .iter()
            .map(|&(s, e)| {
                busy.iter()
                    .map(|&(a, b)| (b.min(e) - a.max(s)).max(0))
                    .sum::<i64>()
            })
            .sum();
        let time: i64 = durs.iter().sum();
        assert_eq!(row["calls"].as_u64(), Some(list.len() as u64), "{row}");
        assert_eq!(row["time_ns"].as_i64(), Some(time), "{row}");
        assert_eq!(
            row["median_ns"].as_i64(),
            Some(durs[durs.len() / 2]),
            "{row}"
        );
        assert_eq!(row["overlapped_ns"].as_i64(), Some(overlapped), "{row}");
        assert_eq!(row["exposed_ns"].as_i64(), Some(time - overlapped), "{row}");
        assert!(row["start_spread_median_ns"].is_null(), "one rank: {row}");
    }

    // A second rank whose sends start 5 ms later.
    let late = project.path().join("rank1.sqlite");
    std::fs::copy(&db, &late).expect("copy");
    let c = rusqlite::Connection::open(&late).expect("copy");
    c.execute(
        "UPDATE NVTX_EVENTS SET start = start + 5000000, end = end + 5000000 \
         WHERE COALESCE(text, (SELECT value FROM StringIds WHERE id = textId)) = 'MPI_Send'",
        [],
    )
    .expect("shift");
    drop(c);
    let second = project.import_path(&late);
    let both = project.json(&[
        "analyze",
        "gpu-diagnosis",
        &run,
        &second,
        "--section",
        "collectives",
        "--limit",
        "10",
    ]);
    let rows = rows_of(&both);
    let spread = |op: &str| -> Vec<Option<i64>> {
        rows.iter()
            .filter(|r| r["operation"] == op)
            .map(|r| r["start_spread_median_ns"].as_i64())
            .collect()
    };
    assert_eq!(spread("MPI_Send"), vec![Some(5_000_000); 2], "{both}");
    assert_eq!(spread("MPI_Recv"), vec![Some(0); 2], "{both}");
}
