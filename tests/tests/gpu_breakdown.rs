//! `analyze gpu-breakdown` through the real binary against an independent
//! model of each Kineto trace (`gpu_breakdown/model.rs`): on every corpus
//! Kineto trace with device activity, the temporal breakdown, the
//! communication/computation overlap, per-stream idle gaps with their
//! host-wait / kernel-wait / other split, kernel totals per name, launch
//! outlier counts and copy bytes per direction are equal to the ns; edge
//! cases are built by hand; several ranks read side by side.

#[path = "gpu_breakdown/model.rs"]
mod model;

use std::path::{Path, PathBuf};

use flameox_tests::{Project, corpus};
use serde_json::{Value, json};

/// HTA's defaults, in ns.
const KERNEL_WAIT_NS: i64 = 30_000;
const RUNTIME_NS: i64 = 50_000;
const DELAY_NS: i64 = 100_000;

fn kineto_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("kineto folder")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            kineto_files(&path, out);
        } else if path.to_string_lossy().ends_with(".json")
            || path.to_string_lossy().ends_with(".json.gz")
        {
            out.push(path);
        }
    }
}

fn import(project: &Project, path: &Path) -> String {
    let imported = project.json(&["import", path.to_str().expect("utf-8")]);
    imported["run_id"].as_str().expect("run").to_owned()
}

fn int(v: &Value, field: &str) -> i64 {
    v[field]
        .as_i64()
        .unwrap_or_else(|| panic!("{field} in {v}"))
}

/// Every section of one artifact's answer against the model of its file.
fn check_against_model(label: &str, answer: &Value, trace: &model::Trace) {
    let ops_of = |device: i64| -> Vec<&model::Op> {
        trace.ops.iter().filter(|o| o.device == device).collect()
    };
    let temporal = answer["temporal"].as_array().expect("temporal");
    let devices: std::collections::BTreeSet<i64> = trace.ops.iter().map(|o| o.device).collect();
    assert_eq!(temporal.len(), devices.len(), "{label}: one row per device");
    for row in temporal {
        let device = int(row, "device");
        let m = model::temporal(&ops_of(device));
        let got = model::Temporal {
            span: int(row, "span_ns"),
            compute: int(row, "compute_ns"),
            communication: int(row, "communication_ns"),
            memory: int(row, "memory_ns"),
            idle: int(row, "idle_ns"),
            communication_union: m.communication_union,
            overlapped: m.overlapped,
        };
        assert_eq!(got, m, "{label} device {device}: temporal");
        assert_eq!(row["rank"].as_i64(), trace.rank, "{label}: rank label");
        let pct: f64 = ["compute_pct", "communication_pct", "memory_pct", "idle_pct"]
            .iter()
            .filter_map(|f| row[f].as_f64())
            .sum();
        assert!(m.span == 0 || (pct - 100.0).abs() < 1e-6, "{label}: {pct}");
    }
    for row in answer["overlap"].as_array().expect("overlap") {
        let m = model::temporal(&ops_of(int(row, "device")));
        assert_eq!(
            int(row, "communication_ns"),
            m.communication_union,
            "{label}"
        );
        assert_eq!(int(row, "overlapped_ns"), m.overlapped, "{label}");
    }

    let idle = model::stream_idle(trace, KERNEL_WAIT_NS);
    let rows = answer["idle"].as_array().expect("idle");
    assert_eq!(rows.len(), idle.len(), "{label}: one row per stream");
    for row in rows {
        let key = (int(row, "device"), int(row, "stream"));
        let got = model::Idle {
            operations: int(row, "operations"),
            gaps: int(row, "gaps"),
            idle: int(row, "idle_ns"),
            host_wait: int(row, "host_wait_ns"),
            kernel_wait: int(row, "kernel_wait_ns"),
            other: int(row, "other_ns"),
        };
        assert_eq!(got, idle[&key], "{label} stream {key:?}");
    }

    let kernels = model::kernels(trace);
    let breakdown = &answer["kernels"][0];
    assert_eq!(
        breakdown["truncated"], false,
        "{label}: every name returned"
    );
    let names = breakdown["rows"].as_array().expect("rows");
    assert_eq!(names.len(), kernels.len(), "{label}: one row per name");
    for row in names {
        let name = row["name"].as_str().expect("name");
        let (class, count, total, lo, hi) = kernels[name];
        assert_eq!(row["kernel_type"], class.name(), "{label} {name}");
        let got = (
            int(row, "count"),
            int(row, "total_ns"),
            int(row, "min_ns"),
            int(row, "max_ns"),
        );
        assert_eq!(got, (count, total, lo, hi), "{label} {name}");
    }
    let heaviest = kernels.values().map(|k| k.2).max();
    assert_eq!(
        names[0]["total_ns"].as_i64(),
        heaviest,
        "{label}: heaviest first"
    );

    let launches = &answer["launches"][0];
    let (pairs, short, runtime, delayed) = model::launch_counts(trace, RUNTIME_NS, DELAY_NS);
    let got = (
        int(launches, "launches"),
        int(&launches["short_kernels"], "count"),
        int(&launches["runtime_outliers"], "count"),
        int(&launches["launch_delay_outliers"], "count"),
    );
    assert_eq!(
        got,
        (pairs, short, runtime, delayed),
        "{label}: launch stats"
    );
    for example in launches["launch_delay_outliers"]["examples"]
        .as_array()
        .expect("examples")
    {
        assert!(int(example, "launch_delay_ns") > DELAY_NS, "{label}");
    }

    let bandwidth = model::bandwidth(trace);
    let rows = answer["bandwidth"].as_array().expect("bandwidth");
    assert_eq!(
        rows.len(),
        bandwidth.len(),
        "{label}: one row per direction"
    );
    for row in rows {
        let key = (
            int(row, "device"),
            row["direction"].as_str().expect("dir").to_owned(),
        );
        let got = (int(row, "count"), int(row, "bytes"), int(row, "time_ns"));
        assert_eq!(got, bandwidth[&key], "{label} {key:?}");
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn every_corpus_kineto_trace_matches_an_independent_model() {
    let project = Project::new();
    let mut files = Vec::new();
    kineto_files(&corpus().join("kineto"), &mut files);
    assert!(files.len() >= 20, "the corpus has its Kineto traces");
    let mut checked = 0;
    for path in &files {
        let label = path
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let trace = model::read(path);
        let run = import(&project, path);
        let answer = project.json(&[
            "analyze",
            "gpu-breakdown",
            &run,
            "--limit",
            "1000",
            "--full-names",
        ]);
        if trace.ops.is_empty() {
            // The only allowed skip: no device events, answered as partial.
            assert_eq!(answer["evidence"]["status"], "partial", "{label}");
            assert_eq!(answer["evidence"]["reason"], "accelerator_tracks_missing");
            continue;
        }
        assert_eq!(
            answer["evidence"]["status"], "available",
            "{label}: {}",
            answer["evidence"]
        );
        assert_eq!(
            answer["artifacts"][0]["rank"].as_i64(),
            trace.rank,
            "{label}"
        );
        check_against_model(&label, &answer, &trace);
        checked += 1;
    }
    assert_eq!(
        checked,
        files.len(),
        "every corpus Kineto trace has device work"
    );
}

/// Writes a Kineto-shaped trace; `ts`/`dur` in µs.
fn kineto(dir: &Path, name: &str, events: Vec<Value>, rank: i64) -> PathBuf {
    let doc = json!({
        "schemaVersion": 1,
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
        "traceEvents": events,
    });
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec(&doc).expect("json")).expect("write");
    path
}

/// Hand-written times are offsets from this (µs), so every timestamp is positive.
const BASE_US: f64 = 1_000.0;

fn op(cat: &str, name: &str, ts: f64, dur: f64, stream: i64, corr: i64, bytes: i64) -> Value {
    let ts = BASE_US + ts;
    json!({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
           "args": {"device": 0, "stream": stream, "correlation": corr, "bytes": bytes}})
}

fn call(name: &str, ts: f64, dur: f64, corr: i64) -> Value {
    let ts = BASE_US + ts;
    json!({"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 1, "tid": 1, "ts": ts,
           "dur": dur, "args": {"correlation": corr}})
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn edge_cases_built_by_hand() {
    let project = Project::new();
    let dir = tempfile::tempdir().expect("dir");
    // Stream 7: [0,100) contains [50,80) (overlap: no negative gap), then
    // [150,200) after a 50 µs gap launched at 120 > 100 (host wait), then a
    // zero-duration kernel at 210 (10 µs gap < 30 µs, launched early: kernel
    // wait), then [300,310) after 90 µs, launched early (other).
    // Stream 13: an NCCL kernel [20,60) inside compute [0,100): all overlapped.
    let events = vec![
        op("kernel", "gemm", 0.0, 100.0, 7, 1, 0),
        op("kernel", "inner", 50.0, 30.0, 7, 2, 0),
        op("kernel", "late", 150.0, 50.0, 7, 3, 0),
        op("kernel", "empty", 210.0, 0.0, 7, 4, 0),
        op("kernel", "tail", 300.0, 10.0, 7, 5, 0),
        op("kernel", "ncclKernel_AllReduce", 20.0, 40.0, 13, 6, 0),
        call("cudaLaunchKernel", -5.0, 1.0, 1),
        call("cudaLaunchKernel", -4.0, 1.0, 2),
        call("cudaLaunchKernel", 120.0, 60.0, 3),
        call("cudaLaunchKernel", -3.0, 1.0, 4),
        call("cudaLaunchKernel", -2.0, 1.0, 5),
        call("cudaLaunchKernel", -1.0, 1.0, 6),
        // Copies on stream 9 after everything else (device idle in between).
        op(
            "gpu_memcpy",
            "Memcpy HtoD (Pageable -> Device)",
            400.0,
            10.0,
            9,
            10,
            50_000,
        ),
        op(
            "gpu_memcpy",
            "Memcpy DtoH (Device -> Pinned)",
            410.0,
            20.0,
            9,
            11,
            10_000,
        ),
        op(
            "gpu_memcpy",
            "Memcpy DtoD (Device -> Device)",
            430.0,
            5.0,
            9,
            12,
            4_000,
        ),
        op(
            "gpu_memcpy",
            "Memcpy PtoP (Device -> Device)",
            435.0,
            5.0,
            9,
            13,
            1_000,
        ),
        op(
            "gpu_memcpy",
            "Memcpy HtoH (Pinned -> Pinned)",
            440.0,
            0.0,
            9,
            14,
            64,
        ),
        op("gpu_memset", "Memset (Device)", 440.0, 2.0, 9, 15, 2_000),
    ];
    let path = kineto(dir.path(), "edge.json", events, 1);
    let run = import(&project, &path);
    let a = project.json(&[
        "analyze",
        "gpu-breakdown",
        &run,
        "--limit",
        "100",
        "--full-names",
    ]);
    assert_eq!(a["artifacts"][0]["rank"], 1);
    assert_eq!(a["artifacts"][0]["world_size"], 2);
    let t = &a["temporal"][0];
    // Compute union [0,100)+[150,200)+[300,310) = 160 µs; NCCL hidden;
    // copies [400,442) = 42 µs; span 442 µs.
    assert_eq!(int(t, "span_ns"), 442_000);
    assert_eq!(int(t, "compute_ns"), 160_000);
    assert_eq!(int(t, "communication_ns"), 0);
    assert_eq!(int(t, "memory_ns"), 42_000);
    assert_eq!(int(t, "idle_ns"), 442_000 - 160_000 - 42_000);
    let o = &a["overlap"][0];
    assert_eq!(int(o, "communication_ns"), 40_000);
    assert_eq!(int(o, "overlapped_ns"), 40_000);
    assert_eq!(o["overlap_pct"].as_f64(), Some(100.0));

    let stream7 = a["idle"]
        .as_array()
        .expect("idle")
        .iter()
        .find(|r| r["stream"] == 7)
        .expect("stream 7");
    assert_eq!(int(stream7, "operations"), 5);
    assert_eq!(int(stream7, "gaps"), 3, "the contained kernel makes no gap");
    assert_eq!(int(stream7, "idle_ns"), 50_000 + 10_000 + 90_000);
    assert_eq!(int(stream7, "host_wait_ns"), 50_000);
    assert_eq!(int(stream7, "kernel_wait_ns"), 10_000);
    assert_eq!(int(stream7, "other_ns"), 90_000);
    assert_eq!(int(stream7, "busy_ns"), int(stream7, "span_ns") - 150_000);

    let kernels = a["kernels"][0]["rows"].as_array().expect("rows");
    let empty = kernels.iter().find(|r| r["name"] == "empty").expect("zero");
    assert_eq!((int(empty, "count"), int(empty, "total_ns")), (1, 0));
    let nccl = kernels
        .iter()
        .find(|r| r["name"] == "ncclKernel_AllReduce")
        .expect("nccl");
    assert_eq!(nccl["kernel_type"], "communication");

    // Launch 3: call 60 µs > 50 (runtime outlier); its kernel (50 µs) is
    // shorter than the call, but an outlier call is not a short kernel.
    // The other calls take 1 µs: only the zero-duration kernel is shorter.
    let l = &a["launches"][0];
    assert_eq!(int(l, "launches"), 6);
    assert_eq!(int(&l["runtime_outliers"], "count"), 1);
    assert_eq!(l["runtime_outliers"]["examples"][0]["name"], "late");
    assert_eq!(int(&l["short_kernels"], "count"), 1);
    assert_eq!(l["short_kernels"]["examples"][0]["name"], "empty");
    // Delay = kernel start − call end, clipped at 0: gemm 0 − (−4) = 4,
    // inner 53, late 150 − 180 → 0, empty 210 − (−2) = 212, tail
    // 300 − (−1) = 301, nccl 20: two above 100 µs, tail first.
    let delayed = &l["launch_delay_outliers"];
    assert_eq!(int(delayed, "count"), 2);
    assert_eq!(delayed["examples"][0]["name"], "tail");
    assert_eq!(int(&delayed["examples"][0], "launch_delay_ns"), 301_000);

    let bw: Vec<(String, i64, i64, Option<f64>, i64)> = a["bandwidth"]
        .as_array()
        .expect("bandwidth")
        .iter()
        .map(|r| {
            (
                r["direction"].as_str().expect("dir").to_owned(),
                int(r, "bytes"),
                int(r, "time_ns"),
                r["gb_per_s"].as_f64(),
                int(r, "timed_ops"),
            )
        })
        .collect();
    let expect = |d: &str, bytes: i64, ns: i64, timed: i64| {
        (
            d.to_owned(),
            bytes,
            ns,
            (ns > 0).then(|| bytes as f64 / ns as f64),
            timed,
        )
    };
    assert_eq!(
        bw,
        vec![
            expect("H2D", 50_000, 10_000, 1),
            expect("D2H", 10_000, 20_000, 1),
            expect("D2D", 4_000, 5_000, 1),
            expect("P2P", 1_000, 5_000, 1),
            expect("memset", 2_000, 2_000, 1),
            expect("other", 64, 0, 0),
        ]
    );

    // Thresholds are parameters: a 100 µs kernel wait turns "other" into
    // kernel wait; one section only leaves the others null.
    let wide = project.json(&[
        "analyze",
        "gpu-breakdown",
        &run,
        "--section",
        "idle",
        "--kernel-wait-us",
        "100",
    ]);
    assert_eq!(wide["thresholds"]["kernel_wait_ns"], 100_000);
    assert!(wide["temporal"].is_null() && wide["kernels"].is_null());
    let s7 = &wide["idle"][0];
    assert_eq!(
        (int(s7, "kernel_wait_ns"), int(s7, "other_ns")),
        (100_000, 0)
    );
    // A section that does not exist: a usage error naming the ones that do.
    let out = project.run(&["analyze", "gpu-breakdown", &run, "--section", "bogus"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("temporal") && stderr.contains("bandwidth"),
        "{stderr}"
    );
    project.json_err(
        &["analyze", "gpu-breakdown", &run, "--kernel-wait-us=-1"],
        "INVALID_ARGUMENTS",
        2,
    );

    // No device activity: partial with the next call, never an empty answer.
    let folded = corpus().join("stacks/pyspy_workload.folded.txt");
    let other = import(&project, &folded);
    let none = project.json(&["analyze", "gpu-breakdown", &other]);
    assert_eq!(none["evidence"]["status"], "partial");
    assert_eq!(none["evidence"]["reason"], "accelerator_tracks_missing");
    assert_eq!(none["evidence"]["next_tool"], "get_run");
    assert_eq!(none["evidence"]["next_arguments"]["target"], other.as_str());
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn ranks_side_by_side_equal_each_rank_alone() {
    let project = Project::new();
    let dir = corpus().join("kineto/param_dlrm_8rank");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("dlrm")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    let runs: Vec<String> = files[..3].iter().map(|p| import(&project, p)).collect();
    let mut args = vec!["analyze", "gpu-breakdown"];
    args.extend(runs.iter().map(String::as_str));
    let together = project.json(&args);
    let artifacts = together["artifacts"].as_array().expect("artifacts");
    assert_eq!(artifacts.len(), 3);
    for (i, (run, path)) in runs.iter().zip(&files).enumerate() {
        let trace = model::read(path);
        let alone = project.json(&["analyze", "gpu-breakdown", run]);
        let artifact = alone["artifacts"][0]["artifact_id"].clone();
        assert_eq!(alone["artifacts"][0]["rank"].as_i64(), trace.rank);
        assert_eq!(
            artifacts[i]["rank"].as_i64(),
            trace.rank,
            "labelled by rank"
        );
        for section in [
            "temporal",
            "idle",
            "overlap",
            "kernels",
            "launches",
            "bandwidth",
        ] {
            let mine: Vec<&Value> = together[section]
                .as_array()
                .expect("section")
                .iter()
                .filter(|r| r["artifact_id"] == artifact)
                .collect();
            let own: Vec<&Value> = alone[section].as_array().expect("section").iter().collect();
            assert!(!own.is_empty(), "{section}");
            assert_eq!(mine, own, "rank {:?} {section}", trace.rank);
        }
    }
    let ranks: Vec<Option<i64>> = together["temporal"]
        .as_array()
        .expect("temporal")
        .iter()
        .map(|r| r["rank"].as_i64())
        .collect();
    let mut sorted = ranks.clone();
    sorted.sort();
    assert_eq!(ranks, sorted, "rows ordered by rank");
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn nsight_export_matches_plain_sql() {
    use rusqlite::{Connection, OpenFlags};
    let path = corpus().join("nsys/pipit_cloverleaf_a100_nsys2024.5.sqlite");
    let c = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).expect("open");
    let rows = |sql: &str| -> Vec<(i64, i64, i64, String, i64)> {
        let mut stmt = c.prepare(sql).expect(sql);
        stmt.query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .expect(sql)
        .map(|r| r.expect("row"))
        .collect()
    };
    // (start, end, stream, name or copy kind, bytes)
    let kernels = rows(
        "SELECT k.start, k.\"end\", k.streamId, s.value, 0 FROM CUPTI_ACTIVITY_KIND_KERNEL k
         JOIN StringIds s ON s.id = k.demangledName",
    );
    let copies = rows(
        "SELECT start, \"end\", streamId, CAST(copyKind AS TEXT), bytes
         FROM CUPTI_ACTIVITY_KIND_MEMCPY",
    );
    assert!(kernels.iter().all(|k| !k.3.to_lowercase().contains("nccl")));
    let spans = |r: &[(i64, i64, i64, String, i64)]| r.iter().map(|k| (k.0, k.1)).collect();
    let compute = model::merged(spans(&kernels));
    let all = model::merged([spans(&kernels), spans(&copies)].concat());
    let first = all.first().expect("ops").0;
    let last = all.iter().map(|s| s.1).max().expect("ops");

    let project = Project::new();
    let run = import(&project, &path);
    let a = project.json(&[
        "analyze",
        "gpu-breakdown",
        &run,
        "--limit",
        "1000",
        "--full-names",
    ]);
    assert_eq!(a["evidence"]["status"], "available");
    assert!(
        a["artifacts"][0]["rank"].is_null(),
        "no distributedInfo in nsys"
    );
    let t = &a["temporal"][0];
    assert_eq!(a["temporal"].as_array().expect("rows").len(), 1);
    assert_eq!(int(t, "span_ns"), last - first);
    assert_eq!(int(t, "compute_ns"), model::length(&compute));
    assert_eq!(
        int(t, "memory_ns"),
        model::length(&all) - model::length(&compute)
    );
    assert_eq!(int(t, "idle_ns"), last - first - model::length(&all));

    let mut per_stream: std::collections::BTreeMap<i64, Vec<(i64, i64)>> = Default::default();
    for op in kernels.iter().chain(&copies) {
        per_stream.entry(op.2).or_default().push((op.0, op.1));
    }
    let idle = a["idle"].as_array().expect("idle");
    assert_eq!(idle.len(), per_stream.len());
    for row in idle {
        let stream = &per_stream[&int(row, "stream")];
        let busy = model::length(&model::merged(stream.clone()));
        let span = stream.iter().map(|s| s.1).max().expect("end")
            - stream.iter().map(|s| s.0).min().expect("start");
        assert_eq!(int(row, "idle_ns"), span - busy, "gaps = span − busy");
        let parts = int(row, "host_wait_ns") + int(row, "kernel_wait_ns") + int(row, "other_ns");
        assert_eq!(parts, int(row, "idle_ns"), "the split adds up");
    }

    let mut by_name: std::collections::BTreeMap<&str, (i64, i64)> = Default::default();
    for k in &kernels {
        let e = by_name.entry(k.3.as_str()).or_default();
        *e = (e.0 + 1, e.1 + (k.1 - k.0));
    }
    let names = a["kernels"][0]["rows"].as_array().expect("rows");
    let computation: Vec<&Value> = names
        .iter()
        .filter(|r| r["kernel_type"] == "computation")
        .collect();
    assert_eq!(computation.len(), by_name.len());
    for row in computation {
        let want = by_name[row["name"].as_str().expect("name")];
        assert_eq!((int(row, "count"), int(row, "total_ns")), want);
    }
    for (kind, direction) in [("1", "H2D"), ("2", "D2H")] {
        let of: Vec<_> = copies.iter().filter(|c| c.3 == kind).collect();
        let row = a["bandwidth"]
            .as_array()
            .expect("bandwidth")
            .iter()
            .find(|r| r["direction"] == direction)
            .expect(direction);
        let want = (
            of.len() as i64,
            of.iter().map(|c| c.4).sum::<i64>(),
            of.iter().map(|c| c.1 - c.0).sum::<i64>(),
        );
        assert_eq!(
            (int(row, "count"), int(row, "bytes"), int(row, "time_ns")),
            want
        );
    }
}
