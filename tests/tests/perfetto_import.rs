//! Perfetto traces through the real binary: every corpus trace imports by
//! content detection; a trace recorded here by a real producer (the
//! `tracing-perfetto-file` crate, which interns names, writes clock
//! snapshots and sequence flags) gives consistent hotspots; a gzipped trace
//! imports the same as the plain one; and drill-downs work on samples and
//! scheduling.

use std::io::Write;

use flameox_tests::{Project, corpus};
use serde_json::Value;
use tracing_perfetto_file::{PerfettoLayer, SpanMode};
use tracing_subscriber::layer::SubscriberExt;

const LEAVES_PER_THREAD: u64 = 40;

/// Burns a little CPU so spans have measurable, distinct durations.
fn spin(iterations: u64) -> u64 {
    (0..iterations).fold(0u64, |a, i| a.wrapping_mul(31).wrapping_add(i))
}

/// Nested spans on two threads: request > parse > leaf.
fn workload(dispatch: &tracing::Dispatch) {
    let threads: Vec<_> = (0..2)
        .map(|t| {
            let dispatch = dispatch.clone();
            std::thread::spawn(move || {
                let _default = tracing::dispatcher::set_default(&dispatch);
                let mut sink = 0;
                for _ in 0..LEAVES_PER_THREAD / 4 {
                    let _request = tracing::info_span!("request", thread = t).entered();
                    sink ^= spin(20_000);
                    let _parse = tracing::info_span!("parse").entered();
                    for _ in 0..4 {
                        let _leaf = tracing::info_span!("leaf").entered();
                        sink ^= spin(50_000);
                    }
                }
                sink
            })
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
}

/// Records the workload with the real producer into `path`.
fn record(path: &std::path::Path) {
    let file = std::fs::File::create(path).expect("trace file");
    let (layer, guard) = PerfettoLayer::builder(file)
        .span_mode(SpanMode::ThreadTracks)
        .with_debug_annotations()
        .build();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    workload(&dispatch);
    drop(dispatch);
    guard.flush().expect("flush the trace");
}

fn all_hotspots(project: &Project, run: &str) -> (Vec<Value>, Value) {
    let hot = project.json(&["analyze", "hotspots", run, "--limit", "1000"]);
    assert!(hot["next_cursor"].is_null(), "one page holds them: {hot}");
    (hot["rows"].as_array().expect("rows").clone(), hot)
}

#[test]
fn a_real_producer_trace_gives_consistent_hotspots() {
    let project = Project::new();
    let trace = project.path().join("recorded.pftrace");
    record(&trace);
    let imported = project.json(&["import", trace.to_str().expect("utf-8")]);
    assert_eq!(imported["kind"], "perfetto_protobuf");
    let run = imported["run_id"].as_str().expect("run").to_owned();
    let (rows, hot) = all_hotspots(&project, &run);
    assert_eq!(hot["metric"], "trace.wall_ns");
    assert!(!rows.is_empty());
    let mut self_sum = 0;
    for r in &rows {
        let (s, i) = (r["self_value"].as_i64(), r["inclusive_value"].as_i64());
        assert!(s.is_some() && s <= i, "self ≤ inclusive: {r}");
        self_sum += s.unwrap_or(0);
    }
    assert_eq!(Some(self_sum), hot["total_self"].as_i64());
    let by_name = |name: &str| {
        rows.iter()
            .find(|r| r["function"] == name)
            .unwrap_or_else(|| panic!("{name} in {rows:?}"))
            .clone()
    };
    let (request, parse, leaf) = (by_name("request"), by_name("parse"), by_name("leaf"));
    assert_eq!(leaf["count"].as_u64(), Some(2 * LEAVES_PER_THREAD));
    assert_eq!(parse["count"].as_u64(), Some(2 * LEAVES_PER_THREAD / 4));
    let incl = |r: &Value| r["inclusive_value"].as_i64().unwrap_or(0);
    assert!(incl(&request) >= incl(&parse) && incl(&parse) >= incl(&leaf));
    // parse's callees are the leaves.
    let frame = parse["frame"].as_str().expect("frame");
    let callees = project.json(&["stacks", "callees", &run, frame, "--limit", "10"]);
    assert_eq!(callees["rows"][0]["function"], "leaf", "{callees}");
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn corpus_traces_import_and_answer_drilldowns() {
    let project = Project::new();
    let mut runs = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(corpus().join("perfetto")).expect("corpus") {
        let path = entry.expect("entry").path();
        let imported = project.json(&["import", path.to_str().expect("utf-8")]);
        assert_eq!(imported["kind"], "perfetto_protobuf", "{}", path.display());
        let name = path
            .file_name()
            .expect("name")
            .to_string_lossy()
            .to_string();
        runs.insert(name, imported["run_id"].as_str().expect("run").to_owned());
    }
    assert_eq!(runs.len(), 6);
    // systing's 355 perf samples are the cpu.samples total.
    let systing = &runs["systing_sched_softirq_perfsamples.pb"];
    let hot = project.json(&[
        "analyze",
        "hotspots",
        systing,
        "--metric",
        "cpu.samples",
        "--limit",
        "5",
    ]);
    assert_eq!(hot["total_self"].as_i64(), Some(355), "{hot}");
    // A window on the Android trace shows scheduling rows with their task.
    let android = &runs["android_qoe_sched_binder_cpuidle.perfetto-trace"];
    let window = project.json(&[
        "trace",
        "window",
        android,
        "--start-ns",
        "0",
        "--end-ns",
        "9223372036854775807",
        "--limit",
        "200",
    ]);
    let rows = window["events"].as_array().expect("events");
    assert!(
        rows.iter()
            .any(|r| r["kind"] == "sched_slice" && r["tid"].is_i64()),
        "{window}"
    );
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_gzipped_trace_imports_like_the_plain_one() {
    let project = Project::new();
    let plain = corpus().join("perfetto/perfetto_pybuilder_trackevent.pftrace");
    let bytes = std::fs::read(&plain).expect("corpus");
    let gz_path = project.path().join("builder.pftrace.gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&bytes).expect("gzip");
    std::fs::write(&gz_path, gz.finish().expect("gzip")).expect("write");
    let a = project.json(&["import", plain.to_str().expect("utf-8")]);
    let b = project.json(&["import", gz_path.to_str().expect("utf-8")]);
    assert_eq!(a["rows"], b["rows"]);
    assert_eq!(b["kind"], "perfetto_protobuf");
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn broken_perfetto_inputs_publish_nothing() {
    let project = Project::new();
    let good = std::fs::read(corpus().join("perfetto/tokio_tracing_perfetto_trackevent.pftrace"))
        .expect("corpus");
    let write = |name: &str, bytes: &[u8]| {
        let path = project.path().join(name);
        std::fs::write(&path, bytes).expect("write");
        path.to_string_lossy().into_owned()
    };
    let head = project.head();
    for (name, bytes) in [
        (
            "endless-varint.pftrace",
            &b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"[..],
        ),
        ("length-past-end.pftrace", b"\x0a\x7f\x40\x01"),
        ("wrong-wire-type.pftrace", b"\x0b\x01\x02"),
        ("cut-first-packet.pftrace", &good[..good.len().min(3)]),
    ] {
        let path = write(name, bytes);
        project.json_err(
            &["import", &path, "--kind", "perfetto_protobuf"],
            "ARTIFACT_PARSE_FAILED",
            5,
        );
        assert_eq!(project.head(), head, "HEAD moved after refusing {name}");
    }
    // Cut anywhere after the first packet: accepted, marked truncated.
    for cut in [good.len() / 3, good.len() / 2, good.len() - 1] {
        let path = write(&format!("cut-{cut}.pftrace"), &good[..cut]);
        let imported = project.json(&["import", &path, "--kind", "perfetto_protobuf"]);
        let codes: Vec<&str> = imported["limitations"]
            .as_array()
            .expect("limitations")
            .iter()
            .filter_map(|l| l["code"].as_str())
            .collect();
        assert!(codes.contains(&"truncated_input"), "cut {cut}: {codes:?}");
    }
}

/// An XSpace (`*.xplane.pb`) starts with field-1 records as a Perfetto
/// trace does; it was imported as "0 events, 0 tracks" (issue 48). It is
/// told apart and read as what it is (tests/tests/xplane_import.rs checks
/// what it holds).
#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn an_xspace_is_not_taken_for_a_perfetto_trace() {
    let project = Project::new();
    for name in [
        "jax0.10_cpu_mlp.xplane.pb",
        "jax_te_fused_attn_934987a2fc2f.xplane.pb",
    ] {
        std::fs::copy(corpus().join("misc").join(name), project.path().join(name)).expect("copy");
        let imported = project.json(&["import", name]);
        assert_eq!(imported["kind"], "xplane", "{imported}");
        assert!(
            imported["rows"]["trace_events"].as_u64().unwrap_or(0) > 0,
            "{imported}"
        );
    }
}
