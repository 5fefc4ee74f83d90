//! The Gecko profile extractor on the Firefox 59 DevTools recording, checked
//! against self and inclusive values computed here by walking the
//! `{schema, data}` tables of a `serde_json::Value` (a different code path
//! from the extractor's typed reader), plus hand-written edge cases:
//! prefix cycles, bad indices, reordered schemas, `(root)`, sub-processes,
//! and inputs that are not Gecko profiles.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;
use flameox_extractors::{
    EvidenceTable as T, ExtractError, ExtractObserver, ExtractionSummary, NoObserver,
    extract_gecko_profile,
};
use serde_json::{Value, json};

type Key = (String, Option<String>, Option<i64>);
/// metric → frame → (self, inclusive).
type Totals = BTreeMap<String, BTreeMap<Key, (i64, i64)>>;

const RECORDING: &str = "stacks/speedscope_firefox59_devtools_recording.json";

fn extract(bytes: &[u8]) -> Result<(ExtractionSummary, MemorySink), ExtractError> {
    let mut sink = MemorySink::default();
    let summary = extract_gecko_profile(bytes, &options(), &mut sink, &NoObserver)?;
    Ok((summary, sink))
}

fn extract_value(doc: &Value) -> (ExtractionSummary, MemorySink) {
    extract(doc.to_string().as_bytes()).unwrap()
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

fn sum_self(t: &Totals, metric: &str) -> i64 {
    t.get(metric).map_or(0, |m| m.values().map(|v| v.0).sum())
}

fn by_name(t: &Totals, metric: &str) -> BTreeMap<String, (i64, i64)> {
    let mut out = BTreeMap::new();
    for (k, v) in &t[metric] {
        let e: &mut (i64, i64) = out.entry(k.0.clone()).or_default();
        e.0 += v.0;
        e.1 += v.1;
    }
    out
}

/// The column of `name` in a `{schema, data}` table.
fn col(table: &Value, name: &str) -> usize {
    table["schema"][name].as_u64().unwrap() as usize
}

/// A location string read the simple way the corpus file needs:
/// `name (chain -> url:line)`, `url:line`, or a label.
fn key_of(location: &str) -> Key {
    if let Some(body) = location.strip_suffix(')')
        && let Some(open) = body.rfind(" (")
    {
        let inner = body[open + 2..].split(" -> ").last().unwrap();
        let (file, line) = inner.rsplit_once(':').unwrap();
        return (
            body[..open].to_owned(),
            Some(file.to_owned()),
            Some(line.parse().unwrap()),
        );
    }
    if location.starts_with("file://") {
        let (file, line) = location.rsplit_once(':').unwrap();
        return (
            format!("(root scope) {file}"),
            Some(file.to_owned()),
            Some(line.parse().unwrap()),
        );
    }
    (location.to_owned(), None, None)
}

/// The model of one profile: per thread (tid), its sample count; and per
/// metric the self/inclusive values per frame. A sample's stack is the
/// prefix chain from its stack row, with the outermost `(root)` dropped; it
/// lasts until the thread's next sample (the last: `meta.interval`).
fn model(profile: &Value) -> (BTreeMap<i64, usize>, Totals) {
    let interval_ns = (profile["meta"]["interval"].as_f64().unwrap() * 1e6).round() as i64;
    let mut per_thread = BTreeMap::new();
    let mut out = Totals::new();
    for t in profile["threads"].as_array().unwrap() {
        let samples = &t["samples"];
        let (s_stack, s_time) = (col(samples, "stack"), col(samples, "time"));
        let stacks = &t["stackTable"];
        let (prefix, frame) = (col(stacks, "prefix"), col(stacks, "frame"));
        let frames = &t["frameTable"];
        let location = col(frames, "location");
        let strings = t["stringTable"].as_array().unwrap();
        let rows = samples["data"].as_array().unwrap();
        per_thread.insert(t["tid"].as_i64().unwrap(), rows.len());
        let mut timed: Vec<(i64, Vec<Key>)> = Vec::new();
        for row in rows {
            let mut chain = Vec::new();
            let mut s = row[s_stack].as_u64();
            while let Some(i) = s {
                let st = &stacks["data"][i as usize];
                let f = &frames["data"][st[frame].as_u64().unwrap() as usize];
                let text = strings[f[location].as_u64().unwrap() as usize]
                    .as_str()
                    .unwrap();
                chain.push(text.to_owned());
                s = st[prefix].as_u64();
            }
            chain.reverse();
            if chain.first().map(String::as_str) == Some("(root)") && chain.len() > 1 {
                chain.remove(0);
            }
            let keys: Vec<Key> = chain.iter().map(|l| key_of(l)).collect();
            let ns = (row[s_time].as_f64().unwrap() * 1e6).round() as i64;
            timed.push((ns, keys));
        }
        timed.sort_by_key(|s| s.0);
        for (k, (ns, keys)) in timed.iter().enumerate() {
            let dur = timed.get(k + 1).map_or(interval_ns, |n| n.0 - ns);
            for (metric, v) in [("cpu.samples", 1), ("cpu.time_ns", dur)] {
                let m = out.entry(metric.to_owned()).or_default();
                m.entry(keys.last().unwrap().clone()).or_default().0 += v;
                for f in keys.iter().collect::<BTreeSet<_>>() {
                    m.entry(f.clone()).or_default().1 += v;
                }
            }
        }
    }
    (per_thread, out)
}

fn top(t: &Totals, metric: &str) -> (Key, i64) {
    t[metric]
        .iter()
        .max_by_key(|(k, v)| (v.0, std::cmp::Reverse((*k).clone())))
        .map(|(k, v)| (k.clone(), v.0))
        .unwrap()
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn firefox_recording_matches_an_independent_table_walk() {
    let bytes = std::fs::read(corpus(RECORDING)).unwrap();
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    let (per_thread, expected) = model(&doc["profile"]);
    let (summary, sink) = extract(&bytes).unwrap();
    assert_eq!(summary.format, "gecko_profile");
    assert_eq!(summary.producer, "firefox");
    assert!(summary.limitations.is_empty(), "{:?}", summary.limitations);
    assert_eq!(summary.metadata["wrapper"], "firefox_devtools_recording");
    let got = totals(&sink);
    assert_eq!(got, expected);

    // Samples per thread (cpu.samples rows carry the tid), and the total.
    let n: usize = per_thread.values().sum();
    assert_eq!(summary.input_events as usize, n);
    assert_eq!(sum_self(&got, "cpu.samples"), n as i64);
    let metric = sink.strs(T::Samples, "metric");
    let tid = sink.i64s(T::Samples, "tid");
    let ts = sink.i64s(T::Samples, "ts_ns");
    let mut counted: BTreeMap<i64, usize> = BTreeMap::new();
    for i in 0..metric.len() {
        if metric[i].as_deref() == Some("cpu.samples") {
            *counted.entry(tid[i].unwrap()).or_default() += 1;
        }
    }
    assert_eq!(counted, per_thread);
    assert!(summary.coverage["thread_identity"]);

    // The top self frame (name and count), under both metrics.
    for m in ["cpu.samples", "cpu.time_ns"] {
        assert_eq!(top(&got, m), top(&expected, m), "{m}");
    }
    let ((name, file, line), count) = top(&got, "cpu.samples");
    assert_eq!(
        (name.as_str(), line, count),
        ("d", Some(20), 32),
        "{file:?}"
    );

    // Timestamps are absolute: meta.startTime + time, in ns.
    let profile = &doc["profile"];
    let start_ms = profile["meta"]["startTime"].as_f64().unwrap();
    let first_ms = profile["threads"][0]["samples"]["data"][0][1]
        .as_f64()
        .unwrap();
    let first = ts.iter().flatten().min().copied().unwrap();
    assert!(((start_ms + first_ms) * 1e6 - first as f64).abs() < 1_000.0);
    assert!(ts.iter().all(Option::is_some));
    let (span_start, span_end) = summary.time_span_ns.unwrap();
    assert_eq!(span_start, first);
    assert_eq!(span_end - span_start, sum_self(&got, "cpu.time_ns"));

    // Languages: JavaScript where a url was parsed, native otherwise; no
    // `(root)` survives, and every stack has a JS or label frame.
    let langs = sink.strs(T::Frames, "language");
    let files = sink.strs(T::Frames, "file");
    let functions = sink.strs(T::Frames, "function");
    for i in 0..langs.len() {
        let want = if files[i].is_some() {
            "javascript"
        } else {
            "native"
        };
        assert_eq!(langs[i].as_deref(), Some(want), "{:?}", functions[i]);
    }
    assert!(!functions.iter().flatten().any(|f| f == "(root)"));
    assert!(summary.coverage["source_locations"]);
    assert!(summary.coverage["symbolized_frames"]);
    assert!(summary.coverage["timestamps"]);
}

/// The bare profile (what the Gecko profiler hands out) gives the rows the
/// recording that wraps it gives.
#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_bare_profile_reads_like_its_devtools_wrapper() {
    let bytes = std::fs::read(corpus(RECORDING)).unwrap();
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    let (wrapped, a) = extract(&bytes).unwrap();
    let (bare, b) = extract_value(&doc["profile"]);
    assert_eq!(totals(&a), totals(&b));
    assert_eq!(wrapped.rows, bare.rows);
    assert!(!bare.metadata.contains_key("wrapper"));
}

/// A one-thread profile; `stacks` rows are `[prefix, frame]`, `frames`
/// location strings, `samples` `[stack, time]`.
fn profile(strings: &[&str], stacks: Value, samples: Value) -> Value {
    let frames: Vec<Value> = (0..strings.len()).map(|i| json!([i])).collect();
    json!({
        "meta": {"startTime": 1000, "interval": 1, "version": 9},
        "threads": [{
            "name": "GeckoMain", "tid": 11, "pid": 7, "processName": "Parent Process",
            "samples": {"schema": {"stack": 0, "time": 1}, "data": samples},
            "stackTable": {"schema": {"prefix": 0, "frame": 1}, "data": stacks},
            "frameTable": {"schema": {"location": 0, "line": 1}, "data": frames},
            "stringTable": strings,
            "markers": {"schema": {"name": 0, "time": 1, "data": 2}, "data": [[0, 1, {"type": "x"}]]}
        }]
    })
}

#[test]
fn prefix_cycles_and_bad_indices_are_limitations() {
    // Stacks 0 ↔ 1 point at each other; 2 is its own prefix; 3 names a
    // frame that does not exist; 4 a prefix that does not exist.
    let doc = profile(
        &["a", "b"],
        json!([[1, 0], [0, 1], [2, 0], [null, 9], [99, 1]]),
        json!([
            [0, 0],
            [1, 1],
            [2, 2],
            [3, 3],
            [4, 4],
            [null, 5],
            [50, 6],
            [-1, 7]
        ]),
    );
    let (summary, sink) = extract_value(&doc);
    assert_eq!(limitation(&summary, "stack_prefix_cycle"), 2);
    assert_eq!(limitation(&summary, "frame_index_out_of_range"), 1);
    assert_eq!(limitation(&summary, "stack_prefix_out_of_range"), 1);
    assert_eq!(limitation(&summary, "stack_index_out_of_range"), 2);
    let t = totals(&sink);
    assert_eq!(sum_self(&t, "cpu.samples"), 8);
    assert_eq!(sum_self(&t, "cpu.time_ns"), 8_000_000);
    let s = by_name(&t, "cpu.samples");
    // Resolving stack 0 first: 0 → 1 → back to 0, cut at 1 (root b), so
    // 0 = b;a and 1 = b.
    assert_eq!(s["a"].0, 2);
    assert_eq!(s["b"].0, 2);
    assert_eq!(s["[invalid frame index]"], (1, 1));
    assert_eq!(s["[no frames]"], (1, 1));
    assert_eq!(s["[invalid stack index]"], (2, 2));
}

#[test]
fn root_label_is_dropped_and_schemas_are_read_by_name() {
    let strings = ["(root)", "main", "work (https://x/app.js:3:9)", "0x1234"];
    let doc = profile(
        &strings,
        json!([[null, 0], [0, 1], [1, 2], [2, 3]]),
        json!([[2, 0.5], [3, 1.75], [0, 2.0], [1, 4]]),
    );
    let (summary, sink) = extract_value(&doc);
    assert!(summary.limitations.is_empty(), "{:?}", summary.limitations);
    let t = totals(&sink);
    let s = by_name(&t, "cpu.time_ns");
    // Durations: 1.25 ms, 0.25 ms, 2 ms, then the interval (1 ms).
    assert_eq!(s["work"], (1_250_000, 1_500_000));
    assert_eq!(s["0x1234"], (250_000, 250_000));
    assert_eq!(s["(root)"], (2_000_000, 2_000_000));
    assert_eq!(s["main"], (1_000_000, 2_500_000));
    assert!(!summary.coverage["symbolized_frames"]);
    // main is a root: the stack under `(root)` starts there.
    let parents = sink.i64s(T::StackNodes, "parent_stack_id");
    let depth = sink.i64s(T::StackNodes, "depth");
    assert_eq!(parents.iter().filter(|p| p.is_none()).count(), 2);
    assert_eq!(depth.iter().flatten().max(), Some(&2));

    // The same profile with every schema's columns in another order.
    let mut moved = doc.clone();
    let thread = &mut moved["threads"][0];
    thread["samples"] = json!({"data": [[0.5, 2], [1.75, 3], [2.0, 0], [4, 1]],
                               "schema": {"time": 0, "stack": 1}});
    thread["stackTable"] = json!({"schema": {"frame": 0, "prefix": 1},
                                  "data": [[0, null], [1, 0], [2, 1], [3, 2]]});
    thread["frameTable"] = json!({"schema": {"line": 0, "location": 1},
                                  "data": [[null, 0], [null, 1], [4, 2], [null, 3]]});
    let (_, moved_sink) = extract_value(&moved);
    assert_eq!(totals(&moved_sink), t);
}

#[test]
fn thread_identity_addresses_and_libs() {
    let mut doc = profile(
        &["0x7f0000001000", "start (in libc.so.6) + 12"],
        json!([[null, 1], [0, 0]]),
        json!([[1, 0], [1, 1]]),
    );
    doc["libs"] =
        json!([{"start": 0x7f00_0000_0000_i64, "end": 0x7f00_0001_0000_i64, "name": "libxul.so"}]);
    let (summary, sink) = extract_value(&doc);
    assert!(summary.limitations.is_empty(), "{:?}", summary.limitations);
    let functions = sink.strs(T::Frames, "function");
    let modules = sink.strs(T::Frames, "module");
    let languages = sink.strs(T::Frames, "language");
    let got: BTreeSet<(Option<String>, Option<String>)> =
        functions.into_iter().zip(modules).collect();
    assert_eq!(
        got,
        BTreeSet::from([
            (Some("0x7f0000001000".into()), Some("libxul.so".into())),
            (Some("start".into()), Some("libc.so.6".into())),
        ])
    );
    assert!(languages.iter().all(|l| l.as_deref() == Some("native")));
    let names: BTreeSet<_> = sink
        .strs(T::FrameTotals, "thread_name")
        .into_iter()
        .chain(sink.strs(T::FrameTotals, "process_name"))
        .flatten()
        .collect();
    assert_eq!(
        names,
        BTreeSet::from(["GeckoMain".into(), "Parent Process".into()])
    );
    let pids: BTreeSet<_> = sink.i64s(T::Samples, "pid").into_iter().collect();
    assert_eq!(pids, BTreeSet::from([Some(7)]));
}

#[test]
fn missing_times_and_out_of_order_samples_are_rules() {
    // Times going backwards are put in order first.
    let doc = profile(
        &["a", "b"],
        json!([[null, 0], [null, 1]]),
        json!([[0, 5], [1, 2]]),
    );
    let (summary, sink) = extract_value(&doc);
    assert_eq!(limitation(&summary, "samples_out_of_order"), 1);
    let s = by_name(&totals(&sink), "cpu.time_ns");
    assert_eq!((s["b"].0, s["a"].0), (3_000_000, 1_000_000));

    // No time column: counts only.
    let mut doc = profile(&["a"], json!([[null, 0]]), json!([[0], [0]]));
    doc["threads"][0]["samples"]["schema"] = json!({"stack": 0});
    let (summary, sink) = extract_value(&doc);
    assert_eq!(limitation(&summary, "no_sample_times"), 1);
    let t = totals(&sink);
    assert_eq!(sum_self(&t, "cpu.samples"), 2);
    assert_eq!(sum_self(&t, "cpu.time_ns"), 0);
    assert!(!summary.coverage["timestamps"]);

    // No interval: the last sample lasts 0.
    let mut doc = profile(&["a"], json!([[null, 0]]), json!([[0, 0], [0, 2]]));
    doc["meta"] = json!({"startTime": 0});
    let (summary, sink) = extract_value(&doc);
    assert_eq!(limitation(&summary, "no_interval"), 1);
    assert_eq!(sum_self(&totals(&sink), "cpu.time_ns"), 2_000_000);
}

/// Sub-processes nest as deep as JSON nesting allows; past that, `Parse`.
#[test]
fn nested_processes_are_walked_without_recursion() {
    let leaf = profile(&["a"], json!([[null, 0]]), json!([[0, 0]]));
    let nest = |depth: usize| {
        let mut doc = leaf.clone();
        for _ in 0..depth {
            let mut parent = leaf.clone();
            parent["processes"] = json!([doc]);
            doc = parent;
        }
        doc.to_string()
    };
    let (summary, sink) = extract(nest(40).as_bytes()).unwrap();
    assert_eq!(summary.metadata["processes"], 41);
    assert_eq!(sum_self(&totals(&sink), "cpu.samples"), 41);
    assert!(matches!(
        extract(nest(200).as_bytes()),
        Err(ExtractError::Parse { .. })
    ));
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn inputs_that_are_not_gecko_profiles_are_parse_errors() {
    let parse_err = |bytes: &[u8]| match extract(bytes) {
        Err(ExtractError::Parse { message, .. }) => message,
        other => panic!(
            "{:?}: {other:?}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(80)])
        ),
    };
    parse_err(b"");
    parse_err(b"not json");
    parse_err(b"[]");
    parse_err(br#"{"a": 1}"#);
    parse_err(br#"{"meta": {"interval": 1}, "threads": []}"#);
    // A thread without samples at all.
    parse_err(br#"{"meta": {"interval": 1}, "threads": [{"name": "x"}]}"#);
    for other in [
        "stacks/pyspy_workload.speedscope.json",
        "stacks/node20_work.cpuprofile",
    ] {
        parse_err(&std::fs::read(corpus(other)).unwrap());
    }
    let message = parse_err(br#"{"meta": {"preprocessedProfileVersion": 49}, "threads": []}"#);
    assert!(message.contains("processed"), "{message}");
    // Truncated anywhere: never a panic, never a partial success.
    let bytes = std::fs::read(corpus(RECORDING)).unwrap();
    let step = bytes.len() / 60;
    for cut in (1..bytes.len() - 1).step_by(step) {
        parse_err(&bytes[..cut]);
    }
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
    let bytes = std::fs::read(corpus(RECORDING)).unwrap();
    let observer = Cancel(std::sync::atomic::AtomicU32::new(0));
    let mut sink = MemorySink::default();
    let r = extract_gecko_profile(&bytes[..], &options(), &mut sink, &observer);
    assert!(matches!(r, Err(ExtractError::Cancelled)), "{r:?}");
    assert_eq!(sink.rows(T::Frames), 0);
}
