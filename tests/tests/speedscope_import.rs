//! speedscope JSON and V8 `.cpuprofile` through the real binary: content
//! detection picks the right extractor, hotspots answer under the default
//! metric (`cpu.samples`) and under `cpu.time_ns`, totals and the top frame
//! match a model computed here from the JSON, and stack examples agree.

use std::collections::{BTreeMap, HashMap};

use flameox_tests::{Project, corpus};
use serde_json::Value;

type Key = (String, Option<String>, Option<i64>);

/// Per metric: self value per frame and the total.
#[derive(Default)]
struct Model {
    selfs: BTreeMap<&'static str, BTreeMap<Key, i64>>,
}

impl Model {
    fn add(&mut self, metric: &'static str, leaf: Key, value: i64) {
        *self
            .selfs
            .entry(metric)
            .or_default()
            .entry(leaf)
            .or_default() += value;
    }
    fn total(&self, metric: &str) -> i64 {
        self.selfs.get(metric).map_or(0, |m| m.values().sum())
    }
    fn best(&self, metric: &str) -> (i64, Vec<String>) {
        let m = &self.selfs[metric];
        let best = m.values().copied().max().unwrap_or(0);
        let names = m
            .iter()
            .filter(|(_, v)| **v == best)
            .map(|(k, _)| k.0.clone())
            .collect();
        (best, names)
    }
}

/// py-spy speedscope: the leaf of each sample (a `thread (…)` root marker
/// alone means no frames), weights in seconds.
fn speedscope_model(doc: &Value) -> Model {
    let frames = doc["shared"]["frames"].as_array().expect("frames");
    let mut model = Model::default();
    for p in doc["profiles"].as_array().expect("profiles") {
        assert_eq!(p["unit"], "seconds");
        let weights = p["weights"].as_array().expect("weights");
        for (s, w) in p["samples"]
            .as_array()
            .expect("samples")
            .iter()
            .zip(weights)
        {
            let s = s.as_array().expect("stack");
            let f = &frames[s[s.len() - 1].as_u64().expect("index") as usize];
            let name = f["name"].as_str().expect("name");
            let leaf = if s.len() == 1 && name.starts_with("thread (") {
                ("[no frames]".to_owned(), None, None)
            } else {
                (
                    name.to_owned(),
                    f["file"]
                        .as_str()
                        .filter(|x| !x.is_empty())
                        .map(str::to_owned),
                    f["line"].as_i64(),
                )
            };
            model.add("cpu.samples", leaf.clone(), 1);
            model.add(
                "cpu.time_ns",
                leaf,
                (w.as_f64().expect("weight") * 1e9).round() as i64,
            );
        }
    }
    model
}

/// V8 cpuprofile: the sample's node is the leaf; it lasts until the next
/// sample (last: until endTime).
fn cpuprofile_model(doc: &Value) -> Model {
    let nodes: HashMap<i64, &Value> = doc["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| (n["id"].as_i64().expect("id"), n))
        .collect();
    let mut t = doc["startTime"].as_i64().expect("startTime");
    let mut times = Vec::new();
    for (s, d) in doc["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .zip(doc["timeDeltas"].as_array().expect("deltas"))
    {
        t += d.as_i64().expect("delta");
        times.push((t, s.as_i64().expect("sample")));
    }
    times.sort();
    let end = doc["endTime"].as_i64().expect("endTime");
    let mut model = Model::default();
    for (i, &(ts, id)) in times.iter().enumerate() {
        let next = times.get(i + 1).map_or(end, |n| n.0);
        let cf = &nodes[&id]["callFrame"];
        let name = cf["functionName"].as_str().expect("name");
        let url = cf["url"].as_str().expect("url");
        let line = cf["lineNumber"].as_i64().expect("line");
        let leaf = (
            if name.is_empty() {
                "(anonymous)".to_owned()
            } else {
                name.to_owned()
            },
            (!url.is_empty()).then(|| url.to_owned()),
            (line >= 0).then_some(line + 1),
        );
        model.add("cpu.samples", leaf.clone(), 1);
        model.add("cpu.time_ns", leaf, (next - ts) * 1000);
    }
    model
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn speedscope_and_cpuprofile_import_and_answer_hotspots() {
    let project = Project::new();
    for (rel, kind) in [
        ("stacks/pyspy_workload.speedscope.json", "speedscope_json"),
        ("stacks/node20_work.cpuprofile", "chrome_cpuprofile"),
    ] {
        let path = corpus().join(rel);
        let doc: Value =
            serde_json::from_slice(&std::fs::read(&path).expect("corpus file")).expect("json");
        let model = match kind {
            "speedscope_json" => speedscope_model(&doc),
            _ => cpuprofile_model(&doc),
        };
        let imported = project.json(&["import", path.to_str().expect("utf-8 path")]);
        assert_eq!(imported["kind"], kind, "{rel}");
        assert_eq!(
            imported["limitations"].as_array().map(Vec::len),
            Some(0),
            "{rel}: {imported}"
        );
        assert!(imported["rows"]["frames"].as_u64() > Some(0), "{rel}");
        let run = imported["run_id"].as_str().expect("run").to_owned();

        let hot = project.json(&["analyze", "hotspots", &run, "--limit", "1000"]);
        assert_eq!(hot["metric"], "cpu.samples", "{rel}");
        let mut available: Vec<&str> = hot["available_metrics"]
            .as_array()
            .expect("metrics")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        available.sort();
        assert_eq!(available, ["cpu.samples", "cpu.time_ns"], "{rel}");
        assert_eq!(
            hot["total_self"].as_i64(),
            Some(model.total("cpu.samples")),
            "{rel}"
        );

        for metric in ["cpu.samples", "cpu.time_ns"] {
            let hot = project.json(&[
                "analyze", "hotspots", &run, "--metric", metric, "--limit", "1000",
            ]);
            assert_eq!(hot["metric"], metric);
            assert_eq!(
                hot["total_self"].as_i64(),
                Some(model.total(metric)),
                "{rel} {metric}"
            );
            let top = &hot["rows"][0];
            let (best, names) = model.best(metric);
            assert_eq!(top["self_value"].as_i64(), Some(best), "{rel} {metric}");
            let function = top["function"].as_str().expect("function");
            assert!(
                names.iter().any(|n| n == function),
                "{rel} {metric}: {function} not in {names:?}"
            );

            let frame = top["frame"].as_str().expect("frame key");
            let examples = project.json(&[
                "stacks", "examples", &run, frame, "--metric", metric, "--limit", "1000",
            ]);
            let stacks = examples["stacks"].as_array().expect("stacks");
            assert!(
                stacks.iter().all(|s| s["frames"][0] != "(root)"),
                "{rel}: (root) is dropped"
            );
            let weight: i64 = stacks
                .iter()
                .filter(|s| s["frames"].as_array().and_then(|f| f.last()) == Some(&top["function"]))
                .map(|s| s["weight"].as_i64().unwrap_or(0))
                .sum();
            assert_eq!(
                weight, best,
                "{rel} {metric}: leaf stacks weigh the frame's self value"
            );
        }
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn speedscope_threads_filter_hotspots() {
    let project = Project::new();
    let path = corpus().join("stacks/pyspy_workload.speedscope.json");
    let doc: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("corpus file")).expect("json");
    let imported = project.json(&["import", path.to_str().expect("utf-8 path")]);
    let run = imported["run_id"].as_str().expect("run").to_owned();
    for p in doc["profiles"].as_array().expect("profiles") {
        let name = p["name"].as_str().expect("name");
        let tid = name.split(' ').nth(1).expect("tid");
        let n = p["samples"].as_array().expect("samples").len() as i64;
        for thread in [tid, name] {
            let hot = project.json(&["analyze", "hotspots", &run, "--thread", thread]);
            assert_eq!(hot["total_self"].as_i64(), Some(n), "{thread}");
        }
    }
}
