//! The seed's `flameox recover [--quarantine QUARANTINE_ID]` (issue 47):
//! `recover` lists what the quarantine holds, with the command that
//! salvages each capture entry; `--quarantine` extracts a capture's
//! quarantined, cut-short profile into the run it came from (the extractor
//! reads up to where the file ends and says so), and moves the entry to
//! trash; damaged artifact bytes and unknown ids are refused, typed.
//! The entry is laid out as `capture_outputs` writes it when a capture is
//! interrupted (`capture-<run>/<profile file>`; its unit test proves that
//! layout), so this runs without a profiler installed.

use flameox_tests::Project;

const SQUARE: &str = r#"
[workloads.square]
argv = ["python3", "-c", "print(sum(i * i for i in range(1000)))"]
timeout_seconds = 60
"#;

/// A viztracer-like trace of `events` calls, cut in the middle of an event.
fn cut_short_trace(events: usize) -> String {
    let mut text = String::from(r#"{"traceEvents":["#);
    for i in 0..events {
        let name = if i % 4 == 0 { "parse" } else { "hot_loop" };
        text += &format!(
            r#"{{"name":"{name}","ph":"X","ts":{},"dur":8,"pid":7,"tid":7,"cat":"FEE"}},"#,
            i * 10
        );
    }
    text + r#"{"name":"hot_loop","ph":"X","ts":"#
}

#[test]
fn recover_lists_the_quarantine_and_salvages_a_captures_partial_profile_into_its_run() {
    let project = Project::new();
    std::fs::write(project.path().join("flameox.toml"), SQUARE).expect("config");
    let run = project.json(&["capture", "run", "square"]);
    let run_id = run["result"]["run_id"].as_str().expect("run").to_owned();
    let quarantine = project.path().join(".flameox/quarantine");
    let entry = quarantine.join(format!("capture-{run_id}"));
    std::fs::create_dir_all(&entry).expect("entry");
    std::fs::write(entry.join("trace.viztracer.json"), cut_short_trace(400)).expect("trace");
    let damaged = quarantine.join(format!("artifact-{}", "ab".repeat(32)));
    std::fs::create_dir_all(&damaged).expect("damaged");
    std::fs::write(damaged.join("payload.json"), b"{}").expect("bytes");

    let listed = project.json(&["recover"]);
    let entries = listed["quarantine"].as_array().expect("quarantine");
    assert_eq!(entries.len(), 2, "{listed}");
    let capture = entries
        .iter()
        .find(|e| e["kind"] == "capture_profile")
        .expect("the capture entry");
    assert_eq!(capture["run_id"], run_id.as_str());
    assert_eq!(capture["salvageable"], true);
    assert_eq!(capture["files"][0], "trace.viztracer.json");
    let text = String::from_utf8_lossy(&project.run(&["recover"]).stdout).into_owned();
    assert!(
        text.contains(&format!("flameox recover --quarantine capture-{run_id}")),
        "{text}"
    );

    let id = format!("capture-{run_id}");
    let salvaged = project.json(&["recover", "--quarantine", &id]);
    assert_eq!(salvaged["run_id"], run_id.as_str(), "{salvaged}");
    let codes: Vec<&str> = salvaged["limitations"]
        .as_array()
        .expect("limitations")
        .iter()
        .filter_map(|l| l["code"].as_str())
        .collect();
    assert!(codes.contains(&"truncated_input"), "{salvaged}");
    assert!(!entry.exists(), "the entry left the quarantine");
    let moved = project
        .path()
        .join(".flameox")
        .join(salvaged["moved_to"].as_str().expect("moved_to"));
    assert!(
        moved.join("trace.viztracer.json").is_file(),
        "kept in trash"
    );

    // The run reads the salvaged profile: its 400 whole calls, none invented.
    let shown = project.json(&["runs", "show", &run_id]);
    let roles: Vec<&str> = shown["artifacts"]
        .as_array()
        .expect("artifacts")
        .iter()
        .filter_map(|a| a["role"].as_str())
        .collect();
    assert!(roles.contains(&"salvaged_profile"), "{shown}");
    let hot = project.json(&["analyze", "hotspots", &run_id]);
    let calls: i64 = hot["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["count"].as_i64().unwrap_or(0))
        .sum();
    assert_eq!(calls, 400, "{hot}");
    assert_eq!(hot["evidence"]["status"], "partial", "{hot}");
    assert_eq!(project.json(&["validate"])["ok"], true);

    // Damaged bytes cannot be salvaged; an unknown id names the ones there are.
    let damaged_id = format!("artifact-{}", "ab".repeat(32));
    let refused = project.run(&["recover", "--quarantine", &damaged_id, "--json"]);
    assert!(!refused.status.success());
    let body: serde_json::Value = serde_json::from_slice(&refused.stdout).expect("json");
    assert_eq!(body["code"], "ARTIFACT_INTEGRITY_FAILED", "{body}");
    assert!(damaged.exists(), "kept for inspection");
    let unknown = project.json_err(
        &["recover", "--quarantine", "capture-nope"],
        "INVALID_ARGUMENTS",
        2,
    );
    assert!(
        unknown["message"]
            .as_str()
            .unwrap_or_default()
            .contains(&damaged_id),
        "{unknown}"
    );
}
