//! Extraction throughput of the Chrome/Kineto JSON extractor (bytes/s and
//! events/s via criterion throughput) and query latency of hotspots and trace-window
//! pages at several depths, over a seeded generated trace.

mod common;

use common::{CountingSink, bench_bytes_and_events};
use criterion::{Criterion, criterion_group, criterion_main};
use flameox_benches::kineto::{KinetoSpec, write_kineto};
use flameox_engine::Workspace;
use flameox_engine::services::QueryContext;
use flameox_engine::services::analyze::{
    HotspotsRequest, WindowRequest, analyze_hotspots, trace_window,
};
use flameox_engine::services::import::{ImportRequest, Quiet, import_artifact};
use flameox_extractors::{ExtractOptions, NoObserver, extract_chrome_json};

/// A generated trace and the number of JSON events in it.
fn sample(events: u64) -> (Vec<u8>, u64) {
    let mut bytes = Vec::new();
    let written = write_kineto(
        &KinetoSpec {
            ops_per_step: 0,
            seed: 11,
            events,
            streams: 4,
        },
        &mut bytes,
    )
    .expect("generate");
    (bytes, written)
}

fn extraction(c: &mut Criterion) {
    let (bytes, events) = sample(100_000);
    bench_bytes_and_events(
        c,
        "extract_chrome_json",
        "kineto_100k_events",
        (bytes.len() as u64, events),
        || {
            let mut sink = CountingSink(0);
            let options = ExtractOptions::new("run", "sha256:bench");
            let summary =
                extract_chrome_json(&bytes[..], &options, &mut sink, &NoObserver).expect("extract");
            (summary.input_events, sink.0)
        },
    );
}

fn queries(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = dir.path().join("trace.json");
    std::fs::write(&trace, sample(100_000).0).expect("write");
    let (ws, _) = Workspace::init(dir.path()).expect("init");
    let imported = import_artifact(
        &ws,
        &ImportRequest {
            path: trace,
            ..Default::default()
        },
        &Quiet,
    )
    .expect("import");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let qc = QueryContext::new(&ws);
    let mut group = c.benchmark_group("queries_100k_events");
    group.sample_size(10);
    // Short warm-up keeps this binary under 30 s in --quick mode.
    group.warm_up_time(std::time::Duration::from_secs(1));
    group.bench_function("hotspots_top100_fresh_session", |b| {
        let request = HotspotsRequest {
            target: imported.run_id.clone(),
            limit: Some(100),
            ..Default::default()
        };
        b.iter(|| {
            runtime
                .block_on(analyze_hotspots(&qc, &request))
                .expect("hotspots")
        })
    });
    let (start, end) = imported.time_span_ns.expect("span");
    for depth in [1u64, 100] {
        // Walk `depth - 1` pages first, then time the next page.
        let mut request = WindowRequest {
            target: imported.artifact_id.clone(),
            start_ns: start,
            end_ns: end + 1,
            limit: Some(100),
            ..Default::default()
        };
        for _ in 1..depth {
            let page = runtime.block_on(trace_window(&qc, &request)).expect("page");
            request.cursor = page.next_cursor;
        }
        group.bench_function(format!("trace_window_page_depth_{depth}"), |b| {
            b.iter(|| {
                runtime
                    .block_on(trace_window(&qc, &request))
                    .expect("window")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, extraction, queries);
criterion_main!(benches);
