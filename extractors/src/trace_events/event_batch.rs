//! One batch of `trace_events` rows with every value final, and its
//! Arrow record batch.
//!
//! Both ways of producing rows — from the in-memory [`super::store`] and
//! from spilled runs ([`super::external`]) — fill an [`EventBatch`] and hand
//! it to [`EventBatch::write`], so the table's columns are built in one
//! place and the two paths cannot drift apart.

use std::sync::Arc;

use arrow::array::{ArrayRef, Int32Array, Int64Array, UInt64Array};

use super::args_arena::ArgsArena;
use super::emitter::Emitter;
use super::ids::{NO_ID, NO_PARENT, NONE, opt, opt_id};
use super::interner::Interner;
use super::kinds::EventKind;
use super::nesting::{PHASE_CORRELATION, PHASE_PROFILER_STEP, PHASE_RANGE};
use super::record::EventRecord;
use super::tracks::{Track, TrackKind};
use crate::api::ExtractError;
use crate::arrow_util::IdDictColumn;
use crate::schema::EvidenceTable;

/// The rows of one `trace_events` batch, column by column. Optional
/// integers use [`NONE`], optional interned strings [`NO_ID`], a missing
/// parent [`NO_PARENT`]; `args` holds `(start, len)` in the arena with
/// `len == NO_ID` for no args.
#[derive(Default)]
pub struct EventBatch {
    pub event_id: Vec<u64>,
    pub parent_event_id: Vec<u64>,
    pub depth: Vec<i32>,
    pub ts: Vec<i64>,
    pub dur: Vec<i64>,
    pub self_ns: Vec<i64>,
    pub name: Vec<u32>,
    pub cat: Vec<u32>,
    pub kind: Vec<EventKind>,
    pub track: Vec<u32>,
    pub pid: Vec<i64>,
    pub tid: Vec<i64>,
    pub device: Vec<i64>,
    pub context: Vec<i64>,
    pub stream: Vec<i64>,
    pub correlation: Vec<i64>,
    pub external: Vec<i64>,
    pub graph_id: Vec<i64>,
    pub graph_node_id: Vec<i64>,
    pub bytes: Vec<i64>,
    pub phase: Vec<u32>,
    pub phase_source: Vec<u8>,
    pub args: Vec<(u64, u32)>,
}

fn opt_col(values: &[i64]) -> ArrayRef {
    Arc::new(values.iter().map(|&v| opt(v)).collect::<Int64Array>())
}

impl EventBatch {
    pub fn len(&self) -> usize {
        self.event_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.event_id.is_empty()
    }

    /// Empties every column, keeping the allocations.
    pub fn clear(&mut self) {
        self.event_id.clear();
        self.parent_event_id.clear();
        self.depth.clear();
        self.ts.clear();
        self.dur.clear();
        self.self_ns.clear();
        self.name.clear();
        self.cat.clear();
        self.kind.clear();
        self.track.clear();
        self.pid.clear();
        self.tid.clear();
        self.device.clear();
        self.context.clear();
        self.stream.clear();
        self.correlation.clear();
        self.external.clear();
        self.graph_id.clear();
        self.graph_node_id.clear();
        self.bytes.clear();
        self.phase.clear();
        self.phase_source.clear();
        self.args.clear();
    }

    /// Adds `r` as the next row. `track` is the row's track: it gives the
    /// thread (unless `r.thread` overrides it) and, on a GPU stream, the
    /// device and stream the event does not name itself.
    pub fn push(&mut self, r: &EventRecord, track: &Track, phase: u32, phase_source: u8) {
        let on_gpu = track.kind == TrackKind::GpuStream;
        let (pid, tid) = r
            .thread
            .unwrap_or((or_none(track.pid.int()), or_none(track.tid.int())));
        self.event_id.push(r.event_id);
        self.parent_event_id.push(r.parent_event_id);
        self.depth.push(r.depth);
        self.ts.push(r.ts);
        self.dur.push(r.dur);
        self.self_ns.push(r.self_ns);
        self.name.push(r.name);
        self.cat.push(r.cat);
        self.kind.push(r.kind);
        self.track.push(r.track);
        self.pid.push(pid);
        self.tid.push(tid);
        self.device.push(if r.fields.device == NONE && on_gpu {
            track.device
        } else {
            r.fields.device
        });
        self.context.push(r.fields.context);
        self.stream.push(if r.fields.stream == NONE && on_gpu {
            track.stream
        } else {
            r.fields.stream
        });
        self.correlation.push(r.fields.correlation);
        self.external.push(r.fields.external);
        self.graph_id.push(r.fields.graph_id);
        self.graph_node_id.push(r.fields.graph_node_id);
        self.bytes.push(r.fields.bytes);
        self.phase.push(phase);
        self.phase_source.push(phase_source);
        self.args.push((r.args_start, r.args_len));
    }

    /// Writes the rows as one `trace_events` record batch. The integer
    /// columns move into the arrays; call [`EventBatch::clear`] before
    /// filling the batch again.
    pub fn write(
        &mut self,
        em: &mut Emitter,
        strings: &Interner,
        arena: &ArgsArena,
    ) -> Result<(), ExtractError> {
        let rows = self.len();
        let args = arena.column(&self.args)?;
        // Interned ids (and enum codes) stand for their texts, one-to-one.
        let empty = strings.lookup("").unwrap_or(NO_ID);
        let interned = |id: u32| opt_id(id).map(|id| (id, move || strings.get(id)));
        let mut name = IdDictColumn::new();
        let mut cat = IdDictColumn::new();
        let mut kind = IdDictColumn::new();
        let mut phase = IdDictColumn::new();
        let mut phase_source = IdDictColumn::new();
        for i in 0..rows {
            // A missing name is written as "" (what `Interner::get` gives).
            let n = if self.name[i] == NO_ID {
                empty
            } else {
                self.name[i]
            };
            name.push(Some((n, move || strings.get(n))));
            cat.push(interned(self.cat[i]));
            let k = self.kind[i];
            kind.push(Some((k as u32, move || k.name())));
            phase.push(interned(self.phase[i]));
            let source = self.phase_source[i];
            let source_name = match source {
                PHASE_PROFILER_STEP => Some("profiler_step"),
                PHASE_CORRELATION => Some("correlation"),
                PHASE_RANGE => Some("nvtx_range"),
                _ => None,
            };
            phase_source.push(source_name.map(|t| (u32::from(source), move || t)));
        }
        let cols: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from(std::mem::take(&mut self.event_id))),
            Arc::new(
                self.parent_event_id
                    .iter()
                    .map(|&p| (p != NO_PARENT).then_some(p))
                    .collect::<UInt64Array>(),
            ),
            Arc::new(Int32Array::from(std::mem::take(&mut self.depth))),
            Arc::new(Int64Array::from(std::mem::take(&mut self.ts))),
            Arc::new(Int64Array::from(std::mem::take(&mut self.dur))),
            Arc::new(Int64Array::from(std::mem::take(&mut self.self_ns))),
            name.finish(),
            cat.finish(),
            kind.finish(),
            Arc::new(UInt64Array::from_iter_values(
                self.track.iter().map(|&t| u64::from(t)),
            )),
            opt_col(&self.pid),
            opt_col(&self.tid),
            opt_col(&self.device),
            opt_col(&self.context),
            opt_col(&self.stream),
            opt_col(&self.correlation),
            opt_col(&self.external),
            opt_col(&self.graph_id),
            opt_col(&self.graph_node_id),
            opt_col(&self.bytes),
            phase.finish(),
            phase_source.finish(),
            args,
        ];
        em.write(EvidenceTable::TraceEvents, cols, rows)
    }
}

/// `NONE` when absent: the `pid`/`tid` columns' form of an optional id.
fn or_none(v: Option<i64>) -> i64 {
    v.unwrap_or(NONE)
}
