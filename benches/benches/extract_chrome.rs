//! Extraction throughput of the Chrome/Kineto JSON extractor (bytes/s and
//! events/s via criterion throughput) over a seeded generated trace. Query
//! latency is `benches/queries.rs`.

mod common;

use common::{CountingSink, bench_bytes_and_events};
use criterion::{Criterion, criterion_group, criterion_main};
use flameox_benches::kineto::{KinetoSpec, write_kineto};
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

criterion_group!(benches, extraction);
criterion_main!(benches);
