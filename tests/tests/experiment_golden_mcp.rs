//! The golden experiment through MCP over real stdio (the CLI half is
//! `experiment_golden.rs`): workload_configuration_status → plan_experiment
//! → run_experiment (one monotonic progress stream over the seed's phases,
//! one step per trial) → analyze_scaling on the experiment id without a
//! parameter → compare_run_sets on the returned run sets must reach the CLI
//! half's conclusions (n² per variant, `half` an improvement over `full`).
//! The paged trial list and the experiment resources are read back. A
//! client cancellation mid-run kills the running trial's process tree,
//! marks the experiment cancelled and keeps the finished trials.

use crate::support;

use std::time::{Duration, Instant};

use crate::support::mcp::Session;
use flameox_tests::Project;
use flameox_tests::golden_experiment::{assert_quadratic, config};
use flameox_tests::workloads::{assert_tree_gone, wait_for_pids};
use serde_json::{Value, json};

/// The phase of each progress message (`capturing: trial 3 of 30` →
/// `capturing`), consecutive repeats dropped.
fn phases(progress: &[(f64, Option<String>)]) -> Vec<String> {
    let mut phases: Vec<String> = Vec::new();
    for (_, message) in progress {
        let Some(message) = message else { continue };
        let phase = message.split(':').next().unwrap_or_default().to_owned();
        if phases.last() != Some(&phase) {
            phases.push(phase);
        }
    }
    phases
}

fn assert_strictly_increasing(progress: &[(f64, Option<String>)]) {
    let values: Vec<f64> = progress.iter().map(|p| p.0).collect();
    assert!(
        values.windows(2).all(|w| w[0] < w[1]),
        "progress went backwards or repeated: {values:?}"
    );
}

async fn read_resource(s: &Session, uri: &str) -> Value {
    let read = s
        .client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(uri))
        .await
        .unwrap_or_else(|e| panic!("{uri}: {e}"));
    match &read.contents[0] {
        rmcp::model::ResourceContents::TextResourceContents { text, .. } => {
            serde_json::from_str(text).expect("resource json")
        }
        other => panic!("{uri}: not text: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_experiment_reaches_the_cli_conclusions_with_per_trial_progress() {
    let project = Project::bare();
    std::fs::write(project.path().join("flameox.toml"), config()).expect("config");
    let root = project.path().canonicalize().expect("root");
    let mut s = Session::start(&root, &[]).await;
    s.ok("initialize_workspace", json!({})).await;
    let status = s.ok("workload_configuration_status", json!({})).await;
    assert_eq!(status["status"], "valid", "{status}");

    let plan = s
        .ok("plan_experiment", json!({ "name": "pairs_scaling" }))
        .await;
    assert_eq!(plan["trial_count"], 30);
    assert_eq!(plan["baseline_variant"], "full");
    assert_eq!(plan["trials"].as_array().map(Vec::len), Some(30));
    s.err(
        "plan_experiment",
        json!({ "name": "pairs_scaling", "parameters": { "n": 500 } }),
        "INVALID_ARGUMENTS",
    )
    .await;
    assert!(
        s.wire_progress().is_empty(),
        "planning is read-only and silent"
    );

    let started = Instant::now();
    let receipt = s
        .ok("run_experiment", json!({ "name": "pairs_scaling" }))
        .await;
    eprintln!("MCP experiment run took {:?}", started.elapsed());
    assert_eq!(receipt["status"], "completed", "{receipt}");
    assert!(
        receipt["plan"]["trials"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "the receipt does not repeat every trial"
    );
    let outcome = &receipt["outcome"];
    assert_eq!(outcome["counts"]["attempted"], 30);
    assert_eq!(outcome["counts"]["completed"], 30);
    assert_eq!(outcome["first_failing_trial"], Value::Null);
    let sets = outcome["run_sets"].as_array().expect("run sets").clone();
    assert_eq!(sets.len(), 2);
    assert_eq!(sets[0]["variant"], "full");
    assert_eq!(sets[0]["members"], 15);
    let id = receipt["experiment_id"].as_str().expect("id").to_owned();

    let progress = s.wire_progress();
    assert_strictly_increasing(&progress);
    assert_eq!(
        phases(&progress),
        [
            "planning",
            "capturing",
            "publishing",
            "analyzing",
            "completed"
        ]
    );
    let trial_steps: Vec<&str> = progress
        .iter()
        .filter_map(|(_, m)| m.as_deref())
        .filter(|m| m.contains(" of 30"))
        .collect();
    assert_eq!(trial_steps.len(), 30, "one step per trial: {trial_steps:?}");
    assert_eq!(trial_steps[29], "capturing: trial 30 of 30");
    let handled = s.recorder.progress.lock().expect("progress").len();
    assert!(
        handled > 30,
        "the client handler saw {handled} notifications"
    );

    let scaling = s.ok("analyze_scaling", json!({ "target": id })).await;
    assert_eq!(scaling["parameter"], "n");
    assert_eq!(scaling["metric"], "cpu_time");
    let variants = scaling["variants"].as_array().expect("variants");
    assert_eq!(variants.len(), 2);
    for v in variants {
        assert_eq!(v["runs"], 15, "{v}");
        assert_quadratic(v);
    }
    s.err(
        "analyze_scaling",
        json!({ "target": sets[0]["run_set_id"] }),
        "INVALID_ARGUMENTS",
    )
    .await;

    let compare = s
        .ok(
            "compare_run_sets",
            json!({
                "base": sets[0]["run_set_id"],
                "target": sets[1]["run_set_id"],
                "metric": "cpu_time",
                "threshold": 0.05
            }),
        )
        .await;
    assert_eq!(compare["pairing"]["method"], "experiment_block");
    // One pair per block and size, as through the CLI.
    assert_eq!(
        compare["pairing"]["pairs"].as_array().map(Vec::len),
        Some(15)
    );
    assert_eq!(
        compare["decision"], "improvement",
        "{}",
        compare["estimate"]
    );
    assert_eq!(
        outcome["analyses"]["compare"]["base"],
        sets[0]["run_set_id"]
    );

    // Trials page by cursor; the resources agree with the tools.
    let first = s
        .ok(
            "list_experiment_trials",
            json!({ "experiment_id": id, "limit": 20 }),
        )
        .await;
    assert_eq!(first["trials"].as_array().map(Vec::len), Some(20));
    let rest = s
        .ok(
            "list_experiment_trials",
            json!({ "experiment_id": id, "cursor": first["next_cursor"] }),
        )
        .await;
    assert_eq!(rest["trials"].as_array().map(Vec::len), Some(10));
    assert_eq!(rest["next_cursor"], Value::Null);
    s.err(
        "list_experiment_trials",
        json!({ "experiment_id": id, "limit": 1001 }),
        "INVALID_ARGUMENTS",
    )
    .await;
    let shown = s.ok("get_experiment", json!({ "experiment_id": id })).await;
    assert_eq!(shown, receipt);
    let resource = read_resource(&s, &format!("flameox://experiments/{id}")).await;
    assert_eq!(resource, receipt);
    let trials = read_resource(&s, &format!("flameox://experiments/{id}/trials")).await;
    assert_eq!(trials["trials"].as_array().map(Vec::len), Some(30));
    let trial = read_resource(&s, &format!("flameox://experiments/{id}/trials/t000001")).await;
    assert_eq!(trial, trials["trials"][0]);
    let handled = s.recorder.progress.lock().expect("progress").len();
    assert!(
        handled >= 30,
        "the client handler saw {handled} notifications"
    );
    let (stdout, _, _) = s.close().await;
    support::mcp::assert_protocol_only(&stdout);
}

/// `mode = ok` prints; `hang` starts a sleeping grandchild, writes both
/// pids to `pids.txt` and sleeps.
const CANCEL_CONFIG: &str = r#"
[workloads.mixed]
argv = ["python3", "-c", "import os, subprocess, sys, time\nif sys.argv[1] == 'hang':\n    k = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n    open('pids.txt', 'w').write(f'{{os.getpid()}} {{k.pid}}')\n    time.sleep(120)\nprint('ok')", "{mode}"]
timeout_seconds = 120
parameters = { mode = ["ok", "hang"] }

[experiments.cancel_me]
workload = "mixed"
variants = { good = { mode = "ok" }, stuck = { mode = "hang" } }
repetitions = 2
warmups = 1
seed = 11
primary_metric = "wall_time"
polarity = "lower_is_better"
practical_threshold = 0.05
confidence_level = 0.95
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_cancellation_kills_the_trial_marks_the_experiment_and_keeps_finished_trials() {
    let project = Project::new();
    std::fs::write(project.path().join("flameox.toml"), CANCEL_CONFIG).expect("config");
    let root = project.path().canonicalize().expect("root");
    let mut s = Session::start(&root, &[]).await;
    let handle = s
        .send_cancellable("run_experiment", json!({ "name": "cancel_me" }))
        .await;
    let pids = root.join("pids.txt");
    wait_for_pids(&pids);
    handle.cancel(Some("test".into())).await.expect("cancel");

    // The receipt of a cancelled request never reaches the client; the
    // experiment is found through its trial's run.
    let deadline = Instant::now() + Duration::from_secs(60);
    let shown = loop {
        let runs = s.ok("list_runs", json!({})).await;
        let newest = runs["items"][0]["run_id"].as_str().unwrap_or("").to_owned();
        let run = s.ok("get_run", json!({ "target": newest })).await;
        if let Some(id) = run["metadata"]["experiment_id"].as_str() {
            let shown = s.ok("get_experiment", json!({ "experiment_id": id })).await;
            if shown["status"] == "cancelled" {
                break shown;
            }
        }
        assert!(
            Instant::now() < deadline,
            "cancellation not recorded: {run}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_tree_gone(&pids);
    let id = shown["experiment_id"].clone();
    assert_eq!(shown["outcome"]["counts"]["planned"], 6);
    assert_eq!(shown["outcome"]["counts"]["attempted"], 2);
    let page = s
        .ok("list_experiment_trials", json!({ "experiment_id": id }))
        .await;
    let statuses: Vec<&Value> = page["trials"]
        .as_array()
        .expect("trials")
        .iter()
        .map(|t| &t["status"])
        .collect();
    assert_eq!(
        statuses,
        [&json!("completed"), &json!("cancelled")],
        "the warmup of `good` is kept, then the cancelled `stuck` warmup"
    );
    let progress = s.wire_progress();
    assert_strictly_increasing(&progress);
    assert_eq!(
        phases(&progress)[..2],
        ["planning".to_owned(), "warming_up".to_owned()]
    );
    let report = s.ok("validate_workspace", json!({})).await;
    assert_eq!(report["ok"], true, "{report}");
    let (stdout, _, _) = s.close().await;
    support::mcp::assert_protocol_only(&stdout);
}
