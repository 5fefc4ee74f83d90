//! `analyze gpu-diagnosis --section mfu` against a walk of the Kineto JSON
//! done here: FLOPs from each matrix product's and attention call's input
//! dims, the profiler steps' span, and the device time of the kernels each
//! call launched (its thread's launch calls inside it, joined to kernels
//! by correlation id). The peak is the stated H100 SXM row; a trace with
//! no shapes, one with no device name, and the profiler's own `flops`
//! args are checked too.

use std::collections::BTreeMap;

use flameox_tests::{Project, corpus_json, micros_to_ns};
use serde_json::{Value, json};

/// FLOPs of one call from its dims, 2 per multiply-add (PyTorch's flop
/// counter): only the operators these traces carry.
fn flop_of(name: &str, dims: &[Value]) -> Option<f64> {
    let d = |i: usize, j: usize| dims.get(i)?.get(j)?.as_f64();
    match name {
        "aten::addmm" => Some(2.0 * d(1, 0)? * d(1, 1)? * d(2, 1)?),
        "aten::mm" => Some(2.0 * d(0, 0)? * d(0, 1)? * d(1, 1)?),
        "aten::scaled_dot_product_attention" => {
            Some(2.0 * d(0, 0)? * d(0, 1)? * d(0, 2)? * d(1, 2)? * (d(0, 3)? + d(2, 3)?))
        }
        _ => None,
    }
}

/// Per operator name: (calls, FLOPs, kernel ns of what they launched);
/// and the profiler steps' span.
struct Walk {
    ops: BTreeMap<String, (u64, f64, i64)>,
    steps: Option<(i64, i64)>,
    without_dims: u64,
}

fn walk(doc: &Value, counted: &[&str]) -> Walk {
    let events = doc["traceEvents"].as_array().expect("events");
    let mut kernels: BTreeMap<i64, i64> = BTreeMap::new();
    let mut launches: Vec<(Value, i64, i64)> = Vec::new();
    let mut steps: Option<(i64, i64)> = None;
    for e in events.iter().filter(|e| e["ph"] == "X") {
        let ts = micros_to_ns(&e["ts"]);
        let end = ts + micros_to_ns(&e["dur"]);
        let corr = e["args"]["correlation"].as_i64();
        match e["cat"].as_str().unwrap_or("") {
            "kernel" => *kernels.entry(corr.unwrap_or(-1)).or_default() += end - ts,
            "cuda_runtime" | "cuda_driver" => {
                launches.push((e["tid"].clone(), ts, corr.unwrap_or(-1)))
            }
            "user_annotation"
                if e["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("ProfilerStep#")) =>
            {
                steps = Some(steps.map_or((ts, end), |(a, b)| (a.min(ts), b.max(end))));
            }
            _ => {}
        }
    }
    let mut ops: BTreeMap<String, (u64, f64, i64)> = BTreeMap::new();
    let mut without_dims = 0;
    for e in events.iter().filter(|e| e["cat"] == "cpu_op") {
        let name = e["name"].as_str().unwrap_or("");
        if !counted.contains(&name) {
            continue;
        }
        let ts = micros_to_ns(&e["ts"]);
        let end = ts + micros_to_ns(&e["dur"]);
        let dims = e["args"]["Input Dims"].as_array();
        let Some(flop) = dims.and_then(|d| flop_of(name, d)) else {
            without_dims += 1;
            continue;
        };
        let launched: i64 = launches
            .iter()
            .filter(|(tid, t, _)| *tid == e["tid"] && *t >= ts && *t <= end)
            .map(|(_, _, c)| kernels.get(c).copied().unwrap_or(0))
            .sum();
        let slot = ops.entry(name.to_owned()).or_default();
        *slot = (slot.0 + 1, slot.1 + flop, slot.2 + launched);
    }
    Walk {
        ops,
        steps,
        without_dims,
    }
}

fn mfu_of(project: &Project, run: &str) -> Value {
    let a = project.json(&[
        "analyze",
        "gpu-diagnosis",
        run,
        "--section",
        "mfu",
        "--limit",
        "10",
    ]);
    a["mfu"]["artifacts"][0].clone()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn mfu_matches_a_walk_of_the_bert_trace() {
    let path = "kineto/tracelens_h100_bert_small.json.gz";
    let w = walk(
        &corpus_json(path),
        &["aten::addmm", "aten::scaled_dot_product_attention"],
    );
    let project = Project::new();
    let m = mfu_of(&project, &project.import_corpus(path));
    assert_eq!(m["device_name"], "NVIDIA H100 80GB HBM3", "{m}");
    assert_eq!(m["flop_source"], "shapes", "{m}");
    let (start, end) = w.steps.expect("profiler steps");
    assert_eq!(m["span"]["name"], "steps", "{m}");
    assert_eq!(m["span"]["dur_ns"].as_i64(), Some(end - start), "{m}");
    // Every operator: its calls, FLOPs and its kernels' time.
    let ops = m["ops"].as_array().expect("ops");
    assert_eq!(ops.len(), w.ops.len(), "{m}");
    for op in ops {
        let name = op["name"].as_str().expect("name");
        let (calls, flop, kernel_ns) = w.ops[name];
        assert_eq!(op["calls"].as_u64(), Some(calls), "{op}");
        assert_eq!(f(&op["flop"]), flop, "{op}");
        assert_eq!(op["kernel_ns"].as_i64(), Some(kernel_ns), "{op}");
        assert_eq!(op["dtype"], "bf16", "{op}");
        assert!(kernel_ns > 0, "{op}");
    }
    // MFU = FLOPs ÷ (span × 989.4 TFLOP/s), the stated dense BF16 peak.
    let flop: f64 = w.ops.values().map(|o| o.1).sum();
    let kernel_ns: i64 = w.ops.values().map(|o| o.2).sum();
    assert_eq!(f(&m["flop"]), flop, "{m}");
    let peak = &m["by_dtype"][0]["peak"];
    assert_eq!(
        (peak["gpu"].as_str(), f(&peak["tflops"])),
        (Some("H100 SXM"), 989.4),
        "{m}"
    );
    let at_peak = flop / 989.4e12;
    let want = at_peak * 100.0 / ((end - start) as f64 / 1e9);
    assert!(
        (f(&m["mfu_pct_over_span"]) - want).abs() <= 0.005,
        "{want} vs {m}"
    );
    let in_kernels = at_peak * 100.0 / (kernel_ns as f64 / 1e9);
    assert!(
        (f(&m["pct_of_peak_in_kernels"]) - in_kernels).abs() <= 0.005,
        "{in_kernels} vs {m}"
    );
    assert!(m["caveat"].is_null(), "{m}");
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn no_shapes_or_no_device_name_means_no_mfu_and_says_why() {
    // AlexNet recorded no shapes: every product and convolution is a call
    // without FLOPs, and the caveat says how to record them.
    let path = "kineto/hta_alexnet_a100.pt.trace.json.gz";
    let counted = [
        "aten::mm",
        "aten::addmm",
        "aten::bmm",
        "aten::conv2d",
        "aten::convolution",
        "aten::_convolution",
        "aten::cudnn_convolution",
    ];
    let w = walk(&corpus_json(path), &counted);
    assert!(w.ops.is_empty() && w.without_dims > 0);
    let project = Project::new();
    let run = project.import_corpus(path);
    let a = project.json(&["analyze", "gpu-diagnosis", &run, "--section", "mfu"]);
    // No artifact with FLOPs is listed; the one without is said once.
    assert_eq!(a["mfu"]["artifacts"], json!([]), "{a}");
    let m = &a["mfu"]["without_flop"];
    assert_eq!(m["artifacts"], 1, "{m}");
    assert_eq!(
        m["calls_without_flop"].as_u64(),
        Some(w.without_dims),
        "{m}"
    );
    assert!(
        m["caveat"]
            .as_str()
            .is_some_and(|c| c.contains("record_shapes=True")),
        "{m}"
    );

    // A graph replay on a device the trace leaves unnamed: FLOPs, no peak.
    let path = "kineto/tracelens_mi300x_vllm_graph_replay.json.gz";
    let w = walk(&corpus_json(path), &["aten::mm"]);
    let m = mfu_of(&project, &project.import_corpus(path));
    assert_eq!(f(&m["flop"]), w.ops["aten::mm"].1, "{m}");
    assert!(m["mfu_pct_over_span"].is_null(), "{m}");
    assert!(
        m["caveat"]
            .as_str()
            .is_some_and(|c| c.contains("does not name its device")),
        "{m}"
    );
}

/// The profiler's own `flops` (with_flops=True) are taken as written, on
/// an A100 in FP32: 2 TFLOP in a 1 s step is 10.26 % of 19.5 TFLOP/s.
#[test]
fn the_profilers_flops_are_taken_as_written() {
    let project = Project::new();
    let host = |name: &str, cat: &str, ts: i64, dur: i64, args: Value| json!({"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args});
    let doc = json!({
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "numSms": 108}],
        "traceEvents": [
            host("ProfilerStep#1", "user_annotation", 0, 1_000_000, json!({})),
            host("aten::linear", "cpu_op", 10, 500, json!({"Input type": ["float"]})),
            host("aten::mm", "cpu_op", 20, 400, json!({"flops": 2_000_000_000_000i64, "Input type": ["float", "float"]})),
            host("cudaLaunchKernel", "cuda_runtime", 30, 5, json!({"correlation": 7})),
            json!({"ph": "X", "cat": "kernel", "name": "sgemm", "pid": 0, "tid": 7, "ts": 100, "dur": 250_000,
                   "args": {"device": 0, "stream": 7, "correlation": 7}}),
        ]
    });
    let path = project.path().join("flops.pt.trace.json");
    std::fs::write(&path, doc.to_string()).expect("write trace");
    let m = mfu_of(&project, &project.import_path(&path));
    assert_eq!(m["flop_source"], "trace", "{m}");
    assert_eq!(f(&m["flop"]), 2e12, "{m}");
    assert_eq!(m["kernel_ns"], 250_000_000, "{m}");
    let want = 2e12 / 19.5e12 * 100.0;
    assert!(
        (f(&m["mfu_pct_over_span"]) - want).abs() <= 0.005,
        "{want} vs {m}"
    );
    // 2 TFLOP in 0.25 s of kernels is 8 TFLOP/s: 41.03 % of the peak.
    assert!(
        (f(&m["pct_of_peak_in_kernels"]) - 8.0 / 19.5 * 100.0).abs() <= 0.005,
        "{m}"
    );
    assert_eq!(m["ops"][0]["name"], "aten::mm", "{m}");
}
