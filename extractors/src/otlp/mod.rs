//! OpenTelemetry OTLP/JSON: the SDK observations of any instrumented
//! program — what the collector's `file` exporter writes (one export
//! request per line), an OTLP/HTTP JSON body, or protobuf's JSON of the
//! SDK's encoded requests ([`model`] reads both id and enum spellings).
//!
//! - **Spans** become `trace_events` (category = span kind, args = trace
//!   and span ids, parent id, scope, status and attributes). A resource is
//!   a process (`service.name`, with `process.pid` when given); its spans
//!   are laid out on lanes ([`lanes`]) so they nest exactly as their parent
//!   ids say and self time is never taken by a concurrent child.
//! - **Metrics** become `counters` ([`metrics`]): gauge and sum points as
//!   they are, histograms, exponential histograms and summaries as their
//!   `.count`, `.sum`, `.min` and `.max` series; one series per metric and
//!   attribute set.
//! - Logs are counted and left out (limitation `logs_not_read`).
//!
//! Timestamps stay Unix nanoseconds. Everything is held in memory until
//! the end (spans of one trace may come in any request); the decompressed
//! input bound caps it.

pub mod format;
pub mod lanes;
mod metrics;
pub mod model;
mod spans;

use std::collections::BTreeMap;
use std::io::BufRead;

use crate::api::{BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary};
use crate::format_kind::FormatKind;
use crate::json_doc::for_each_document;
use crate::trace_events::builder::TraceBuilder;
use crate::trace_events::in_memory::emit_held_trace;
use model::ExportRequest;

pub use format::FORMAT;

pub const OTLP_EXTRACTOR_NAME: &str = "otlp_json";
/// Bumped whenever the rows produced for the same input change.
pub const OTLP_EXTRACTOR_VERSION: &str = "1";

/// What one resource is called: `service.name`, with `process.pid` when
/// the resource has one (two processes of one service stay apart).
fn process_label(resource: &model::Resource) -> String {
    let service = model::attribute(&resource.attributes, "service.name")
        .unwrap_or_else(|| "unknown_service".to_owned());
    match model::attribute(&resource.attributes, "process.pid") {
        Some(pid) => format!("{service} (pid {pid})"),
        None => service,
    }
}

/// Extracts OTLP/JSON traces and metrics into `trace_events`, `tracks` and
/// `counters`.
pub fn extract_otlp_json<R: BufRead>(
    reader: R,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    let mut trace = TraceBuilder::default();
    trace.store.arena = crate::trace_events::args_arena::ArgsArena::new(options.spill_dir.clone());
    let mut spans = spans::SpanCollector::new(options.max_args_bytes);
    let mut series = metrics::SeriesCount::default();
    let mut logs = 0u64;
    let mut sdk: Option<String> = None;
    let read = for_each_document(
        reader,
        observer,
        "well-formed OTLP/JSON",
        |request: ExportRequest| {
            for rs in request.resource_spans {
                if sdk.is_none() {
                    sdk = model::attribute(&rs.resource.attributes, "telemetry.sdk.language");
                }
                let process = trace.strings.intern(&process_label(&rs.resource));
                for scope in rs.scope_spans {
                    for span in scope.spans {
                        spans.add(&mut trace, process, &scope.scope.name, span);
                    }
                }
            }
            for rm in request.resource_metrics {
                if sdk.is_none() {
                    sdk = model::attribute(&rm.resource.attributes, "telemetry.sdk.language");
                }
                let process = trace.strings.intern(&process_label(&rm.resource));
                for scope in rm.scope_metrics {
                    for metric in scope.metrics {
                        metrics::add_metric(&mut trace, &mut series, process, &metric);
                    }
                }
            }
            logs += request.resource_logs.len() as u64;
            if observer.cancelled() {
                return Err(ExtractError::Cancelled);
            }
            Ok(())
        },
    )?;
    if let Some(why) = &read.stopped {
        trace.log.note("truncated_input", || {
            format!("{why} (at byte {})", read.bytes)
        });
    }
    trace.log.note_n("logs_not_read", logs, || {
        "OTLP log records are not read; spans and metrics are".to_owned()
    });
    let laid_out = spans.lay_out(&mut trace);
    if laid_out.spans == 0 && trace.counters.is_empty() {
        return Err(ExtractError::Parse {
            message: "the OTLP/JSON input holds no span and no metric point".into(),
            offset: Some(read.bytes),
        });
    }
    let (events, rows) = emit_held_trace(&mut trace, options, sink, observer)?;
    let mut coverage = BTreeMap::new();
    coverage.insert("spans".to_owned(), laid_out.spans > 0);
    coverage.insert("counters".to_owned(), !trace.counters.is_empty());
    let mut metadata = BTreeMap::new();
    metadata.insert("requests".to_owned(), serde_json::json!(read.documents));
    metadata.insert("spans".to_owned(), serde_json::json!(laid_out.spans));
    metadata.insert("lanes".to_owned(), serde_json::json!(laid_out.lanes));
    metadata.insert("metric_series".to_owned(), serde_json::json!(series.len()));
    metadata.insert(
        "metric_points".to_owned(),
        serde_json::json!(trace.counters.len()),
    );
    let producer = options.producer.clone().unwrap_or_else(|| match &sdk {
        Some(language) => format!("opentelemetry-{language}"),
        None => "opentelemetry".to_owned(),
    });
    Ok(ExtractionSummary {
        extractor: OTLP_EXTRACTOR_NAME.to_owned(),
        extractor_version: OTLP_EXTRACTOR_VERSION.to_owned(),
        format: FormatKind::OtlpJson.name().to_owned(),
        producer,
        rows,
        time_span_ns: span_of(events.span, &trace),
        tracks: trace.tracks.list.len() as u64,
        coverage,
        limitations: trace.log.into_limitations(),
        metadata,
        input_bytes: read.bytes,
        input_events: laid_out.spans + trace.counters.len() as u64,
        max_event_dur_ns: None,
    })
}

/// The spans' extent, widened by the metric points.
fn span_of(events: Option<(i64, i64)>, trace: &TraceBuilder) -> Option<(i64, i64)> {
    trace.counters.iter().fold(events, |acc, c| match acc {
        None => Some((c.ts, c.ts)),
        Some((a, b)) => Some((a.min(c.ts), b.max(c.ts))),
    })
}
