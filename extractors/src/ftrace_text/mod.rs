//! ftrace text: what `/sys/kernel/tracing/trace` (or `trace_pipe`,
//! `trace-cmd report`, a systrace capture's body) prints, one event per
//! line ([`line`]). Each line becomes a
//! [`KernelEvent`](crate::kernel_events::model::KernelEvent) and goes to
//! the shared kernel-event interpretation ([`crate::kernel_events`]): per-CPU
//! `sched_slice` rows, per-thread `thread_state` rows, CPU idle and
//! frequency counters and atrace slices, as for a Perfetto system trace.
//!
//! The header's `entries-in-buffer/entries-written` says whether the ring
//! buffer overwrote events (limitation `ftrace_events_lost`); `#P:N` is
//! the CPU count. A line that is not an event is counted and skipped
//! (`unparsed_line`); a file with no event line is refused.

mod format;
pub mod line;

use std::io::BufRead;

use crate::api::{BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary};
use crate::folded::read_bounded_line;
use crate::format_kind::FormatKind;
use crate::kernel_events::KernelEventFeed;
use crate::perfetto::session::{ForeignSource, SystemTrace};

pub use format::FORMAT;

pub const FTRACE_TEXT_EXTRACTOR_NAME: &str = "ftrace_text";
/// Bumped whenever the rows produced for the same input change.
pub const FTRACE_TEXT_EXTRACTOR_VERSION: &str = "1";

/// Lines between cancellation checks.
const POLL_EVERY: u64 = 4096;

/// What the `#` header says.
#[derive(Default)]
struct Header {
    cpus: Option<u32>,
    in_buffer: Option<u64>,
    written: Option<u64>,
    tracer: Option<String>,
}

impl Header {
    fn read(&mut self, comment: &str) {
        let body = comment.trim_start_matches('#').trim();
        if let Some(tracer) = body.strip_prefix("tracer:") {
            self.tracer = Some(tracer.trim().to_owned());
        }
        // `entries-in-buffer/entries-written: 6012/6012   #P:2`
        if let Some(rest) = body.strip_prefix("entries-in-buffer/entries-written:") {
            let mut parts = rest.split_whitespace();
            if let Some((a, b)) = parts.next().and_then(|p| p.split_once('/')) {
                self.in_buffer = a.parse().ok();
                self.written = b.parse().ok();
            }
            self.cpus = parts
                .find_map(|p| p.strip_prefix("#P:"))
                .and_then(|n| n.parse().ok());
        }
    }
}

/// Extracts ftrace text into scheduling and state evidence.
pub fn extract_ftrace_text<R: BufRead>(
    mut reader: R,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    let mut trace = SystemTrace::new(options);
    let mut feed = KernelEventFeed::default();
    let mut header = Header::default();
    let mut raw = Vec::new();
    let mut offset: u64 = 0;
    let mut lines: u64 = 0;
    let mut unparsed: u64 = 0;
    let mut tgids = 0u64;
    loop {
        raw.clear();
        let n = read_bounded_line(&mut reader, &mut raw)?;
        if n == 0 {
            break;
        }
        offset += n as u64;
        lines += 1;
        if lines.is_multiple_of(POLL_EVERY) {
            observer.bytes_read(offset);
            if observer.cancelled() {
                return Err(ExtractError::Cancelled);
            }
        }
        let text = String::from_utf8_lossy(&raw);
        let text = text.trim_end_matches(['\n', '\r']);
        if text.trim_start().starts_with('#') {
            header.read(text);
            continue;
        }
        if text.trim().is_empty() {
            continue;
        }
        let Some(parsed) = line::parse_line(text) else {
            unparsed += 1;
            continue;
        };
        if let Some(tgid) = parsed.tgid.filter(|&t| t > 0) {
            tgids += 1;
            let entry = trace
                .d
                .threads
                .entry(parsed.event.pid)
                .or_insert((None, None));
            entry.0.get_or_insert(tgid);
        }
        feed.feed(&mut trace, &parsed.event);
        trace.spill_if_due()?;
    }
    observer.bytes_read(offset);
    if feed.events == 0 {
        return Err(ExtractError::Parse {
            message: format!(
                "no ftrace event line in {lines} lines (expected `task-pid [cpu] flags seconds: event: fields`)"
            ),
            offset: Some(0),
        });
    }
    let log = &mut trace.d.p.log;
    log.note_n("unparsed_line", unparsed, || {
        "a line is neither a comment nor an ftrace event; skipped".to_owned()
    });
    if let (Some(kept), Some(written)) = (header.in_buffer, header.written)
        && written > kept
    {
        log.note_n("ftrace_events_lost", written - kept, || {
            format!("the ring buffer kept {kept} of {written} events written; the oldest were overwritten")
        });
    }
    let mut metadata = feed.metadata();
    metadata.insert("lines".to_owned(), serde_json::json!(lines));
    metadata.insert("cpus".to_owned(), serde_json::json!(header.cpus));
    metadata.insert("tracer".to_owned(), serde_json::json!(header.tracer));
    metadata.insert("lines_with_tgid".to_owned(), serde_json::json!(tgids));
    let source = ForeignSource {
        extractor: FTRACE_TEXT_EXTRACTOR_NAME,
        extractor_version: FTRACE_TEXT_EXTRACTOR_VERSION,
        format: FormatKind::FtraceText,
        producer: "linux.ftrace".to_owned(),
        input_events: feed.events,
        metadata,
    };
    trace
        .finish(options, sink, observer, (offset, 0), Some(source))
        .map(|(summary, _)| summary)
}
