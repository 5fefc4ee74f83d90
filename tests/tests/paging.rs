//! Keyset paging through the real binary: pages concatenate to the unpaged
//! answer, a cursor keeps reading its pinned commit after new evidence lands,
//! and an edited or foreign cursor is `STALE_CURSOR`.

use flameox_tests::{Project, corpus};
use serde_json::Value;

fn path(rel: &str) -> String {
    corpus().join(rel).to_string_lossy().into_owned()
}

fn window_args(artifact: &str, start: i64, end: i64, limit: &str) -> Vec<String> {
    vec![
        "trace".into(),
        "window".into(),
        artifact.into(),
        format!("--start-ns={start}"),
        format!("--end-ns={end}"),
        "--limit".into(),
        limit.into(),
    ]
}

fn call(project: &Project, args: &[String]) -> Value {
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    project.json(&argv)
}

/// Follows `next_cursor` to the end; returns all rows and the commits seen.
fn page_through(
    project: &Project,
    base: &[String],
    field: &str,
    first_cursor: Option<String>,
) -> (Vec<Value>, Vec<String>) {
    let mut rows = Vec::new();
    let mut commits = Vec::new();
    let mut cursor = first_cursor;
    for _ in 0..10_000 {
        let mut args = base.to_vec();
        if let Some(c) = &cursor {
            args.extend(["--cursor".into(), c.clone()]);
        }
        let page = call(project, &args);
        commits.push(page["commit_id"].as_str().unwrap().to_owned());
        let items = page[field].as_array().unwrap();
        assert_eq!(page["returned"].as_u64().unwrap() as usize, items.len());
        rows.extend(items.iter().cloned());
        match page["next_cursor"].as_str() {
            Some(c) => {
                assert_eq!(page["truncated"], true);
                cursor = Some(c.to_owned());
            }
            None => {
                assert_eq!(page["truncated"], false);
                return (rows, commits);
            }
        }
    }
    panic!("paging did not end");
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn window_pages_of_seven_equal_one_unpaged_query_in_order() {
    let project = Project::new();
    let imported = project.json(&["import", &path("kineto/hta_alexnet_a100.pt.trace.json.gz")]);
    let artifact = imported["artifact_id"].as_str().unwrap();
    let span = &imported["time_span_ns"];
    let (start, end) = (span[0].as_i64().unwrap(), span[1].as_i64().unwrap() + 1);
    let whole = call(&project, &window_args(artifact, start, end, "1000"));
    let total = whole["total"].as_u64().unwrap();
    assert!(total > 100 && total <= 1000, "total {total}");
    assert_eq!(whole["truncated"], false);
    let (paged, commits) = page_through(
        &project,
        &window_args(artifact, start, end, "7"),
        "events",
        None,
    );
    assert_eq!(paged.len() as u64, total);
    assert_eq!(&paged, whole["events"].as_array().unwrap());
    assert!(commits.windows(2).all(|w| w[0] == w[1]));
    // A later page reports the whole window's total too (carried in the
    // cursor from the first page's count, not recounted).
    let first = call(&project, &window_args(artifact, start, end, "7"));
    let mut next = window_args(artifact, start, end, "7");
    next.extend([
        "--cursor".into(),
        first["next_cursor"].as_str().unwrap().into(),
    ]);
    let second = call(&project, &next);
    assert_eq!(
        (first["total"].as_u64(), second["total"].as_u64()),
        (Some(total), Some(total))
    );
    // Order is (ts_ns, event_id) and no event repeats.
    let keys: Vec<(i64, u64)> = paged
        .iter()
        .map(|e| {
            (
                e["ts_ns"].as_i64().unwrap(),
                e["event_id"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]));
    // A sub-window returns exactly the overlapping events of the whole.
    let mid = start + (end - start) / 2;
    for (from, to) in [(start, mid), (mid, end)] {
        let part = call(&project, &window_args(artifact, from, to, "1000"));
        let expected = overlapping(&whole, from, to);
        assert_eq!(
            part["events"]
                .as_array()
                .unwrap()
                .iter()
                .collect::<Vec<_>>(),
            expected
        );
    }
    // The second half includes slices that began before it and still run
    // (the pruning bound is the longest event, recorded at import).
    assert!(
        overlapping(&whole, mid, end)
            .iter()
            .any(|e| e["ts_ns"].as_i64().unwrap() < mid)
    );
}

/// The events of `page` that overlap `[start, end)`.
fn overlapping(page: &Value, start: i64, end: i64) -> Vec<&Value> {
    page["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            let ts = e["ts_ns"].as_i64().unwrap();
            let dur = e["dur_ns"].as_i64().unwrap().max(0);
            ts < end && (ts >= start || ts + dur > start)
        })
        .collect()
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn cursor_keeps_its_commit_after_a_newer_import_and_rejects_tampering() {
    let project = Project::new();
    let imported = project.json(&["import", &path("kineto/hta_alexnet_a100.pt.trace.json.gz")]);
    let artifact = imported["artifact_id"].as_str().unwrap().to_owned();
    let span = &imported["time_span_ns"];
    let (start, end) = (span[0].as_i64().unwrap(), span[1].as_i64().unwrap() + 1);
    let base = window_args(&artifact, start, end, "50");
    let first = call(&project, &base);
    let old_commit = first["commit_id"].as_str().unwrap().to_owned();
    let cursor = first["next_cursor"].as_str().unwrap().to_owned();
    let (before, _) = page_through(&project, &base, "events", Some(cursor.clone()));

    // New evidence lands: HEAD moves.
    project.json(&["import", &path("kineto/hta_amd_mi250_rocm6.2.json.gz")]);
    let fresh = call(&project, &base);
    assert_ne!(fresh["commit_id"].as_str().unwrap(), old_commit);
    let (after, commits) = page_through(&project, &base, "events", Some(cursor.clone()));
    assert_eq!(before, after);
    assert!(
        commits.iter().all(|c| *c == old_commit),
        "cursor pages must read the pinned commit"
    );

    // Tampered: one character of the payload changed.
    let mut bytes = cursor.clone().into_bytes();
    let i = bytes.len() / 3;
    bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(bytes).unwrap();
    for bad in [tampered.as_str(), "not-a-cursor", "a.b"] {
        let mut args: Vec<&str> = base.iter().map(String::as_str).collect();
        args.extend(["--cursor", bad]);
        project.json_err(&args, "STALE_CURSOR", 7);
    }
    // Valid cursor, other parameters.
    let other = window_args(&artifact, start, end - 1, "50");
    let mut args: Vec<&str> = other.iter().map(String::as_str).collect();
    args.extend(["--cursor", cursor.as_str()]);
    project.json_err(&args, "STALE_CURSOR", 7);
    // Cursor from another workspace (another signing key).
    let elsewhere = Project::new();
    elsewhere.json(&["import", &path("kineto/hta_alexnet_a100.pt.trace.json.gz")]);
    let mut args: Vec<&str> = base.iter().map(String::as_str).collect();
    args.extend(["--cursor", cursor.as_str()]);
    elsewhere.json_err(&args, "STALE_CURSOR", 7);
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn hotspot_and_listing_pages_concatenate_to_the_whole() {
    let project = Project::new();
    let imported = project.json(&["import", &path("kineto/hta_alexnet_a100.pt.trace.json.gz")]);
    let run = imported["run_id"].as_str().unwrap().to_owned();
    let whole = project.json(&["analyze", "hotspots", &run, "--limit", "1000"]);
    let base: Vec<String> = vec![
        "analyze".into(),
        "hotspots".into(),
        run.clone(),
        "--limit".into(),
        "7".into(),
    ];
    let (paged, _) = page_through(&project, &base, "rows", None);
    assert_eq!(&paged, whole["rows"].as_array().unwrap());
    assert_eq!(paged.len() as u64, whole["total"].as_u64().unwrap());
    // Sorted by self descending.
    let selfs: Vec<i64> = paged
        .iter()
        .map(|r| r["self_value"].as_i64().unwrap())
        .collect();
    assert!(selfs.windows(2).all(|w| w[0] >= w[1]));

    for _ in 0..4 {
        project.json(&[
            "import",
            &path("kineto/kineto_h100_out_of_order_after_fix.json"),
        ]);
    }
    let all_runs = project.json(&["runs", "list", "--limit", "1000"]);
    let (runs, _) = page_through_listing(&project, &["runs", "list", "--limit", "2"]);
    assert_eq!(&runs, all_runs["items"].as_array().unwrap());
    assert_eq!(runs.len(), 5);
    // Newest first.
    assert_eq!(runs[4]["run_id"].as_str().unwrap(), run);
}

fn page_through_listing(project: &Project, base: &[&str]) -> (Vec<Value>, usize) {
    let mut rows = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut args = base.to_vec();
        if let Some(c) = &cursor {
            args.extend(["--cursor", c.as_str()]);
        }
        let page = project.json(&args);
        pages += 1;
        rows.extend(page["items"].as_array().unwrap().iter().cloned());
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return (rows, pages),
        }
    }
}
