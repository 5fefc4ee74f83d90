//! `analyze accelerator-launches` on traces built to hit the edges:
//! overlapping kernels on one stream (no negative gap), a zero-duration
//! kernel, a kernel with no correlated launch, a CUDA graph launch that
//! ran two kernels, and a trace with no device tracks at all (`partial`,
//! with the call to make next). Every expected number is derived in the
//! comments from the events written here.

use flameox_tests::Project;
use serde_json::{Value, json};

fn x(cat: &str, name: &str, tid: i64, ts: i64, dur: i64, args: Value) -> Value {
    let pid = if cat == "kernel" { 0 } else { 10 };
    json!({ "ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args })
}

fn kernel(name: &str, stream: i64, ts: i64, dur: i64, corr: i64) -> Value {
    x(
        "kernel",
        name,
        stream,
        ts,
        dur,
        json!({ "device": 0, "stream": stream, "correlation": corr }),
    )
}

fn launch(name: &str, ts: i64, dur: i64, corr: i64) -> Value {
    x(
        "cuda_runtime",
        name,
        10,
        ts,
        dur,
        json!({ "correlation": corr, "External id": 1 }),
    )
}

fn import(project: &Project, name: &str, events: Vec<Value>) -> String {
    let path = project.path().join(name);
    let doc = json!({ "schemaVersion": 1, "traceEvents": events });
    std::fs::write(&path, doc.to_string()).expect("write trace");
    let imported = project.json(&["import", path.to_str().expect("utf-8")]);
    imported["run_id"].as_str().expect("run id").to_owned()
}

#[test]
fn overlaps_zero_durations_orphans_and_graph_launches() {
    let project = Project::new();
    // Times in µs. Stream 7: k_a [100,200) and k_b [150,220) overlap;
    // k_zero [300,300); the graph's g_1 [400,410) and g_2 [410,420).
    // Stream 8: orphan [500,520) whose correlation 99 has no launch.
    let run = import(
        &project,
        "edges.json",
        vec![
            x("user_annotation", "ProfilerStep#1", 10, 0, 1000, json!({})),
            x(
                "cpu_op",
                "aten::mm",
                10,
                1,
                300,
                json!({ "External id": 1 }),
            ),
            launch("cudaLaunchKernel", 2, 5, 1),
            launch("cudaLaunchKernel", 10, 5, 2),
            launch("cudaLaunchKernel", 20, 5, 3),
            launch("cudaGraphLaunch", 30, 8, 4),
            kernel("k_a", 7, 100, 100, 1),
            kernel("k_b", 7, 150, 70, 2),
            kernel("k_zero", 7, 300, 0, 3),
            kernel("g_1", 7, 400, 10, 4),
            kernel("g_2", 7, 410, 10, 4),
            kernel("orphan", 8, 500, 20, 99),
        ],
    );
    let a = project.json(&["analyze", "accelerator-launches", &run]);
    assert_eq!(a["evidence"]["status"], "available", "{a}");
    let regions = a["regions"].as_array().expect("regions");
    assert_eq!(regions.len(), 1, "{a}");
    let r = &regions[0];
    assert_eq!(r["region"], "ProfilerStep#1");
    assert_eq!(
        r["direct_launches"],
        json!({ "count": 3, "time_ns": 15_000 })
    );
    assert_eq!(r["graph_launches"], json!({ "count": 1, "time_ns": 8_000 }));
    // 100 + 70 + 0 + 10 + 10 + 20 µs over six kernels, the orphan included.
    assert_eq!(r["kernels"], json!({ "count": 6, "time_ns": 210_000 }));
    // Five of six kernels have a launch with their correlation id.
    let coverage = r["correlation_coverage"].as_f64().expect("coverage");
    assert!((coverage - 5.0 / 6.0).abs() < 1e-9, "{coverage}");
    // Latencies (kernel start − launch start): 98, 140, 280, 370 and 380 µs
    // (both graph kernels measure from the one cudaGraphLaunch).
    // Nearest rank: p50 is the 3rd of 5, p90 and p99 the 5th.
    let l = &r["launch_latency"];
    assert_eq!(l["n"], 5);
    assert_eq!(l["p50_ns"], 280_000);
    assert_eq!(l["p90_ns"], 380_000);
    assert_eq!(l["max_ns"], 380_000);

    let streams = a["streams"].as_array().expect("streams");
    let s7 = streams.iter().find(|s| s["stream"] == 7).expect("stream 7");
    // k_b starts before the running max end (200 µs): no gap, not −50.
    // Gaps: 300 − 220 = 80 µs and 400 − 300 = 100 µs; g_2 starts exactly
    // at g_1's end (no gap). Span 420 − 100 = 320 µs; busy = span − gaps.
    assert_eq!(s7["kernels"], 5);
    assert_eq!(s7["gaps"], 2);
    assert_eq!(s7["gap_total_ns"], 180_000);
    assert_eq!(s7["gap_max_ns"], 100_000);
    assert_eq!(s7["span_ns"], 320_000);
    assert_eq!(s7["busy_ns"], 140_000);
    // Buckets [<1 µs, <10 µs, <100 µs, <1 ms, <10 ms, rest]: 80 µs, 100 µs.
    assert_eq!(s7["gap_histogram"], json!([0, 0, 1, 1, 0, 0]));
    let s8 = streams.iter().find(|s| s["stream"] == 8).expect("stream 8");
    assert_eq!(s8["kernels"], 1);
    assert_eq!(s8["gaps"], 0);
    assert_eq!(s8["utilization"], 1.0);
    for s in streams {
        assert!(s["gap_total_ns"].as_i64() >= Some(0), "{s}");
        assert!(s["busy_ns"].as_i64() <= s["span_ns"].as_i64(), "{s}");
    }
}

#[test]
fn a_trace_without_device_tracks_is_partial_with_the_next_call() {
    let project = Project::new();
    let run = import(
        &project,
        "cpu_only.json",
        vec![
            x("user_annotation", "ProfilerStep#1", 10, 0, 100, json!({})),
            x(
                "cpu_op",
                "aten::add",
                10,
                1,
                50,
                json!({ "External id": 1 }),
            ),
        ],
    );
    let a = project.json(&["analyze", "accelerator-launches", &run]);
    assert_eq!(a["evidence"]["status"], "partial", "{a}");
    assert_eq!(a["evidence"]["next_tool"], "get_run", "{a}");
    assert_eq!(
        a["evidence"]["next_arguments"]["target"],
        run.as_str(),
        "{a}"
    );
    let reason = a["evidence"]["reason"].as_str().expect("reason");
    assert!(reason.contains("tracks_missing"), "{reason}");
    assert!(a["streams"].as_array().expect("streams").is_empty());

    // Launches without kernels: runtime present, kernels missing.
    let run = import(
        &project,
        "launch_only.json",
        vec![launch("cudaLaunchKernel", 2, 5, 1)],
    );
    let a = project.json(&["analyze", "accelerator-launches", &run]);
    assert_eq!(a["evidence"]["status"], "partial", "{a}");
    assert_eq!(a["evidence"]["reason"], "kernel_tracks_missing", "{a}");
}
