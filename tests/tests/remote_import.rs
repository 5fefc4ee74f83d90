//! Import from object stores and URLs through the real binary, against a
//! real S3 API on loopback (moto's server, `flameox_tests::s3_server`):
//! an `s3://` object and an `s3://…/prefix/` of per-rank files give the same
//! artifacts and evidence as the same local file and folder; the run says
//! where the bytes came from; a missing key, an unreachable endpoint, a
//! too-large prefix and an HTTP URL with a signature in its query end with
//! typed errors that carry no secret, and leave nothing published or staged.

use std::path::{Path, PathBuf};

use crate::support::mcp::Session;
use flameox_tests::s3_server::{S3Server, free_port};
use flameox_tests::{Project, corpus};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const BUCKET: &str = "traces";

fn artifact_id(path: &Path) -> String {
    let bytes = std::fs::read(path).expect("read");
    format!("sha256:{}", hex::encode(Sha256::digest(&bytes)))
}

fn rank_files() -> Vec<PathBuf> {
    flameox_tests::dlrm_rank_files()
}

/// Runs `flameox ARGS --json` with the server's environment.
fn run(project: &Project, server: &S3Server, args: &[&str]) -> (Option<i32>, Value, String) {
    let mut all = args.to_vec();
    all.push("--json");
    let mut cmd = project.command(&all);
    server.configure(&mut cmd);
    let out = cmd.output().expect("running flameox");
    let body = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "stdout not JSON: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (
        out.status.code(),
        body,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn runs_recorded(project: &Project) -> usize {
    std::fs::read_dir(project.path().join(".flameox/runs"))
        .map(|d| d.count())
        .unwrap_or(0)
}

#[cfg_attr(
    any(corpus_absent, profilers_absent),
    ignore = "needs the shared corpus (bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS) and the tools .ci/run installs (set FLAMEOX_PROFILERS_VENV)"
)]
#[test]
fn an_s3_object_imports_like_the_same_local_file_and_names_its_source() {
    let Some(server) = S3Server::start() else {
        return;
    };
    server.create_bucket(BUCKET);
    let local = corpus().join("kineto/hta_alexnet_a100.pt.trace.json.gz");
    let bytes = std::fs::read(&local).expect("corpus file");
    server.put_public(BUCKET, "jobs/alexnet/trace.pt.trace.json.gz", &bytes);

    let remote = Project::new();
    let url = format!("s3://{BUCKET}/jobs/alexnet/trace.pt.trace.json.gz");
    let (code, imported, stderr) = run(&remote, &server, &["import", &url]);
    assert_eq!(code, Some(0), "{imported} {stderr}");
    assert_eq!(imported["artifact_id"], artifact_id(&local));
    assert_eq!(imported["bytes"], bytes.len() as u64);
    assert_eq!(imported["sources"], serde_json::json!([url]));
    assert_eq!(
        imported["artifacts"][0]["original_name"],
        "trace.pt.trace.json.gz"
    );
    let run_id = imported["run_id"].as_str().expect("run id");
    let shown = remote.json(&["runs", "show", run_id]);
    assert_eq!(shown["metadata"]["source_urls"], serde_json::json!([url]));
    assert_eq!(remote.staging_entries(), 0, "the mirror is removed");

    let here = Project::new();
    let local_import = here.json(&["import", local.to_str().expect("utf-8")]);
    assert_eq!(local_import["artifact_id"], imported["artifact_id"]);
    assert_eq!(local_import["rows"], imported["rows"]);
    assert_eq!(local_import["kind"], imported["kind"]);
    // The stored payload is byte-identical to the object.
    let hex = artifact_id(&local).trim_start_matches("sha256:").to_owned();
    let stored = remote
        .path()
        .join(".flameox/artifacts/sha256")
        .join(&hex[..2])
        .join(&hex);
    let payload = std::fs::read_dir(&stored)
        .expect("artifact folder")
        .map(|e| e.expect("entry").path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("payload"))
        })
        .expect("payload");
    assert_eq!(std::fs::read(payload).expect("payload"), bytes);

    // The same object over plain HTTP (moto serves it unsigned) is the
    // same artifact again: no second extraction.
    let http = format!(
        "{}/{BUCKET}/jobs/alexnet/trace.pt.trace.json.gz",
        server.endpoint()
    );
    let (code, again, stderr) = run(&remote, &server, &["import", &http]);
    assert_eq!(code, Some(0), "{again} {stderr}");
    assert_eq!(again["artifact_id"], imported["artifact_id"]);
    assert_eq!(again["reused_generation"], true);
}

#[cfg_attr(
    any(corpus_absent, profilers_absent),
    ignore = "needs the shared corpus (bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS) and the tools .ci/run installs (set FLAMEOX_PROFILERS_VENV)"
)]
#[test]
fn an_s3_prefix_of_rank_files_is_one_run_like_the_local_folder() {
    let Some(server) = S3Server::start() else {
        return;
    };
    server.create_bucket(BUCKET);
    let files = rank_files();
    for file in &files {
        let name = file.file_name().expect("name").to_string_lossy();
        server.put(
            BUCKET,
            &format!("job-7/ranks/{name}"),
            &std::fs::read(file).expect("rank file"),
        );
    }
    // An object beside the prefix that shares its leading characters must
    // not be part of it.
    server.put(BUCKET, "job-7/ranks-old.json", b"{}");

    let remote = Project::new();
    let url = format!("s3://{BUCKET}/job-7/ranks/");
    let (code, imported, stderr) = run(&remote, &server, &["import", &url]);
    assert_eq!(code, Some(0), "{imported} {stderr}");
    let artifacts = imported["artifacts"].as_array().expect("artifacts");
    assert_eq!(artifacts.len(), files.len());
    for (artifact, file) in artifacts.iter().zip(&files) {
        assert_eq!(artifact["artifact_id"], artifact_id(file));
        assert_eq!(
            artifact["original_name"],
            file.file_name().expect("name").to_string_lossy().as_ref()
        );
    }
    // Without the trailing slash the key has objects under it: the same run.
    let (code, again, _) = run(&remote, &server, &["import", url.trim_end_matches('/')]);
    assert_eq!(code, Some(0), "{again}");
    assert_eq!(
        again["artifacts"].as_array().map(Vec::len),
        Some(files.len())
    );

    let here = Project::new();
    let folder = corpus().join("kineto/param_dlrm_8rank");
    let local = here.json(&["import", folder.to_str().expect("utf-8")]);
    assert_eq!(local["rows"], imported["rows"]);
    let shown = remote.json(&["runs", "show", imported["run_id"].as_str().expect("id")]);
    let local_shown = here.json(&["runs", "show", local["run_id"].as_str().expect("id")]);
    assert_eq!(shown["metadata"]["ranks"], local_shown["metadata"]["ranks"]);
}

#[cfg_attr(
    profilers_absent,
    ignore = "needs the tools .ci/run installs (py-spy, viztracer, pytest, coverage, moto[server]): set FLAMEOX_PROFILERS_VENV"
)]
#[test]
fn a_missing_key_an_unreachable_store_and_a_large_prefix_publish_nothing() {
    let Some(server) = S3Server::start() else {
        return;
    };
    server.create_bucket(BUCKET);
    let project = Project::new();

    let (code, err, _) = run(&project, &server, &["import", "s3://traces/no/such.json"]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err["code"], "INVALID_ARGUMENTS");
    assert!(
        err["message"]
            .as_str()
            .unwrap_or("")
            .contains("s3://traces/no/such.json"),
        "{err}"
    );

    for i in 0..3 {
        server.put(
            BUCKET,
            &format!("many/rank{i}.json"),
            b"{\"traceEvents\": []}",
        );
    }
    std::fs::write(
        project.path().join(".flameox/config.toml"),
        "[import]\nmax_remote_objects = 2\n",
    )
    .expect("config");
    let (code, err, _) = run(&project, &server, &["import", "s3://traces/many/"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err["message"]
            .as_str()
            .unwrap_or("")
            .contains("more than 2 objects"),
        "{err}"
    );

    // Nothing listens on this port: a typed, retryable error, exit 4.
    let mut cmd = project.command(&["import", "s3://traces/x.json", "--json"]);
    server.configure(&mut cmd);
    cmd.env(
        "AWS_ENDPOINT_URL",
        format!("http://127.0.0.1:{}", free_port()),
    );
    let out = cmd.output().expect("flameox");
    let err: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert_eq!(err["code"], "REMOTE_SOURCE_UNAVAILABLE");
    assert_eq!(err["retryable"], true);
    let text = format!("{err}{}", String::from_utf8_lossy(&out.stderr));
    assert!(!text.contains("testing-secret-value"), "{text}");

    // A presigned-style URL: its signature never appears in the answer.
    let url = format!(
        "http://127.0.0.1:{}/traces/x.json?X-Amz-Signature=f00dfeedcafe&X-Amz-Credential=AKIDEXAMPLE",
        free_port()
    );
    let out = project
        .command(&["import", &url, "--json"])
        .output()
        .expect("flameox");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(4), "{text}");
    assert!(!text.contains("f00dfeedcafe"), "{text}");
    assert!(!text.contains("AKIDEXAMPLE"), "{text}");

    assert_eq!(project.head(), None, "nothing was published");
    assert_eq!(runs_recorded(&project), 0, "no run was recorded");
    assert_eq!(project.staging_entries(), 0, "no mirror is left behind");
}

/// An agent's call: `import_artifact` with an `s3://` prefix over stdio
/// (URLs are not confined to the project root), progress through a
/// `downloading` phase, the answer naming its source.
#[cfg_attr(
    any(corpus_absent, profilers_absent),
    ignore = "needs the shared corpus (bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS) and the tools .ci/run installs (set FLAMEOX_PROFILERS_VENV)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_imports_an_s3_prefix_over_mcp() {
    let Some(server) = S3Server::start() else {
        return;
    };
    server.create_bucket(BUCKET);
    let files = rank_files();
    for file in files.iter().take(2) {
        let name = file.file_name().expect("name").to_string_lossy();
        server.put(
            BUCKET,
            &format!("agent/{name}"),
            &std::fs::read(file).expect("rank file"),
        );
    }
    let project = Project::new();
    let mut s = Session::start_with_env(project.path(), &[], &server.env()).await;
    let imported = s
        .ok("import_artifact", json!({ "path": "s3://traces/agent/" }))
        .await;
    assert_eq!(imported["sources"], json!(["s3://traces/agent/"]));
    assert_eq!(imported["artifacts"].as_array().map(Vec::len), Some(2));
    let phases = s.increasing_progress_phases();
    let at = |phase: &str| phases.iter().position(|p| p == phase);
    assert!(
        at("downloading").is_some() && at("downloading") < at("extracting"),
        "downloading comes before extracting: {phases:?}"
    );
    let missing = s
        .err(
            "import_artifact",
            json!({ "path": "s3://traces/agent/nothing-here.json" }),
            "INVALID_ARGUMENTS",
        )
        .await;
    assert!(
        missing["message"]
            .as_str()
            .unwrap_or("")
            .contains("s3://traces/agent/nothing-here.json"),
        "{missing}"
    );
}

/// An MCP client starts its server with a reduced environment (the stock
/// Python client passes HOME, PATH and a few more): the AWS files in HOME
/// are enough; with neither variables nor files the answer says so.
#[cfg_attr(
    any(corpus_absent, profilers_absent),
    ignore = "needs the shared corpus (bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS) and the tools .ci/run installs (set FLAMEOX_PROFILERS_VENV)"
)]
#[test]
fn the_aws_files_suffice_and_missing_credentials_are_named() {
    let Some(server) = S3Server::start() else {
        return;
    };
    server.create_bucket(BUCKET);
    let file = &rank_files()[0];
    server.put(BUCKET, "r/rank0.json", &std::fs::read(file).expect("rank"));
    let project = Project::new();
    let home = tempfile::tempdir().expect("home");
    std::fs::create_dir(home.path().join(".aws")).expect(".aws");
    std::fs::write(
        home.path().join(".aws/credentials"),
        "[default]\naws_access_key_id = filekey\naws_secret_access_key = file-secret-value\n",
    )
    .expect("credentials");
    std::fs::write(
        home.path().join(".aws/config"),
        format!(
            "[default]\nregion = us-east-1\nendpoint_url = {}\n",
            server.endpoint()
        ),
    )
    .expect("config");
    let bare = |home: &Path| {
        let mut cmd = project.command(&["import", "s3://traces/r/rank0.json", "--json"]);
        cmd.env_clear()
            .env("HOME", home)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default());
        cmd
    };
    let out = bare(home.path()).output().expect("flameox");
    let body: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(out.status.code(), Some(0), "{body}");
    assert_eq!(body["artifact_id"], artifact_id(file));

    let empty = tempfile::tempdir().expect("empty home");
    let mut cmd = bare(empty.path());
    // The instance metadata service is asked when nothing is configured:
    // point it at a closed port so the refusal comes at once.
    cmd.env("AWS_ENDPOINT_URL", server.endpoint()).env(
        "AWS_METADATA_ENDPOINT",
        format!("http://127.0.0.1:{}", free_port()),
    );
    let out = cmd.output().expect("flameox");
    let body: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(out.status.code(), Some(4), "{body}");
    assert_eq!(body["code"], "REMOTE_SOURCE_UNAVAILABLE");
    let message = body["message"].as_str().unwrap_or("");
    assert!(message.contains("no AWS credentials"), "{body}");
    assert!(
        body["remediation"][0]
            .as_str()
            .unwrap_or("")
            .contains("~/.aws/credentials"),
        "{body}"
    );
}

/// A server that accepts the connection and never answers: the import
/// still ends at its deadline with nothing published (no input hangs it).
#[test]
fn a_server_that_never_answers_stops_at_the_deadline() {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("listener");
    let port = listener.local_addr().expect("addr").port();
    let held = std::thread::spawn(move || {
        // Hold the accepted connections open and silent.
        let mut open = Vec::new();
        for stream in listener.incoming().take(8) {
            open.push(stream);
        }
        std::thread::sleep(std::time::Duration::from_secs(30));
    });
    let project = Project::new();
    let url = format!("http://127.0.0.1:{port}/trace.json");
    let started = std::time::Instant::now();
    let out = project
        .command(&["import", &url, "--timeout", "2", "--json"])
        .output()
        .expect("flameox");
    let elapsed = started.elapsed();
    let body: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(out.status.code(), Some(8), "{body}");
    assert_eq!(body["code"], "OPERATION_CANCELLED");
    assert_eq!(body["details"]["cause"], "deadline", "{body}");
    assert!(
        elapsed < std::time::Duration::from_secs(15),
        "stopped after {elapsed:?}"
    );
    assert_eq!(project.head(), None);
    assert_eq!(project.staging_entries(), 0);
    drop(held);
}

/// A damaged object reads like the same damaged local file: a rank file
/// cut in half keeps its complete events and says so; an object that is
/// no profile fails typed, its failed run names the URL it read, and
/// nothing is published.
#[cfg_attr(
    any(corpus_absent, profilers_absent),
    ignore = "needs the shared corpus (bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS) and the tools .ci/run installs (set FLAMEOX_PROFILERS_VENV)"
)]
#[test]
fn damaged_objects_answer_like_the_same_local_files() {
    let Some(server) = S3Server::start() else {
        return;
    };
    server.create_bucket(BUCKET);
    let bytes = std::fs::read(&rank_files()[0]).expect("rank");
    let half = &bytes[..bytes.len() / 2];
    server.put(BUCKET, "cut/rank0.json", half);
    let project = Project::new();
    let (code, cut, _) = run(&project, &server, &["import", "s3://traces/cut/rank0.json"]);
    assert_eq!(code, Some(0), "{cut}");
    let local = Project::new();
    let local_copy = local.path().join("rank0.json");
    std::fs::write(&local_copy, half).expect("local copy");
    let same = local.json(&["import", local_copy.to_str().expect("utf8")]);
    assert_eq!(cut["limitations"], same["limitations"], "{cut}");
    assert_eq!(cut["limitations"][0]["code"], "truncated_input", "{cut}");
    assert_eq!(cut["rows"], same["rows"]);

    server.put(BUCKET, "bad/profile.folded", b"this is not a profile\n");
    let project = Project::new();
    let url = "s3://traces/bad/profile.folded";
    let (code, err, _) = run(&project, &server, &["import", url, "--kind", "folded"]);
    assert_eq!(code, Some(5), "{err}");
    assert_eq!(err["code"], "ARTIFACT_PARSE_FAILED", "{err}");
    let run_id = err["run_id"].as_str().expect("the failed run");
    let shown = project.json(&["runs", "show", run_id]);
    assert_eq!(shown["metadata"]["source_urls"], json!([url]), "{shown}");
    assert_eq!(project.head(), None);
    assert_eq!(project.staging_entries(), 0);
}
