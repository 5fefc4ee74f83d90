//! `analyze failures`: a parse failure and an import whose writer died are
//! listed newest first with their typed reasons and input names, counted
//! per code, filtered by kind and code, and paged; a good import is not
//! listed. The same answer over MCP. `runs list` filters them by status and
//! type and sorts them either way.

use crate::support;

use flameox_tests::Project;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_and_interrupted_imports_are_listed_with_their_reasons() {
    let project = Project::new();
    let good = project.path().join("good.folded");
    std::fs::write(&good, "main;work 10\n").expect("good");
    project.json(&["import", good.to_str().expect("utf8")]);
    let bad = project.path().join("bad.folded");
    std::fs::write(&bad, "this is not a profile\n").expect("bad");
    let failed = project.json_err(
        &["import", bad.to_str().expect("utf8"), "--kind", "folded"],
        "ARTIFACT_PARSE_FAILED",
        5,
    );
    let failed_run = failed["run_id"].as_str().expect("run").to_owned();
    // An import whose flameox was killed: its manifest still says pending.
    let killed = project.path().join("killed.folded");
    std::fs::write(&killed, "main;other 5\n").expect("killed");
    let killed_run = project.json(&["import", killed.to_str().expect("utf8")])["run_id"]
        .as_str()
        .expect("run")
        .to_owned();
    let manifest = project
        .path()
        .join(".flameox/runs")
        .join(&killed_run)
        .join("manifest.json");
    let text = std::fs::read_to_string(&manifest).expect("manifest");
    let mut run: serde_json::Value = serde_json::from_str(&text).expect("json");
    run["status"]["extraction"] = json!("pending");
    std::fs::write(&manifest, serde_json::to_vec(&run).expect("json")).expect("rewrite");

    let all = project.json(&["analyze", "failures"]);
    assert_eq!(all["total"], 2, "{all:#}");
    assert_eq!(
        all["by_code"],
        json!({ "ARTIFACT_PARSE_FAILED": 1, "interrupted": 1 })
    );
    let rows = all["items"].as_array().expect("items");
    let parse = rows
        .iter()
        .find(|r| r["id"] == failed_run.as_str())
        .expect("parse failure");
    assert_eq!(parse["kind"], "import");
    assert_eq!(parse["input"], "bad.folded");
    assert!(
        parse["reason"]
            .as_str()
            .unwrap_or("")
            .contains("no `frame;frame"),
        "{parse}"
    );
    let gone = rows
        .iter()
        .find(|r| r["id"] == killed_run.as_str())
        .expect("interrupted");
    assert_eq!(gone["status"], "interrupted");
    // Newest first: the killed import came last.
    assert_eq!(rows[0]["id"], killed_run.as_str());

    let only = project.json(&["analyze", "failures", "--code", "artifact_parse_failed"]);
    assert_eq!(only["total"], 1);
    assert_eq!(only["evidence"]["status"], "available", "{only:#}");
    let captures = project.json(&["analyze", "failures", "--kind", "capture"]);
    assert_eq!(captures["total"], 0);
    // No failure of that kind is a complete negative answer, and says so.
    assert_eq!(captures["evidence"]["status"], "empty", "{captures:#}");
    assert_eq!(
        captures["evidence"]["reason"], "no_failures",
        "{captures:#}"
    );
    let first = project.json(&["analyze", "failures", "--limit", "1"]);
    assert_eq!(first["returned"], 1);
    let cursor = first["next_cursor"].as_str().expect("cursor").to_owned();
    let second = project.json(&["analyze", "failures", "--limit", "1", "--cursor", &cursor]);
    assert_eq!(second["items"][0]["id"], failed_run.as_str());
    assert!(second["next_cursor"].is_null());

    // Seed, list_runs: "filtered, sorted, and paginated".
    let interrupted = project.json(&["runs", "list", "--status", "interrupted"]);
    assert_eq!(interrupted["total"], 1, "{interrupted:#}");
    assert_eq!(interrupted["items"][0]["run_id"], killed_run.as_str());
    let newest = project.json(&["runs", "list"]);
    let oldest = project.json(&["runs", "list", "--sort", "oldest"]);
    assert_eq!(newest["total"], 3, "{newest:#}");
    let ids = |page: &serde_json::Value| -> Vec<String> {
        page["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|r| r["run_id"].as_str().unwrap_or("").to_owned())
            .collect()
    };
    let mut reversed = ids(&newest);
    reversed.reverse();
    assert_eq!(ids(&oldest), reversed);
    let executions = project.json(&["runs", "list", "--run-type", "execution"]);
    assert_eq!(executions["total"], 0, "{executions:#}");
    // A cursor pages only the listing it came from.
    let page = project.json(&["runs", "list", "--sort", "oldest", "--limit", "1"]);
    let cursor = page["next_cursor"].as_str().expect("cursor").to_owned();
    project.json_err(
        &["runs", "list", "--limit", "1", "--cursor", &cursor],
        "STALE_CURSOR",
        7,
    );

    let mut s = support::mcp::Session::start(project.path(), &[]).await;
    let over_mcp = s.ok("analyze_failures", json!({ "kind": "import" })).await;
    assert_eq!(over_mcp["total"], 2);
    s.close().await;
}
