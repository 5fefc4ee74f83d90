//! Accelerator reductions materialized at extraction: per stream busy time
//! and idle gaps, launch counts per phase, and each kernel's launch latency
//! — so `accelerator-launches` reads a few small tables instead of sorting
//! every kernel of a 10 M-event trace on each call.
//!
//! [`StreamGapsReducer`] watches the `trace_events` batches an extractor emits
//! (in `(ts_ns, event_id)` order, the sink contract) and keeps, per stream
//! and per (stream, phase), the running maximum of kernel end times: a gap
//! is a strictly positive distance between a kernel's start and that
//! maximum — the same definition as the recipes' window-function reference,
//! which the tests compare against. Rows that arrive out of order make the
//! reducer skip its output (no `artifact` row), and readers fall back to the
//! reference.

use crate::FastHashMap;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, DictionaryArray, Int64Array, StringArray, UInt64Array,
};
use arrow::datatypes::{Int32Type, Int64Type, UInt64Type};
use arrow::record_batch::RecordBatch;

use crate::api::{BatchSink, SinkError};
use crate::arrow_util::{DictColumn, const_dict};
use crate::device_work::{
    GAP_BUCKETS_NS, LaunchName, direct_launch_name, gap_bucket, is_host_api, is_host_graph_launch,
    is_kernel,
};
use crate::kernel_latencies::KernelLatencies;
use crate::launch_starts::LaunchStarts;
use crate::schema::EvidenceTable;

/// `(device, stream)`.
type StreamKey = (Option<i64>, Option<i64>);
/// Index into the reducer's phase list (0 is "no phase").
type PhaseId = u32;

const HISTOGRAM: usize = GAP_BUCKETS_NS.len() + 1;

/// Busy summary of one stream (or one stream within one phase).
#[derive(Debug, Clone, Default)]
struct StreamState {
    kernels: i64,
    kernel_ns: i64,
    first_ts: i64,
    max_end: i64,
    max_end_event: u64,
    gaps: i64,
    gap_total: i64,
    gap_max: i64,
    histogram: [i64; HISTOGRAM],
}

/// A gap found while adding a kernel: start, length, event before, after.
struct Gap(i64, i64, u64, u64);

impl StreamState {
    fn add(&mut self, ts: i64, dur: i64, event_id: u64) -> Option<Gap> {
        let end = ts.saturating_add(dur);
        let mut gap = None;
        if self.kernels == 0 {
            self.first_ts = ts;
            self.max_end = end;
            self.max_end_event = event_id;
        } else {
            if ts > self.max_end {
                let length = ts.saturating_sub(self.max_end);
                self.gaps += 1;
                self.gap_total = self.gap_total.saturating_add(length);
                self.gap_max = self.gap_max.max(length);
                self.histogram[gap_bucket(length)] += 1;
                gap = Some(Gap(self.max_end, length, self.max_end_event, event_id));
            }
            if end > self.max_end {
                self.max_end = end;
                self.max_end_event = event_id;
            }
        }
        self.kernels += 1;
        self.kernel_ns = self.kernel_ns.saturating_add(dur);
        gap
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum LaunchKind {
    Direct,
    Graph,
}

/// Column-wise rows of `stream_gaps`, flushed as record batches.
#[derive(Default)]
struct StreamGapRows {
    row_kind: Vec<&'static str>,
    by_phase: Vec<bool>,
    phase: Vec<Option<String>>,
    device: Vec<Option<i64>>,
    stream: Vec<Option<i64>>,
    launch_kind: Vec<Option<&'static str>>,
    /// count, time_ns, first_ts_ns, last_end_ns, gaps, gap_total_ns,
    /// gap_max_ns, the histogram, gap_start_ns, gap_ns.
    ints: Vec<[Option<i64>; 9 + HISTOGRAM]>,
    prev_event: Vec<Option<u64>>,
    next_event: Vec<Option<u64>>,
}

impl StreamGapRows {
    fn len(&self) -> usize {
        self.row_kind.len()
    }

    fn push(&mut self, kind: &'static str, by_phase: bool, phase: Option<&str>, key: StreamKey) {
        self.row_kind.push(kind);
        self.by_phase.push(by_phase);
        self.phase.push(phase.map(str::to_owned));
        self.device.push(key.0);
        self.stream.push(key.1);
        self.launch_kind.push(None);
        self.ints.push([None; 9 + HISTOGRAM]);
        self.prev_event.push(None);
        self.next_event.push(None);
    }

    fn push_gap(&mut self, key: StreamKey, gap: &Gap) {
        self.push("gap", false, None, key);
        if let Some(ints) = self.ints.last_mut() {
            ints[7 + HISTOGRAM] = Some(gap.0);
            ints[8 + HISTOGRAM] = Some(gap.1);
        }
        if let (Some(prev), Some(next)) = (self.prev_event.last_mut(), self.next_event.last_mut()) {
            *prev = Some(gap.2);
            *next = Some(gap.3);
        }
    }

    fn push_stream(
        &mut self,
        by_phase: bool,
        phase: Option<&str>,
        key: StreamKey,
        s: &StreamState,
    ) {
        self.push("stream", by_phase, phase, key);
        if let Some(ints) = self.ints.last_mut() {
            let values = [
                s.kernels,
                s.kernel_ns,
                s.first_ts,
                s.max_end,
                s.gaps,
                s.gap_total,
                s.gap_max,
            ];
            for (slot, value) in ints.iter_mut().zip(values.into_iter().chain(s.histogram)) {
                *slot = Some(value);
            }
        }
    }

    fn push_count(&mut self, kind: &'static str, phase: Option<&str>, count: i64, time_ns: i64) {
        self.push(kind, true, phase, (None, None));
        if let Some(ints) = self.ints.last_mut() {
            ints[0] = Some(count);
            ints[1] = Some(time_ns);
        }
    }

    fn take_batch(&mut self, run_id: &str, artifact_id: &str) -> Result<RecordBatch, SinkError> {
        let rows = std::mem::take(self);
        let n = rows.len();
        let mut kind = DictColumn::new();
        let mut phase = DictColumn::new();
        let mut launch_kind = DictColumn::new();
        for i in 0..n {
            kind.push(Some(rows.row_kind[i]));
            phase.push(rows.phase[i].as_deref());
            launch_kind.push(rows.launch_kind[i]);
        }
        let int_column = |c: usize| -> ArrayRef {
            Arc::new(rows.ints.iter().map(|r| r[c]).collect::<Int64Array>())
        };
        let mut columns: Vec<ArrayRef> = vec![
            const_dict(run_id, n),
            const_dict(artifact_id, n),
            kind.finish(),
            Arc::new(BooleanArray::from(rows.by_phase.clone())),
            phase.finish(),
            Arc::new(Int64Array::from(rows.device.clone())),
            Arc::new(Int64Array::from(rows.stream.clone())),
            launch_kind.finish(),
        ];
        columns.extend((0..9 + HISTOGRAM).map(int_column));
        columns.push(Arc::new(UInt64Array::from(rows.prev_event.clone())));
        columns.push(Arc::new(UInt64Array::from(rows.next_event.clone())));
        Ok(RecordBatch::try_new(
            EvidenceTable::StreamGaps.schema(),
            columns,
        )?)
    }
}

/// The running reductions of one artifact's `trace_events`.
pub struct StreamGapsReducer {
    run_id: String,
    artifact_id: String,
    batch_rows: usize,
    phases: Vec<Option<String>>,
    phase_ids: FastHashMap<Option<String>, PhaseId>,
    streams: FastHashMap<StreamKey, StreamState>,
    /// Every stream seen, by index (phase states name streams by index).
    stream_keys: Vec<StreamKey>,
    stream_index: FastHashMap<StreamKey, u32>,
    /// `(stream index, phase)` → index into `phase_states`: tens of
    /// thousands of steps × streams, so states sit in a dense list.
    phase_streams: FastHashMap<(u32, PhaseId), u32>,
    phase_states: Vec<StreamState>,
    /// Correlation id → earliest host launch start; plain launches' ids.
    launch_starts: LaunchStarts,
    /// Versioned inner launches (`cudaLaunchKernel_v7000`): counted at the
    /// end unless an unversioned launch has their correlation id.
    versioned: Vec<(Option<i64>, PhaseId, i64)>,
    launches: FastHashMap<(PhaseId, LaunchKind), (i64, i64)>,
    /// Per kernel: phase and latency (resolved at the end when the launch
    /// came later in the input).
    kernels: KernelLatencies,
    gaps: StreamGapRows,
    last_order: Option<(i64, u64)>,
    unordered: bool,
    saw_events: bool,
    /// `stream_gaps` rows already handed to the sink.
    flushed: u64,
    max_dur: Option<i64>,
}

/// Row counts written by [`StreamGapsReducer::finish`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReducedRows {
    pub stream_gaps: u64,
    pub launch_latency: u64,
    /// False when the input order made the reduction impossible (an
    /// artifact without trace events is complete with no rows).
    pub complete: bool,
    /// The longest trace event seen (whatever the order).
    pub max_event_dur_ns: Option<i64>,
}

impl StreamGapsReducer {
    pub fn new(run_id: &str, artifact_id: &str, batch_rows: usize) -> Self {
        StreamGapsReducer {
            run_id: run_id.to_owned(),
            artifact_id: artifact_id.to_owned(),
            batch_rows: batch_rows.max(1),
            phases: vec![None],
            phase_ids: FastHashMap::from_iter([(None, 0)]),
            streams: FastHashMap::default(),
            stream_keys: Vec::new(),
            stream_index: FastHashMap::default(),
            phase_streams: FastHashMap::default(),
            phase_states: Vec::new(),
            launch_starts: LaunchStarts::default(),
            versioned: Vec::new(),
            launches: FastHashMap::default(),
            kernels: KernelLatencies::default(),
            gaps: StreamGapRows::default(),
            last_order: None,
            unordered: false,
            saw_events: false,
            flushed: 0,
            max_dur: None,
        }
    }

    fn phase_id(&mut self, phase: Option<&str>) -> PhaseId {
        let key = phase.map(str::to_owned);
        if let Some(id) = self.phase_ids.get(&key) {
            return *id;
        }
        let id = self.phases.len() as PhaseId;
        self.phases.push(key.clone());
        self.phase_ids.insert(key, id);
        id
    }

    /// Folds one `trace_events` batch in; full batches of gap rows go to
    /// `sink`.
    pub fn observe(
        &mut self,
        batch: &RecordBatch,
        sink: &mut dyn BatchSink,
    ) -> Result<(), SinkError> {
        // The longest event, whatever the order (trace windows widen their
        // pruning bound by it).
        let longest = batch
            .column_by_name("dur_ns")
            .and_then(|c| c.as_primitive_opt::<Int64Type>())
            .and_then(arrow::compute::max);
        self.max_dur = self.max_dur.max(longest);
        if self.unordered || batch.num_rows() == 0 {
            return Ok(());
        }
        self.saw_events = true;
        let columns = EventColumns::of(batch)?;
        let kinds = dictionary_values(columns.kind, |kind, _| Some(kind.to_owned()));
        let kernel_category = dictionary_values(columns.category, |c, _| {
            Some(crate::device_work::KERNEL_CATEGORIES.contains(&c))
        });
        let launch_names = dictionary_values(columns.name, |n, _| direct_launch_name(n));
        let phase_values = columns
            .phase
            .values()
            .as_string_opt::<i32>()
            .ok_or("trace_events.phase values are not strings")?
            .clone();
        let mut phase_of_key: Vec<Option<PhaseId>> = vec![None; phase_values.len()];
        for i in 0..batch.num_rows() {
            let (ts, event_id) = (columns.ts.value(i), columns.event_id.value(i));
            if self.last_order.is_some_and(|last| (ts, event_id) < last) {
                self.unordered = true;
                return Ok(());
            }
            self.last_order = Some((ts, event_id));
            let dur = columns.dur.value(i);
            if dur < 0 {
                continue;
            }
            let Some(kind) = key_of(columns.kind, i).and_then(|k| kinds.get(k)?.as_deref()) else {
                continue;
            };
            let has_stream = columns.stream.is_valid(i);
            let category_is_kernel = key_of(columns.category, i)
                .and_then(|k| kernel_category.get(k).copied().flatten())
                .unwrap_or(false);
            let kernel = is_kernel(kind, category_is_kernel.then_some("kernel"), has_stream);
            let launch = if is_host_api(kind) {
                key_of(columns.name, i)
                    .and_then(|k| launch_names.get(k).copied().flatten())
                    .map(|name| (LaunchKind::Direct, name))
            } else if is_host_graph_launch(kind, has_stream) {
                Some((LaunchKind::Graph, LaunchName::Plain))
            } else {
                None
            };
            if !kernel && launch.is_none() {
                continue;
            }
            let phase = match key_of(columns.phase, i) {
                None => 0,
                Some(k) => match phase_of_key.get(k).copied().flatten() {
                    Some(id) => id,
                    None => {
                        let id = self.phase_id(Some(phase_values.value(k)));
                        if let Some(slot) = phase_of_key.get_mut(k) {
                            *slot = Some(id);
                        }
                        id
                    }
                },
            };
            let correlation = columns
                .correlation
                .is_valid(i)
                .then(|| columns.correlation.value(i));
            if kernel {
                let key = (
                    columns.device.is_valid(i).then(|| columns.device.value(i)),
                    has_stream.then(|| columns.stream.value(i)),
                );
                self.add_kernel(key, phase, ts, dur, event_id, correlation);
                self.flush_full(sink)?;
            } else if let Some((launch_kind, name)) = launch {
                self.add_launch(launch_kind, name, phase, ts, dur, correlation);
            }
        }
        Ok(())
    }

    fn add_kernel(
        &mut self,
        key: StreamKey,
        phase: PhaseId,
        ts: i64,
        dur: i64,
        event_id: u64,
        correlation: Option<i64>,
    ) {
        if let Some(gap) = self.streams.entry(key).or_default().add(ts, dur, event_id) {
            self.gaps.push_gap(key, &gap);
        }
        let stream = match self.stream_index.get(&key) {
            Some(&index) => index,
            None => {
                let index = self.stream_keys.len() as u32;
                self.stream_keys.push(key);
                self.stream_index.insert(key, index);
                index
            }
        };
        let states = &mut self.phase_states;
        let state = *self
            .phase_streams
            .entry((stream, phase))
            .or_insert_with(|| {
                states.push(StreamState::default());
                states.len() as u32 - 1
            });
        if let Some(state) = self.phase_states.get_mut(state as usize) {
            state.add(ts, dur, event_id);
        }
        let latency = correlation.and_then(|c| {
            self.launch_starts
                .get(c)
                .map(|start| ts.saturating_sub(start))
        });
        self.kernels.push(phase, latency, correlation, ts);
    }

    fn add_launch(
        &mut self,
        kind: LaunchKind,
        name: LaunchName,
        phase: PhaseId,
        ts: i64,
        dur: i64,
        correlation: Option<i64>,
    ) {
        if let Some(c) = correlation {
            self.launch_starts.record(c, ts);
        }
        match name {
            LaunchName::Versioned => self.versioned.push((correlation, phase, dur)),
            LaunchName::Plain => {
                if let (LaunchKind::Direct, Some(c)) = (kind, correlation) {
                    self.launch_starts.mark_plain(c);
                }
                let total = self.launches.entry((phase, kind)).or_default();
                total.0 += 1;
                total.1 = total.1.saturating_add(dur);
            }
        }
    }

    /// Writes the remaining rows of both tables (nothing for an artifact
    /// without trace events), a batch at a time: a trace with tens of
    /// thousands of steps has hundreds of thousands of per-phase rows.
    pub fn finish(mut self, sink: &mut dyn BatchSink) -> Result<ReducedRows, SinkError> {
        let mut written = ReducedRows {
            stream_gaps: self.flushed,
            launch_latency: 0,
            complete: !self.unordered,
            max_event_dur_ns: self.max_dur,
        };
        if self.unordered || !self.saw_events {
            return Ok(written);
        }
        self.kernels.resolve(&self.launch_starts);
        for (correlation, phase, dur) in std::mem::take(&mut self.versioned) {
            if correlation.is_none_or(|c| !self.launch_starts.is_plain(c)) {
                let total = self
                    .launches
                    .entry((phase, LaunchKind::Direct))
                    .or_default();
                total.0 += 1;
                total.1 = total.1.saturating_add(dur);
            }
        }
        self.launch_starts = LaunchStarts::default();
        let (order, rank) = self.phase_order();
        let mut streams: Vec<_> = std::mem::take(&mut self.streams).into_iter().collect();
        streams.sort_by_key(|(key, _)| *key);
        for (key, state) in streams {
            self.gaps.push_stream(false, None, key, &state);
            self.flush_full(sink)?;
        }
        let mut phase_streams: Vec<_> = std::mem::take(&mut self.phase_streams)
            .into_iter()
            .map(|((stream, phase), state)| (self.stream_keys[stream as usize], phase, state))
            .collect();
        phase_streams.sort_unstable_by_key(|(key, phase, _)| (rank[*phase as usize], *key));
        let states = std::mem::take(&mut self.phase_states);
        for (key, phase, state) in phase_streams {
            let name = self.phases[phase as usize].as_deref();
            if let Some(state) = states.get(state as usize) {
                self.gaps.push_stream(true, name, key, state);
            }
            self.flush_full(sink)?;
        }
        let mut launches: Vec<_> = std::mem::take(&mut self.launches).into_iter().collect();
        launches.sort_unstable_by_key(|((phase, kind), _)| (rank[*phase as usize], *kind));
        for ((phase, kind), (count, time)) in launches {
            let name = self.phases[phase as usize].as_deref();
            self.gaps.push_count("launches", name, count, time);
            if let Some(slot) = self.gaps.launch_kind.last_mut() {
                *slot = Some(match kind {
                    LaunchKind::Direct => "direct",
                    LaunchKind::Graph => "graph",
                });
            }
            self.flush_full(sink)?;
        }
        self.gaps
            .push_count("artifact", None, self.kernels.kernel_count() as i64, 0);
        self.flush(sink)?;
        written.stream_gaps = self.flushed;
        written.launch_latency = self.write_latencies(&order, sink)?;
        Ok(written)
    }

    /// Hands the buffered `stream_gaps` rows to `sink` once a batch is full.
    fn flush_full(&mut self, sink: &mut dyn BatchSink) -> Result<(), SinkError> {
        if self.gaps.len() >= self.batch_rows {
            self.flush(sink)?;
        }
        Ok(())
    }

    fn flush(&mut self, sink: &mut dyn BatchSink) -> Result<(), SinkError> {
        if self.gaps.len() == 0 {
            return Ok(());
        }
        self.flushed += self.gaps.len() as u64;
        let batch = self.gaps.take_batch(&self.run_id, &self.artifact_id)?;
        sink.write_batch(EvidenceTable::StreamGaps, batch)
    }

    /// Phase ids in phase-name order (no phase first), and each id's
    /// position in that order.
    fn phase_order(&self) -> (Vec<PhaseId>, Vec<usize>) {
        let mut order: Vec<PhaseId> = (0..self.phases.len() as PhaseId).collect();
        order.sort_by(|a, b| self.phases[*a as usize].cmp(&self.phases[*b as usize]));
        let mut rank = vec![0usize; order.len()];
        for (position, phase) in order.iter().enumerate() {
            rank[*phase as usize] = position;
        }
        (order, rank)
    }

    /// `launch_latency`, sorted by phase then latency (nulls last), so a
    /// reader's per-phase sort finds sorted runs.
    fn write_latencies(
        &mut self,
        order: &[PhaseId],
        sink: &mut dyn BatchSink,
    ) -> Result<u64, SinkError> {
        let total = self.kernels.kernel_count();
        let mut rows = std::mem::take(&mut self.kernels)
            .into_sorted(order)
            .peekable();
        while rows.peek().is_some() {
            let chunk: Vec<(PhaseId, Option<i64>)> = rows.by_ref().take(self.batch_rows).collect();
            let mut phase = DictColumn::new();
            for (p, _) in &chunk {
                phase.push(self.phases[*p as usize].as_deref());
            }
            let latency: Int64Array = chunk.iter().map(|(_, l)| *l).collect();
            let batch = RecordBatch::try_new(
                EvidenceTable::LaunchLatency.schema(),
                vec![
                    const_dict(&self.run_id, chunk.len()),
                    const_dict(&self.artifact_id, chunk.len()),
                    phase.finish(),
                    Arc::new(latency),
                ],
            )?;
            sink.write_batch(EvidenceTable::LaunchLatency, batch)?;
        }
        Ok(total)
    }
}

/// The `trace_events` columns the reducer reads.
struct EventColumns<'a> {
    event_id: &'a UInt64Array,
    ts: &'a Int64Array,
    dur: &'a Int64Array,
    kind: &'a DictionaryArray<Int32Type>,
    category: &'a DictionaryArray<Int32Type>,
    name: &'a DictionaryArray<Int32Type>,
    phase: &'a DictionaryArray<Int32Type>,
    device: &'a Int64Array,
    stream: &'a Int64Array,
    correlation: &'a Int64Array,
}

impl<'a> EventColumns<'a> {
    fn of(batch: &'a RecordBatch) -> Result<Self, SinkError> {
        let get = |name: &str| -> Result<&'a ArrayRef, SinkError> {
            batch
                .column_by_name(name)
                .ok_or_else(|| format!("trace_events batch without {name}").into())
        };
        let dict = |name: &str| -> Result<&'a DictionaryArray<Int32Type>, SinkError> {
            get(name)?
                .as_dictionary_opt::<Int32Type>()
                .ok_or_else(|| format!("trace_events.{name} is not a dictionary").into())
        };
        let int = |name: &str| -> Result<&'a Int64Array, SinkError> {
            get(name)?
                .as_primitive_opt::<Int64Type>()
                .ok_or_else(|| format!("trace_events.{name} is not Int64").into())
        };
        Ok(EventColumns {
            event_id: get("event_id")?
                .as_primitive_opt::<UInt64Type>()
                .ok_or("trace_events.event_id is not UInt64")?,
            ts: int("ts_ns")?,
            dur: int("dur_ns")?,
            kind: dict("kind")?,
            category: dict("category")?,
            name: dict("name")?,
            phase: dict("phase")?,
            device: int("device")?,
            stream: int("stream")?,
            correlation: int("correlation_id")?,
        })
    }
}

/// The dictionary key of row `i`, `None` when the row is null.
fn key_of(array: &DictionaryArray<Int32Type>, i: usize) -> Option<usize> {
    array
        .is_valid(i)
        .then(|| array.keys().value(i))
        .and_then(|k| usize::try_from(k).ok())
}

/// `f` over each distinct value of a string dictionary (not each row).
fn dictionary_values<T>(
    array: &DictionaryArray<Int32Type>,
    f: impl Fn(&str, usize) -> Option<T>,
) -> Vec<Option<T>> {
    let Some(values) = array.values().as_any().downcast_ref::<StringArray>() else {
        return Vec::new();
    };
    (0..values.len())
        .map(|k| values.is_valid(k).then(|| f(values.value(k), k)).flatten())
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A fuzz find (a damaged parquetdir export): kernels at the ends of
    /// the i64 range overflowed the stream's totals.
    #[test]
    fn kernels_at_extreme_times_saturate_instead_of_overflowing() {
        let mut s = StreamState::default();
        assert!(s.add(i64::MIN, i64::MAX, 1).is_none());
        let gap = s.add(i64::MAX, i64::MAX, 2).expect("a gap");
        assert!(gap.1 > 0);
        s.add(i64::MAX, i64::MAX, 3);
        assert_eq!(s.kernel_ns, i64::MAX);
        assert_eq!(s.kernels, 3);
    }
    use crate::{ExtractOptions, NoObserver, extract_chrome_json};
    use arrow::compute::take;

    /// Every batch written, in order (shared with `stream_gaps_thread`).
    #[derive(Default)]
    pub(crate) struct Collect(pub(crate) Vec<(EvidenceTable, RecordBatch)>);
    impl BatchSink for Collect {
        fn write_batch(&mut self, t: EvidenceTable, b: RecordBatch) -> Result<(), SinkError> {
            self.0.push((t, b));
            Ok(())
        }
    }

    /// Two kernels on stream 7 with a 50 µs gap, and their launches.
    fn trace_events() -> RecordBatch {
        let doc = r#"{"traceEvents": [
          {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":0,"dur":5,"args":{"correlation":1}},
          {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":10,"dur":5,"args":{"correlation":2}},
          {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":20,"dur":30,"args":{"device":0,"stream":7,"correlation":1}},
          {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":100,"dur":30,"args":{"device":0,"stream":7,"correlation":2}}
        ]}"#;
        let mut sink = Collect::default();
        let options = ExtractOptions::new("run", "sha256:a");
        extract_chrome_json(doc.as_bytes(), &options, &mut sink, &NoObserver).expect("extract");
        let (_, batch) = sink
            .0
            .into_iter()
            .find(|(t, _)| *t == EvidenceTable::TraceEvents)
            .expect("trace events");
        batch
    }

    fn reduce(batch: &RecordBatch) -> (ReducedRows, Collect) {
        let mut out = Collect::default();
        let mut reducer = StreamGapsReducer::new("run", "sha256:a", 1024);
        reducer.observe(batch, &mut out).expect("observe");
        let rows = reducer.finish(&mut out).expect("finish");
        (rows, out)
    }

    #[test]
    fn in_order_events_give_gap_stream_launch_and_latency_rows() {
        let (rows, out) = reduce(&trace_events());
        assert!(rows.complete);
        assert_eq!(rows.launch_latency, 2);
        let gaps = &out.0[0].1;
        let kinds = gaps.column_by_name("row_kind").expect("row_kind");
        let kinds: Vec<String> = (0..gaps.num_rows())
            .map(|i| {
                let d = kinds.as_dictionary::<Int32Type>();
                let v = d.values().as_string::<i32>();
                v.value(d.keys().value(i) as usize).to_owned()
            })
            .collect();
        // One gap, the whole-stream and per-phase stream rows, one launches
        // row, the artifact marker.
        assert_eq!(kinds, ["gap", "stream", "stream", "launches", "artifact"]);
        let gap_ns = gaps.column_by_name("gap_ns").expect("gap_ns");
        assert_eq!(gap_ns.as_primitive::<Int64Type>().value(0), 50_000);
        let latency = out.0[1].1.column_by_name("latency_ns").expect("latency");
        let latency = latency.as_primitive::<Int64Type>();
        assert_eq!((latency.value(0), latency.value(1)), (20_000, 90_000));
    }

    #[test]
    fn out_of_order_events_skip_the_reduction() {
        let batch = trace_events();
        let reversed = UInt64Array::from_iter_values((0..batch.num_rows() as u64).rev());
        let columns = batch
            .columns()
            .iter()
            .map(|c| take(c.as_ref(), &reversed, None).expect("take"))
            .collect();
        let reversed = RecordBatch::try_new(batch.schema(), columns).expect("batch");
        let (rows, out) = reduce(&reversed);
        assert!(!rows.complete);
        // The longest event is recorded whatever the order.
        let durations = batch.column_by_name("dur_ns").expect("dur_ns");
        let longest = durations.as_primitive::<Int64Type>().iter().flatten().max();
        assert!(longest.is_some_and(|d| d > 0));
        assert_eq!(rows.max_event_dur_ns, longest);
        assert_eq!(reduce(&batch).0.max_event_dur_ns, longest);
        assert_eq!((rows.stream_gaps, rows.launch_latency), (0, 0));
        assert!(out.0.is_empty());
    }
}
