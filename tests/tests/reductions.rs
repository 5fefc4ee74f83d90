//! Reductions (issue 47; the seed's `plan_reduction`, `execute_reduction`,
//! `get_reduction`): a generated 64-rank job is planned (64 inputs, their
//! rows and bytes, a digest), executed detached, polled and read. The
//! reduced run's stack profile equals the sum of the 64 per-rank ones —
//! every frame's self and inclusive time and count, by frame identity —
//! each rank read on its own as this test's oracle. The same key
//! reconnects; a stale digest starts nothing.

use std::collections::BTreeMap;

use flameox_tests::Project;
use serde_json::Value;

/// frame key → (self, inclusive, count).
type Totals = BTreeMap<String, (i64, i64, i64)>;

fn hotspots(project: &Project, target: &str) -> Totals {
    let page = project.json(&["analyze", "hotspots", target, "--limit", "1000"]);
    assert_eq!(
        page["truncated"], false,
        "{target}: one page holds every frame"
    );
    page["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            let int = |k: &str| r[k].as_i64().expect("integer");
            (
                r["frame"].as_str().expect("frame").to_owned(),
                (int("self_value"), int("inclusive_value"), int("count")),
            )
        })
        .collect()
}

fn poll(project: &Project, operation: &str) -> Value {
    for _ in 0..12 {
        let status = project.json(&["reduction", "status", operation, "--wait-seconds", "20"]);
        if status["status"] != "queued" && status["status"] != "running" {
            return status;
        }
    }
    panic!("reduction {operation} did not end within 4 minutes");
}

#[test]
fn a_64_rank_job_reduces_to_one_profile_equal_to_the_sum_of_its_ranks() {
    let project = Project::new();
    let job = project.path().join("job");
    std::fs::create_dir_all(&job).expect("job folder");
    flameox_tests::write_kineto_job(&job, 64, 600, 47);
    let imported = project.json(&["import", "job"]);
    let run = imported["run_id"].as_str().expect("run").to_owned();
    let listed = project.json(&["artifacts", "list", "--run", &run, "--limit", "100"]);
    let ranks: Vec<String> = listed["items"]
        .as_array()
        .expect("artifacts")
        .iter()
        .map(|a| a["artifact_id"].as_str().expect("id").to_owned())
        .collect();
    assert_eq!(ranks.len(), 64);

    let plan = project.json(&["reduction", "plan", &run]);
    assert_eq!(plan["kind"], "merged_stacks", "{plan}");
    assert_eq!(plan["inputs_total"], 64, "{plan}");
    assert_eq!(
        plan["inputs"].as_array().map(Vec::len),
        Some(8),
        "inputs listed"
    );
    assert!(plan["rows_to_read"].as_u64().unwrap_or(0) > 64, "{plan}");
    assert!(plan["bytes_to_read"].as_u64().unwrap_or(0) > 0, "{plan}");
    assert!(
        plan["estimated_seconds"].as_f64().unwrap_or(0.0) > 0.0,
        "{plan}"
    );
    let digest = plan["plan_digest"].as_str().expect("digest").to_owned();
    assert_eq!(plan["next"]["arguments"]["plan_digest"], digest.as_str());
    assert_eq!(plan["next"]["arguments"]["target"], run.as_str());

    // A digest of other inputs starts nothing.
    let stale = "0".repeat(64);
    let refused = project.json_err(
        &[
            "reduction",
            "execute",
            &run,
            "--plan-digest",
            &stale,
            "--idempotency-key",
            "stale-key-1",
        ],
        "INVALID_CAPTURE_PLAN",
        2,
    );
    assert_eq!(
        refused["details"]["plan_digest"],
        digest.as_str(),
        "{refused}"
    );

    let args = [
        "reduction",
        "execute",
        &run,
        "--plan-digest",
        &digest,
        "--idempotency-key",
        "reduce-64",
    ];
    let started = project.json(&args);
    let operation = started["operation_id"]
        .as_str()
        .expect("operation")
        .to_owned();
    assert_eq!(started["kind"], "reduction", "{started}");
    let again = project.json(&args);
    assert_eq!(again["operation_id"], operation.as_str());
    assert_eq!(again["reconnected"], true, "{again}");

    let done = poll(&project, &operation);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["percent"], 100.0, "{done}");
    let reduced = done["run_id"].as_str().expect("reduced run").to_owned();
    assert_ne!(reduced, run);
    assert_eq!(done["receipt"]["inputs_total"], 64, "{done}");
    assert_eq!(done["next"]["arguments"]["target"], reduced.as_str());

    // The oracle: each rank read alone, summed.
    let mut summed = Totals::new();
    for rank in &ranks {
        for (frame, (s, i, c)) in hotspots(&project, rank) {
            let slot = summed.entry(frame).or_default();
            slot.0 += s;
            slot.1 += i;
            slot.2 += c;
        }
    }
    let merged = hotspots(&project, &reduced);
    assert!(!merged.is_empty());
    assert_eq!(
        merged, summed,
        "the reduced profile is the sum of the 64 ranks"
    );

    // A pipeline with the reduction in its chain reads the reduced run and
    // agrees with the raw one everywhere; given the raw run it says to reduce.
    project.json(&["pipelines", "register", "ranks_raw"]);
    project.json(&[
        "pipelines",
        "register",
        "ranks_merged",
        "--reduction",
        "merged_stacks",
    ]);
    let same = project.json(&[
        "pipelines",
        "compare",
        &reduced,
        &run,
        "--pipeline",
        "ranks_merged",
        "--base-pipeline",
        "ranks_raw",
        "--tolerance-pp",
        "0.000001",
    ]);
    assert_eq!(same["differing_total"], 0, "{same}");
    assert_eq!(same["matched_frames"], summed.len(), "{same}");
    let raw = project.json_err(
        &[
            "pipelines",
            "compare",
            &run,
            &run,
            "--pipeline",
            "ranks_merged",
            "--base-pipeline",
            "ranks_raw",
        ],
        "INVALID_ARGUMENTS",
        2,
    );
    assert_eq!(raw["details"]["next"]["tool"], "plan_reduction", "{raw}");

    // The reduced run names where it came from.
    let shown = project.json(&["runs", "show", &reduced]);
    let text = shown.to_string();
    assert!(text.contains(&digest), "provenance names the plan: {text}");
    assert!(text.contains("merged_stacks"), "{text}");
}
