//! `analyze accelerator-launches` through the real binary against a model
//! computed here from the Kineto JSON: per stream kernel count, gaps (start
//! minus the running maximum of earlier ends, when positive), busy time;
//! launch counts, correlation coverage and the median launch latency.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;

use flameox_tests::{Project, corpus};
use serde_json::Value;

struct Model {
    /// stream → (kernels, gaps, gap total, gap max, busy)
    streams: BTreeMap<i64, (i64, i64, i64, i64, i64)>,
    launches: i64,
    kernels: i64,
    correlated: i64,
    latency_p50: i64,
}

/// µs → ns; integers exactly (epoch-scale µs exceed f64's exact range in ns).
fn ns(v: &Value) -> i64 {
    match v.as_i64() {
        Some(us) => us * 1000,
        None => (v.as_f64().expect("number") * 1000.0).round() as i64,
    }
}

fn model(path: &str) -> Model {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(corpus().join(path)).expect("corpus"))
        .read_to_string(&mut text)
        .expect("gunzip");
    let doc: Value = serde_json::from_str(&text).expect("json");
    let events = doc["traceEvents"].as_array().expect("events");
    let complete = |cat: &'static str| {
        events.iter().filter(move |e| {
            e["ph"] == "X" && e["cat"].as_str().map(str::to_lowercase).as_deref() == Some(cat)
        })
    };
    let mut launch_ts: HashMap<i64, i64> = HashMap::new();
    let mut launches = 0;
    for e in complete("cuda_runtime") {
        if e["name"] == "cudaLaunchKernel" {
            launches += 1;
            if let Some(c) = e["args"]["correlation"].as_i64() {
                let ts = ns(&e["ts"]);
                launch_ts
                    .entry(c)
                    .and_modify(|t| *t = (*t).min(ts))
                    .or_insert(ts);
            }
        }
    }
    let mut per_stream: BTreeMap<i64, Vec<(i64, i64)>> = BTreeMap::new();
    let mut latencies = Vec::new();
    let mut kernels = 0;
    for e in complete("kernel") {
        kernels += 1;
        let (ts, dur) = (ns(&e["ts"]), ns(&e["dur"]));
        per_stream
            .entry(e["args"]["stream"].as_i64().expect("stream"))
            .or_default()
            .push((ts, ts + dur));
        if let Some(l) = e["args"]["correlation"]
            .as_i64()
            .and_then(|c| launch_ts.get(&c))
        {
            latencies.push(ts - l);
        }
    }
    let mut streams = BTreeMap::new();
    for (stream, mut spans) in per_stream {
        spans.sort();
        let (mut gaps, mut total, mut max_gap) = (0, 0, 0);
        let mut running_end = i64::MIN;
        for &(start, end) in &spans {
            if running_end != i64::MIN && start > running_end {
                gaps += 1;
                total += start - running_end;
                max_gap = max_gap.max(start - running_end);
            }
            running_end = running_end.max(end);
        }
        let span = running_end - spans[0].0;
        streams.insert(
            stream,
            (spans.len() as i64, gaps, total, max_gap, span - total),
        );
    }
    latencies.sort_unstable();
    let p50 = latencies[(latencies.len() as f64 * 0.5).ceil() as usize - 1];
    Model {
        streams,
        launches,
        kernels,
        correlated: latencies.len() as i64,
        latency_p50: p50,
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn launches_latency_and_stream_gaps_match_the_trace() {
    let project = Project::new();
    let path = "kineto/hta_alexnet_a100.pt.trace.json.gz";
    let m = model(path);
    let imported = project.json(&["import", corpus().join(path).to_str().expect("utf-8")]);
    let run = imported["run_id"].as_str().expect("run").to_owned();
    let a = project.json(&["analyze", "accelerator-launches", &run]);
    assert_eq!(a["evidence"]["status"], "available", "{a}");
    let regions = a["regions"].as_array().expect("regions");
    let sum = |f: &str| -> i64 { regions.iter().filter_map(|r| r[f]["count"].as_i64()).sum() };
    assert_eq!(sum("direct_launches"), m.launches);
    assert_eq!(sum("kernels"), m.kernels);
    let all = &regions[0];
    let coverage = all["correlation_coverage"].as_f64().expect("coverage");
    assert!((coverage - m.correlated as f64 / m.kernels as f64).abs() < 1e-9);
    // Exact-decimal µs vs f64 rounding: within a nanosecond or two.
    let p50 = all["launch_latency"]["p50_ns"].as_i64().expect("p50");
    assert!(
        (p50 - m.latency_p50).abs() <= 2,
        "{p50} vs {}",
        m.latency_p50
    );
    let streams = a["streams"].as_array().expect("streams");
    assert_eq!(streams.len(), m.streams.len());
    for s in streams {
        let id = s["stream"].as_i64().expect("stream");
        let (kernels, gaps, total, max_gap, busy) = m.streams[&id];
        assert_eq!(s["kernels"].as_i64(), Some(kernels), "stream {id}");
        assert_eq!(s["gaps"].as_i64(), Some(gaps), "stream {id}");
        let near = |field: &str, want: i64| {
            let got = s[field].as_i64().expect(field);
            assert!(
                (got - want).abs() <= 2 * kernels,
                "stream {id} {field}: {got} vs {want}"
            );
        };
        near("gap_total_ns", total);
        near("gap_max_ns", max_gap);
        near("busy_ns", busy);
        let histogram: i64 = s["gap_histogram"]
            .as_array()
            .expect("histogram")
            .iter()
            .filter_map(Value::as_i64)
            .sum();
        assert_eq!(histogram, gaps, "every gap is in one bucket");
    }

    // No device activity: partial with the next call, not an empty success.
    let folded = corpus().join("stacks/pyspy_workload.folded.txt");
    let other = project.json(&["import", folded.to_str().expect("utf-8")]);
    let none = project.json(&[
        "analyze",
        "accelerator-launches",
        other["run_id"].as_str().expect("run"),
    ]);
    assert_eq!(none["evidence"]["status"], "partial");
    assert_eq!(none["evidence"]["reason"], "accelerator_tracks_missing");
    assert_eq!(none["evidence"]["next_tool"], "get_run");
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn nsight_exports_agree_with_plain_sql() {
    use rusqlite::{Connection, OpenFlags};
    let project = Project::new();
    for file in [
        "nsys/pipit_cloverleaf_a100_nsys2024.5.sqlite",
        "nsys/pipit_saxpy_mpi_a100_nsys2022.2.sqlite",
    ] {
        let path = corpus().join(file);
        let c = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open export");
        let scalar = |sql: &str| -> i64 { c.query_row(sql, [], |r| r.get(0)).expect(sql) };
        // One launch per correlation id: a call and its versioned inner call
        // (`cudaLaunchKernel` ⊃ `cudaLaunchKernel_v7000`) share the id.
        let launches = scalar(
            "SELECT count(DISTINCT r.correlationId) FROM CUPTI_ACTIVITY_KIND_RUNTIME r
             JOIN StringIds s ON s.id = r.nameId
             WHERE s.value = 'cudaLaunchKernel' OR s.value LIKE 'cudaLaunchKernel_v%'",
        );
        let kernels = scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL");
        let correlated = scalar(
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL
             WHERE correlationId IN (SELECT correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME)",
        );
        let imported = project.json(&["import", path.to_str().expect("utf-8")]);
        let run = imported["run_id"].as_str().expect("run");
        let a = project.json(&["analyze", "accelerator-launches", run]);
        // Regions are NVTX phases when the export has ranges: sum them.
        let regions = a["regions"].as_array().expect("regions");
        let total = |f: &dyn Fn(&Value) -> f64| regions.iter().map(f).sum::<f64>();
        let got_launches = total(&|r| r["direct_launches"]["count"].as_f64().unwrap_or(0.0));
        let got_kernels = total(&|r| r["kernels"]["count"].as_f64().unwrap_or(0.0));
        let got_correlated = total(&|r| {
            r["correlation_coverage"].as_f64().unwrap_or(0.0)
                * r["kernels"]["count"].as_f64().unwrap_or(0.0)
        });
        assert_eq!(got_launches, launches as f64, "{file}");
        assert_eq!(got_kernels, kernels as f64, "{file}");
        assert!((got_correlated - correlated as f64).abs() < 1e-6, "{file}");
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn compare_to_gives_per_region_deltas() {
    let project = Project::new();
    let run_of = |file: &str| {
        let path = corpus().join(file);
        let imported = project.json(&["import", path.to_str().expect("utf-8")]);
        imported["run_id"].as_str().expect("run").to_owned()
    };
    let big = run_of("nsys/pipit_cloverleaf_a100_nsys2024.5.sqlite");
    let small = run_of("nsys/pipit_saxpy_mpi_a100_nsys2022.2.sqlite");
    let same = project.json(&["analyze", "accelerator-launches", &big, "--base", &big]);
    for r in same["comparison"]["regions"].as_array().expect("regions") {
        assert_eq!(r["kernels"], 0, "{r}");
        assert_eq!(r["kernel_time_ns"], 0, "{r}");
        assert_eq!(r["latency_p50_ns"], 0, "{r}");
    }
    let a = project.json(&["analyze", "accelerator-launches", &big]);
    let b = project.json(&["analyze", "accelerator-launches", &small]);
    let d = project.json(&["analyze", "accelerator-launches", &big, "--base", &small]);
    // Regions match by name over the union of both sides (cloverleaf has
    // no phases, `(all)`; saxpy's NVTX ranges make a `saxpy` region); a
    // region missing on one side counts as zero there.
    let count = |v: &Value, region: &str, f: &str| {
        v["regions"]
            .as_array()
            .expect("regions")
            .iter()
            .find(|r| r["region"] == region)
            .map_or(0, |r| r[f]["count"].as_i64().expect("count"))
    };
    let deltas = d["comparison"]["regions"].as_array().expect("deltas");
    let names: Vec<&str> = deltas.iter().filter_map(|r| r["region"].as_str()).collect();
    assert!(
        names.contains(&"(all)") && names.contains(&"saxpy"),
        "{names:?}"
    );
    for delta in deltas {
        let region = delta["region"].as_str().expect("region");
        for f in ["kernels", "direct_launches"] {
            assert_eq!(
                delta[f].as_i64(),
                Some(count(&a, region, f) - count(&b, region, f)),
                "{region} {f}"
            );
        }
    }
    assert!(a["comparison"].is_null());
}

/// Regions are bounded (heaviest kernel time first, `--limit`), and the
/// `overall` row sums every region, listed or not.
#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn regions_are_limited_and_overall_covers_them_all() {
    let project = Project::new();
    let path = corpus().join("kineto/hta_nccl_a100_rank0of2.json.gz");
    let imported = project.json(&["import", path.to_str().expect("utf-8")]);
    let run = imported["run_id"].as_str().expect("run");
    let all = project.json(&["analyze", "accelerator-launches", run, "--limit", "1000"]);
    let regions = all["regions"].as_array().expect("regions");
    assert!(regions.len() >= 3, "several steps: {}", regions.len());
    assert_eq!(all["total"].as_u64(), Some(regions.len() as u64));
    let times: Vec<i64> = regions
        .iter()
        .map(|r| r["kernels"]["time_ns"].as_i64().expect("time"))
        .collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "heaviest first");
    for f in ["kernels", "direct_launches", "graph_launches"] {
        for part in ["count", "time_ns"] {
            let sum: i64 = regions
                .iter()
                .map(|r| r[f][part].as_i64().unwrap_or(0))
                .sum();
            assert_eq!(all["overall"][f][part].as_i64(), Some(sum), "{f}.{part}");
        }
    }
    let two = project.json(&["analyze", "accelerator-launches", run, "--limit", "2"]);
    assert_eq!(two["returned"], 2);
    assert_eq!(two["truncated"], true);
    assert_eq!(two["total"], all["total"]);
    assert_eq!(two["regions"][0], regions[0]);
    assert_eq!(two["overall"], all["overall"]);
}
