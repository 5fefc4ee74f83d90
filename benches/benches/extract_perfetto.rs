//! Extraction throughput of the Perfetto protobuf extractor (bytes/s via
//! criterion throughput) over a seeded generated SDK-shaped trace (track
//! events with interning over several sequences, counters, perf samples).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use flameox_benches::perfetto::{PerfettoSpec, write_perfetto};
use flameox_extractors::api::{BatchSink, SinkError};
use flameox_extractors::{EvidenceTable, ExtractOptions, NoObserver, extract_perfetto};

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

fn extraction(c: &mut Criterion) {
    let mut bytes = Vec::new();
    let spec = PerfettoSpec {
        seed: 11,
        bytes: 8 << 20,
        threads: 4,
        samples_per_round: 4,
    };
    write_perfetto(&spec, &mut bytes).expect("generate");
    let mut group = c.benchmark_group("extract_perfetto");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("sdk_shaped_8mib", |b| {
        b.iter(|| {
            let mut sink = CountingSink(0);
            let options = ExtractOptions::new("run", "sha256:bench");
            let summary =
                extract_perfetto(&bytes[..], &options, &mut sink, &NoObserver).expect("extract");
            black_box((summary.input_events, sink.0))
        })
    });
    group.finish();
}

criterion_group!(benches, extraction);
criterion_main!(benches);
