//! Query latency over seeded generated Kineto corpora: hotspots (fresh and
//! warm session), callers of the top frame, trace-window pages at depths 1,
//! 100 and 10,000 (keyset paging: the latency must not grow with depth),
//! accelerator launches and the PyTorch view.
//!
//! Sizes are `trace_events` rows (what the queries scan): 100 K and 1 M by
//! default, 10 M with `FLAMEOX_BENCH_10M=1`; `FLAMEOX_BENCH_SMALL=1` keeps
//! only 100 K and depths ≤ 100, as does the test suite (criterion's test
//! mode). Each corpus is generated and imported once, on first use, untimed.
//! See docs/performance.md.

use std::cell::OnceCell;
use std::hint::black_box;
use std::io::BufWriter;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, criterion_group, criterion_main};
use flameox_benches::kineto::{KinetoSpec, write_kineto};
use flameox_engine::Workspace;
use flameox_engine::query::SessionCache;
use flameox_engine::recipes::drilldown::Direction;
use flameox_engine::services::analyze::{
    FrameRequest, HotspotsRequest, WindowRequest, analyze_hotspots, frame_neighbors, trace_window,
};
use flameox_engine::services::gpu::{AcceleratorRequest, accelerator_launches};
use flameox_engine::services::import::{ImportRequest, Quiet, import_artifact};
use flameox_engine::services::pytorch::{PytorchRequest, pytorch};
use flameox_engine::services::{CallOptions, QueryContext};
use tokio::runtime::Runtime;

/// The generator writes about 1.46 JSON events per `trace_events` row
/// (flows, counters and metadata are not rows); a little more is asked so
/// each corpus has at least its label's rows.
const JSON_EVENTS_PER_ROW: f64 = 1.5;
const PAGE: usize = 100;

/// One imported corpus.
struct Corpus {
    _dir: tempfile::TempDir,
    ws: Workspace,
    run_id: String,
    artifact_id: String,
    span: (i64, i64),
}

fn env_on(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v == "1")
}

/// (label, trace_events rows) to bench.
fn sizes() -> Vec<(&'static str, u64)> {
    if !full_run() {
        return vec![("100k", 100_000)];
    }
    let mut sizes = vec![("100k", 100_000), ("1m", 1_000_000)];
    if env_on("FLAMEOX_BENCH_10M") {
        sizes.push(("10m", 10_000_000));
    }
    sizes
}

fn import_corpus(rows: u64) -> Corpus {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = dir.path().join("generated.pt.trace.json");
    let file = std::fs::File::create(&trace).expect("create trace");
    let spec = KinetoSpec {
        seed: 11,
        events: (rows as f64 * JSON_EVENTS_PER_ROW) as u64,
        streams: 4,
        ops_per_step: 0,
    };
    write_kineto(&spec, BufWriter::new(file)).expect("generate");
    let (ws, _) = Workspace::init(dir.path()).expect("init");
    let imported = import_artifact(
        &ws,
        &ImportRequest {
            path: trace.clone(),
            ..Default::default()
        },
        &Quiet,
    )
    .expect("import");
    std::fs::remove_file(&trace).expect("remove trace");
    let rows_imported = imported.rows.get("trace_events").copied().unwrap_or(0);
    assert!(
        rows_imported >= rows,
        "{rows_imported} trace_events rows, wanted {rows}"
    );
    Corpus {
        _dir: dir,
        ws,
        run_id: imported.run_id,
        artifact_id: imported.artifact_id,
        span: imported.time_span_ns.expect("time span"),
    }
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// A window request over the whole trace positioned at page `depth` of
/// `PAGE` rows: earlier pages are walked with the cursor (1,000 rows a
/// page; the cursor does not depend on the page size), untimed.
fn window_at_depth(
    rt: &Runtime,
    qc: &QueryContext<'_>,
    corpus: &Corpus,
    depth: u64,
) -> WindowRequest {
    let mut request = WindowRequest {
        target: corpus.artifact_id.clone(),
        start_ns: corpus.span.0,
        end_ns: corpus.span.1 + 1,
        ..Default::default()
    };
    let mut before = (depth - 1) * PAGE as u64;
    while before > 0 {
        let step = before.min(1000);
        request.limit = Some(step as usize);
        let page = rt.block_on(trace_window(qc, &request)).expect("walk");
        request.cursor = Some(page.next_cursor.expect("a next page"));
        before -= step;
    }
    request.limit = Some(PAGE);
    request
}

/// Whether criterion runs in bench mode (`--bench`); in test mode (the test
/// suite runs each benchmark once) only the 100 K corpus is used.
fn full_run() -> bool {
    std::env::args().any(|a| a == "--bench") && !env_on("FLAMEOX_BENCH_SMALL")
}

/// A corpus imported on first use, so a benchmark filtered out (or a
/// `--list`) imports nothing.
struct LazyCorpus {
    rows: u64,
    corpus: OnceCell<Corpus>,
    cache: SessionCache,
}

impl LazyCorpus {
    fn get(&self) -> &Corpus {
        self.corpus.get_or_init(|| import_corpus(self.rows))
    }

    /// A context whose session cache outlives the calls (warm).
    fn warm(&self) -> QueryContext<'_> {
        QueryContext {
            ws: &self.get().ws,
            cache: Some(&self.cache),
            options: CallOptions::default(),
        }
    }
}

fn bench_corpus(group: &mut BenchmarkGroup<'_, WallTime>, rt: &Runtime, lazy: &LazyCorpus) {
    let hotspots = |c: &Corpus| HotspotsRequest {
        target: c.run_id.clone(),
        limit: Some(PAGE),
        ..Default::default()
    };
    group.bench_function("hotspots_top100_fresh_session", |b| {
        let corpus = lazy.get();
        let fresh = QueryContext::new(&corpus.ws);
        let request = hotspots(corpus);
        b.iter(|| {
            black_box(
                rt.block_on(analyze_hotspots(&fresh, &request))
                    .expect("hotspots"),
            )
        })
    });
    group.bench_function("hotspots_top100_warm", |b| {
        let (warm, request) = (lazy.warm(), hotspots(lazy.get()));
        b.iter(|| {
            black_box(
                rt.block_on(analyze_hotspots(&warm, &request))
                    .expect("hotspots"),
            )
        })
    });
    let callers = OnceCell::new();
    group.bench_function("callers_of_a_hot_frame_warm", |b| {
        let warm = lazy.warm();
        let request = callers.get_or_init(|| {
            let corpus = lazy.get();
            let top = rt
                .block_on(analyze_hotspots(&warm, &hotspots(corpus)))
                .expect("hotspots");
            // The heaviest operator (kernels are roots on their stream's track).
            let frame = top
                .rows
                .iter()
                .find(|r| r.category.as_deref() == Some("cpu_op"))
                .expect("a hot operator")
                .frame
                .clone();
            FrameRequest {
                target: corpus.run_id.clone(),
                frame,
                limit: Some(PAGE),
                ..FrameRequest::default()
            }
        });
        b.iter(|| {
            black_box(
                rt.block_on(frame_neighbors(&warm, request, Direction::Callers))
                    .expect("callers"),
            )
        })
    });
    let deepest = if full_run() { 10_000 } else { 100 };
    for depth in [1u64, 100, 10_000] {
        if depth > deepest || depth * PAGE as u64 > lazy.rows {
            continue;
        }
        let positioned = OnceCell::new();
        group.bench_function(format!("trace_window_page_depth_{depth}_warm"), |b| {
            let warm = lazy.warm();
            let request = positioned.get_or_init(|| window_at_depth(rt, &warm, lazy.get(), depth));
            b.iter(|| black_box(rt.block_on(trace_window(&warm, request)).expect("window")))
        });
    }
    group.bench_function("accelerator_launches_warm", |b| {
        let warm = lazy.warm();
        let request = AcceleratorRequest {
            target: lazy.get().run_id.clone(),
            ..Default::default()
        };
        b.iter(|| {
            black_box(
                rt.block_on(accelerator_launches(&warm, &request))
                    .expect("launches"),
            )
        })
    });
    group.bench_function("pytorch_warm", |b| {
        let warm = lazy.warm();
        let request = PytorchRequest {
            target: lazy.get().run_id.clone(),
            limit: Some(PAGE),
        };
        b.iter(|| black_box(rt.block_on(pytorch(&warm, &request)).expect("pytorch")))
    });
}

fn queries(c: &mut Criterion) {
    let rt = runtime();
    for (label, rows) in sizes() {
        let lazy = LazyCorpus {
            rows,
            corpus: OnceCell::new(),
            cache: SessionCache::default(),
        };
        let mut group = c.benchmark_group(format!("queries_{label}_rows"));
        group.sample_size(10);
        group.warm_up_time(Duration::from_millis(500));
        bench_corpus(&mut group, &rt, &lazy);
        group.finish();
    }
}

criterion_group!(benches, queries);
criterion_main!(benches);
