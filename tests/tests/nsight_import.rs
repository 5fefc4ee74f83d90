//! Nsight Systems SQLite exports through the real binary: each corpus export
//! imports by content detection, and `trace window` / `analyze hotspots`
//! answer with the numbers plain SQL on the same file gives (kernel,
//! runtime and memcpy counts, the top kernel and its total time). The
//! `.nsys-rep` report stays refused.

use flameox_tests::{Project, corpus};
use rusqlite::{Connection, OpenFlags};
use serde_json::Value;

fn scalar(c: &Connection, sql: &str) -> i64 {
    c.query_row(sql, [], |r| r.get(0)).expect(sql)
}

/// Events of `kind` in the whole trace, through `trace window`.
fn window_total(project: &Project, artifact: &str, span: (i64, i64), kind: &str) -> i64 {
    let w = project.json(&[
        "trace",
        "window",
        artifact,
        "--start-ns",
        &span.0.to_string(),
        "--end-ns",
        &(span.1 + 1).to_string(),
        "--kind",
        kind,
        "--limit",
        "1",
    ]);
    w["total"].as_i64().unwrap_or_else(|| panic!("total: {w}"))
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn corpus_exports_answer_like_plain_sql() {
    let project = Project::new();
    for file in [
        "flameox_smoke_nsys2025.5.2.sqlite",
        "pipit_cloverleaf_a100_nsys2024.5.sqlite",
        "pipit_saxpy_mpi_a100_nsys2022.2.sqlite",
    ] {
        let path = corpus().join("nsys").join(file);
        let c = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).expect("open");
        let kernels = scalar(&c, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL");
        let runtime = scalar(&c, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME");
        let memcpy = scalar(&c, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY");
        let (top, top_ns): (String, i64) = c
            .query_row(
                "SELECT s.value, sum(k.\"end\" - k.start) AS t
                 FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName
                 GROUP BY s.value ORDER BY t DESC LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("top kernel");
        let correlated = scalar(
            &c,
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL
             WHERE correlationId IN (SELECT correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME)",
        );

        let imported = project.json(&["import", path.to_str().expect("utf-8")]);
        assert_eq!(imported["kind"], "nsight_systems_sqlite", "{file}");
        assert_eq!(imported["producer"], "nsys");
        assert_eq!(imported["coverage"]["kernels"], true);
        let run = imported["run_id"].as_str().expect("run").to_owned();
        let artifact = imported["artifact_id"]
            .as_str()
            .expect("artifact")
            .to_owned();
        let span = (
            imported["time_span_ns"][0].as_i64().expect("start"),
            imported["time_span_ns"][1].as_i64().expect("end"),
        );
        assert_eq!(
            window_total(&project, &artifact, span, "kernel"),
            kernels,
            "{file}"
        );
        assert_eq!(
            window_total(&project, &artifact, span, "memcpy"),
            memcpy,
            "{file}"
        );
        // Runtime calls are runtime_api, or graph_launch for cudaGraphLaunch.
        let api = window_total(&project, &artifact, span, "runtime_api");
        let graph_host = scalar(
            &c,
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId
             WHERE s.value LIKE 'cu%GraphLaunch%'",
        );
        assert_eq!(api + graph_host, runtime, "{file}");

        let hot = project.json(&["analyze", "hotspots", &run, "--limit", "1000"]);
        let rows = hot["rows"].as_array().expect("rows");
        let row: &Value = rows
            .iter()
            .find(|r| r["function"] == top.as_str() && r["category"] == "kernel")
            .unwrap_or_else(|| panic!("{file}: {top} in hotspots"));
        assert_eq!(row["inclusive_value"].as_i64(), Some(top_ns), "{file}");

        let shown = project.json(&["runs", "show", &run]);
        let text = shown.to_string();
        assert!(
            text.contains(&format!("\"correlated_kernels\":{correlated}")),
            "{file}: {correlated} correlated in {shown}"
        );
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_report_and_a_plain_sqlite_stay_refused() {
    let project = Project::new();
    let report = corpus()
        .join("nsys")
        .join("apax_rtx4070_nsys2026.1.nsys-rep");
    project.json_err(
        &["import", report.to_str().expect("utf-8")],
        "CAPABILITY_UNAVAILABLE",
        3,
    );
    let plain = project.path().join("plain.sqlite");
    let c = Connection::open(&plain).expect("create");
    c.execute_batch(
        "CREATE TABLE notes (id INTEGER, body TEXT); INSERT INTO notes VALUES (1, 'x');",
    )
    .expect("schema");
    drop(c);
    project.json_err(
        &["import", plain.to_str().expect("utf-8")],
        "CAPABILITY_UNAVAILABLE",
        3,
    );
}
