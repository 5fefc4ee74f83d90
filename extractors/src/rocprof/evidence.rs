//! The evidence both rocprofv3 readers (its JSON document, its CSV
//! tables) build: pending events pushed onto GPU stream and host thread
//! tracks, counted by record type, then emitted with one summary.

use std::collections::BTreeMap;

use serde_json::json;

use crate::api::{BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary};
use crate::format_kind::FormatKind;
use crate::trace_events::builder::TraceBuilder;
use crate::trace_events::device_columns::DeviceFields;
use crate::trace_events::in_memory::emit_held_trace;
use crate::trace_events::kinds::EventKind;
use crate::trace_events::store::NewEvent;
use crate::trace_events::tracks::Ident;

/// One event to push, before its strings are interned.
pub struct Pending<'a> {
    pub start: Option<u64>,
    pub end: Option<u64>,
    pub name: &'a str,
    pub category: &'a str,
    pub kind: EventKind,
    pub fields: DeviceFields,
    pub args: Option<String>,
}

/// Counts by record type, for the summary.
#[derive(Default)]
pub struct Counts {
    pub by_type: BTreeMap<&'static str, u64>,
    pub events: u64,
}

/// Pushes one timed event; a record without both times, or ending before
/// it starts, is skipped and noted.
pub fn push(trace: &mut TraceBuilder, track: u32, p: Pending<'_>, counts: &mut Counts) {
    let (Some(start), Some(end)) = (p.start, p.end) else {
        trace.log.note("record_without_times", || {
            "a record has no start or end timestamp; skipped".to_owned()
        });
        return;
    };
    let (Ok(start), Ok(end)) = (i64::try_from(start), i64::try_from(end)) else {
        trace.log.note("timestamp_overflow", || {
            "a record's timestamp does not fit in i64 ns; skipped".to_owned()
        });
        return;
    };
    if end < start {
        trace.log.note("record_ends_before_start", || {
            "a record ends before it starts; skipped".to_owned()
        });
        return;
    }
    let name = trace.strings.intern(p.name);
    let cat = trace.strings.intern(p.category);
    let event_id = trace.store.len() as u64;
    let device_activity = matches!(p.kind, EventKind::Kernel | EventKind::Memcpy);
    trace.store.push(
        NewEvent {
            event_id,
            ts: start,
            dur: end - start,
            name,
            cat,
            kind: p.kind,
            track,
            device_activity,
            fields: p.fields,
        },
        false,
        p.args.as_deref(),
    );
    counts.events += 1;
}

/// The GPU stream track of `(device, stream)`.
pub fn stream_track(trace: &mut TraceBuilder, device: i64, stream: i64) -> u32 {
    let label = trace.strings.intern(&format!("GPU {device}"));
    let pid = Ident::Label(label);
    trace.tracks.process_names.insert(pid, label);
    let track = trace.tracks.thread(pid, Ident::Int(stream));
    trace.tracks.mark_gpu(track, device, stream);
    track
}

/// What the summary says beyond the rows.
pub struct RunFacts {
    pub extractor: &'static str,
    pub version: &'static str,
    pub format: FormatKind,
    pub metadata: BTreeMap<String, serde_json::Value>,
}

/// Emits the trace and writes the summary; refuses a trace with no timed
/// record.
pub fn finish(
    mut trace: TraceBuilder,
    counts: Counts,
    facts: RunFacts,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    if counts.events == 0 {
        return Err(ExtractError::Parse {
            message:
                "the rocprofv3 output holds no kernel dispatch, memory copy or API call with times"
                    .to_owned(),
            offset: None,
        });
    }
    let host_calls: u64 = ["hip_api", "hsa_api", "marker_api", "rccl_api"]
        .iter()
        .filter_map(|k| counts.by_type.get(k))
        .sum();
    if host_calls == 0 {
        trace.log.note("no_host_api_records", || {
            "no HIP/HSA API records: kernels cannot be linked to their launches (record with rocprofv3 --hip-trace or --runtime-trace, and import the whole output folder)".to_owned()
        });
    }
    let (emitted, rows) = emit_held_trace(&mut trace, options, sink, observer)?;
    let mut coverage = BTreeMap::new();
    coverage.insert(
        "kernels".to_owned(),
        counts
            .by_type
            .get("kernel_dispatch")
            .is_some_and(|n| *n > 0),
    );
    coverage.insert("host_api".to_owned(), host_calls > 0);
    let mut metadata = facts.metadata;
    metadata.insert("records_by_type".to_owned(), json!(counts.by_type));
    Ok(ExtractionSummary {
        extractor: facts.extractor.to_owned(),
        extractor_version: facts.version.to_owned(),
        format: facts.format.name().to_owned(),
        producer: options
            .producer
            .clone()
            .unwrap_or_else(|| "rocprofv3".to_owned()),
        rows,
        time_span_ns: emitted.span,
        tracks: trace.tracks.list.len() as u64,
        coverage,
        limitations: trace.log.into_limitations(),
        metadata,
        input_bytes: 0,
        input_events: counts.events,
        max_event_dur_ns: None,
    })
}
