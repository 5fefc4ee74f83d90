//! An import obeys its deadline and a Ctrl-C (`docs/reliability.md`): it
//! stops, removes its staging folder, releases the write lock, leaves HEAD
//! where it was, records the run as cancelled, and exits 8 with an error
//! that says which limit fired. Also the smallest damaged trace,
//! which used to spin forever.

use std::io::Read;
use std::time::{Duration, Instant};

use crate::support::mcp::{Session, assert_protocol_only};
use flameox_tests::{Project, corpus};
use serde_json::json;

/// A generated Kineto trace big enough that its import takes seconds.
fn big_trace(project: &Project) -> &'static str {
    let spec = flameox_benches::kineto::KinetoSpec {
        ops_per_step: 0,
        seed: 11,
        events: 400_000,
        streams: 4,
    };
    let file = std::fs::File::create(project.path().join("big.json")).expect("create");
    flameox_benches::kineto::write_kineto(&spec, std::io::BufWriter::new(file)).expect("generate");
    "big.json"
}

/// A small corpus trace copied into the project.
fn small_trace(project: &Project) -> &'static str {
    std::fs::copy(
        corpus().join("kineto/hta_alexnet_a100.pt.trace.json.gz"),
        project.path().join("small.json.gz"),
    )
    .expect("copy");
    "small.json.gz"
}

/// What every stopped import must leave behind.
fn assert_stopped_cleanly(project: &Project, head_before: Option<String>) {
    assert_eq!(project.head(), head_before, "HEAD moved");
    assert_eq!(project.staging_entries(), 0, "staging left behind");
    let runs = project.json(&["runs", "list"]);
    assert_eq!(runs["items"][0]["extraction"], "cancelled", "{runs}");
    let report = project.json(&["validate", "--full"]);
    assert_eq!(report["ok"], true, "{report}");
    // The write lock is free: the next import lands at once.
    let small = small_trace(project);
    let started = Instant::now();
    project.json(&["import", small]);
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn the_timeout_flag_stops_an_import_with_exit_8() {
    let project = Project::new();
    let big = big_trace(&project);
    let started = Instant::now();
    let err = project.json_err(
        &["import", big, "--timeout", "0.3"],
        "OPERATION_CANCELLED",
        8,
    );
    let took = started.elapsed();
    assert_eq!(err["details"]["cause"], "deadline", "{err}");
    assert_eq!(err["details"]["timeout_seconds"], 0.3, "{err}");
    assert!(
        err["message"].as_str().unwrap().contains("deadline"),
        "{err}"
    );
    assert!(err["run_id"].is_string(), "{err}");
    // It stops at its deadline, not when the import would have ended.
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert_stopped_cleanly(&project, None);
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn the_configured_timeout_bounds_every_import() {
    let project = Project::new();
    let config = project.path().join(".flameox/config.toml");
    let text = std::fs::read_to_string(&config).expect("config");
    assert!(text.contains("timeout_seconds = 3600"), "{text}");
    std::fs::write(
        &config,
        text.replace("timeout_seconds = 3600", "timeout_seconds = 1"),
    )
    .expect("write config");
    let big = big_trace(&project);
    // A larger --timeout does not raise the configured limit.
    let err = project.json_err(
        &["import", big, "--timeout", "100"],
        "OPERATION_CANCELLED",
        8,
    );
    assert_eq!(err["details"]["cause"], "deadline", "{err}");
    assert_eq!(err["details"]["timeout_seconds"], 1.0, "{err}");
    assert!(
        err["remediation"][0]
            .as_str()
            .unwrap()
            .contains("import.timeout_seconds"),
        "{err}"
    );
    // A zero limit is refused when the workspace opens, naming the key.
    std::fs::write(
        &config,
        text.replace("timeout_seconds = 3600", "timeout_seconds = 0"),
    )
    .expect("write config");
    let out = project.run(&["status", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("import.timeout_seconds"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    std::fs::write(&config, &text).expect("restore config");
    assert_stopped_cleanly(&project, None);
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn ctrl_c_stops_an_import_with_exit_8() {
    let project = Project::new();
    let small = small_trace(&project);
    project.json(&["import", small]);
    let head = project.head();
    assert!(head.is_some());
    let big = big_trace(&project);
    let mut child = project
        .command(&["import", big, "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    // Interrupt once the import has staged something (extraction under way).
    let waited = Instant::now();
    while project.staging_entries() == 0 {
        assert!(
            waited.elapsed() < Duration::from_secs(60),
            "no staging appeared"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: signals our own child process.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let status = child.wait().expect("wait");
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut stdout)
        .expect("read");
    assert_eq!(status.code(), Some(8), "{stdout}");
    let err: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON error");
    assert_eq!(err["code"], "OPERATION_CANCELLED", "{err}");
    assert_ne!(err["details"]["cause"], "deadline", "{err}");
    assert_stopped_cleanly(&project, head);
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn the_smallest_known_hang_ends_with_a_typed_answer() {
    // Issue 25: one byte of hta_amd_mi250_rocm6.2.json.gz changed, the `]`
    // right after the first "Scalar" replaced by `\`; the import spun
    // forever at 100 % of a core.
    let raw = std::fs::read(corpus().join("kineto/hta_amd_mi250_rocm6.2.json.gz")).expect("corpus");
    let mut json = Vec::new();
    flate2::read::MultiGzDecoder::new(&raw[..])
        .read_to_end(&mut json)
        .expect("gunzip");
    let at = json
        .windows(8)
        .position(|w| w == b"\"Scalar\"")
        .expect("a Scalar")
        + 8;
    assert_eq!((at, json[at]), (2582, b']'));
    json[at] = b'\\';
    let project = Project::new();
    std::fs::write(project.path().join("damaged.json"), &json).expect("write");
    let started = Instant::now();
    let out = project.run(&["import", "damaged.json", "--json", "--timeout", "30"]);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let code = out.status.code();
    assert!(
        matches!(code, Some(0 | 5)),
        "{code:?}: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let body: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    if code == Some(0) {
        let codes: Vec<&str> = body["limitations"]
            .as_array()
            .expect("limitations")
            .iter()
            .filter_map(|l| l["code"].as_str())
            .collect();
        assert!(codes.contains(&"malformed_event"), "{body}");
    }
    let report = project.json(&["validate", "--full"]);
    assert_eq!(report["ok"], true, "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
async fn an_mcp_import_obeys_its_timeout_seconds() {
    let project = Project::new();
    let big = big_trace(&project);
    let small = small_trace(&project);
    let mut s = Session::start(project.path(), &[]).await;
    let started = Instant::now();
    let err = s
        .err(
            "import_artifact",
            json!({ "path": big, "timeout_seconds": 0.3 }),
            "OPERATION_CANCELLED",
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(err["details"]["cause"], "deadline", "{err}");
    assert_eq!(err["details"]["timeout_seconds"], 0.3, "{err}");
    // A non-positive limit is refused before anything runs.
    s.err(
        "import_artifact",
        json!({ "path": small, "timeout_seconds": 0 }),
        "INVALID_ARGUMENTS",
    )
    .await;
    let runs = s.ok("list_runs", json!({})).await;
    assert_eq!(runs["items"][0]["extraction"], "cancelled", "{runs}");
    let status = s.ok("workspace_status", json!({})).await;
    assert!(status["head_commit"].is_null(), "{status}");
    // The lock is free: the next import lands.
    s.ok("import_artifact", json!({ "path": small })).await;
    let (stdout, _, _) = s.close().await;
    assert_protocol_only(&stdout);
    assert_eq!(project.staging_entries(), 0);
}
