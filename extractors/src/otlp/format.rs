//! OTLP/JSON in the format registry: an object whose first key is
//! `resourceSpans`, `resourceMetrics` or `resourceLogs` (or their
//! snake_case spellings) — one request, or one per line.

use crate::format_descriptor::{Extractor, Format, Reading};
use crate::sniff::{Head, Sniffed};

use super::{OTLP_EXTRACTOR_NAME, OTLP_EXTRACTOR_VERSION, extract_otlp_json};

pub static FORMAT: Format = Format {
    kind: crate::format_kind::FormatKind::OtlpJson,
    aliases: &["otlp", "opentelemetry"],
    description: "OpenTelemetry OTLP/JSON traces and metrics (collector file exporter, OTLP/HTTP JSON; one request or one per line) → spans as trace_events on lanes, metric points as counters",
    sniff: Some(sniff),
    reading: Reading::Stream(
        Extractor {
            name: OTLP_EXTRACTOR_NAME,
            version: OTLP_EXTRACTOR_VERSION,
        },
        extract_otlp_json,
    ),
    measurements: false,
};

const KEYS: [&str; 6] = [
    "resourceSpans",
    "resourceMetrics",
    "resourceLogs",
    "resource_spans",
    "resource_metrics",
    "resource_logs",
];

fn sniff(head: &Head<'_>) -> Option<Sniffed> {
    let scan = head.object()?;
    KEYS.iter()
        .any(|k| scan.has(k))
        .then(|| {
            Sniffed::certain(
                None,
                "OTLP/JSON export request (`resourceSpans` / `resourceMetrics`)",
            )
        })
        .flatten()
}
