//! NVTX ranges become phases in Nsight exports: host events take the
//! outermost push/pop range that contains them on their thread, and
//! kernels inherit it through their launch's correlation id. The expected
//! kernels per phase are computed here with plain SQL over the export.

use std::collections::BTreeMap;

use flameox_tests::{Project, corpus};
use rusqlite::{Connection, OpenFlags};

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn nvtx_ranges_label_the_kernels_their_launches_ran_in() {
    let path = corpus().join("nsys/pipit_saxpy_mpi_a100_nsys2022.2.sqlite");
    let c = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).expect("open");
    // Push/pop ranges (eventType 59) per thread, outermost first.
    let mut ranges: Vec<(i64, i64, i64, String)> = c
        .prepare(
            "SELECT globalTid, start, end, coalesce(text, (SELECT value FROM StringIds WHERE id = textId))
             FROM NVTX_EVENTS WHERE eventType = 59 AND end IS NOT NULL
             ORDER BY globalTid, start, end DESC",
        )
        .expect("nvtx")
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .expect("rows")
        .map(|r| r.expect("row"))
        .collect();
    let mut covered: BTreeMap<i64, i64> = BTreeMap::new();
    ranges.retain(|(tid, start, end, _)| {
        let until = covered.entry(*tid).or_insert(i64::MIN);
        let outermost = *start >= *until;
        *until = (*until).max(*end);
        outermost
    });
    let launches: Vec<(i64, i64, i64)> = c
        .prepare(
            "SELECT k.correlationId, r.globalTid, min(r.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k
             JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
             GROUP BY k.correlationId, k.start",
        )
        .expect("launches")
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("rows")
        .map(|r| r.expect("row"))
        .collect();
    let mut expected: BTreeMap<String, i64> = BTreeMap::new();
    for (_, tid, start) in &launches {
        let phase = ranges
            .iter()
            .find(|(t, s, e, _)| t == tid && s <= start && start < e)
            .map_or("(all)".to_owned(), |r| r.3.clone());
        *expected.entry(phase).or_default() += 1;
    }
    assert!(
        expected.keys().any(|k| k != "(all)"),
        "the export's kernels run inside NVTX ranges: {expected:?}"
    );

    let project = Project::new();
    let imported = project.json(&["import", path.to_str().expect("utf-8")]);
    let run = imported["run_id"].as_str().expect("run");
    let a = project.json(&["analyze", "accelerator-launches", run]);
    let got: BTreeMap<String, i64> = a["regions"]
        .as_array()
        .expect("regions")
        .iter()
        .filter(|r| r["kernels"]["count"].as_i64() > Some(0))
        .map(|r| {
            (
                r["region"].as_str().expect("region").to_owned(),
                r["kernels"]["count"].as_i64().expect("count"),
            )
        })
        .collect();
    assert_eq!(got, expected);

    // The ranges themselves are `nvtx_range` rows, and --phase narrows.
    let phase = expected.keys().find(|k| *k != "(all)").expect("a phase");
    let one = project.json(&["analyze", "accelerator-launches", run, "--phase", phase]);
    let regions = one["regions"].as_array().expect("regions");
    assert_eq!(regions.len(), 1);
    assert_eq!(
        regions[0]["kernels"]["count"].as_i64(),
        expected.get(phase).copied()
    );
    let window = project.json(&[
        "trace",
        "window",
        run,
        "--relative",
        "--start-ns",
        "0",
        "--end-ns",
        "100000000000",
        "--kind",
        "nvtx_range",
        "--limit",
        "1000",
    ]);
    let pushed: i64 = c
        .query_row(
            "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 59",
            [],
            |r| r.get(0),
        )
        .expect("count");
    assert_eq!(
        window["total"].as_i64(),
        Some(pushed),
        "{}",
        window["evidence"]
    );
}
