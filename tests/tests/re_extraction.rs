//! Extraction as its own operation (issue 47; the seed's `extract_*`
//! tools): `flameox extract <artifact>` reads the stored bytes again, never
//! the original file, replaces the artifact's evidence for the run that
//! reads it (analyses answer as before, nothing is counted twice), records
//! the re-extraction on the run, and `validate` says which artifacts an
//! older extractor made. The older-extractor path itself is proven in the
//! engine (`services::ingest::re_extract` tests), where a generation of
//! another extractor version can be published.

use flameox_tests::Project;
use serde_json::Value;

const TRACE: &str = r#"{"traceEvents":[
    {"name":"step","ph":"X","ts":0,"dur":100,"pid":1,"tid":1},
    {"name":"matmul","ph":"X","ts":10,"dur":60,"pid":1,"tid":1},
    {"name":"relu","ph":"X","ts":75,"dur":20,"pid":1,"tid":1}]}"#;

fn top_self(hotspots: &Value) -> Vec<(String, i64)> {
    hotspots["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("rows in {hotspots}"))
        .iter()
        .map(|h| {
            (
                h["function"].as_str().unwrap_or_default().to_owned(),
                h["self_value"].as_i64().unwrap_or(-1),
            )
        })
        .collect()
}

#[test]
fn extract_reads_the_stored_bytes_again_and_replaces_the_evidence() {
    let project = Project::new();
    let trace = project.path().join("t.json");
    std::fs::write(&trace, TRACE).expect("trace");
    let imported = project.json(&["import", trace.to_str().expect("utf-8")]);
    let run = imported["run_id"].as_str().expect("run").to_owned();
    let artifact = imported["artifact_id"]
        .as_str()
        .expect("artifact")
        .to_owned();
    let before = project.json(&["analyze", "hotspots", &run]);
    // The original file is gone: extraction reads the store's copy.
    std::fs::remove_file(&trace).expect("remove the original");

    // Same extractor, same options: nothing to do, nothing written.
    let head = project.head();
    let same = project.json(&["extract", &artifact]);
    assert_eq!(same["reused_generation"], true, "{same}");
    assert_eq!(same["runs_updated"], serde_json::json!([]), "{same}");
    assert_eq!(project.head(), head);

    // Another producer: a new generation replaces the old one.
    let again = project.json(&["extract", "latest", "--producer", "chromium"]);
    assert_eq!(again["artifact_id"], artifact.as_str(), "{again}");
    assert_eq!(again["reused_generation"], false, "{again}");
    let one = &again["extractions"][0];
    assert_eq!(one["run_id"], run.as_str(), "{again}");
    assert_eq!(
        one["replaced"][0]["generation_id"],
        imported["generation_id"]
    );
    assert_eq!(one["rows_total"], one["rows_before_total"], "{again}");
    assert_eq!(again["runs_updated"], serde_json::json!([run]), "{again}");
    assert_ne!(project.head(), head);

    // The run reads the new generation; nothing is counted twice.
    let shown = project.json(&["runs", "show", &run]);
    assert_eq!(
        shown["generation_ids"],
        serde_json::json!([one["generation_id"]]),
        "{shown}"
    );
    assert_eq!(
        shown["extractions"][0]["generation_id"],
        one["generation_id"]
    );
    let after = project.json(&["analyze", "hotspots", &run]);
    assert_eq!(top_self(&after), top_self(&before), "{after}");
    assert_eq!(after["total_self"], 100_000, "{after}");
    let artifact_view = project.json(&["artifacts", "show", &artifact]);
    // `latest` (a run of one artifact) names the same artifact.
    assert_eq!(
        project.json(&["artifacts", "show", "latest"]),
        artifact_view
    );
    assert!(
        artifact_view.get("stale_extraction").is_none(),
        "{artifact_view}"
    );
    assert_eq!(
        artifact_view["integrity"]["status"], "size_matches",
        "{artifact_view}"
    );
    assert_eq!(
        artifact_view["registrations"]["items"][0]["producer"], "chromium",
        "{artifact_view}"
    );

    let valid = project.json(&["validate"]);
    assert_eq!(valid["ok"], true, "{valid}");
    assert_eq!(valid["stale_extractions"]["total"], 0, "{valid}");
    let full = project.json(&["validate", "--full"]);
    assert_eq!(full["ok"], true, "{full}");

    // The terminal: one row per extraction, and what to do with a bad kind.
    let table = project.run(&["extract", &artifact]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(table.status.success(), "{table:?}");
    assert!(text.contains("nothing changed"), "{text}");
    let refused = project.json_err(
        &["extract", &artifact, "--kind", "chrome_jsn"],
        "INVALID_ARGUMENTS",
        2,
    );
    assert_eq!(refused["details"]["closest"][0], "chrome_json", "{refused}");
}

/// Killed after its commit and before the runs were rewritten, an
/// extraction leaves a valid workspace whose run already reads the new
/// evidence (through the generation's `superseded`), and the same call
/// again rewrites the run and records it.
#[test]
fn a_kill_between_the_commit_and_the_run_rewrite_loses_nothing() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let project = Project::new();
    let trace = project.path().join("t.json");
    std::fs::write(&trace, TRACE).expect("trace");
    let imported = project.json(&["import", trace.to_str().expect("utf-8")]);
    let run = imported["run_id"].as_str().expect("run").to_owned();
    let old = imported["generation_id"]
        .as_str()
        .expect("generation")
        .to_owned();
    let before = project.json(&["analyze", "hotspots", &run]);
    let head = project.head();

    let mut child = project
        .command(&["extract", "latest", "--producer", "chromium"])
        .env("FLAMEOX_TEST_PAUSE_AT", "published")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut reader = BufReader::new(child.stderr.take().expect("stderr"));
    let mut line = String::new();
    loop {
        line.clear();
        let n = reader.read_line(&mut line).expect("stderr line");
        assert!(n > 0, "the extraction ended before its pause");
        if line.contains("paused at published") {
            break;
        }
    }
    child.kill().expect("kill");
    child.wait().expect("wait");

    assert_ne!(project.head(), head, "the commit landed");
    let shown = project.json(&["runs", "show", &run]);
    assert_eq!(
        shown["generation_ids"],
        serde_json::json!([old]),
        "not rewritten yet"
    );
    let after = project.json(&["analyze", "hotspots", &run]);
    assert_eq!(after["rows"], before["rows"], "{after}");
    assert_eq!(after["total_self"], before["total_self"]);
    assert_eq!(project.json(&["validate", "--full"])["ok"], true);

    let again = project.json(&["extract", "latest", "--producer", "chromium"]);
    assert_eq!(again["reused_generation"], true, "{again}");
    assert_eq!(again["runs_updated"], serde_json::json!([run]), "{again}");
    let healed = project.json(&["runs", "show", &run]);
    assert_eq!(
        healed["generation_ids"],
        serde_json::json!([again["extractions"][0]["generation_id"]]),
        "{healed}"
    );
    assert_eq!(healed["extractions"].as_array().map(Vec::len), Some(1));
    let once_more = project.json(&["extract", "latest", "--producer", "chromium"]);
    assert_eq!(
        once_more["runs_updated"],
        serde_json::json!([]),
        "{once_more}"
    );
}

/// An import that failed because it was read as the wrong kind is
/// completed by extracting its stored bytes as the right one: the run
/// reads the evidence, and the artifact is that kind from then on.
#[test]
fn a_failed_import_is_completed_by_extracting_it_as_the_right_kind() {
    let project = Project::new();
    let trace = project.path().join("t.json");
    std::fs::write(&trace, TRACE).expect("trace");
    let failed = project.run(&[
        "import",
        trace.to_str().expect("utf-8"),
        "--kind",
        "pyperf",
        "--json",
    ]);
    assert!(!failed.status.success(), "{failed:?}");
    let body: Value = serde_json::from_slice(&failed.stdout).expect("json");
    let run = body["run_id"].as_str().expect("the failed run").to_owned();
    assert_eq!(
        project.json(&["runs", "show", &run])["status"]["extraction"],
        "failed"
    );
    std::fs::remove_file(&trace).expect("the original is gone");

    let fixed = project.json(&["extract", &run, "--kind", "chrome_json"]);
    assert_eq!(fixed["runs_updated"], serde_json::json!([run]), "{fixed}");
    let shown = project.json(&["runs", "show", &run]);
    assert_eq!(shown["status"]["extraction"], "completed", "{shown}");
    assert!(shown["error"].is_null(), "{shown}");
    assert_eq!(shown["artifacts"][0]["kind"], "chrome_json", "{shown}");
    let hot = project.json(&["analyze", "hotspots", &run]);
    assert_eq!(hot["total_self"], 100_000, "{hot}");
    let artifact = fixed["artifact_id"].as_str().expect("artifact");
    assert_eq!(
        project.json(&["artifacts", "show", artifact])["kind"],
        "chrome_json"
    );
    // Its kind now: the same extraction again changes nothing.
    let again = project.json(&["extract", artifact]);
    assert_eq!(again["reused_generation"], true, "{again}");
}
