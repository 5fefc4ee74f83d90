//! trace-cmd `.dat` in the format registry: the magic `17 08 44 tracing`
//! then the file version as text. Read from the stored file (pieces are
//! found by offset).

use crate::format_descriptor::{Extractor, Format, Reading};
use crate::sniff::{Head, Sniffed};

use super::{TRACE_CMD_EXTRACTOR_NAME, TRACE_CMD_EXTRACTOR_VERSION, extract_trace_cmd};

pub static FORMAT: Format = Format {
    kind: crate::format_kind::FormatKind::TraceCmd,
    aliases: &["trace_cmd_dat", "tracecmd"],
    description: "trace-cmd .dat (trace-cmd record/extract; file versions 6 and 7, zstd/zlib pages) → per-CPU sched_slice and per-thread thread_state rows, CPU idle/frequency counters; not read: instance buffers, irq/softirq",
    sniff: Some(sniff),
    reading: Reading::StoredFile(
        Extractor {
            name: TRACE_CMD_EXTRACTOR_NAME,
            version: TRACE_CMD_EXTRACTOR_VERSION,
        },
        extract_trace_cmd,
    ),
    measurements: false,
};

const MAGIC: &[u8] = b"\x17\x08\x44tracing";

fn sniff(head: &Head<'_>) -> Option<Sniffed> {
    head.bytes
        .starts_with(MAGIC)
        .then(|| Sniffed::certain(Some("trace-cmd"), "trace-cmd magic `17 08 44 tracing`"))?
}
