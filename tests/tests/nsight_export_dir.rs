//! `nsys export --type parquetdir` / `arrowdir` folders through the real
//! binary. Every corpus SQLite export is converted here (rusqlite → Arrow →
//! `<TABLE>.parquet` / `<TABLE>.arrow`, independent of production code) and
//! the three imports must give identical evidence: per-table row counts
//! (equal to `count(*)` on the file), the schema fingerprint, every page of
//! `trace window`, `analyze gpu-summary` and `analyze accelerator-launches`.
//! Folders that are not nsys exports, or not flat, are refused.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use flameox_tests::nsight_export::{open, write_arrowdir, write_parquetdir};
use flameox_tests::{Project, corpus};
use parquet::arrow::ArrowWriter;
use serde_json::Value;

fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// `value` with the artifact id replaced and per-commit fields dropped.
fn normalized(mut value: Value, artifact: &str) -> Value {
    if let Some(map) = value.as_object_mut() {
        map.remove("commit_id");
        map.remove("next_cursor");
    }
    let text = value.to_string().replace(artifact, "ARTIFACT");
    serde_json::from_str(&text).expect("json")
}

/// Every event of the artifact, page by page.
fn all_events(project: &Project, artifact: &str, span: (i64, i64)) -> Vec<Value> {
    let (start, end) = (span.0.to_string(), (span.1 + 1).to_string());
    let mut events = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = vec![
            "trace",
            "window",
            artifact,
            "--start-ns",
            &start,
            "--end-ns",
            &end,
            "--limit",
            "1000",
        ];
        if let Some(c) = &cursor {
            args.extend(["--cursor", c.as_str()]);
        }
        let page = project.json(&args);
        events.extend(page["events"].as_array().expect("events").iter().cloned());
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return events,
        }
    }
}

/// What the evidence of one imported artifact says, normalized.
struct Evidence {
    rows: Value,
    coverage: Value,
    tables_read: Value,
    fingerprint: Value,
    events: Vec<Value>,
    gpu_summary: Value,
    launches: Value,
}

fn evidence(project: &Project, imported: &Value) -> Evidence {
    let artifact = imported["artifact_id"].as_str().expect("artifact");
    let run = imported["run_id"].as_str().expect("run");
    let shown = project.json(&["runs", "show", run]);
    let span = (
        imported["time_span_ns"][0].as_i64().expect("start"),
        imported["time_span_ns"][1].as_i64().expect("end"),
    );
    Evidence {
        rows: imported["rows"].clone(),
        coverage: imported["coverage"].clone(),
        tables_read: shown["metadata"]["tables_read"].clone(),
        fingerprint: shown["metadata"]["schema_fingerprint"].clone(),
        events: all_events(project, artifact, span),
        gpu_summary: normalized(
            project.json(&["analyze", "gpu-summary", artifact]),
            artifact,
        ),
        launches: normalized(
            project.json(&["analyze", "accelerator-launches", artifact]),
            artifact,
        ),
    }
}

fn nsys_exports() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus().join("nsys"))
        .expect("corpus/nsys")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sqlite"))
        .collect();
    files.sort();
    assert!(files.len() >= 3, "corpus exports: {files:?}");
    files
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn parquetdir_and_arrowdir_give_the_sqlite_evidence() {
    let project = Project::new();
    let scratch = tempfile::tempdir().expect("tmp");
    for sqlite in nsys_exports() {
        let stem = sqlite
            .file_stem()
            .expect("stem")
            .to_string_lossy()
            .to_string();
        let parquetdir = scratch.path().join(format!("{stem}.parquetdir"));
        let arrowdir = scratch.path().join(format!("{stem}.arrowdir"));
        write_parquetdir(&sqlite, &parquetdir);
        write_arrowdir(&sqlite, &arrowdir);

        let from_sqlite = project.json(&["import", path_str(&sqlite)]);
        let from_parquet = project.json(&["import", path_str(&parquetdir)]);
        let from_arrow = project.json(&["import", path_str(&arrowdir)]);
        assert_eq!(from_sqlite["kind"], "nsight_systems_sqlite");
        assert_eq!(from_parquet["kind"], "nsight_systems_parquetdir", "{stem}");
        assert_eq!(from_arrow["kind"], "nsight_systems_arrowdir", "{stem}");
        assert_eq!(from_parquet["artifacts"].as_array().map(Vec::len), Some(1));

        let want = evidence(&project, &from_sqlite);
        // Row counts per table equal plain SQL on the file.
        let c = open(&sqlite);
        let read = want.tables_read.as_object().expect("tables_read");
        assert!(read.contains_key("StringIds"), "{stem}: {read:?}");
        for (table, n) in read {
            let count: i64 = c
                .query_row(&format!("SELECT count(*) FROM \"{table}\""), [], |r| {
                    r.get(0)
                })
                .expect("count");
            assert_eq!(n.as_i64(), Some(count), "{stem}: {table}");
        }
        assert!(!want.events.is_empty(), "{stem}");
        for (label, imported) in [("parquetdir", &from_parquet), ("arrowdir", &from_arrow)] {
            let got = evidence(&project, imported);
            let what = format!("{stem} {label}");
            assert_eq!(got.rows, want.rows, "{what}: rows");
            assert_eq!(got.coverage, want.coverage, "{what}: coverage");
            assert_eq!(got.tables_read, want.tables_read, "{what}: tables read");
            assert_eq!(got.fingerprint, want.fingerprint, "{what}: fingerprint");
            assert_eq!(got.events.len(), want.events.len(), "{what}: events");
            assert!(
                got.events == want.events,
                "{what}: trace window pages differ"
            );
            assert_eq!(got.gpu_summary, want.gpu_summary, "{what}: gpu-summary");
            assert_eq!(got.launches, want.launches, "{what}: accelerator-launches");
        }

        // The folder is stored as one deterministic archive: a copy under
        // another name, written later, is the same artifact (and evidence).
        let copy = scratch.path().join(format!("{stem}.copy"));
        std::fs::create_dir_all(&copy).expect("mkdir");
        let mut names: Vec<_> = std::fs::read_dir(&parquetdir)
            .expect("ls")
            .map(|e| e.expect("entry").file_name())
            .collect();
        names.sort();
        for name in names.iter().rev() {
            std::fs::copy(parquetdir.join(name), copy.join(name)).expect("copy");
        }
        let again = project.json(&["import", path_str(&copy)]);
        assert_eq!(again["artifact_id"], from_parquet["artifact_id"], "{stem}");
        assert_eq!(again["reused_generation"], true, "{stem}");
    }
    let validated = project.json(&["validate", "--full"]);
    assert_eq!(validated["ok"], true, "{validated}");
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn folders_that_are_not_flat_nsys_exports_are_refused() {
    let project = Project::new();
    let scratch = tempfile::tempdir().expect("tmp");
    let runs_before = project.json(&["runs", "list"])["total"].clone();

    // Parquet files, but no nsys tables: a typed parse refusal.
    let unrelated = scratch.path().join("unrelated");
    std::fs::create_dir_all(&unrelated).expect("mkdir");
    for name in ["metrics.parquet", "StringIds_backup.parquet"] {
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)])),
            vec![Arc::new(Int64Array::from(vec![1, 2, 3]))],
        )
        .expect("batch");
        let file = File::create(unrelated.join(name)).expect("create");
        let mut w = ArrowWriter::try_new(file, batch.schema(), None).expect("writer");
        w.write(&batch).expect("write");
        w.close().expect("close");
    }
    let err = project.json_err(
        &["import", path_str(&unrelated)],
        "ARTIFACT_PARSE_FAILED",
        5,
    );
    assert!(
        err["message"]
            .as_str()
            .unwrap_or("")
            .contains("not an Nsight Systems export"),
        "{err}"
    );
    assert!(
        !err["remediation"]
            .as_array()
            .expect("remediation")
            .is_empty()
    );

    // A real export folder with a subfolder in it: refused, not skipped.
    let sqlite = corpus().join("nsys/flameox_smoke_nsys2025.5.2.sqlite");
    let nested = scratch.path().join("nested");
    write_parquetdir(&sqlite, &nested);
    std::fs::create_dir_all(nested.join("more")).expect("mkdir");
    let err = project.json_err(&["import", path_str(&nested)], "INVALID_ARGUMENTS", 2);
    let message = err["message"].as_str().unwrap_or("");
    assert!(
        message.contains("more") && message.contains("subfolder"),
        "{err}"
    );

    // A symbolic link inside the folder is refused too.
    std::fs::remove_dir(nested.join("more")).expect("rmdir");
    std::os::unix::fs::symlink(&sqlite, nested.join("link.sqlite")).expect("symlink");
    let err = project.json_err(&["import", path_str(&nested)], "INVALID_ARGUMENTS", 2);
    assert!(
        err["message"]
            .as_str()
            .unwrap_or("")
            .contains("symbolic link"),
        "{err}"
    );

    // Nothing was recorded or published.
    assert_eq!(project.json(&["runs", "list"])["total"], runs_before);
    assert_eq!(project.head(), None);
    assert_eq!(project.json(&["artifacts", "list"])["total"], 0);
}
