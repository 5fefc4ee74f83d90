//! A Perfetto trace read through spill runs lands what the in-memory path
//! lands: every batch of every table and the summary, for track events,
//! atrace and scheduling rows, counters and callstack samples, with
//! budgets small enough that slices stay open across runs and tracks are
//! described after their first events were spilled.

use std::path::Path;

use super::extract_perfetto_spilling;
use crate::api::{ExtractionSummary, NoObserver};
use crate::spill_compare::{Extracted, assert_every_event_spills_the_same, options};
use crate::stream_gaps::tests::Collect;

fn extract(bytes: &[u8], spill: Option<(&Path, usize)>) -> Extracted {
    let mut sink = Collect::default();
    let (summary, spilled) =
        extract_perfetto_spilling(bytes, &options(spill), &mut sink, &NoObserver).unwrap();
    (summary, sink, spilled)
}

fn assert_same_output(name: &str, bytes: &[u8], after: usize) -> ExtractionSummary {
    assert_every_event_spills_the_same(name, after, |spill| extract(bytes, spill)).0
}

fn corpus(name: &str) -> Vec<u8> {
    let path = Path::new(env!("FLAMEOX_CORPUS_DIR"))
        .join("perfetto")
        .join(name);
    std::fs::read(path).unwrap()
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn corpus_traces_land_the_same_rows_through_spill_runs() {
    for (name, afters) in [
        ("perfetto_pybuilder_trackevent.pftrace", &[1, 64, 1000][..]),
        ("tokio_tracing_perfetto_trackevent.pftrace", &[1, 7]),
        (
            "android_nowinandroid_atrace_frametimeline.perfetto-trace",
            &[3, 500],
        ),
        (
            "android_qoe_sched_binder_cpuidle.perfetto-trace",
            &[5, 4000],
        ),
        ("systing_sched_softirq_perfsamples.pb", &[2, 300]),
    ] {
        let bytes = corpus(name);
        for &after in afters {
            let summary = assert_same_output(name, &bytes, after);
            if name.starts_with("systing") {
                assert!(summary.coverage["scheduling"], "{name}");
                assert!(summary.coverage["callstack_samples"], "{name}");
            }
        }
    }
}
