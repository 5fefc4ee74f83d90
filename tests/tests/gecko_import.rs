//! Gecko profiles through the real binary: the Firefox 59 DevTools recording
//! is detected as `gecko_profile`, hotspots answer under `cpu.samples` and
//! `cpu.time_ns` with totals and the top frame of a model computed here from
//! the JSON tables, stack examples through the top frame agree, `--thread`
//! filters by tid and name, the bare profile imports alike, and the
//! Firefox Profiler's processed format is refused with a parse error.

use std::collections::BTreeMap;

use flameox_tests::{Project, corpus};
use serde_json::{Value, json};

const RECORDING: &str = "stacks/speedscope_firefox59_devtools_recording.json";

/// Per metric: self value per leaf function name, and samples per tid.
#[derive(Default)]
struct Model {
    selfs: BTreeMap<&'static str, BTreeMap<String, i64>>,
    per_tid: BTreeMap<i64, i64>,
}

impl Model {
    fn total(&self, metric: &str) -> i64 {
        self.selfs.get(metric).map_or(0, |m| m.values().sum())
    }
    fn best(&self, metric: &str) -> (i64, Vec<String>) {
        let m = &self.selfs[metric];
        let best = m.values().copied().max().unwrap_or(0);
        let names = m
            .iter()
            .filter(|(_, v)| **v == best)
            .map(|(k, _)| k.clone())
            .collect();
        (best, names)
    }
}

/// The function a location string names: `name (url:line)` → name; a
/// bare `url:line` → `(root scope) url`; a label or address as written.
fn function_of(location: &str) -> String {
    if let Some(body) = location.strip_suffix(')')
        && let Some(open) = body.rfind(" (")
    {
        return body[..open].to_owned();
    }
    if location.contains("://")
        && let Some((url, _)) = location.rsplit_once(':')
    {
        return format!("(root scope) {url}");
    }
    location.to_owned()
}

/// A sample's leaf is its stack row's frame; it lasts until the thread's
/// next sample in time order, the last one `meta.interval` ms.
fn model(profile: &Value) -> Model {
    let col = |t: &Value, name: &str| t["schema"][name].as_u64().expect("column") as usize;
    let interval = profile["meta"]["interval"].as_f64().expect("interval");
    let mut model = Model::default();
    for t in profile["threads"].as_array().expect("threads") {
        let (samples, stacks, frames) = (&t["samples"], &t["stackTable"], &t["frameTable"]);
        let strings = t["stringTable"].as_array().expect("strings");
        let mut timed = Vec::new();
        for row in samples["data"].as_array().expect("data") {
            let stack = row[col(samples, "stack")].as_u64().expect("stack") as usize;
            let frame = stacks["data"][stack][col(stacks, "frame")]
                .as_u64()
                .expect("frame") as usize;
            let location = frames["data"][frame][col(frames, "location")]
                .as_u64()
                .expect("location") as usize;
            let name = function_of(strings[location].as_str().expect("string"));
            let ns = (row[col(samples, "time")].as_f64().expect("time") * 1e6).round() as i64;
            timed.push((ns, name));
        }
        timed.sort();
        *model
            .per_tid
            .entry(t["tid"].as_i64().expect("tid"))
            .or_default() += timed.len() as i64;
        for (k, (ns, name)) in timed.iter().enumerate() {
            let dur = timed
                .get(k + 1)
                .map_or((interval * 1e6).round() as i64, |n| n.0 - ns);
            for (metric, v) in [("cpu.samples", 1), ("cpu.time_ns", dur)] {
                *model
                    .selfs
                    .entry(metric)
                    .or_default()
                    .entry(name.clone())
                    .or_default() += v;
            }
        }
    }
    model
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn firefox_recording_imports_and_answers_hotspots() {
    let project = Project::new();
    let path = corpus().join(RECORDING);
    let doc: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("corpus file")).expect("json");
    let model = model(&doc["profile"]);
    let imported = project.json(&["import", path.to_str().expect("utf-8 path")]);
    assert_eq!(imported["kind"], "gecko_profile");
    assert_eq!(imported["producer"], "firefox");
    assert_eq!(
        imported["limitations"].as_array().map(Vec::len),
        Some(0),
        "{imported}"
    );
    assert!(imported["rows"]["frames"].as_u64() > Some(0));
    let run = imported["run_id"].as_str().expect("run").to_owned();

    let hot = project.json(&["analyze", "hotspots", &run, "--limit", "1000"]);
    assert_eq!(hot["metric"], "cpu.samples");
    let mut available: Vec<&str> = hot["available_metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    available.sort();
    assert_eq!(available, ["cpu.samples", "cpu.time_ns"]);

    for metric in ["cpu.samples", "cpu.time_ns"] {
        let hot = project.json(&[
            "analyze", "hotspots", &run, "--metric", metric, "--limit", "1000",
        ]);
        assert_eq!(
            hot["total_self"].as_i64(),
            Some(model.total(metric)),
            "{metric}"
        );
        let top = &hot["rows"][0];
        let (best, names) = model.best(metric);
        assert_eq!(top["self_value"].as_i64(), Some(best), "{metric}");
        let function = top["function"].as_str().expect("function");
        assert!(
            names.iter().any(|n| n == function),
            "{metric}: {function} not in {names:?}"
        );

        let frame = top["frame"].as_str().expect("frame key");
        let examples = project.json(&[
            "stacks", "examples", &run, frame, "--metric", metric, "--limit", "1000",
        ]);
        let stacks = examples["stacks"].as_array().expect("stacks");
        assert!(!stacks.is_empty());
        assert!(
            stacks.iter().all(|s| s["frames"][0] != "(root)"),
            "the profiler's (root) label is dropped"
        );
        let weight: i64 = stacks
            .iter()
            .filter(|s| s["frames"].as_array().and_then(|f| f.last()) == Some(&top["function"]))
            .map(|s| s["weight"].as_i64().unwrap_or(0))
            .sum();
        assert_eq!(
            weight, best,
            "{metric}: leaf stacks weigh the frame's self value"
        );
    }

    // Threads: by tid and by name.
    let name = doc["profile"]["threads"][0]["name"].as_str().expect("name");
    for (tid, n) in &model.per_tid {
        for thread in [tid.to_string(), name.to_owned()] {
            let hot = project.json(&["analyze", "hotspots", &run, "--thread", &thread]);
            assert_eq!(hot["total_self"].as_i64(), Some(*n), "{thread}");
        }
    }

    let plan = project.json(&["open", imported["artifact_id"].as_str().expect("artifact")]);
    assert_eq!(plan["viewer"], "Firefox Profiler (profiler.firefox.com)");
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn bare_profiles_import_and_processed_ones_are_refused() {
    let project = Project::new();
    let doc: Value =
        serde_json::from_slice(&std::fs::read(corpus().join(RECORDING)).expect("corpus"))
            .expect("json");
    let model = model(&doc["profile"]);
    let bare = project.path().join("firefox.gecko.json");
    std::fs::write(&bare, doc["profile"].to_string()).expect("write");
    let bare = bare.to_str().expect("utf-8").to_owned();
    let imported = project.json(&["import", &bare]);
    assert_eq!(imported["kind"], "gecko_profile");
    let run = imported["run_id"].as_str().expect("run").to_owned();
    let hot = project.json(&["analyze", "hotspots", &run]);
    assert_eq!(hot["total_self"].as_i64(), Some(model.total("cpu.samples")));
    // The alias forces the kind.
    let forced = project.json(&["import", &bare, "--kind", "firefox"]);
    assert_eq!(forced["kind"], "gecko_profile");

    let head = project.head();
    let processed = project.path().join("processed.json");
    let body = json!({"meta": {"preprocessedProfileVersion": 49, "interval": 1},
                      "threads": [{"stackTable": {"frame": [], "prefix": [], "length": 0},
                                   "frameTable": {"length": 0}}]});
    std::fs::write(&processed, body.to_string()).expect("write");
    let err = project.json_err(
        &["import", processed.to_str().expect("utf-8")],
        "ARTIFACT_PARSE_FAILED",
        5,
    );
    assert!(
        err["message"]
            .as_str()
            .is_some_and(|m| m.contains("processed")),
        "{err}"
    );
    assert_eq!(project.head(), head);
}
