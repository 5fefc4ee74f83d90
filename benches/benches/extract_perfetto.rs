//! Extraction throughput of the Perfetto protobuf extractor (bytes/s and
//! events/s = packets/s via criterion throughput) over a seeded generated SDK-shaped trace (track
//! events with interning over several sequences, counters, perf samples).

mod common;

use common::{CountingSink, bench_bytes_and_events};
use criterion::{Criterion, criterion_group, criterion_main};
use flameox_benches::perfetto::{PerfettoSpec, write_perfetto};
use flameox_extractors::{ExtractOptions, NoObserver, extract_perfetto};

fn extraction(c: &mut Criterion) {
    let mut bytes = Vec::new();
    let spec = PerfettoSpec {
        seed: 11,
        bytes: 8 << 20,
        threads: 4,
        samples_per_round: 4,
    };
    let (packets, written) = write_perfetto(&spec, &mut bytes).expect("generate");
    bench_bytes_and_events(
        c,
        "extract_perfetto",
        "sdk_shaped_8mib",
        (written, packets),
        || {
            let mut sink = CountingSink(0);
            let options = ExtractOptions::new("run", "sha256:bench");
            let summary =
                extract_perfetto(&bytes[..], &options, &mut sink, &NoObserver).expect("extract");
            (summary.input_events, sink.0)
        },
    );
}

criterion_group!(benches, extraction);
criterion_main!(benches);
