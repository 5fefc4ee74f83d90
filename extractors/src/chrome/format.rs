//! Chrome trace events in the format registry: how a head is recognized
//! (an array of events, an object with `traceEvents`, or a head cut off
//! before any other format's keys) and which producer wrote it.

use crate::format_descriptor::{Extractor, Format, Reading};
use crate::sniff::{Head, JsonHead, Sniffed};

use super::{CHROME_EXTRACTOR_NAME, CHROME_EXTRACTOR_VERSION, extract_chrome_json};

pub static FORMAT: Format = Format {
    kind: crate::format_kind::FormatKind::ChromeJson,
    aliases: &[
        "execution_trace",
        "chrome",
        "kineto",
        "chrome_trace",
        "torch_profiler",
    ],
    description: "Chrome trace events: PyTorch profiler / Kineto, Chromium, viztracer, py-spy chrometrace",
    sniff: Some(sniff),
    reading: Reading::Stream(
        Extractor {
            name: CHROME_EXTRACTOR_NAME,
            version: CHROME_EXTRACTOR_VERSION,
        },
        extract_chrome_json,
    ),
    measurements: false,
};

/// Top-level keys that belong to JSON formats other than Chrome traces.
const NOT_CHROME_KEYS: [&str; 16] = [
    "nodes",
    "startTime",
    "$schema",
    "shared",
    "profiles",
    "label",
    "markers",
    "ticks",
    "rocprofiler-sdk-tool",
    "benchmarks",
    "files",
    "totals",
    "meta",
    "samples",
    "timeDeltas",
    "activeProfileIndex",
];

fn sniff(head: &Head<'_>) -> Option<Sniffed> {
    match &head.json {
        JsonHead::EmptyArray => Sniffed::certain(Some("chrome"), "empty JSON array"),
        JsonHead::ArrayOfObjects(scan) => {
            let eventish = ["pid", "ts", "name", "cat", "tid"];
            (scan.has("ph") || (!scan.complete && eventish.iter().any(|k| scan.has(k))))
                .then(|| Sniffed::certain(Some(producer(head)), "JSON array of trace events"))
                .flatten()
        }
        JsonHead::Object(scan) if scan.has("traceEvents") => {
            Sniffed::certain(Some(producer(head)), "JSON object with `traceEvents`")
        }
        JsonHead::Object(scan)
            if !scan.complete
                && !scan
                    .keys
                    .iter()
                    .any(|k| NOT_CHROME_KEYS.contains(&k.as_str())) =>
        {
            Sniffed::likely(
                Some(producer(head)),
                "JSON object whose head shows only trace metadata keys",
            )
        }
        _ => None,
    }
}

fn producer(head: &Head<'_>) -> &'static str {
    const KINETO: [&[u8]; 7] = [
        b"\"schemaVersion\"",
        b"\"deviceProperties\"",
        b"\"distributedInfo\"",
        b"\"traceName\"",
        b"\"cpu_op\"",
        b"\"cuda_runtime\"",
        b"ProfilerStep#",
    ];
    if KINETO.iter().any(|m| head.contains(m)) {
        "torch.profiler"
    } else if head.contains(b"\"py-spy\"") {
        "py-spy"
    } else {
        "chrome"
    }
}
