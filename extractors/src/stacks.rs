//! Stacks and the reductions materialized at extraction.
//!
//! Hotspot, caller and callee queries must not scan events, so every
//! extractor that has call stacks — sampled profiles, or trace slices whose
//! nesting is a stack — feeds a [`StackAggregator`]: it interns frames by a
//! logical key (stable across runs), builds the `stack_nodes` prefix tree,
//! aggregates `samples`, and derives `frame_totals` (self / inclusive, with
//! recursion counted once per stack) and `call_edges` when finished.

use crate::FastHashMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, Int32Array, Int64Array, StringArray, UInt64Array};
use arrow::record_batch::RecordBatch;
use sha2::{Digest, Sha256};

use crate::api::{BatchSink, ExtractError};
use crate::arrow_util::{DictColumn, IdDictColumn, const_dict};
use crate::schema::EvidenceTable;
use crate::stack_totals::{Topmost, topmost_nodes, tree_totals};
use crate::timed_samples::{TimedSample, TimedSamples};

/// The digest that identifies a function across runs: the first 16 bytes
/// (32 hex chars) of sha256 over `{"file":…,"function":…,"line":…,"module":…}`.
pub fn logical_key(
    function: &str,
    file: Option<&str>,
    line: Option<i64>,
    module: Option<&str>,
) -> String {
    let canonical = serde_json::json!({
        "file": file,
        "function": function,
        "line": line,
        "module": module,
    });
    // serde_json's map is ordered by key (no preserve_order feature), so the
    // text is canonical.
    let text = canonical.to_string();
    let digest = Sha256::digest(text.as_bytes());
    hex::encode(&digest[..16])
}

const NO_PARENT: u32 = u32::MAX;

/// A `samples` row: (ts, stack, thread, weight, count, metric).
type SampleRow = (Option<i64>, u32, u32, i64, i64, u16);

struct Frame {
    key: String,
    function: String,
    file: Option<String>,
    line: Option<i64>,
    module: Option<String>,
    /// A trace slice's category (slice frames have no module).
    category: Option<String>,
    language: String,
    symbolized: bool,
}

/// Identity of the thread a sample belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ThreadInfo {
    pub pid: Option<i64>,
    pub tid: Option<i64>,
    pub thread_name: Option<String>,
    pub process_name: Option<String>,
}

/// What the reductions are measuring.
#[derive(Debug, Clone)]
pub struct ReductionSpec {
    /// `frame_totals.metric` / `call_edges.metric` (e.g. `trace.wall_ns`).
    pub metric: String,
    /// `samples.weight_unit` (samples, ns, bytes, count).
    pub weight_unit: String,
    /// `frame_totals.unit`.
    pub unit: String,
}

/// Interns frames and stacks and aggregates weighted samples.
#[derive(Default)]
pub struct StackAggregator {
    frames: Vec<Frame>,
    frame_by_key: FastHashMap<String, u32>,
    /// (parent stack, frame, depth) per stack id.
    nodes: Vec<(u32, u32, i32)>,
    node_by_edge: FastHashMap<(u32, u32), u32>,
    threads: Vec<ThreadInfo>,
    thread_by_info: FastHashMap<ThreadInfo, u32>,
    /// Declared metrics; a sample's metric is an index into this list.
    metrics: Vec<ReductionSpec>,
    /// (stack, thread, metric) → (weight, count).
    aggregated: FastHashMap<(u32, u32, u16), (i64, i64)>,
    /// Samples with a timestamp, written one row each.
    timed: TimedSamples,
}

/// A metric declared with [`StackAggregator::metric`].
pub type MetricId = u16;

impl StackAggregator {
    pub fn new() -> Self {
        Self::default()
    }

    /// The frame id of a function (interned by logical key).
    pub fn frame(
        &mut self,
        function: &str,
        file: Option<&str>,
        line: Option<i64>,
        module: Option<&str>,
        language: &str,
        symbolized: bool,
    ) -> u32 {
        let key = logical_key(function, file, line, module);
        self.intern(key, || Frame {
            key: String::new(),
            function: function.to_string(),
            file: file.map(str::to_string),
            line,
            module: module.map(str::to_string),
            category: None,
            language: language.to_string(),
            symbolized,
        })
    }

    /// The frame id of a trace slice name under its category. Its logical
    /// key is the one a frame with the category as its module has (keys of
    /// version-1 evidence stay valid); the category is stored as such.
    pub fn slice_frame(&mut self, name: &str, category: Option<&str>, language: &str) -> u32 {
        let key = logical_key(name, None, None, category);
        self.intern(key, || Frame {
            key: String::new(),
            function: name.to_string(),
            file: None,
            line: None,
            module: None,
            category: category.map(str::to_string),
            language: language.to_string(),
            symbolized: true,
        })
    }

    /// The id of the frame with logical key `key`, made by `make` when new.
    fn intern(&mut self, key: String, make: impl FnOnce() -> Frame) -> u32 {
        if let Some(&id) = self.frame_by_key.get(&key) {
            return id;
        }
        let id = self.frames.len() as u32;
        self.frame_by_key.insert(key.clone(), id);
        self.frames.push(Frame { key, ..make() });
        id
    }

    /// The stack id of `frame` called from `parent` (`None` = a root frame).
    pub fn stack(&mut self, parent: Option<u32>, frame: u32) -> u32 {
        let p = parent.unwrap_or(NO_PARENT);
        if let Some(&id) = self.node_by_edge.get(&(p, frame)) {
            return id;
        }
        let depth = match parent {
            Some(p) => self.nodes.get(p as usize).map_or(0, |n| n.2 + 1),
            None => 0,
        };
        let id = self.nodes.len() as u32;
        self.nodes.push((p, frame, depth));
        self.node_by_edge.insert((p, frame), id);
        id
    }

    /// The id of a thread (interned).
    pub fn thread(&mut self, info: ThreadInfo) -> u32 {
        if let Some(&id) = self.thread_by_info.get(&info) {
            return id;
        }
        let id = self.threads.len() as u32;
        self.threads.push(info.clone());
        self.thread_by_info.insert(info, id);
        id
    }

    /// Declares a metric (idempotent by metric name) for
    /// [`StackAggregator::add_metric_sample`]. One artifact may carry several
    /// (pprof sample types; a Perfetto trace's slices and CPU samples).
    pub fn metric(&mut self, spec: ReductionSpec) -> MetricId {
        if let Some(i) = self.metrics.iter().position(|m| m.metric == spec.metric) {
            return i as MetricId;
        }
        self.metrics.push(spec);
        (self.metrics.len() - 1) as MetricId
    }

    /// Adds `weight` (and `count` events) to the leaf `stack` on `thread`
    /// for the first metric (the one given to [`StackAggregator::finish`]
    /// when none was declared). Samples with a timestamp are kept as rows.
    pub fn add_sample(
        &mut self,
        stack: u32,
        thread: u32,
        ts: Option<i64>,
        weight: i64,
        count: i64,
    ) {
        self.add_metric_sample(0, stack, thread, ts, weight, count);
    }

    /// Like [`StackAggregator::add_sample`] for a declared metric.
    pub fn add_metric_sample(
        &mut self,
        metric: MetricId,
        stack: u32,
        thread: u32,
        ts: Option<i64>,
        weight: i64,
        count: i64,
    ) {
        match ts {
            Some(ts) => self.timed.push(TimedSample {
                ts,
                weight,
                stack,
                thread,
                count: u32::try_from(count.max(0)).unwrap_or(u32::MAX),
                metric,
            }),
            None => {
                let e = self
                    .aggregated
                    .entry((stack, thread, metric))
                    .or_insert((0, 0));
                e.0 = e.0.saturating_add(weight);
                e.1 = e.1.saturating_add(count);
            }
        }
    }

    /// Makes room for `additional` timed samples of `metric` with weight
    /// and count 1 at once (a profile's millions would otherwise double the
    /// list while it grows).
    pub fn reserve_unit_samples(&mut self, metric: MetricId, additional: usize) {
        self.timed.reserve_unit(metric, additional);
    }

    /// Holds at most `held` timed samples from now on; the rest go to
    /// sorted runs in `dir`, merged back when the tables are written.
    pub fn spill_samples_to(&mut self, dir: &std::path::Path, held: usize) {
        self.timed.spill_to(dir, held);
    }

    /// Whether every interned frame is symbolized.
    pub fn all_symbolized(&self) -> bool {
        self.frames.iter().all(|f| f.symbolized)
    }

    /// Number of frames interned so far.
    pub fn frame_count(&self) -> usize {
        self.frames.len()
    }

    /// Writes `frames`, `stack_nodes`, `samples`, `frame_totals` and
    /// `call_edges` with `spec` as the only metric (single-metric extractors).
    pub fn finish(
        mut self,
        run_id: &str,
        artifact_id: &str,
        spec: &ReductionSpec,
        batch_rows: usize,
        sink: &mut dyn BatchSink,
    ) -> Result<(), ExtractError> {
        if self.metrics.is_empty() {
            self.metrics.push(spec.clone());
        }
        self.finish_all(run_id, artifact_id, batch_rows, sink)
    }

    /// Writes every table for every declared metric. Reductions are computed
    /// per metric; frames and stack nodes are shared.
    pub fn finish_all(
        mut self,
        run_id: &str,
        artifact_id: &str,
        batch_rows: usize,
        sink: &mut dyn BatchSink,
    ) -> Result<(), ExtractError> {
        if self.metrics.is_empty() {
            self.metrics.push(ReductionSpec {
                metric: "cpu.samples".into(),
                weight_unit: "samples".into(),
                unit: "samples".into(),
            });
        }
        let batch_rows = batch_rows.max(1);
        let mut emit = |table: EvidenceTable, columns: Vec<ArrayRef>| -> Result<(), ExtractError> {
            let batch = RecordBatch::try_new(table.schema(), columns)
                .map_err(|e| ExtractError::Sink(Box::new(e)))?;
            sink.write_batch(table, batch).map_err(ExtractError::Sink)
        };
        let scope = |len: usize| vec![const_dict(run_id, len), const_dict(artifact_id, len)];

        for (c, chunk) in self.frames.chunks(batch_rows).enumerate() {
            let start = c * batch_rows;
            let mut cols = scope(chunk.len());
            cols.push(Arc::new(UInt64Array::from_iter_values(
                (0..chunk.len()).map(|i| (start + i) as u64),
            )));
            cols.push(Arc::new(StringArray::from_iter_values(
                chunk.iter().map(|f| f.key.as_str()),
            )));
            cols.push(Arc::new(StringArray::from_iter_values(
                chunk.iter().map(|f| f.function.as_str()),
            )));
            cols.push(Arc::new(
                chunk
                    .iter()
                    .map(|f| f.file.as_deref())
                    .collect::<StringArray>(),
            ));
            cols.push(Arc::new(
                chunk.iter().map(|f| f.line).collect::<Int64Array>(),
            ));
            cols.push(Arc::new(
                chunk
                    .iter()
                    .map(|f| f.module.as_deref())
                    .collect::<StringArray>(),
            ));
            let mut lang = DictColumn::new();
            chunk.iter().for_each(|f| lang.push(Some(&f.language)));
            cols.push(lang.finish());
            cols.push(Arc::new(
                chunk
                    .iter()
                    .map(|f| Some(f.symbolized))
                    .collect::<BooleanArray>(),
            ));
            let mut category = DictColumn::new();
            chunk
                .iter()
                .for_each(|f| category.push(f.category.as_deref()));
            cols.push(category.finish());
            emit(EvidenceTable::Frames, cols)?;
        }

        for (c, chunk) in self.nodes.chunks(batch_rows).enumerate() {
            let start = c * batch_rows;
            let mut cols = scope(chunk.len());
            cols.push(Arc::new(UInt64Array::from_iter_values(
                (0..chunk.len()).map(|i| (start + i) as u64),
            )));
            cols.push(Arc::new(
                chunk
                    .iter()
                    .map(|n| (n.0 != NO_PARENT).then_some(u64::from(n.0)))
                    .collect::<UInt64Array>(),
            ));
            cols.push(Arc::new(UInt64Array::from_iter_values(
                chunk.iter().map(|n| u64::from(n.1)),
            )));
            cols.push(Arc::new(Int32Array::from_iter_values(
                chunk.iter().map(|n| n.2),
            )));
            emit(EvidenceTable::StackNodes, cols)?;
        }

        let mut aggregated: Vec<SampleRow> = self
            .aggregated
            .iter()
            .map(|(&(s, t, m), &(w, c))| (None, s, t, w, c, m))
            .collect();
        aggregated.sort_unstable_by_key(|s| (s.5, s.1, s.2));
        // Sorted in place (millions of timed samples are not copied), or
        // merged from spill runs.
        let mut timed = std::mem::take(&mut self.timed);
        let metric_of = |m: u16| usize::from(m).min(self.metrics.len() - 1);
        // Metrics that share a weight unit share its id.
        let unit_ids: Vec<u32> = self
            .metrics
            .iter()
            .enumerate()
            .map(|(m, spec)| {
                self.metrics
                    .iter()
                    .position(|other| other.weight_unit == spec.weight_unit)
                    .unwrap_or(m) as u32
            })
            .collect();
        let timed_rows = timed.sorted_all()?.map(|t| {
            t.map(|t| {
                (
                    Some(t.ts),
                    t.stack,
                    t.thread,
                    t.weight,
                    i64::from(t.count),
                    t.metric,
                )
            })
        });
        let mut rows = aggregated.iter().copied().map(Ok).chain(timed_rows);
        // Reductions per metric over each distinct (stack, thread): every
        // total is a sum of weights and counts, so the samples are summed
        // as they are written and each stack's path is walked once.
        let mut sums: FastHashMap<(u16, u32, u32), (i64, i64)> = FastHashMap::default();
        let mut chunk: Vec<SampleRow> = Vec::new();
        loop {
            chunk.clear();
            for row in rows.by_ref().take(batch_rows) {
                let row = row?;
                let sum = sums.entry((row.5, row.1, row.2)).or_insert((0, 0));
                sum.0 = sum.0.saturating_add(row.3);
                sum.1 = sum.1.saturating_add(row.4);
                chunk.push(row);
            }
            if chunk.is_empty() {
                break;
            }
            let mut cols = scope(chunk.len());
            cols.push(Arc::new(chunk.iter().map(|s| s.0).collect::<Int64Array>()));
            cols.push(Arc::new(UInt64Array::from_iter_values(
                chunk.iter().map(|s| u64::from(s.1)),
            )));
            cols.push(Arc::new(
                chunk
                    .iter()
                    .map(|s| self.threads[s.2 as usize].pid)
                    .collect::<Int64Array>(),
            ));
            cols.push(Arc::new(
                chunk
                    .iter()
                    .map(|s| self.threads[s.2 as usize].tid)
                    .collect::<Int64Array>(),
            ));
            cols.push(Arc::new(Int64Array::from_iter_values(
                chunk.iter().map(|s| s.3),
            )));
            // Keyed by metric (millions of rows, a handful of metrics): no
            // row's text is hashed.
            let mut unit = IdDictColumn::new();
            let mut metric = IdDictColumn::new();
            for s in &chunk {
                let m = metric_of(s.5);
                let spec = &self.metrics[m];
                unit.push(Some((unit_ids[m], || spec.weight_unit.as_str())));
                metric.push(Some((m as u32, || spec.metric.as_str())));
            }
            cols.push(unit.finish());
            cols.push(Arc::new(Int64Array::from_iter_values(
                chunk.iter().map(|s| s.4),
            )));
            cols.push(metric.finish());
            emit(EvidenceTable::Samples, cols)?;
        }

        drop(rows);
        let mut sums: Vec<_> = sums.into_iter().collect();
        sums.sort_unstable();
        let topmost = topmost_nodes(&self.nodes, self.frames.len());
        // One run of `sums` per metric (sorted by metric first): each
        // metric's rows are read once, whatever the number of metrics.
        let mut runs = sums.chunk_by(|a, b| a.0.0 == b.0.0).peekable();
        for (m, spec) in self.metrics.iter().enumerate() {
            let rows = match runs.peek() {
                Some(run) if usize::from(run[0].0.0) == m => runs.next().unwrap_or_default(),
                _ => &[],
            };
            let rows = rows.iter().map(|&((_, s, t), (w, c))| (s, t, w, c));
            self.write_reductions(rows, &topmost, spec, &mut emit, &scope, batch_rows)?;
        }
        Ok(())
    }

    /// `frame_totals` and `call_edges` of one metric from `(stack, thread,
    /// weight, count)` rows.
    fn write_reductions(
        &self,
        samples: impl Iterator<Item = (u32, u32, i64, i64)>,
        topmost: &Topmost,
        spec: &ReductionSpec,
        emit: &mut impl FnMut(EvidenceTable, Vec<ArrayRef>) -> Result<(), ExtractError>,
        scope: &impl Fn(usize) -> Vec<ArrayRef>,
        batch_rows: usize,
    ) -> Result<(), ExtractError> {
        let (totals, edges) = tree_totals(&self.nodes, topmost, samples);
        let mut totals: Vec<_> = totals.into_iter().collect();
        totals.sort_unstable_by_key(|t| t.0);
        for chunk in totals.chunks(batch_rows) {
            let frame = |t: &((u32, u32), [i64; 3])| &self.frames[t.0.0 as usize];
            let thread = |t: &((u32, u32), [i64; 3])| &self.threads[t.0.1 as usize];
            let mut cols = scope(chunk.len());
            cols.push(Arc::new(StringArray::from_iter_values(
                chunk.iter().map(|t| frame(t).key.as_str()),
            )));
            cols.push(Arc::new(StringArray::from_iter_values(
                chunk.iter().map(|t| frame(t).function.as_str()),
            )));
            cols.push(Arc::new(
                chunk
                    .iter()
                    .map(|t| frame(t).file.as_deref())
                    .collect::<StringArray>(),
            ));
            cols.push(Arc::new(
                chunk.iter().map(|t| frame(t).line).collect::<Int64Array>(),
            ));
            cols.push(Arc::new(
                chunk
                    .iter()
                    .map(|t| frame(t).module.as_deref())
                    .collect::<StringArray>(),
            ));
            cols.push(const_dict(&spec.metric, chunk.len()));
            cols.push(Arc::new(Int64Array::from_iter_values(
                chunk.iter().map(|t| t.1[0]),
            )));
            cols.push(Arc::new(Int64Array::from_iter_values(
                chunk.iter().map(|t| t.1[1]),
            )));
            cols.push(Arc::new(Int64Array::from_iter_values(
                chunk.iter().map(|t| t.1[2]),
            )));
            cols.push(const_dict(&spec.unit, chunk.len()));
            cols.push(Arc::new(
                chunk.iter().map(|t| thread(t).pid).collect::<Int64Array>(),
            ));
            cols.push(Arc::new(
                chunk.iter().map(|t| thread(t).tid).collect::<Int64Array>(),
            ));
            let mut tn = DictColumn::new();
            let mut pn = DictColumn::new();
            for t in chunk {
                tn.push(thread(t).thread_name.as_deref());
                pn.push(thread(t).process_name.as_deref());
            }
            cols.push(tn.finish());
            cols.push(pn.finish());
            let mut category = DictColumn::new();
            chunk
                .iter()
                .for_each(|t| category.push(frame(t).category.as_deref()));
            cols.push(category.finish());
            emit(EvidenceTable::FrameTotals, cols)?;
        }
        let mut edges: Vec<_> = edges.into_iter().collect();
        edges.sort_unstable_by_key(|e| e.0);
        for chunk in edges.chunks(batch_rows) {
            let mut cols = scope(chunk.len());
            cols.push(Arc::new(StringArray::from_iter_values(
                chunk
                    .iter()
                    .map(|e| self.frames[e.0.0 as usize].key.as_str()),
            )));
            cols.push(Arc::new(StringArray::from_iter_values(
                chunk
                    .iter()
                    .map(|e| self.frames[e.0.1 as usize].key.as_str()),
            )));
            cols.push(const_dict(&spec.metric, chunk.len()));
            cols.push(Arc::new(Int64Array::from_iter_values(
                chunk.iter().map(|e| e.1[0]),
            )));
            cols.push(Arc::new(Int64Array::from_iter_values(
                chunk.iter().map(|e| e.1[1]),
            )));
            emit(EvidenceTable::CallEdges, cols)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logical_key_is_stable_and_distinguishes_fields() {
        let a = logical_key("f", None, None, Some("cpu_op"));
        assert_eq!(a.len(), 32);
        assert_eq!(a, logical_key("f", None, None, Some("cpu_op")));
        assert_ne!(a, logical_key("f", None, None, None));
        assert_ne!(a, logical_key("f", Some("x.py"), Some(1), Some("cpu_op")));
        // Canonical text: keys sorted, nulls written.
        let text = serde_json::json!({"file": null, "function": "f", "line": null, "module": "m"})
            .to_string();
        assert_eq!(
            text,
            r#"{"file":null,"function":"f","line":null,"module":"m"}"#
        );
    }

    struct Collect(Vec<(EvidenceTable, RecordBatch)>);
    impl BatchSink for Collect {
        fn write_batch(
            &mut self,
            table: EvidenceTable,
            batch: RecordBatch,
        ) -> Result<(), crate::api::SinkError> {
            self.0.push((table, batch));
            Ok(())
        }
    }

    fn spec(metric: &str, unit: &str) -> ReductionSpec {
        ReductionSpec {
            metric: metric.into(),
            weight_unit: unit.into(),
            unit: unit.into(),
        }
    }

    #[test]
    fn two_metrics_share_frames_and_reduce_separately() {
        let mut agg = StackAggregator::new();
        let cpu = agg.metric(spec("cpu.time_ns", "ns"));
        let bytes = agg.metric(spec("memory.alloc_bytes", "bytes"));
        assert_eq!(agg.metric(spec("cpu.time_ns", "ns")), cpu);
        let main = agg.frame("main", None, None, None, "native", true);
        let work = agg.frame("work", None, None, None, "native", true);
        let root = agg.stack(None, main);
        let leaf = agg.stack(Some(root), work);
        let thread = agg.thread(ThreadInfo::default());
        agg.add_metric_sample(cpu, leaf, thread, None, 30, 3);
        agg.add_metric_sample(cpu, root, thread, None, 10, 1);
        agg.add_metric_sample(bytes, leaf, thread, None, 4096, 2);
        let mut sink = Collect(Vec::new());
        agg.finish_all("r", "a", 1024, &mut sink).unwrap();

        let rows = |t: EvidenceTable| -> usize {
            sink.0
                .iter()
                .filter(|(x, _)| *x == t)
                .map(|(_, b)| b.num_rows())
                .sum()
        };
        assert_eq!(rows(EvidenceTable::Frames), 2);
        assert_eq!(rows(EvidenceTable::StackNodes), 2);
        assert_eq!(rows(EvidenceTable::Samples), 3);
        // frame_totals: (main, work) per metric → 2 + 2 rows.
        assert_eq!(rows(EvidenceTable::FrameTotals), 4);
        let mut seen = Vec::new();
        for (t, b) in &sink.0 {
            if *t != EvidenceTable::FrameTotals {
                continue;
            }
            let function = b.column_by_name("function").unwrap();
            let function = function.as_any().downcast_ref::<StringArray>().unwrap();
            let metric = arrow::compute::cast(
                b.column_by_name("metric").unwrap(),
                &arrow::datatypes::DataType::Utf8,
            )
            .unwrap();
            let metric = metric.as_any().downcast_ref::<StringArray>().unwrap();
            let self_v = b.column_by_name("self_value").unwrap();
            let self_v = self_v.as_any().downcast_ref::<Int64Array>().unwrap();
            let incl = b.column_by_name("inclusive_value").unwrap();
            let incl = incl.as_any().downcast_ref::<Int64Array>().unwrap();
            for i in 0..b.num_rows() {
                seen.push((
                    metric.value(i).to_owned(),
                    function.value(i).to_owned(),
                    self_v.value(i),
                    incl.value(i),
                ));
            }
        }
        seen.sort();
        assert_eq!(
            seen,
            vec![
                ("cpu.time_ns".into(), "main".into(), 10, 40),
                ("cpu.time_ns".into(), "work".into(), 30, 30),
                ("memory.alloc_bytes".into(), "main".into(), 0, 4096),
                ("memory.alloc_bytes".into(), "work".into(), 4096, 4096),
            ]
        );
    }

    #[test]
    fn timed_samples_come_out_sorted_and_reduce_with_the_untimed_ones() {
        let mut agg = StackAggregator::new();
        let cpu = agg.metric(spec("cpu.samples", "samples"));
        let main = agg.frame("main", None, None, None, "native", true);
        let work = agg.frame("work", None, None, None, "native", true);
        let root = agg.stack(None, main);
        let leaf = agg.stack(Some(root), work);
        let thread = agg.thread(ThreadInfo::default());
        agg.add_metric_sample(cpu, leaf, thread, Some(30), 1, 1);
        agg.add_metric_sample(cpu, root, thread, Some(10), 2, 1);
        agg.add_metric_sample(cpu, leaf, thread, Some(20), 4, 5);
        agg.add_metric_sample(cpu, leaf, thread, Some(20), 8, -3);
        agg.add_metric_sample(cpu, leaf, thread, None, 16, 1);
        let mut sink = Collect(Vec::new());
        agg.finish_all("r", "a", 2, &mut sink).unwrap();
        let column = |table: EvidenceTable, name: &str| -> Vec<Option<i64>> {
            sink.0
                .iter()
                .filter(|(t, _)| *t == table)
                .flat_map(|(_, b)| {
                    let c = b.column_by_name(name).unwrap();
                    let c = c.as_any().downcast_ref::<Int64Array>().unwrap();
                    c.iter().collect::<Vec<_>>()
                })
                .collect()
        };
        // The untimed row first, then by time (weight breaks the tie); a
        // negative count is kept as 0. Batches of 2 rows.
        assert_eq!(
            column(EvidenceTable::Samples, "ts_ns"),
            [None, Some(10), Some(20), Some(20), Some(30)]
        );
        assert_eq!(
            column(EvidenceTable::Samples, "weight"),
            [Some(16), Some(2), Some(4), Some(8), Some(1)]
        );
        assert_eq!(
            column(EvidenceTable::Samples, "count"),
            [Some(1), Some(1), Some(5), Some(0), Some(1)]
        );
        // work: self 1 + 4 + 8 + 16; main: self 2, inclusive everything.
        let mut totals: Vec<_> = column(EvidenceTable::FrameTotals, "self_value")
            .into_iter()
            .zip(column(EvidenceTable::FrameTotals, "inclusive_value"))
            .collect();
        totals.sort();
        assert_eq!(totals, [(Some(2), Some(31)), (Some(29), Some(29))]);
    }
}
