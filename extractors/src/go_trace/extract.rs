//! The Go execution trace extractor: streams the input through the decoder
//! ([`super::decode_go_trace_into`]) into an [`EvidenceSink`], then writes
//! `trace_events`, `tracks`, `counters` and the stack tables
//! ([`super::tables`]).
//!
//! Bounds: a go1.11–go1.21 trace is held whole by the decoder (at most
//! [`DecodeLimits::max_v1_bytes`], 1 GiB), a go1.22+ one a generation at a
//! time (256 MiB); rows past `spill_after_events` go to spill runs; what
//! else is held grows with tracks, goroutines, distinct stacks, CPU samples
//! and user tasks (see [`super::evidence_sink`]). Progress is reported and
//! cancellation polled as the input is read and every 4,096 timeline
//! items; once cancelled, the decoder's remaining items are dropped
//! unread.
//!
//! Damage: a trace that does not decode at all is a typed error (`Parse`,
//! `TooLarge`, `UnsupportedVersion` naming the version); damage after
//! readable events keeps what was read, and each decoder note becomes a
//! limitation with its count.

use std::io::Read;

use super::decode::decode_go_trace_into;
use super::error::{DecodeLimits, GoTraceError};
use super::evidence_sink::EvidenceSink;
use crate::api::{
    BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary, LimitationLog,
};

pub const GO_TRACE_EXTRACTOR_NAME: &str = "go_trace";
/// Bumped whenever the rows produced for the same input change.
pub const GO_TRACE_EXTRACTOR_VERSION: &str = "1";

/// The versions read, as the unsupported-version answer names them.
const SUPPORTED: &str = "go1.11–go1.26";

/// Bytes between two progress reports.
const REPORT_EVERY_BYTES: u64 = 1 << 20;

/// Counts the bytes read, reports them, and fails the read once the
/// extraction is cancelled.
struct ProgressReader<'o, R> {
    inner: R,
    bytes: u64,
    reported: u64,
    observer: &'o dyn ExtractObserver,
}

impl<R: Read> Read for ProgressReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.observer.cancelled() {
            return Err(std::io::Error::other("extraction cancelled"));
        }
        let n = self.inner.read(buf)?;
        self.bytes = self.bytes.saturating_add(n as u64);
        if self.bytes.saturating_sub(self.reported) >= REPORT_EVERY_BYTES || n == 0 {
            self.reported = self.bytes;
            self.observer.bytes_read(self.bytes);
        }
        Ok(n)
    }
}

/// Extracts a Go execution trace.
pub fn extract_go_trace<R: Read>(
    reader: R,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    extract_go_trace_spilling(reader, options, sink, observer).map(|(summary, _)| summary)
}

/// [`extract_go_trace`], also saying how many events went through spill
/// runs (0: all were held).
pub(crate) fn extract_go_trace_spilling<R: Read>(
    reader: R,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<(ExtractionSummary, u64), ExtractError> {
    let mut input = ProgressReader {
        inner: reader,
        bytes: 0,
        reported: 0,
        observer,
    };
    let mut evidence = EvidenceSink::new(options, observer);
    let decoded = decode_go_trace_into(&mut input, &DecodeLimits::default(), &mut evidence);
    observer.bytes_read(input.bytes);
    if let Some(failure) = evidence.failure.take() {
        return Err(failure);
    }
    let decoded = decoded.map_err(|e| typed_error(e, input.bytes, observer))?;
    if observer.cancelled() {
        return Err(ExtractError::Cancelled);
    }
    note_limitations(&decoded.notes, &mut evidence.trace.log);
    let task_lanes = evidence.lay_out_tasks();
    if let Some(failure) = evidence.failure.take() {
        return Err(failure);
    }
    let held = evidence.trace.store.len() as u64;
    let spilled = evidence.spill.is_some();
    if held == 0 && !spilled && evidence.samples.is_empty() && evidence.trace.counters.is_empty() {
        return Err(ExtractError::Parse {
            message: format!(
                "the {} trace holds no goroutine, GC, sample or counter event",
                decoded.version
            ),
            offset: Some(input.bytes),
        });
    }
    super::tables::write_tables(
        evidence,
        &decoded,
        task_lanes,
        input.bytes,
        options,
        sink,
        observer,
    )
}

/// The extraction error a decoder failure is.
fn typed_error(e: GoTraceError, bytes: u64, observer: &dyn ExtractObserver) -> ExtractError {
    match e {
        GoTraceError::UnsupportedVersion { found, .. } => ExtractError::UnsupportedVersion {
            format: "go_trace",
            found: format!("go{found}"),
            supported: SUPPORTED.to_owned(),
        },
        GoTraceError::NotGoTrace { found } => ExtractError::Parse {
            message: format!(
                "not a Go execution trace: the header is {found:?}, not `go 1.NN trace`"
            ),
            offset: Some(0),
        },
        GoTraceError::Malformed { offset, .. } => ExtractError::Parse {
            message: e.to_string(),
            offset: Some(offset),
        },
        GoTraceError::MissingFrequency => ExtractError::Parse {
            message: "the Go execution trace never states its clock frequency: a go1.11–go1.21 \
                      trace writes it at its end, so the file is probably cut"
                .to_owned(),
            offset: Some(bytes),
        },
        GoTraceError::TooLarge { .. } => ExtractError::TooLarge {
            message: e.to_string(),
        },
        GoTraceError::Io(_) if observer.cancelled() => ExtractError::Cancelled,
        GoTraceError::Io(io) => ExtractError::from(io),
    }
}

/// The limitation code of a decoder note's kind.
fn note_code(kind: &str) -> &'static str {
    match kind {
        k if k.starts_with("damaged event stopped reading")
            || k.starts_with("damaged batch ended the trace") =>
        {
            "truncated_input"
        }
        k if k.starts_with("damaged") || k.starts_with("undecodable") => "malformed_event",
        "event with the wrong number of arguments skipped" => "malformed_event",
        k if k.starts_with("stack missing") => "stack_missing",
        "events read but not merged" => "events_not_merged",
        "no consistent order; event taken by time" => "events_out_of_order",
        "experimental batch skipped" => "experimental_batch_skipped",
        "generation without a frequency skipped" => "generation_skipped",
        "event not handled" => "event_not_handled",
        _ => "inconsistent_state",
    }
}

/// Turns the decoder's notes (`kind xN: example`) into limitations.
fn note_limitations(notes: &[String], log: &mut LimitationLog) {
    for line in notes {
        let (kind, count, example) = split_note(line);
        log.note_n(note_code(kind), count, || match example {
            Some(example) => format!("{kind} (first: {example})"),
            None => kind.to_owned(),
        });
    }
}

/// A note's kind, count and example: `kind xN: example` (the whole line,
/// once, when it does not read so).
fn split_note(line: &str) -> (&str, u64, Option<&str>) {
    for (at, _) in line.match_indices(" x") {
        let Some(rest) = line.get(at + 2..) else {
            continue;
        };
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if let (Some(kind), Some(n), Some(example)) = (
            line.get(..at),
            rest.get(..digits).filter(|d| !d.is_empty()),
            rest.get(digits..).and_then(|r| r.strip_prefix(": ")),
        ) {
            return (kind, n.parse().unwrap_or(1), Some(example));
        }
    }
    (line, 1, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_become_limitations_with_their_counts() {
        assert_eq!(
            split_note("stack missing from the stack table x12: stack 7"),
            ("stack missing from the stack table", 12, Some("stack 7"))
        );
        assert_eq!(split_note("odd x note"), ("odd x note", 1, None));
        let mut log = LimitationLog::default();
        note_limitations(
            &[
                "damaged event stopped reading x1: 3 bytes past the end".to_owned(),
                "GoStart of a goroutine not runnable x4: G7 was Blocked at 9 ns".to_owned(),
            ],
            &mut log,
        );
        assert_eq!(log.count("truncated_input"), 1);
        assert_eq!(log.count("inconsistent_state"), 4);
    }

    #[test]
    fn versions_and_headers_are_typed_errors() {
        let e = typed_error(
            GoTraceError::UnsupportedVersion {
                found: "1.10".into(),
                supported: "x",
            },
            16,
            &crate::api::NoObserver,
        );
        match e {
            ExtractError::UnsupportedVersion {
                format,
                found,
                supported,
            } => {
                assert_eq!((format, found.as_str()), ("go_trace", "go1.10"));
                assert_eq!(supported, SUPPORTED);
            }
            other => panic!("{other:?}"),
        }
        let e = typed_error(GoTraceError::MissingFrequency, 99, &crate::api::NoObserver);
        assert!(matches!(
            e,
            ExtractError::Parse {
                offset: Some(99),
                ..
            }
        ));
    }
}
