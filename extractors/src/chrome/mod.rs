//! The Chrome Trace Event Format (JSON) extractor: Kineto / torch.profiler,
//! Chromium, Node, JAX, py-spy and anything else that writes `traceEvents`.
//!
//! Pipeline: [`scanner`] streams array elements and [`event_index`] checks
//! each and locates its fields (both on a second thread) → [`event`] reads
//! the fields as borrowed text → [`process`] interprets phases into the
//! shared [`crate::trace_events`] builder, whose nesting (parents, self
//! time, flows, phases) and emission (sorted batches, the [`crate::stacks`]
//! reductions) end every timeline format.

pub mod event;
pub mod event_index;
#[cfg(test)]
mod external_tests;
mod format;
pub mod process;
pub mod scan_thread;
pub mod scanner;
pub mod time;

use std::collections::BTreeMap;
use std::io::BufRead;
use std::sync::mpsc::{Receiver, Sender, channel, sync_channel};

use crate::api::{BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary};
use crate::phase_cpu::{self, Phase};
use crate::trace_events::args_arena;
use crate::trace_events::emit;
use crate::trace_events::emitter::Emitter;
use crate::trace_events::external::Spill;
use crate::trace_events::ids::NONE;
use crate::trace_events::in_memory::in_memory_events;
use crate::trace_events::spill_phases::PhaseCollector;
use crate::trace_events::tracks::TrackKind;
use process::Processor;
use scan_thread::ScannedBatch;
use scanner::Scanner;

pub use format::FORMAT;

/// Extractor name stamped on summaries and operation digests.
pub const CHROME_EXTRACTOR_NAME: &str = "chrome_json";
/// Bumped whenever the rows or the metadata produced for the same input
/// change (a new version supersedes; the same one reuses the generation).
pub const CHROME_EXTRACTOR_VERSION: &str = "3";

/// How often (in events) progress and cancellation are polled.
const POLL_EVERY: u64 = 4096;

/// Extracts a Chrome trace-event JSON document from `reader`.
pub fn extract_chrome_json<R: BufRead + Send>(
    reader: R,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    extract_chrome_json_spilling(reader, options, sink, observer).map(|(summary, _)| summary)
}

/// [`extract_chrome_json`], also returning how many events went through
/// spill runs ([`crate::trace_events::external`]).
pub(crate) fn extract_chrome_json_spilling<R: BufRead + Send>(
    reader: R,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<(ExtractionSummary, u64), ExtractError> {
    let mut scanner = Scanner::new(reader);
    scanner.start()?;
    let mut p = Processor::new(options.max_args_bytes);
    p.trace.store.arena = args_arena::ArgsArena::new(options.spill_dir.clone());
    let spill_to = options
        .spill_dir
        .as_deref()
        .map(|dir| (dir, options.spill_after_events));
    let mut spill = None;
    let mut index: u64 = 0;
    let (full_tx, full_rx) = sync_channel(scan_thread::BATCHES_IN_FLIGHT);
    let (empty_tx, empty_rx) = channel();
    let (processed, scanned) = std::thread::scope(|threads| {
        let scanning = threads.spawn(move || {
            let _phase = phase_cpu::enter(Phase::Decode);
            scan_thread::scan_batches(scanner, full_tx, empty_rx)
        });
        // Owns the receiver: returning (even early) hangs up on the scanner.
        let processed = process_batches(
            &mut p,
            &mut index,
            (full_rx, empty_tx),
            observer,
            spill_to,
            &mut spill,
        );
        (processed, scanning.join())
    });
    let scanned = scanned.map_err(|_| ExtractError::Parse {
        message: "the trace scanner thread panicked".into(),
        offset: None,
    })?;
    processed?;
    let scan_thread::ScanOutcome {
        scanner,
        truncated,
        closed,
    } = scanned?;
    let complete_events = index;
    if truncated && complete_events == 0 {
        return Err(ExtractError::Parse {
            message: format!(
                "the trace ends after {} bytes before any complete event{}",
                scanner.offset(),
                scanner
                    .corrupt
                    .as_deref()
                    .map(|c| format!(" ({c})"))
                    .unwrap_or_default()
            ),
            offset: Some(scanner.offset()),
        });
    }
    if truncated || !closed {
        let offset = scanner.offset();
        let why = scanner.corrupt.clone();
        p.trace.log.note("truncated_input", || match why {
            Some(c) => {
                format!("input stopped at byte {offset}: {c}; the complete events were kept")
            }
            None => format!(
                "input ends at byte {offset} inside the trace; the complete events were kept"
            ),
        });
    }
    if scanner.trailing_data {
        p.trace.log.note("trailing_data_ignored", || {
            "bytes after the trace document were ignored".to_string()
        });
    }
    observer.bytes_read(scanner.offset());
    p.trace.close_open();
    p.finish_reading();

    p.trace.store.arena.finish_writes()?;
    let mut metadata = summarize_metadata(&scanner.metadata);
    if scanner.metadata_dropped > 0 {
        metadata.insert(
            "omitted_keys".to_string(),
            serde_json::json!(scanner.metadata_dropped),
        );
    }
    let kineto_meta = [
        "schemaVersion",
        "deviceProperties",
        "distributedInfo",
        "traceName",
    ]
    .iter()
    .any(|k| metadata.contains_key(*k));
    let mut em = Emitter::new(options, sink);
    let _phase = phase_cpu::enter(Phase::Nest);
    let events = match spill {
        // The merges and sorts charge their own threads to `Spill`; the
        // walk over them here is nesting.
        Some(spill) => spill.finish(&mut p.trace, &mut em, observer, &[])?,
        None => in_memory_events(&mut p.trace, &mut em, observer, None)?,
    };
    emit::emit_tracks(&mut em, &p.trace)?;
    emit::emit_counters(&mut em, &p.trace)?;
    if let Some(agg) = events.agg {
        emit::write_slice_reductions(&mut em, agg)?;
    }
    let rows = em.into_rows();

    let mut coverage = BTreeMap::new();
    coverage.insert("correlation_ids".to_string(), events.any_correlation);
    coverage.insert("external_ids".to_string(), events.any_external);
    coverage.insert(
        "stream_identity".to_string(),
        p.trace
            .tracks
            .list
            .iter()
            .any(|t| t.kind == TrackKind::GpuStream && t.stream != NONE),
    );
    coverage.insert("phase_annotations".to_string(), events.has_phases);
    coverage.insert("flows".to_string(), events.flow_endpoints > 0);
    coverage.insert("counters".to_string(), !p.trace.counters.is_empty());
    coverage.insert("symbolized_frames".to_string(), true);
    let producer = options.producer.clone().unwrap_or_else(|| {
        if p.kineto_seen || kineto_meta {
            "torch.profiler".to_string()
        } else if p.pyspy_seen {
            "py-spy".to_string()
        } else {
            "chrome".to_string()
        }
    });
    if events.flow_endpoints > 0 {
        metadata.insert(
            "flow_endpoints".to_string(),
            serde_json::json!(events.flow_endpoints),
        );
    }
    let summary = ExtractionSummary {
        extractor: CHROME_EXTRACTOR_NAME.to_string(),
        extractor_version: CHROME_EXTRACTOR_VERSION.to_string(),
        format: crate::format_kind::FormatKind::ChromeJson
            .name()
            .to_string(),
        producer,
        rows,
        time_span_ns: events.span,
        tracks: p.trace.tracks.list.len() as u64,
        coverage,
        limitations: p.trace.log.into_limitations(),
        metadata,
        input_bytes: scanner.offset(),
        input_events: index,
        max_event_dur_ns: None,
    };
    Ok((summary, events.spilled_events))
}

/// Parses and processes the scanned batches in order (the calling thread's
/// half of the pipeline), polling progress and cancellation.
/// When `spill_to` names a folder, events beyond its budget go to spill
/// runs there ([`crate::trace_events::external`]).
fn process_batches(
    p: &mut Processor,
    index: &mut u64,
    (full, empty): (Receiver<ScannedBatch>, Sender<ScannedBatch>),
    observer: &dyn ExtractObserver,
    spill_to: Option<(&std::path::Path, usize)>,
    spill: &mut Option<Spill>,
) -> Result<(), ExtractError> {
    if observer.cancelled() {
        return Err(ExtractError::Cancelled);
    }
    let mut next_poll = 0;
    for batch in full {
        if *index >= next_poll {
            next_poll = *index + POLL_EVERY;
            observer.bytes_read(batch.offset);
            if observer.cancelled() {
                return Err(ExtractError::Cancelled);
            }
        }
        let mut start = 0;
        for element in &batch.elements {
            let this = *index;
            *index += 1;
            let bytes = &batch.bytes[start..element.end];
            start = element.end;
            handle_element(p, this, bytes, element);
        }
        // The scanner may have finished already; a lost buffer is harmless.
        let _ = empty.send(batch);
        if let Some((dir, budget)) = spill_to
            && p.trace.store.len() >= budget
        {
            let spill = match spill {
                Some(spill) => spill,
                None => spill.insert(Spill::create(dir, budget, PhaseCollector::default())?),
            };
            if spill.due(&p.trace.store) {
                spill.write_run(&mut p.trace, false)?;
            }
        }
    }
    Ok(())
}

/// One array element: skipped with a note when malformed, else processed.
fn handle_element(
    p: &mut Processor,
    this: u64,
    bytes: &[u8],
    element: &scan_thread::ScannedElement,
) {
    if element.too_big {
        p.trace.log.note("malformed_event", || {
            format!(
                "event #{this} is larger than {} bytes; skipped",
                scanner::MAX_EVENT_BYTES
            )
        });
        return;
    }
    if !element.is_object {
        p.trace.log.note("malformed_event", || {
            format!("array element #{this} is not an object; skipped")
        });
        return;
    }
    if element.control_chars > 0 {
        p.trace.log.note_n(
            "control_characters_escaped",
            element.control_chars.into(),
            || format!("event #{this} has raw control characters inside strings; escaped"),
        );
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => match &element.index {
            Ok(spans) => p.handle_indexed(this, text, spans),
            Err(e) => p.malformed(this, &e.to_string()),
        },
        Err(_) => {
            p.trace.log.note("invalid_utf8_replaced", || {
                format!("event #{this} has invalid UTF-8; replaced with U+FFFD")
            });
            let text = String::from_utf8_lossy(bytes).into_owned();
            p.handle(this, &text);
        }
    }
}

/// Fields of each Kineto `deviceProperties` entry kept in the metadata.
const DEVICE_PROPERTIES_KEPT: &[&str] = &[
    "id",
    "name",
    "numSms",
    "maxThreadsPerMultiprocessor",
    "regsPerMultiprocessor",
    "sharedMemPerMultiprocessor",
    "totalGlobalMem",
    "computeMajor",
    "computeMinor",
    "warpSize",
];

/// Keeps the small, useful top-level values (`distributedInfo`,
/// `deviceProperties` count and names, `traceName`, …); large values are
/// recorded by size only.
fn summarize_metadata(
    raw: &[(String, Option<Vec<u8>>, usize)],
) -> BTreeMap<String, serde_json::Value> {
    use serde_json::{Value, json};
    let mut out = BTreeMap::new();
    for (key, bytes, size) in raw {
        let value = bytes
            .as_ref()
            .and_then(|b| serde_json::from_slice::<Value>(b).ok());
        match (key.as_str(), value) {
            ("deviceProperties", Some(Value::Array(devices))) => {
                out.insert("deviceProperties_count".to_string(), json!(devices.len()));
                // Identity and the SM resources launch geometry is judged
                // against (`analyze_gpu_diagnosis`).
                let names: Vec<Value> = devices
                    .iter()
                    .map(|d| {
                        let mut kept = serde_json::Map::new();
                        for key in DEVICE_PROPERTIES_KEPT {
                            if let Some(v) = d.get(*key).filter(|v| v.is_number() || v.is_string())
                            {
                                kept.insert((*key).to_owned(), v.clone());
                            }
                        }
                        Value::Object(kept)
                    })
                    .collect();
                out.insert("deviceProperties".to_string(), Value::Array(names));
            }
            (_, Some(v)) if *size <= 16 * 1024 => {
                out.insert(key.clone(), v);
            }
            _ => {
                out.insert(key.clone(), json!({"omitted_bytes": size}));
            }
        }
    }
    out
}
