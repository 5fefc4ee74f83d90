//! The Perfetto protobuf extractor: Android system traces, Chrome, the
//! Perfetto SDK, `tracing-perfetto` in Rust, Perfetto's Python builder and
//! anything else that writes a `Trace` of `TracePacket`s.
//!
//! Pipeline: [`reader`] frames packets one at a time from a buffered
//! reader → [`decoder`] decodes each with prost ([`proto`]), applies the
//! sequence's incremental state ([`sequence`]) and clocks ([`clocks`]) and
//! dispatches track events ([`track_event`], [`annotations`]), ftrace ([`ftrace`],
//! [`atrace`]) and callstack samples ([`samples`]) → at the end, slots
//! become tracks ([`finish`]) and the shared nesting, emission
//! and slice reductions write the tables. Past the in-memory budget,
//! finished events leave for spill runs while decoding ([`spill`]).

pub mod annotations;
pub mod atrace;
pub mod clocks;
pub mod counter_runs;
pub mod decoder;
pub mod finish;
mod format;
pub mod ftrace;
pub mod ftrace_records;
pub mod interrupts;
mod legacy_event;
pub mod pending_samples;
pub mod proto;
pub mod reader;
pub mod samples;
pub mod sequence;
pub mod session;
pub mod spill;
#[cfg(test)]
mod spill_tests;
pub mod track_event;
pub mod track_event_view;
pub mod wire;

use std::collections::BTreeMap;
use std::io::BufRead;

use crate::api::{
    BatchSink, CountingSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary,
};
use crate::format_kind::FormatKind;
use crate::stacks::{ReductionSpec, ThreadInfo};
use crate::trace_events::emit;
use crate::trace_events::emitter::Emitter;
use crate::trace_events::external::{EventsOutcome, SliceReductions, Spill};
use crate::trace_events::kinds::EventKind;
use crate::trace_events::nesting;
use decoder::Decoder;
use reader::{Next, PacketReader};

pub use format::FORMAT;

pub const PERFETTO_EXTRACTOR_NAME: &str = "perfetto_protobuf";
/// Bumped whenever the rows produced for the same input change.
pub const PERFETTO_EXTRACTOR_VERSION: &str = "2";

const POLL_EVERY: u64 = 4096;

/// Extracts a Perfetto protobuf trace from `reader`.
pub fn extract_perfetto<R: BufRead>(
    reader: R,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError> {
    extract_perfetto_spilling(reader, options, sink, observer).map(|(summary, _)| summary)
}

/// [`extract_perfetto`], also returning how many events went through spill
/// runs ([`spill`]).
pub(crate) fn extract_perfetto_spilling<R: BufRead>(
    reader: R,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<(ExtractionSummary, u64), ExtractError> {
    let mut packets = PacketReader::new(reader);
    let mut session = session::SystemTrace::new(options);
    let mut framed: u64 = 0;
    loop {
        if framed.is_multiple_of(POLL_EVERY) {
            observer.bytes_read(packets.offset());
            if observer.cancelled() {
                return Err(ExtractError::Cancelled);
            }
        }
        match packets.next_packet()? {
            Next::Packet => {
                framed += 1;
                let bytes = std::mem::take(&mut packets.packet);
                session.d.packet(&bytes);
                packets.packet = bytes;
                session.spill_if_due()?;
            }
            Next::End => break,
            Next::Truncated if framed > 0 => {
                let at = packets.offset();
                session.d.p.log.note("truncated_input", || {
                    format!(
                        "input ends at byte {at} inside a packet; the complete packets were kept"
                    )
                });
                break;
            }
            Next::Truncated => {
                return Err(ExtractError::Parse {
                    message: format!(
                        "the input ends after {} bytes before any complete trace packet",
                        packets.offset()
                    ),
                    offset: Some(packets.offset()),
                });
            }
            Next::Corrupt(why) if framed == 0 => {
                return Err(ExtractError::Parse {
                    message: format!("not a Perfetto trace: {why}"),
                    offset: Some(packets.offset()),
                });
            }
            Next::Corrupt(why) => {
                session.d.p.log.note("truncated_input", || {
                    format!("the trace is corrupt after {framed} packets ({why}); the packets before were kept")
                });
                break;
            }
        }
    }
    observer.bytes_read(packets.offset());
    if framed == 0 {
        return Err(ExtractError::Parse {
            message: "the input holds no trace packet".to_string(),
            offset: Some(0),
        });
    }
    let input = (packets.offset(), packets.skipped_fields);
    session.finish(options, sink, observer, input, None)
}

fn write_tables(
    mut d: Decoder,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
    spill: Option<Spill>,
    (input_bytes, skipped_top_level): (u64, u64),
    source: Option<session::ForeignSource>,
) -> Result<(ExtractionSummary, u64), ExtractError> {
    // Reading is over: what follows is nesting and emission.
    let _phase = crate::phase_cpu::enter(crate::phase_cpu::Phase::Nest);
    let mut em = Emitter::new(options, sink);
    let mut agg = std::mem::take(&mut d.agg);
    let wall = agg.metric(ReductionSpec {
        metric: "trace.wall_ns".into(),
        weight_unit: "ns".into(),
        unit: "ns".into(),
    });
    let events = match spill {
        Some(spill) => {
            let into = SliceReductions {
                agg,
                metric: wall,
                include: EventKind::in_stacks,
            };
            let events = spill.finish_with(&mut d.p, &mut em, observer, &[], Some(into))?;
            emit::emit_tracks(&mut em, &d.p)?;
            emit_counters(&mut em, &mut d)?;
            events
        }
        None => in_memory_events(&mut d, &mut em, agg, wall)?,
    };
    let Some(mut agg) = events.agg else {
        return Err(ExtractError::Parse {
            message: "the slice reductions went missing".into(),
            offset: None,
        });
    };
    let mut sample_span: Option<(i64, i64)> = None;
    d.sampled = !d.samples.is_empty();
    if d.sampled {
        let cpu = agg.metric(ReductionSpec {
            metric: "cpu.samples".into(),
            weight_unit: "samples".into(),
            unit: "samples".into(),
        });
        // Threads in order of first use (sample threads are numbered in
        // that order), as the aggregator numbers them.
        let thread_of: Vec<u32> = d
            .sample_threads
            .iter()
            .map(|&(pid, tid)| agg.thread(sample_thread_info(&d, pid, tid)))
            .collect();
        // The aggregator sorts its samples, so the order they move over in
        // does not matter.
        let mut pending = std::mem::take(&mut d.samples);
        agg.reserve_unit_samples(cpu, usize::try_from(pending.len()).unwrap_or(usize::MAX));
        pending.drain(|s| {
            if let Some(&thread) = thread_of.get(s.thread as usize) {
                agg.add_metric_sample(cpu, s.stack, thread, Some(s.ts), 1, 1);
            }
            sample_span = Some(match sample_span {
                None => (s.ts, s.ts),
                Some((a, b)) => (a.min(s.ts), b.max(s.ts)),
            });
        })?;
    }
    let symbolized = d.agg_symbolized(&agg);
    {
        let mut counting = CountingSink {
            inner: &mut *em.sink,
            rows: &mut em.rows,
        };
        agg.finish_all(
            &options.run_id,
            &options.artifact_id,
            em.batch_rows,
            &mut counting,
        )?;
    }
    let rows = em.into_rows();
    let span = time_span(&d, events.span, sample_span);
    let summary = summarize(
        d,
        options,
        rows,
        span,
        events.has_phases,
        symbolized,
        input_bytes,
        skipped_top_level,
        source,
    );
    Ok((summary, events.spilled_events))
}

/// Writes `counters`: from the runs, named on the way out, once some were
/// spilled; else from the rows held.
fn emit_counters(em: &mut Emitter, d: &mut Decoder) -> Result<(), ExtractError> {
    match (&mut d.counter_runs, &d.counter_naming) {
        (Some(runs), Some(naming)) if runs.spilled() => {
            let rows = runs.merge()?.map(|row| {
                let mut row = row?;
                naming.apply(&mut row)?;
                Ok(row)
            });
            emit::emit_counter_rows(em, &d.p.strings, rows)
        }
        _ => emit::emit_counters(em, &d.p),
    }
}

/// Nests, emits and reduces the events held in memory (tracks and
/// counters too, in the spilled path's table order).
fn in_memory_events(
    d: &mut Decoder,
    em: &mut Emitter,
    mut agg: crate::stacks::StackAggregator,
    wall: crate::stacks::MetricId,
) -> Result<EventsOutcome, ExtractError> {
    let mut derived = nesting::nest(&d.p.store, &mut d.p.tracks, &mut d.p.log);
    let has_phases = nesting::assign_phases(&d.p.store, &d.p.strings, &mut derived);
    emit::emit_trace_events(em, &d.p, &derived)?;
    emit::emit_tracks(em, &d.p)?;
    emit_counters(em, d)?;
    emit::aggregate_slices_into(&mut agg, wall, &d.p, &derived, EventKind::in_stacks);
    let s = &d.p.store;
    let span = (0..s.len())
        .map(|i| {
            let end = if s.dur[i] < 0 { s.ts[i] } else { s.end(i) };
            (s.ts[i], end)
        })
        .reduce(|(a, b), (c, e)| (a.min(c), b.max(e)));
    Ok(EventsOutcome {
        agg: Some(agg),
        span,
        any_correlation: false,
        any_external: false,
        has_phases,
        flow_endpoints: 0,
        spilled_events: 0,
    })
}

/// The thread of a sample's `(pid, tid)` with what the trace said about
/// it (a pid of 0 is taken from the thread's descriptor).
fn sample_thread_info(d: &Decoder, pid: i64, tid: i64) -> ThreadInfo {
    let known = i32::try_from(tid).ok().and_then(|t| d.threads.get(&t));
    let pid = if pid != 0 {
        Some(pid)
    } else {
        known.and_then(|k| k.0).map(i64::from)
    };
    ThreadInfo {
        pid,
        tid: (tid != 0).then_some(tid),
        thread_name: known.and_then(|k| k.1.clone()),
        process_name: pid
            .and_then(|p| i32::try_from(p).ok())
            .and_then(|p| d.process_names.get(&p).cloned()),
    }
}

/// Earliest start and latest end over events, counters and samples.
fn time_span(
    d: &Decoder,
    events: Option<(i64, i64)>,
    samples: Option<(i64, i64)>,
) -> Option<(i64, i64)> {
    events
        .into_iter()
        .chain(d.counter_span)
        .chain(samples)
        .reduce(|(a, b), (c, e)| (a.min(c), b.max(e)))
}

#[allow(clippy::too_many_arguments)]
fn summarize(
    d: Decoder,
    options: &ExtractOptions,
    rows: BTreeMap<String, u64>,
    span: Option<(i64, i64)>,
    has_phases: bool,
    symbolized: bool,
    input_bytes: u64,
    skipped_top_level: u64,
    source: Option<session::ForeignSource>,
) -> ExtractionSummary {
    let packet_counts = d.packet_counts();
    let producer_hint = d.producer_hint;
    let count = |name: &str| packet_counts.get(name).copied().unwrap_or(0);
    let has_kind = |k: EventKind| d.kinds_seen & (1 << (k as u8)) != 0;
    let mut coverage = BTreeMap::new();
    coverage.insert("track_events".to_string(), count("track_event") > 0);
    coverage.insert("scheduling".to_string(), has_kind(EventKind::SchedSlice));
    coverage.insert(
        "thread_states".to_string(),
        has_kind(EventKind::ThreadState),
    );
    coverage.insert(
        "callstack_samples".to_string(),
        rows.get("samples").copied().unwrap_or(0) > 0,
    );
    coverage.insert("counters".to_string(), d.counter_span.is_some());
    coverage.insert("process_names".to_string(), !d.process_names.is_empty());
    coverage.insert("clock_snapshots".to_string(), d.clocks.snapshots > 0);
    coverage.insert("compressed_packets".to_string(), d.compressed_packets > 0);
    coverage.insert("phase_annotations".to_string(), has_phases);
    coverage.insert("symbolized_frames".to_string(), symbolized);
    let mut metadata = BTreeMap::new();
    metadata.insert(
        "packets_by_type".to_string(),
        serde_json::json!(packet_counts),
    );
    metadata.insert(
        "trace_clock".to_string(),
        serde_json::json!(d.clocks.trace_clock()),
    );
    metadata.insert(
        "sequences".to_string(),
        serde_json::json!(d.sequences.len()),
    );
    if skipped_top_level > 0 {
        metadata.insert(
            "skipped_top_level_fields".to_string(),
            serde_json::json!(skipped_top_level),
        );
    }
    let input_events = d.packets;
    let mut summary = ExtractionSummary {
        extractor: PERFETTO_EXTRACTOR_NAME.to_string(),
        extractor_version: PERFETTO_EXTRACTOR_VERSION.to_string(),
        format: FormatKind::PerfettoProtobuf.name().to_string(),
        producer: String::new(),
        rows,
        time_span_ns: span,
        tracks: d.p.tracks.list.len() as u64,
        coverage,
        limitations: d.p.log.into_limitations(),
        metadata,
        input_bytes,
        input_events,
        max_event_dur_ns: None,
    };
    if let Some(source) = source {
        // Another format's reader fed the decoder: packets mean nothing.
        summary.metadata.remove("packets_by_type");
        summary.metadata.remove("sequences");
        summary.metadata.remove("trace_clock");
        summary.coverage.remove("track_events");
        summary.coverage.remove("clock_snapshots");
        summary.coverage.remove("compressed_packets");
        summary.metadata.extend(source.metadata);
        summary.extractor = source.extractor.to_string();
        summary.extractor_version = source.extractor_version.to_string();
        summary.format = source.format.name().to_string();
        summary.producer = options.producer.clone().unwrap_or(source.producer);
        summary.input_events = source.input_events;
        return summary;
    }
    let unknown: u64 = packet_counts
        .iter()
        .filter(|(k, _)| !proto::packet_field_name_known(k))
        .map(|(_, v)| *v)
        .sum();
    summary
        .metadata
        .insert("packets_not_read".to_string(), serde_json::json!(unknown));
    summary.producer = options.producer.clone().unwrap_or_else(|| {
        if count("ftrace_events") > 0 {
            "perfetto.system".to_string()
        } else if let Some(hint) = producer_hint {
            hint.to_string()
        } else {
            "perfetto.track_event".to_string()
        }
    });
    summary
}

impl Decoder {
    /// Whether every sampled frame has a function name.
    fn agg_symbolized(&self, agg: &crate::stacks::StackAggregator) -> bool {
        agg.all_symbolized()
    }
}
