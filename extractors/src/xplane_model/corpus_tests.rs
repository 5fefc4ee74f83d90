//! The decoder on the two XSpaces of the shared corpus, checked against
//! counts from Python's protobuf runtime, against the Chrome JSON export of
//! the same jax run, and against structural facts computed here.
//!
//! The expected numbers below come from this script (protobuf 7.36.2 in a
//! venv: `python3 -m venv /tmp/xplane-venv && /tmp/xplane-venv/bin/pip
//! install protobuf`), run as `python expect.py FILE.xplane.pb`; it declares
//! the xplane.proto subset it needs in text format and lets the protobuf
//! runtime parse the file:
//!
//! ```python
//! import sys
//! from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format
//! T = """name: "x.proto" package: "x" syntax: "proto3"
//! message_type { name: "S" field { name: "planes" number: 1 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".x.P" } }
//! message_type { name: "P" field { name: "id" number: 1 type: TYPE_INT64 } field { name: "name" number: 2 type: TYPE_STRING }
//!   field { name: "lines" number: 3 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".x.L" }
//!   field { name: "em" number: 4 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".x.E" }
//!   field { name: "sm" number: 5 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".x.E" }
//!   field { name: "stats" number: 6 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".x.St" } }
//! message_type { name: "E" field { name: "key" number: 1 type: TYPE_INT64 } field { name: "value" number: 2 type: TYPE_MESSAGE type_name: ".x.M" } }
//! message_type { name: "M" field { name: "id" number: 1 type: TYPE_INT64 } field { name: "name" number: 2 type: TYPE_STRING } }
//! message_type { name: "L" field { name: "id" number: 1 type: TYPE_INT64 } field { name: "name" number: 2 type: TYPE_STRING }
//!   field { name: "ts" number: 3 type: TYPE_INT64 } field { name: "ev" number: 4 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".x.Ev" } }
//! message_type { name: "Ev" field { name: "md" number: 1 type: TYPE_INT64 } field { name: "off" number: 2 type: TYPE_INT64 }
//!   field { name: "dur" number: 3 type: TYPE_INT64 } field { name: "stats" number: 4 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".x.St" } }
//! message_type { name: "St" field { name: "md" number: 1 type: TYPE_INT64 } }"""
//! fd = text_format.Parse(T, descriptor_pb2.FileDescriptorProto())
//! pool = descriptor_pool.DescriptorPool(); pool.Add(fd)
//! s = message_factory.GetMessageClass(pool.FindMessageTypeByName("x.S"))()
//! s.ParseFromString(open(sys.argv[1], "rb").read())
//! for p in s.planes:
//!     names = {e.key: e.value.name for e in p.em}
//!     nstats = len(p.stats) + sum(len(e.stats) for l in p.lines for e in l.ev)
//!     print(repr(p.name), len(p.em), len(p.sm), len(p.stats), nstats, [(l.name, len(l.ev)) for l in p.lines])
//!     for l in p.lines[:2]:
//!         e = l.ev[-1]; print("   last", repr(names[e.md][:40]), l.ts * 1000 + e.off, e.dur)
//! ```

use std::collections::{BTreeSet, HashMap};
use std::io::Read;
use std::path::Path;

use super::classify::{EventClass, PlaneClassifier};
use super::decode::decode_space;
use super::kinds::RuntimeCall;
use super::proto::{XEventData, XSpace};
use super::space::EventTiming;
use super::space::{Plane, Space};
use super::summary::SpaceSummary;

fn corpus(relative: &str) -> Vec<u8> {
    let path = Path::new(env!("FLAMEOX_CORPUS_DIR")).join(relative);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

const CPU_MLP: &str = "misc/jax0.10_cpu_mlp.xplane.pb";
const AMD_TE: &str = "misc/jax_te_fused_attn_934987a2fc2f.xplane.pb";

/// One plane as the script prints it: name, event metadata, stat
/// metadata, plane stats, plane + event stats, events per line.
type PlaneCounts = (
    &'static str,
    usize,
    usize,
    usize,
    usize,
    &'static [(&'static str, usize)],
);

fn plane_counts<'p>(
    plane: &'p Plane<'_>,
) -> (&'p str, usize, usize, usize, usize, Vec<(&'p str, usize)>) {
    let stats = plane.stats.len()
        + plane
            .lines
            .iter()
            .map(|l| l.event_stats.len())
            .sum::<usize>();
    let lines = plane
        .lines
        .iter()
        .map(|l| (&*l.name, l.events.len()))
        .collect();
    let (em, sm) = (plane.event_metadata.len(), plane.stat_metadata.len());
    (&plane.name, em, sm, plane.stats.len(), stats, lines)
}

fn assert_counts(space: &Space<'_>, want: &[PlaneCounts]) {
    assert_eq!(space.planes.len(), want.len());
    for (plane, want) in space.planes.iter().zip(want) {
        let got = plane_counts(plane);
        let want_lines: Vec<(&str, usize)> = want.5.to_vec();
        assert_eq!(
            (got.0, got.1, got.2, got.3, got.4),
            (want.0, want.1, want.2, want.3, want.4)
        );
        assert_eq!(got.5, want_lines, "{}", want.0);
    }
}

/// The last event of line `line` of `plane`: name, start in ps, duration.
fn last_event(space: &Space<'_>, plane: usize, line: usize) -> (String, i128, i64) {
    let p = &space.planes[plane];
    let e = p.lines[line].events.last().unwrap();
    let name: String = p.event_name(e).chars().take(40).collect();
    (name, e.start().unwrap().as_ps(), e.duration_ps)
}

/// Every line and event agrees with prost's whole-tree decode of the same
/// bytes (a second decoder with the same field numbers).
fn assert_agrees_with_prost(bytes: &[u8], space: &Space<'_>) {
    let reference = <XSpace as prost::Message>::decode(bytes).unwrap();
    assert_eq!(space.planes.len(), reference.planes.len());
    for (plane, want) in space.planes.iter().zip(&reference.planes) {
        assert_eq!((plane.id, &*plane.name), (want.id, want.name.as_str()));
        assert_eq!(plane.lines.len(), want.lines.len());
        for (line, want) in plane.lines.iter().zip(&want.lines) {
            assert_eq!((line.id, line.timestamp_ns), (want.id, want.timestamp_ns));
            assert_eq!(line.events.len(), want.events.len());
            for (event, want) in line.events.iter().zip(&want.events) {
                let data = match event.timing {
                    EventTiming::At { offset_ps, .. } => XEventData::OffsetPs(offset_ps),
                    EventTiming::Aggregated { num_occurrences } => {
                        XEventData::NumOccurrences(num_occurrences)
                    }
                };
                assert_eq!(data, want.data.unwrap_or(XEventData::OffsetPs(0)));
                assert_eq!(
                    (event.metadata_id, event.duration_ps),
                    (want.metadata_id, want.duration_ps)
                );
                assert_eq!(line.stats_of(event).len(), want.stats.len());
            }
        }
    }
}

/// Every event names existing metadata and every stat existing stat
/// metadata (references included).
fn assert_fully_resolved(space: &Space<'_>) {
    assert!(space.notes.is_empty(), "{:?}", space.notes);
    for plane in SpaceSummary::of(space).planes {
        assert_eq!(
            (plane.unresolved_stats, plane.dangling_refs),
            (0, 0),
            "{}",
            plane.name
        );
        for line in &plane.lines {
            assert_eq!(line.unresolved_events, 0, "{}", line.name);
            assert_eq!(line.aggregated, 0);
        }
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn jax_cpu_xspace_matches_python_and_its_chrome_export() {
    let bytes = corpus(CPU_MLP);
    let space = decode_space(&bytes).unwrap();
    assert_eq!(space.hostnames, ["vm"]);
    let cpu_lines: &[(&str, usize)] = &[
        ("python", 35531),
        ("tf_PjRtCompilerThreadPool/-4339106373087120291", 1696),
        ("tf_XLAEigen/-5900435218375633182", 618),
        ("tf_XLAEigen/-7732874309355775098", 609),
        ("tf_XLAPjRtCpuClient/-1135326011286456468", 1177),
        ("tf_XLAPjRtCpuClient/5454792239957580778", 1086),
        ("tf_xla-cpu-codegen/2268715835844895635", 385),
        ("tf_xla-cpu-codegen/2287935108372527435", 455),
    ];
    assert_counts(
        &space,
        &[
            ("/host:metadata", 25, 6, 4, 4, &[]),
            ("/host:CPU", 1007, 51, 1, 13168, cpu_lines),
            ("Task Environment", 0, 3, 3, 3, &[]),
        ],
    );
    let stop_trace = (
        "$profiler.py:271 stop_trace".into(),
        781_471_081_000,
        29_739_015_000,
    );
    assert_eq!(last_event(&space, 1, 0), stop_trace);
    let stop_region = ("ThreadpoolListener::StopRegion".into(), 632_320_895_000, 0);
    assert_eq!(last_event(&space, 1, 1), stop_region);
    assert_fully_resolved(&space);
    assert_agrees_with_prost(&bytes, &space);

    let cpu = &space.planes[1];
    let classes = SpaceSummary::of(&space).planes[1].classes();
    // Host events with a step_num stat are jax's StepTraceAnnotation
    // markers; with an hlo_op stat, XLA:CPU thunks.
    let with_stat = |name: &str| {
        let index = cpu.stat_metadata_named(name);
        let lines = cpu.lines.iter();
        lines
            .flat_map(|l| {
                l.events
                    .iter()
                    .filter(move |e| l.stats_of(e).iter().any(|s| s.metadata == index))
            })
            .count() as u64
    };
    assert_eq!(classes.get("step"), Some(&with_stat("step_num")));
    assert_eq!(classes.get("xla_op_on_host"), Some(&with_stat("hlo_op")));
    assert_eq!(classes.values().sum::<u64>(), 41557);
    compare_with_chrome_export(cpu);
}

/// The jax run's Chrome JSON export (`vm.trace.json.gz`), converted from
/// the same XSpace by the profiler. Its documented differences:
/// - only planes with lines become processes (`/host:metadata` and
///   `Task Environment` have none, so only `/host:CPU` is there);
/// - each line is a thread with a 32-bit tid (not the 64-bit line id),
///   named by the line's name in a `thread_name` record;
/// - `ts` is the event start in microseconds (to the nanosecond);
/// - a zero-duration event gets `dur` 1e-6 µs (1 ps), others the duration;
/// - `args` are the event's stats by name, without the internal flow and
///   root stats (`_p`, `_c`, `_pt`, `_ct`, `_r`) and `program_id`, and a
///   stat repeated on one event (`_src`) is one arg.
fn compare_with_chrome_export(cpu: &Plane<'_>) {
    let gz = corpus("chrome_json/jax0.10_cpu_mlp.trace.json.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(gz.as_slice())
        .read_to_string(&mut text)
        .unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let thread_names: HashMap<i64, &str> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| {
            (
                e["tid"].as_i64().unwrap(),
                e["args"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    // (start ns, name, duration ps, arg names) per thread name.
    type Row = (i64, String, i64, BTreeSet<String>);
    let mut by_thread: HashMap<&str, Vec<Row>> = HashMap::new();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        let thread = thread_names[&e["tid"].as_i64().unwrap()];
        let ts_ns = (e["ts"].as_f64().unwrap() * 1e3).round() as i64;
        let dur_ps = match (e["dur"].as_f64().unwrap() * 1e6).round() as i64 {
            1 => 0,
            ps => ps,
        };
        let args = e["args"]
            .as_object()
            .map(|a| a.keys().cloned().collect())
            .unwrap_or_default();
        let name = e["name"].as_str().unwrap().to_string();
        by_thread
            .entry(thread)
            .or_default()
            .push((ts_ns, name, dur_ps, args));
    }
    assert_eq!(by_thread.len(), cpu.lines.len());
    let hidden = ["_p", "_c", "_pt", "_ct", "_r", "program_id"];
    for line in &cpu.lines {
        let mut ours: Vec<Row> = line
            .events
            .iter()
            .map(|e| {
                let start = e.start().unwrap();
                assert_eq!(start.sub_ns_ps, 0);
                let stats = line.stats_of(e).iter().filter_map(|s| cpu.stat_name(s));
                let args = stats
                    .filter(|n| !hidden.contains(n))
                    .map(String::from)
                    .collect();
                (
                    start.ns,
                    cpu.event_display_name(e).to_string(),
                    e.duration_ps,
                    args,
                )
            })
            .collect();
        let mut theirs = by_thread.remove(&*line.name).unwrap();
        ours.sort();
        theirs.sort();
        assert_eq!(ours.len(), theirs.len(), "{}", line.name);
        assert!(
            ours == theirs,
            "{}: events differ from the Chrome export",
            line.name
        );
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn amd_gpu_xspace_matches_python_and_kernels_meet_their_launches() {
    let bytes = corpus(AMD_TE);
    let space = decode_space(&bytes).unwrap();
    let empty_gpu = |name| (name, 0, 1, 1, 1, &[][..]);
    assert_counts(
        &space,
        &[
            ("/host:metadata", 9, 1, 0, 0, &[]),
            ("/device:GPU:0", 19, 59, 7, 1042, &[("Stream #2", 150)]),
            empty_gpu("/device:GPU:1"),
            empty_gpu("/device:GPU:2"),
            empty_gpu("/device:GPU:3"),
            empty_gpu("/device:GPU:4"),
            empty_gpu("/device:GPU:5"),
            empty_gpu("/device:GPU:6"),
            empty_gpu("/device:GPU:7"),
            ("/device:CUSTOM:Megascale Trace", 1, 29, 1, 1, &[]),
            (
                "/host:CPU",
                54,
                53,
                0,
                1729,
                &[("Host Threads/7", 150), ("python3", 1692)],
            ),
            ("Task Environment", 0, 2, 2, 2, &[]),
        ],
    );
    let last_kernel = (
        "loop_reduce_fusion_3.kd".into(),
        9_729_455_088_000,
        34_681_000,
    );
    assert_eq!(last_event(&space, 1, 0), last_kernel);
    let last_launch = (
        "hipModuleLaunchKernel".into(),
        9_727_905_015_000,
        57_719_000,
    );
    assert_eq!(last_event(&space, 10, 0), last_launch);
    let stop_trace = (
        "$profiler.py:213 stop_trace".into(),
        9_729_558_441_000,
        2_885_087_000,
    );
    assert_eq!(last_event(&space, 10, 1), stop_trace);
    assert_fully_resolved(&space);
    assert_agrees_with_prost(&bytes, &space);
    let vendor = space.planes[1].plane_stat("device_vendor");
    assert_eq!(vendor.and_then(|v| v.as_text()), Some("AMD"));

    // Host runtime calls by correlation id: (start ps, call).
    let host = space.plane("/host:CPU").unwrap();
    let classifier = PlaneClassifier::new(host);
    let mut launches = HashMap::new();
    let mut calls: HashMap<RuntimeCall, usize> = HashMap::new();
    for line in &host.lines {
        for event in &line.events {
            let class = classifier
                .classify(line, classifier.line_kind(line), event)
                .class;
            if let EventClass::HostRuntimeCall {
                correlation_id,
                call,
            } = class
            {
                launches.insert(correlation_id, event.start().unwrap());
                *calls.entry(call).or_default() += 1;
            }
        }
    }
    // 75 hipModuleLaunchKernel + 50 hipLaunchKernel + 5 hipExtModuleLaunchKernel, 20 hipMemsetAsync.
    assert_eq!(calls.get(&RuntimeCall::KernelLaunch), Some(&130));
    assert_eq!(calls.get(&RuntimeCall::Memset), Some(&20));
    let gpu = &space.planes[1];
    let classifier = PlaneClassifier::new(gpu);
    let (mut kernels, mut matched) = (0, 0);
    for line in &gpu.lines {
        for event in &line.events {
            let c = classifier.classify(line, classifier.line_kind(line), event);
            let EventClass::DeviceKernel(activity) = c.class else {
                panic!("{:?} on a GPU stream", c.class);
            };
            assert_eq!(
                (activity.device_ordinal, activity.stream_id),
                (Some(0), Some(2))
            );
            assert!(c.hlo_module.is_some());
            kernels += 1;
            let launch = activity.correlation_id.and_then(|id| launches.get(&id));
            if let Some(launch) = launch {
                matched += 1;
                assert!(
                    *launch <= event.start().unwrap(),
                    "a kernel started before its launch"
                );
            }
        }
    }
    // Every kernel meets its launch: a 100% match rate.
    assert_eq!((kernels, matched), (150, 150));
}

/// A deterministic byte position generator (no rand dependency).
fn positions(len: usize, count: usize, seed: u64) -> impl Iterator<Item = usize> {
    let mut state = seed;
    (0..count).map(move |_| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as usize % len.max(1)
    })
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn damaged_corpus_files_never_panic() {
    for (file, rounds) in [(AMD_TE, 200), (CPU_MLP, 12)] {
        let bytes = corpus(file);
        let full = decode_space(&bytes).unwrap();
        let total: usize = full.planes.iter().map(Plane::event_count).sum();
        let events = |space: &Space<'_>| space.planes.iter().map(Plane::event_count).sum::<usize>();
        // Cut: every byte of the head, then spread over the file.
        let cuts = (0..256).chain((0..rounds).map(|i| i * bytes.len() / rounds));
        for cut in cuts {
            if let Ok(space) = decode_space(&bytes[..cut]) {
                assert!(events(&space) <= total, "{file} cut at {cut}");
            }
        }
        // Flip bits, zero 64-byte blocks.
        for (i, at) in positions(bytes.len(), rounds, 7).enumerate() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 1 << (i % 8);
            let _ = decode_space(&damaged);
            let end = (at + 64).min(bytes.len());
            damaged[at..end].fill(0);
            let _ = decode_space(&damaged);
        }
    }
}
