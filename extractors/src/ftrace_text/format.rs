//! ftrace text in the format registry: the `# tracer:` header the kernel
//! prints, or (headerless, as `trace_pipe` gives) a first line shaped like
//! `task-pid [cpu] … seconds: event:`.

use crate::format_descriptor::{Extractor, Format, Reading};
use crate::sniff::{Head, Sniffed};

use super::{FTRACE_TEXT_EXTRACTOR_NAME, FTRACE_TEXT_EXTRACTOR_VERSION, extract_ftrace_text};

pub static FORMAT: Format = Format {
    kind: crate::format_kind::FormatKind::FtraceText,
    aliases: &["ftrace", "systrace_text"],
    description: "Linux ftrace text (/sys/kernel/tracing/trace, trace_pipe, trace-cmd report; any kernel) → per-CPU sched_slice and per-thread thread_state rows, CPU idle/frequency counters, atrace markers; not read: irq/softirq and other tracepoints (counted by name)",
    sniff: Some(sniff),
    reading: Reading::Stream(
        Extractor {
            name: FTRACE_TEXT_EXTRACTOR_NAME,
            version: FTRACE_TEXT_EXTRACTOR_VERSION,
        },
        extract_ftrace_text,
    ),
    measurements: false,
};

fn sniff(head: &Head<'_>) -> Option<Sniffed> {
    let text = std::str::from_utf8(head.bytes).ok().or_else(|| {
        // A head cut inside a multi-byte character.
        let valid = std::str::from_utf8(head.bytes).err()?.valid_up_to();
        std::str::from_utf8(head.bytes.get(..valid)?).ok()
    })?;
    if text.starts_with("# tracer:") {
        return Sniffed::certain(Some("linux.ftrace"), "ftrace text header `# tracer:`");
    }
    let first = text.lines().find(|l| !l.trim().is_empty())?;
    super::line::parse_line(first).and_then(|_| {
        Sniffed::likely(
            Some("linux.ftrace"),
            "a line shaped like ftrace's `task-pid [cpu] seconds: event:`",
        )
    })
}
