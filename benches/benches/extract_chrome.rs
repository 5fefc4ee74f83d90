//! Extraction throughput of the Chrome/Kineto JSON extractor (bytes/s via
//! criterion throughput) over a seeded generated trace. Query latency is
//! `benches/queries.rs`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use flameox_benches::kineto::{KinetoSpec, write_kineto};
use flameox_extractors::api::{BatchSink, SinkError};
use flameox_extractors::{EvidenceTable, ExtractOptions, NoObserver, extract_chrome_json};

struct CountingSink(u64);
impl BatchSink for CountingSink {
    fn write_batch(
        &mut self,
        _t: EvidenceTable,
        b: arrow::record_batch::RecordBatch,
    ) -> Result<(), SinkError> {
        self.0 += b.num_rows() as u64;
        Ok(())
    }
}

fn sample(events: u64) -> Vec<u8> {
    let mut bytes = Vec::new();
    write_kineto(
        &KinetoSpec {
            ops_per_step: 0,
            seed: 11,
            events,
            streams: 4,
        },
        &mut bytes,
    )
    .expect("generate");
    bytes
}

fn extraction(c: &mut Criterion) {
    let bytes = sample(100_000);
    let mut group = c.benchmark_group("extract_chrome_json");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("kineto_100k_events", |b| {
        b.iter(|| {
            let mut sink = CountingSink(0);
            let options = ExtractOptions::new("run", "sha256:bench");
            let summary =
                extract_chrome_json(&bytes[..], &options, &mut sink, &NoObserver).expect("extract");
            black_box((summary.input_events, sink.0))
        })
    });
    group.finish();
}

criterion_group!(benches, extraction);
criterion_main!(benches);
