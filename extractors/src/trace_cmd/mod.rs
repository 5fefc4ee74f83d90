//! trace-cmd `.dat` files (versions 6 and 7: `trace-cmd record`,
//! `trace-cmd extract`, KernelShark's input): the kernel's per-CPU ring
//! buffer pages with the tracepoint formats that describe them. [`file`]
//! opens one and merges a buffer's CPUs into
//! [`KernelEvent`](crate::kernel_events::model::KernelEvent)s in time
//! order; the shared kernel-event interpretation ([`crate::kernel_events`])
//! turns them into the same `sched_slice` and `thread_state` rows as
//! ftrace text and Perfetto system traces. Only the top buffer is read
//! (instances are named in the summary).

mod compression;
mod cpu_stream;
pub mod errors;
mod events;
pub mod file;
mod file_source;
mod format;
pub mod options;
mod pages;
pub mod summary;
mod v6_layout;
mod v7_sections;

use std::path::Path;

use crate::api::{BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary};
use crate::format_kind::FormatKind;
use crate::kernel_events::KernelEventFeed;
use crate::perfetto::session::{ForeignSource, SystemTrace};
use errors::TraceCmdError;

pub use format::FORMAT;

pub const TRACE_CMD_EXTRACTOR_NAME: &str = "trace_cmd";
/// Bumped whenever the rows produced for the same input change.
pub const TRACE_CMD_EXTRACTOR_VERSION: &str = "1";

/// Events between cancellation checks.
const POLL_EVERY: u64 = 4096;

fn open_error(e: TraceCmdError) -> ExtractError {
    match e {
        TraceCmdError::UnsupportedVersion { found } => ExtractError::UnsupportedVersion {
            format: FormatKind::TraceCmd.name(),
            found,
            supported: errors::SUPPORTED_VERSIONS.to_owned(),
        },
        TraceCmdError::Io { source, .. } if source.kind() != std::io::ErrorKind::UnexpectedEof => {
            ExtractError::Io(source)
        }
        other => ExtractError::Parse {
            message: other.to_string(),
            offset: None,
        },
    }
}

/// Extracts a stored `.dat` file (it is read by offset, so from its path).
pub fn extract_trace_cmd(
    path: &Path,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    let input = std::fs::File::open(path).map_err(ExtractError::Io)?;
    let bytes = input.metadata().map(|m| m.len()).unwrap_or(0);
    let mut file = file::TraceCmdFile::open(std::io::BufReader::new(input)).map_err(open_error)?;
    let Some(top) = file.top_buffer() else {
        return Err(ExtractError::Parse {
            message: "the trace-cmd file has no ring-buffer data".to_owned(),
            offset: None,
        });
    };
    let buffers: Vec<String> = file.buffers().iter().map(|b| b.name.clone()).collect();
    let header = file.header.clone();
    let mut trace = SystemTrace::new(options);
    let mut feed = KernelEventFeed::default();
    let mut events = file.events(top).map_err(open_error)?;
    let mut read: u64 = 0;
    for event in events.by_ref() {
        read += 1;
        if read.is_multiple_of(POLL_EVERY) && observer.cancelled() {
            return Err(ExtractError::Cancelled);
        }
        feed.feed(&mut trace, &event);
        trace.spill_if_due()?;
    }
    let summary = events.summary().clone();
    observer.bytes_read(bytes);
    if feed.events == 0 {
        return Err(ExtractError::Parse {
            message: format!(
                "no event decoded from the trace-cmd file ({} pages, {} page errors, {} records of unknown events)",
                summary.pages,
                summary.page_errors,
                summary.unknown_records()
            ),
            offset: None,
        });
    }
    let log = &mut trace.d.p.log;
    log.note_n("ftrace_events_lost", summary.lost_events, || {
        "the kernel dropped events before a ring-buffer page was written".to_owned()
    });
    log.note_n(
        "ftrace_events_lost",
        summary.pages_with_unknown_loss,
        || "events were lost after a page, without a count".to_owned(),
    );
    log.note_n("ftrace_events_overwritten", summary.overruns, || {
        "the ring buffer overwrote events before they were read (per-CPU stats)".to_owned()
    });
    log.note_n("damaged_page", summary.page_errors, || {
        "a ring-buffer page or data block could not be read; the rest was".to_owned()
    });
    log.note_n("unknown_event_id", summary.unknown_records(), || {
        "a record's event id has no format in the file; skipped".to_owned()
    });
    log.note_n("undecodable_record", summary.undecodable_records, || {
        "a record is shorter than its event's fields; skipped".to_owned()
    });
    if !summary.timestamps_in_ns {
        log.note("timestamps_not_ns", || {
            format!(
                "the trace clock {:?} counts cycles, not ns, and the file has no conversion; times are raw counts",
                summary.clock
            )
        });
    }
    let mut metadata = feed.metadata();
    metadata.insert("file_version".to_owned(), serde_json::json!(header.version));
    metadata.insert(
        "compression".to_owned(),
        serde_json::json!(header.compression),
    );
    metadata.insert("clock".to_owned(), serde_json::json!(summary.clock));
    metadata.insert("cpus".to_owned(), serde_json::json!(summary.cpus));
    metadata.insert(
        "events_per_cpu".to_owned(),
        serde_json::json!(summary.events_per_cpu),
    );
    metadata.insert("buffers".to_owned(), serde_json::json!(buffers));
    let source = ForeignSource {
        extractor: TRACE_CMD_EXTRACTOR_NAME,
        extractor_version: TRACE_CMD_EXTRACTOR_VERSION,
        format: FormatKind::TraceCmd,
        producer: "trace-cmd".to_owned(),
        input_events: feed.events,
        metadata,
    };
    trace
        .finish(options, sink, observer, (bytes, 0), Some(source))
        .map(|(summary, _)| summary)
}
