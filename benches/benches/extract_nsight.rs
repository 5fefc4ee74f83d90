//! Extraction throughput of the Nsight Systems SQLite extractor (bytes/s
//! and events/s = CUPTI + NVTX rows/s) over a seeded generated export of a
//! PyTorch-shaped training process (kernels on several streams, runtime
//! launches, copies, memsets, syncs, NVTX step ranges, graph launches).

mod common;

use common::{CountingSink, bench_bytes_and_events};
use criterion::{Criterion, criterion_group, criterion_main};
use flameox_benches::nsight::{NsightSpec, write_nsight};
use flameox_extractors::{ExtractOptions, NoObserver, extract_nsight_sqlite};

fn extraction(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("report.sqlite");
    let spec = NsightSpec {
        seed: 11,
        events: 20_000,
        threads: 2,
        streams: 4,
        gpus: 2,
    };
    let counts = write_nsight(&spec, &path).expect("generate");
    bench_bytes_and_events(
        c,
        "extract_nsight_sqlite",
        "training_20k_rows",
        (counts.bytes, counts.events()),
        || {
            let mut sink = CountingSink(0);
            let options = ExtractOptions::new("run", "sha256:bench");
            let summary =
                extract_nsight_sqlite(&path, &options, &mut sink, &NoObserver).expect("extract");
            (summary.input_events, sink.0)
        },
    );
}

criterion_group!(benches, extraction);
criterion_main!(benches);
