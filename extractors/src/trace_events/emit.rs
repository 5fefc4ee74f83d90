//! Record batches of `trace_events`, `tracks` and `counters`, and the feed
//! of trace slices into the shared stack reductions.
//!
//! Rows leave in the order the table files must keep: `trace_events` by
//! `(ts_ns, event_id)`, `counters` by `ts_ns`. Batches are at most
//! `batch_rows` rows and are handed to the sink as soon as each is built.

use crate::FastHashMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, Int64Array, StringArray, UInt64Array};

use super::builder::TraceBuilder;
use super::emitter::Emitter;
use super::event_batch::EventBatch;
use super::ids::{NO_ID, NO_PARENT, opt, opt_id};
use super::interner::Interner;
use super::kinds::EventKind;
use super::nesting::Derived;
use super::record::EventRecord;
use super::store::CounterRow;
use super::tracks::{Ident, Track, TrackKind};
use crate::api::ExtractError;
use crate::arrow_util::DictColumn;
use crate::schema::EvidenceTable;
use crate::stacks::{MetricId, ReductionSpec, StackAggregator, ThreadInfo};

fn opt_col(values: impl Iterator<Item = i64>) -> ArrayRef {
    Arc::new(values.map(opt).collect::<Int64Array>())
}

/// Writes `trace_events`, globally ordered by `(ts_ns, event_id)`.
pub fn emit_trace_events(
    em: &mut Emitter,
    p: &TraceBuilder,
    d: &Derived,
) -> Result<(), ExtractError> {
    let s = &p.store;
    let mut order: Vec<u32> = (0..s.len() as u32).collect();
    order.sort_unstable_by_key(|&i| (s.ts[i as usize], s.event_id[i as usize]));
    let mut batch = EventBatch::default();
    for chunk in order.chunks(em.batch_rows.max(1)) {
        batch.clear();
        for &i in chunk {
            let i = i as usize;
            let mut r = EventRecord::from_store(s, i);
            r.parent_event_id = opt_id(d.parent[i]).map_or(NO_PARENT, |p| s.event_id[p as usize]);
            r.depth = d.depth[i];
            r.self_ns = d.self_ns[i];
            let track = &p.tracks.list[s.track[i] as usize];
            batch.push(&r, track, d.phase[i], d.phase_source[i]);
        }
        batch.write(em, &p.strings, &s.arena)?;
    }
    Ok(())
}

/// Writes `tracks` in id order.
pub fn emit_tracks(em: &mut Emitter, p: &TraceBuilder) -> Result<(), ExtractError> {
    let first = p.tracks.process_first_tracks();
    let list = &p.tracks.list;
    let ids: Vec<usize> = (0..list.len()).collect();
    for chunk in ids.chunks(em.batch_rows.max(1)) {
        let mut kind = DictColumn::new();
        chunk
            .iter()
            .for_each(|&i| kind.push(Some(list[i].kind.name())));
        let parent = |t: &Track| match t.kind {
            TrackKind::Async | TrackKind::Counter if t.pid != Ident::None => {
                first.get(&t.pid).map(|&f| u64::from(f))
            }
            _ => None,
        };
        let cols: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from_iter_values(
                chunk.iter().map(|&i| i as u64),
            )),
            kind.finish(),
            Arc::new(
                chunk
                    .iter()
                    .map(|&i| p.tracks.display_name(&list[i], &p.strings))
                    .collect::<StringArray>(),
            ),
            Arc::new(
                chunk
                    .iter()
                    .map(|&i| list[i].pid.int())
                    .collect::<Int64Array>(),
            ),
            Arc::new(
                chunk
                    .iter()
                    .map(|&i| list[i].tid.int())
                    .collect::<Int64Array>(),
            ),
            Arc::new(
                chunk
                    .iter()
                    .map(|&i| p.tracks.process_name(list[i].pid, &p.strings))
                    .collect::<StringArray>(),
            ),
            Arc::new(
                chunk
                    .iter()
                    .map(|&i| p.tracks.thread_name(&list[i], &p.strings))
                    .collect::<StringArray>(),
            ),
            opt_col(chunk.iter().map(|&i| list[i].device)),
            opt_col(chunk.iter().map(|&i| list[i].stream)),
            Arc::new(
                chunk
                    .iter()
                    .map(|&i| parent(&list[i]))
                    .collect::<UInt64Array>(),
            ),
        ];
        em.write(EvidenceTable::Tracks, cols, chunk.len())?;
    }
    Ok(())
}

/// Writes `counters` ordered by `ts_ns` (input order within one timestamp).
pub fn emit_counters(em: &mut Emitter, p: &TraceBuilder) -> Result<(), ExtractError> {
    let mut order: Vec<usize> = (0..p.counters.len()).collect();
    order.sort_by_key(|&i| p.counters[i].ts);
    emit_counter_rows(em, &p.strings, order.into_iter().map(|i| Ok(p.counters[i])))
}

/// Writes `counters` from rows already in order (time, then input order),
/// such as a merge of spilled rows.
pub fn emit_counter_rows(
    em: &mut Emitter,
    strings: &Interner,
    mut rows: impl Iterator<Item = std::io::Result<CounterRow>>,
) -> Result<(), ExtractError> {
    let mut chunk: Vec<CounterRow> = Vec::new();
    loop {
        chunk.clear();
        for row in rows.by_ref().take(em.batch_rows.max(1)) {
            chunk.push(row?);
        }
        if chunk.is_empty() {
            return Ok(());
        }
        let mut name = DictColumn::new();
        let mut unit = DictColumn::new();
        for r in &chunk {
            name.push(Some(strings.get(r.name)));
            unit.push(opt_id(r.unit).map(|u| strings.get(u)));
        }
        let cols: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from_iter_values(
                chunk.iter().map(|r| u64::from(r.track)),
            )),
            Arc::new(Int64Array::from_iter_values(chunk.iter().map(|r| r.ts))),
            Arc::new(Float64Array::from_iter_values(
                chunk.iter().map(|r| r.value),
            )),
            name.finish(),
            unit.finish(),
        ];
        em.write(EvidenceTable::Counters, cols, chunk.len())?;
    }
}

/// Feeds every terminated slice into a [`StackAggregator`]: a slice is a
/// frame `(function = name, module = category)` and its stack is the path
/// of its ancestors on the track.
pub fn aggregate_slices(p: &TraceBuilder, d: &Derived) -> StackAggregator {
    let mut agg = StackAggregator::new();
    aggregate_slices_into(&mut agg, 0, p, d, |_| true);
    agg
}

/// Like [`aggregate_slices`], into `agg` under `metric`, for the slices
/// whose kind `include` accepts (a Perfetto trace keeps scheduling slices
/// out of the call-stack reductions).
pub fn aggregate_slices_into(
    agg: &mut StackAggregator,
    metric: MetricId,
    p: &TraceBuilder,
    d: &Derived,
    include: impl Fn(EventKind) -> bool,
) {
    let s = &p.store;
    let mut frames = SliceFrames::default();
    // The node an event's children hang under: its own stack, else (not
    // aggregated: unterminated, instant, excluded) its nearest aggregated
    // ancestor's. Parents come before children in a track's nesting
    // order, so one lookup replaces a walk up the ancestors (which was
    // quadratic under many unterminated begins).
    let mut inherited = vec![NO_ID; s.len()];
    for (t, track) in p.tracks.list.iter().enumerate() {
        let events = d.track_events(t);
        if events.is_empty() {
            continue;
        }
        let thread = agg.thread(thread_info(p, track));
        for &i in events {
            let i = i as usize;
            let from_parent = match d.parent[i] {
                NO_ID => NO_ID,
                a => inherited[a as usize],
            };
            if s.instant[i] || s.dur[i] < 0 || !include(s.kind[i]) || !s.kind[i].in_stacks() {
                inherited[i] = from_parent;
                continue;
            }
            let frame = frames.frame(agg, &p.strings, s.name[i], s.cat[i], s.kind[i]);
            let parent_stack = (from_parent != NO_ID).then_some(from_parent);
            let stack = agg.stack(parent_stack, frame);
            inherited[i] = stack;
            agg.add_metric_sample(metric, stack, thread, None, d.self_ns[i], 1);
        }
    }
}

/// Writes the stack reductions of trace slices (`trace.wall_ns`).
pub fn write_slice_reductions(em: &mut Emitter, agg: StackAggregator) -> Result<(), ExtractError> {
    let spec = ReductionSpec {
        metric: "trace.wall_ns".to_string(),
        weight_unit: "ns".to_string(),
        unit: "ns".to_string(),
    };
    let mut counting = crate::api::CountingSink {
        inner: &mut *em.sink,
        rows: &mut em.rows,
    };
    agg.finish(
        em.run_id,
        em.artifact_id,
        &spec,
        em.batch_rows,
        &mut counting,
    )?;
    Ok(())
}

/// The stack-reduction thread of a track. An async track's slices overlap
/// the thread's own and are not its time: they form a pseudo-thread of
/// their own (no tid, named `async: <track>`), so no thread's self time
/// holds them.
pub fn thread_info(p: &TraceBuilder, track: &Track) -> ThreadInfo {
    if track.kind == TrackKind::Async {
        return ThreadInfo {
            pid: track.pid.int(),
            tid: None,
            thread_name: Some(format!(
                "async: {}",
                p.tracks
                    .display_name(track, &p.strings)
                    .unwrap_or_else(|| "track".into())
            )),
            process_name: p
                .tracks
                .process_name(track.pid, &p.strings)
                .map(str::to_string),
        };
    }
    ThreadInfo {
        pid: track.pid.int(),
        tid: track.tid.int(),
        thread_name: p.tracks.thread_name(track, &p.strings).map(str::to_string),
        process_name: p
            .tracks
            .process_name(track.pid, &p.strings)
            .map(str::to_string),
    }
}

/// Frames of trace slices: `(function = name, category)`,
/// interned once per `(name, category)`.
#[derive(Default)]
pub struct SliceFrames(FastHashMap<(u32, u32), u32>);

impl SliceFrames {
    pub fn frame(
        &mut self,
        agg: &mut StackAggregator,
        strings: &Interner,
        name: u32,
        cat: u32,
        kind: EventKind,
    ) -> u32 {
        *self.0.entry((name, cat)).or_insert_with(|| {
            agg.slice_frame(
                strings.get(name),
                opt_id(cat).map(|c| strings.get(c)),
                kind.language(),
            )
        })
    }
}
