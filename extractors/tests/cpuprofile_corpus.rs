//! The V8 `.cpuprofile` extractor on the Node 20 corpus file, checked
//! against self and inclusive values computed here from a
//! `serde_json::Value` walk of the parent links, plus hand-written edge
//! cases (unknown ids, negative deltas, cycles, missing arrays, truncation).

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use common::*;
use flameox_extractors::{
    EvidenceTable as T, ExtractError, ExtractionSummary, NoObserver, extract_cpuprofile,
};
use serde_json::{Value, json};

type Key = (String, Option<String>, Option<i64>);
/// metric → frame → (self, inclusive).
type Totals = BTreeMap<String, BTreeMap<Key, (i64, i64)>>;

fn extract(bytes: &[u8]) -> Result<(ExtractionSummary, MemorySink), ExtractError> {
    let mut sink = MemorySink::default();
    let summary = extract_cpuprofile(bytes, &options(), &mut sink, &NoObserver)?;
    Ok((summary, sink))
}

fn totals(sink: &MemorySink) -> Totals {
    let metric = sink.strs(T::FrameTotals, "metric");
    let function = sink.strs(T::FrameTotals, "function");
    let file = sink.strs(T::FrameTotals, "file");
    let line = sink.i64s(T::FrameTotals, "line");
    let selfs = sink.i64s(T::FrameTotals, "self_value");
    let incls = sink.i64s(T::FrameTotals, "inclusive_value");
    let mut out = Totals::new();
    for i in 0..metric.len() {
        let key = (function[i].clone().unwrap(), file[i].clone(), line[i]);
        let e = out
            .entry(metric[i].clone().unwrap())
            .or_default()
            .entry(key)
            .or_default();
        e.0 += selfs[i].unwrap();
        e.1 += incls[i].unwrap();
    }
    out
}

fn sum_self(t: &Totals, metric: &str) -> i64 {
    t.get(metric).map_or(0, |m| m.values().map(|v| v.0).sum())
}

/// The model: walk up `children`-derived parents from each sample's node,
/// dropping `(root)`; a sample's time is the gap to the next sample in time
/// order, the last one's the gap to `endTime`.
fn model(doc: &Value) -> Totals {
    let nodes = doc["nodes"].as_array().unwrap();
    let by_id: HashMap<i64, &Value> = nodes
        .iter()
        .map(|n| (n["id"].as_i64().unwrap(), n))
        .collect();
    let mut parent: HashMap<i64, i64> = HashMap::new();
    for n in nodes {
        for c in n["children"].as_array().into_iter().flatten() {
            parent.insert(c.as_i64().unwrap(), n["id"].as_i64().unwrap());
        }
    }
    let key = |n: &Value| -> Key {
        let cf = &n["callFrame"];
        let name = cf["functionName"].as_str().unwrap();
        let url = cf["url"].as_str().unwrap();
        let line = cf["lineNumber"].as_i64().unwrap();
        (
            if name.is_empty() {
                "(anonymous)".into()
            } else {
                name.into()
            },
            (!url.is_empty()).then(|| url.to_owned()),
            (line >= 0).then_some(line + 1),
        )
    };
    let samples: Vec<i64> = doc["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    let mut t = doc["startTime"].as_i64().unwrap();
    let mut times: Vec<(i64, usize)> = Vec::new();
    for (i, d) in doc["timeDeltas"].as_array().unwrap().iter().enumerate() {
        t += d.as_i64().unwrap();
        times.push((t, i));
    }
    times.sort();
    let end = doc["endTime"].as_i64().unwrap();
    let mut out = Totals::new();
    for (k, &(ts, i)) in times.iter().enumerate() {
        let next = times.get(k + 1).map_or(end, |n| n.0);
        let mut stack = Vec::new();
        let mut id = samples[i];
        loop {
            let n = by_id[&id];
            if n["callFrame"]["functionName"] != "(root)" || parent.contains_key(&id) {
                stack.push(key(n));
            }
            match parent.get(&id) {
                Some(p) => id = *p,
                None => break,
            }
        }
        for (metric, v) in [("cpu.samples", 1), ("cpu.time_ns", (next - ts) * 1000)] {
            let m = out.entry(metric.to_owned()).or_default();
            m.entry(stack[0].clone()).or_default().0 += v;
            for f in stack.iter().collect::<BTreeSet<_>>() {
                m.entry(f.clone()).or_default().1 += v;
            }
        }
    }
    out
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn node_cpuprofile_matches_an_independent_walk() {
    let bytes = std::fs::read(corpus("stacks/node20_work.cpuprofile")).unwrap();
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    let (summary, sink) = extract(&bytes).unwrap();
    assert_eq!(summary.format, "chrome_cpuprofile");
    assert_eq!(summary.producer, "v8");
    assert!(summary.limitations.is_empty(), "{:?}", summary.limitations);
    let expected = model(&doc);
    let got = totals(&sink);
    assert_eq!(got, expected);

    let samples = doc["samples"].as_array().unwrap().len() as i64;
    let deltas: Vec<i64> = doc["timeDeltas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    assert!(deltas.iter().all(|d| *d >= 0), "this file is in time order");
    let start = doc["startTime"].as_i64().unwrap();
    let end = doc["endTime"].as_i64().unwrap();
    assert_eq!(sum_self(&got, "cpu.samples"), samples);
    // In time order, the durations telescope: first sample → endTime.
    assert_eq!(
        sum_self(&got, "cpu.time_ns"),
        (end - start - deltas[0]) * 1000
    );
    assert_eq!(summary.time_span_ns, Some((start * 1000, end * 1000)));

    // Every sample is a timed row, under both metrics.
    assert_eq!(sink.rows(T::Samples) as i64, 2 * samples);
    let ts: Vec<i64> = sink
        .i64s(T::Samples, "ts_ns")
        .into_iter()
        .map(Option::unwrap)
        .collect();
    assert_eq!(ts.iter().min(), Some(&((start + deltas[0]) * 1000)));
    assert!(summary.coverage["timestamps"]);

    // The root is dropped; VM states are frames; lines are 1-based.
    let functions: BTreeSet<String> = sink
        .strs(T::Frames, "function")
        .into_iter()
        .flatten()
        .collect();
    assert!(!functions.contains("(root)"));
    for f in ["(program)", "(garbage collector)", "fib"] {
        assert!(functions.contains(f), "{f}");
    }
    let fib = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["callFrame"]["functionName"] == "fib")
        .unwrap();
    let fib_line = fib["callFrame"]["lineNumber"].as_i64().unwrap() + 1;
    assert!(
        got["cpu.samples"]
            .keys()
            .any(|k| k.0 == "fib" && k.2 == Some(fib_line))
    );
    let langs: BTreeSet<String> = sink
        .strs(T::Frames, "language")
        .into_iter()
        .flatten()
        .collect();
    assert!(langs.contains("javascript"), "{langs:?}");

    let top = |t: &Totals| {
        t["cpu.time_ns"]
            .iter()
            .max_by_key(|(k, v)| (v.0, std::cmp::Reverse((*k).clone())))
            .map(|(k, v)| (k.clone(), v.0))
            .unwrap()
    };
    assert_eq!(top(&got), top(&expected));
}

fn profile(nodes: Value, samples: Value, deltas: Value, end: i64) -> String {
    json!({"nodes": nodes, "startTime": 1000, "endTime": end, "samples": samples, "timeDeltas": deltas})
        .to_string()
}

fn node(id: i64, name: &str, children: &[i64]) -> Value {
    json!({"id": id, "callFrame": {"functionName": name, "scriptId": "1", "url": "file:///a.js",
           "lineNumber": id, "columnNumber": 0}, "hitCount": 0, "children": children})
}

fn by_name(t: &Totals, metric: &str) -> BTreeMap<String, (i64, i64)> {
    t[metric].iter().map(|(k, v)| (k.0.clone(), *v)).collect()
}

#[test]
fn negative_deltas_are_put_in_time_order() {
    let nodes = json!([
        {"id": 1, "callFrame": {"functionName": "(root)", "url": "", "lineNumber": -1}, "children": [2, 3]},
        node(2, "a", &[]),
        node(3, "b", &[]),
    ]);
    // Times: a@1010, b@1030, a@1020 (delta −10), end 1100.
    let (summary, sink) =
        extract(profile(nodes, json!([2, 3, 2]), json!([10, 20, -10]), 1100).as_bytes()).unwrap();
    assert_eq!(limitation(&summary, "samples_out_of_order"), 1);
    let t = totals(&sink);
    // In order a@1010 (10), a@1020 (10), b@1030 (70).
    assert_eq!(
        by_name(&t, "cpu.time_ns"),
        BTreeMap::from([
            ("a".into(), (20_000, 20_000)),
            ("b".into(), (70_000, 70_000))
        ])
    );
    assert_eq!(sum_self(&t, "cpu.time_ns"), (1100 - 1010) * 1000);
}

#[test]
fn broken_links_and_missing_arrays_are_rules() {
    // Unknown sample id, a child listed twice, a cycle (4 ↔ 5), unknown child.
    let nodes = json!([
        {"id": 1, "callFrame": {"functionName": "(root)", "url": "", "lineNumber": -1}, "children": [2, 99]},
        node(2, "a", &[3]),
        node(3, "b", &[]),
        node(6, "c", &[3]),
        node(4, "x", &[5]),
        node(5, "y", &[4]),
    ]);
    let (summary, sink) =
        extract(profile(nodes, json!([3, 42, 5, 1]), json!([1, 1, 1, 1]), 1010).as_bytes())
            .unwrap();
    assert_eq!(limitation(&summary, "unknown_node_id"), 1);
    assert_eq!(limitation(&summary, "node_with_two_parents"), 1);
    assert_eq!(limitation(&summary, "unknown_child_id"), 1);
    assert_eq!(limitation(&summary, "node_cycle"), 1);
    let t = totals(&sink);
    let s = by_name(&t, "cpu.samples");
    assert_eq!(s["b"], (1, 1));
    assert_eq!(s["a"], (0, 1), "b stays under its first parent");
    assert_eq!(s["[unknown node]"], (1, 1));
    assert_eq!(
        s["(root)"],
        (1, 1),
        "a sample on the root itself keeps a (root) frame"
    );
    assert_eq!(sum_self(&t, "cpu.samples"), 4);
    assert_eq!(sum_self(&t, "cpu.time_ns"), (1010 - 1001) * 1000);

    // `parent` links instead of `children`.
    let nodes = json!([
        {"id": 1, "callFrame": {"functionName": "(root)", "url": "", "lineNumber": -1}},
        {"id": 2, "parent": 1, "callFrame": {"functionName": "a", "url": "u", "lineNumber": 0}},
        {"id": 3, "parent": 2, "callFrame": {"functionName": "b", "url": "u", "lineNumber": 1}},
    ]);
    let (_, sink) =
        extract(profile(nodes.clone(), json!([3, 3]), json!([0, 5]), 1010).as_bytes()).unwrap();
    let s = by_name(&totals(&sink), "cpu.time_ns");
    assert_eq!(
        s,
        BTreeMap::from([("a".into(), (0, 10_000)), ("b".into(), (10_000, 10_000))])
    );

    // No timeDeltas: counts only. No samples: hitCount.
    let doc = json!({"nodes": nodes, "startTime": 0, "endTime": 5, "samples": [2, 3]}).to_string();
    let (summary, sink) = extract(doc.as_bytes()).unwrap();
    assert_eq!(limitation(&summary, "no_sample_times"), 1);
    assert_eq!(totals(&sink).keys().collect::<Vec<_>>(), ["cpu.samples"]);
    assert!(!summary.coverage["timestamps"]);
    let doc = json!({"nodes": [node(1, "a", &[2]), {"id": 2, "hitCount": 7,
                      "callFrame": {"functionName": "b", "url": "u", "lineNumber": 3}}], "startTime": 0})
    .to_string();
    let (summary, sink) = extract(doc.as_bytes()).unwrap();
    assert_eq!(limitation(&summary, "no_samples_array"), 1);
    assert_eq!(by_name(&totals(&sink), "cpu.samples")["b"], (7, 7));
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn broken_inputs_are_typed() {
    let parse_err = |bytes: &[u8]| match extract(bytes) {
        Err(ExtractError::Parse { .. }) => {}
        other => panic!(
            "{:?}: {other:?}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(80)])
        ),
    };
    parse_err(b"");
    parse_err(b"{");
    parse_err(br#"{"nodes": [], "startTime": 0}"#);
    parse_err(br#"{"startTime": 0, "samples": [1]}"#);
    parse_err(br#"{"nodes": [{"id": 1, "callFrame": {"functionName": "(root)"}}], "samples": []}"#);
    parse_err(br#"{"nodes": [{"id": "one"}]}"#);
    let bytes = std::fs::read(corpus("stacks/node20_work.cpuprofile")).unwrap();
    let step = bytes.len() / 40;
    for cut in (1..bytes.len() - 1).step_by(step) {
        parse_err(&bytes[..cut]);
    }
}
