//! Detached experiments (issue 46): `run_experiment` in the detached form.
//! The start plans (an unknown experiment records nothing) and answers at
//! once; the server is killed mid-run and a new one reconnects the same key
//! to the same operation, which completes with the experiment's counts and
//! run sets, and `next` opens it with get_experiment. A cancel ends the
//! running trial's process tree and keeps the finished trials. The
//! terminal's `experiment start|status|cancel` are the same operations.

use std::time::Duration;

use crate::support::mcp::Session;
use flameox_tests::Project;
use flameox_tests::workloads::{assert_tree_gone, wait_for_pids};
use serde_json::{Value, json};

/// `mode = ok` sleeps 1 s and prints, `hang` starts a sleeping grandchild,
/// writes both pids and sleeps.
const CONFIG: &str = r#"
[workloads.steady]
argv = ["python3", "-c", "import os, subprocess, sys, time\nif sys.argv[1] == 'hang':\n    k = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n    open('pids.txt', 'w').write(f'{{os.getpid()}} {{k.pid}}')\n    time.sleep(120)\ntime.sleep(1)\nopen('trials.txt', 'a').write(sys.argv[2] + '\\n')\nprint('ok')", "{mode}", "{tag}"]
timeout_seconds = 200
parameters = { mode = ["ok", "hang"], tag = ["a", "b"] }

[experiments.ab]
workload = "steady"
variants = { first = { tag = "a" }, second = { tag = "b" } }
repetitions = 2
warmups = 0
seed = 3
primary_metric = "wall_time"
polarity = "lower_is_better"
practical_threshold = 0.05
confidence_level = 0.95

[experiments.stuck]
workload = "steady"
variants = { only = { mode = "hang" } }
repetitions = 1
warmups = 0
seed = 3
primary_metric = "wall_time"
polarity = "lower_is_better"
practical_threshold = 0.05
confidence_level = 0.95
"#;

async fn wait_end(s: &mut Session, operation_id: &str) -> Value {
    for _ in 0..8 {
        let got = s
            .ok(
                "get_detached_experiment",
                json!({ "operation_id": operation_id, "wait_seconds": 30 }),
            )
            .await;
        if ["completed", "failed", "cancelled"].contains(&got["status"].as_str().unwrap_or("")) {
            return got;
        }
    }
    panic!("{operation_id} did not end within 240 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detached_experiment_outlives_its_server_and_cancels_cleanly() {
    let project = Project::new();
    std::fs::write(project.path().join("flameox.toml"), CONFIG).expect("config");
    let mut s = Session::start(project.path(), &[]).await;
    s.err(
        "start_detached_experiment",
        json!({ "idempotency_key": "exp-unknown-1", "name": "nope" }),
        "INVALID_ARGUMENTS",
    )
    .await;
    assert!(
        !project.path().join(".flameox/detached/keys").exists()
            || std::fs::read_dir(project.path().join(".flameox/detached/keys"))
                .expect("keys")
                .next()
                .is_none(),
        "a refused start recorded a key"
    );
    let started = s
        .ok(
            "start_detached_experiment",
            json!({ "idempotency_key": "exp-ab-1", "name": "ab" }),
        )
        .await;
    let op = started["operation_id"]
        .as_str()
        .expect("operation_id")
        .to_owned();
    assert_eq!(started["kind"], "experiment");
    assert_eq!(started["next"]["tool"], "get_detached_experiment");
    // The server dies while trials run; the worker does not.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    s.kill().await;

    let mut s = Session::start(project.path(), &[]).await;
    let again = s
        .ok(
            "start_detached_experiment",
            json!({ "idempotency_key": "exp-ab-1", "name": "ab" }),
        )
        .await;
    assert_eq!(again["reconnected"], true);
    assert_eq!(again["operation_id"], op.as_str());
    let done = wait_end(&mut s, &op).await;
    assert_eq!(done["status"], "completed", "{done}");
    let receipt = &done["receipt"];
    assert_eq!(receipt["counts"]["planned"], 4, "{receipt}");
    assert_eq!(receipt["counts"]["completed"], 4);
    assert_eq!(receipt["run_sets"].as_array().map(Vec::len), Some(2));
    let trials = std::fs::read_to_string(project.path().join("trials.txt")).expect("trials");
    assert_eq!(
        trials.lines().count(),
        4,
        "trials ran more than once: {trials}"
    );
    assert_eq!(done["next"]["tool"], "get_experiment");
    let experiment = s
        .ok("get_experiment", done["next"]["arguments"].clone())
        .await;
    assert_eq!(experiment["status"], "completed");
    assert_eq!(experiment["experiment_id"], receipt["experiment_id"]);

    // A cancel ends the hanging trial's tree and says what it kept.
    let started = s
        .ok(
            "start_detached_experiment",
            json!({ "idempotency_key": "exp-stuck-1", "name": "stuck" }),
        )
        .await;
    let op = started["operation_id"]
        .as_str()
        .expect("operation_id")
        .to_owned();
    let pids = project.path().join("pids.txt");
    wait_for_pids(&pids);
    let cancelled = s
        .ok("cancel_detached_experiment", json!({ "operation_id": op }))
        .await;
    let cancelled = if cancelled["status"] == "cancelled" {
        cancelled
    } else {
        wait_end(&mut s, &op).await
    };
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    assert_eq!(
        cancelled["retry_new_operation"]["tool"],
        "start_detached_experiment"
    );
    assert_tree_gone(&pids);
    s.close().await;

    // The terminal drives the same operations.
    let out = project.run(&["experiment", "start", "ab", "--idempotency-key", "exp-ab-1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("reconnected") && text.contains("experiment op_"),
        "{text}"
    );
}
