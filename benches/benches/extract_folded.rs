//! Extraction throughput of the folded-stacks extractor (bytes/s and
//! events/s = stack lines/s) over seeded generated `stackcollapse-perf`-
//! shaped input.

mod common;

use common::{CountingSink, bench_bytes_and_events};
use criterion::{Criterion, criterion_group, criterion_main};
use flameox_benches::folded::{FoldedSpec, write_folded};
use flameox_extractors::{ExtractOptions, NoObserver, extract_folded_stacks};

fn extraction(c: &mut Criterion) {
    let mut bytes = Vec::new();
    let spec = FoldedSpec {
        seed: 11,
        stacks: 10_000,
        roots: 8,
        max_depth: 40,
    };
    let counts = write_folded(&spec, &mut bytes).expect("generate");
    bench_bytes_and_events(
        c,
        "extract_folded_stacks",
        "perf_10k_stacks",
        (counts.bytes, counts.lines),
        || {
            let mut sink = CountingSink(0);
            let options = ExtractOptions::new("run", "sha256:bench");
            let summary = extract_folded_stacks(&bytes[..], &options, &mut sink, &NoObserver)
                .expect("extract");
            (summary.input_events, sink.0)
        },
    );
}

criterion_group!(benches, extraction);
criterion_main!(benches);
