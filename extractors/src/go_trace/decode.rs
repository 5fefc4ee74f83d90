//! The entry points: read a Go execution trace from a stream and deliver
//! its timeline to a [`TimelineSink`] (or collect it into a [`GoTrace`]).
//!
//! Memory: a 1.11–1.21 trace is read whole into memory (bounded by
//! [`DecodeLimits::max_v1_bytes`]) because its per-P batches must be merged
//! in causal order and its frequency and stack table are in the footer; the
//! decoder then holds the tables, one batch of events per P, and the open
//! state of each goroutine and P. A 1.22+ trace is streamed one generation
//! at a time (bounded by [`DecodeLimits::max_generation_bytes`]). The
//! timeline goes to the sink as intervals close, so a streaming sink holds
//! nothing more; [`GoTimeline`] holds it all.

use std::collections::BTreeMap;
use std::io::{BufReader, Read};

use super::convert_v1::decode_v1;
use super::error::{DecodeLimits, GoTraceError};
use super::generations_v2::decode_v2;
use super::header::{TraceFormat, read_header};
use super::model::{GoTimeline, GoTrace, GoTraceSummary, TimelineSink};
use super::states::TimelineBuilder;
use super::{events_v1, events_v2};

/// Decodes a whole trace into memory.
pub fn decode_go_trace(reader: impl Read, limits: &DecodeLimits) -> Result<GoTrace, GoTraceError> {
    let mut timeline = GoTimeline::default();
    let summary = decode_go_trace_into(reader, limits, &mut timeline)?;
    Ok(GoTrace { summary, timeline })
}

/// Decodes a trace, handing the timeline to `sink` as it is derived.
/// Damage after the first readable events is not an error: the summary's
/// notes say what was skipped. On `Err` the sink may hold part of a
/// timeline and should be discarded.
pub fn decode_go_trace_into<S: TimelineSink>(
    mut reader: impl Read,
    limits: &DecodeLimits,
    sink: &mut S,
) -> Result<GoTraceSummary, GoTraceError> {
    let version = read_header(&mut reader)?;
    let mut builder = TimelineBuilder::new(sink);
    let mut by_type = BTreeMap::new();
    let mut add = |name: &str, n: u64| {
        if n > 0 {
            let slot = by_type.entry(name.to_string()).or_insert(0u64);
            *slot = slot.saturating_add(n);
        }
    };
    let (ticks_per_second, generations, unknown_events, notes) = match version.format() {
        TraceFormat::PerProcBatches => {
            let mut body = Vec::new();
            let cap = limits.max_v1_bytes;
            reader
                .by_ref()
                .take(cap.saturating_add(1))
                .read_to_end(&mut body)?;
            if body.len() as u64 > cap {
                return Err(GoTraceError::TooLarge {
                    what: "the trace",
                    size: body.len() as u64,
                    limit: cap,
                });
            }
            let out = decode_v1(&body, version.minor, &mut builder)?;
            for (name, &n) in events_v1::EVENT_NAMES.iter().zip(out.counts.iter()) {
                add(name, n);
            }
            (out.ticks_per_second, 0, 0, out.notes)
        }
        TraceFormat::Generations => {
            let mut buffered = BufReader::new(reader);
            let out = decode_v2(&mut buffered, version.minor, limits, &mut builder)?;
            for (&ty, &n) in &out.counts {
                let name = events_v2::EVENT_NAMES
                    .get(usize::from(ty))
                    .copied()
                    .unwrap_or("Unknown");
                add(name, n);
            }
            (
                out.ticks_per_second,
                out.generations,
                out.unknown_events,
                out.notes,
            )
        }
    };
    let last = builder.last_ns;
    let totals = builder.finish(last);
    let mut all_notes = notes;
    all_notes.merge(totals.notes);
    Ok(GoTraceSummary {
        version,
        events: by_type.values().fold(0u64, |a, &n| a.saturating_add(n)),
        events_by_type: by_type,
        goroutines: totals.goroutines,
        procs: totals.procs,
        gc_cycles: totals.gc_cycles,
        unknown_events,
        duration_ns: totals.end_ns,
        ticks_per_second,
        generations,
        notes: all_notes.lines(),
    })
}
