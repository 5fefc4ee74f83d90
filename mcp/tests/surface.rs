//! The MCP surface in-process (the conformance suite is in
//! `tests/tests/mcp_conformance.rs`): WORKSPACE_NOT_FOUND before init, the envelope
//! (one text line + structuredContent), INVALID_ARGUMENTS with the closest
//! name, and an import → hotspots → callers flow over a corpus trace.

use flameox_mcp::{FlameoxServer, ServerOptions};
use serde_json::{Map, Value, json};

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

fn structured(result: &rmcp::model::CallToolResult) -> Value {
    result
        .structured_content
        .clone()
        .expect("structured content")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
async fn first_run_sequence_and_refusals() {
    let project = tempfile::tempdir().unwrap();
    let server = FlameoxServer::new(ServerOptions {
        project_root: project.path().into(),
        workspace: None,
    });

    let before = server
        .call("workspace_status", Map::new(), None)
        .await
        .unwrap();
    assert_eq!(before.is_error, Some(true));
    let body = structured(&before);
    assert_eq!(body["error"]["code"], "WORKSPACE_NOT_FOUND");
    assert_eq!(
        body["error"]["recovery"]["next_tool"],
        "initialize_workspace"
    );

    let init = server
        .call("initialize_workspace", Map::new(), None)
        .await
        .unwrap();
    assert_eq!(structured(&init)["ok"], true);

    let trace = std::path::Path::new(env!("FLAMEOX_CORPUS_DIR"))
        .join("kineto/hta_alexnet_a100.pt.trace.json.gz");
    std::fs::copy(&trace, project.path().join("t.json.gz")).unwrap();
    let imported = server
        .call(
            "import_artifact",
            args(json!({ "path": "t.json.gz" })),
            None,
        )
        .await
        .unwrap();
    let body = structured(&imported);
    assert_eq!(body["ok"], true, "{body}");
    let run = body["result"]["run_id"].as_str().unwrap().to_owned();

    let hot = server
        .call(
            "analyze_hotspots",
            args(json!({ "target": run, "limit": 5 })),
            None,
        )
        .await
        .unwrap();
    let body = structured(&hot);
    assert_eq!(body["result"]["returned"], 5);
    let text = hot.content[0].as_text().unwrap().text.clone();
    assert!(
        text.starts_with("[analyze_hotspots:") && text.contains("5 of") && text.contains("tok"),
        "{text}"
    );
    let frame = body["result"]["rows"][0]["frame"]
        .as_str()
        .unwrap()
        .to_owned();
    let callers = server
        .call(
            "get_frame_callers",
            args(json!({ "target": run, "frame": frame })),
            None,
        )
        .await
        .unwrap();
    assert_eq!(structured(&callers)["ok"], true);

    // Misspelled field → INVALID_ARGUMENTS with the closest valid name.
    let bad = server
        .call(
            "analyze_hotspots",
            args(json!({ "target": run, "limt": 5 })),
            None,
        )
        .await
        .unwrap();
    let body = structured(&bad);
    assert_eq!(body["error"]["code"], "INVALID_ARGUMENTS");
    assert_eq!(body["error"]["details"]["fields"][0]["closest"], "limit");
    // Paths outside the project root are refused, and no result names a host path.
    let outside = server
        .call(
            "import_artifact",
            args(json!({ "path": "/etc/passwd" })),
            None,
        )
        .await
        .unwrap();
    let body = structured(&outside);
    assert_eq!(body["error"]["code"], "SENSITIVE_ARTIFACT_REFUSED");
    let root = project
        .path()
        .canonicalize()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    for result in [&hot, &callers, &imported, &outside] {
        assert!(!structured(result).to_string().contains(&root));
    }
    assert!(
        server
            .call("no_such_tool", Map::new(), None)
            .await
            .is_none()
    );
}
