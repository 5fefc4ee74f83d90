//! Captures through the real CLI: `workload run` and `capture plan|run`
//! record execution runs whose receipts become `measurements` rows (read back
//! with SQL over the published commit), failing and timed-out workloads are
//! recorded with their status, plans have no side effects, the CLI refuses
//! argv / cwd / trailing `-- argv`, the child environment is filtered,
//! declared outputs are imported, and Ctrl-C kills the tree.

use std::process::Stdio;
use std::time::{Duration, Instant};

use flameox_tests::Project;
use flameox_tests::workloads::{assert_tree_gone, hang_workload, wait_for_pids};
use serde_json::Value;

const CONFIG: &str = r#"
[workloads.square]
argv = ["python3", "-c", "import sys; n = int(sys.argv[1]); print(sum(i * i for i in range(n)))", "{n}"]
timeout_seconds = 60
parameters = { n = [1000, 200000] }
oracle = { stdout_contains = "0" }

[workloads.fail]
argv = ["python3", "-c", "import sys; print('partial'); sys.exit(3)"]
timeout_seconds = 30

[workloads.wrong]
argv = ["python3", "-c", "print('hello')"]
timeout_seconds = 30
oracle = { stdout_contains = "goodbye" }

[workloads.env]
argv = ["python3", "-c", "import json, os; print(json.dumps(dict(os.environ)))"]
timeout_seconds = 30
environment = { DECLARED = "yes-{mode}" }
parameters = { mode = ["a", "b"] }

[workloads.trace]
argv = ["python3", "-c", "import json, os, sys\nos.makedirs('out', exist_ok=True)\nev = [dict(name='work', ph='X', ts=i * 10, dur=5, pid=1, tid=1) for i in range(int(sys.argv[1]))]\njson.dump(dict(traceEvents=ev), open('out/t-' + sys.argv[1] + '.json', 'w'))", "{n}"]
timeout_seconds = 60
parameters = { n = [50] }
outputs = { trace = { path = "out/t-{n}.json" }, missing = { path = "out/none.json", required = false } }
"#;

fn project() -> Project {
    project_with_hang_timeout(4.0)
}

fn project_with_hang_timeout(seconds: f64) -> Project {
    let project = Project::new();
    let config = format!("{CONFIG}{}", hang_workload(seconds));
    std::fs::write(project.path().join("flameox.toml"), config).expect("config");
    project
}

/// `[name, value, unit, trial, variant, parameters_json]` rows of one run,
/// read from the Parquet files of the run's published generations.
fn measurements(project: &Project, run_id: &str) -> Vec<Vec<String>> {
    use arrow::array::{Array, StringArray};
    use arrow::datatypes::DataType;
    let run = run_manifest(project, run_id);
    let ws_dir = project.path().join(".flameox");
    let mut rows = Vec::new();
    for generation in run["generation_ids"].as_array().expect("generations") {
        let manifest: Value = serde_json::from_slice(
            &std::fs::read(
                ws_dir
                    .join("generations")
                    .join(generation.as_str().unwrap())
                    .join("manifest.json"),
            )
            .expect("generation manifest"),
        )
        .expect("json");
        for file in manifest["files"].as_array().unwrap() {
            if file["table"] != "measurements" {
                continue;
            }
            let reader =
                std::fs::File::open(ws_dir.join(file["path"].as_str().unwrap())).expect("parquet");
            let batches =
                parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(reader)
                    .expect("reader")
                    .build()
                    .expect("build");
            for batch in batches {
                let batch = batch.expect("batch");
                let text = |name: &str| -> Vec<String> {
                    let column = batch.column_by_name(name).expect("column");
                    let cast = arrow::compute::cast(column, &DataType::Utf8).expect("cast");
                    let strings = cast.as_any().downcast_ref::<StringArray>().expect("utf8");
                    (0..strings.len())
                        .map(|i| {
                            if strings.is_null(i) {
                                String::new()
                            } else {
                                strings.value(i).to_owned()
                            }
                        })
                        .collect()
                };
                let columns: Vec<Vec<String>> = [
                    "name",
                    "value",
                    "unit",
                    "trial_id",
                    "variant",
                    "parameters_json",
                    "run_id",
                ]
                .iter()
                .map(|c| text(c))
                .collect();
                for i in 0..batch.num_rows() {
                    assert_eq!(columns[6][i], run_id);
                    rows.push(columns[..6].iter().map(|c| c[i].clone()).collect());
                }
            }
        }
    }
    rows.sort();
    rows
}

fn run_manifest(project: &Project, run_id: &str) -> Value {
    project.json(&["runs", "show", run_id])
}

#[test]
fn a_workload_run_publishes_its_measurements_through_a_receipt() {
    let project = project();
    let out = project.json(&[
        "capture",
        "run",
        "square",
        "--adapter",
        "process",
        "--parameters",
        r#"{"n": 200000}"#,
        "--variant",
        "base",
        "--trial-id",
        "t-1",
    ]);
    let result = &out["result"];
    assert_eq!(result["status"], "completed");
    assert_eq!(result["validation"], "passed");
    assert_eq!(result["exit_code"], 0);
    assert_eq!(result["measurements"], 3);
    let run_id = result["run_id"].as_str().expect("run id");
    let wall = result["wall_time_ns"].as_u64().expect("wall");
    assert!(wall > 0 && result["peak_rss_bytes"].as_u64().unwrap_or(0) > 1 << 20);

    let rows = measurements(&project, run_id);
    let names: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, ["cpu_time", "peak_rss", "wall_time"]);
    let wall_row = &rows[2];
    assert_eq!(wall_row[1].parse::<f64>().expect("value") as u64, wall);
    assert_eq!(
        (
            wall_row[2].as_str(),
            wall_row[3].as_str(),
            wall_row[4].as_str()
        ),
        ("ns", "t-1", "base")
    );
    assert_eq!(rows[1][2], "bytes");
    let parameters: Value = serde_json::from_str(&wall_row[5]).expect("parameters_json");
    assert_eq!(parameters["n"], 200000);

    // The run manifest: execution type, argv + cwd, definition hash, artifacts.
    let run = run_manifest(&project, run_id);
    assert_eq!(run["run_type"], "execution");
    assert_eq!(run["status"]["execution"], "completed");
    assert_eq!(run["metadata"]["argv"][3], "200000");
    assert_eq!(run["metadata"]["cwd"], ".");
    assert_eq!(run["parameters"]["n"], "200000");
    assert_eq!(run["variant"], "base");
    let show = project.json(&["workload", "show", "square"]);
    assert_eq!(run["metadata"]["definition_hash"], show["definition_hash"]);
    let roles: Vec<&str> = run["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["receipt", "stdout", "stderr", "observations"]);
    assert_eq!(result["stdout_head"], "2666646666700000\n");
    assert_eq!(project.json(&["validate"])["ok"], true);

    // `workload run` with --param does the same under the process adapter.
    let again = project.json(&["workload", "run", "square", "--param", "n=1000"]);
    assert_eq!(again["result"]["status"], "completed");
    assert_eq!(again["plan"]["parameters"]["n"], 1000);
}

#[test]
fn a_failing_workload_is_recorded_as_failed_with_its_measurements() {
    let project = project();
    let err = project.json_err(&["workload", "run", "fail"], "PROCESS_FAILED", 4);
    let run_id = err["run_id"].as_str().expect("run id").to_owned();
    assert_eq!(err["details"]["result"]["exit_code"], 3);
    let run = run_manifest(&project, &run_id);
    assert_eq!(run["status"]["execution"], "failed");
    assert_eq!(run["status"]["validation"], "failed");
    assert_eq!(run["rows"]["measurements"], 3);
    assert_eq!(measurements(&project, &run_id).len(), 3);
    // Its stdout is kept as an artifact even though it failed.
    assert_eq!(err["details"]["result"]["stdout_head"], "partial\n");
}

/// Seed, "Exit codes": "1: operation completed with a negative result such
/// as failed validation". The run completes and is printed as usual — one
/// JSON document with `--json` — and the exit code says the oracle failed.
#[test]
fn a_completed_run_whose_validation_failed_exits_1_with_its_answer() {
    let project = project();
    let out = project.run(&["capture", "run", "wrong", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let answer: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(answer["result"]["status"], "completed", "{answer}");
    assert_eq!(answer["result"]["validation"], "failed", "{answer}");
    let run = run_manifest(&project, answer["result"]["run_id"].as_str().expect("run"));
    assert_eq!(run["status"]["validation"], "failed");
    // The terminal says why the exit code is not 0.
    let out = project.run(&["capture", "run", "wrong"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("validation failed") && stderr.contains("(exit 1)"),
        "{stderr}"
    );
    // A run whose oracle holds exits 0.
    let out = project.run(&["capture", "run", "square", "--param", "n=1000", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

#[test]
fn a_timed_out_workload_is_killed_as_a_tree_and_recorded() {
    let project = project();
    let started = Instant::now();
    let err = project.json_err(&["workload", "run", "hang"], "PROCESS_TIMEOUT", 8);
    assert!(started.elapsed() < Duration::from_secs(30));
    let run = run_manifest(&project, err["run_id"].as_str().expect("run id"));
    assert_eq!(run["status"]["execution"], "timed_out");
    assert_eq!(run["rows"]["measurements"], 3);
    assert_tree_gone(&project.path().join("pids.txt"));
}

#[test]
fn plans_have_no_side_effects_and_bind_the_definition() {
    let project = project();
    let answer = project.json(&["capture", "plan", "square", "--adapter", "process"]);
    // A single-use plan id beside the plan (a command line runs it with
    // `capture run`; an agent with execute_capture_plan).
    assert_eq!(answer["plan_id"].as_str().map(str::len), Some(64));
    assert_eq!(answer["next_tool"], "execute_capture_plan");
    let plan = &answer["plan"];
    assert_eq!(
        plan["parameters"]["n"], 1000,
        "the first choice is the default"
    );
    assert_eq!(plan["argv"][3], "1000");
    assert!(
        plan["binding_digest"]
            .as_str()
            .unwrap_or("")
            .starts_with("sha256:")
    );
    assert_eq!(project.json(&["runs", "list"])["total"], 0);
    assert!(project.head().is_none());
    assert_eq!(project.staging_entries(), 0);
    // Another choice → another binding; a value outside the choices is refused.
    let other = project.json(&[
        "capture",
        "plan",
        "square",
        "--adapter",
        "process",
        "--parameters",
        "n=200000",
    ])["plan"]
        .clone();
    assert_ne!(plan["binding_digest"], other["binding_digest"]);
    assert_eq!(plan["definition_hash"], other["definition_hash"]);
    let err = project.json_err(
        &[
            "capture",
            "plan",
            "square",
            "--adapter",
            "process",
            "--parameters",
            r#"{"n": 7}"#,
        ],
        "INVALID_ARGUMENTS",
        2,
    );
    assert!(
        err["message"]
            .as_str()
            .unwrap_or("")
            .contains("not an allowed choice"),
        "{err}"
    );
    project.json_err(
        &["capture", "plan", "nope", "--adapter", "process"],
        "INVALID_ARGUMENTS",
        2,
    );
    // An adapter that does not exist is a usage error naming the ones that do.
    let out = project.run(&["capture", "plan", "square", "--adapter", "dtrace"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("py-spy"));
}

#[test]
fn the_cli_refuses_argv_cwd_and_trailing_argv() {
    let project = project();
    for args in [
        &[
            "capture",
            "run",
            "square",
            "--adapter",
            "process",
            "--",
            "echo",
            "hi",
        ][..],
        &[
            "capture",
            "run",
            "square",
            "--adapter",
            "process",
            "--argv",
            "echo",
        ][..],
        &[
            "capture",
            "plan",
            "square",
            "--adapter",
            "process",
            "--cwd",
            "/",
        ][..],
        &["workload", "run", "square", "--", "rm", "-rf", "x"][..],
        &["capture", "run", "process", "echo", "hi"][..],
    ] {
        let out = project.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?} was accepted");
    }
    assert_eq!(project.json(&["runs", "list"])["total"], 0);
}

#[test]
fn the_child_environment_is_filtered() {
    let project = project();
    let out = project
        .command(&["workload", "run", "env", "--param", "mode=b", "--json"])
        .env("FLAMEOX_TEST_SECRET_TOKEN", "hunter2")
        .env("LC_ALL", "C")
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let body: Value = serde_json::from_slice(&out.stdout).expect("json");
    let env: Value =
        serde_json::from_str(body["result"]["stdout_head"].as_str().unwrap()).expect("env");
    assert_eq!(env["DECLARED"], "yes-b");
    assert_eq!(env["LC_ALL"], "C");
    assert!(env.get("FLAMEOX_TEST_SECRET_TOKEN").is_none(), "{env}");
    assert!(
        env.get("CARGO").is_none() && env.get("NO_COLOR").is_none(),
        "{env}"
    );
}

#[test]
fn declared_outputs_are_imported_into_the_run() {
    let project = project();
    let out = project.json(&["workload", "run", "trace"]);
    let result = &out["result"];
    assert_eq!(result["status"], "completed");
    let trace = result["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["role"] == "output:trace")
        .expect("output artifact");
    assert_eq!(trace["kind"], "chrome_json");
    let run = run_manifest(&project, result["run_id"].as_str().unwrap());
    assert_eq!(run["rows"]["trace_events"], 50);
    assert_eq!(run["rows"]["measurements"], 3);
    // The optional missing output is a limitation, not a failure.
    assert_eq!(result["validation"], "passed");
    assert!(result["limitations"].to_string().contains("OUTPUT_MISSING"));
    let hotspots = project.json(&["analyze", "hotspots", result["run_id"].as_str().unwrap()]);
    assert!(hotspots.to_string().contains("work"), "{hotspots}");
}

#[test]
fn ctrl_c_cancels_the_run_and_kills_the_tree() {
    // A long timeout so only the interrupt can end it.
    let project = project_with_hang_timeout(120.0);
    let child = project
        .command(&["workload", "run", "hang", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pids_file = project.path().join("pids.txt");
    wait_for_pids(&pids_file);
    // SIGINT to the CLI only (the workload is in its own process group).
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let out = child.wait_with_output().expect("wait");
    assert_eq!(
        out.status.code(),
        Some(8),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let body: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(body["code"], "PROCESS_CANCELLED");
    let run = run_manifest(&project, body["run_id"].as_str().unwrap());
    assert_eq!(run["status"]["execution"], "cancelled");
    assert_tree_gone(&pids_file);
}

#[test]
fn recover_marks_an_execution_that_died_mid_run_as_interrupted() {
    let project = project();
    let ws = flameox_engine::Workspace::open(&project.path().join(".flameox")).expect("workspace");
    // What a flameox killed while its workload ran leaves behind.
    let mut run = flameox_engine::runs::RunManifest::new_execution();
    flameox_engine::runs::save_run(&ws, &mut run).expect("save");
    let report = project.json(&["recover"]);
    assert_eq!(report["interrupted_runs"][0], run.run_id.as_str());
    let shown = run_manifest(&project, &run.run_id);
    assert_eq!(shown["status"]["execution"], "interrupted");
    assert_eq!(shown["status"]["capture"], "interrupted");
}
