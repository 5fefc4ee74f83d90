//! Multi-file runs through the real binary: a folder with one Kineto file
//! per rank becomes ONE run with one artifact per file (sorted by name),
//! each keeping its rank; several paths do the same in the order given; a
//! folder with one corrupt file fails naming it and records no run.

use std::path::{Path, PathBuf};

use flameox_tests::{Project, corpus};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn rank_files() -> Vec<PathBuf> {
    flameox_tests::dlrm_rank_files()
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// `sha256:<hex>` of a file's bytes.
fn artifact_id(path: &Path) -> String {
    let bytes = std::fs::read(path).expect("read");
    format!("sha256:{}", hex::encode(Sha256::digest(&bytes)))
}

/// What the test reads from each rank file itself: its rank and its
/// kernels (NCCL kernels are `communication` evidence, not `kernel`).
fn rank_and_kernels(path: &Path) -> (i64, i64) {
    let doc: Value = serde_json::from_slice(&std::fs::read(path).expect("read")).expect("json");
    let rank = doc["distributedInfo"]["rank"].as_i64().expect("rank");
    let kernels = doc["traceEvents"]
        .as_array()
        .expect("traceEvents")
        .iter()
        .filter(|e| e["cat"] == "kernel" && e["ph"] == "X")
        .filter(|e| {
            !e["name"]
                .as_str()
                .unwrap_or("")
                .to_ascii_lowercase()
                .contains("nccl")
        })
        .count() as i64;
    (rank, kernels)
}

fn kernels_in(project: &Project, artifact: &str) -> i64 {
    let w = project.json(&[
        "trace",
        "window",
        artifact,
        "--start-ns",
        "0",
        "--end-ns",
        "9000000000000000000",
        "--kind",
        "kernel",
        "--limit",
        "1",
    ]);
    w["total"].as_i64().unwrap_or_else(|| panic!("total: {w}"))
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_folder_of_rank_files_is_one_run_with_an_artifact_per_rank() {
    let project = Project::new();
    let files = rank_files();
    let folder = corpus().join("kineto/param_dlrm_8rank");
    let imported = project.json(&["import", path_str(&folder)]);
    let artifacts = imported["artifacts"].as_array().expect("artifacts");
    assert_eq!(artifacts.len(), 8, "{imported}");
    let run = imported["run_id"].as_str().expect("run");
    let shown = project.json(&["runs", "show", run]);
    let recorded = shown["artifacts"].as_array().expect("run artifacts");
    assert_eq!(recorded.len(), 8);
    let mut trace_events = 0;
    let mut ranks = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let name = file.file_name().expect("name").to_string_lossy();
        let (rank, kernels) = rank_and_kernels(file);
        ranks.push(rank);
        let a = &artifacts[i];
        assert_eq!(a["original_name"], name.as_ref(), "sorted by file name");
        assert_eq!(a["artifact_id"], artifact_id(file).as_str(), "{name}");
        assert_eq!(a["kind"], "chrome_json");
        assert_eq!(a["metadata"]["distributedInfo"]["rank"], rank, "{name}");
        assert_eq!(recorded[i]["artifact_id"], a["artifact_id"]);
        assert_eq!(recorded[i]["metadata"]["distributedInfo"]["rank"], rank);
        // Each rank is analyzable on its own and holds its own kernels.
        let id = a["artifact_id"].as_str().expect("id");
        assert_eq!(kernels_in(&project, id), kernels, "{name}");
        trace_events += a["rows"]["trace_events"].as_u64().expect("rows");
    }
    assert_eq!(shown["metadata"]["ranks"], serde_json::json!(ranks));
    assert_eq!(shown["metadata"]["artifact_count"], 8);
    assert_eq!(imported["rows"]["trace_events"], trace_events);
    assert_eq!(shown["rows"]["trace_events"], trace_events);
    let listed = project.json(&["runs", "list"]);
    assert_eq!(listed["total"], 1);
    assert_eq!(
        listed["items"][0]["artifact_ids"].as_array().map(Vec::len),
        Some(8)
    );
    // The whole run side by side: its scope spans every rank's kernels.
    let summary = project.json(&["analyze", "gpu-summary", run]);
    assert_eq!(
        summary["scope"]["artifact_ids"].as_array().map(Vec::len),
        Some(8)
    );

    // Several paths: one run, artifacts in the order given (already
    // extracted, so the generations are reused).
    let two = project.json(&["import", path_str(&files[5]), path_str(&files[2])]);
    let ids: Vec<&str> = two["artifacts"]
        .as_array()
        .expect("artifacts")
        .iter()
        .map(|a| a["artifact_id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, [artifact_id(&files[5]), artifact_id(&files[2])]);
    assert_eq!(two["reused_generation"], true);
    assert_eq!(project.json(&["runs", "list"])["total"], 2);
    let validated = project.json(&["validate"]);
    assert_eq!(validated["ok"], true, "{validated}");

    // A person reads the folder import as one run of 8 artifacts, each named.
    let out = project.run(&["import", path_str(&folder)]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("imported 8 artifacts ("), "{text}");
    for file in &files {
        let name = file.file_name().expect("name").to_string_lossy();
        assert!(
            text.contains(&format!("  {name} (chrome_json")),
            "{name}: {text}"
        );
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn one_corrupt_file_fails_the_folder_naming_it_and_records_no_run() {
    let project = Project::new();
    let files = rank_files();
    let folder = tempfile::tempdir().expect("tmp");
    for file in &files[..2] {
        let name = file.file_name().expect("name");
        std::fs::copy(file, folder.path().join(name)).expect("copy");
    }
    // Detected as Chrome JSON, then fails while extracting: it sorts after
    // the first rank file, which is staged by then.
    let corrupt = "worker0b_corrupt.json";
    std::fs::write(
        folder.path().join(corrupt),
        br#"{"traceEvents": [{"ph": "X", "name": "cut", "ts": 1"#,
    )
    .expect("write");
    let err = project.json_err(
        &["import", path_str(folder.path())],
        "ARTIFACT_PARSE_FAILED",
        5,
    );
    assert!(
        err["message"].as_str().unwrap_or("").contains(corrupt),
        "{err}"
    );
    assert_eq!(err["details"]["file"], corrupt);
    assert!(err["run_id"].is_null(), "{err}");
    assert_eq!(project.json(&["runs", "list"])["total"], 0);
    assert_eq!(project.head(), None, "nothing published");
    assert_eq!(project.staging_entries(), 0);
    let validated = project.json(&["validate"]);
    assert_eq!(validated["ok"], true, "{validated}");

    // Without the corrupt file the same folder imports as one run.
    std::fs::remove_file(folder.path().join(corrupt)).expect("rm");
    let imported = project.json(&["import", path_str(folder.path())]);
    assert_eq!(imported["artifacts"].as_array().map(Vec::len), Some(2));
    assert_eq!(project.json(&["runs", "list"])["total"], 1);
}
