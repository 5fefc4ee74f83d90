//! The CLI contract: `--json` documents with the documented fields, exit
//! codes per the table, typed refusals, and drill-down answers that agree
//! with each other (callers ↔ callees, folded stacks ↔ hotspot totals).

use flameox_tests::{Project, corpus};
use serde_json::Value;

fn path(rel: &str) -> String {
    corpus().join(rel).to_string_lossy().into_owned()
}

fn has_fields(value: &Value, fields: &[&str]) {
    for f in fields {
        assert!(value.get(f).is_some(), "missing field {f} in {value}");
    }
}

#[test]
fn without_a_workspace_every_command_says_how_to_create_one() {
    let bare = Project::bare();
    for args in [
        vec!["status"],
        vec!["runs", "list"],
        vec!["analyze", "hotspots", "x"],
        vec!["validate"],
    ] {
        let err = bare.json_err(&args, "WORKSPACE_NOT_FOUND", 2);
        assert_eq!(err["recovery"]["next_tool"], "initialize_workspace");
        assert!(
            err["remediation"][0]
                .as_str()
                .unwrap()
                .contains("flameox init")
        );
    }
    // init is idempotent and only adds to .git/info/exclude.
    std::fs::create_dir_all(bare.path().join(".git/info")).unwrap();
    let first = bare.json(&["init"]);
    let second = bare.json(&["init"]);
    assert_eq!(first["created"], true);
    assert_eq!(second["created"], false);
    assert_eq!(first["workspace_id"], second["workspace_id"]);
    let exclude = std::fs::read_to_string(bare.path().join(".git/info/exclude")).unwrap();
    assert_eq!(exclude.matches(".flameox").count(), 1);
    let config = bare.json(&["config", "show"]);
    assert_eq!(config["limits"]["max_rows"], 1000);
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn json_results_carry_the_documented_fields_and_errors_map_to_exit_codes() {
    let project = Project::new();
    let imported = project.json(&["import", &path("kineto/hta_alexnet_a100.pt.trace.json.gz")]);
    has_fields(
        &imported,
        &[
            "run_id",
            "artifact_id",
            "kind",
            "producer",
            "generation_id",
            "commit_id",
            "reused_generation",
            "rows",
            "time_span_ns",
            "limitations",
            "coverage",
        ],
    );
    assert_eq!(imported["kind"], "chrome_json");
    assert_eq!(imported["producer"], "torch.profiler");
    let run = imported["run_id"].as_str().unwrap();
    let artifact = imported["artifact_id"].as_str().unwrap();

    let hot = project.json(&["analyze", "hotspots", run, "--limit", "5"]);
    has_fields(
        &hot,
        &[
            "rows",
            "total",
            "returned",
            "truncated",
            "next_cursor",
            "evidence",
            "metric",
            "unit",
            "commit_id",
            "total_self",
        ],
    );
    assert_eq!(hot["evidence"]["status"], "available");
    has_fields(
        &hot["rows"][0],
        &[
            "frame",
            "function",
            "self_value",
            "inclusive_value",
            "self_pct",
            "inclusive_pct",
            "count",
        ],
    );
    let by_artifact = project.json(&["analyze", "hotspots", artifact, "--limit", "5"]);
    assert_eq!(hot["rows"], by_artifact["rows"]);

    let window = project.json(&[
        "trace",
        "window",
        artifact,
        "--relative",
        "--start-ns",
        "0",
        "--end-ns",
        "1000000000000",
        "--limit",
        "5",
    ]);
    // Seed: "flameox trace window <artifact-id> --start NS --end NS".
    let seed_spelling = project.json(&[
        "trace",
        "window",
        artifact,
        "--relative",
        "--start",
        "0",
        "--end",
        "1000000000000",
        "--limit",
        "5",
    ]);
    assert_eq!(seed_spelling["events"], window["events"]);
    has_fields(
        &window,
        &[
            "events",
            "total",
            "returned",
            "truncated",
            "next_cursor",
            "evidence",
            "trace_span_ns",
        ],
    );
    assert_eq!(window["returned"], 5);
    has_fields(
        &window["events"][0],
        &[
            "event_id", "ts_ns", "dur_ns", "self_ns", "depth", "name", "kind", "track_id",
        ],
    );
    // A window outside the trace is an empty page with a hint that checks.
    let empty = project.json(&[
        "trace",
        "window",
        artifact,
        "--start-ns",
        "0",
        "--end-ns",
        "1000",
        "--limit",
        "5",
    ]);
    assert_eq!(empty["evidence"]["status"], "empty");
    assert_eq!(empty["evidence"]["reason"], "window_outside_trace_span");
    assert_eq!(empty["evidence"]["next_tool"], "get_trace_window");

    has_fields(
        &project.json(&["runs", "show", run]),
        &[
            "run_id",
            "status",
            "artifacts",
            "generation_ids",
            "commit_id",
            "limitations",
            "limitation_details",
        ],
    );
    // Seed, get_artifact: "identity, kind, size, sensitivity, integrity,
    // supported analyses, and paginated registrations. An optional run_id
    // selects one contextual registration."
    let shown = project.json(&["artifacts", "show", artifact]);
    has_fields(
        &shown,
        &[
            "artifact_id",
            "bytes",
            "kind",
            "sensitivity",
            "integrity",
            "supported_analyses",
            "registrations",
            "extracted",
        ],
    );
    assert_eq!(shown["sensitivity"], "profile", "{shown}");
    assert_eq!(shown["integrity"]["status"], "size_matches", "{shown}");
    assert_eq!(shown["registrations"]["items"][0]["run_id"], run, "{shown}");
    let analyses = shown["supported_analyses"].to_string();
    assert!(analyses.contains("analyze_hotspots"), "{shown}");
    let in_context = project.json(&["artifacts", "show", artifact, "--run-id", run]);
    assert_eq!(in_context["registration"]["run_id"], run, "{in_context}");
    has_fields(
        &project.json(&["status"]),
        &[
            "workspace_id",
            "head_commit",
            "runs",
            "artifacts",
            "generations",
            "evidence_rows",
        ],
    );

    // Exit codes and typed errors.
    for limit in ["0", "1001"] {
        let err = project.json_err(
            &["analyze", "hotspots", run, "--limit", limit],
            "INVALID_ARGUMENTS",
            2,
        );
        assert_eq!(err["details"]["fields"][0]["field"], "limit");
    }
    let err = project.json_err(
        &[
            "analyze",
            "hotspots",
            "01a22e62-8007-7423-b285-000000000000",
        ],
        "RUN_NOT_FOUND",
        1,
    );
    assert_eq!(err["details"]["closest"][0].as_str(), Some(run));
    project.json_err(
        &["analyze", "hotspots", "sha256:00"],
        "INVALID_ARGUMENTS",
        2,
    );
    let err = project.json_err(
        &["analyze", "hotspots", run, "--metric", "trace.wall"],
        "METRIC_NOT_FOUND",
        1,
    );
    assert!(
        err["details"]["valid"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m == "trace.wall_ns"),
        "{err}"
    );
    project.json_err(
        &["import", "/definitely/not/here.json"],
        "INVALID_ARGUMENTS",
        2,
    );
    let link = project.path().join("link.json");
    std::os::unix::fs::symlink(path("kineto/hta_alexnet_a100.pt.trace.json.gz"), &link).unwrap();
    project.json_err(&["import", link.to_str().unwrap()], "INVALID_ARGUMENTS", 2);
    let err = project.json_err(
        &["import", &path("nsys/apax_rtx4070_nsys2026.1.nsys-rep")],
        "CAPABILITY_UNAVAILABLE",
        3,
    );
    assert!(
        err["remediation"][0]
            .as_str()
            .unwrap()
            .contains("nsys export --type sqlite")
    );
    project.json_err(
        &[
            "import",
            &path("kineto/hta_alexnet_a100.pt.trace.json.gz"),
            "--kind",
            "nonsense",
        ],
        "INVALID_ARGUMENTS",
        2,
    );
    let err = project.json_err(
        &["stacks", "callers", run, "no-such-frame"],
        "FRAME_NOT_FOUND",
        1,
    );
    assert!(
        err["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("frame 'no-such-frame' not found")),
        "{err}"
    );
    assert!(
        err["details"]["valid"]
            .as_array()
            .is_some_and(|v| !v.is_empty())
    );

    // Text output: aligned table and a footer with the next command.
    let out = project.run(&["analyze", "hotspots", run, "--limit", "3"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("showing 3 of"), "{text}");
    assert!(
        text.contains("next page: flameox analyze hotspots"),
        "{text}"
    );
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn drilldown_answers_agree_with_each_other() {
    let project = Project::new();
    let imported = project.json(&["import", &path("kineto/tracelens_h100_bert_small.json.gz")]);
    let run = imported["run_id"].as_str().unwrap();
    let hot = project.json(&["analyze", "hotspots", run, "--limit", "1000"]);
    // A frame with children: inclusive > self.
    let parent = hot["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["inclusive_value"].as_i64().unwrap() > r["self_value"].as_i64().unwrap())
        .expect("a frame with callees");
    let parent_key = parent["frame"].as_str().unwrap();
    let callees = project.json(&["stacks", "callees", run, parent_key, "--limit", "1000"]);
    let child = &callees["rows"][0];
    assert!(child["weight"].as_i64().unwrap() > 0);
    let callers = project.json(&[
        "stacks",
        "callers",
        run,
        child["frame"].as_str().unwrap(),
        "--limit",
        "1000",
    ]);
    let back = callers["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["frame"] == parent_key)
        .expect("callee lists its caller");
    assert_eq!(back["weight"], child["weight"]);
    // Callee weights never exceed the parent's inclusive time minus its self time.
    let sum: i64 = callees["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["weight"].as_i64().unwrap())
        .sum();
    assert!(sum <= parent["inclusive_value"].as_i64().unwrap());

    let examples = project.json(&["stacks", "examples", run, parent_key, "--limit", "5"]);
    let function = parent["function"].as_str().unwrap();
    for stack in examples["stacks"].as_array().unwrap() {
        assert!(
            stack["frames"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f == function)
        );
    }
    assert!(examples["returned"].as_u64().unwrap() >= 1);
    // Stack weights are in the metric hotspots chose; an unknown one is refused.
    assert_eq!(examples["metric"], "trace.wall_ns");
    let err = project.json_err(
        &[
            "stacks",
            "examples",
            run,
            parent_key,
            "--metric",
            "cpu.sample",
        ],
        "METRIC_NOT_FOUND",
        1,
    );
    assert!(
        err["details"]["valid"]
            .as_array()
            .is_some_and(|v| !v.is_empty()),
        "{err}"
    );

    // Folded stacks add up to the hotspot total.
    let folded = project.path().join("out.folded");
    project.json(&[
        "analyze",
        "hotspots",
        run,
        "--folded",
        folded.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&folded).unwrap();
    let total: i64 = text
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<i64>().unwrap())
        .sum();
    assert_eq!(total, hot["total_self"].as_i64().unwrap());

    // Window-restricted hotspots only count slices that start inside the window.
    let span = &imported["time_span_ns"];
    let (start, end) = (span[0].as_i64().unwrap(), span[1].as_i64().unwrap() + 1);
    let whole = project.json(&[
        "analyze",
        "hotspots",
        run,
        "--start-ns",
        &start.to_string(),
        "--end-ns",
        &end.to_string(),
        "--limit",
        "1000",
    ]);
    assert_eq!(whole["total_self"], hot["total_self"]);
    let half = project.json(&[
        "analyze",
        "hotspots",
        run,
        "--start-ns",
        &start.to_string(),
        "--end-ns",
        &(start + (end - start) / 2).to_string(),
        "--limit",
        "1000",
    ]);
    assert!(half["total_self"].as_i64().unwrap() < whole["total_self"].as_i64().unwrap());
}

#[test]
fn completions_man_page_and_version_come_from_the_same_command_tree() {
    let project = Project::bare();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = project.run(&["completions", shell]);
        assert!(out.status.success(), "{shell}");
        let text = String::from_utf8_lossy(&out.stdout);
        // Catalogued operations and terminal-only commands alike.
        for word in [
            "summarize",
            "execution",
            "failures",
            "gc",
            "repair",
            "rebuild",
        ] {
            assert!(text.contains(word), "{shell} completions lack {word}");
        }
    }
    let bad = project.run(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));
    let man = project.run(&["man"]);
    let page = String::from_utf8_lossy(&man.stdout);
    assert!(page.contains(".TH flameox 1"), "{page}");
    assert!(page.contains("evidence") && page.contains("investigations"));
    let version = project.run(&["--version"]);
    let text = String::from_utf8_lossy(&version.stdout);
    assert!(
        text.starts_with(&format!("flameox {} (commit ", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    assert!(text.contains(" build)"), "{text}");
}
