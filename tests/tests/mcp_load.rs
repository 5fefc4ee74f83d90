//! The MCP server under load and faults (issue 25), over real `flameox mcp
//! serve` child processes on one workspace: eight servers importing and
//! querying at once, a server SIGKILLed in the middle of an import and the
//! next server carrying on without `recover`, and a hundred tool calls in
//! flight on one server. Each test asserts what was kept (every import that
//! answered success is a completed run whose commit HEAD reaches), what was
//! refused (only retryable codes, counted), that the workspace validates
//! with no orphan and no staging left, and that stdout carried nothing but
//! protocol messages.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::support::mcp::{Session, assert_protocol_only, structured};
use flameox_tests::Project;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Value, json};
use tokio::task::JoinSet;

/// Small corpus traces of four formats, and where the project holds them
/// (imports are confined to the project root).
const SMALL: [(&str, &str); 4] = [
    (
        "kineto/hta_alexnet_a100.pt.trace.json.gz",
        "traces/alexnet.json.gz",
    ),
    (
        "kineto/tracelens_h100_bert_small.json.gz",
        "traces/bert.json.gz",
    ),
    (
        "stacks/pyspy_workload.folded.txt",
        "traces/pyspy.folded.txt",
    ),
    (
        "perfetto/perfetto_pybuilder_trackevent.pftrace",
        "traces/trackevent.pftrace",
    ),
];

fn copy_small_traces(root: &Path) -> Vec<String> {
    std::fs::create_dir_all(root.join("traces")).expect("traces dir");
    SMALL
        .iter()
        .map(|(from, to)| {
            std::fs::copy(flameox_tests::corpus().join(from), root.join(to))
                .expect("copy corpus trace");
            (*to).to_owned()
        })
        .collect()
}

/// A tool result as `Ok(result)` or `Err(error object)`.
fn outcome(result: &CallToolResult) -> Result<Value, Value> {
    let body = structured(result);
    if result.is_error == Some(false) && body["ok"] == true {
        Ok(body["result"].clone())
    } else {
        assert_eq!(result.is_error, Some(true), "{body}");
        assert_eq!(body["ok"], false, "{body}");
        Err(body["error"].clone())
    }
}

/// Every run of the workspace, through `list_runs` pages.
async fn all_runs(s: &mut Session) -> Vec<Value> {
    let mut runs = Vec::new();
    let mut args = json!({ "limit": 1000 });
    loop {
        let page = s.ok("list_runs", args.clone()).await;
        runs.extend(page["items"].as_array().expect("items").iter().cloned());
        match page["next_cursor"].as_str() {
            Some(cursor) => args["cursor"] = json!(cursor),
            None => break,
        }
    }
    runs
}

/// The commits HEAD reaches through their parents, and HEAD's own.
fn reachable_commits(root: &Path) -> (BTreeSet<String>, Value) {
    let corpus = root.join(".flameox/corpus");
    let head = std::fs::read_to_string(corpus.join("HEAD")).expect("HEAD");
    let read = |id: &str| -> Value {
        let raw = std::fs::read(corpus.join(format!("commits/{id}.json"))).expect("commit file");
        serde_json::from_slice(&raw).expect("commit json")
    };
    let head_commit = read(head.trim());
    let mut seen = BTreeSet::new();
    let mut next = Some(head.trim().to_owned());
    while let Some(id) = next {
        assert!(seen.insert(id.clone()), "commit cycle at {id}");
        next = read(&id)["parent"].as_str().map(str::to_owned);
    }
    (seen, head_commit)
}

fn assert_cli_valid(project: &Project) -> Value {
    let report = project.json(&["validate", "--full"]);
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["errors"], json!([]), "{report}");
    assert_eq!(report["orphans"], json!([]), "{report}");
    assert_eq!(report["staging_entries"], 0, "{report}");
    assert_eq!(project.staging_entries(), 0);
    report
}

/// What one client of the eight-server test saw.
#[derive(Default)]
struct ClientLog {
    /// Import results that answered success.
    imported: Vec<Value>,
    /// Refused imports: the error objects.
    refused: Vec<Value>,
    /// Query calls that answered success.
    queries: usize,
    /// Query calls that failed: (tool, error object).
    failed_queries: Vec<(String, Value)>,
    stdout: Vec<u8>,
}

/// One client: its own server process, importing a small trace and asking
/// about it, the run list, the status and the workspace's validity, over
/// and over until `until`.
async fn client_loop(
    root: PathBuf,
    index: usize,
    traces: Vec<String>,
    until: Instant,
) -> ClientLog {
    let mut s = Session::start(&root, &[]).await;
    let mut log = ClientLog::default();
    let mut round = 0;
    while Instant::now() < until {
        let trace = &traces[(index + round) % traces.len()];
        round += 1;
        let mut queries = vec![
            ("list_runs", json!({ "limit": 20 })),
            ("workspace_status", json!({})),
            ("validate_workspace", json!({})),
        ];
        let result = s.call("import_artifact", json!({ "path": trace })).await;
        match outcome(&result) {
            Ok(imported) => {
                // A reader right after the write sees the whole commit.
                let run_id = imported["run_id"].as_str().expect("run_id");
                queries.insert(
                    0,
                    ("analyze_hotspots", json!({ "target": run_id, "limit": 5 })),
                );
                log.imported.push(imported);
            }
            Err(error) => log.refused.push(error),
        }
        for (tool, args) in queries {
            let result = s.call(tool, args).await;
            match outcome(&result) {
                Ok(body) => {
                    if tool == "validate_workspace" {
                        assert_eq!(body["ok"], true, "client {index}: {body}");
                    }
                    if tool == "analyze_hotspots" {
                        assert!(
                            !body["rows"].as_array().expect("rows").is_empty(),
                            "client {index}: {body}"
                        );
                    }
                    log.queries += 1;
                }
                Err(error) => log.failed_queries.push((tool.to_owned(), error)),
            }
        }
    }
    let (stdout, _stderr, _) = s.close().await;
    log.stdout = stdout;
    log
}

/// Eight server processes import and query one workspace at once for about
/// twenty seconds. Every import that answered success is a completed run
/// whose generation is in HEAD and whose commit HEAD reaches; refusals carry
/// only retryable codes and are few; no query fails; the workspace
/// validates in full with no orphan and no staging.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
async fn eight_servers_on_one_workspace_lose_no_run() {
    const CLIENTS: usize = 8;
    const LOAD: Duration = Duration::from_secs(20);
    let project = Project::new();
    let test_started = Instant::now();
    let root = project.path().canonicalize().expect("canonical project");
    let traces = copy_small_traces(&root);
    let started = Instant::now();
    let until = started + LOAD;
    let mut clients = JoinSet::new();
    for index in 0..CLIENTS {
        clients.spawn(client_loop(root.clone(), index, traces.clone(), until));
    }
    let logs: Vec<ClientLog> = tokio::time::timeout(LOAD + Duration::from_secs(150), async {
        let mut logs = Vec::new();
        while let Some(joined) = clients.join_next().await {
            logs.push(joined.expect("client task"));
        }
        logs
    })
    .await
    .expect("every client finishes its last round and closes its server");
    let load_time = started.elapsed();

    // Every server's stdout carried only protocol messages.
    for log in &logs {
        assert!(assert_protocol_only(&log.stdout) > 0);
    }
    let imported: Vec<&Value> = logs.iter().flat_map(|l| &l.imported).collect();
    let refused: Vec<&Value> = logs.iter().flat_map(|l| &l.refused).collect();
    let failed_queries: Vec<&(String, Value)> =
        logs.iter().flat_map(|l| &l.failed_queries).collect();
    let queries: usize = logs.iter().map(|l| l.queries).sum();
    eprintln!(
        "load: {CLIENTS} servers, {:.1} s, {} imports answered, {} refused, {queries} queries, {} failed",
        load_time.as_secs_f64(),
        imported.len(),
        refused.len(),
        failed_queries.len()
    );
    assert!(
        logs.iter().all(|l| !l.imported.is_empty()),
        "every client landed an import"
    );
    assert!(failed_queries.is_empty(), "{failed_queries:?}");
    // Refused: only retryable lock waits, and few of them.
    for error in &refused {
        assert_eq!(error["code"], "WRITE_LOCK_TIMEOUT", "{error}");
        assert_eq!(error["retryable"], true, "{error}");
    }
    let attempts = imported.len() + refused.len();
    assert!(
        refused.len() * 20 <= attempts,
        "{} of {attempts} imports refused",
        refused.len()
    );

    // Kept: every answered import is a completed run in HEAD.
    let mut s = Session::start(&root, &[]).await;
    let runs = all_runs(&mut s).await;
    let by_id: BTreeMap<&str, &Value> = runs
        .iter()
        .map(|r| (r["run_id"].as_str().expect("run_id"), r))
        .collect();
    assert_eq!(by_id.len(), runs.len(), "a run listed twice");
    let (reachable, head_commit) = reachable_commits(&root);
    let mut generations = BTreeSet::new();
    let mut answered_ids = BTreeSet::new();
    for result in &imported {
        let run_id = result["run_id"].as_str().expect("run_id");
        assert!(answered_ids.insert(run_id), "run {run_id} answered twice");
        let run = by_id
            .get(run_id)
            .unwrap_or_else(|| panic!("lost run {run_id}"));
        assert_eq!(run["extraction"], "completed", "{run}");
        let commit = result["commit_id"].as_str().expect("commit_id");
        assert!(reachable.contains(commit), "commit {commit} unreachable");
        let generation = result["generation_id"].as_str().expect("generation_id");
        assert!(
            head_commit["generations"].get(generation).is_some(),
            "generation {generation} lost from HEAD"
        );
        generations.insert(generation);
    }
    // Refused imports left failed runs (never pending, never completed).
    for run in &runs {
        let run_id = run["run_id"].as_str().expect("run_id");
        if answered_ids.contains(run_id) {
            continue;
        }
        assert_eq!(run["extraction"], "failed", "an unanswered run: {run}");
        let shown = s.ok("get_run", json!({ "target": run_id })).await;
        assert_eq!(shown["error"]["retryable"], true, "{shown}");
    }
    assert!(
        runs.len() <= attempts,
        "{} runs for {attempts} imports",
        runs.len()
    );
    // Each trace is one generation, however many servers imported it.
    assert_eq!(generations.len(), SMALL.len(), "{generations:?}");
    let status = s.ok("workspace_status", json!({})).await;
    assert_eq!(status["generations"], SMALL.len(), "{status}");
    assert_eq!(status["runs"], runs.len(), "{status}");
    let report = s.ok("validate_workspace", json!({ "full": true })).await;
    assert_eq!(report["ok"], true, "{report}");
    let (stdout, _, _) = s.close().await;
    assert_protocol_only(&stdout);
    assert_cli_valid(&project);
    eprintln!("whole test {:.1} s", test_started.elapsed().as_secs_f64());
}

/// A server SIGKILLed while it extracts a large trace leaves a workspace the
/// next server works in without `recover`: the next import lands, staging
/// is cleaned, the workspace validates in full, and the killed import is
/// listed as a run that did not complete, with no evidence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
async fn a_server_killed_mid_import_leaves_a_workspace_the_next_server_uses() {
    let project = Project::new();
    let test_started = Instant::now();
    let root = project.path().canonicalize().expect("canonical project");
    let spec = flameox_benches::kineto::KinetoSpec {
        ops_per_step: 0,
        seed: 11,
        events: 400_000,
        streams: 4,
    };
    let file = std::fs::File::create(root.join("big.json")).expect("create");
    flameox_benches::kineto::write_kineto(&spec, std::io::BufWriter::new(file)).expect("generate");
    let traces = copy_small_traces(&root);
    let started = Instant::now();
    eprintln!(
        "generated the large trace in {:.1} s",
        test_started.elapsed().as_secs_f64()
    );

    let s = Session::start(&root, &[]).await;
    let pid = s.pid().expect("server pid");
    let _pending = s
        .send_cancellable("import_artifact", json!({ "path": "big.json" }))
        .await;
    // Kill once extraction is visibly under way and staging is on disk.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let extracting = s
            .wire_progress()
            .iter()
            .any(|(value, message)| message.as_deref() == Some("extracting") && *value > 6.0);
        if extracting && project.staging_entries() > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "no extraction progress");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (stdout, _stderr) = s.kill().await;
    assert_protocol_only(&stdout);
    // SIGKILL ran no cleanup: the dead writer's staging folder is still
    // there, and nothing was published.
    assert!(project.staging_entries() > 0, "staging left by the kill");
    assert_eq!(project.head(), None, "nothing published");
    let killed_at = started.elapsed();

    // A new server on the same project, no recover.
    let mut s = Session::start(&root, &[]).await;
    let runs = all_runs(&mut s).await;
    assert_eq!(runs.len(), 1, "{runs:?}");
    let killed_id = runs[0]["run_id"].as_str().expect("run_id").to_owned();
    // Its writer is gone: listed as interrupted at once, not pending forever.
    assert_eq!(runs[0]["extraction"], "interrupted", "{}", runs[0]);
    let imported = s.ok("import_artifact", json!({ "path": traces[0] })).await;
    assert_ne!(imported["run_id"], killed_id.as_str());
    assert_eq!(
        project.staging_entries(),
        0,
        "the next import cleaned staging"
    );
    let report = s.ok("validate_workspace", json!({ "full": true })).await;
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["orphans"], json!([]), "{report}");
    assert_eq!(report["staging_entries"], 0, "{report}");

    // The killed import is reported as not completed, with no evidence.
    let runs = all_runs(&mut s).await;
    assert_eq!(runs.len(), 2, "{runs:?}");
    let by_id: BTreeMap<&str, &Value> = runs
        .iter()
        .map(|r| (r["run_id"].as_str().expect("run_id"), r))
        .collect();
    let new_run = by_id[imported["run_id"].as_str().expect("run_id")];
    assert_eq!(new_run["extraction"], "completed", "{new_run}");
    let killed = by_id[killed_id.as_str()];
    eprintln!("killed run (pid {pid}) as listed: {killed}");
    assert_eq!(killed["extraction"], "interrupted", "{killed}");
    assert_eq!(killed["validation"], "failed", "{killed}");
    let shown = s.ok("get_run", json!({ "target": killed_id })).await;
    assert_eq!(shown["generation_ids"], json!([]), "{shown}");
    assert!(shown["commit_id"].is_null(), "{shown}");
    let status = s.ok("workspace_status", json!({})).await;
    assert_eq!(status["generations"], 1, "{status}");
    let (stdout, _, _) = s.close().await;
    assert_protocol_only(&stdout);
    assert_cli_valid(&project);
    // `recover` records what the listing showed.
    let recovered = project.json(&["recover"]);
    assert_eq!(
        recovered["interrupted_runs"],
        json!([killed_id]),
        "{recovered}"
    );
    let shown = project.json(&["runs", "show", &killed_id]);
    assert_eq!(shown["status"]["extraction"], "interrupted", "{shown}");
    eprintln!(
        "killed after {:.1} s, whole test {:.1} s",
        killed_at.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
}

/// A hundred tool calls in flight at once on one server: every one answers
/// success within the bound, each with the answer the same call gets alone,
/// and stdout carries only protocol.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
async fn a_hundred_calls_in_flight_on_one_server_all_answer() {
    const CALLS: usize = 100;
    let project = Project::new();
    let test_started = Instant::now();
    let root = project.path().canonicalize().expect("canonical project");
    let traces = copy_small_traces(&root);
    let mut s = Session::start(&root, &[]).await;
    let imported = s.ok("import_artifact", json!({ "path": traces[0] })).await;
    let run_id = imported["run_id"].as_str().expect("run_id").to_owned();
    let requests = [
        ("workspace_status", json!({})),
        ("list_runs", json!({})),
        ("analyze_hotspots", json!({ "target": run_id, "limit": 10 })),
        ("get_run", json!({ "target": run_id })),
    ];
    // The answer each call gets alone.
    let mut alone = Vec::new();
    for (tool, args) in &requests {
        alone.push(s.ok(tool, args.clone()).await);
    }

    let peer = s.client.peer().clone();
    let started = Instant::now();
    let mut calls = JoinSet::new();
    for i in 0..CALLS {
        let (tool, args) = requests[i % requests.len()].clone();
        let params = CallToolRequestParams::new(tool)
            .with_arguments(args.as_object().cloned().unwrap_or_default());
        let peer = peer.clone();
        calls.spawn(async move { (i, peer.call_tool(params).await) });
    }
    let answers = tokio::time::timeout(Duration::from_secs(120), async {
        let mut answers = Vec::new();
        while let Some(joined) = calls.join_next().await {
            answers.push(joined.expect("call task"));
        }
        answers
    })
    .await
    .expect("all calls answer within 120 s");
    let elapsed = started.elapsed();
    eprintln!(
        "{CALLS} concurrent calls answered in {:.2} s",
        elapsed.as_secs_f64()
    );
    assert_eq!(answers.len(), CALLS);
    for (i, answer) in answers {
        let (tool, _) = &requests[i % requests.len()];
        let result = answer.unwrap_or_else(|e| panic!("call {i} ({tool}): protocol error {e}"));
        let body = outcome(&result).unwrap_or_else(|e| panic!("call {i} ({tool}) failed: {e}"));
        assert_eq!(body, alone[i % requests.len()], "call {i} ({tool})");
    }
    let (stdout, _, _) = s.close().await;
    // Initialize, 1 import, 4 single calls and 100 concurrent answers at least.
    assert!(assert_protocol_only(&stdout) > CALLS + 5);
    assert_cli_valid(&project);
    eprintln!("whole test {:.1} s", test_started.elapsed().as_secs_f64());
}
