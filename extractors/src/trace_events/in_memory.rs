//! The end of the in-memory path: events held in the [`TraceBuilder`] are
//! nested, linked to their flows, labelled with phases and written as
//! `trace_events`, with their slice reductions kept for the caller
//! ([`in_memory_events`]), or written too, with the tracks and counters, for
//! a format that never spills ([`emit_held_trace`]).

use std::collections::BTreeMap;

use super::builder::TraceBuilder;
use super::emit;
use super::emitter::Emitter;
use super::external::EventsOutcome;
use super::ids::NONE;
use super::kinds::EventKind;
use super::nesting;
use crate::api::{BatchSink, ExtractError, ExtractObserver, ExtractOptions};
use crate::phase_cpu::{self, Phase};

/// Slices of one kind that give phases when a trace has no
/// `ProfilerStep#N`, and each track's thread
/// ([`nesting::assign_range_phases`]).
pub struct RangePhases<'a> {
    pub kind: EventKind,
    pub thread_of_track: &'a [Option<(i64, i64)>],
}

/// Nests, links and emits the events held in memory.
pub fn in_memory_events(
    p: &mut TraceBuilder,
    em: &mut Emitter,
    observer: &dyn ExtractObserver,
    ranges: Option<RangePhases>,
) -> Result<EventsOutcome, ExtractError> {
    let mut derived = nesting::nest(&p.store, &mut p.tracks, &mut p.log);
    let filled = nesting::fill_correlation_from_flows(&mut p.store, &derived, &p.tracks, &p.flows);
    p.log.note_n("correlation_from_flow", filled, || {
        "device activity without a correlation id was linked to its launch through a flow id"
            .to_string()
    });
    let has_phases = nesting::assign_phases(&p.store, &p.strings, &mut derived)
        || ranges.is_some_and(|r| {
            nesting::assign_range_phases(
                &p.store,
                &mut derived,
                |i| p.store.kind[i] == r.kind,
                r.thread_of_track,
            )
        });
    if observer.cancelled() {
        return Err(ExtractError::Cancelled);
    }
    emit::emit_trace_events(em, p, &derived)?;
    let agg = emit::aggregate_slices(p, &derived);
    let s = &p.store;
    let mut span: Option<(i64, i64)> = None;
    for i in 0..s.len() {
        let end = if s.dur[i] < 0 { s.ts[i] } else { s.end(i) };
        span = Some(match span {
            None => (s.ts[i], end),
            Some((a, b)) => (a.min(s.ts[i]), b.max(end)),
        });
    }
    Ok(EventsOutcome {
        agg: Some(agg),
        span,
        any_correlation: s.device.any(|f| f.correlation != NONE),
        any_external: s.device.any(|f| f.external != NONE),
        has_phases,
        flow_endpoints: p.flows.len() as u64,
        spilled_events: 0,
    })
}

/// Writes every table of a trace held whole (events, tracks, counters and
/// the slice reductions): the end of an extractor that never spills.
/// Returns what the events left for the summary (its `agg` taken) and the
/// rows written per table.
pub fn emit_held_trace(
    trace: &mut TraceBuilder,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<(EventsOutcome, BTreeMap<String, u64>), ExtractError> {
    trace.store.arena.finish_writes()?;
    let _phase = phase_cpu::enter(Phase::Nest);
    let mut em = Emitter::new(options, sink);
    let mut events = in_memory_events(trace, &mut em, observer, None)?;
    emit::emit_tracks(&mut em, trace)?;
    emit::emit_counters(&mut em, trace)?;
    if let Some(agg) = events.agg.take() {
        emit::write_slice_reductions(&mut em, agg)?;
    }
    Ok((events, em.into_rows()))
}
