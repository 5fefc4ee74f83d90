//! The pprof extractor on the Go profiles in the corpus, checked against an
//! independent decode (`pprof_wire`: a hand-written protobuf walker, no
//! prost), plus hand-built profiles for inlined frames and broken inputs.

mod common;
mod pprof_wire;

use std::collections::BTreeMap;
use std::io::{Read, Write};

use common::*;
use flameox_extractors::pprof::proto::{
    Function, Label, Line, Location, Mapping, Profile, Sample, ValueType,
};
use flameox_extractors::{
    EvidenceTable as T, ExtractError, ExtractObserver, ExtractionSummary, FormatKind, InputLimits,
    NoObserver, detect, extract_pprof, open_input,
};
use prost::Message;

fn extract(bytes: &[u8]) -> Result<(ExtractionSummary, MemorySink), ExtractError> {
    let mut sink = MemorySink::default();
    let summary = extract_pprof(bytes, &options(), &mut sink, &NoObserver)?;
    Ok((summary, sink))
}

fn gunzip(path: &std::path::Path) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// (self, inclusive) per (function, file, line) for one metric, summed over threads.
fn frame_values(sink: &MemorySink, metric: &str) -> BTreeMap<pprof_wire::FrameKey, (i64, i64)> {
    let metrics = sink.strs(T::FrameTotals, "metric");
    let functions = sink.strs(T::FrameTotals, "function");
    let files = sink.strs(T::FrameTotals, "file");
    let lines = sink.i64s(T::FrameTotals, "line");
    let selfs = sink.i64s(T::FrameTotals, "self_value");
    let incls = sink.i64s(T::FrameTotals, "inclusive_value");
    let mut out: BTreeMap<pprof_wire::FrameKey, (i64, i64)> = BTreeMap::new();
    for i in 0..metrics.len() {
        if metrics[i].as_deref() != Some(metric) {
            continue;
        }
        let key = (functions[i].clone().unwrap(), files[i].clone(), lines[i]);
        let e = out.entry(key).or_default();
        e.0 += selfs[i].unwrap();
        e.1 += incls[i].unwrap();
    }
    out.retain(|_, v| *v != (0, 0));
    out
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn corpus_profiles_match_an_independent_wire_decode() {
    for (rel, metrics) in [
        (
            "stacks/go1.19_cpu.pprof.pb.gz",
            &["cpu.samples", "cpu.time_ns"][..],
        ),
        (
            "stacks/go1.19_allocs.pprof.pb.gz",
            &[
                "memory.alloc_objects",
                "memory.alloc_bytes",
                "memory.inuse_objects",
                "memory.inuse_bytes",
            ][..],
        ),
    ] {
        let path = corpus(rel);
        let plain = gunzip(&path);
        let raw = pprof_wire::parse(&plain);
        assert_eq!(raw.sample_types.len(), metrics.len(), "{rel}");

        // Through the real input path (gzip-transparent).
        let input = open_input(&path, &InputLimits::default()).unwrap();
        assert!(input.is_gzip());
        let mut sink = MemorySink::default();
        let summary = extract_pprof(input, &options(), &mut sink, &NoObserver).unwrap();
        assert_eq!(summary.format, "pprof");
        assert_eq!(summary.producer, "go", "{rel}");
        assert_eq!(summary.input_bytes, plain.len() as u64);
        assert_eq!(summary.input_events, raw.samples.len() as u64);
        assert!(
            summary.limitations.is_empty(),
            "{rel}: {:?}",
            summary.limitations
        );
        assert!(summary.coverage["symbolized_frames"]);
        assert!(!summary.coverage["timestamps"]);
        if raw.time_nanos > 0 {
            assert_eq!(
                summary.time_span_ns,
                Some((raw.time_nanos, raw.time_nanos + raw.duration_nanos))
            );
        }
        for table in [
            T::Frames,
            T::StackNodes,
            T::Samples,
            T::FrameTotals,
            T::CallEdges,
        ] {
            assert_eq!(
                summary.rows[table.name()] as usize,
                sink.rows(table),
                "{rel}"
            );
        }
        assert!(sink.rows(T::CallEdges) > 0);
        assert!(
            sink.strs(T::Frames, "language")
                .iter()
                .all(|l| l.as_deref() == Some("go"))
        );
        assert!(sink.strs(T::Samples, "metric").iter().all(|m| m.is_some()));

        // The default metric: the sample type `default_sample_type` names,
        // else the last one (pprof's rule).
        let default_column = raw
            .sample_types
            .iter()
            .position(|(t, _)| *t == raw.default_sample_type)
            .unwrap_or(metrics.len() - 1);
        assert_eq!(
            summary.metadata["default_metric"], metrics[default_column],
            "{rel}"
        );

        let totals = raw.totals();
        let sample_metrics = sink.strs(T::Samples, "metric");
        let weights = sink.i64s(T::Samples, "weight");
        for (column, metric) in metrics.iter().enumerate() {
            let got: i64 = sample_metrics
                .iter()
                .zip(&weights)
                .filter(|(m, _)| m.as_deref() == Some(*metric))
                .map(|(_, w)| w.unwrap())
                .sum();
            assert_eq!(got, totals[column], "{rel} {metric}: Σ samples.weight");
            assert_eq!(summary.metadata["totals"][*metric], totals[column]);
            assert!(totals[column] > 0, "{rel} {metric}");

            let expected = raw.frame_values(column);
            let got = frame_values(&sink, metric);
            assert_eq!(got, expected, "{rel} {metric}: self/inclusive per frame");
            let top = |m: &BTreeMap<pprof_wire::FrameKey, (i64, i64)>| {
                m.iter()
                    .max_by_key(|(k, v)| (v.0, std::cmp::Reverse((*k).clone())))
                    .map(|(k, v)| (k.clone(), v.0))
            };
            assert_eq!(top(&got), top(&expected), "{rel} {metric}: top self frame");
        }
        if rel.contains("cpu") {
            // Go 1.19 writes inlined calls as several lines of one location.
            assert!(summary.coverage["inlined_frames"]);
            assert!(raw.locations.values().any(|l| l.lines.len() > 1));
        }
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn sample_counts_come_from_the_paired_count_column() {
    // `cpu` rows count the `samples` column; `alloc_space` rows count
    // `alloc_objects`, `inuse_space` rows `inuse_objects`.
    for (rel, pairs) in [
        (
            "stacks/go1.19_cpu.pprof.pb.gz",
            &[("cpu.time_ns", 0), ("cpu.samples", 0)][..],
        ),
        (
            "stacks/go1.19_allocs.pprof.pb.gz",
            &[("memory.alloc_bytes", 0), ("memory.inuse_bytes", 2)][..],
        ),
    ] {
        let plain = gunzip(&corpus(rel));
        let totals = pprof_wire::parse(&plain).totals();
        let (_, sink) = extract(&plain).unwrap();
        let metrics = sink.strs(T::Samples, "metric");
        let counts = sink.i64s(T::Samples, "count");
        for (metric, column) in pairs {
            let got: i64 = metrics
                .iter()
                .zip(&counts)
                .filter(|(m, _)| m.as_deref() == Some(*metric))
                .map(|(_, c)| c.unwrap())
                .sum();
            assert_eq!(got, totals[*column], "{rel} {metric}");
        }
    }
}

/// Strings for the hand-built profiles: index = position.
const STRINGS: [&str; 12] = [
    "",
    "samples",
    "count",
    "cpu",
    "nanoseconds",
    "inner",
    "middle",
    "outer",
    "main",
    "/src/app.c",
    "/usr/bin/app",
    "thread",
];

fn function(id: u64, name: i64) -> Function {
    Function {
        id,
        name,
        system_name: 0,
        filename: 9,
        start_line: 1,
    }
}

/// main → (outer ← middle ← inner inlined into one location), with two
/// sample types, the first one the default.
fn inlined_profile() -> Profile {
    let line = |function_id, line| Line { function_id, line };
    Profile {
        sample_type: vec![
            ValueType { r#type: 1, unit: 2 },
            ValueType { r#type: 3, unit: 4 },
        ],
        sample: vec![
            Sample {
                location_id: vec![1, 2],
                value: vec![5, 50],
                label: vec![Label {
                    key: 11,
                    str: 0,
                    num: 42,
                    num_unit: 0,
                }],
            },
            Sample {
                location_id: vec![2],
                value: vec![1, 10],
                label: vec![],
            },
        ],
        mapping: vec![Mapping {
            id: 1,
            filename: 10,
            ..Default::default()
        }],
        location: vec![
            Location {
                id: 1,
                mapping_id: 1,
                address: 0x1000,
                line: vec![line(1, 10), line(2, 20), line(3, 30)],
                is_folded: false,
            },
            Location {
                id: 2,
                mapping_id: 1,
                address: 0x2000,
                line: vec![line(4, 40)],
                is_folded: false,
            },
        ],
        function: vec![
            function(1, 5),
            function(2, 6),
            function(3, 7),
            function(4, 8),
        ],
        string_table: STRINGS.iter().map(|s| s.as_bytes().to_vec()).collect(),
        default_sample_type: 1,
        time_nanos: 1_000,
        duration_nanos: 500,
        ..Default::default()
    }
}

/// Function names from the root to the leaf of each sample row's stack.
fn sample_paths(sink: &MemorySink) -> Vec<(String, Vec<String>, i64)> {
    let functions = sink.strs(T::Frames, "function");
    let frame_ids = sink.i64s(T::Frames, "frame_id");
    let name_of: BTreeMap<i64, String> = frame_ids
        .iter()
        .zip(&functions)
        .map(|(id, f)| (id.unwrap(), f.clone().unwrap()))
        .collect();
    let stack_ids = sink.i64s(T::StackNodes, "stack_id");
    let parents = sink.i64s(T::StackNodes, "parent_stack_id");
    let frames = sink.i64s(T::StackNodes, "frame_id");
    let node: BTreeMap<i64, (Option<i64>, i64)> = stack_ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.unwrap(), (parents[i], frames[i].unwrap())))
        .collect();
    let mut out = Vec::new();
    let metrics = sink.strs(T::Samples, "metric");
    let weights = sink.i64s(T::Samples, "weight");
    for (i, leaf) in sink.i64s(T::Samples, "stack_id").iter().enumerate() {
        let mut path = Vec::new();
        let mut at = leaf.unwrap();
        loop {
            let (parent, frame) = node[&at];
            path.push(name_of[&frame].clone());
            match parent {
                Some(p) => at = p,
                None => break,
            }
        }
        path.reverse();
        out.push((metrics[i].clone().unwrap(), path, weights[i].unwrap()));
    }
    out.sort();
    out
}

#[test]
fn inlined_lines_expand_caller_first() {
    let bytes = inlined_profile().encode_to_vec();
    let (summary, sink) = extract(&bytes).unwrap();
    assert!(summary.limitations.is_empty(), "{:?}", summary.limitations);
    assert_eq!(summary.producer, "pprof");
    assert_eq!(summary.time_span_ns, Some((1_000, 1_500)));
    assert_eq!(summary.metadata["default_metric"], "cpu.samples");
    assert!(summary.coverage["thread_identity"]);
    assert!(summary.coverage["inlined_frames"]);
    let chain = ["main", "outer", "middle", "inner"]
        .map(String::from)
        .to_vec();
    assert_eq!(
        sample_paths(&sink),
        vec![
            ("cpu.samples".into(), chain[..1].to_vec(), 1),
            ("cpu.samples".into(), chain.clone(), 5),
            ("cpu.time_ns".into(), chain[..1].to_vec(), 10),
            ("cpu.time_ns".into(), chain.clone(), 50),
        ]
    );
    // Frame details: file from the function, line from the Line, module from
    // the mapping's basename; the tid label reaches samples.tid.
    let functions = sink.strs(T::Frames, "function");
    let i = functions
        .iter()
        .position(|f| f.as_deref() == Some("middle"))
        .unwrap();
    assert_eq!(
        sink.strs(T::Frames, "file")[i].as_deref(),
        Some("/src/app.c")
    );
    assert_eq!(sink.i64s(T::Frames, "line")[i], Some(20));
    assert_eq!(sink.strs(T::Frames, "module")[i].as_deref(), Some("app"));
    assert_eq!(
        sink.strs(T::Frames, "language")[i].as_deref(),
        Some("native")
    );
    let tids: Vec<_> = sink.i64s(T::Samples, "tid");
    assert!(tids.contains(&Some(42)) && tids.contains(&None), "{tids:?}");
    // Call edges follow the expanded order.
    let keys = sink.strs(T::Frames, "logical_key");
    let name_of: BTreeMap<String, String> = keys
        .iter()
        .zip(&functions)
        .map(|(k, f)| (k.clone().unwrap(), f.clone().unwrap()))
        .collect();
    let mut edges: Vec<(String, String)> = sink
        .strs(T::CallEdges, "parent_key")
        .iter()
        .zip(sink.strs(T::CallEdges, "child_key"))
        .zip(sink.strs(T::CallEdges, "metric"))
        .filter(|(_, m)| m.as_deref() == Some("cpu.samples"))
        .map(|((p, c), _)| {
            (
                name_of[p.as_ref().unwrap()].clone(),
                name_of[&c.unwrap()].clone(),
            )
        })
        .collect();
    edges.sort();
    assert_eq!(
        edges,
        vec![
            ("main".into(), "outer".into()),
            ("middle".into(), "inner".into()),
            ("outer".into(), "middle".into()),
        ]
    );
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_plain_profile_is_detected_and_decoded_like_the_gzipped_one() {
    let bytes = inlined_profile().encode_to_vec();
    assert_eq!(detect(&bytes, None).kind, FormatKind::Pprof);
    assert_eq!(detect(&bytes, Some("profile.pb")).kind, FormatKind::Pprof);
    let plain = gunzip(&corpus("stacks/go1.19_cpu.pprof.pb.gz"));
    let head = &plain[..plain.len().min(64 * 1024)];
    let d = detect(head, None);
    assert_eq!(d.kind, FormatKind::Pprof);
    assert_eq!(d.producer_hint, None, "the extractor names the producer");
    let (from_plain, _) = extract(&plain).unwrap();
    let input = open_input(
        &corpus("stacks/go1.19_cpu.pprof.pb.gz"),
        &InputLimits::default(),
    )
    .unwrap();
    let from_gzip =
        extract_pprof(input, &options(), &mut MemorySink::default(), &NoObserver).unwrap();
    assert_eq!(from_plain, from_gzip);
}

#[test]
fn dangling_references_are_limitations_not_failures() {
    let mut p = inlined_profile();
    // A sample pointing at location 99 (not declared) and a function whose
    // name is string 500 (out of range).
    p.sample.push(Sample {
        location_id: vec![99, 2],
        value: vec![7, 70],
        label: vec![],
    });
    p.function[0].name = 500;
    p.location[1].mapping_id = 9;
    let (summary, sink) = extract(&p.encode_to_vec()).unwrap();
    assert_eq!(limitation(&summary, "location_id_not_found"), 1);
    assert!(limitation(&summary, "string_index_out_of_range") >= 1);
    assert_eq!(limitation(&summary, "mapping_id_not_found"), 1);
    assert!(!summary.coverage["symbolized_frames"]);
    let paths = sample_paths(&sink);
    assert!(
        paths.contains(&(
            "cpu.samples".into(),
            vec!["main".into(), "[unknown location 99]".into()],
            7
        )),
        "{paths:?}"
    );
    // `inner` lost its name: its frame is named by the location's address.
    assert!(
        paths
            .iter()
            .any(|(_, path, _)| path.last().map(String::as_str) == Some("0x1000")),
        "{paths:?}"
    );
    let total: i64 = sink.i64s(T::Samples, "weight").iter().flatten().sum();
    assert_eq!(total, 5 + 1 + 7 + 50 + 10 + 70, "every value is kept");

    // Missing values, no locations, an unknown default sample type.
    let mut p = inlined_profile();
    p.sample = vec![Sample {
        location_id: vec![],
        value: vec![3],
        label: vec![],
    }];
    p.default_sample_type = 8;
    let (summary, sink) = extract(&p.encode_to_vec()).unwrap();
    assert_eq!(limitation(&summary, "value_count_mismatch"), 1);
    assert_eq!(limitation(&summary, "sample_without_locations"), 1);
    assert_eq!(limitation(&summary, "default_sample_type_not_found"), 1);
    assert_eq!(summary.metadata["default_metric"], "cpu.time_ns");
    assert_eq!(
        sink.strs(T::Frames, "function"),
        vec![Some("[no frames]".to_owned())]
    );
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn broken_inputs_are_typed() {
    let folded = std::fs::read(corpus("stacks/pyspy_workload.folded.txt")).unwrap();
    for bad in [
        &b""[..],
        b"hello world",
        b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
        &folded,
        // Valid protobuf, but not a profile: no sample types.
        b"\x48\x01",
    ] {
        match extract(bad) {
            Err(ExtractError::Parse { .. }) => {}
            other => panic!(
                "{:?}: {other:?}",
                String::from_utf8_lossy(&bad[..bad.len().min(20)])
            ),
        }
    }
    // A profile cut short is not a profile either.
    let bytes = inlined_profile().encode_to_vec();
    for cut in 1..bytes.len() {
        if let Ok((summary, _)) = extract(&bytes[..cut]) {
            // A cut on a field boundary can leave a smaller valid profile.
            assert_eq!(summary.format, "pprof");
        }
    }

    // Truncated gzip through the real input path: a typed parse error.
    let gz = std::fs::read(corpus("stacks/go1.19_cpu.pprof.pb.gz")).unwrap();
    let dir = std::env::temp_dir().join(format!("flameox-pprof-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cut.pb.gz");
    std::fs::File::create(&path)
        .unwrap()
        .write_all(&gz[..gz.len() / 2])
        .unwrap();
    let input = open_input(&path, &InputLimits::default()).unwrap();
    match extract_pprof(input, &options(), &mut MemorySink::default(), &NoObserver) {
        Err(ExtractError::Parse { message, offset }) => {
            assert!(message.contains("gzip"), "{message}");
            assert!(offset.is_some());
        }
        other => panic!("{other:?}"),
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn cancellation_stops_the_extraction() {
    struct Cancel;
    impl ExtractObserver for Cancel {
        fn cancelled(&self) -> bool {
            true
        }
    }
    let bytes = inlined_profile().encode_to_vec();
    let r = extract_pprof(&bytes[..], &options(), &mut MemorySink::default(), &Cancel);
    assert!(matches!(r, Err(ExtractError::Cancelled)), "{r:?}");
}
