//! The fuzz campaign's finds (`docs/reliability.md`), each rebuilt from
//! its cause as a regression test through the real binary. (The issue's
//! one-byte Chrome hang is `import_deadline.rs`; the extractor-level finds
//! are unit tests beside the code they fixed.)

use flameox_tests::{Project, corpus};

const SMOKE: &str = "nsys/flameox_smoke_nsys2025.5.2.sqlite";

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_truncated_nsys_export_is_a_parse_failure_not_an_unsupported_format() {
    // Seed 4, mutants 2304 and 2346: cut short, the export's table names
    // fell out of the first 64 KiB and it read as "some SQLite database"
    // (exit 3, "no extractor for sqlite yet").
    let bytes = std::fs::read(corpus().join(SMOKE)).expect("corpus export");
    let project = Project::new();
    for cut in [4096, 65_536, 200_000] {
        std::fs::write(project.path().join("cut.sqlite"), &bytes[..cut]).expect("write");
        let err = project.json_err(&["import", "cut.sqlite"], "ARTIFACT_PARSE_FAILED", 5);
        assert!(
            err["message"].as_str().unwrap().contains("malformed")
                || err["message"].as_str().unwrap().contains("readable"),
            "{cut}: {err}"
        );
    }
    assert_eq!(project.head(), None);
    assert_eq!(project.staging_entries(), 0);
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn an_nsys_export_whose_schema_lies_past_64_kib_is_read_as_one() {
    // Detection sees 64 KiB; the schema decides for a SQLite file.
    let project = Project::new();
    let path = project.path().join("late_schema.sqlite");
    let conn = rusqlite::Connection::open(&path).expect("create");
    conn.execute_batch("PRAGMA page_size = 4096; BEGIN")
        .expect("begin");
    for i in 0..1500 {
        conn.execute_batch(&format!(
            "CREATE TABLE padding_{i}_{} (a INTEGER)",
            "x".repeat(40)
        ))
        .expect("padding table");
    }
    conn.execute_batch("COMMIT").expect("commit");
    conn.execute(
        "ATTACH DATABASE ?1 AS export",
        [corpus().join(SMOKE).to_str().expect("utf-8")],
    )
    .expect("attach");
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM export.sqlite_master WHERE type = 'table'")
        .expect("tables")
        .query_map([], |r| r.get(0))
        .expect("rows")
        .filter_map(Result::ok)
        .collect();
    for t in &tables {
        conn.execute_batch(&format!(
            "CREATE TABLE main.\"{t}\" AS SELECT * FROM export.\"{t}\""
        ))
        .expect("copy table");
    }
    drop(conn);
    let head = std::fs::read(&path).expect("read");
    let head = &head[..head.len().min(64 * 1024)];
    assert!(
        !head.windows(19).any(|w| w == b"CUPTI_ACTIVITY_KIND")
            && !head.windows(11).any(|w| w == b"TARGET_INFO"),
        "the test needs the export's table names past the first 64 KiB"
    );
    let imported = project.json(&["import", "late_schema.sqlite"]);
    assert_eq!(imported["kind"], "nsight_systems_sqlite", "{imported}");
    assert!(
        imported["rows"]["trace_events"].as_u64().unwrap_or(0) > 0,
        "{imported}"
    );
    // A SQLite database with no Nsight tables is refused by what it is.
    let other = project.path().join("other.sqlite");
    rusqlite::Connection::open(&other)
        .and_then(|c| c.execute_batch("CREATE TABLE t (a); INSERT INTO t VALUES (1)"))
        .expect("other database");
    let err = project.json_err(&["import", "other.sqlite"], "CAPABILITY_UNAVAILABLE", 3);
    assert!(err["message"].as_str().unwrap().contains("Nsight"), "{err}");
}
