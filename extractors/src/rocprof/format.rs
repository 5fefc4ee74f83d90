//! rocprofiler-sdk JSON in the format registry: an object whose first key
//! is `rocprofiler-sdk-tool`.

use crate::format_descriptor::{Extractor, Format, Reading};
use crate::sniff::{Head, Sniffed};

use super::{ROCPROF_EXTRACTOR_NAME, ROCPROF_EXTRACTOR_VERSION, extract_rocprof_json};

pub static FORMAT: Format = Format {
    kind: crate::format_kind::FormatKind::RocprofJson,
    aliases: &["rocprofv3", "rocprofiler_sdk"],
    description: "AMD rocprofiler-sdk JSON (rocprofv3 --output-format json; the document its JSON tool writes) → kernel dispatches and memory copies on GPU streams, HIP/HSA/marker/RCCL API calls with correlation ids; not read: counters, PC samples, allocations",
    sniff: Some(sniff),
    reading: Reading::Stream(
        Extractor {
            name: ROCPROF_EXTRACTOR_NAME,
            version: ROCPROF_EXTRACTOR_VERSION,
        },
        extract_rocprof_json,
    ),
    measurements: false,
};

fn sniff(head: &Head<'_>) -> Option<Sniffed> {
    head.object()?
        .has("rocprofiler-sdk-tool")
        .then(|| Sniffed::certain(Some("rocprofv3"), "JSON object with `rocprofiler-sdk-tool`"))?
}
