//! Detached capture end to end (issue 46): a capture started over MCP
//! runs in a worker process that outlives the server. Killed and restarted
//! mid-run, the server reconnects the same idempotency key to the same
//! operation, which completes with its run; the key never starts the
//! workload twice and refuses another request. Cancel ends the process tree
//! and leaves a terminal receipt with a fresh-key retry; a worker killed
//! mid-run is recovered (its tree ended, the operation failed) at the next
//! server start. The terminal's `capture start|status|cancel` are the same
//! operations.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::mcp::Session;
use flameox_tests::Project;
use flameox_tests::workloads::{assert_tree_gone, hang_workload, process_alive, wait_for_pids};
use serde_json::{Value, json};

/// A 60 s workload that appends one line to starts.txt each time it
/// starts, writes its pid and a sleeping grandchild's, and exits 0.
const LONG_WORKLOAD: &str = r#"
[workloads.long]
argv = ["python3", "-c", "import os, subprocess, sys, time\nopen('starts.txt', 'a').write('started\\n')\nk = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\nopen('long_pids.txt', 'w').write(f'{{os.getpid()}} {{k.pid}}')\nk.wait()\nprint('done')"]
timeout_seconds = 240
"#;

fn project() -> Project {
    let project = Project::new();
    let config = format!("{LONG_WORKLOAD}{}", hang_workload(240.0));
    std::fs::write(project.path().join("flameox.toml"), config).expect("config");
    project
}

/// Polls get_detached_capture until the operation is terminal.
async fn wait_terminal(s: &mut Session, operation_id: &str, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let got = s
            .ok(
                "get_detached_capture",
                json!({ "operation_id": operation_id }),
            )
            .await;
        if ["completed", "failed", "cancelled"].contains(&got["status"].as_str().unwrap_or("")) {
            return got;
        }
        assert!(Instant::now() < deadline, "never terminal: {got}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn record_on_disk(root: &Path, operation_id: &str) -> Value {
    let path = root
        .join(".flameox/detached")
        .join(operation_id)
        .join("record.json");
    serde_json::from_slice(&std::fs::read(path).expect("record.json")).expect("record json")
}

fn pids(file: &Path) -> Vec<u32> {
    std::fs::read_to_string(file)
        .expect("pids")
        .split_whitespace()
        .map(|p| p.parse().expect("pid"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_capture_outlives_a_killed_server_and_its_key_reconnects() {
    let project = project();
    let root = project.path().canonicalize().expect("root");
    let mut s = Session::start(&root, &[]).await;
    let started = s
        .ok(
            "start_detached_capture",
            json!({ "idempotency_key": "long-capture-1", "workload_name": "long" }),
        )
        .await;
    let operation_id = started["operation_id"]
        .as_str()
        .expect("operation id")
        .to_owned();
    assert_eq!(started["reconnected"], false);
    assert!(["queued", "running"].contains(&started["status"].as_str().unwrap_or("")));
    assert_eq!(started["next"]["tool"], "get_detached_capture");
    let pids_file = root.join("long_pids.txt");
    wait_for_pids(&pids_file);
    let running = s
        .ok(
            "get_detached_capture",
            json!({ "operation_id": operation_id }),
        )
        .await;
    assert_eq!(running["status"], "running", "{running}");
    assert_eq!(running["phase"], "capturing", "{running}");
    // The workspace's status lists it, with the call that polls it.
    let status = s.ok("workspace_status", json!({})).await;
    assert_eq!(status["active_operations_total"], 1, "{status}");
    let active = &status["active_operations"][0];
    assert_eq!(active["operation_id"], operation_id.as_str());
    assert_eq!(active["next"]["operation"], "get_detached_capture");

    // The server dies mid-run; the worker and its workload do not.
    let _ = s.kill().await;
    for pid in pids(&pids_file) {
        assert!(
            process_alive(pid),
            "workload process {pid} died with the server"
        );
    }

    // A new server: the same key and request reconnect to the same operation.
    let mut s = Session::start(&root, &[]).await;
    let again = s
        .ok(
            "start_detached_capture",
            json!({ "idempotency_key": "long-capture-1", "workload_name": "long" }),
        )
        .await;
    assert_eq!(again["operation_id"], operation_id.as_str());
    assert_eq!(again["reconnected"], true);
    assert_eq!(again["status"], "running", "{again}");
    // The same key with another request is refused, naming the operation.
    let conflict = s
        .err(
            "start_detached_capture",
            json!({ "idempotency_key": "long-capture-1", "workload_name": "hang" }),
            "IDEMPOTENCY_CONFLICT",
        )
        .await;
    assert_eq!(conflict["details"]["operation_id"], operation_id.as_str());

    let done = wait_terminal(&mut s, &operation_id, Duration::from_secs(180)).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["receipt"]["status"], "completed");
    assert_eq!(done["receipt"]["exit_code"], 0);
    let run_id = done["run_id"].as_str().expect("run id").to_owned();
    assert_eq!(done["next"]["tool"], "summarize_target");
    assert_eq!(done["percent"], 100.0);
    let phases: Vec<&str> = done["progress"]
        .as_array()
        .expect("progress")
        .iter()
        .filter_map(|p| p["phase"].as_str())
        .collect();
    assert_eq!(phases.last(), Some(&"completed"), "{phases:?}");
    let run = s.ok("get_run", json!({ "target": run_id })).await;
    assert_eq!(run["status"]["execution"], "completed", "{run}");

    // Reconnecting after the end returns the terminal receipt; nothing reran.
    let after = s
        .ok(
            "start_detached_capture",
            json!({ "idempotency_key": "long-capture-1", "workload_name": "long" }),
        )
        .await;
    assert_eq!(after["status"], "completed");
    assert_eq!(after["run_id"], run_id.as_str());
    let starts = std::fs::read_to_string(root.join("starts.txt")).expect("starts");
    assert_eq!(starts.lines().count(), 1, "the workload started {starts:?}");
    let on_disk = record_on_disk(&root, &operation_id);
    assert!(on_disk["finished_at"].is_string() && on_disk["receipt"].is_object());
    assert!(
        !on_disk.to_string().contains("long-capture-1"),
        "the key itself is not stored, only its digest"
    );
    let _ = s.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_ends_the_tree_and_a_killed_worker_is_recovered_at_the_next_start() {
    let project = project();
    let root = project.path().canonicalize().expect("root");
    let mut s = Session::start(&root, &[]).await;

    // Cancel: the tree ends, the receipt is terminal, the retry has a fresh key.
    let started = s
        .ok(
            "start_detached_capture",
            json!({ "idempotency_key": "hang-cancel-1", "workload_name": "hang" }),
        )
        .await;
    let operation_id = started["operation_id"].as_str().expect("id").to_owned();
    let pids_file = root.join("pids.txt");
    wait_for_pids(&pids_file);
    let cancelled = s
        .ok(
            "cancel_detached_capture",
            json!({ "operation_id": operation_id }),
        )
        .await;
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    assert_eq!(cancelled["cancellation"]["cleanup"], "process_tree_killed");
    assert!(cancelled["cancellation"]["requested_at"].is_string());
    assert_tree_gone(&pids_file);
    let retry = &cancelled["retry_new_operation"];
    assert_eq!(retry["tool"], "start_detached_capture");
    assert_eq!(retry["arguments"]["workload_name"], "hang");
    assert_ne!(retry["arguments"]["idempotency_key"], "hang-cancel-1");
    let run_id = cancelled["run_id"]
        .as_str()
        .expect("the cancelled run")
        .to_owned();
    let run = s.ok("get_run", json!({ "target": run_id })).await;
    assert_eq!(run["status"]["execution"], "cancelled", "{run}");
    let again = s
        .ok(
            "cancel_detached_capture",
            json!({ "operation_id": operation_id }),
        )
        .await;
    assert_eq!(again["status"], "cancelled", "cancel is idempotent");
    std::fs::remove_file(&pids_file).expect("reset pids");

    // A worker killed mid-run: the next server start ends its tree and the operation.
    let started = s
        .ok(
            "start_detached_capture",
            json!({ "idempotency_key": "hang-killed-1", "workload_name": "hang" }),
        )
        .await;
    let operation_id = started["operation_id"].as_str().expect("id").to_owned();
    wait_for_pids(&pids_file);
    let _ = s.kill().await;
    let record = record_on_disk(&root, &operation_id);
    let worker = record["worker"]["pid"].as_i64().expect("worker pid") as i32;
    // SAFETY: kill has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(worker, libc::SIGKILL) }, 0);
    let deadline = Instant::now() + Duration::from_secs(20);
    while process_alive(worker as u32) {
        assert!(Instant::now() < deadline, "the worker did not die");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for pid in pids(&pids_file) {
        assert!(
            process_alive(pid),
            "the workload must outlive its killed worker"
        );
    }
    let mut s = Session::start(&root, &[]).await;
    let recovered = s
        .ok(
            "get_detached_capture",
            json!({ "operation_id": operation_id }),
        )
        .await;
    assert_eq!(recovered["status"], "failed", "{recovered}");
    assert_eq!(
        recovered["cancellation"]["cleanup"],
        "worker_gone; process_tree_killed"
    );
    assert!(
        recovered["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("worker process ended")),
        "{recovered}"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while pids(&pids_file).into_iter().any(process_alive) {
        assert!(
            Instant::now() < deadline,
            "the orphaned tree survived recovery"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(recovered["next"]["tool"], "start_detached_capture");
    s.err(
        "get_detached_capture",
        json!({ "operation_id": "op_00000000000000000000000000000000" }),
        "OPERATION_NOT_FOUND",
    )
    .await;
    let _ = s.close().await;
}

#[test]
fn the_terminal_starts_polls_and_cancels_the_same_operations() {
    let project = project();
    let root = project.path().canonicalize().expect("root");
    let started = project.json(&[
        "capture",
        "start",
        "hang",
        "--idempotency-key",
        "cli-hang-01",
    ]);
    let operation_id = started["operation_id"].as_str().expect("id").to_owned();
    wait_for_pids(&root.join("pids.txt"));
    let status = project.json(&["capture", "status", &operation_id]);
    assert_eq!(status["operation_id"], operation_id.as_str());
    assert_eq!(status["status"], "running", "{status}");
    let human = project.run(&["capture", "status", &operation_id]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains(&format!("capture {operation_id} running")),
        "{text}"
    );
    let reconnected = project.json(&[
        "capture",
        "start",
        "hang",
        "--idempotency-key",
        "cli-hang-01",
    ]);
    assert_eq!(reconnected["operation_id"], operation_id.as_str());
    assert_eq!(reconnected["reconnected"], true);
    let cancelled = project.run(&["capture", "cancel", &operation_id]);
    let text = String::from_utf8_lossy(&cancelled.stdout);
    assert!(
        text.contains(&format!("capture {operation_id} cancelled")),
        "{text}"
    );
    assert!(text.contains("cleanup: process_tree_killed"), "{text}");
    assert!(text.contains("next: flameox capture start hang"), "{text}");
    let status = project.json(&["capture", "status", &operation_id]);
    assert_eq!(status["status"], "cancelled", "{status}");
    assert_tree_gone(&root.join("pids.txt"));
}
