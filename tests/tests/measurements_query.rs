//! Import-time labels and `measurements query`: `--param`/`--variant` land
//! on the run manifest and on every row, a run scope reads only its own
//! extraction (the same file under another variant is another one), keyset
//! pages neither repeat nor miss rows, filters work, a cursor made for other
//! filters is stale — and the MCP tools say the same.

use std::collections::BTreeSet;

use flameox_mcp::{FlameoxServer, ServerOptions};
use flameox_tests::{Project, repo_root};
use serde_json::{Value, json};

fn fixture_arg(rel: &str) -> String {
    let path = repo_root().join("tests/fixtures/benchmarks").join(rel);
    path.to_str().expect("utf-8 path").to_owned()
}

/// Every page of a query, following `next_cursor`; returns the rows.
fn all_pages(project: &Project, filters: &[&str], limit: usize) -> Vec<Value> {
    let limit = limit.to_string();
    let mut rows = Vec::new();
    let mut cursor: Option<String> = None;
    let mut total = None;
    loop {
        let mut args = vec!["measurements", "query", "--limit", &limit];
        args.extend(filters);
        if let Some(c) = &cursor {
            args.extend(["--cursor", c.as_str()]);
        }
        let page = project.json(&args);
        let page_total = page["total"].as_u64().expect("total");
        assert_eq!(
            *total.get_or_insert(page_total),
            page_total,
            "total is stable"
        );
        let got = page["rows"].as_array().expect("rows");
        assert_eq!(page["returned"].as_u64(), Some(got.len() as u64));
        rows.extend(got.iter().cloned());
        match page["next_cursor"].as_str() {
            Some(next) => {
                assert_eq!(page["truncated"], true);
                assert_eq!(got.len().to_string(), limit);
                cursor = Some(next.to_owned());
            }
            None => break,
        }
    }
    assert_eq!(Some(rows.len() as u64), total);
    rows
}

fn ids(rows: &[Value]) -> Vec<String> {
    rows.iter()
        .map(|r| r["measurement_id"].as_str().expect("id").to_owned())
        .collect()
}

#[test]
fn params_and_variant_land_on_the_manifest_and_rows_and_scope_the_run() {
    let project = Project::new();
    let file = fixture_arg("hyperfine/hyperfine_params.json");
    let base = project.json(&[
        "import",
        &file,
        "--param",
        "n=1024",
        "--param",
        "mode=fast",
        "--variant",
        "base",
    ]);
    let base_run = base["run_id"].as_str().expect("run").to_owned();
    let manifest = project.json(&["runs", "show", &base_run]);
    assert_eq!(manifest["variant"], "base");
    assert_eq!(manifest["parameters"], json!({"mode": "fast", "n": "1024"}));
    let rows = all_pages(&project, &[&base_run], 1000);
    let export: Value = serde_json::from_slice(
        &std::fs::read(fixture_arg("hyperfine/hyperfine_params.json")).expect("fixture"),
    )
    .expect("json");
    let samples: usize = export["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| 2 * r["times"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(rows.len(), samples);
    for row in &rows {
        assert_eq!(row["variant"], "base", "{row}");
        let p = &row["parameters"];
        assert_eq!(
            (&p["n"], &p["mode"]),
            (&json!("1024"), &json!("fast")),
            "{row}"
        );
        // The file's own parameter (`--parameter-scan ms`) is kept beside them.
        assert!(
            ["1", "2", "3"].contains(&p["ms"].as_str().unwrap_or("")),
            "{row}"
        );
    }

    // The same bytes as another variant: a new extraction, its own rows.
    let cand = project.json(&["import", &file, "--param", "n=1024", "--variant", "cand"]);
    assert_eq!(cand["artifact_id"], base["artifact_id"]);
    assert_eq!(cand["reused_generation"], false);
    let cand_run = cand["run_id"].as_str().expect("run").to_owned();
    let cand_rows = all_pages(&project, &[&cand_run], 1000);
    assert_eq!(cand_rows.len(), samples);
    assert!(
        cand_rows
            .iter()
            .all(|r| r["variant"] == "cand" && r["parameters"]["mode"].is_null())
    );
    assert_eq!(all_pages(&project, &[&base_run], 1000).len(), samples);
    let a: BTreeSet<String> = ids(&rows).into_iter().collect();
    assert!(
        ids(&cand_rows).iter().all(|id| !a.contains(id)),
        "ids differ per variant"
    );
    // Same labels again: the same extraction, reused.
    let again = project.json(&[
        "import",
        &file,
        "--variant",
        "base",
        "--param",
        "mode=fast",
        "--param",
        "n=1024",
    ]);
    assert_eq!(again["reused_generation"], true);
    assert_eq!(
        ids(&all_pages(
            &project,
            &[again["run_id"].as_str().expect("run")],
            1000
        )),
        ids(&rows)
    );

    for bad in [
        vec!["--param", "n"],
        vec!["--param", "a b=1"],
        vec!["--param", "n=1", "--param", "n=2"],
        vec!["--variant", ""],
    ] {
        let mut args = vec!["import", file.as_str()];
        args.extend(bad.iter().copied());
        project.json_err(&args, "INVALID_ARGUMENTS", 2);
    }
}

#[test]
fn keyset_pages_are_stable_and_filters_work() {
    let project = Project::new();
    for file in [
        "pyperf/pyperf_suite.json",
        "gbench/gbench.json",
        "hyperfine/hyperfine_basic.json",
    ] {
        project.json(&["import", &fixture_arg(file)]);
    }
    let whole = all_pages(&project, &["--include-warmups"], 1000);
    assert!(whole.len() > 40, "{}", whole.len());
    for limit in [1, 7, 50] {
        let paged = all_pages(&project, &["--include-warmups"], limit);
        assert_eq!(
            ids(&paged),
            ids(&whole),
            "limit {limit}: same rows, same order"
        );
    }
    let unique: BTreeSet<String> = ids(&whole).into_iter().collect();
    assert_eq!(unique.len(), whole.len(), "no duplicates");
    let key = |r: &Value| {
        (
            r["name"].as_str().unwrap_or("").to_owned(),
            r["artifact_id"].as_str().unwrap_or("").to_owned(),
            r["sample_index"].as_i64().unwrap_or(0),
        )
    };
    assert!(
        whole.windows(2).all(|w| key(&w[0]) <= key(&w[1])),
        "ordered"
    );

    let pyperf = all_pages(
        &project,
        &["--include-warmups", "--name-prefix", "pyperf."],
        5,
    );
    let expected: Vec<&Value> = whole
        .iter()
        .filter(|r| r["name"].as_str().unwrap_or("").starts_with("pyperf."))
        .collect();
    assert_eq!(pyperf.len(), expected.len());
    assert!(pyperf.iter().any(|r| r["is_warmup"] == true));
    let no_warmups = all_pages(&project, &["--name-prefix", "pyperf."], 5);
    let cold = expected.iter().filter(|r| r["is_warmup"] == false).count();
    assert_eq!(no_warmups.len(), cold);
    assert!(cold < expected.len());

    // A cursor is bound to its filters.
    let page = project.json(&["measurements", "query", "--limit", "3"]);
    let cursor = page["next_cursor"].as_str().expect("cursor");
    project.json_err(
        &[
            "measurements",
            "query",
            "--limit",
            "3",
            "--name-prefix",
            "gbench.",
            "--cursor",
            cursor,
        ],
        "STALE_CURSOR",
        7,
    );
    let none = project.json(&["measurements", "query", "--name-prefix", "nothing."]);
    assert_eq!(none["total"], 0);
    assert_eq!(none["evidence"]["status"], "empty");
}

fn structured(result: Option<rmcp::model::CallToolResult>) -> Value {
    result
        .expect("known tool")
        .structured_content
        .expect("structured content")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_imports_with_labels_and_pages_measurements() {
    let project = tempfile::tempdir().expect("project");
    let root = project.path().canonicalize().expect("canonical");
    std::fs::copy(
        fixture_arg("pyperf/pyperf_suite.json"),
        root.join("suite.json"),
    )
    .expect("copy");
    let server = FlameoxServer::new(ServerOptions {
        project_root: root.clone(),
        workspace: None,
    });
    let call = |name: &'static str, args: Value| {
        let server = server.clone();
        async move {
            structured(
                server
                    .call(name, args.as_object().cloned().unwrap_or_default(), None)
                    .await,
            )
        }
    };
    assert_eq!(call("initialize_workspace", json!({})).await["ok"], true);
    let imported = call(
        "import_artifact",
        json!({"path": "suite.json", "variant": "base", "parameters": {"n": "64"}}),
    )
    .await;
    assert_eq!(imported["ok"], true, "{imported}");
    let run = imported["result"]["run_id"]
        .as_str()
        .expect("run")
        .to_owned();
    let mut seen = Vec::new();
    let mut args = json!({"target": run, "include_warmups": true, "limit": 4});
    loop {
        let page = call("query_measurements", args.clone()).await;
        assert_eq!(page["ok"], true, "{page}");
        let result = &page["result"];
        for row in result["rows"].as_array().expect("rows") {
            assert_eq!(row["variant"], "base");
            assert_eq!(row["parameters"], json!({"n": "64"}));
            seen.push(row["measurement_id"].as_str().expect("id").to_owned());
        }
        match result["next_cursor"].as_str() {
            Some(c) => args["cursor"] = json!(c),
            None => break,
        }
    }
    let unique: BTreeSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len());
    assert_eq!(
        Some(seen.len() as u64),
        imported["result"]["rows"]["measurements"].as_u64()
    );
    let bad = call(
        "import_artifact",
        json!({"path": "suite.json", "parameters": {"n": 64}}),
    )
    .await;
    assert_eq!(bad["error"]["code"], "INVALID_ARGUMENTS", "{bad}");
}
