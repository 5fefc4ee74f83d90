//! Agent sessions through the stdio server, one per question class, on
//! corpus traces: an agent that knows only the instructions imports the
//! trace, calls `summarize_target`, and follows the `next` calls it offers.
//! Each session must reach its answer in at most 5 calls and 20 KB of
//! results, the first answer's headline must be the right one, and its
//! figures equal an oracle computed here over the raw file.

use std::path::Path;

use crate::support::mcp::Session;
use serde_json::{Value, json};

/// Calls an agent may spend on one question.
const MAX_CALLS: usize = 5;
/// Bytes of results an agent may read for one question.
const MAX_BYTES: usize = 20 * 1024;

/// A session on one corpus trace, copied into a fresh project.
struct Agent {
    s: Session,
    _project: tempfile::TempDir,
    run: String,
}

impl Agent {
    async fn start(corpus_path: &str) -> Agent {
        let project = tempfile::tempdir().expect("project");
        let root = project.path().canonicalize().expect("canonical project");
        let name = Path::new(corpus_path)
            .file_name()
            .and_then(|n| n.to_str())
            .expect("file name")
            .to_owned();
        std::fs::copy(flameox_tests::corpus().join(corpus_path), root.join(&name))
            .expect("copy corpus trace");
        let mut s = Session::start(&root, &["--init"]).await;
        let imported = s.ok("import_artifact", json!({ "path": name })).await;
        let run = imported["run_id"].as_str().expect("run id").to_owned();
        Agent {
            s,
            _project: project,
            run,
        }
    }

    /// A session on a generated multi-rank job (one Kineto file per rank),
    /// imported as one run.
    async fn start_job(spec: &flameox_benches::nccl_job::NcclJobSpec) -> Agent {
        let project = tempfile::tempdir().expect("project");
        let root = project.path().canonicalize().expect("canonical project");
        flameox_benches::nccl_job::write_nccl_job(spec, &root.join("job")).expect("job");
        let mut s = Session::start(&root, &["--init"]).await;
        let imported = s.ok("import_artifact", json!({ "path": "job" })).await;
        let run = imported["run_id"].as_str().expect("run id").to_owned();
        Agent {
            s,
            _project: project,
            run,
        }
    }

    /// The orientation call every session starts with.
    async fn summary(&mut self) -> Value {
        self.s
            .ok("summarize_target", json!({ "target": self.run }))
            .await
    }

    /// Follows the summary's `next` call for `operation`, as offered.
    async fn follow(&mut self, summary: &Value, operation: &str) -> Value {
        let call = summary["next"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["operation"] == operation)
            .unwrap_or_else(|| panic!("the summary offers no {operation}: {summary}"));
        self.s.ok(operation, call["arguments"].clone()).await
    }

    /// Ends the session: the calls made and the bytes of results read.
    async fn finish(self, question: &str) -> (usize, usize) {
        let (_, _, transcript) = self.s.close().await;
        let bytes: usize = transcript.iter().map(String::len).sum();
        let sizes: Vec<usize> = transcript.iter().map(String::len).collect();
        eprintln!(
            "{question}: {} calls, {bytes} bytes ({sizes:?})",
            transcript.len()
        );
        assert!(
            transcript.len() <= MAX_CALLS,
            "{question}: {} calls",
            transcript.len()
        );
        assert!(bytes <= MAX_BYTES, "{question}: {bytes} bytes of results");
        (transcript.len(), bytes)
    }
}

/// "What dominates the renderer main thread of this page load, and what
/// called it?"
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
async fn browser_main_thread_and_its_callers() {
    let mut a = Agent::start("chrome_json/chromium_headless_page_devtools.json").await;
    let summary = a.summary().await;
    let top = &summary["hot_threads"][0];
    assert_eq!(top["thread"], "CrRendererMain", "{summary}");
    // The shared name is said, so the agent knows to scope by tid.
    assert!(
        summary["shared_thread_names"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|n| n.as_str().is_some_and(|n| n.starts_with("CrRendererMain:"))),
        "{summary}"
    );
    // The page's renderer, not the omnibox popup's (both CrRendererMain),
    // and the headline names the page.
    assert_eq!(
        summary["page"]["url"], "file:///tmp/chrome/page.html",
        "{summary}"
    );
    assert_eq!(top["tid"], summary["page"]["tid"], "{summary}");
    // Its busy time is the union of that thread's slices in the raw file
    // (overlapping devtools.timeline slices counted once), of the trace.
    let pid = summary["page"]["pid"].as_i64().expect("page pid");
    let tid = summary["page"]["tid"].as_i64().expect("page tid");
    let oracle = chrome_thread_busy_ns(
        &flameox_tests::corpus_json("chrome_json/chromium_headless_page_devtools.json"),
        pid,
        tid,
    );
    let listed = summary["threads"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["tid"].as_i64() == Some(tid)))
        .expect("the page's main thread is listed");
    assert_eq!(listed["busy_ns"].as_i64(), Some(oracle), "{listed}");
    let trace = summary["duration_ns"].as_i64().expect("trace duration");
    let pct = (oracle as f64 * 10_000.0 / trace as f64).round() / 100.0;
    assert_eq!(listed["busy_pct_of_trace"].as_f64(), Some(pct), "{listed}");
    let headline = summary["headline"].as_str().expect("headline");
    assert!(
        headline.contains("file:///tmp/chrome/page.html"),
        "{headline}"
    );
    // The drill-downs start from the heaviest meaningful frame: never a
    // task wrapper such as RunTask.
    let frame = top["frames"]
        .as_array()
        .expect("frames")
        .iter()
        .find(|f| f["role"].is_null())
        .and_then(|f| f["function"].as_str())
        .expect("a meaningful frame");
    assert_ne!(frame, "RunTask");
    let callers = a.follow(&summary, "get_frame_callers").await;
    assert_eq!(callers["frame"]["function"], frame, "{callers}");
    // Scoped to the one busiest renderer main thread, and saying so.
    let threads = callers["threads"].as_array().expect("scoped threads");
    assert_eq!(threads.len(), 1, "{callers}");
    let instances = a.follow(&summary, "get_frame_instances").await;
    assert!(
        instances["returned"].as_u64().unwrap_or(0) > 0,
        "{instances}"
    );
    a.finish("browser main thread").await;
}

/// "Is the GPU well used in this PyTorch step; where is it idle and why?"
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
async fn gpu_idle_in_a_pytorch_step_and_why() {
    let mut a = Agent::start("kineto/tbplugin_resnet50_v100_worker0.pt.trace.json.gz").await;
    let summary = a.summary().await;
    let gpu = &summary["gpu"];
    assert!(gpu["gaps"].as_u64().unwrap_or(0) > 0, "{summary}");
    assert!(summary["pytorch_steps"]["steps"].as_u64().unwrap_or(0) > 0);
    // The longest gaps wait on the data loader of the launching thread:
    // the host was late (starved), and the cause names the loader.
    let longest = &gpu["longest"][0];
    assert_eq!(longest["class"], "starved", "{longest}");
    assert!(
        longest["cause"]
            .as_str()
            .is_some_and(|t| t.contains("DataLoader")),
        "{longest}"
    );
    // The headline leads with the device's busy share over the steps.
    let headline = summary["headline"].as_str().expect("headline");
    assert!(headline.contains("GPU 0 busy"), "{headline}");
    assert!(headline.contains("profiler steps"), "{headline}");
    // The launching thread, by name (its tid is in it) and call.
    assert!(
        longest["launched_by"]
            .as_str()
            .is_some_and(|l| l.contains("thread 25738") && l.contains(" via ")),
        "{longest}"
    );
    let gaps = a.follow(&summary, "analyze_gpu_gaps").await;
    for gap in gaps["gaps"].as_array().expect("gaps") {
        assert_eq!(gap["host_scope"], "launching_thread", "{gap}");
    }
    a.finish("GPU idle in a PyTorch step").await;
}

/// "Where does this sampled CPU profile spend its time, and who calls it?"
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
async fn sampled_cpu_profile_hotspot_and_callers() {
    let mut a = Agent::start("stacks/pyspy_workload.speedscope.json").await;
    let summary = a.summary().await;
    let top = &summary["hot_threads"][0];
    assert!(
        top["frames"].as_array().is_some_and(|f| !f.is_empty()),
        "{summary}"
    );
    assert_ne!(
        top["unit"], "ns",
        "a sampled profile counts samples: {summary}"
    );
    // Functions, not source lines: no function is listed twice.
    let functions: Vec<&str> = top["frames"]
        .as_array()
        .expect("frames")
        .iter()
        .filter_map(|f| f["function"].as_str())
        .collect();
    let mut distinct = functions.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), functions.len(), "{functions:?}");
    // The hot path against the raw file: each work step holds the samples
    // of the thread whose stack passes through the path so far, in order.
    let doc = flameox_tests::corpus_json("stacks/pyspy_workload.speedscope.json");
    let names: Vec<&str> = doc["shared"]["frames"]
        .as_array()
        .expect("frames")
        .iter()
        .map(|f| f["name"].as_str().unwrap_or(""))
        .collect();
    let tid = top["tid"].as_i64().expect("tid");
    let profile = doc["profiles"]
        .as_array()
        .and_then(|p| {
            p.iter().find(|p| {
                p["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with(&format!("Thread {tid} ")))
            })
        })
        .expect("the thread's profile");
    let stacks: Vec<Vec<&str>> = profile["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .map(|s| {
            s.as_array()
                .expect("stack")
                .iter()
                .map(|i| names[i.as_u64().expect("frame index") as usize])
                .collect()
        })
        .collect();
    let path = top["hot_path"].as_array().expect("hot path");
    let mut prefix: Vec<&str> = Vec::new();
    let mut headline_step = None;
    for step in path {
        let function = step["function"].as_str().expect("function");
        prefix.push(function);
        if !step["role"].is_null() {
            continue;
        }
        let holding = stacks
            .iter()
            .filter(|stack| passes_through(stack, &prefix))
            .count() as i64;
        assert_eq!(step["inclusive"].as_i64(), Some(holding), "{step}");
        let pct = (holding as f64 * 10_000.0 / stacks.len() as f64).round() / 100.0;
        assert_eq!(
            step["inclusive_pct_of_thread"].as_f64(),
            Some(pct),
            "{step}"
        );
        headline_step.get_or_insert((function, pct));
    }
    let (function, pct) = headline_step.expect("a work step on the hot path");
    let headline = summary["headline"].as_str().expect("headline");
    assert!(
        headline.contains(&format!(
            "hot path (inclusive % of its CPU samples): {function} {pct:.0} %"
        )),
        "{headline}"
    );
    let callers = a.follow(&summary, "get_frame_callers").await;
    assert!(callers["total"].as_u64().unwrap_or(0) > 0, "{callers}");
    a.finish("sampled CPU profile").await;
}

/// "Where is this Nsight-profiled GPU idle, and what was the host doing?"
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
async fn nsight_export_gpu_idle() {
    let mut a = Agent::start("nsys/pipit_cloverleaf_a100_nsys2024.5.sqlite").await;
    let summary = a.summary().await;
    assert!(
        summary["gpu"]["gaps"].as_u64().unwrap_or(0) > 0,
        "{summary}"
    );
    let gaps = a.follow(&summary, "analyze_gpu_gaps").await;
    assert!(gaps["has_device_activity"] == true, "{gaps}");
    a.finish("Nsight GPU idle").await;
}

/// Whether `stack` (root first) holds `path`'s functions in order.
fn passes_through(stack: &[&str], path: &[&str]) -> bool {
    let mut want = path.iter().peekable();
    for name in stack {
        if want.peek() == Some(&name) {
            want.next();
        }
    }
    want.peek().is_none()
}

/// The union of one thread's slices (`X`, and `B`/`E` pairs) in a Chrome
/// JSON trace, in ns.
fn chrome_thread_busy_ns(doc: &Value, pid: i64, tid: i64) -> i64 {
    use flameox_tests::micros_to_ns;
    let mut spans = Vec::new();
    let mut open = Vec::new();
    let events = doc["traceEvents"].as_array().expect("events");
    for e in events {
        if e["pid"].as_i64() != Some(pid) || e["tid"].as_i64() != Some(tid) {
            continue;
        }
        match e["ph"].as_str() {
            Some("X") if !e["dur"].is_null() => {
                let ts = micros_to_ns(&e["ts"]);
                spans.push((ts, ts + micros_to_ns(&e["dur"])));
            }
            Some("B") => open.push(micros_to_ns(&e["ts"])),
            Some("E") => {
                if let Some(start) = open.pop() {
                    spans.push((start, micros_to_ns(&e["ts"])));
                }
            }
            _ => {}
        }
    }
    union_in(spans, i64::MIN, i64::MAX)
}

/// The union length of `[start, end)` intervals clipped to `[from, to)`.
fn union_in(mut spans: Vec<(i64, i64)>, from: i64, to: i64) -> i64 {
    spans.sort_unstable();
    let (mut total, mut reach) = (0, i64::MIN);
    for (s, e) in spans {
        let (s, e) = (s.max(from).max(reach), e.min(to));
        if e > s {
            total += e - s;
        }
        reach = reach.max(e);
    }
    total
}

/// "How busy is the GPU in this PyTorch step, and why is it idle?" — a
/// single-GPU trace whose step annotation on the stream spans its first to
/// last kernel, and whose helper thread waits the whole time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
async fn a_pytorch_step_headline_is_the_device_not_an_annotation_or_a_wait() {
    let path = "kineto/tracelens_h100_bert_small.json.gz";
    // Oracle: the union of kernels, copies and sets inside the step.
    let doc = flameox_tests::corpus_json(path);
    let events = doc["traceEvents"].as_array().expect("events");
    let step = events
        .iter()
        .find(|e| {
            e["ph"] == "X"
                && e["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("ProfilerStep#"))
        })
        .expect("a step");
    let from = flameox_tests::micros_to_ns(&step["ts"]);
    let to = from + flameox_tests::micros_to_ns(&step["dur"]);
    let device: Vec<(i64, i64)> = events
        .iter()
        .filter(|e| {
            e["ph"] == "X"
                && ["kernel", "gpu_memcpy", "gpu_memset"].contains(&e["cat"].as_str().unwrap_or(""))
        })
        .map(|e| {
            let s = flameox_tests::micros_to_ns(&e["ts"]);
            (s, s + flameox_tests::micros_to_ns(&e["dur"]))
        })
        .collect();
    let busy = union_in(device, from, to);

    let mut a = Agent::start(path).await;
    let summary = a.summary().await;
    let d = &summary["gpu"]["devices"][0];
    assert_eq!(d["busy_ns"].as_i64(), Some(busy), "{summary}");
    assert_eq!(d["span"]["name"], "steps", "{d}");
    let headline = summary["headline"].as_str().expect("headline");
    assert!(headline.contains("GPU 0 busy 309 µs"), "{headline}");
    // The stream's own busy time is its kernels', not the annotation's.
    let stream = summary["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .find(|t| {
            t["label"]
                .as_str()
                .is_some_and(|l| l.starts_with("GPU 0 stream"))
        })
        .expect("the stream");
    assert!(stream["busy_pct_of_trace"].as_f64() < Some(5.0), "{stream}");
    // The waiting helper thread is no hot thread and no headline.
    assert!(!headline.contains("threading.py"), "{headline}");
    for t in summary["hot_threads"].as_array().expect("hot") {
        let first = t["frames"]
            .as_array()
            .expect("frames")
            .iter()
            .find(|f| f["role"].is_null())
            .expect("a meaningful frame");
        assert!(
            !first["function"].as_str().unwrap_or("").contains("wait"),
            "{t}"
        );
    }
    let gaps = a.follow(&summary, "analyze_gpu_gaps").await;
    assert_eq!(gaps["gaps"][0]["class"], "starved", "{gaps}");
    a.finish("GPU busy in a PyTorch step").await;
}

/// "Is the GPU starved by the host on this NCCL rank?" — no: most of its
/// idle time was work already queued (stalled), not a late host; per-stream
/// gaps are not summed into device idle time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
async fn a_multi_stream_rank_idle_is_stalled_not_starved() {
    let mut a = Agent::start("kineto/hta_cudagraph_nccl_a100_rank0of16.json.gz").await;
    let summary = a.summary().await;
    let d = &summary["gpu"]["devices"][0];
    let span = d["span"]["dur_ns"].as_i64().expect("span");
    assert!(d["idle_ns"].as_i64() <= Some(span), "{d}");
    let idle = &d["idle"];
    assert!(
        idle["stalled_ns"].as_i64() > idle["starved_ns"].as_i64(),
        "{d}"
    );
    let longest = &summary["gpu"]["longest"][0];
    assert_eq!(longest["class"], "stalled", "{longest}");
    assert!(
        longest["queued_for_ns"].as_i64() > longest["duration_ns"].as_i64(),
        "{longest}"
    );
    let headline = summary["headline"].as_str().expect("headline");
    assert!(headline.contains("stalled"), "{headline}");
    let gaps = a.follow(&summary, "analyze_gpu_gaps").await;
    for g in gaps["gaps"].as_array().expect("gaps") {
        if g["class"] == "stalled" {
            assert!(g["waited_on"].is_string(), "{g}");
        }
    }
    a.finish("stalled NCCL rank").await;
}

/// "Why is the GPU idle in this MPI + CUDA export?" — the host was late,
/// and the launching thread was in MPI calls (NVTX ranges) and in no
/// traced call, with CPU samples there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
async fn an_mpi_export_gap_names_the_mpi_calls() {
    let path = "nsys/pipit_saxpy_mpi_a100_nsys2022.2.sqlite";
    // Oracle: the device's busy time by SQL over the export.
    let db = rusqlite::Connection::open_with_flags(
        flameox_tests::corpus().join(path),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("open export");
    let mut spans: Vec<(i64, i64)> = Vec::new();
    for table in ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY"] {
        let mut q = db
            .prepare(&format!("SELECT start, end FROM {table}"))
            .expect("query");
        let rows = q
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
            .expect("rows");
        spans.extend(rows.map(|r| r.expect("row")));
    }
    let busy = union_in(spans, i64::MIN, i64::MAX);

    let mut a = Agent::start(path).await;
    let summary = a.summary().await;
    let d = &summary["gpu"]["devices"][0];
    assert_eq!(d["busy_ns"].as_i64(), Some(busy), "{summary}");
    let longest = &summary["gpu"]["longest"][0];
    assert_eq!(longest["class"], "starved", "{longest}");
    let cause = longest["cause"].as_str().expect("cause");
    assert!(cause.contains("MPI_"), "{cause}");
    assert!(cause.contains("no traced call"), "{cause}");
    let gaps = a.follow(&summary, "analyze_gpu_gaps").await;
    let shares: f64 = gaps["gaps"][0]["host"]["time_shares"]
        .as_array()
        .expect("shares")
        .iter()
        .map(|s| s["share"].as_f64().unwrap_or(0.0))
        .sum();
    assert!((shares - 1.0).abs() < 0.005, "{gaps}");
    a.finish("MPI export GPU idle").await;
}

/// "Is another rank holding us up?" on an 8-rank job where rank 5's
/// kernels run 1.6× longer: the summary's headline names rank 5 and its
/// cause, and the call it offers shows every rank's wait (64 ranks:
/// `gpu_diagnosis::a_rank_slowed_by_*`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_rank_holding_us_up() {
    use flameox_benches::nccl_job::{NcclJobSpec, nccl_job_truth};
    let spec = NcclJobSpec {
        ranks: 8,
        steps: 4,
        slow_rank: Some(5),
        ..NcclJobSpec::default()
    };
    let truth = nccl_job_truth(&spec);
    let mut a = Agent::start_job(&spec).await;
    let summary = a.summary().await;
    let headline = summary["headline"].as_str().expect("headline");
    assert!(
        headline.contains("diagnosed straggler_rank: rank 5 arrived last"),
        "{headline}"
    );
    let ranks = a.follow(&summary, "analyze_gpu_diagnosis").await;
    let holder = &ranks["ranks"]["holders"][0];
    assert_eq!(holder["rank"], 5, "{ranks}");
    assert_eq!(holder["cause"], "own GPU work");
    // Oracle: the generator's model says how long rank 0 waited.
    let waited: u64 = (0..4).map(|k| truth.get(0, k).expect("step").wait_ns).sum();
    assert!(
        waited > 50_000_000,
        "rank 0 waited {waited} ns for rank 5 in the model"
    );
    a.finish("another rank holding us up").await;
}

/// "Why is this kernel slow?" on the MPI saxpy export: its 2-block grid on
/// a 108-SM A100, found by the geometry of the kernel named (whose
/// theoretical occupancy is full: the SMs it has are not the problem).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
async fn why_is_this_kernel_slow() {
    let mut a = Agent::start("nsys/pipit_saxpy_mpi_a100_nsys2022.2.sqlite").await;
    let summary = a.summary().await;
    assert!(
        summary["gpu"]["diagnoses"]
            .as_array()
            .is_some_and(|d| !d.is_empty()),
        "{summary}"
    );
    let run = a.run.clone();
    let geometry =
        a.s.ok(
            "analyze_gpu_diagnosis",
            json!({ "target": run, "section": "geometry", "kernel": "saxpy" }),
        )
        .await;
    let device = &geometry["geometry"][0];
    let shape = &device["shapes"][0];
    assert_eq!(shape["blocks"], 2, "{geometry}");
    assert_eq!(device["sm_count"], 108);
    assert_eq!(shape["underfills_device"], true);
    // Each of the 2 SMs it runs on is full (4 blocks of 16 warps would
    // fit): the cause is the grid, not the occupancy.
    assert_eq!(shape["theoretical_occupancy_pct"], 100.0, "{geometry}");
    a.finish("why is this kernel slow").await;
}
