//! Shared by the extraction benches (included with `mod common;`): a sink
//! that only counts rows, and the two bench ids every extraction group
//! reports — `<id>_bytes_per_s` (criterion `Throughput::Bytes`) and
//! `<id>_events_per_s` (`Throughput::Elements`, input events).

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use flameox_extractors::EvidenceTable;
use flameox_extractors::api::{BatchSink, SinkError};

/// Counts the rows written, so the extraction work is not optimized away.
pub struct CountingSink(pub u64);

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

/// Benches `extract` under `group` twice: per input byte and per input
/// event. Warm-up is 1 s (not criterion's 3 s) so every bench binary stays
/// under 30 s in `--quick` mode on the dev profile.
pub fn bench_bytes_and_events<R>(
    c: &mut Criterion,
    group: &str,
    id: &str,
    (bytes, events): (u64, u64),
    mut extract: impl FnMut() -> R,
) {
    let mut g = c.benchmark_group(group);
    g.sample_size(10);
    g.warm_up_time(Duration::from_secs(1));
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function(format!("{id}_bytes_per_s"), |b| {
        b.iter(|| black_box(extract()))
    });
    g.throughput(Throughput::Elements(events));
    g.bench_function(format!("{id}_events_per_s"), |b| {
        b.iter(|| black_box(extract()))
    });
    g.finish();
}
