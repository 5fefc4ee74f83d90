//! Fields say what they hold: a trace slice's category is `category`, a
//! sampled frame's library or module is `module` — in hotspots, frame
//! deltas and callers, through the real binary on corpus files.

use flameox_tests::{Project, corpus};
use serde_json::Value;

fn import(project: &Project, rel: &str) -> (String, Value) {
    let path = corpus().join(rel);
    let imported = project.json(&["import", path.to_str().expect("utf-8")]);
    let run = imported["run_id"].as_str().expect("run").to_owned();
    (run, imported)
}

fn rows(answer: &Value) -> &Vec<Value> {
    answer["rows"].as_array().expect("rows")
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn slices_carry_a_category_and_sampled_frames_a_module() {
    let project = Project::new();
    let (kineto, imported) = import(&project, "kineto/hta_alexnet_a100.pt.trace.json.gz");
    let hot = project.json(&["analyze", "hotspots", &kineto, "--limit", "20"]);
    assert!(!rows(&hot).is_empty());
    for r in rows(&hot) {
        assert!(r["category"].is_string(), "{r}");
        assert!(r.get("module").is_none(), "a slice has no module: {r}");
    }
    let categories: Vec<&str> = rows(&hot)
        .iter()
        .filter_map(|r| r["category"].as_str())
        .collect();
    assert!(categories.contains(&"kernel"), "{categories:?}");
    // A window reads events: the same field.
    let span = &imported["time_span_ns"];
    let (a, b) = (span[0].as_i64().expect("a"), span[1].as_i64().expect("b"));
    let windowed = project.json(&[
        "analyze",
        "hotspots",
        &kineto,
        "--start-ns",
        &a.to_string(),
        "--end-ns",
        &(b + 1).to_string(),
    ]);
    for r in rows(&windowed) {
        assert!(
            r["category"].is_string() && r.get("module").is_none(),
            "{r}"
        );
    }
    let frame = rows(&hot)
        .iter()
        .find(|r| r["category"] == "cpu_op")
        .and_then(|r| r["frame"].as_str())
        .expect("a cpu_op frame")
        .to_owned();
    let callers = project.json(&["stacks", "callers", &kineto, &frame]);
    for r in rows(&callers) {
        assert!(r.get("module").is_none(), "{r}");
    }
    let deltas = project.json(&["analyze", "compare-hotspots", &kineto, &kineto]);
    for r in rows(&deltas) {
        assert!(r.get("module").is_none(), "{r}");
    }

    let (pprof, _) = import(&project, "stacks/go1.19_cpu.pprof.pb.gz");
    let hot = project.json(&["analyze", "hotspots", &pprof, "--limit", "20"]);
    assert!(rows(&hot).iter().any(|r| r["module"].is_string()), "{hot}");
    for r in rows(&hot) {
        assert!(
            r.get("category").is_none(),
            "a sampled frame has no category: {r}"
        );
    }
}

/// Kineto's own recording span (`PyTorch Profiler (0)`, category `Trace`)
/// covers the whole trace and is no work: it stays a `trace_events` row of
/// kind `profiler_span` but is no hotspot (it was the top row, half of the
/// summed self time of the AlexNet trace) and its track is no thread.
#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn the_profilers_own_span_is_no_hotspot() {
    let project = Project::new();
    let (run, _) = import(&project, "kineto/hta_alexnet_a100.pt.trace.json.gz");
    let hot = project.json(&["analyze", "hotspots", &run, "--limit", "1000"]);
    assert!(!rows(&hot).is_empty());
    assert!(
        rows(&hot).iter().all(|r| !r["function"]
            .as_str()
            .unwrap_or("")
            .starts_with("PyTorch Profiler")),
        "{hot}"
    );
    let found = project.json(&["stacks", "find", &run, "PyTorch Profiler"]);
    assert_eq!(found["total"].as_u64(), Some(0), "{found}");
    // Nor is its track a busy thread (it was listed busy 90 % of the span;
    // Kineto's instant-only marker track may stay, idle).
    let threads = project.json(&["threads", &run, "--limit", "1000"]);
    assert!(!rows(&threads).is_empty(), "{threads}");
    assert!(
        rows(&threads).iter().all(|r| {
            !r.to_string().contains("PyTorch Profiler") || r["busy_ns"].as_i64() == Some(0)
        }),
        "{threads}"
    );
    assert!(
        !rows(&threads)
            .iter()
            .any(|r| r["thread_name"] == "PyTorch Profiler"),
        "{threads}"
    );
}
