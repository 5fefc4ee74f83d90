//! The sequence sections of `analyze gpu-diagnosis` against walks of the
//! Kineto JSON: iterations found without markers equal the `ProfilerStep`
//! markers the trace also has (count, and kernels per step on the busiest
//! stream), and a fusion candidate's occurrences equal an independent
//! count of that sequence among short back-to-back kernels.

use flameox_tests::{Project, corpus_json, micros_to_ns};
use serde_json::Value;

/// Kernels per stream, in time order: (name, ts ns, end ns).
fn kernels_by_stream(trace: &Value) -> std::collections::BTreeMap<i64, Vec<(String, i64, i64)>> {
    let mut out: std::collections::BTreeMap<i64, Vec<(String, i64, i64)>> = Default::default();
    for e in trace["traceEvents"].as_array().expect("events") {
        let cat = e["cat"].as_str().unwrap_or("");
        if cat.eq_ignore_ascii_case("kernel") && e["ph"] == "X" {
            let ts = micros_to_ns(&e["ts"]);
            let stream = e["args"]["stream"].as_i64().unwrap_or(-1);
            out.entry(stream).or_default().push((
                e["name"].as_str().unwrap_or("").to_owned(),
                ts,
                ts + micros_to_ns(&e["dur"]),
            ));
        }
    }
    for list in out.values_mut() {
        list.sort_by_key(|k| (k.1, k.2));
    }
    out
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn iterations_without_markers_equal_the_profiler_steps() {
    let project = Project::new();
    for file in [
        "kineto/hta_v100_nccl_rank1of2_216k_events.json.gz",
        "kineto/tbplugin_resnet50_v100_worker0.pt.trace.json.gz",
    ] {
        let trace = corpus_json(file);
        let steps = trace["traceEvents"]
            .as_array()
            .expect("events")
            .iter()
            .filter(|e| {
                e["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("ProfilerStep#"))
                    && !e["cat"].as_str().unwrap_or("").starts_with("gpu")
            })
            .count() as i64;
        let streams = kernels_by_stream(&trace);
        let (busiest, kernels) = streams
            .iter()
            .max_by_key(|(_, k)| k.len())
            .expect("kernels");
        let run = project.import_corpus(file);
        let a = project.json(&["analyze", "gpu-diagnosis", &run, "--section", "iterations"]);
        let found = &a["iterations"]["streams"][0];
        assert_eq!(found["stream"].as_i64(), Some(*busiest), "{file}: {found}");
        assert_eq!(found["iterations"].as_i64(), Some(steps), "{file}: {found}");
        assert_eq!(
            found["period_kernels"].as_i64(),
            Some(kernels.len() as i64 / steps),
            "{file}: {found}"
        );
        assert!(found["match_ratio"].as_f64().expect("ratio") >= 0.9);
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_fusion_candidate_occurs_as_often_as_an_independent_count_says() {
    let file = "kineto/tracelens_b200_vllm_eager_rank0of8.json.gz";
    let project = Project::new();
    let run = project.import_corpus(file);
    let a = project.json(&[
        "analyze",
        "gpu-diagnosis",
        &run,
        "--section",
        "fusion",
        "--limit",
        "1",
    ]);
    let f = &a["fusion"][0];
    let top = &f["candidates"][0];
    let wanted: Vec<String> = top["kernels"]
        .as_array()
        .expect("kernels")
        .iter()
        .map(|k| k.as_str().expect("name").to_owned())
        .collect();
    assert!(wanted.len() >= 3, "{top}");
    let short = f["short_kernel_ns"].as_i64().expect("short");
    let gap = f["max_gap_ns"].as_i64().expect("gap");
    // Runs of short kernels back to back; the candidate counted without
    // overlap inside each run (names compared in their readable form).
    let readable = |n: &str| flameox_recipes::kernel_family::readable_name(n);
    let mut count = 0;
    for kernels in kernels_by_stream(&corpus_json(file)).values() {
        let mut runs: Vec<Vec<String>> = Vec::new();
        let mut last_end: Option<i64> = None;
        for (name, ts, end) in kernels {
            let is_short = end - ts < short;
            let joins = last_end.is_some_and(|e| ts - e < gap);
            match (is_short, runs.last_mut()) {
                (true, Some(run)) if joins => run.push(readable(name)),
                (true, _) => runs.push(vec![readable(name)]),
                (false, _) => runs.push(Vec::new()),
            }
            last_end = Some(*end);
        }
        for run in runs {
            let mut i = 0;
            while i + wanted.len() <= run.len() {
                if run[i..i + wanted.len()] == wanted[..] {
                    count += 1;
                    i += wanted.len();
                } else {
                    i += 1;
                }
            }
        }
    }
    assert_eq!(top["occurrences"].as_i64(), Some(count), "{top}");
    assert!(count >= 10);
}
