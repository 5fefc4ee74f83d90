//! MCP end to end over a real stdio child process (`flameox mcp serve`):
//! the first-run sequence on a corpus trace, paging to the end with cursors,
//! every refusal of the trust boundary, streamed import progress, and
//! cancellation of an import that leaves the workspace valid. Every result
//! of the session is scanned for host paths, and stdout for anything that
//! is not a protocol message.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::mcp::{Session, assert_protocol_only};
use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams, ResourceContents};
use serde_json::{Value, json};

const TRACE: &str = "kineto/hta_nccl_a100_rank0of2.json.gz";

fn copy_corpus_trace(project: &Path) -> String {
    let source = flameox_tests::corpus().join(TRACE);
    std::fs::create_dir_all(project.join("traces")).expect("traces dir");
    std::fs::copy(&source, project.join("traces/rank0.json.gz")).expect("copy corpus trace");
    "traces/rank0.json.gz".to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
async fn first_run_session_pages_refuses_and_leaks_no_host_path() {
    let project = tempfile::tempdir().expect("project");
    let root = project.path().canonicalize().expect("canonical project");
    let trace = copy_corpus_trace(&root);
    let mut s = Session::start(&root, &[]).await;

    // initialize: name, version, instructions with today's UTC date.
    let info = s.client.peer_info().expect("server info").clone();
    let server = info.server_info.clone().expect("serverInfo");
    assert_eq!(server.name, "flameox");
    assert_eq!(server.version, env!("CARGO_PKG_VERSION"));
    let instructions = info.instructions.clone().unwrap_or_default();
    let today = time::OffsetDateTime::now_utc().date().to_string();
    assert!(instructions.contains(&today), "{instructions}");
    assert!(instructions.contains("initialize_workspace") && instructions.contains("next_cursor"));

    // The client sees exactly what `flameox mcp inspect --json` prints.
    let tools = s.client.list_all_tools().await.expect("tools/list");
    let inspect = std::process::Command::new(flameox_tests::flameox_bin())
        .args(["mcp", "inspect", "--json", "--project-root"])
        .arg(&root)
        .output()
        .expect("mcp inspect");
    let inspected: Value = serde_json::from_slice(&inspect.stdout).expect("inspect json");
    assert_eq!(
        serde_json::to_value(&tools).expect("tools json"),
        inspected["tools"]
    );
    assert_eq!(
        inspected["instructions"].as_str(),
        Some(instructions.as_str())
    );

    // Before initialization every tool points at initialize_workspace.
    let err = s
        .err("workspace_status", json!({}), "WORKSPACE_NOT_FOUND")
        .await;
    assert_eq!(err["recovery"]["next_tool"], "initialize_workspace");
    s.ok("initialize_workspace", json!({})).await;

    // Import with streamed progress.
    let imported = s
        .ok(
            "import_artifact",
            json!({ "path": trace, "kind": "execution_trace" }),
        )
        .await;
    let run_id = imported["run_id"].as_str().expect("run_id").to_owned();
    let artifact_id = imported["artifact_id"]
        .as_str()
        .expect("artifact")
        .to_owned();
    // Every notification precedes the result on the wire.
    let phases = s.increasing_progress_phases();
    for phase in [
        "validating_artifact",
        "extracting",
        "publishing",
        "completed",
    ] {
        assert!(
            phases.iter().any(|p| p == phase),
            "{phase} missing in {phases:?}"
        );
    }
    assert_eq!(phases.last().map(String::as_str), Some("completed"));
    assert_eq!(s.wire_progress().last().map(|p| p.0), Some(100.0));

    // The import result links its run and artifact.
    let result = s.call("get_run", json!({ "target": run_id })).await;
    let links: Vec<String> = result
        .content
        .iter()
        .filter_map(|c| c.as_resource_link().map(|r| r.uri.clone()))
        .collect();
    assert!(
        links.contains(&format!("flameox://runs/{run_id}")),
        "{links:?}"
    );
    assert!(links.contains(&format!("flameox://artifacts/{artifact_id}")));
    let text = result.content[0]
        .as_text()
        .expect("summary line")
        .text
        .clone();
    assert!(
        text.starts_with("[get_run:") && text.contains("tok"),
        "{text}"
    );

    // Hotspots → callers of the top frame.
    let hot = s
        .ok("analyze_hotspots", json!({ "target": run_id, "limit": 5 }))
        .await;
    let rows = hot["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 5);
    let top = rows[0]["frame"].as_str().expect("frame key").to_owned();
    let callers = s
        .ok(
            "get_frame_callers",
            json!({ "target": run_id, "frame": top }),
        )
        .await;
    assert!(callers["total"].as_u64().is_some(), "{callers}");

    // The kernel summary of the Kineto trace.
    let kernels = s
        .ok(
            "analyze_gpu_summary",
            json!({ "target": run_id, "report": "kernels", "limit": 3 }),
        )
        .await;
    assert_eq!(kernels["evidence"]["status"], "available", "{kernels}");
    assert!(kernels["rows"][0]["count"].as_i64() > Some(0), "{kernels}");

    // Accelerator launches count the same kernels as the kernel summary.
    let all_kernels = s
        .ok(
            "analyze_gpu_summary",
            json!({ "target": run_id, "report": "kernels", "limit": 1000 }),
        )
        .await;
    let summary_count: i64 = all_kernels["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter_map(|r| r["count"].as_i64())
        .sum();
    let launches = s
        .ok("analyze_accelerator_launches", json!({ "target": run_id }))
        .await;
    assert_eq!(launches["evidence"]["status"], "available", "{launches}");
    let region_kernels: i64 = launches["regions"]
        .as_array()
        .expect("regions")
        .iter()
        .filter_map(|r| r["kernels"]["count"].as_i64())
        .sum();
    assert_eq!(region_kernels, summary_count, "{launches}");
    assert!(summary_count > 0);

    // PyTorch operators: the heaviest operator's self time leads the page.
    let ops = s
        .ok("analyze_pytorch", json!({ "target": run_id, "limit": 5 }))
        .await;
    let op_rows = ops["rows"].as_array().expect("operator rows");
    assert!(!op_rows.is_empty(), "{ops}");
    assert!(op_rows.len() <= 5);

    // The HTA-style breakdown, gaps and memory answer over MCP as on the CLI.
    let breakdown = s
        .ok(
            "analyze_gpu_breakdown",
            json!({ "target": [run_id], "section": "temporal" }),
        )
        .await;
    assert_eq!(breakdown["evidence"]["status"], "available", "{breakdown}");
    let gaps = s
        .ok(
            "analyze_gpu_gaps",
            json!({ "target": run_id, "min_gap_us": 50.5, "limit": 3 }),
        )
        .await;
    assert_eq!(gaps["min_gap_ns"], 50_500, "{gaps}");
    let memory = s.ok("analyze_memory", json!({ "target": run_id })).await;
    assert!(memory["evidence"]["status"].is_string(), "{memory}");

    // A run compared with itself changes nothing.
    let same = s
        .ok(
            "compare_hotspots",
            json!({ "target": run_id, "base": run_id, "limit": 5 }),
        )
        .await;
    assert!(same["total"].as_u64() > Some(0), "{same}");
    assert!(
        same["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .all(|r| r["delta_self"] == 0),
        "{same}"
    );

    // Trace window paged to the end: pages concatenate to the whole window.
    let span = imported["time_span_ns"].as_array().expect("span").clone();
    let (start, end) = (span[0].as_i64().unwrap_or(0), span[1].as_i64().unwrap_or(0));
    let window =
        json!({ "target": artifact_id, "start_ns": start, "end_ns": end + 1, "limit": 1000 });
    let mut page = s.ok("get_trace_window", window.clone()).await;
    let total = page["total"].as_u64().expect("total");
    let mut seen: Vec<(i64, u64)> = Vec::new();
    let mut pages = 0;
    let mut first_cursor = None;
    loop {
        pages += 1;
        for e in page["events"].as_array().expect("events") {
            seen.push((
                e["ts_ns"].as_i64().unwrap_or(0),
                e["event_id"].as_u64().unwrap_or(0),
            ));
        }
        let Some(cursor) = page["next_cursor"].as_str().map(str::to_owned) else {
            break;
        };
        first_cursor.get_or_insert(cursor.clone());
        let mut next = window.clone();
        next["cursor"] = json!(cursor);
        page = s.ok("get_trace_window", next).await;
    }
    assert!(
        pages > 3,
        "the corpus trace spans several pages ({total} events)"
    );
    assert_eq!(seen.len() as u64, total);
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "keyset order, no repeats"
    );

    // Resources: JSON summaries without host paths.
    let read = s
        .client
        .read_resource(ReadResourceRequestParams::new(format!(
            "flameox://runs/{run_id}"
        )))
        .await
        .expect("resources/read");
    let ResourceContents::TextResourceContents {
        text, mime_type, ..
    } = &read.contents[0]
    else {
        panic!("text resource expected");
    };
    assert_eq!(mime_type.as_deref(), Some("application/json"));
    let summary: Value = serde_json::from_str(text).expect("resource json");
    assert_eq!(summary["run_id"], run_id.as_str());
    s.transcript.push(text.clone());

    // Refusals.
    let err = s
        .err(
            "analyze_hotspots",
            json!({ "target": "1; DROP TABLE frames; --" }),
            "INVALID_ARGUMENTS",
        )
        .await;
    assert_eq!(err["details"]["fields"][0]["field"], "target");
    assert_eq!(err["recovery"]["next_tool"], "list_runs");
    let refusals = [
        (
            "get_run",
            json!({ "target": "../../../etc/passwd" }),
            "INVALID_ARGUMENTS",
        ),
        (
            "get_evidence",
            json!({ "reference": "run:' OR 1=1 --" }),
            "INVALID_ARGUMENTS",
        ),
        (
            "import_artifact",
            json!({ "path": "../../../../etc/passwd" }),
            "SENSITIVE_ARTIFACT_REFUSED",
        ),
        (
            "import_artifact",
            json!({ "path": "/etc/hostname" }),
            "SENSITIVE_ARTIFACT_REFUSED",
        ),
    ];
    for (tool, args, code) in refusals {
        s.err(tool, args, code).await;
    }
    std::os::unix::fs::symlink(
        flameox_tests::corpus()
            .join(TRACE)
            .canonicalize()
            .expect("corpus"),
        root.join("traces/escape.json.gz"),
    )
    .expect("symlink");
    s.err(
        "import_artifact",
        json!({ "path": "traces/escape.json.gz" }),
        "SENSITIVE_ARTIFACT_REFUSED",
    )
    .await;
    s.err(
        "import_artifact",
        json!({ "path": "traces/missing.json" }),
        "INVALID_ARGUMENTS",
    )
    .await;
    let mut tampered = first_cursor.expect("a cursor");
    let flipped = if tampered.ends_with('A') { 'B' } else { 'A' };
    tampered.pop();
    tampered.push(flipped);
    let mut next = window.clone();
    next["cursor"] = json!(tampered);
    s.err("get_trace_window", next, "STALE_CURSOR").await;
    let err = s
        .err(
            "analyze_hotspots",
            json!({ "target": run_id, "limt": 5 }),
            "INVALID_ARGUMENTS",
        )
        .await;
    assert_eq!(err["details"]["fields"][0]["closest"], "limit");
    let unknown = s
        .client
        .call_tool(CallToolRequestParams::new("run_sql"))
        .await;
    assert!(unknown.is_err(), "unknown tools stay protocol errors");

    // The workspace is still valid.
    let report = s.ok("validate_workspace", json!({ "full": true })).await;
    assert_eq!(report["ok"], true, "{report}");

    let (stdout, _stderr, transcript) = s.close().await;
    assert!(assert_protocol_only(&stdout) > 20);
    let host_paths = [
        root.display().to_string(),
        project.path().display().to_string(),
        flameox_tests::corpus().display().to_string(),
        flameox_tests::repo_root().display().to_string(),
    ];
    for (i, item) in transcript.iter().enumerate() {
        for path in &host_paths {
            assert!(
                !item.contains(path.as_str()),
                "result {i} leaks {path}: {item:.300}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
async fn cancelling_an_import_cleans_up_and_releases_the_lock() {
    let project = tempfile::tempdir().expect("project");
    let root = project.path().canonicalize().expect("canonical project");
    let spec = flameox_benches::kineto::KinetoSpec {
        ops_per_step: 0,
        seed: 7,
        events: 400_000,
        streams: 4,
    };
    let file = std::fs::File::create(root.join("big.json")).expect("create");
    flameox_benches::kineto::write_kineto(&spec, std::io::BufWriter::new(file)).expect("generate");
    let small = copy_corpus_trace(&root);
    let mut s = Session::start(&root, &["--init"]).await;

    let handle = s
        .send_cancellable("import_artifact", json!({ "path": "big.json" }))
        .await;
    // Cancel once extraction is visibly under way.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let extracting = s
            .recorder
            .progress
            .lock()
            .expect("progress")
            .iter()
            .any(|p| p.message.as_deref() == Some("extracting") && p.progress > 6.0);
        if extracting {
            break;
        }
        assert!(Instant::now() < deadline, "no extraction progress");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    handle.cancel(Some("test".into())).await.expect("cancel");

    // The run records the cancellation once cleanup has finished.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let runs = s.ok("list_runs", json!({})).await;
        let status = runs["items"][0]["extraction"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        if status == "cancelled" {
            break;
        }
        assert_ne!(status, "completed", "the import finished before the cancel");
        assert!(
            Instant::now() < deadline,
            "cancellation not recorded: {runs}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let progress = s.recorder.progress.lock().expect("progress").clone();
    assert!(
        progress
            .iter()
            .all(|p| p.message.as_deref() != Some("completed"))
    );

    let report = s.ok("validate_workspace", json!({})).await;
    assert_eq!(report["ok"], true, "{report}");
    let status = s.ok("workspace_status", json!({})).await;
    assert!(
        status["head_commit"].is_null(),
        "nothing published: {status}"
    );
    // The write lock is free: the next import lands at once.
    let started = Instant::now();
    s.ok("import_artifact", json!({ "path": small })).await;
    assert!(started.elapsed() < Duration::from_secs(60));
    let (stdout, _, _) = s.close().await;
    assert_protocol_only(&stdout);
}
