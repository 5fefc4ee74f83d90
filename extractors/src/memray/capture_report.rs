//! What an extraction's summary says about a memray capture: how the
//! record stream ended (a damaged or cut capture keeps the records before
//! the damage, as a limitation; an unreadable one is a typed error), the
//! header and the fold's totals as metadata, and the time span.

use std::collections::BTreeMap;
use std::io::Read;

use serde_json::json;

use crate::api::{ExtractError, LimitationLog};
use crate::memray::error::MemrayError;
use crate::memray::header::{CaptureLayout, MemrayHeader, SUPPORTED_VERSIONS};
use crate::memray::memory_counters::{HeapMoments, ms_to_ns};
use crate::memray::reader::MemrayReader;
use crate::memray::site_stacks::{ALLOCATED_METRICS, AT_END_METRICS, AT_PEAK_METRICS};
use crate::memray::summary::MemorySummary;
use crate::trace_events::builder::TraceBuilder;

/// Bytes of the command line kept as the process name.
const MAX_PROCESS_NAME_BYTES: usize = 512;

/// An error before any record: the input is refused.
pub(crate) fn open_error(e: MemrayError) -> ExtractError {
    match e {
        MemrayError::UnsupportedVersion { found, supported } => ExtractError::UnsupportedVersion {
            format: "memray",
            found: format!("header version {found}"),
            supported: format!(
                "header versions {} (memray 1.19 and 1.20)",
                supported
                    .iter()
                    .map(i32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
        MemrayError::Io { source, .. } => ExtractError::from(source),
        other => ExtractError::Parse {
            message: other.to_string(),
            offset: Some(0),
        },
    }
}

/// An error after the header: the records before it stand (a limitation)
/// unless the input went past a limit or could not be read at all.
pub(crate) fn stream_stop(e: MemrayError, log: &mut LimitationLog) -> Result<(), ExtractError> {
    let message = format!("{e}; the records before it are kept");
    let code = match e {
        MemrayError::Truncated { .. } => "truncated_input",
        // The lz4 frame is damaged (or the input under it failed).
        MemrayError::Decompress { source, .. } => match ExtractError::from(source) {
            too_large @ ExtractError::TooLarge { .. } => return Err(too_large),
            _ => "malformed_record",
        },
        // A cut or corrupt gzip stream reads as a cut capture.
        MemrayError::Io { source, .. } => match ExtractError::from(source) {
            ExtractError::Parse { .. } => "truncated_input",
            other => return Err(other),
        },
        MemrayError::Corrupt { .. }
        | MemrayError::NotMemray
        | MemrayError::UnsupportedVersion { .. } => "malformed_record",
    };
    log.note(code, || message);
    Ok(())
}

/// `PY_VERSION_HEX` as `3.11.7`.
fn python_version(hex: u32) -> String {
    format!("{}.{}.{}", hex >> 24, (hex >> 16) & 0xff, (hex >> 8) & 0xff)
}

pub(crate) fn process_name(command_line: &str) -> Option<String> {
    let line = command_line.trim();
    if line.is_empty() {
        return None;
    }
    let mut end = line.len().min(MAX_PROCESS_NAME_BYTES);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    line.get(..end).map(str::to_owned)
}

/// The decoder's notes on a stream that ended without an error.
pub(crate) fn note_stream_notes<R: Read>(
    reader: &MemrayReader<R>,
    header: &MemrayHeader,
    log: &mut LimitationLog,
) {
    let notes = reader.notes();
    if !notes.ended_with_trailer {
        let padding = notes.zero_padding_bytes;
        log.note("capture_unfinished", || {
            format!("the capture has no end marker ({padding} zero bytes of unused file space at its end): tracking did not finish, e.g. the process was killed; what was recorded is kept, and `still allocated at the end` means when the capture stops")
        });
    }
    let all = header.layout == CaptureLayout::AllAllocations;
    if all && header.n_allocations != 0 && header.n_allocations != notes.allocation_records {
        let (want, got) = (header.n_allocations, notes.allocation_records);
        log.note("allocation_count_mismatch", || {
            format!("the header counts {want} allocation records, the stream holds {got}")
        });
    }
}

pub(crate) fn threads_named<R: Read>(reader: &MemrayReader<R>) -> usize {
    reader.stacks().thread_names().len()
}

/// The capture's tracking interval, widened by the counter points.
pub(crate) fn time_span(header: &MemrayHeader, trace: &TraceBuilder) -> Option<(i64, i64)> {
    let start = u64::try_from(header.start_time_ms)
        .ok()
        .filter(|&ms| ms > 0);
    let end = u64::try_from(header.end_time_ms).ok().filter(|&ms| ms > 0);
    let mut span = match (start, end) {
        (Some(s), Some(e)) if e >= s => Some((ms_to_ns(s), ms_to_ns(e))),
        (Some(s), _) => Some((ms_to_ns(s), ms_to_ns(s))),
        _ => None,
    };
    for c in &trace.counters {
        span = Some(match span {
            None => (c.ts, c.ts),
            Some((a, b)) => (a.min(c.ts), b.max(c.ts)),
        });
    }
    span
}

/// What memray's `stats` / `summary` print in their headers, and the
/// fold's totals (the numbers the metrics sum to).
pub(crate) fn metadata(
    header: &MemrayHeader,
    s: &MemorySummary,
    moments: &HeapMoments,
    compressed: bool,
    named_threads: usize,
) -> BTreeMap<String, serde_json::Value> {
    let mut m = BTreeMap::new();
    let layout = match header.layout {
        CaptureLayout::AllAllocations => "all_allocations",
        CaptureLayout::AggregatedAllocations => "aggregated",
    };
    m.insert(
        "capture".to_owned(),
        json!({
            "header_version": header.version,
            "supported_header_versions": SUPPORTED_VERSIONS,
            "python_version": python_version(header.python_version),
            "native_traces": header.native_traces,
            "layout": layout,
            "lz4_compressed": compressed,
            "pid": header.pid,
            "command_line": process_name(&header.command_line),
            "start_time_ms": header.start_time_ms,
            "end_time_ms": header.end_time_ms,
            "python_allocator": format!("{:?}", header.python_allocator).to_lowercase(),
            "trace_python_allocators": header.trace_python_allocators,
            "track_object_lifetimes": header.track_object_lifetimes,
            "named_threads": named_threads,
        }),
    );
    m.insert("allocation_records".to_owned(), json!(s.allocation_records));
    m.insert("peak_heap_bytes".to_owned(), json!(s.peak_heap_bytes));
    m.insert("peak_allocations".to_owned(), json!(s.at_peak.total.count));
    if let Some((t, _)) = moments.peak {
        m.insert("peak_not_before_ns".to_owned(), json!(t));
    }
    m.insert("leaked_bytes".to_owned(), json!(s.at_end.total.bytes));
    m.insert("leaked_allocations".to_owned(), json!(s.at_end.total.count));
    if let Some(t) = s.totals {
        m.insert("allocated_bytes".to_owned(), json!(t.allocated_bytes));
        m.insert("allocations".to_owned(), json!(t.allocations));
        m.insert("deallocations".to_owned(), json!(t.deallocations));
    }
    m.insert(
        "sites".to_owned(),
        json!({
            "at_peak": s.at_peak.stack_sites,
            "at_end": s.at_end.stack_sites,
            "allocated": s.allocated.as_ref().map(|a| a.stack_sites),
        }),
    );
    m.insert(
        "memory_snapshots".to_owned(),
        json!(s.memory_over_time.len()),
    );
    let mut metrics = Vec::new();
    if s.allocated.is_some() {
        metrics.extend([ALLOCATED_METRICS.0, ALLOCATED_METRICS.1]);
    }
    metrics.extend([
        AT_END_METRICS.0,
        AT_END_METRICS.1,
        AT_PEAK_METRICS.0,
        AT_PEAK_METRICS.1,
    ]);
    m.insert("metrics".to_owned(), json!(metrics));
    m
}
