//! V8 CPU profiles (`.cpuprofile`): what `node --cpu-prof`, Chrome DevTools
//! "Save profile" and the inspector's `Profiler.stop` write.
//!
//! `{nodes: [{id, callFrame: {functionName, url, lineNumber, …}, hitCount,
//! children: [ids]}], startTime, endTime, samples: [nodeId], timeDeltas: [µs]}`.
//! The call tree is given by `children` (or by `parent`, as Chrome's trace
//! `ProfileChunk` nodes write it); each node is one stack. Rules, all
//! documented in `docs/extractors.md`:
//! - The synthetic tree root `(root)` is dropped, so `(program)`, `(idle)`,
//!   `(garbage collector)` and the real entry points are root frames, as in
//!   DevTools' bottom-up view. Those three are kept: they are real time.
//! - `cpu.samples`: one per entry of `samples`. `cpu.time_ns`: a sample lasts
//!   until the next sample (the next entry's `timeDelta`, as DevTools
//!   computes it); the last one lasts until `endTime`. Samples are put in
//!   time order first (V8 can emit negative deltas).
//! - `lineNumber` is 0-based in V8; frames store it 1-based.

mod format;
mod tree;

use std::collections::BTreeMap;
use std::io::BufRead;

use crate::api::{
    BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary, LimitationLog,
};
use crate::format_kind::FormatKind;
use crate::json_doc::read_document;
use crate::stack_profile::{StackProfileEnd, finish_stack_profile};
use crate::stacks::{ReductionSpec, StackAggregator, ThreadInfo};
use tree::{CpuProfile, call_tree};

pub use format::FORMAT;

pub const CPUPROFILE_EXTRACTOR_NAME: &str = "chrome_cpuprofile";
/// Bumped whenever the rows produced for the same input change.
pub const CPUPROFILE_EXTRACTOR_VERSION: &str = "1";

/// The frame of a sample whose node id is not in `nodes`, and of a node
/// without a `callFrame`.
pub const UNKNOWN_NODE: &str = "[unknown node]";
/// The synthetic root V8 puts above every stack.
pub const ROOT: &str = "(root)";
const POLL_EVERY: usize = 64 * 1024;

fn spec(metric: &str, unit: &str) -> ReductionSpec {
    ReductionSpec {
        metric: metric.into(),
        weight_unit: unit.into(),
        unit: unit.into(),
    }
}

/// Extracts a V8 `.cpuprofile` into `frames`, `stack_nodes`, `samples`
/// (timed), `frame_totals` and `call_edges` (metrics `cpu.samples`,
/// `cpu.time_ns`).
pub fn extract_cpuprofile<R: BufRead>(
    reader: R,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    let (profile, input_bytes): (CpuProfile, u64) =
        read_document(reader, observer, "V8 cpuprofile")?;
    let nodes = profile.nodes.unwrap_or_default();
    if nodes.is_empty() {
        return Err(ExtractError::Parse {
            message: "a cpuprofile needs a non-empty `nodes` array".into(),
            offset: Some(0),
        });
    }
    let mut log = LimitationLog::default();
    let mut agg = StackAggregator::new();
    let (index, stack_of) = call_tree(&nodes, &mut agg, &mut log);
    let thread = agg.thread(ThreadInfo::default());
    let samples_metric = agg.metric(spec("cpu.samples", "samples"));
    let mut root_stack = None;
    let mut unknown_stack = None;

    let samples: Vec<i64> = profile
        .samples
        .unwrap_or_default()
        .into_iter()
        .map(|s| s.0)
        .collect();
    let mut timed = false;
    let mut sample_count: u64 = 0;
    if samples.is_empty() {
        // Profiles without `samples` (old or trimmed) still carry hitCount.
        for (i, node) in nodes.iter().enumerate() {
            let hits = node.hit_count.unwrap_or(0).max(0);
            if hits == 0 {
                continue;
            }
            let stack = match stack_of[i] {
                Some(s) => s,
                None => *root_stack.get_or_insert_with(|| {
                    let f = agg.frame(ROOT, None, None, None, "unknown", true);
                    agg.stack(None, f)
                }),
            };
            agg.add_metric_sample(samples_metric, stack, thread, None, hits, hits);
            sample_count = sample_count.saturating_add(hits as u64);
        }
        log.note("no_samples_array", || {
            "no `samples` array: cpu.samples come from hitCount, and there is no cpu.time_ns".into()
        });
    } else {
        // Absolute µs timestamps, when the deltas line up with the samples.
        let deltas = profile.time_deltas.unwrap_or_default();
        let times: Option<Vec<i64>> = match profile.start_time {
            Some(start) if deltas.len() == samples.len() => deltas
                .iter()
                .scan(start, |t, d| {
                    *t = t.saturating_add(d.0);
                    Some(*t)
                })
                .map(Some)
                .collect(),
            _ => {
                log.note("no_sample_times", || format!(
                    "{} timeDeltas for {} samples (startTime {:?}); only cpu.samples, no cpu.time_ns",
                    deltas.len(), samples.len(), profile.start_time
                ));
                None
            }
        };
        let mut order: Vec<usize> = (0..samples.len()).collect();
        if let Some(t) = &times {
            let backwards = t.windows(2).filter(|w| w[1] < w[0]).count() as u64;
            log.note_n("samples_out_of_order", backwards, || {
                "negative timeDeltas: samples are put in time order before durations are taken"
                    .into()
            });
            if backwards > 0 {
                order.sort_by_key(|&i| t[i]);
            }
            if profile.end_time.is_none() {
                log.note("no_end_time", || {
                    "no endTime: the last sample lasts 0".into()
                });
            }
        }
        let time_metric = times
            .as_ref()
            .map(|_| agg.metric(spec("cpu.time_ns", "ns")));
        timed = times.is_some();
        for (k, &i) in order.iter().enumerate() {
            if k % POLL_EVERY == POLL_EVERY - 1 {
                observer.bytes_read(input_bytes);
                if observer.cancelled() {
                    return Err(ExtractError::Cancelled);
                }
            }
            let stack = match index.get(&samples[i]).map(|&n| stack_of[n]) {
                Some(Some(s)) => s,
                Some(None) => *root_stack.get_or_insert_with(|| {
                    let f = agg.frame(ROOT, None, None, None, "unknown", true);
                    agg.stack(None, f)
                }),
                None => {
                    log.note("unknown_node_id", || {
                        format!(
                            "a sample names node id {}, which is not in `nodes`; kept as `{UNKNOWN_NODE}`",
                            samples[i]
                        )
                    });
                    *unknown_stack.get_or_insert_with(|| {
                        let f = agg.frame(UNKNOWN_NODE, None, None, None, "unknown", false);
                        agg.stack(None, f)
                    })
                }
            };
            sample_count += 1;
            let (Some(t), Some(metric)) = (&times, time_metric) else {
                agg.add_metric_sample(samples_metric, stack, thread, None, 1, 1);
                continue;
            };
            let until = match order.get(k + 1) {
                Some(&next) => t[next],
                None => profile.end_time.unwrap_or(t[i]),
            };
            let ts_ns = t[i].saturating_mul(1000);
            let dur_ns = until.saturating_sub(t[i]).max(0).saturating_mul(1000);
            agg.add_metric_sample(samples_metric, stack, thread, Some(ts_ns), 1, 1);
            agg.add_metric_sample(metric, stack, thread, Some(ts_ns), dur_ns, 1);
        }
    }
    if sample_count == 0 {
        return Err(ExtractError::Parse {
            message: format!(
                "no samples (and no hitCount) in a cpuprofile of {} nodes",
                nodes.len()
            ),
            offset: Some(0),
        });
    }

    let mut metadata = BTreeMap::new();
    metadata.insert("nodes".to_owned(), serde_json::json!(nodes.len()));
    metadata.insert("samples".to_owned(), serde_json::json!(sample_count));
    metadata.insert(
        "start_time_us".to_owned(),
        serde_json::json!(profile.start_time),
    );
    metadata.insert(
        "end_time_us".to_owned(),
        serde_json::json!(profile.end_time),
    );
    let time_span_ns = match (profile.start_time, profile.end_time) {
        (Some(s), Some(e)) if e >= s => Some((s.saturating_mul(1000), e.saturating_mul(1000))),
        _ => None,
    };
    let source_locations = nodes.iter().any(|n| {
        n.call_frame
            .as_ref()
            .and_then(|c| c.url.as_deref())
            .is_some_and(|u| !u.is_empty())
    });
    finish_stack_profile(
        agg,
        options,
        sink,
        StackProfileEnd {
            extractor: CPUPROFILE_EXTRACTOR_NAME,
            extractor_version: CPUPROFILE_EXTRACTOR_VERSION,
            format: FormatKind::ChromeCpuProfile,
            producer: options.producer.clone().unwrap_or_else(|| "v8".to_owned()),
            time_span_ns,
            thread_identity: false,
            timestamps: timed,
            symbolized_frames: true,
            more_coverage: vec![("source_locations", source_locations)],
            metadata,
            log,
            input_bytes,
            input_events: nodes.len() as u64 + samples.len() as u64,
        },
    )
}
