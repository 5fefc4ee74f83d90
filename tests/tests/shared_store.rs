//! A workspace whose evidence lives in an object store (`flameox init
//! --store s3://…`), through the real binary against a real S3 API on
//! loopback (moto's server): two workspaces on one prefix see each other's
//! imports and answer alike, the one that imported nothing reading the
//! Parquet files from the store; two publishers racing for one commit both
//! land (the loser rebases); a publisher killed before its commit-log entry
//! leaves a store every workspace keeps using.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use flameox_tests::s3_server::S3Server;
use flameox_tests::{Project, corpus};
use serde_json::Value;

const BUCKET: &str = "evidence";
const STORE: &str = "s3://evidence/team";
const ALEXNET: &str = "kineto/hta_alexnet_a100.pt.trace.json.gz";
const NCCL: &str = "kineto/hta_nccl_a100_rank0of2.json.gz";

fn command(project: &Project, server: &S3Server, args: &[&str]) -> Command {
    let mut all = args.to_vec();
    all.push("--json");
    let mut cmd = project.command(&all);
    server.configure(&mut cmd);
    cmd
}

/// Runs `flameox ARGS --json` against the server; asserts success.
fn flameox(project: &Project, server: &S3Server, args: &[&str]) -> Value {
    flameox_tests::success_json(&mut command(project, server, args), args)
}

/// A project initialized on the shared store.
fn on_store(server: &S3Server) -> Project {
    let project = Project::bare();
    let init = flameox(&project, server, &["init", "--store", STORE]);
    assert_eq!(init["store"]["url"], STORE, "{init}");
    project
}

fn corpus_path(name: &str) -> String {
    corpus().join(name).display().to_string()
}

fn log_entries(server: &S3Server) -> Vec<String> {
    server.keys(BUCKET, "team/corpus/log/")
}

fn local_parquet_files(project: &Project) -> usize {
    fn walk(dir: &std::path::Path) -> usize {
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| {
                        let path = e.path();
                        if path.is_dir() {
                            walk(&path)
                        } else {
                            usize::from(path.extension().is_some_and(|x| x == "parquet"))
                        }
                    })
                    .sum()
            })
            .unwrap_or(0)
    }
    walk(&project.path().join(".flameox/evidence"))
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn two_workspaces_on_one_store_see_each_others_evidence_and_answer_alike() {
    let Some(server) = S3Server::start() else {
        return;
    };
    server.create_bucket(BUCKET);
    let a = on_store(&server);
    let imported = flameox(&a, &server, &["import", &corpus_path(ALEXNET)]);
    let run_a = imported["run_id"].as_str().expect("run id").to_owned();
    assert_eq!(log_entries(&server).len(), 1);
    // Every object the commit names is in the store.
    let keys = server.keys(BUCKET, "team/");
    assert!(
        keys.iter()
            .any(|k| k.starts_with("team/evidence/trace_events/")),
        "{keys:?}"
    );
    assert!(
        keys.iter()
            .any(|k| k.ends_with(&format!("runs/{run_a}/manifest.json")))
    );

    let b = on_store(&server);
    let status_a = flameox(&a, &server, &["status"]);
    let status_b = flameox(&b, &server, &["status"]);
    assert_eq!(status_b["head_commit"], status_a["head_commit"]);
    assert_eq!(status_b["evidence_rows"], status_a["evidence_rows"]);
    let shown = flameox(&b, &server, &["runs", "show", &run_a]);
    assert_eq!(
        shown["status"]["extraction"], "completed",
        "the run's last revision reached the store: {shown}"
    );
    // B holds no Parquet file: its answers come from range reads of the store.
    assert_eq!(local_parquet_files(&b), 0);
    for analysis in [
        vec!["analyze", "summary", &run_a],
        vec!["analyze", "gpu-summary", &run_a],
        vec!["analyze", "gpu-gaps", &run_a, "--limit", "5"],
    ] {
        let from_a = flameox(&a, &server, &analysis);
        let from_b = flameox(&b, &server, &analysis);
        assert!(from_a.as_object().is_some_and(|o| o.len() > 3), "{from_a}");
        assert_eq!(from_a, from_b, "{analysis:?}");
    }
    assert_eq!(local_parquet_files(&b), 0);
    // B holds only A's artifact record until it needs the bytes: opening
    // the trace fetches them, checked against the artifact id.
    let artifact = imported["artifact_id"].as_str().expect("artifact");
    let hex = artifact.trim_start_matches("sha256:");
    let folder = b
        .path()
        .join(format!(".flameox/artifacts/sha256/{}/{hex}", &hex[..2]));
    let payloads = |dir: &std::path::Path| {
        std::fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with("payload"))
                    .map(|e| e.path())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    assert!(payloads(&folder).is_empty());
    // `--launch` serves only without --json (the seed: never a browser
    // with --json).
    let mut open = b.command(&["open", artifact, "--launch", "--wait", "1"]);
    server.configure(&mut open);
    open.env("PATH", "/nonexistent");
    let out = open.output().expect("open --launch");
    assert!(out.status.success(), "{out:?}");
    let fetched = payloads(&folder);
    assert_eq!(fetched.len(), 1, "{fetched:?}");
    assert_eq!(
        std::fs::read(&fetched[0]).expect("payload"),
        std::fs::read(corpus().join(ALEXNET)).expect("corpus")
    );

    // B's import reaches A.
    let second = flameox(&b, &server, &["import", &corpus_path(NCCL)]);
    let status_a = flameox(&a, &server, &["status"]);
    assert_eq!(status_a["generations"], 2, "{status_a}");
    assert_eq!(status_a["head_commit"], second["commit_id"]);
    assert_eq!(log_entries(&server).len(), 2);
    let validated = flameox(&b, &server, &["validate"]);
    assert_eq!(validated["ok"], true, "{validated}");
}

/// Starts an import that stops just before claiming its commit-log entry
/// and waits until it says so; returns the child.
/// An import stopped after uploading its commit, until `resume` exists
/// (when given) or for 120 s.
fn paused_import(
    project: &Project,
    server: &S3Server,
    trace: &str,
    resume: Option<&Path>,
) -> std::process::Child {
    let mut cmd = command(project, server, &["import", &corpus_path(trace)]);
    cmd.env("FLAMEOX_TEST_PAUSE_AT", "store_commit_uploaded")
        .env("FLAMEOX_TEST_PAUSE_MS", "120000")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(file) = resume {
        cmd.env("FLAMEOX_TEST_RESUME_FILE", file);
    }
    let mut child = cmd.spawn().expect("starting the import");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let started = Instant::now();
    loop {
        let line = lines
            .next()
            .expect("the import ended before its pause point")
            .expect("stderr line");
        if line.contains("paused at store_commit_uploaded") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(120));
    }
    // Keep draining so the child never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    child
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn two_racing_publishers_both_land_and_the_loser_rebases() {
    let Some(server) = S3Server::start() else {
        return;
    };
    server.create_bucket(BUCKET);
    let a = on_store(&server);
    let b = on_store(&server);
    // A uploads everything, then waits with log entry 1 in mind …
    let resume = a.path().join("resume-a");
    let slow = paused_import(&a, &server, ALEXNET, Some(&resume));
    // … while B takes it; A goes on once B's import has answered.
    let fast = flameox(&b, &server, &["import", &corpus_path(NCCL)]);
    std::fs::write(&resume, b"").expect("the resume file");
    let out = slow.wait_with_output().expect("the paused import");
    assert!(out.status.success(), "{out:?}");
    let slow_answer: Value = serde_json::from_slice(&out.stdout).expect("JSON answer");
    // Two entries: B's commit first, A's rebased onto it.
    let entries: Vec<Value> = log_entries(&server)
        .iter()
        .map(|key| serde_json::from_slice(&server.get(BUCKET, key)).expect("log entry JSON"))
        .collect();
    assert_eq!(entries.len(), 2, "{entries:?}");
    assert_eq!(entries[0]["commit_id"], fast["commit_id"], "{entries:?}");
    assert_eq!(entries[1]["commit_id"], slow_answer["commit_id"]);
    assert_eq!(entries[1]["parent"], fast["commit_id"]);
    assert_eq!(entries[1]["seq"], 2);
    // Nothing lost: both generations are live, for both workspaces.
    for project in [&a, &b] {
        let status = flameox(project, &server, &["status"]);
        assert_eq!(status["head_commit"], slow_answer["commit_id"]);
        assert_eq!(status["generations"], 2, "{status}");
    }
    // A third workspace sees both runs.
    let c = on_store(&server);
    let listed = flameox(&c, &server, &["runs", "list"]);
    let ids: Vec<&str> = listed["items"]
        .as_array()
        .expect("runs")
        .iter()
        .filter_map(|r| r["run_id"].as_str())
        .collect();
    for run in [&slow_answer["run_id"], &fast["run_id"]] {
        assert!(ids.contains(&run.as_str().expect("run")), "{listed}");
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_publisher_killed_before_its_log_entry_leaves_a_store_everyone_keeps_using() {
    let Some(server) = S3Server::start() else {
        return;
    };
    server.create_bucket(BUCKET);
    let a = on_store(&server);
    let first = flameox(&a, &server, &["import", &corpus_path(NCCL)]);
    let mut killed = paused_import(&a, &server, ALEXNET, None);
    killed.kill().expect("kill");
    let _ = killed.wait();
    // Its objects are in the store, but nothing names them.
    assert_eq!(log_entries(&server).len(), 1);
    let b = on_store(&server);
    let status = flameox(&b, &server, &["status"]);
    assert_eq!(status["head_commit"], first["commit_id"]);
    assert_eq!(status["generations"], 1);
    // Both workspaces go on publishing; A's import simply runs again.
    flameox(&a, &server, &["recover"]);
    let again = flameox(&a, &server, &["import", &corpus_path(ALEXNET)]);
    assert_eq!(log_entries(&server).len(), 2);
    let status = flameox(&b, &server, &["status"]);
    assert_eq!(status["head_commit"], again["commit_id"]);
    assert_eq!(status["generations"], 2);
    let validated = flameox(&a, &server, &["validate"]);
    assert_eq!(validated["ok"], true, "{validated}");
}

#[test]
fn a_store_url_that_cannot_hold_a_workspace_is_refused_and_nothing_is_recorded() {
    let Some(server) = S3Server::start() else {
        return;
    };
    let project = Project::bare();
    // No such bucket: the marker cannot be written.
    let out = command(
        &project,
        &server,
        &["init", "--store", "s3://missing-bucket/x"],
    )
    .output()
    .expect("running flameox");
    assert_ne!(out.status.code(), Some(0));
    let body: Value = serde_json::from_slice(&out.stdout).expect("JSON error");
    assert_eq!(body["code"], "REMOTE_SOURCE_UNAVAILABLE", "{body}");
    let config =
        std::fs::read_to_string(project.path().join(".flameox/config.toml")).expect("config.toml");
    assert!(!config.contains("missing-bucket"), "{config}");
    // HTTP cannot list or put conditionally.
    let out = command(
        &project,
        &server,
        &["init", "--store", "https://example.com/x"],
    )
    .output()
    .expect("running flameox");
    let body: Value = serde_json::from_slice(&out.stdout).expect("JSON error");
    assert_eq!(body["code"], "INVALID_ARGUMENTS", "{body}");
}
