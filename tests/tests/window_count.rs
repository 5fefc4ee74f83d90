//! The trace window's total counted from Parquet footers
//! (`services::window_count`) equals `count_rows` over the window filter —
//! for the whole trace, a window inside one row group, windows across
//! several with boundary groups, windows starting inside the longest
//! slices, an empty window — on a generated Kineto trace of several row
//! groups with long steps and on a real corpus trace; with a kind filter
//! the footers give no count and the query counts. The longest slice
//! (the pruning bound) is recorded at import and read from statistics.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use arrow::array::{Array, Int64Array};
use flameox_benches::kineto::{KinetoSpec, write_kineto};
use flameox_engine::Workspace;
use flameox_engine::recipes::window::{self, WindowQuery};
use flameox_engine::services::QueryContext;
use flameox_engine::services::analyze::{WindowRequest, trace_window};
use flameox_engine::services::import::{ImportRequest, Quiet, import_artifact};
use flameox_engine::services::window_count::{count_from_footers, longest_from_footers};
use flameox_tests::corpus;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::metadata::ParquetMetaDataReader;
use parquet::file::statistics::Statistics;

struct Imported {
    _dir: tempfile::TempDir,
    ws: Workspace,
    artifact_id: String,
    span: (i64, i64),
}

fn import(path: &Path, dir: tempfile::TempDir) -> Imported {
    let (ws, _) = Workspace::init(dir.path()).unwrap();
    let imported = import_artifact(
        &ws,
        &ImportRequest {
            path: path.to_path_buf(),
            ..Default::default()
        },
        &Quiet,
    )
    .unwrap();
    Imported {
        _dir: dir,
        ws,
        artifact_id: imported.artifact_id,
        span: imported.time_span_ns.unwrap(),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

impl Imported {
    /// The artifact's `trace_events` files.
    fn files(&self) -> Vec<PathBuf> {
        let session = QueryContext::new(&self.ws).session(None).unwrap();
        session
            .snapshot
            .generations_for(&self.artifact_id)
            .flat_map(|g| g.files.iter())
            .filter(|f| f.table == "trace_events")
            .map(|f| self.ws.dir().join(&f.path))
            .collect()
    }

    /// `(min, max)` `ts_ns` of every row group of the artifact's files.
    fn row_groups(&self) -> Vec<(i64, i64)> {
        let mut ranges = Vec::new();
        for path in self.files() {
            let metadata = ParquetMetaDataReader::new()
                .parse_and_finish(&File::open(path).unwrap())
                .unwrap();
            let schema = metadata.file_metadata().schema_descr();
            let ts = (0..schema.num_columns())
                .find(|&i| schema.column(i).name() == "ts_ns")
                .unwrap();
            for group in metadata.row_groups() {
                match group.column(ts).statistics() {
                    Some(Statistics::Int64(s)) => {
                        ranges.push((*s.min_opt().unwrap(), *s.max_opt().unwrap()))
                    }
                    other => panic!("ts_ns statistics: {other:?}"),
                }
            }
        }
        ranges
    }

    /// `(ts_ns, dur_ns)` of the `n` longest slices, read from the files.
    fn longest(&self, n: usize) -> Vec<(i64, i64)> {
        let mut rows = Vec::new();
        for path in self.files() {
            let builder =
                ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
            let mask = ProjectionMask::columns(builder.parquet_schema(), ["ts_ns", "dur_ns"]);
            for batch in builder.with_projection(mask).build().unwrap() {
                let batch = batch.unwrap();
                let int = |name: &str| {
                    let column = batch.column_by_name(name).unwrap();
                    column
                        .as_any()
                        .downcast_ref::<Int64Array>()
                        .unwrap()
                        .clone()
                };
                let (ts, dur) = (int("ts_ns"), int("dur_ns"));
                rows.extend((0..batch.num_rows()).map(|r| (ts.value(r), dur.value(r))));
            }
        }
        rows.sort_by_key(|&(ts, dur)| (std::cmp::Reverse(dur), ts));
        rows.truncate(n);
        rows
    }

    /// The window's total from the footers, from `count_rows` and from the
    /// service; asserts they agree (no footer count with a kind filter).
    fn total(
        &self,
        rt: &tokio::runtime::Runtime,
        start_ns: i64,
        end_ns: i64,
        kind: Option<&str>,
    ) -> u64 {
        let qc = QueryContext::new(&self.ws);
        let session = qc.session(None).unwrap();
        let max_dur_ns = session
            .snapshot
            .generations_for(&self.artifact_id)
            .filter_map(|g| g.summary.max_event_dur_ns)
            .max()
            .unwrap();
        let query = WindowQuery {
            artifact_id: self.artifact_id.clone(),
            start_ns,
            end_ns,
            max_dur_ns,
            kind: kind.map(str::to_owned),
            name: None,
            track_id: None,
            stream: None,
            correlation_id: None,
            limit: 5,
            after: None,
            known_total: None,
        };
        // `known_total: None`: the recipe counts with `count_rows`.
        let counted = rt
            .block_on(window::trace_window(&session.ctx, &query))
            .unwrap()
            .total;
        let from_footers = count_from_footers(self.ws.dir(), &session.snapshot, &query);
        match kind {
            None => assert_eq!(from_footers, Some(counted), "window {start_ns}..{end_ns}"),
            Some(_) => assert_eq!(from_footers, None),
        }
        let request = WindowRequest {
            target: self.artifact_id.clone(),
            start_ns,
            end_ns,
            kind: kind.map(str::to_owned),
            limit: Some(5),
            ..Default::default()
        };
        let page = rt.block_on(trace_window(&qc, &request)).unwrap();
        assert_eq!(page.total, counted, "service, window {start_ns}..{end_ns}");
        counted
    }

    /// Every window shape of the module doc; returns the row groups seen.
    fn check_windows(&self, rt: &tokio::runtime::Runtime) -> usize {
        let groups = self.row_groups();
        let (first, last) = self.span;
        let whole = self.total(rt, first, last + 1, None);
        assert!(whole > 0);
        let (g_min, g_max) = groups[groups.len() / 2];
        let third = (g_max - g_min) / 3;
        let inside = self.total(rt, g_min + third, g_max - third, None);
        assert!(inside > 0 && inside < whole, "{inside} of {whole}");
        if groups.len() >= 3 {
            let mid = |(a, b): (i64, i64)| a + (b - a) / 2;
            let across = self.total(rt, mid(groups[0]), mid(groups[2]), None);
            assert!(across > inside && across < whole, "{across}");
            // Edges exactly on row-group bounds.
            self.total(rt, groups[1].0, groups[2].1, None);
            self.total(rt, groups[0].1, groups[1].0 + 1, None);
        }
        // The longest slice: recorded at import, in the statistics, in the rows.
        let session = QueryContext::new(&self.ws).session(None).unwrap();
        let recorded = session
            .snapshot
            .generations_for(&self.artifact_id)
            .filter_map(|g| g.summary.max_event_dur_ns)
            .max();
        let from_footers =
            longest_from_footers(self.ws.dir(), &session.snapshot, &self.artifact_id);
        let longest = self.longest(3);
        assert_eq!(
            (recorded, from_footers),
            (Some(longest[0].1), Some(longest[0].1))
        );
        for (ts, dur) in longest {
            let start = ts + dur / 2;
            for width in [1_000, dur] {
                let overlapping = self.total(rt, start, start + width, None);
                // The long slice itself starts before the window.
                assert!(overlapping >= 1);
            }
        }
        assert_eq!(self.total(rt, last + 10, last + 20, None), 0);
        assert_eq!(self.total(rt, first - 20, first - 10, None), 0);
        let kernels = self.total(rt, first, last + 1, Some("kernel"));
        assert!(kernels > 0 && kernels < whole, "{kernels}");
        groups.len()
    }
}

impl Imported {
    /// Pages through the whole trace (1,000 rows a page): every row once,
    /// in `(ts_ns, event_id)` order, as many as the first page's total.
    /// Guards against DataFusion's limit pruning skipping the row groups
    /// of a page's first rows (see `holds_only` in window_count.rs).
    fn page_through_whole_trace(&self, rt: &tokio::runtime::Runtime) {
        let qc = QueryContext::new(&self.ws);
        let mut request = WindowRequest {
            target: self.artifact_id.clone(),
            start_ns: self.span.0,
            end_ns: self.span.1 + 1,
            limit: Some(1_000),
            ..Default::default()
        };
        let (mut seen, mut total, mut last) = (0u64, None, None);
        loop {
            let page = rt.block_on(trace_window(&qc, &request)).unwrap();
            total.get_or_insert(page.total);
            for event in &page.events {
                let key = (event.ts_ns, event.event_id);
                assert!(last < Some(key), "{key:?} after {last:?}");
                last = Some(key);
            }
            seen += page.returned as u64;
            match page.next_cursor {
                Some(cursor) => request.cursor = Some(cursor),
                None => break,
            }
        }
        assert_eq!(Some(seen), total);
    }
}

#[test]
fn footer_counts_equal_count_rows_on_a_generated_trace_of_several_row_groups() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("generated.pt.trace.json");
    let spec = KinetoSpec {
        seed: 5,
        events: 330_000,
        streams: 4,
        // Long `ProfilerStep`s: windows inside them overlap from before.
        ops_per_step: 2_000,
    };
    write_kineto(&spec, BufWriter::new(File::create(&trace).unwrap())).unwrap();
    let imported = import(&trace, dir);
    let rt = runtime();
    assert!(imported.check_windows(&rt) >= 3);
    imported.page_through_whole_trace(&rt);
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn footer_counts_equal_count_rows_on_a_corpus_trace() {
    let trace = corpus().join("kineto/hta_v100_nccl_rank1of2_216k_events.json.gz");
    let imported = import(&trace, tempfile::tempdir().unwrap());
    let rt = runtime();
    assert!(imported.check_windows(&rt) >= 2);
}
