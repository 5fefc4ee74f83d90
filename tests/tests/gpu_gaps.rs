//! `analyze gpu-gaps` through the real binary against models computed here
//! from the Kineto JSON: device gaps (holes in the union of every stream's
//! kernels, memcpy and memset), each classified by when the next
//! activity's launch call started (after the gap began: starved; before:
//! stalled; none recorded: unlinked), the activity on each side, host
//! coverage and per-slice overlap during each gap (until the launch for a
//! starved gap), every device's busy and idle time, and the busy fraction
//! of each chunk of the device span. Small hand-written traces pin the
//! edge cases: overlapping kernels, a zero-duration kernel, a gap with no
//! host activity, a stream idle while another works.

use std::collections::BTreeMap;

use flameox_tests::{
    NOT_HOST_CATEGORIES as NOT_HOST, Project, corpus, corpus_json, idle_parts_ns, micros_to_ns,
};
use serde_json::{Value, json};

const DEVICE_CATS: [&str; 3] = ["kernel", "gpu_memcpy", "gpu_memset"];

#[derive(Debug, Clone)]
struct Span {
    start: i64,
    end: i64,
    name: String,
    tid: Option<i64>,
    correlation: Option<i64>,
}

pub(crate) struct Trace {
    /// (device, stream) → activity in array order.
    device: BTreeMap<(i64, i64), Vec<Span>>,
    host: Vec<Span>,
    /// Correlation id → the earliest start of a host call carrying it.
    launches: BTreeMap<i64, i64>,
}

fn cat(e: &Value) -> String {
    e["cat"].as_str().unwrap_or("").to_lowercase()
}

pub(crate) fn trace(doc: &Value) -> Trace {
    let mut device: BTreeMap<(i64, i64), Vec<Span>> = BTreeMap::new();
    let mut host = Vec::new();
    let mut launches: BTreeMap<i64, i64> = BTreeMap::new();
    for e in doc["traceEvents"].as_array().expect("events") {
        if e["ph"] != "X" {
            continue;
        }
        let start = micros_to_ns(&e["ts"]);
        let span = Span {
            start,
            end: start + micros_to_ns(&e["dur"]),
            name: e["name"].as_str().unwrap_or("").to_owned(),
            tid: e["tid"].as_i64(),
            correlation: e["args"]["correlation"].as_i64(),
        };
        let c = cat(e);
        if let (Some(corr), true) = (
            span.correlation,
            ["cuda_runtime", "cuda_driver", "runtime"].contains(&c.as_str()),
        ) {
            let at = launches.entry(corr).or_insert(start);
            *at = (*at).min(start);
        }
        if DEVICE_CATS.contains(&c.as_str()) {
            let key = (
                e["args"]["device"].as_i64().expect("device"),
                e["args"]["stream"].as_i64().expect("stream"),
            );
            device.entry(key).or_default().push(span);
        } else if !NOT_HOST.contains(&c.as_str())
            && e["args"]["stream"].is_null()
            && span.end > span.start
        {
            host.push(span);
        }
    }
    Trace {
        device,
        host,
        launches,
    }
}

/// A device gap: where, the activity on each side, the next one's stream
/// and its launch's start (if recorded).
#[derive(Debug, Clone)]
pub(crate) struct ModelGap {
    pub(crate) device: i64,
    pub(crate) start: i64,
    pub(crate) end: i64,
    before: Vec<String>,
    after: String,
    next_stream: i64,
    launch: Option<i64>,
}

impl ModelGap {
    pub(crate) fn class(&self) -> &'static str {
        match self.launch {
            None => "unlinked",
            Some(l) if l > self.start => "starved",
            Some(_) => "stalled",
        }
    }
}

/// Device gaps: the holes of the union of every stream's activity of a
/// device, longest first.
pub(crate) fn gaps(t: &Trace, min_gap: i64) -> Vec<ModelGap> {
    let mut per_device: BTreeMap<i64, Vec<(i64, &Span)>> = BTreeMap::new();
    for (&(device, stream), spans) in &t.device {
        per_device
            .entry(device)
            .or_default()
            .extend(spans.iter().map(|s| (stream, s)));
    }
    let mut out = Vec::new();
    for (device, spans) in per_device {
        let mut order: Vec<&(i64, &Span)> = spans.iter().collect();
        order.sort_by_key(|(_, s)| s.start);
        let mut running: Option<i64> = None;
        for &&(stream, s) in &order {
            if let Some(end) = running
                && s.start > end
                && s.start - end >= min_gap
            {
                let before = spans
                    .iter()
                    .filter(|(_, b)| b.end == end)
                    .map(|(_, b)| b.name.clone())
                    .collect();
                out.push(ModelGap {
                    device,
                    start: end,
                    end: s.start,
                    before,
                    after: s.name.clone(),
                    next_stream: stream,
                    launch: s.correlation.and_then(|c| t.launches.get(&c).copied()),
                });
            }
            running = Some(running.map_or(s.end, |r| r.max(s.end)));
        }
    }
    out.sort_by_key(|g| std::cmp::Reverse(g.end - g.start));
    out
}

/// Length of the union of `spans` clipped to [from, to).
fn union(spans: impl Iterator<Item = (i64, i64)>, from: i64, to: i64) -> i64 {
    let mut clipped: Vec<(i64, i64)> = spans
        .map(|(s, e)| (s.max(from), e.min(to)))
        .filter(|(s, e)| e > s)
        .collect();
    clipped.sort();
    let (mut total, mut reach) = (0, i64::MIN);
    for (s, e) in clipped {
        let s = s.max(reach);
        if e > s {
            total += e - s;
        }
        reach = reach.max(e);
    }
    total
}

/// Per (name, tid): (clipped overlap, slices).
type PerSlice = BTreeMap<(String, Option<i64>), (i64, i64)>;

/// Host coverage share and the per-slice overlaps.
fn host_model(t: &Trace, from: i64, to: i64) -> (f64, PerSlice) {
    let covered = union(t.host.iter().map(|h| (h.start, h.end)), from, to);
    let mut per = BTreeMap::new();
    for h in &t.host {
        if h.start < to && h.end > from {
            let e = per.entry((h.name.clone(), h.tid)).or_insert((0, 0));
            e.0 += h.end.min(to) - h.start.max(from);
            e.1 += 1;
        }
    }
    (covered as f64 / (to - from) as f64, per)
}

fn check_host(t: &Trace, host: &Value, from: i64, to: i64, what: &str) {
    let (share, per) = host_model(t, from, to);
    let got = host["covered_share"].as_f64().expect("share");
    assert!((got - share).abs() < 1e-9, "{what}: share {got} vs {share}");
    let top = host["top"].as_array().expect("top");
    let mut last_self = i64::MAX;
    for s in top {
        let key = (
            s["name"].as_str().expect("name").to_owned(),
            s["tid"].as_i64(),
        );
        let (overlap, slices) = per
            .get(&key)
            .copied()
            .unwrap_or_else(|| panic!("{what}: {key:?} not host activity in the window"));
        assert_eq!(s["overlap_ns"].as_i64(), Some(overlap), "{what}: {key:?}");
        assert_eq!(s["slices"].as_i64(), Some(slices), "{what}: {key:?}");
        let own = s["self_overlap_ns"].as_i64().expect("self");
        assert!(own > 0 && own <= overlap, "{what}: {key:?} self {own}");
        assert!(own <= last_self, "{what}: ranked by self time");
        last_self = own;
    }
}

/// Busy ns per chunk of each device's span, cut as the analysis promises.
fn chunks(t: &Trace, n: i64) -> BTreeMap<i64, Vec<(i64, i64, i64)>> {
    let mut per_device: BTreeMap<i64, Vec<(i64, i64)>> = BTreeMap::new();
    for (&(device, _), spans) in &t.device {
        per_device
            .entry(device)
            .or_default()
            .extend(spans.iter().map(|s| (s.start, s.end)));
    }
    let mut out = BTreeMap::new();
    for (device, spans) in per_device {
        let first = spans.iter().map(|s| s.0).min().expect("spans");
        let last = spans.iter().map(|s| s.1).max().expect("spans");
        let len = last - first;
        let n = n.min(len);
        let cut: Vec<(i64, i64, i64)> = (0..n)
            .map(|i| {
                let (a, b) = (first + i * len / n, first + (i + 1) * len / n);
                (a, b, union(spans.iter().copied(), a, b))
            })
            .collect();
        out.insert(device, cut);
    }
    out
}

/// The `fields` of each row of `rows`, as arrays.
fn pick(rows: &Value, fields: &[&str]) -> Value {
    let rows = rows.as_array().expect("rows");
    Value::Array(
        rows.iter()
            .map(|r| Value::Array(fields.iter().map(|f| r[*f].clone()).collect()))
            .collect(),
    )
}

/// `analyze gpu-gaps RUN --min-gap-us 100 EXTRA… --json`.
fn gpu_gaps(project: &Project, run: &str, extra: &[&str]) -> Value {
    let mut args = vec!["analyze", "gpu-gaps", run, "--min-gap-us", "100"];
    args.extend_from_slice(extra);
    project.json(&args)
}

fn import(project: &Project, path: &str) -> String {
    let imported = project.json(&["import", path]);
    imported["run_id"].as_str().expect("run").to_owned()
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn gaps_and_low_utilization_match_the_kineto_json() {
    let project = Project::new();
    let path = "kineto/hta_alexnet_a100.pt.trace.json.gz";
    let t = trace(&corpus_json(path));
    let run = import(&project, corpus().join(path).to_str().expect("utf-8"));
    let limit = 8;
    let a = gpu_gaps(
        &project,
        &run,
        &[
            "--chunks",
            "20",
            "--below",
            "0.5",
            "--limit",
            &limit.to_string(),
        ],
    );
    assert_eq!(a["evidence"]["status"], "available", "{a}");
    assert_eq!(a["min_gap_ns"], 100_000);

    let model = gaps(&t, 100_000);
    assert!(
        model.len() > limit,
        "the trace has more gaps than the limit"
    );
    assert_eq!(a["gaps_found"].as_u64(), Some(model.len() as u64));
    let total: i64 = model.iter().map(|g| g.end - g.start).sum();
    assert_eq!(a["gaps_total_ns"].as_i64(), Some(total));
    for class in ["starved", "stalled", "unlinked"] {
        let of: Vec<&ModelGap> = model.iter().filter(|g| g.class() == class).collect();
        let got = &a["gaps_by_class"][class];
        assert_eq!(
            got["gaps"].as_u64().unwrap_or(0),
            of.len() as u64,
            "{class}"
        );
        let ns: i64 = of.iter().map(|g| g.end - g.start).sum();
        assert_eq!(got["total_ns"].as_i64().unwrap_or(0), ns, "{class}");
    }
    assert_eq!(a["truncated"], true);
    let reported = a["gaps"].as_array().expect("gaps");
    assert_eq!(reported.len(), limit);
    for (got, want) in reported.iter().zip(&model) {
        let what = format!("gap {}..{}", want.start, want.end);
        assert_eq!(got["device"].as_i64(), Some(want.device), "{what}");
        assert_eq!(
            got["next_stream"].as_i64(),
            Some(want.next_stream),
            "{what}"
        );
        assert_eq!(got["start_ns"].as_i64(), Some(want.start), "{what}");
        assert_eq!(got["end_ns"].as_i64(), Some(want.end), "{what}");
        assert_eq!(
            got["duration_ns"].as_i64(),
            Some(want.end - want.start),
            "{what}"
        );
        assert_eq!(got["class"], want.class(), "{what}");
        // Long templated names are listed as their family (`<…>`).
        let readable = flameox_engine::recipes::kernel_family::readable_name;
        assert_eq!(
            got["next_op"].as_str(),
            Some(readable(&want.after).as_str()),
            "{what}"
        );
        let b = got["prev_op"].as_str().expect("prev_op").to_owned();
        assert!(
            want.before.iter().any(|n| readable(n) == b),
            "{what}: {b} ends at the gap start"
        );
        // A starved gap shows the host until the launch; others the gap.
        let host_end = match (want.class(), want.launch) {
            ("starved", Some(l)) => l.min(want.end),
            _ => want.end,
        };
        check_host(&t, &got["host"], want.start, host_end, &what);
    }
    // The profiler's own span is not host activity.
    assert!(!a.to_string().contains("PyTorch Profiler (0)"));

    // Every device: busy = the union of its activity over the trace span,
    // idle = span − busy, and the idle parts sum to it.
    let devices = a["devices"].as_array().expect("devices");
    for d in devices {
        let device = d["device"].as_i64().expect("device");
        let span = &d["span"];
        assert_eq!(span["name"], "trace", "{d}");
        let (from, to) = (
            span["start_ns"].as_i64().expect("start"),
            span["end_ns"].as_i64().expect("end"),
        );
        let busy = union(
            t.device
                .iter()
                .filter(|((dev, _), _)| *dev == device)
                .flat_map(|(_, spans)| spans.iter().map(|s| (s.start, s.end))),
            from,
            to,
        );
        assert_eq!(d["busy_ns"].as_i64(), Some(busy), "{d}");
        assert_eq!(d["idle_ns"].as_i64(), Some(to - from - busy), "{d}");
        let idle = &d["idle"];
        let parts = idle_parts_ns(idle);
        assert_eq!(parts, to - from - busy, "{d}");
        let in_gaps: i64 = gaps(&t, 1)
            .iter()
            .filter(|g| g.device == device && g.class() == "starved")
            .map(|g| g.end - g.start)
            .sum();
        assert_eq!(idle["starved_ns"].as_i64().unwrap_or(0), in_gaps, "{d}");
    }

    let model = chunks(&t, 20);
    assert_eq!(devices.len(), model.len());
    let mut below: Vec<(f64, i64, i64, i64)> = Vec::new();
    for (device, cut) in &model {
        let d = devices
            .iter()
            .find(|d| d["device"].as_i64() == Some(*device))
            .expect("device");
        assert_eq!(d["chunks"].as_i64(), Some(cut.len() as i64));
        let under: Vec<_> = cut
            .iter()
            .enumerate()
            .filter(|(_, (a, b, busy))| (*busy as f64 / (b - a) as f64) < 0.5)
            .collect();
        assert_eq!(d["chunks_below"].as_i64(), Some(under.len() as i64));
        for (i, (a, b, busy)) in under {
            below.push((*busy as f64 / (b - a) as f64, *device, i as i64, *busy));
        }
    }
    assert_eq!(
        a["low_utilization_found"].as_u64(),
        Some(below.len() as u64)
    );
    below.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2)));
    let reported = a["low_utilization"].as_array().expect("chunks");
    assert_eq!(reported.len(), below.len().min(limit));
    for (got, want) in reported.iter().zip(&below) {
        let what = format!("chunk {}", want.2);
        assert_eq!(got["device"].as_i64(), Some(want.1), "{what}");
        assert_eq!(got["chunk"].as_i64(), Some(want.2), "{what}");
        assert_eq!(got["busy_ns"].as_i64(), Some(want.3), "{what}");
        let fraction = got["busy_fraction"].as_f64().expect("fraction");
        assert!((fraction - want.0).abs() < 1e-12, "{what}");
        let (from, to) = (
            got["start_ns"].as_i64().expect("start"),
            got["end_ns"].as_i64().expect("end"),
        );
        check_host(&t, &got["host"], from, to, &what);
    }
}

/// A Kineto-shaped trace: one host thread, one device stream.
fn small_trace(dir: &std::path::Path) -> std::path::PathBuf {
    let host = |name: &str, cat: &str, ts: i64, dur: i64| json!({"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": {}});
    let kernel = |name: &str, ts: i64, dur: i64| {
        json!({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
               "args": {"device": 0, "stream": 7}})
    };
    let doc = json!({
        "schemaVersion": 1,
        "traceEvents": [
            host("outer", "cpu_op", 0, 1000),
            host("cudaStreamSynchronize", "cuda_runtime", 200, 700),
            kernel("A", 0, 100),
            // Overlaps A: no negative gap.
            kernel("B", 50, 250),
            // Zero duration: an activity of no length, it splits the gap.
            kernel("Z", 400, 0),
            kernel("C", 1000, 100),
            // After the host's last slice: a gap with no host activity.
            kernel("D", 1500, 100),
        ]
    });
    let path = dir.join("small.pt.trace.json");
    std::fs::write(&path, doc.to_string()).expect("write trace");
    path
}

#[test]
fn overlaps_zero_length_kernels_and_idle_hosts_by_hand() {
    let project = Project::new();
    let path = small_trace(project.path());
    let run = import(&project, path.to_str().expect("utf-8"));
    let a = gpu_gaps(&project, &run, &["--chunks", "4"]);
    assert_eq!(a["evidence"]["status"], "available", "{a}");
    let gaps = a["gaps"].as_array().expect("gaps");
    // B ends at 300 µs (A's overlap makes no gap); Z at 400; C 1000–1100;
    // D at 1500. No launch is recorded: every gap is unlinked.
    assert_eq!(
        pick(&a["gaps"], &["duration_ns", "prev_op", "next_op", "class"]),
        json!([
            [600_000, "Z", "C", "unlinked"],
            [400_000, "C", "D", "unlinked"],
            [100_000, "B", "Z", "unlinked"]
        ])
    );
    // 400–1000 µs: outer covers it all, the sync 500 µs of it.
    let host = &gaps[0]["host"];
    assert_eq!(host["covered_share"], 1.0);
    assert_eq!(
        pick(&host["top"], &["name", "self_overlap_ns", "overlap_ns"]),
        json!([
            ["cudaStreamSynchronize", 500_000, 500_000],
            ["outer", 100_000, 600_000]
        ])
    );
    // Over the trace (0–1600 µs): busy 300 + 100 + 100, idle 1100 µs, of
    // which 1100 in gaps with no recorded launch.
    let d = &a["devices"][0];
    assert_eq!(d["busy_ns"], 500_000, "{d}");
    assert_eq!(d["idle_ns"], 1_100_000, "{d}");
    assert_eq!(d["idle"]["unlinked_ns"], 1_100_000, "{d}");
    // 1100–1500 µs: nothing on the host.
    assert_eq!(gaps[1]["host"]["covered_share"], 0.0);
    assert_eq!(gaps[1]["host"]["top"], json!([]));

    // Span 0–1600 µs in 4 chunks of 400 µs: busy 300, 0 (Z has no length), 100, 100.
    assert_eq!(
        pick(&a["low_utilization"], &["chunk", "busy_ns"]),
        json!([[1, 0], [2, 100_000], [3, 100_000]])
    );
    assert_eq!(a["low_utilization_found"], 3);

    // Thresholds are checked.
    project.json_err(
        &["analyze", "gpu-gaps", &run, "--below", "1.5"],
        "INVALID_ARGUMENTS",
        2,
    );
    project.json_err(
        &["analyze", "gpu-gaps", &run, "--chunks", "0"],
        "INVALID_ARGUMENTS",
        2,
    );
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn no_device_activity_is_partial_with_the_next_call() {
    let project = Project::new();
    let folded = corpus().join("stacks/pyspy_workload.folded.txt");
    let run = import(&project, folded.to_str().expect("utf-8"));
    let a = project.json(&["analyze", "gpu-gaps", &run]);
    assert_eq!(a["evidence"]["status"], "partial");
    assert_eq!(a["evidence"]["reason"], "accelerator_tracks_missing");
    assert_eq!(a["evidence"]["next_tool"], "get_run");
    assert_eq!(a["gaps"], json!([]));
}

/// A Kineto-shaped trace where a helper thread waits through every gap and
/// the main thread launches each kernel after preparing its input.
fn helper_thread_trace(dir: &std::path::Path) -> std::path::PathBuf {
    let slice = |tid: i64, name: &str, cat: &str, ts: i64, dur: i64, corr: Option<i64>| {
        let mut args = json!({});
        if let Some(c) = corr {
            args["correlation"] = json!(c);
        }
        json!({"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": args})
    };
    let kernel = |name: &str, ts: i64, dur: i64, corr: i64| {
        json!({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
               "args": {"device": 0, "stream": 7, "correlation": corr}})
    };
    let mut events = vec![
        // The helper waits from start to end: it overlaps every gap.
        slice(
            2,
            "threading.py(359): wait",
            "python_function",
            0,
            10_000,
            None,
        ),
    ];
    for i in 0..4 {
        let start = i * 2_000;
        // Main thread: 1.5 ms of data preparation, then the launch.
        events.push(slice(
            1,
            "prepare_batch",
            "cpu_op",
            start + 100,
            1_500,
            None,
        ));
        events.push(slice(
            1,
            "cudaLaunchKernel",
            "cuda_runtime",
            start + 1_650,
            20,
            Some(100 + i),
        ));
        events.push(kernel("step_kernel", start + 1_700, 300, 100 + i));
    }
    let doc = json!({ "schemaVersion": 1, "traceEvents": events });
    let path = dir.join("helper.pt.trace.json");
    std::fs::write(&path, doc.to_string()).expect("write trace");
    path
}

#[test]
fn gaps_are_attributed_to_the_launching_thread_not_an_idle_helper() {
    let project = Project::new();
    let path = helper_thread_trace(project.path());
    let run = import(&project, path.to_str().expect("utf-8"));
    let a = gpu_gaps(&project, &run, &[]);
    let gaps = a["gaps"].as_array().expect("gaps");
    // Kernels at 1700, 3700, 5700, 7700 µs for 300 µs: three 1.7 ms gaps.
    assert_eq!(a["gaps_found"], 3, "{a}");
    for gap in gaps {
        assert_eq!(gap["host_scope"], "launching_thread", "{gap}");
        assert_eq!(gap["launched_by"]["tid"], 1, "{gap}");
        assert_eq!(gap["launched_by"]["name"], "cudaLaunchKernel", "{gap}");
        let top = gap["host"]["top"].as_array().expect("top");
        assert_eq!(top[0]["name"], "prepare_batch", "{gap}");
        assert!(
            top.iter().all(|s| s["tid"] == 1),
            "only the launching thread counts: {gap}"
        );
        // Launched 1650 µs into the 1700 µs gap: starved, and the host is
        // shown until the launch: prepare_batch 1500 of those 1650 µs.
        assert_eq!(gap["class"], "starved", "{gap}");
        assert_eq!(gap["host_late_ns"], 1_650_000, "{gap}");
        assert_eq!(gap["host_window"], "until_launch", "{gap}");
        let share = gap["host"]["covered_share"].as_f64().expect("share");
        assert!((share - 1500.0 / 1650.0).abs() < 1e-9, "{gap}");
        // The launching thread's time sums to 1: prepare_batch, then the
        // part in no traced call.
        let shares = gap["host"]["time_shares"].as_array().expect("shares");
        assert_eq!(shares[0]["what"], "prepare_batch", "{gap}");
        let sum: f64 = shares
            .iter()
            .map(|s| s["share"].as_f64().unwrap_or(0.0))
            .sum();
        assert!((sum - 1.0).abs() < 0.002, "{gap}");
    }
    assert!(!a.to_string().contains("wait"), "{a}");
    // The device was starved for every gap, and idle before its first kernel.
    let d = &a["devices"][0];
    assert_eq!(d["idle"]["starved_ns"], 3 * 1_700_000, "{d}");
    assert_eq!(d["idle"]["stalled_ns"], 0, "{d}");

    // The orientation call tells the same story in a sentence.
    let summary = project.json(&["analyze", "summary", &run]);
    assert_eq!(summary["evidence"]["status"], "available", "{summary}");
    let longest = &summary["gpu"]["longest"][0];
    assert_eq!(longest["class"], "starved", "{summary}");
    assert!(
        longest["cause"]
            .as_str()
            .is_some_and(|c| c.contains("prepare_batch")),
        "{summary}"
    );
    assert!(
        summary["headline"]
            .as_str()
            .is_some_and(|h| h.contains("starved")),
        "{summary}"
    );
    assert!(
        longest["launched_by"]
            .as_str()
            .is_some_and(|l| l.contains("tid 1")),
        "{summary}"
    );
    // Its next calls name frames by key for an agent, by name for a person.
    let keyed = summary["next"]
        .as_array()
        .expect("next")
        .iter()
        .filter(|c| c["arguments"]["frame"].is_string())
        .count();
    assert!(keyed > 0, "{summary}");
    let out = project.run(&["analyze", "summary", &run]);
    let text = String::from_utf8_lossy(&out.stdout);
    let next: Vec<&str> = text.lines().filter(|l| l.starts_with("next: ")).collect();
    assert!(!next.is_empty(), "{text}");
    for line in next {
        let hex_key = line
            .split(' ')
            .any(|w| w.len() == 32 && w.chars().all(|c| c.is_ascii_hexdigit()));
        assert!(!hex_key, "a frame key in {line}");
    }
}

/// Device time is over the trace's span, and the idle time before the
/// device's first activity is named. The CloverLeaf export's GPU starts 43 %
/// into the trace (the first kernel at 533 ms of a 264–883 ms capture, by
/// SQL).
#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_device_idle_for_the_start_of_the_trace_says_so() {
    let project = Project::new();
    let path = corpus().join("nsys/pipit_cloverleaf_a100_nsys2024.5.sqlite");
    let imported = project.json(&["import", path.to_str().expect("utf-8")]);
    let run = imported["run_id"].as_str().expect("run").to_owned();
    let span = &imported["time_span_ns"];
    let (first, last) = (
        span[0].as_i64().expect("first"),
        span[1].as_i64().expect("last"),
    );
    let a = gpu_gaps(&project, &run, &[]);
    let devices = a["devices"].as_array().expect("devices");
    assert!(!devices.is_empty());
    let width = (last - first) as f64;
    for d in devices {
        let span = &d["span"];
        assert_eq!(span["name"], "trace", "{d}");
        assert_eq!(span["start_ns"].as_i64(), Some(first), "{d}");
        assert_eq!(span["end_ns"].as_i64(), Some(last), "{d}");
        let active = d["active_start_ns"].as_i64().expect("active start");
        assert_eq!(
            d["idle"]["before_first_activity_ns"].as_i64(),
            Some(active - first),
            "{d}"
        );
        let busy = d["busy_ns"].as_i64().expect("busy");
        let pct = d["busy_pct_of_span"].as_f64().expect("pct");
        assert!((pct - busy as f64 * 100.0 / width).abs() < 0.01, "{d}");
    }
    let d = &devices[0];
    let before = d["idle"]["before_first_activity_ns"]
        .as_i64()
        .expect("before");
    assert!(before as f64 / width > 0.40, "{d}");
}

/// `phase` scopes the gaps to a step's host span: each gap of the whole
/// trace (the model above, computed from the file) is cut to the span, and
/// those still at least the threshold are the answer's; the chunks divide
/// the span itself, and a window over the whole trace changes no gap.
#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_phase_cuts_the_gaps_to_its_host_span() {
    let project = Project::new();
    let path = "kineto/hta_nccl_a100_rank0of2.json.gz";
    let doc = corpus_json(path);
    let t = trace(&doc);
    let step = doc["traceEvents"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["name"] == "ProfilerStep#5" && e["ph"] == "X" && cat(e) == "user_annotation")
        .expect("ProfilerStep#5");
    let from = micros_to_ns(&step["ts"]);
    let to = from + micros_to_ns(&step["dur"]);
    let run = import(&project, corpus().join(path).to_str().expect("utf-8"));
    let a = gpu_gaps(
        &project,
        &run,
        &["--phase", "ProfilerStep#5", "--limit", "3"],
    );
    assert_eq!(
        a["phase"]["start_ns"].as_i64(),
        Some(from),
        "{}",
        a["phase"]
    );
    assert_eq!(a["phase"]["end_ns"].as_i64(), Some(to));
    assert!(a["window_rule"].as_str().is_some(), "{a}");

    let mut cut: Vec<(i64, i64, i64, i64)> = gaps(&t, 0)
        .into_iter()
        .map(|g| (g.device, g.next_stream, g.start.max(from), g.end.min(to)))
        .filter(|(_, _, s, e)| e - s >= 100_000)
        .collect();
    assert!(cut.len() > 3, "the step has more gaps than the limit");
    cut.sort_by_key(|g| std::cmp::Reverse(g.3 - g.2));
    assert_eq!(a["gaps_found"].as_u64(), Some(cut.len() as u64), "{a}");
    let total: i64 = cut.iter().map(|g| g.3 - g.2).sum();
    assert_eq!(a["gaps_total_ns"].as_i64(), Some(total));
    for (got, want) in a["gaps"].as_array().expect("gaps").iter().zip(&cut) {
        assert!(got["start_ns"].as_i64() >= Some(from), "{got}");
        assert!(got["end_ns"].as_i64() <= Some(to), "{got}");
        assert_eq!(got["duration_ns"].as_i64(), Some(want.3 - want.2), "{got}");
    }
    for d in a["devices"].as_array().expect("devices") {
        assert_eq!(d["span"]["name"], "phase", "{d}");
        assert_eq!(d["span"]["label"], "ProfilerStep#5", "{d}");
        assert_eq!(d["span"]["start_ns"].as_i64(), Some(from), "{d}");
        assert_eq!(d["span"]["end_ns"].as_i64(), Some(to), "{d}");
    }

    // A window over the whole trace cuts nothing.
    // (A limit given: a default page is cut to the byte budget.)
    let whole = gpu_gaps(&project, &run, &["--limit", "3"]);
    let (lo, hi) = (0, i64::MAX / 4);
    let wide = gpu_gaps(
        &project,
        &run,
        &[
            "--start-ns",
            &lo.to_string(),
            "--end-ns",
            &hi.to_string(),
            "--limit",
            "3",
        ],
    );
    assert_eq!(wide["gaps_found"], whole["gaps_found"]);
    assert_eq!(wide["gaps_total_ns"], whole["gaps_total_ns"]);
    assert_eq!(wide["gaps"], whole["gaps"]);
}

/// A stream idle while another stream of its device works is no device
/// gap; a kernel launched after the device went idle makes a starved gap,
/// one queued long before a stalled gap (with how long it was queued).
#[test]
fn a_stream_idle_while_another_works_is_no_device_gap() {
    let project = Project::new();
    let kernel = |name: &str, stream: i64, ts: i64, dur: i64, corr: i64| {
        json!({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
               "args": {"device": 0, "stream": stream, "correlation": corr}})
    };
    let launch = |ts: i64, corr: i64| {
        json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
               "ts": ts, "dur": 5, "args": {"correlation": corr}})
    };
    let doc = json!({
        "schemaVersion": 1,
        "traceEvents": [
            launch(0, 1), launch(10, 2), launch(20, 4), launch(550, 3),
            kernel("a", 7, 30, 70, 1),
            // Stream 8 works 50–500: stream 7's idle 100–500 is no device gap.
            kernel("b", 8, 50, 450, 2),
            // Launched at 550, after the device went idle at 500: starved.
            kernel("c", 7, 600, 100, 3),
            // Launched at 20, long before the gap at 700: stalled.
            kernel("d", 8, 900, 100, 4),
        ]
    });
    let path = project.path().join("streams.pt.trace.json");
    std::fs::write(&path, doc.to_string()).expect("write trace");
    let run = import(&project, path.to_str().expect("utf-8"));
    let a = gpu_gaps(&project, &run, &[]);
    assert_eq!(
        pick(
            &a["gaps"],
            &["start_ns", "duration_ns", "class", "next_op", "next_stream"]
        ),
        json!([
            [700_000, 200_000, "stalled", "d", 8],
            [500_000, 100_000, "starved", "c", 7]
        ]),
        "{a}"
    );
    let stalled = &a["gaps"][0];
    assert_eq!(stalled["queued_for_ns"], 880_000, "{stalled}");
    assert!(stalled["waited_on"].is_string(), "{stalled}");
    assert_eq!(a["gaps"][1]["host_late_ns"], 50_000, "{a}");
    let d = &a["devices"][0];
    // Busy 30–500, 600–700, 900–1000 µs of the 0–1000 µs trace.
    assert_eq!(d["busy_ns"], 670_000, "{d}");
    assert_eq!(d["idle"]["before_first_activity_ns"], 30_000, "{d}");
    assert_eq!(d["idle"]["starved_ns"], 100_000, "{d}");
    assert_eq!(d["idle"]["stalled_ns"], 200_000, "{d}");
    // Per stream, never summed: 7 is busy 170 µs, 8 is busy 550 µs.
    let streams = d["streams"].as_array().expect("streams");
    assert_eq!(
        pick(&d["streams"], &["stream", "busy_ns"]),
        json!([[8, 550_000], [7, 170_000]])
    );
    assert_eq!(streams.len(), 2);
}
