//! SDK observations (issue 47; the seed's `analyze_execution` reads "SDK
//! observations"): OTLP/JSON written by the OpenTelemetry Python SDK's own
//! encoders (tests/otlp/write_otlp.py, in the virtualenv `.ci/run`
//! installs) imports by content, in both spellings (protobuf JSON with
//! base64 ids, and the OTLP/JSON spec's hex ids), into the same evidence;
//! `analyze execution` shows its spans and metrics exactly as this test's
//! own walk over the JSON counts them; a concurrent child span is not taken
//! from its parent's self time; and against a run whose database calls
//! were slower, the comparison names those spans and the latency metric.
//! Configuration observations import as a file of their own too.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use flameox_tests::Project;
use serde_json::{Value, json};

/// Per span name: count and summed duration, and every span by name.
#[derive(Default)]
struct Oracle {
    spans: BTreeMap<String, (i64, i64)>,
    by_name: BTreeMap<String, Vec<(i64, i64)>>,
    /// Metric series points: gauge and sum points, and each histogram
    /// point's count, sum, min and max.
    points: usize,
    span_total: usize,
}

fn int(v: &Value) -> i64 {
    match v {
        Value::String(s) => s.parse().expect("integer string"),
        other => other.as_i64().expect("integer"),
    }
}

fn walk(file: &Path) -> Oracle {
    let mut o = Oracle::default();
    for line in std::fs::read_to_string(file).expect("otlp").lines() {
        let request: Value = serde_json::from_str(line).expect("a JSON line");
        for rs in request["resourceSpans"].as_array().into_iter().flatten() {
            for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
                for span in ss["spans"].as_array().into_iter().flatten() {
                    let (start, end) = (
                        int(&span["startTimeUnixNano"]),
                        int(&span["endTimeUnixNano"]),
                    );
                    let name = span["name"].as_str().expect("name").to_owned();
                    let entry = o.spans.entry(name.clone()).or_default();
                    entry.0 += 1;
                    entry.1 += end - start;
                    o.by_name.entry(name).or_default().push((start, end));
                    o.span_total += 1;
                }
            }
        }
        for rm in request["resourceMetrics"].as_array().into_iter().flatten() {
            for sm in rm["scopeMetrics"].as_array().into_iter().flatten() {
                for m in sm["metrics"].as_array().into_iter().flatten() {
                    for kind in ["gauge", "sum"] {
                        o.points += m[kind]["dataPoints"].as_array().map_or(0, Vec::len);
                    }
                    for p in m["histogram"]["dataPoints"]
                        .as_array()
                        .into_iter()
                        .flatten()
                    {
                        o.points += ["count", "sum", "min", "max"]
                            .iter()
                            .filter(|k| !p[**k].is_null())
                            .count();
                    }
                }
            }
        }
    }
    o
}

fn write_otlp(bin: &Path, out: &Path, db_factor: &str) {
    let script = flameox_tests::repo_root().join("tests/otlp/write_otlp.py");
    let status = Command::new(bin.join("python3"))
        .arg(script)
        .arg(out)
        .arg(db_factor)
        .status()
        .expect("python");
    assert!(status.success(), "write_otlp.py failed");
}

fn span<'a>(sdk: &'a Value, name: &str) -> &'a Value {
    sdk["slowest_spans"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["name"] == name))
        .unwrap_or_else(|| panic!("no span {name} in {sdk}"))
}

fn series<'a>(sdk: &'a Value, name: &str) -> &'a Value {
    sdk["metrics"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["series"] == name))
        .unwrap_or_else(|| panic!("no series {name} in {sdk}"))
}

#[test]
fn otel_sdk_spans_and_metrics_import_and_analyze_execution_shows_and_compares_them() {
    let Some(bin) = flameox_tests::profilers_python(&["opentelemetry.sdk"]) else {
        return;
    };
    let project = Project::new();
    let (fast, slow) = (project.path().join("fast"), project.path().join("slow"));
    write_otlp(&bin, &fast, "1");
    write_otlp(&bin, &slow, "4");
    let oracle = walk(&fast.join("hex.jsonl"));
    assert_eq!(oracle.span_total, 9, "the program makes nine spans");

    let mut sections = Vec::new();
    let mut runs = Vec::new();
    for file in ["fast/base64.jsonl", "fast/hex.jsonl"] {
        let imported = project.json(&["import", file]);
        assert_eq!(imported["kind"], "otlp_json", "{imported}");
        assert_eq!(imported["producer"], "opentelemetry-python", "{imported}");
        assert_eq!(
            imported["rows"]["trace_events"], oracle.span_total,
            "{imported}"
        );
        assert_eq!(imported["rows"]["counters"], oracle.points, "{imported}");
        let run = imported["run_id"].as_str().expect("run").to_owned();
        let shown = project.json(&["analyze", "execution", &run, "--limit", "50"]);
        let mut sdk = shown["sdk_observations"].clone();
        assert_eq!(sdk["spans"], oracle.span_total, "{shown}");
        assert_eq!(sdk["span_names"], oracle.spans.len(), "{shown}");
        for (name, (count, total)) in &oracle.spans {
            let row = span(&sdk, name);
            assert_eq!(row["count"], *count, "{name}: {row}");
            assert_eq!(row["total_ns"], *total, "{name}: {row}");
        }
        assert_eq!(span(&sdk, "handle_request")["kind"], "server");
        assert_eq!(span(&sdk, "fetch.prices")["kind"], "client");
        // The root's self time: less its sequential children and the
        // concurrent fetch that started first (on its lane); the other
        // fetch ran beside it and is not taken away.
        let dur = |n: &str| oracle.spans[n].1;
        let fetches = &oracle.by_name;
        let first_fetch = if fetches["fetch.inventory"][0].0 <= fetches["fetch.prices"][0].0 {
            "fetch.inventory"
        } else {
            "fetch.prices"
        };
        let expected_self = dur("handle_request")
            - dur("parse")
            - dur("db.query")
            - dur("charge")
            - dur(first_fetch);
        assert_eq!(
            span(&sdk, "handle_request")["self_ns"],
            expected_self,
            "{sdk}"
        );
        // Metrics: one series per metric and attribute set.
        assert_eq!(
            series(&sdk, "http.latency{route=/checkout}.sum")["last"],
            43.5
        );
        assert_eq!(
            series(&sdk, "http.latency{route=/checkout}.count")["last"],
            2.0
        );
        assert_eq!(
            series(&sdk, "http.latency{route=/checkout}.sum")["unit"],
            "ms"
        );
        assert_eq!(
            series(&sdk, "http.requests{code=200,route=/health}")["last"],
            2.0
        );
        assert_eq!(series(&sdk, "queue.depth{queue=orders}")["last"], 3.0);
        assert_eq!(sdk["metric_series"], oracle.points, "one point per series");
        sdk["artifact_id"] = Value::Null;
        sections.push(sdk);
        runs.push(run);
    }
    assert_eq!(
        sections[0], sections[1],
        "base64 and hex spellings give the same evidence"
    );

    let slower = project.json(&["import", "slow/hex.jsonl"]);
    let slow_run = slower["run_id"].as_str().expect("run");
    let compared = project.json(&["analyze", "execution", slow_run, "--compare", &runs[1]]);
    let diff = &compared["compare"];
    let slow_oracle = walk(&slow.join("hex.jsonl"));
    let changes = diff["span_changes"].as_array().expect("span changes");
    let db = changes
        .iter()
        .find(|c| c["name"] == "db.query")
        .unwrap_or_else(|| panic!("db.query did not move: {diff}"));
    assert_eq!(
        db["delta_total_ns"],
        slow_oracle.spans["db.query"].1 - oracle.spans["db.query"].1
    );
    assert!(
        db["delta_total_ns"].as_i64().unwrap_or(0) > 20_000_000,
        "{db}"
    );
    let top: Vec<&str> = changes
        .iter()
        .take(2)
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert!(
        top.contains(&"db.query") && top.contains(&"handle_request"),
        "the slower calls and their root lead: {top:?}"
    );
    let latency = diff["metric_changes"]
        .as_array()
        .and_then(|m| {
            m.iter()
                .find(|c| c["series"] == "http.latency{route=/checkout}.sum")
        })
        .unwrap_or_else(|| panic!("latency did not change: {diff}"));
    assert_eq!(latency["base_last"], 43.5);
    assert_eq!(latency["target_last"], 41.5 * 4.0 + 2.0);
    let text = project.run(&["analyze", "execution", slow_run, "--compare", &runs[1]]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("SDK spans: 9 spans of 7 names"), "{text}");
    assert!(text.contains("span totals that moved most"), "{text}");
}

#[test]
fn configuration_observations_import_as_a_file_and_a_wrong_schema_is_refused() {
    let project = Project::new();
    let observations = json!({
        "schema": "flameox.configuration_observations/1",
        "observed_at": "2026-12-06T12:00:00Z",
        "host": {"os": "linux", "arch": "x86_64", "logical_cpus": 64,
                 "cpu_model": "Example CPU", "frequency_governor": "performance"},
        "git": {"commit": "0123456789abcdef0123456789abcdef01234567", "dirty": true},
        "environment": {"declared": {"OMP_NUM_THREADS": "8"}, "inherited": ["PATH"]}
    });
    std::fs::write(
        project.path().join("observations.json"),
        observations.to_string(),
    )
    .expect("write");
    let imported = project.json(&["import", "observations.json"]);
    assert_eq!(imported["kind"], "configuration_observations", "{imported}");
    let run = imported["run_id"].as_str().expect("run");
    let shown = project.json(&["analyze", "execution", run]);
    let c = &shown["configuration"];
    assert_eq!(c["host"]["logical_cpus"], 64, "{shown}");
    assert_eq!(c["host"]["frequency_governor"], "performance");
    assert_eq!(c["git"]["dirty"], true);
    assert_eq!(c["environment"]["OMP_NUM_THREADS"], "8");

    let mut wrong = observations.clone();
    wrong["schema"] = json!("flameox.configuration_observations/99");
    std::fs::write(project.path().join("future.json"), wrong.to_string()).expect("write");
    let err = project.json_err(&["import", "future.json"], "ARTIFACT_PARSE_FAILED", 5);
    assert!(
        err["message"]
            .as_str()
            .unwrap_or("")
            .contains("this build reads"),
        "{err}"
    );
}
