//! Extraction throughput of the pprof extractor (bytes/s of the gzipped
//! file, gunzip included, and events/s = samples/s) over a seeded
//! generated Go-shaped CPU profile.

mod common;

use std::io::BufReader;

use common::{CountingSink, bench_bytes_and_events};
use criterion::{Criterion, criterion_group, criterion_main};
use flameox_benches::pprof::{PprofKind, PprofSpec, write_pprof};
use flameox_extractors::{ExtractOptions, NoObserver, extract_pprof};
use flate2::read::GzDecoder;

fn extraction(c: &mut Criterion) {
    let mut bytes = Vec::new();
    let spec = PprofSpec {
        seed: 11,
        kind: PprofKind::Cpu,
        samples: 20_000,
        max_depth: 40,
    };
    let counts = write_pprof(&spec, &mut bytes).expect("generate");
    bench_bytes_and_events(
        c,
        "extract_pprof",
        "go_cpu_20k_samples_gz",
        (counts.bytes, counts.samples),
        || {
            let mut sink = CountingSink(0);
            let options = ExtractOptions::new("run", "sha256:bench");
            let input = BufReader::new(GzDecoder::new(&bytes[..]));
            let summary = extract_pprof(input, &options, &mut sink, &NoObserver).expect("extract");
            (summary.input_events, sink.0)
        },
    );
}

criterion_group!(benches, extraction);
criterion_main!(benches);
