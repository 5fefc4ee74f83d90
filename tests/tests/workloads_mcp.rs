//! MCP capture: plan ids are 256-bit, single-use, expire, are bounded in
//! number and are refused when the workload changed; plan_capture takes no
//! argv or cwd; execute_capture_plan reports a failed run as a record, a
//! timeout as PROCESS_TIMEOUT; over real stdio it streams the seed's phases
//! in order, and a client cancellation kills the process tree and records the
//! run as cancelled.

use crate::support;

use std::time::{Duration, Instant};

use crate::support::mcp::Session;
use flameox_engine::services::plans::MAX_PLANS;
use flameox_mcp::FlameoxServer;
use flameox_tests::Project;
use flameox_tests::workloads::{
    assert_tree_gone, call_tool, hang_workload, in_process_server, wait_for_pids,
};
use serde_json::{Value, json};

const CONFIG: &str = r#"
[workloads.square]
argv = ["python3", "-c", "import sys; print(sum(i * i for i in range(int(sys.argv[1]))))", "{n}"]
timeout_seconds = 60
parameters = { n = [1000, 2000] }

[workloads.fail]
argv = ["python3", "-c", "import sys; sys.exit(5)"]
timeout_seconds = 30

[workloads.slow]
argv = ["python3", "-c", "import time; time.sleep(30)"]
timeout_seconds = 1
"#;

fn project() -> Project {
    let project = Project::new();
    let config = format!("{CONFIG}{}", hang_workload(120.0));
    std::fs::write(project.path().join("flameox.toml"), config).expect("config");
    project
}

fn server(project: &Project) -> FlameoxServer {
    in_process_server(project.path())
}

async fn call(server: &FlameoxServer, name: &str, args: Value) -> Value {
    call_tool(server, name, args).await
}

async fn plan_id(server: &FlameoxServer, args: Value) -> String {
    let planned = call(server, "plan_capture", args).await;
    assert_eq!(planned["ok"], true, "{planned}");
    let id = planned["result"]["plan_id"]
        .as_str()
        .expect("plan id")
        .to_owned();
    assert_eq!(id.len(), 64);
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
    id
}

fn run_count(project: &Project) -> u64 {
    project.json(&["runs", "list"])["total"]
        .as_u64()
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plans_are_single_use() {
    let project = project();
    let server = server(&project);
    let id = plan_id(
        &server,
        json!({ "workload_name": "square", "parameters": { "n": 2000 } }),
    )
    .await;
    let planned_again = plan_id(&server, json!({ "workload_name": "square" })).await;
    assert_ne!(id, planned_again, "every plan gets a fresh random id");
    let done = call(&server, "execute_capture_plan", json!({ "plan_id": id })).await;
    assert_eq!(done["ok"], true, "{done}");
    assert_eq!(done["result"]["status"], "completed");
    assert_eq!(done["result"]["stdout_head"], "2664667000\n");
    let reused = call(&server, "execute_capture_plan", json!({ "plan_id": id })).await;
    assert_eq!(reused["error"]["code"], "INVALID_CAPTURE_PLAN");
    assert_eq!(reused["error"]["recovery"]["next_tool"], "plan_capture");
    assert_eq!(run_count(&project), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plans_expire_by_monotonic_time() {
    let project = project();
    let server = server(&project).with_plan_ttl(Duration::from_millis(200));
    let id = plan_id(&server, json!({ "workload_name": "square" })).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let expired = call(&server, "execute_capture_plan", json!({ "plan_id": id })).await;
    assert_eq!(expired["error"]["code"], "INVALID_CAPTURE_PLAN");
    assert!(
        expired["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("expired")
    );
    assert_eq!(run_count(&project), 0, "nothing ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plans_are_refused_when_the_workload_changed() {
    let project = project();
    let server = server(&project);
    let id = plan_id(&server, json!({ "workload_name": "square" })).await;
    let edited = CONFIG.replace("timeout_seconds = 60", "timeout_seconds = 61");
    std::fs::write(project.path().join("flameox.toml"), edited).expect("edit");
    let stale = call(&server, "execute_capture_plan", json!({ "plan_id": id })).await;
    assert_eq!(stale["error"]["code"], "INVALID_CAPTURE_PLAN", "{stale}");
    let details = &stale["error"]["details"];
    assert_ne!(details["planned_digest"], details["current_digest"]);
    assert_eq!(run_count(&project), 0, "nothing ran");
    // An unrelated change (a comment) does not change the binding.
    let id = plan_id(&server, json!({ "workload_name": "square" })).await;
    let commented = format!(
        "# a comment\n{}",
        std::fs::read_to_string(project.path().join("flameox.toml")).unwrap()
    );
    std::fs::write(project.path().join("flameox.toml"), commented).expect("edit");
    let ok = call(&server, "execute_capture_plan", json!({ "plan_id": id })).await;
    assert_eq!(ok["ok"], true, "{ok}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_capture_takes_no_argv_or_cwd_and_checks_choices() {
    let project = project();
    let server = server(&project);
    for extra in [json!({ "argv": ["rm", "-rf", "/"] }), json!({ "cwd": "/" })] {
        let mut args = json!({ "workload_name": "square" });
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let refused = call(&server, "plan_capture", args).await;
        assert_eq!(refused["error"]["code"], "INVALID_ARGUMENTS", "{refused}");
    }
    let bad = call(
        &server,
        "plan_capture",
        json!({ "workload_name": "square", "parameters": { "n": 3 } }),
    )
    .await;
    assert_eq!(bad["error"]["code"], "INVALID_ARGUMENTS");
    let nsys = call(
        &server,
        "plan_capture",
        json!({ "workload_name": "square", "adapter": "nsys" }),
    )
    .await;
    if nsys["ok"] == false {
        assert_eq!(nsys["error"]["code"], "CAPABILITY_UNAVAILABLE");
    }
    let caps = call(&server, "list_capabilities", json!({})).await;
    let adapters = caps["result"]["adapters"].as_array().expect("adapters");
    assert!(
        adapters
            .iter()
            .any(|a| a["name"] == "process" && a["available"] == true)
    );
    assert_eq!(adapters.len(), 5);
    let detail = call(
        &server,
        "get_declared_workflow",
        json!({ "name": "square" }),
    )
    .await;
    assert_eq!(
        detail["result"]["adapters"].as_array().map(Vec::len),
        Some(5)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plans_are_bounded_in_number() {
    let project = project();
    let server = server(&project);
    let first = plan_id(&server, json!({ "workload_name": "square" })).await;
    for _ in 0..MAX_PLANS {
        plan_id(&server, json!({ "workload_name": "square" })).await;
    }
    let dropped = call(&server, "execute_capture_plan", json!({ "plan_id": first })).await;
    assert_eq!(dropped["error"]["code"], "INVALID_CAPTURE_PLAN");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_are_records_and_timeouts_are_errors_with_the_run() {
    let project = project();
    let server = server(&project);
    let id = plan_id(&server, json!({ "workload_name": "fail" })).await;
    let failed = call(&server, "execute_capture_plan", json!({ "plan_id": id })).await;
    assert_eq!(
        failed["ok"], true,
        "a failed run is a completed tool call: {failed}"
    );
    assert_eq!(failed["result"]["status"], "failed");
    assert_eq!(failed["result"]["exit_code"], 5);
    let id = plan_id(&server, json!({ "workload_name": "slow" })).await;
    let timed_out = call(&server, "execute_capture_plan", json!({ "plan_id": id })).await;
    assert_eq!(timed_out["error"]["code"], "PROCESS_TIMEOUT");
    let run_id = timed_out["error"]["run_id"].as_str().expect("run id");
    let run = call(&server, "get_run", json!({ "target": run_id })).await;
    assert_eq!(run["result"]["status"]["execution"], "timed_out");
    assert_eq!(run["result"]["rows"]["measurements"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_execution_streams_phases_and_cancellation_kills_the_tree() {
    let project = project();
    let root = project.path().canonicalize().expect("root");
    let mut s = Session::start(&root, &[]).await;
    let status = s.ok("workload_configuration_status", json!({})).await;
    assert_eq!(status["status"], "valid");
    let planned = s
        .ok("plan_capture", json!({ "workload_name": "square" }))
        .await;
    let done = s
        .ok(
            "execute_capture_plan",
            json!({ "plan_id": planned["plan_id"] }),
        )
        .await;
    assert_eq!(done["status"], "completed");
    let mut phases: Vec<String> = Vec::new();
    for (_, message) in s.wire_progress() {
        if let Some(m) = message
            && phases.last() != Some(&m)
        {
            phases.push(m);
        }
    }
    assert_eq!(
        phases,
        [
            "planning",
            "capturing",
            "validating_artifact",
            "extracting",
            "publishing",
            "completed"
        ]
    );
    let values: Vec<f64> = s.wire_progress().iter().map(|p| p.0).collect();
    assert!(values.windows(2).all(|w| w[0] < w[1]), "{values:?}");

    // Cancel a hanging workload once it has started its grandchild.
    let planned = s
        .ok("plan_capture", json!({ "workload_name": "hang" }))
        .await;
    let handle = s
        .send_cancellable(
            "execute_capture_plan",
            json!({ "plan_id": planned["plan_id"] }),
        )
        .await;
    let pids_file = root.join("pids.txt");
    wait_for_pids(&pids_file);
    handle.cancel(Some("test".into())).await.expect("cancel");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let runs = s.ok("list_runs", json!({})).await;
        let newest = runs["items"][0]["run_id"].as_str().unwrap_or("").to_owned();
        let run = s.ok("get_run", json!({ "target": newest })).await;
        if run["status"]["execution"] == "cancelled" && run["status"]["extraction"] == "completed" {
            assert_eq!(run["rows"]["measurements"], 3);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "cancellation not recorded: {run}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_tree_gone(&pids_file);
    let report = s.ok("validate_workspace", json!({})).await;
    assert_eq!(report["ok"], true, "{report}");
    s.err(
        "execute_capture_plan",
        json!({ "plan_id": "0".repeat(64) }),
        "INVALID_CAPTURE_PLAN",
    )
    .await;
    assert!(!s.recorder.progress.lock().expect("progress").is_empty());
    let (stdout, _, _) = s.close().await;
    support::mcp::assert_protocol_only(&stdout);
}
