//! `analyze pytorch` through the real binary against a model computed
//! here from the Kineto JSON: per operator count and total time, and the
//! device time it launched (cpu_op → runtime call by External id → device
//! activity by correlation); steps; a non-torch trace is refused.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;

use flameox_tests::{Project, corpus};
use serde_json::Value;

fn ns(v: &Value) -> i64 {
    match v.as_i64() {
        Some(us) => us * 1000,
        None => (v.as_f64().expect("number") * 1000.0).round() as i64,
    }
}

/// name → (count, total, device)
fn model(path: &str) -> (BTreeMap<String, (i64, i64, i64)>, usize) {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(corpus().join(path)).expect("corpus"))
        .read_to_string(&mut text)
        .expect("gunzip");
    let doc: Value = serde_json::from_str(&text).expect("json");
    let events: Vec<&Value> = doc["traceEvents"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["ph"] == "X")
        .collect();
    let cat = |e: &Value| e["cat"].as_str().unwrap_or("").to_lowercase();
    let mut ops: BTreeMap<String, (i64, i64, i64)> = BTreeMap::new();
    let mut op_of_ext: HashMap<i64, String> = HashMap::new();
    let mut steps = 0;
    for e in &events {
        let name = e["name"].as_str().unwrap_or("").to_owned();
        if name.starts_with("ProfilerStep#") && cat(e) == "user_annotation" {
            steps += 1;
        }
        if cat(e) != "cpu_op" {
            continue;
        }
        if let Some(x) = e["args"]["External id"].as_i64() {
            op_of_ext.insert(x, name.clone());
        }
        let s = ops.entry(name).or_default();
        s.0 += 1;
        s.1 += ns(&e["dur"]);
    }
    let mut ext_of_corr: HashMap<i64, i64> = HashMap::new();
    for e in &events {
        if matches!(cat(e).as_str(), "cuda_runtime" | "cuda_driver")
            && let (Some(c), Some(x)) = (
                e["args"]["correlation"].as_i64(),
                e["args"]["External id"].as_i64(),
            )
        {
            ext_of_corr.insert(c, x);
        }
    }
    for e in &events {
        if !matches!(cat(e).as_str(), "kernel" | "gpu_memcpy" | "gpu_memset") {
            continue;
        }
        let name = e["args"]["correlation"]
            .as_i64()
            .and_then(|c| ext_of_corr.get(&c))
            .and_then(|x| op_of_ext.get(x));
        if let Some(name) = name
            && let Some(s) = ops.get_mut(name)
        {
            s.2 += ns(&e["dur"]);
        }
    }
    (ops, steps)
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn operators_device_time_and_steps_match_the_trace() {
    let project = Project::new();
    let path = "kineto/hta_nccl_a100_rank0of2.json.gz";
    let (ops, steps) = model(path);
    let imported = project.json(&["import", corpus().join(path).to_str().expect("utf-8")]);
    let run = imported["run_id"].as_str().expect("run").to_owned();
    let view = project.json(&["analyze", "pytorch", &run, "--limit", "1000"]);
    assert_eq!(view["evidence"]["status"], "available");
    let rows = view["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), ops.len(), "one row per operator name");
    let mut with_device = 0;
    for r in rows {
        let name = r["name"].as_str().expect("name");
        let (count, total, device) = ops[name];
        assert_eq!(r["count"].as_i64(), Some(count), "{name}");
        assert!(
            (r["total_ns"].as_i64().expect("total") - total).abs() <= count,
            "{name}"
        );
        let got = r["device_ns"].as_i64().expect("device");
        assert!(
            (got - device).abs() <= 1 + device / 1_000_000,
            "{name}: {got} vs {device}"
        );
        with_device += i64::from(device > 0);
    }
    assert!(with_device > 10, "operators launch device work");
    assert_eq!(view["steps"].as_array().expect("steps").len(), steps);
    assert!(view["warmup_ratio"].as_f64().is_some());

    let folded = corpus().join("stacks/pyspy_workload.folded.txt");
    let other = project.json(&["import", folded.to_str().expect("utf-8")]);
    let other_run = other["run_id"].as_str().expect("run");
    let err = project.json_err(&["analyze", "pytorch", other_run], "COMPARISON_INVALID", 6);
    // Seed, analyze_pytorch: "the exact run_id and recovery action instead
    // of an empty report".
    assert_eq!(err["run_id"], other_run, "{err}");
    assert_eq!(err["recovery"]["next_tool"], "summarize_target", "{err}");
    assert_eq!(
        err["recovery"]["next_arguments"]["target"], other_run,
        "{err}"
    );
    assert!(
        err["remediation"]
            .to_string()
            .contains("--producer torch.profiler"),
        "{err}"
    );
}

/// Input shapes: per operator, the heaviest `Input Dims` arrays, computed
/// here by re-serializing each event's parsed array without whitespace.
#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn input_shapes_match_the_recorded_input_dims() {
    let path = "kineto/tbplugin_resnet50_v100_worker0.pt.trace.json.gz";
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(corpus().join(path)).expect("corpus"))
        .read_to_string(&mut text)
        .expect("gunzip");
    let doc: Value = serde_json::from_str(&text).expect("json");
    // (operator, shapes) → (count, total ns)
    let mut model: BTreeMap<(String, String), (i64, i64)> = BTreeMap::new();
    for e in doc["traceEvents"].as_array().expect("events") {
        // Older profilers wrote category `Operator` for what is `cpu_op` now.
        let cat = e["cat"].as_str().unwrap_or("").to_lowercase();
        let is_op = e["ph"] == "X" && (cat == "cpu_op" || cat == "operator");
        let dims = &e["args"]["Input Dims"];
        if !is_op || !dims.is_array() {
            continue;
        }
        let key = (
            e["name"].as_str().expect("name").to_owned(),
            serde_json::to_string(dims).expect("dims"),
        );
        let s = model.entry(key).or_default();
        s.0 += 1;
        s.1 += ns(&e["dur"]);
    }
    assert!(model.len() > 20, "the trace records shapes");

    let project = Project::new();
    let imported = project.json(&["import", corpus().join(path).to_str().expect("utf-8")]);
    let run = imported["run_id"].as_str().expect("run").to_owned();
    let view = project.json(&["analyze", "pytorch", &run, "--limit", "30"]);
    let mut checked = 0;
    for r in view["rows"].as_array().expect("rows") {
        let name = r["name"].as_str().expect("name");
        let mut expected: Vec<(&String, &(i64, i64))> = model
            .iter()
            .filter(|((op, _), _)| op == name)
            .map(|((_, shapes), v)| (shapes, v))
            .collect();
        expected.sort_by(|a, b| (b.1.1, b.1.0, a.0).cmp(&(a.1.1, a.1.0, b.0)));
        expected.truncate(3);
        let got = r["shapes"].as_array().cloned().unwrap_or_default();
        assert_eq!(got.len(), expected.len(), "{name}: {got:?}");
        for (g, (shapes, (count, total))) in got.iter().zip(&expected) {
            assert_eq!(g["shapes"].as_str(), Some(shapes.as_str()), "{name}");
            assert_eq!(g["count"].as_i64(), Some(*count), "{name} {shapes}");
            assert!(
                (g["total_ns"].as_i64().expect("total") - total).abs() <= *count,
                "{name} {shapes}"
            );
        }
        checked += usize::from(!got.is_empty());
    }
    assert!(checked >= 10, "shapes reported for {checked} operators");
}
