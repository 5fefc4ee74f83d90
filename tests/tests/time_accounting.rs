//! The time-accounting model's invariants on every trace of the shared
//! corpus that imports (`docs/recipes.md`, "Time accounting"): per thread,
//! its hotspots' self total ≤ its busy time ≤ the trace's span, and its
//! waiting time ≤ its busy time; per device, busy + idle = the named span
//! and the idle parts (before the first activity, starved, stalled,
//! unlinked, after the last) sum to idle, a stream's busy time ≤ its
//! device's; and no percentage in the summary, thread list or GPU answer
//! is above 100 or lacks the name of its denominator (`…_pct_of_…`).

use std::path::PathBuf;

use flameox_tests::{Project, corpus, idle_parts_ns};
use serde_json::Value;

/// Every file of the corpus's trace folders.
fn corpus_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in [
        "chrome_json",
        "kineto",
        "kineto/param_dlrm_8rank",
        "perfetto",
        "nsys",
        "stacks",
        "linux",
        "misc",
    ] {
        let Ok(entries) = std::fs::read_dir(corpus().join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_file() {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Every key holding a percentage names its denominator and stays in
/// 0..=100; every share stays in 0..=1.
fn check_percentages(v: &Value, path: &str, what: &str) {
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                let here = format!("{path}.{k}");
                if k.contains("pct") {
                    assert!(
                        k.contains("_pct_of_"),
                        "{what}: {here} does not name its denominator"
                    );
                    if let Some(p) = x.as_f64() {
                        assert!((0.0..=100.0).contains(&p), "{what}: {here} = {p}");
                    }
                }
                if (k == "share" || k.ends_with("_share"))
                    && let Some(s) = x.as_f64()
                {
                    assert!((0.0..=1.0).contains(&s), "{what}: {here} = {s}");
                }
                check_percentages(x, &here, what);
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                check_percentages(x, &format!("{path}[{i}]"), what);
            }
        }
        _ => {}
    }
}

/// Threads: busy ≤ span, waiting ≤ busy, and for the busiest threads with
/// slices, the hotspots' self total ≤ busy.
fn check_threads(project: &Project, run: &str, what: &str) {
    let out = project.json(&["threads", run, "--limit", "1000"]);
    check_percentages(&out, "threads", what);
    let span = out["span_ns"]
        .as_array()
        .and_then(|s| Some(s.get(1)?.as_i64()? - s.first()?.as_i64()?))
        .unwrap_or(0);
    let rows = out["rows"].as_array().expect("rows");
    let mut checked = 0;
    for r in rows {
        let Some(busy) = r["busy_ns"].as_i64() else {
            // Unknown (samples only): never 0 in disguise.
            assert!(r["busy_pct_of_trace"].is_null(), "{what}: {r}");
            continue;
        };
        assert!(
            (0..=span).contains(&busy),
            "{what}: busy {busy} outside the span {span}: {r}"
        );
        let waiting = r["waiting_ns"].as_i64().unwrap_or(0);
        assert!(waiting <= busy, "{what}: waiting > busy: {r}");
        if r["kind"] != "thread" || busy == 0 || checked >= 2 {
            continue;
        }
        let (Some(tid), Some(pid)) = (r["tid"].as_i64(), r["pid"].as_i64()) else {
            continue;
        };
        let out = project.run(&[
            "analyze",
            "hotspots",
            run,
            "--thread",
            &tid.to_string(),
            "--process",
            &pid.to_string(),
            "--metric",
            "trace.wall_ns",
            "--limit",
            "1",
            "--json",
        ]);
        if !out.status.success() {
            continue;
        }
        let hot: Value = serde_json::from_slice(&out.stdout).expect("hotspots JSON");
        let total = hot["total_self"].as_i64().unwrap_or(0);
        assert!(
            total <= busy,
            "{what}: thread {tid}: hotspots' self total {total} > busy {busy}"
        );
        checked += 1;
    }
}

/// Devices: busy + idle = span, idle parts = idle, streams ≤ device.
fn check_devices(project: &Project, run: &str, what: &str) {
    let out = project.json(&["analyze", "gpu-gaps", run, "--limit", "1"]);
    check_percentages(&out, "gpu-gaps", what);
    for d in out["devices"].as_array().into_iter().flatten() {
        let span = d["span"]["dur_ns"].as_i64().expect("span");
        let busy = d["busy_ns"].as_i64().expect("busy");
        let idle = d["idle_ns"].as_i64().expect("idle");
        assert!(d["span"]["name"].is_string(), "{what}: unnamed span {d}");
        assert!((0..=span).contains(&busy), "{what}: {d}");
        assert_eq!(busy + idle, span, "{what}: {d}");
        let parts = idle_parts_ns(&d["idle"]);
        assert_eq!(parts, idle, "{what}: idle parts {d}");
        for s in d["streams"].as_array().into_iter().flatten() {
            assert!(s["busy_ns"].as_i64() <= Some(busy), "{what}: {s} in {d}");
        }
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn every_corpus_trace_keeps_the_accounting_invariants() {
    let files = corpus_files();
    assert!(
        !files.is_empty(),
        "no traces in the corpus at {}",
        corpus().display()
    );
    let project = Project::new();
    let (mut checked, mut refused) = (Vec::new(), Vec::new());
    for path in files {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let out = project.run(&["import", path.to_str().expect("utf-8"), "--json"]);
        if !out.status.success() {
            refused.push(name);
            continue;
        }
        let imported: Value = serde_json::from_slice(&out.stdout).expect("import JSON");
        let run = imported["run_id"].as_str().expect("run id").to_owned();
        check_threads(&project, &run, &name);
        check_devices(&project, &run, &name);
        let summary = project.json(&["analyze", "summary", &run]);
        check_percentages(&summary, "summary", &name);
        assert!(
            summary["headline"].as_str().is_some_and(|h| !h.is_empty()),
            "{name}: no headline"
        );
        checked.push(name);
    }
    eprintln!(
        "checked {} traces; refused at import (formats not read yet): {refused:?}",
        checked.len()
    );
    assert!(checked.len() >= 30, "only {checked:?} imported");
}
