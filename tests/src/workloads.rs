//! Helpers of the workload tests: a workload that hangs with a grandchild
//! and writes both pids, /proc checks that a tree is gone, and in-process
//! MCP calls.

use std::path::Path;
use std::time::{Duration, Instant};

use flameox_mcp::{FlameoxServer, ServerOptions};
use serde_json::Value;

/// `[workloads.hang]`: starts a sleeping grandchild, writes `pids.txt`
/// (its own pid and the grandchild's), sleeps. `{timeout}` is replaced.
pub const HANG_WORKLOAD: &str = r#"
[workloads.hang]
argv = ["python3", "-c", "import os, subprocess, sys, time\nk = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\nopen('pids.txt', 'w').write(f'{{os.getpid()}} {{k.pid}}')\ntime.sleep(120)"]
timeout_seconds = {timeout}
"#;

/// The hang workload with this timeout.
pub fn hang_workload(timeout_seconds: f64) -> String {
    HANG_WORKLOAD.replace("{timeout}", &timeout_seconds.to_string())
}

/// Whether a live (non-zombie) process has this pid.
pub fn process_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|text| {
            let after = &text[text.rfind(')')? + 1..];
            after.split_whitespace().next().map(str::to_owned)
        })
        .is_some_and(|state| state != "Z")
}

/// Waits until the hang workload wrote both pids.
pub fn wait_for_pids(pids_file: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(pids_file).is_ok_and(|t| t.split_whitespace().count() == 2) {
        assert!(Instant::now() < deadline, "the workload never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Asserts that no process listed in `pids_file` is alive.
pub fn assert_tree_gone(pids_file: &Path) {
    let pids = std::fs::read_to_string(pids_file).expect("pids file");
    for pid in pids
        .split_whitespace()
        .map(|p| p.parse::<u32>().expect("pid"))
    {
        assert!(!process_alive(pid), "process {pid} of the tree survived");
    }
}

/// An in-process MCP server bound to `project_root`.
pub fn in_process_server(project_root: &Path) -> FlameoxServer {
    FlameoxServer::new(ServerOptions {
        project_root: project_root.to_path_buf(),
        workspace: None,
    })
}

/// Calls a tool in process; returns the envelope.
pub async fn call_tool(server: &FlameoxServer, name: &str, args: Value) -> Value {
    let result = server
        .call(name, args.as_object().cloned().unwrap_or_default(), None)
        .await
        .expect("tool exists");
    serde_json::to_value(result.structured_content).expect("json")
}
