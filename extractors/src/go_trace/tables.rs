//! Writing what the [`EvidenceSink`] built: `trace_events` (held, or
//! merged from spill runs), `tracks`, `counters`, then the stack tables —
//! the user annotations' `trace.wall_ns` reductions and the CPU samples
//! under `cpu.samples` — and the extraction summary.

use std::collections::BTreeMap;

use serde_json::json;

use super::cpu_samples::add_samples;
use super::evidence_sink::{EvidenceSink, PROCESS_LABEL};
use super::extract::{GO_TRACE_EXTRACTOR_NAME, GO_TRACE_EXTRACTOR_VERSION};
use super::model::GoTraceSummary;
use crate::api::{
    BatchSink, CountingSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary,
};
use crate::format_kind::FormatKind;
use crate::stacks::{MetricId, ReductionSpec, StackAggregator, ThreadInfo};
use crate::trace_events::builder::TraceBuilder;
use crate::trace_events::emit;
use crate::trace_events::emitter::Emitter;
use crate::trace_events::external::SliceReductions;
use crate::trace_events::kinds::EventKind;
use crate::trace_events::nesting;

/// Timed samples held per event of the in-memory budget before they go to
/// sorted runs (16 bytes each where an event takes about 130).
const SAMPLES_PER_EVENT_OF_BUDGET: usize = 4;

/// Only user annotations (regions, tasks) are frames of `trace.wall_ns`:
/// scheduling rows are time on a P or in a state, and GC slices are the
/// GC in progress (as frames, "GC" would top the hotspots and lead the
/// summary of every trace without CPU samples, hiding where the Ps went).
fn reduced_kind(kind: EventKind) -> bool {
    kind == EventKind::UserAnnotation
}

fn widen(a: Option<(i64, i64)>, b: Option<(i64, i64)>) -> Option<(i64, i64)> {
    match (a, b) {
        (Some((s, e)), Some((s2, e2))) => Some((s.min(s2), e.max(e2))),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Nests and writes the held events; their slices go into `agg`.
fn held_events(
    trace: &mut TraceBuilder,
    em: &mut Emitter,
    observer: &dyn ExtractObserver,
    agg: &mut StackAggregator,
    wall: MetricId,
) -> Result<Option<(i64, i64)>, ExtractError> {
    let derived = nesting::nest(&trace.store, &mut trace.tracks, &mut trace.log);
    if observer.cancelled() {
        return Err(ExtractError::Cancelled);
    }
    emit::emit_trace_events(em, trace, &derived)?;
    emit::aggregate_slices_into(agg, wall, trace, &derived, reduced_kind);
    let s = &trace.store;
    Ok((0..s.len())
        .map(|i| (s.ts[i], s.end(i)))
        .reduce(|(a, b), (c, e)| (a.min(c), b.max(e))))
}

/// Writes every table; returns the summary and the events that went
/// through spill runs.
pub(super) fn write_tables(
    mut ev: EvidenceSink<'_>,
    decoded: &GoTraceSummary,
    task_lanes: u32,
    input_bytes: u64,
    options: &ExtractOptions,
    sink: &mut dyn BatchSink,
    observer: &dyn ExtractObserver,
) -> Result<(ExtractionSummary, u64), ExtractError> {
    ev.trace.store.arena.finish_writes()?;
    let mut em = Emitter::new(options, sink);
    let mut agg = StackAggregator::new();
    if let Some(dir) = options.spill_dir.as_deref() {
        let held = options
            .spill_after_events
            .saturating_mul(SAMPLES_PER_EVENT_OF_BUDGET);
        agg.spill_samples_to(dir, held);
    }
    let wall = agg.metric(ReductionSpec {
        metric: "trace.wall_ns".into(),
        weight_unit: "ns".into(),
        unit: "ns".into(),
    });
    let (mut agg, span, spilled_events) = match ev.spill.take() {
        Some(spill) => {
            let into = SliceReductions {
                agg,
                metric: wall,
                include: reduced_kind,
            };
            let out = spill.finish_with(&mut ev.trace, &mut em, observer, &[], Some(into))?;
            let agg = out.agg.ok_or_else(|| ExtractError::Parse {
                message: "the slice reductions went missing".into(),
                offset: None,
            })?;
            (agg, out.span, out.spilled_events)
        }
        None => {
            let span = held_events(&mut ev.trace, &mut em, observer, &mut agg, wall)?;
            (agg, span, 0)
        }
    };
    emit::emit_tracks(&mut em, &ev.trace)?;
    emit::emit_counters(&mut em, &ev.trace)?;
    if observer.cancelled() {
        return Err(ExtractError::Cancelled);
    }
    let samples = ev.samples.len() as u64;
    let mut sample_span = None;
    if samples > 0 {
        let cpu = agg.metric(ReductionSpec {
            metric: "cpu.samples".into(),
            weight_unit: "samples".into(),
            unit: "samples".into(),
        });
        let (names, strings) = (&ev.names, &ev.trace.strings);
        let thread_of = |g: u64| ThreadInfo {
            pid: None,
            tid: (g != 0).then(|| i64::try_from(g).ok()).flatten(),
            thread_name: Some(match names.get(&g) {
                Some(&id) => strings.get(id).to_owned(),
                None if g == 0 => "no goroutine".to_owned(),
                None => format!("G{g}"),
            }),
            process_name: Some(PROCESS_LABEL.to_owned()),
        };
        sample_span = add_samples(
            &mut agg,
            cpu,
            &ev.samples,
            &mut ev.stacks,
            thread_of,
            &mut ev.trace.log,
        );
    }
    let symbolized = agg.all_symbolized();
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
    let counter_span = ev
        .trace
        .counters
        .iter()
        .map(|c| (c.ts, c.ts))
        .reduce(|(a, b), (c, d)| (a.min(c), b.max(d)));
    let span = widen(widen(span, sample_span), counter_span);
    let t = &ev.totals;
    let mut coverage = BTreeMap::new();
    coverage.insert("goroutine_states".to_owned(), t.states > 0);
    coverage.insert("cpu_samples".to_owned(), samples > 0);
    coverage.insert("counters".to_owned(), !ev.trace.counters.is_empty());
    coverage.insert("gc".to_owned(), t.gc_slices > 0);
    coverage.insert(
        "user_annotations".to_owned(),
        t.regions > 0 || task_lanes > 0,
    );
    coverage.insert("symbolized_frames".to_owned(), symbolized);
    let mut metadata = BTreeMap::new();
    metadata.insert("version".to_owned(), json!(decoded.version.to_string()));
    metadata.insert("goroutines".to_owned(), json!(decoded.goroutines));
    metadata.insert("procs".to_owned(), json!(decoded.procs));
    metadata.insert("gc_cycles".to_owned(), json!(decoded.gc_cycles));
    metadata.insert("gc_cycle_ns".to_owned(), json!(t.gc_cycle_ns));
    metadata.insert("stop_the_world_ns".to_owned(), json!(t.stop_the_world_ns));
    metadata.insert("cpu_samples".to_owned(), json!(samples));
    metadata.insert("events_by_type".to_owned(), json!(decoded.events_by_type));
    metadata.insert(
        "ticks_per_second".to_owned(),
        json!(decoded.ticks_per_second),
    );
    metadata.insert("trace_ns".to_owned(), json!(decoded.duration_ns));
    let held: BTreeMap<String, u64> = t
        .proc_active_ns
        .iter()
        .map(|(p, ns)| (format!("P{p}"), *ns))
        .collect();
    metadata.insert("proc_active_ns".to_owned(), json!(held));
    if decoded.generations > 0 {
        metadata.insert("generations".to_owned(), json!(decoded.generations));
    }
    if decoded.unknown_events > 0 {
        metadata.insert("unknown_events".to_owned(), json!(decoded.unknown_events));
    }
    if task_lanes > 0 {
        metadata.insert("user_task_lanes".to_owned(), json!(task_lanes));
    }
    let producer = options
        .producer
        .clone()
        .unwrap_or_else(|| "go.runtime/trace".to_owned());
    let summary = ExtractionSummary {
        extractor: GO_TRACE_EXTRACTOR_NAME.to_owned(),
        extractor_version: GO_TRACE_EXTRACTOR_VERSION.to_owned(),
        format: FormatKind::GoTrace.name().to_owned(),
        producer,
        rows,
        time_span_ns: span,
        tracks: ev.trace.tracks.list.len() as u64,
        coverage,
        limitations: ev.trace.log.into_limitations(),
        metadata,
        input_bytes,
        input_events: decoded.events,
        max_event_dur_ns: None,
    };
    Ok((summary, spilled_events))
}
