//! The sequence sections of `analyze gpu-diagnosis` against walks of the
//! Kineto JSON: iterations found without markers equal the `ProfilerStep`
//! markers the trace also has (count, and device operations per step on
//! the busiest stream), an MPI code's copy → kernel → copy iterations equal
//! SQL over its Nsight export, and a fusion candidate's occurrences equal
//! an independent count of that sequence among short back-to-back kernels.

use flameox_tests::{Project, corpus_json, micros_to_ns};
use serde_json::Value;

/// Device rows of the categories `cats` per stream, in time order: (name,
/// ts ns, end ns).
fn by_stream(
    trace: &Value,
    cats: &[&str],
) -> std::collections::BTreeMap<i64, Vec<(String, i64, i64)>> {
    let mut out: std::collections::BTreeMap<i64, Vec<(String, i64, i64)>> = Default::default();
    for e in trace["traceEvents"].as_array().expect("events") {
        let cat = e["cat"].as_str().unwrap_or("");
        if cats.iter().any(|c| cat.eq_ignore_ascii_case(c)) && e["ph"] == "X" {
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
        let streams = by_stream(
            &trace,
            &["kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"],
        );
        let (busiest, operations) = streams
            .iter()
            .max_by_key(|(_, k)| k.len())
            .expect("device operations");
        let run = project.import_corpus(file);
        let a = project.json(&["analyze", "gpu-diagnosis", &run, "--section", "iterations"]);
        let found = &a["iterations"]["streams"][0];
        assert_eq!(found["stream"].as_i64(), Some(*busiest), "{file}: {found}");
        assert_eq!(found["iterations"].as_i64(), Some(steps), "{file}: {found}");
        assert_eq!(
            found["period_operations"].as_i64(),
            Some(operations.len() as i64 / steps),
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
    for kernels in by_stream(&corpus_json(file), &["kernel"]).values() {
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

/// The saxpy MPI program (no markers on its device): five iterations of
/// two host-to-device copies, the kernel and a copy back, on one stream,
/// as its five `saxpy` NVTX ranges say; each iteration from its first
/// operation's start to the next one's, as SQL over the export gives.
#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn an_mpi_codes_copy_kernel_copy_iterations_match_sql_over_its_export() {
    let path = "nsys/pipit_saxpy_mpi_a100_nsys2022.2.sqlite";
    let c = rusqlite::Connection::open(flameox_tests::corpus().join(path)).expect("export");
    let marked: i64 = c
        .query_row(
            "SELECT count(*) FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId \
             WHERE COALESCE(e.text, s.value) = 'saxpy'",
            [],
            |r| r.get(0),
        )
        .expect("saxpy ranges");
    let mut q = c
        .prepare(
            "SELECT start FROM (SELECT start, streamId FROM CUPTI_ACTIVITY_KIND_KERNEL \
             UNION ALL SELECT start, streamId FROM CUPTI_ACTIVITY_KIND_MEMCPY \
             UNION ALL SELECT start, streamId FROM CUPTI_ACTIVITY_KIND_MEMSET) ORDER BY start",
        )
        .expect("query");
    let starts: Vec<i64> = q
        .query_map([], |r| r.get(0))
        .expect("rows")
        .map(|r| r.expect("row"))
        .collect();
    let per = starts.len() as i64 / marked;
    assert_eq!(
        per * marked,
        starts.len() as i64,
        "{} operations",
        starts.len()
    );
    let project = Project::new();
    let run = project.import_corpus(path);
    let a = project.json(&["analyze", "gpu-diagnosis", &run, "--section", "iterations"]);
    let found = &a["iterations"]["streams"][0];
    assert_eq!(found["iterations"].as_i64(), Some(marked), "{found}");
    assert_eq!(found["period_operations"].as_i64(), Some(per), "{found}");
    assert_eq!(found["before_first"], 0, "{found}");
    // The median of the four iterations followed by another.
    let mut spans: Vec<i64> = (1..marked as usize)
        .map(|i| starts[i * per as usize] - starts[(i - 1) * per as usize])
        .collect();
    spans.sort_unstable();
    let slowest = found["slowest"][0]["duration_ns"]
        .as_i64()
        .expect("slowest");
    assert!(
        spans.contains(&slowest) || slowest > *spans.last().expect("spans"),
        "{found}"
    );
    assert!(found["max_ns"].as_i64() >= spans.last().copied(), "{found}");
}
