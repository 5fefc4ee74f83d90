//! Unit tests of `extract.rs`: synthetic captures worked by hand (every
//! view per thread, native frames, the aggregated layout, the heap's
//! moments), damaged and foreign inputs, cancellation, and the corpus
//! capture against the numbers memray 1.20.0's own API gives for it
//! (listed in `corpus_tests.rs`).

use std::collections::BTreeMap;

use arrow::array::Array;
use arrow::datatypes::DataType;
use arrow::record_batch::RecordBatch;

use super::*;
use crate::api::{NoObserver, SinkError};
use crate::memray::events::Allocator;
use crate::memray::header::sample_header;
use crate::memray::test_capture::CaptureWriter;
use crate::schema::EvidenceTable;
use crate::spill_compare::{ints, texts};

#[derive(Default)]
struct Collect(Vec<(EvidenceTable, RecordBatch)>);

impl BatchSink for Collect {
    fn write_batch(&mut self, table: EvidenceTable, batch: RecordBatch) -> Result<(), SinkError> {
        self.0.push((table, batch));
        Ok(())
    }
}

fn floats(b: &RecordBatch, name: &str) -> Vec<f64> {
    let c = arrow::compute::cast(b.column_by_name(name).unwrap(), &DataType::Float64).unwrap();
    let c = c
        .as_any()
        .downcast_ref::<arrow::array::Float64Array>()
        .unwrap();
    c.values().to_vec()
}

/// The evidence of one extraction, read back into plain rows.
struct Evidence {
    summary: ExtractionSummary,
    batches: Vec<(EvidenceTable, RecordBatch)>,
}

impl Evidence {
    fn of(bytes: &[u8]) -> Evidence {
        let mut sink = Collect::default();
        let options = ExtractOptions::new("run", "artifact");
        let summary = extract_memray(bytes, &options, &mut sink, &NoObserver).unwrap();
        Evidence {
            summary,
            batches: sink.0,
        }
    }

    fn tables(&self, t: EvidenceTable) -> impl Iterator<Item = &RecordBatch> {
        self.batches
            .iter()
            .filter(move |(x, _)| *x == t)
            .map(|(_, b)| b)
    }

    /// stack id → (parent, its frame's label, language, module); a
    /// Python frame's label is `function@file-name:line`.
    fn nodes(&self) -> BTreeMap<i64, (Option<i64>, String, String, Option<String>)> {
        let mut frames = BTreeMap::new();
        for b in self.tables(EvidenceTable::Frames) {
            let (id, f, lang, module) = (
                ints(b, "frame_id"),
                texts(b, "function"),
                texts(b, "language"),
                texts(b, "module"),
            );
            let (file, line) = (texts(b, "file"), ints(b, "line"));
            for i in 0..b.num_rows() {
                let mut label = f[i].clone().unwrap();
                if let (Some(file), Some(line)) = (&file[i], line[i]) {
                    let name = file.rsplit('/').next().unwrap();
                    label = format!("{label}@{name}:{line}");
                }
                frames.insert(
                    id[i].unwrap(),
                    (label, lang[i].clone().unwrap(), module[i].clone()),
                );
            }
        }
        let mut nodes = BTreeMap::new();
        for b in self.tables(EvidenceTable::StackNodes) {
            let (id, parent, frame) = (
                ints(b, "stack_id"),
                ints(b, "parent_stack_id"),
                ints(b, "frame_id"),
            );
            for i in 0..b.num_rows() {
                let (f, lang, module) = frames[&frame[i].unwrap()].clone();
                nodes.insert(id[i].unwrap(), (parent[i], f, lang, module));
            }
        }
        nodes
    }

    /// (metric, tid, innermost Python function) → (weight, count).
    fn by_python_leaf(&self) -> BTreeMap<(String, i64, String), (i64, i64)> {
        let nodes = self.nodes();
        let mut out = BTreeMap::new();
        for b in self.tables(EvidenceTable::Samples) {
            let (stack, tid, w, n, metric) = (
                ints(b, "stack_id"),
                ints(b, "tid"),
                ints(b, "weight"),
                ints(b, "count"),
                texts(b, "metric"),
            );
            for i in 0..b.num_rows() {
                let mut at = stack[i];
                let mut leaf = "-".to_owned();
                while let Some(s) = at {
                    let (parent, f, lang, _) = &nodes[&s];
                    if lang == "python" {
                        leaf = f.clone();
                        break;
                    }
                    at = *parent;
                }
                let slot = out
                    .entry((metric[i].clone().unwrap(), tid[i].unwrap(), leaf))
                    .or_insert((0, 0));
                slot.0 += w[i].unwrap();
                slot.1 += n[i].unwrap();
            }
        }
        out
    }

    /// metric → (Σ weight, Σ count).
    fn metric_totals(&self) -> BTreeMap<String, (i64, i64)> {
        let mut out = BTreeMap::new();
        for ((metric, _, _), (w, n)) in self.by_python_leaf() {
            let slot = out.entry(metric).or_insert((0, 0));
            slot.0 += w;
            slot.1 += n;
        }
        out
    }

    /// series → [(ts, value)] in row order.
    fn counters(&self) -> BTreeMap<String, Vec<(i64, f64)>> {
        let mut out: BTreeMap<String, Vec<(i64, f64)>> = BTreeMap::new();
        for b in self.tables(EvidenceTable::Counters) {
            let (name, ts, v, unit) = (
                texts(b, "name"),
                ints(b, "ts_ns"),
                floats(b, "value"),
                texts(b, "unit"),
            );
            for i in 0..b.num_rows() {
                assert_eq!(unit[i].as_deref(), Some("bytes"));
                out.entry(name[i].clone().unwrap())
                    .or_default()
                    .push((ts[i].unwrap(), v[i]));
            }
        }
        out
    }

    /// (tid, thread name) pairs of `frame_totals`.
    fn thread_names(&self) -> BTreeMap<i64, Option<String>> {
        let mut out = BTreeMap::new();
        for b in self.tables(EvidenceTable::FrameTotals) {
            let (tid, name) = (ints(b, "tid"), texts(b, "thread_name"));
            for i in 0..b.num_rows() {
                out.insert(tid[i].unwrap(), name[i].clone());
            }
        }
        out
    }

    fn limitation(&self, code: &str) -> u64 {
        let l = self.summary.limitations.iter().find(|l| l.code == code);
        l.map_or(0, |l| l.count)
    }
}

const START_MS: i64 = 1_700_000_000_000;

/// main() allocates A (100), calls work() which allocates B (50): the
/// peak (150); an RSS sample; A is freed; thread 2 ("worker") in work()
/// allocates C (30) and maps 60 bytes, then unmaps 20 of them.
fn two_threads() -> CaptureWriter {
    let mut w = CaptureWriter::all_allocations(false);
    w.code_object(1, "main", "/app/m.py", 10, &[]);
    w.code_object(2, "work", "/app/w.py", 20, &[]);
    w.push(1, 1, 0, false);
    w.alloc(1, 0x1000, 100, Allocator::Malloc, 0);
    w.push(1, 2, 0, false);
    w.alloc(1, 0x2000, 50, Allocator::Malloc, 0);
    w.memory(10_000_000, 5);
    w.alloc(1, 0x1000, 0, Allocator::Free, 0);
    w.thread_name(2, "worker");
    w.push(2, 2, 0, false);
    w.alloc(2, 0x3000, 30, Allocator::Calloc, 0);
    w.alloc(2, 0x10000, 60, Allocator::Mmap, 0);
    w.alloc(2, 0x10000, 20, Allocator::Munmap, 0);
    w.trailer();
    w
}

fn key(metric: &str, tid: i64, leaf: &str) -> (String, i64, String) {
    (metric.to_owned(), tid, leaf.to_owned())
}

#[test]
fn every_view_is_a_metric_per_thread_and_site() {
    let w = two_threads();
    for bytes in [w.bytes.clone(), w.lz4()] {
        let e = Evidence::of(&bytes);
        let want: BTreeMap<_, _> = [
            (key("memory.alloc_bytes", 1, "main@m.py:10"), (100, 1)),
            (key("memory.alloc_bytes", 1, "work@w.py:20"), (50, 1)),
            (key("memory.alloc_bytes", 2, "work@w.py:20"), (90, 2)),
            (key("memory.alloc_objects", 1, "main@m.py:10"), (1, 1)),
            (key("memory.alloc_objects", 1, "work@w.py:20"), (1, 1)),
            (key("memory.alloc_objects", 2, "work@w.py:20"), (2, 2)),
            (key("memory.inuse_bytes", 1, "work@w.py:20"), (50, 1)),
            (key("memory.inuse_bytes", 2, "work@w.py:20"), (70, 2)),
            (key("memory.inuse_objects", 1, "work@w.py:20"), (1, 1)),
            (key("memory.inuse_objects", 2, "work@w.py:20"), (2, 2)),
            (key("memory.peak_bytes", 1, "main@m.py:10"), (100, 1)),
            (key("memory.peak_bytes", 1, "work@w.py:20"), (50, 1)),
            (key("memory.peak_objects", 1, "main@m.py:10"), (1, 1)),
            (key("memory.peak_objects", 1, "work@w.py:20"), (1, 1)),
        ]
        .into_iter()
        .collect();
        assert_eq!(e.by_python_leaf(), want);
        let names = e.thread_names();
        assert_eq!(names[&1], None);
        assert_eq!(names[&2].as_deref(), Some("worker"));

        let start_ns = START_MS * 1_000_000;
        let counters = e.counters();
        assert_eq!(counters["mem.rss"], [(start_ns + 5_000_000, 10e6)]);
        // The sample (150 live), the peak (150, reached before the
        // sample: its lower bound is the start), the end (50 + 30 + 40).
        assert_eq!(
            counters["mem.heap"],
            [
                (start_ns, 150.0),
                (start_ns + 5_000_000, 150.0),
                (start_ns + 500_000_000, 120.0)
            ]
        );
        let m = &e.summary.metadata;
        assert_eq!(m["peak_heap_bytes"], 150);
        assert_eq!(
            (m["leaked_bytes"].clone(), m["leaked_allocations"].clone()),
            (120.into(), 3.into())
        );
        assert_eq!(m["allocated_bytes"], 240);
        assert_eq!(m["peak_not_before_ns"], start_ns);
        assert_eq!(e.summary.format, "memray");
        assert_eq!(e.summary.input_events, 6);
        assert!(
            e.summary.limitations.is_empty(),
            "{:?}",
            e.summary.limitations
        );
        assert!(e.summary.coverage["symbolized_frames"]);
        assert_eq!(
            e.summary.time_span_ns,
            Some((start_ns, start_ns + 500_000_000))
        );
    }
}

#[test]
fn native_frames_sit_below_the_python_leaf_as_module_and_address() {
    let mut w = CaptureWriter::all_allocations(true);
    w.map_start();
    w.image("/usr/bin/python3", 0x40_0000, &[(0, 0x2000)]);
    w.image("/lib/libc.so.6", 0x7f00_0000_0000, &[(0, 0x10_0000)]);
    w.code_object(1, "main", "/app/m.py", 3, &[]);
    w.native_frame(0x40_1234, 0);
    w.native_frame(0x7f00_0000_0500, 1);
    w.push(1, 1, 0, false);
    w.alloc(1, 0x5000, 64, Allocator::Malloc, 2);
    w.alloc(1, 0x6000, 8, Allocator::Malloc, 0);
    w.trailer();
    let e = Evidence::of(&w.bytes);
    let nodes = e.nodes();
    let mut leaves: Vec<Vec<(String, String, Option<String>)>> = Vec::new();
    for b in e.tables(EvidenceTable::Samples) {
        let (stack, metric) = (ints(b, "stack_id"), texts(b, "metric"));
        for i in 0..b.num_rows() {
            if metric[i].as_deref() != Some("memory.alloc_bytes") {
                continue;
            }
            let mut path = Vec::new();
            let mut at = stack[i];
            while let Some(s) = at {
                let (parent, f, lang, module) = nodes[&s].clone();
                path.push((f, lang, module));
                at = parent;
            }
            path.reverse();
            leaves.push(path);
        }
    }
    leaves.sort();
    let py = ("main@m.py:3".to_owned(), "python".to_owned(), None);
    let native = |f: &str, m: &str| (f.to_owned(), "native".to_owned(), Some(m.to_owned()));
    assert_eq!(
        leaves,
        [
            vec![py.clone()],
            vec![
                py,
                native("0x1234", "python3"),
                native("0x500", "libc.so.6")
            ],
        ]
    );
    assert_eq!(e.limitation("frames_unsymbolized"), 2);
    assert!(!e.summary.coverage["symbolized_frames"]);
    assert!(e.summary.coverage["native_stacks"]);
}

#[test]
fn aggregated_captures_give_peak_and_leaks_without_an_allocated_total() {
    let mut w =
        CaptureWriter::with_header(&sample_header(false, CaptureLayout::AggregatedAllocations));
    w.agg_snapshot(1_700_000_000_100, 9_000_000, 4096);
    w.agg_thread(2, "loader");
    w.code_object(3, "fill", "/app/f.py", 7, &[]);
    w.agg_frame(0, 3, 0, false);
    w.agg_trace(0, 0);
    w.agg_allocation(2, Allocator::Malloc, 0, 1, 0, (2, 4096), (1, 1024));
    w.agg_allocation(1, Allocator::Malloc, 0, 0, 0, (1, 10), (0, 0));
    w.agg_trailer();
    let e = Evidence::of(&w.lz4());
    let want: BTreeMap<_, _> = [
        (key("memory.inuse_bytes", 2, "fill@f.py:7"), (1024, 1)),
        (key("memory.inuse_objects", 2, "fill@f.py:7"), (1, 1)),
        (key("memory.peak_bytes", 1, "-"), (10, 1)),
        (key("memory.peak_bytes", 2, "fill@f.py:7"), (4096, 2)),
        (key("memory.peak_objects", 1, "-"), (1, 1)),
        (key("memory.peak_objects", 2, "fill@f.py:7"), (2, 2)),
    ]
    .into_iter()
    .collect();
    assert_eq!(e.by_python_leaf(), want);
    assert_eq!(e.limitation("no_allocation_history"), 1);
    assert!(!e.summary.coverage["allocation_history"]);
    assert_eq!(e.summary.metadata["peak_heap_bytes"], 4106);
    assert!(!e.summary.metadata.contains_key("allocated_bytes"));
    let heap = &e.counters()["mem.heap"];
    assert_eq!(heap[0], (1_700_000_000_100 * 1_000_000, 4096.0));
    assert_eq!(e.thread_names()[&2].as_deref(), Some("loader"));
}

#[test]
fn foreign_old_and_empty_inputs_are_typed_errors() {
    let options = ExtractOptions::new("r", "a");
    let run = |bytes: &[u8]| extract_memray(bytes, &options, &mut Collect::default(), &NoObserver);
    for bad in [&b""[..], b"PK\x03\x04", b"memray\0"] {
        assert!(
            matches!(run(bad), Err(ExtractError::Parse { .. })),
            "{bad:?}"
        );
    }
    let mut old = sample_header(false, CaptureLayout::AllAllocations);
    old.version = 11;
    let w = CaptureWriter::with_header(&old);
    match run(&w.bytes) {
        Err(ExtractError::UnsupportedVersion {
            format,
            found,
            supported,
        }) => {
            assert_eq!(format, "memray");
            assert!(found.contains("11"), "{found}");
            assert!(supported.contains("12, 13"), "{supported}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn cut_and_damaged_captures_keep_what_came_before_or_are_refused() {
    let w = two_threads();
    for bytes in [w.bytes.clone(), w.lz4()] {
        let options = ExtractOptions::new("r", "a");
        let whole = Evidence::of(&bytes).summary;
        for cut in 0..bytes.len() {
            match extract_memray(
                &bytes[..cut],
                &options,
                &mut Collect::default(),
                &NoObserver,
            ) {
                Ok(s) => {
                    let codes: Vec<&str> = s.limitations.iter().map(|l| l.code.as_str()).collect();
                    let said = codes.iter().any(|c| {
                        matches!(
                            *c,
                            "truncated_input" | "malformed_record" | "capture_unfinished"
                        )
                    });
                    // A cut inside the lz4 end mark loses no record.
                    let complete = s.metadata == whole.metadata && s.rows == whole.rows;
                    assert!(said || complete, "cut at {cut}: {codes:?}");
                }
                Err(ExtractError::Parse { .. }) => {}
                Err(other) => panic!("cut at {cut}: {other:?}"),
            }
        }
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0xff;
            let result =
                extract_memray(&damaged[..], &options, &mut Collect::default(), &NoObserver);
            assert!(
                !matches!(result, Err(ExtractError::Io(_) | ExtractError::Cancelled)),
                "flip at {at}: {result:?}"
            );
        }
    }
}

struct CancelAfter(std::sync::atomic::AtomicU64);

impl ExtractObserver for CancelAfter {
    fn cancelled(&self) -> bool {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed) >= 1
    }
}

#[test]
fn cancellation_stops_the_read() {
    let mut w = CaptureWriter::all_allocations(false);
    for i in 0..10_000u64 {
        w.alloc(1, 0x1000 + i * 16, 16, Allocator::Malloc, 0);
    }
    w.trailer();
    let observer = CancelAfter(std::sync::atomic::AtomicU64::new(0));
    let options = ExtractOptions::new("r", "a");
    let result = extract_memray(&w.bytes[..], &options, &mut Collect::default(), &observer);
    assert!(matches!(result, Err(ExtractError::Cancelled)), "{result:?}");
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn corpus_capture_sums_to_memrays_own_numbers() {
    let path = std::path::PathBuf::from(env!("FLAMEOX_CORPUS_DIR"))
        .join("misc/memray_workload_native.bin");
    let bytes = std::fs::read(path).unwrap();
    let e = Evidence::of(&bytes);
    let totals = e.metric_totals();
    // memray 1.20.0: metadata.peak_memory, the high-water-mark and leak
    // records, and the allocated sum over get_allocation_records().
    assert_eq!(totals["memory.peak_bytes"], (3_939_835, 74));
    assert_eq!(totals["memory.inuse_bytes"], (3_210_228, 61));
    assert_eq!(totals["memory.inuse_objects"], (61, 61));
    assert_eq!(totals["memory.alloc_bytes"].0, 54_640_934);
    assert_eq!(totals["memory.alloc_objects"].0, 41_872 + 366 + 61 + 6);
    let leaks = e.by_python_leaf();
    let listcomp = leaks[&key("memory.inuse_bytes", 1, "<listcomp>@workload.py:7")];
    assert_eq!(listcomp.0, 2_097_152);
    let names = e.thread_names();
    let named: Vec<_> = (2..=4).map(|t| names[&t].clone().unwrap()).collect();
    assert_eq!(named, ["worker-0", "worker-1", "worker-2"]);
    let counters = e.counters();
    assert_eq!(counters["mem.rss"].len(), 41);
    assert_eq!(counters["mem.rss"].last().unwrap().1, 51_040_256.0);
    let heap = &counters["mem.heap"];
    assert_eq!(heap.len(), 43);
    assert_eq!(heap.iter().map(|p| p.1).fold(0.0, f64::max), 3_939_835.0);
    assert_eq!(heap.last().unwrap().1, 3_210_228.0);
    assert!(e.limitation("frames_unsymbolized") > 0);
    assert_eq!(e.summary.input_events, 84_564);
    assert_eq!(e.summary.metadata["capture"]["python_version"], "3.11.15");
}
