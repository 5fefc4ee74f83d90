//! The speedscope extractor on the py-spy corpus file, checked against
//! totals computed here from a `serde_json::Value` walk (a different code
//! path from the extractor's typed reader), on hand-written evented
//! profiles whose expected times come from span arithmetic, and on broken
//! inputs.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;
use flameox_extractors::{
    EvidenceTable as T, ExtractError, ExtractObserver, ExtractionSummary, NoObserver,
    extract_folded_stacks, extract_speedscope,
};
use serde_json::{Value, json};

type Key = (String, Option<String>, Option<i64>);
/// metric → frame → (self, inclusive).
type Totals = BTreeMap<String, BTreeMap<Key, (i64, i64)>>;

fn extract(bytes: &[u8]) -> Result<(ExtractionSummary, MemorySink), ExtractError> {
    let mut sink = MemorySink::default();
    let summary = extract_speedscope(bytes, &options(), &mut sink, &NoObserver)?;
    Ok((summary, sink))
}

/// frame_totals summed over threads, per metric and (function, file, line).
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

/// The same totals from the document as a `Value`: every sample's frames
/// (minus py-spy's `thread (…)` root marker; nothing left = `[no frames]`),
/// its weight in ns (seconds × 10⁹, rounded) and one count.
fn sampled_model(doc: &Value) -> Totals {
    let frames = doc["shared"]["frames"].as_array().unwrap();
    let key = |i: &Value| -> Key {
        let f = &frames[i.as_u64().unwrap() as usize];
        (
            f["name"].as_str().unwrap().to_owned(),
            f["file"]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
            f["line"].as_i64(),
        )
    };
    let mut out = Totals::new();
    for p in doc["profiles"].as_array().unwrap() {
        assert_eq!(p["type"], "sampled");
        assert_eq!(p["unit"], "seconds");
        let weights = p["weights"].as_array().unwrap();
        for (s, w) in p["samples"].as_array().unwrap().iter().zip(weights) {
            let mut stack: Vec<Key> = s.as_array().unwrap().iter().map(key).collect();
            if stack[0].0.starts_with("thread (") && stack[0].1.is_none() {
                stack.remove(0);
            }
            if stack.is_empty() {
                stack.push(("[no frames]".into(), None, None));
            }
            let ns = (w.as_f64().unwrap() * 1e9).round() as i64;
            for (metric, v) in [("cpu.time_ns", ns), ("cpu.samples", 1)] {
                let m = out.entry(metric.to_owned()).or_default();
                m.entry(stack.last().unwrap().clone()).or_default().0 += v;
                for f in stack.iter().collect::<BTreeSet<_>>() {
                    m.entry(f.clone()).or_default().1 += v;
                }
            }
        }
    }
    out
}

fn sum_self(t: &Totals, metric: &str) -> i64 {
    t.get(metric).map_or(0, |m| m.values().map(|v| v.0).sum())
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn pyspy_speedscope_matches_an_independent_walk() {
    let bytes = std::fs::read(corpus("stacks/pyspy_workload.speedscope.json")).unwrap();
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    let expected = sampled_model(&doc);
    let (summary, sink) = extract(&bytes).unwrap();
    assert_eq!(summary.format, "speedscope_json");
    assert_eq!(summary.producer, "py-spy");
    assert!(summary.limitations.is_empty(), "{:?}", summary.limitations);
    let got = totals(&sink);
    assert_eq!(got, expected);

    let n_samples: usize = doc["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["samples"].as_array().unwrap().len())
        .sum();
    assert_eq!(summary.input_events as usize, n_samples);
    assert_eq!(sum_self(&got, "cpu.samples"), n_samples as i64);
    assert!(sum_self(&got, "cpu.time_ns") > 0);
    // samples rows carry the same weights as the totals.
    let metric = sink.strs(T::Samples, "metric");
    let weight = sink.i64s(T::Samples, "weight");
    let unit = sink.strs(T::Samples, "weight_unit");
    for (m, u) in [("cpu.time_ns", "ns"), ("cpu.samples", "samples")] {
        let rows: Vec<usize> = (0..metric.len())
            .filter(|&i| metric[i].as_deref() == Some(m))
            .collect();
        assert!(rows.iter().all(|&i| unit[i].as_deref() == Some(u)));
        let w: i64 = rows.iter().map(|&i| weight[i].unwrap()).sum();
        assert_eq!(w, sum_self(&expected, m), "{m}");
    }

    // The top self frame is the model's.
    let top = |t: &Totals| {
        t["cpu.time_ns"]
            .iter()
            .max_by_key(|(k, v)| (v.0, std::cmp::Reverse((*k).clone())))
            .map(|(k, v)| (k.clone(), v.0))
            .unwrap()
    };
    assert_eq!(top(&got), top(&expected));

    // One thread per profile, tid from `Thread TID "NAME"`, name kept whole.
    let want_tids: BTreeSet<i64> = doc["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let name = p["name"].as_str().unwrap();
            name.split(' ').nth(1).unwrap().parse().unwrap()
        })
        .collect();
    let tids: BTreeSet<i64> = sink.i64s(T::Samples, "tid").into_iter().flatten().collect();
    assert_eq!(tids, want_tids);
    let names: BTreeSet<String> = sink
        .strs(T::FrameTotals, "thread_name")
        .into_iter()
        .flatten()
        .collect();
    assert!(names.contains("Thread 23087 \"worker-0\""), "{names:?}");
    assert!(summary.coverage["thread_identity"]);

    // Python frames; frames are interned by (name, file, line).
    let langs = sink.strs(T::Frames, "language");
    let files = sink.strs(T::Frames, "file");
    for (l, f) in langs.iter().zip(&files) {
        let Some(f) = f.as_deref() else {
            assert_eq!(l.as_deref(), Some("unknown"));
            continue;
        };
        let python = f.ends_with(".py") || f.starts_with("<frozen ");
        assert_eq!(l.as_deref() == Some("python"), python, "{f}");
    }
    let distinct: BTreeSet<Key> = expected["cpu.samples"].keys().cloned().collect();
    assert_eq!(sink.rows(T::Frames), distinct.len());
    assert_eq!(summary.rows["frames"] as usize, sink.rows(T::Frames));
    assert!(sink.rows(T::CallEdges) > 0);
    let functions = sink.strs(T::Frames, "function");
    assert!(
        functions
            .iter()
            .flatten()
            .all(|f| !f.starts_with("thread ("))
    );
}

/// A frame written with the same text by py-spy's speedscope and raw
/// (folded) outputs gets the same logical key from either extractor. (Trap:
/// raw output shortens library paths — `json/encoder.py` — while speedscope
/// keeps them whole, so only frames such as `<frozen …>` ones line up.)
#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn pyspy_speedscope_and_folded_frames_share_logical_keys() {
    let keys = |sink: &MemorySink| -> BTreeMap<(String, Option<String>, Option<i64>), String> {
        let f = sink.strs(T::Frames, "function");
        let file = sink.strs(T::Frames, "file");
        let line = sink.i64s(T::Frames, "line");
        let key = sink.strs(T::Frames, "logical_key");
        (0..f.len())
            .map(|i| {
                (
                    (f[i].clone().unwrap(), file[i].clone(), line[i]),
                    key[i].clone().unwrap(),
                )
            })
            .collect()
    };
    let bytes = std::fs::read(corpus("stacks/pyspy_workload.speedscope.json")).unwrap();
    let (_, speedscope) = extract(&bytes).unwrap();
    let bytes = std::fs::read(corpus("stacks/pyspy_workload.folded.txt")).unwrap();
    let mut folded = MemorySink::default();
    extract_folded_stacks(&bytes[..], &options(), &mut folded, &NoObserver).unwrap();
    let (a, b) = (keys(&speedscope), keys(&folded));
    let shared: Vec<_> = a.keys().filter(|k| b.contains_key(*k)).collect();
    assert!(shared.len() > 10, "{shared:?}");
    assert!(shared.iter().any(|k| k.0 == "[no frames]"));
    for k in shared {
        assert_eq!(a[k], b[k], "{k:?}");
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn firefox_devtools_recording_is_not_speedscope() {
    let bytes = std::fs::read(corpus(
        "stacks/speedscope_firefox59_devtools_recording.json",
    ))
    .unwrap();
    match extract(&bytes) {
        Err(ExtractError::Parse { message, .. }) => {
            assert!(message.contains("profiles"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

/// A span tree: (frame index, start, end, children).
struct Span(usize, i64, i64, Vec<Span>);

fn events(span: &Span, out: &mut Vec<Value>) {
    out.push(json!({"type": "O", "frame": span.0, "at": span.1}));
    for c in &span.3 {
        events(c, out);
    }
    out.push(json!({"type": "C", "frame": span.0, "at": span.2}));
}

/// Self and inclusive per frame name by span arithmetic (self = length −
/// children's lengths; inclusive counts nested same-name spans once).
fn span_model(
    span: &Span,
    names: &[&str],
    open: &mut Vec<usize>,
    out: &mut BTreeMap<String, (i64, i64)>,
) {
    let len = span.2 - span.1;
    let children: i64 = span.3.iter().map(|c| c.2 - c.1).sum();
    let e = out.entry(names[span.0].to_owned()).or_default();
    e.0 += len - children;
    if !open.contains(&span.0) {
        e.1 += len;
    }
    open.push(span.0);
    for c in &span.3 {
        span_model(c, names, open, out);
    }
    open.pop();
}

#[test]
fn evented_profile_times_come_from_open_intervals() {
    let names = ["main", "run", "parse", "eval"];
    // main[0,14] { run[0,14] { parse[0,2], eval[2,6] { run[3,5] }, parse[6,9] } }
    let tree = Span(
        0,
        0,
        14,
        vec![Span(
            1,
            0,
            14,
            vec![
                Span(2, 0, 2, vec![]),
                Span(3, 2, 6, vec![Span(1, 3, 5, vec![])]),
                Span(2, 6, 9, vec![]),
            ],
        )],
    );
    let mut evs = Vec::new();
    events(&tree, &mut evs);
    let doc = json!({
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "shared": {"frames": names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()},
        "profiles": [{"type": "evented", "name": "p", "unit": "milliseconds",
                      "startValue": 0, "endValue": 14, "events": evs}],
        "exporter": "handwritten@1"
    });
    let (summary, sink) = extract(doc.to_string().as_bytes()).unwrap();
    assert!(summary.limitations.is_empty(), "{:?}", summary.limitations);
    assert_eq!(summary.producer, "handwritten");
    let mut model = BTreeMap::new();
    span_model(&tree, &names, &mut Vec::new(), &mut model);
    let got: BTreeMap<String, (i64, i64)> = totals(&sink)["trace.wall_ns"]
        .iter()
        .map(|(k, v)| (k.0.clone(), *v))
        .collect();
    let model_ns: BTreeMap<String, (i64, i64)> = model
        .into_iter()
        .map(|(k, (s, i))| (k, (s * 1_000_000, i * 1_000_000)))
        .collect();
    assert_eq!(got, model_ns);
    // A root frame spans the profile, so the total is endValue − startValue.
    assert_eq!(got.values().map(|v| v.0).sum::<i64>(), 14 * 1_000_000);
    assert_eq!(totals(&sink).keys().collect::<Vec<_>>(), ["trace.wall_ns"]);
}

#[test]
fn evented_units_and_unbalanced_events_are_rules() {
    let doc = |unit: &str, events: Value, end: f64| {
        json!({"shared": {"frames": [{"name": "a"}, {"name": "b"}, {"name": "c"}]},
               "profiles": [{"type": "evented", "name": "x", "unit": unit,
                             "startValue": 0, "endValue": end, "events": events}]})
        .to_string()
    };
    // Closing `a` while `b` is open closes both; closing `c` (never open)
    // is ignored; `b` left open runs to endValue.
    let evs = json!([
        {"type": "O", "frame": 0, "at": 0},
        {"type": "O", "frame": 1, "at": 1},
        {"type": "C", "frame": 0, "at": 3},
        {"type": "C", "frame": 2, "at": 4},
        {"type": "O", "frame": 1, "at": 5},
        {"type": "C", "frame": 1, "at": 4},
    ]);
    let (summary, sink) = extract(doc("none", evs, 10.0).as_bytes()).unwrap();
    assert_eq!(limitation(&summary, "mismatched_close"), 1);
    assert_eq!(limitation(&summary, "unmatched_close"), 1);
    assert_eq!(limitation(&summary, "events_out_of_order"), 1);
    assert_eq!(limitation(&summary, "unclosed_frame"), 0);
    let t = totals(&sink);
    let by_name = |m: &str| -> BTreeMap<String, i64> {
        t[m].iter().map(|(k, v)| (k.0.clone(), v.0)).collect()
    };
    // a: [0,1); b under a: [1,3); b: [5,5] closed out of order → 0.
    assert_eq!(
        by_name("trace.wall_units"),
        BTreeMap::from([("a".into(), 1), ("b".into(), 2)])
    );

    let evs = json!([{"type": "O", "frame": 0, "at": 0.5}, {"type": "O", "frame": 1, "at": 1.25}]);
    let (summary, sink) = extract(doc("seconds", evs, 2.0).as_bytes()).unwrap();
    assert_eq!(limitation(&summary, "unclosed_frame"), 2);
    let t = totals(&sink);
    assert_eq!(sum_self(&t, "trace.wall_ns"), 1_500_000_000);

    let evs = json!([{"type": "O", "frame": 7, "at": 0}, {"type": "X", "frame": 0, "at": 1},
                     {"type": "C", "frame": 7, "at": 2}]);
    let (summary, sink) = extract(doc("bytes", evs, 2.0).as_bytes()).unwrap();
    assert_eq!(limitation(&summary, "frame_index_out_of_range"), 1);
    assert_eq!(limitation(&summary, "unknown_event_type"), 1);
    assert_eq!(sum_self(&totals(&sink), "memory.alloc_bytes"), 2);
}

fn sampled(unit: &str, samples: Value, weights: Value) -> String {
    json!({"shared": {"frames": [{"name": "a", "file": "a.py", "line": 1}, {"name": "b"}]},
           "profiles": [{"type": "sampled", "name": "Thread 7 \"w\"", "unit": unit,
                         "startValue": 0, "endValue": 1, "samples": samples, "weights": weights}]})
    .to_string()
}

#[test]
fn sampled_units_and_bad_frame_indices() {
    let (summary, sink) =
        extract(sampled("bytes", json!([[0, 1], [0]]), json!([100, 28])).as_bytes()).unwrap();
    let t = totals(&sink);
    assert_eq!(t.keys().collect::<Vec<_>>(), ["memory.alloc_bytes"]);
    assert_eq!(sum_self(&t, "memory.alloc_bytes"), 128);
    assert!(summary.limitations.is_empty());

    let (_, sink) =
        extract(sampled("none", json!([[0, 1], [0]]), json!([3, 2])).as_bytes()).unwrap();
    let t = totals(&sink);
    assert_eq!(t.keys().collect::<Vec<_>>(), ["cpu.samples"]);
    assert_eq!(
        t["cpu.samples"][&("a".into(), Some("a.py".into()), Some(1))],
        (2, 5)
    );

    // Out-of-range and negative indices keep their weight on a placeholder.
    let (summary, sink) = extract(
        sampled(
            "microseconds",
            json!([[0, 9], [-1], [], [1]]),
            json!([1.5, 2, 3, 4]),
        )
        .as_bytes(),
    )
    .unwrap();
    assert_eq!(limitation(&summary, "frame_index_out_of_range"), 2);
    let t = totals(&sink);
    assert_eq!(sum_self(&t, "cpu.time_ns"), 10_500);
    assert_eq!(sum_self(&t, "cpu.samples"), 4);
    let invalid = t["cpu.time_ns"][&("[invalid frame index]".into(), None, None)];
    assert_eq!(invalid, (3_500, 3_500));
    assert_eq!(
        t["cpu.time_ns"][&("[no frames]".into(), None, None)].0,
        3_000
    );

    // Weights missing for some samples; a negative weight; an unknown unit.
    let (summary, sink) =
        extract(sampled("seconds", json!([[0], [1], [0]]), json!([1, -1])).as_bytes()).unwrap();
    assert_eq!(limitation(&summary, "weights_length_mismatch"), 1);
    assert_eq!(limitation(&summary, "negative_weight"), 1);
    let t = totals(&sink);
    assert_eq!(sum_self(&t, "cpu.samples"), 3);
    assert_eq!(sum_self(&t, "cpu.time_ns"), 1_000_000_000);
    let (summary, _) = extract(sampled("furlongs", json!([[0]]), json!([1])).as_bytes()).unwrap();
    assert_eq!(limitation(&summary, "unknown_unit"), 1);
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
    parse_err(b"not json");
    parse_err(b"[]");
    parse_err(br#"{"shared": {"frames": []}, "profiles": []}"#);
    parse_err(br#"{"shared": {"frames": [{"name": "a"}]}}"#);
    parse_err(br#"{"shared": {"frames": []}, "profiles": [{"type": "sampled", "unit": "none", "samples": [], "weights": []}]}"#);
    parse_err(br#"{"profiles": [{"type": "sampled", "samples": [[0.5]], "weights": [1]}]}"#);
    parse_err(br#"{"profiles": [{"type": "mystery"}]}"#);
    // Truncated anywhere: never a panic, never a partial success.
    let bytes = std::fs::read(corpus("stacks/pyspy_workload.speedscope.json")).unwrap();
    let step = bytes.len() / 40;
    for cut in (1..bytes.len() - 1).step_by(step) {
        parse_err(&bytes[..cut]);
    }
    // Trailing garbage after the document.
    let mut extra = bytes.clone();
    extra.extend_from_slice(b"\n{}");
    parse_err(&extra);
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn cancellation_stops_the_read() {
    struct Cancel(std::sync::atomic::AtomicU32);
    impl ExtractObserver for Cancel {
        fn cancelled(&self) -> bool {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            true
        }
    }
    let bytes = std::fs::read(corpus("stacks/pyspy_workload.speedscope.json")).unwrap();
    let observer = Cancel(std::sync::atomic::AtomicU32::new(0));
    let mut sink = MemorySink::default();
    let r = extract_speedscope(&bytes[..], &options(), &mut sink, &observer);
    assert!(matches!(r, Err(ExtractError::Cancelled)), "{r:?}");
    assert!(observer.0.load(std::sync::atomic::Ordering::SeqCst) > 0);
    assert_eq!(sink.rows(T::Frames), 0);
}
