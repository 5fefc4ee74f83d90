//! Publication guarantees, proven with the real binary: idempotent
//! re-extraction, nothing published on bad input, crash safety under SIGKILL,
//! and concurrent imports from separate processes.

use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;
use std::time::{Duration, Instant};

use flameox_tests::{Project, corpus};

fn alexnet() -> String {
    corpus()
        .join("kineto/hta_alexnet_a100.pt.trace.json.gz")
        .to_string_lossy()
        .into_owned()
}

fn small_json() -> String {
    corpus()
        .join("kineto/kineto_h100_out_of_order_after_fix.json")
        .to_string_lossy()
        .into_owned()
}

fn assert_valid(project: &Project) {
    let report = project.json(&["validate", "--full"]);
    assert_eq!(report["ok"], true, "{report}");
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn reimport_creates_a_new_run_but_reuses_the_generation() {
    let project = Project::new();
    let first = project.json(&["import", &alexnet()]);
    let status_before = project.json(&["status"]);
    let second = project.json(&["import", &alexnet()]);
    assert_ne!(first["run_id"], second["run_id"]);
    assert_eq!(first["generation_id"], second["generation_id"]);
    assert_eq!(second["reused_generation"], true);
    assert_eq!(first["commit_id"], second["commit_id"]);
    let status_after = project.json(&["status"]);
    assert_eq!(
        status_before["evidence_rows"],
        status_after["evidence_rows"]
    );
    assert_eq!(status_after["runs"], 2);
    assert_eq!(status_after["generations"], 1);
    // Both runs answer the same question the same way.
    let a = project.json(&[
        "analyze",
        "hotspots",
        first["run_id"].as_str().unwrap(),
        "--limit",
        "5",
    ]);
    let b = project.json(&[
        "analyze",
        "hotspots",
        second["run_id"].as_str().unwrap(),
        "--limit",
        "5",
    ]);
    assert_eq!(a["rows"], b["rows"]);
    assert_valid(&project);
}

/// Each broken input is refused with a typed error and publishes nothing,
/// or (where a rule applies) is accepted with a typed limitation.
#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn broken_inputs_get_typed_errors_and_leave_head_unchanged() {
    let project = Project::new();
    project.json(&["import", &small_json()]);
    let head = project.head();
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path.to_string_lossy().into_owned()
    };
    let original = std::fs::read(small_json()).unwrap();
    let mut refused = vec![
        write("empty.json", b""),
        write("not-json.json", b"hello, this is not a trace\n"),
        write("binary.bin", &[0u8, 159, 146, 150, 1, 2, 3]),
        write("bad-utf8.json", b"\xff\xfe\xfd{\"traceEvents\": ["),
    ];
    // A SQLite header over zeros is read by its schema and is no database
    // at all: a parse failure. (A readable SQLite database without Nsight
    // tables is a capability error: `fuzz_finds.rs`.)
    let mut sqlite = b"SQLite format 3\0".to_vec();
    sqlite.resize(4096, 0);
    let sqlite = write("plain.sqlite", &sqlite);
    let err = project.json_err(&["import", &sqlite], "ARTIFACT_PARSE_FAILED", 5);
    assert_eq!(err["details"]["kind"], "sqlite", "{err}");
    assert_eq!(project.head(), head);
    // A cpuprofile without nodes is read by its extractor and refused.
    refused.push(write("object.json", b"{\"nodes\": [], \"startTime\": 0}"));
    // Truncations before the first complete event cannot yield evidence.
    refused.push(write("cut-early.json", &original[..40]));
    for path in &refused {
        let err = project.json_err(&["import", path], "ARTIFACT_PARSE_FAILED", 5);
        assert!(err["message"].as_str().unwrap().len() > 10);
        assert_eq!(project.head(), head, "HEAD moved after refusing {path}");
    }
    // Truncated at many offsets: refused, or accepted and marked truncated.
    let step = original.len() / 12;
    for cut in (step..original.len() - 2).step_by(step) {
        let path = write(&format!("cut-{cut}.json"), &original[..cut]);
        let out = project.run(&["import", &path, "--json"]);
        let body: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        match out.status.code() {
            Some(0) => {
                let codes: Vec<&str> = body["limitations"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| l["code"].as_str().unwrap())
                    .collect();
                assert!(
                    codes.contains(&"truncated_input"),
                    "cut at {cut}: {codes:?}"
                );
            }
            Some(5) => assert_eq!(body["code"], "ARTIFACT_PARSE_FAILED"),
            other => panic!("cut at {cut}: exit {other:?} {body}"),
        }
    }
    // Invalid UTF-8 inside a string and an unbalanced B/E pair are handled by rules.
    let rules = write(
        "rules.json",
        b"[{\"ph\":\"B\",\"name\":\"open\xff\",\"pid\":1,\"tid\":1,\"ts\":1},{\"ph\":\"E\",\"pid\":1,\"tid\":2,\"ts\":5},{\"ph\":\"X\",\"name\":\"x\",\"pid\":1,\"tid\":1,\"ts\":2,\"dur\":1}]",
    );
    let ok = project.json(&["import", &rules]);
    let codes: Vec<&str> = ok["limitations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["code"].as_str().unwrap())
        .collect();
    for code in [
        "invalid_utf8_replaced",
        "unmatched_end",
        "unterminated_slice",
    ] {
        assert!(codes.contains(&code), "{code} missing from {codes:?}");
    }
    assert_valid(&project);
    // A refusal after detection is recorded as a failed run with its error,
    // never with evidence.
    let runs = project.json(&["runs", "list", "--limit", "1000"]);
    for run in runs["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["extraction"] == "failed")
    {
        let shown = project.json(&["runs", "show", run["run_id"].as_str().unwrap()]);
        assert!(shown["error"]["code"].is_string(), "{shown}");
        assert_eq!(shown["generation_ids"].as_array().unwrap().len(), 0);
    }
}

fn spawn_paused_import(project: &Project, point: &str, file: &str) -> std::process::Child {
    let mut child = project
        .command(&["import", file])
        .env("FLAMEOX_TEST_PAUSE_AT", point)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut reader = BufReader::new(stderr);
    let mut line = String::new();
    let started = Instant::now();
    loop {
        line.clear();
        let n = reader.read_line(&mut line).unwrap();
        assert!(n > 0, "child exited before reaching {point}");
        if line.contains(&format!("paused at {point}")) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "child never reached {point}"
        );
    }
    child
}

/// Distinct `artifact_id` values in every Parquet file of the workspace.
fn artifact_ids_in_evidence(project: &Project) -> std::collections::BTreeSet<String> {
    use arrow::array::{Array, StringArray};
    use arrow::datatypes::DataType;
    let mut ids = std::collections::BTreeSet::new();
    let mut folders = vec![project.path().join(".flameox")];
    while let Some(dir) = folders.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "parquet") {
                let file = std::fs::File::open(&path).unwrap();
                let reader =
                    parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
                        .unwrap()
                        .build()
                        .unwrap();
                for batch in reader {
                    let batch = batch.unwrap();
                    let column = batch.column_by_name("artifact_id").expect("artifact_id");
                    let text = arrow::compute::cast(column, &DataType::Utf8).unwrap();
                    let text = text.as_any().downcast_ref::<StringArray>().unwrap();
                    ids.extend((0..text.len()).map(|i| text.value(i).to_owned()));
                }
            }
        }
    }
    ids
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn the_id_the_copier_computes_names_every_row_and_the_run() {
    use sha2::{Digest, Sha256};
    let project = Project::new();
    let path = alexnet();
    let expected = format!(
        "sha256:{}",
        hex::encode(Sha256::digest(std::fs::read(&path).unwrap()))
    );
    // A new size in an empty store: extraction starts before the id is
    // known, and the rows are stamped once the copy's hash is.
    let imported = project.json(&["import", &path]);
    assert_eq!(imported["artifact_id"], expected.as_str());
    let ids = artifact_ids_in_evidence(&project);
    assert_eq!(ids.into_iter().collect::<Vec<_>>(), vec![expected.clone()]);
    let run = project.json(&["runs", "show", imported["run_id"].as_str().unwrap()]);
    assert_eq!(
        run["artifacts"][0]["artifact_id"],
        expected.as_str(),
        "{run}"
    );
    let stored = project.json(&["artifacts", "list"]);
    assert!(stored.to_string().contains(&expected), "{stored}");
    assert!(!stored.to_string().contains("pending"), "{stored}");
    assert_valid(&project);
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn sigkill_at_every_publication_step_leaves_a_valid_workspace() {
    for point in ["staged", "moved", "generation_written", "commit_written"] {
        let project = Project::new();
        project.json(&["import", &small_json()]);
        let head = project.head();
        let mut child = spawn_paused_import(&project, point, &alexnet());
        child.kill().unwrap(); // SIGKILL on Unix
        child.wait().unwrap();
        assert_eq!(project.head(), head, "HEAD changed after a kill at {point}");
        assert_valid(&project);
        // The next writer cleans the dead writer's staging and lands its own.
        let again = project.json(&["import", &alexnet()]);
        assert_eq!(again["reused_generation"], false, "{point}");
        assert_eq!(project.staging_entries(), 0, "staging left after {point}");
        assert_valid(&project);
        // recover marks the killed run and moves what nothing references to trash.
        let recovered = project.json(&["recover"]);
        assert_eq!(
            recovered["interrupted_runs"].as_array().unwrap().len(),
            1,
            "{point}: {recovered}"
        );
        let report = project.json(&["validate", "--full"]);
        assert_eq!(
            report["orphans"].as_array().unwrap().len(),
            0,
            "{point}: {report}"
        );
        assert_eq!(report["ok"], true);
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn concurrent_imports_from_separate_processes_both_land() {
    let project = Project::new();
    let files = [
        alexnet(),
        small_json(),
        corpus()
            .join("kineto/hta_amd_mi250_rocm6.2.json.gz")
            .to_string_lossy()
            .into_owned(),
    ];
    let children: Vec<_> = files
        .iter()
        .map(|f| {
            project
                .command(&["import", f, "--json"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut generations = Vec::new();
    for mut child in children {
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        let status = child.wait().unwrap();
        assert!(status.success(), "{out}");
        let body: serde_json::Value = serde_json::from_str(&out).unwrap();
        generations.push(body["generation_id"].as_str().unwrap().to_owned());
    }
    let head = project.head().unwrap();
    let commit: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            project
                .path()
                .join(format!(".flameox/corpus/commits/{head}.json")),
        )
        .unwrap(),
    )
    .unwrap();
    for g in &generations {
        assert!(
            commit["generations"].get(g).is_some(),
            "generation {g} lost"
        );
    }
    assert_eq!(project.json(&["status"])["generations"], 3);
    assert_valid(&project);
}
