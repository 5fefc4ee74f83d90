//! `analyze gpu-summary` through the real binary against a model computed
//! here from the Kineto JSON itself: per kernel name the count, total, min
//! and max; memcpy bytes; a trace without GPU activity answers `partial`.

use std::collections::BTreeMap;
use std::io::Read;

use flameox_tests::{Project, corpus};
use serde_json::Value;

/// (count, total, min, max) per name of `cat` complete events, in ns.
fn model(path: &str, cat: &str, field: &str) -> BTreeMap<String, (i64, i64, i64, i64)> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(corpus().join(path)).expect("corpus"))
        .read_to_string(&mut text)
        .expect("gunzip");
    let doc: Value = serde_json::from_str(&text).expect("json");
    let mut out: BTreeMap<String, (i64, i64, i64, i64)> = BTreeMap::new();
    for e in doc["traceEvents"].as_array().expect("events") {
        if e["ph"] != "X" || e["cat"].as_str().map(str::to_lowercase).as_deref() != Some(cat) {
            continue;
        }
        let v = match field {
            "dur" => (e["dur"].as_f64().expect("dur") * 1000.0).round() as i64,
            _ => e["args"][field].as_i64().expect("bytes"),
        };
        let name = e["name"].as_str().expect("name").to_owned();
        let s = out.entry(name).or_insert((0, 0, i64::MAX, i64::MIN));
        *s = (s.0 + 1, s.1 + v, s.2.min(v), s.3.max(v));
    }
    out
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn kernel_and_memcpy_summaries_match_the_trace() {
    let project = Project::new();
    for path in [
        "kineto/hta_alexnet_a100.pt.trace.json.gz",
        "kineto/hta_nccl_a100_rank0of2.json.gz",
    ] {
        let imported = project.json(&["import", corpus().join(path).to_str().expect("utf-8")]);
        let run = imported["run_id"].as_str().expect("run").to_owned();
        let kernels = model(path, "kernel", "dur");
        assert!(!kernels.is_empty(), "{path} has kernels");
        let summary = project.json(&["analyze", "gpu-summary", &run, "--limit", "1000"]);
        assert_eq!(summary["evidence"]["status"], "available");
        let rows = summary["rows"].as_array().expect("rows");
        assert_eq!(rows.len(), kernels.len(), "{path}: one row per kernel name");
        for row in rows {
            let name = row["name"].as_str().expect("name");
            let (count, total, lo, hi) = kernels[name];
            assert_eq!(row["count"].as_i64(), Some(count), "{path} {name}");
            // Exact-decimal µs parsing vs f64 rounding: at most 1 ns each.
            let got = row["total"].as_i64().expect("total");
            assert!(
                (got - total).abs() <= count,
                "{path} {name}: {got} vs {total}"
            );
            assert!((row["min"].as_i64().expect("min") - lo).abs() <= 1);
            assert!((row["max"].as_i64().expect("max") - hi).abs() <= 1);
        }
        let top = kernels.iter().max_by_key(|(_, s)| s.1).expect("top");
        assert_eq!(rows[0]["name"], top.0.as_str(), "{path}: heaviest first");
        let pct: f64 = rows.iter().filter_map(|r| r["percent"].as_f64()).sum();
        assert!(
            (pct - 100.0).abs() < 0.5,
            "{path}: shares sum to 100 ({pct})"
        );

        let copies = model(path, "gpu_memcpy", "bytes");
        let size = project.json(&["analyze", "gpu-summary", &run, "--report", "memcpy-size"]);
        let bytes: i64 = copies.values().map(|s| s.1).sum();
        assert_eq!(size["grand_total"].as_i64(), Some(bytes), "{path}");
    }
    let folded = corpus().join("stacks/pyspy_workload.folded.txt");
    let imported = project.json(&["import", folded.to_str().expect("utf-8")]);
    let run = imported["run_id"].as_str().expect("run");
    let none = project.json(&["analyze", "gpu-summary", run]);
    assert_eq!(none["evidence"]["status"], "partial");
    assert_eq!(none["evidence"]["reason"], "accelerator_tracks_missing");
    // A report that does not exist: a usage error naming the ones that do.
    let out = project.run(&["analyze", "gpu-summary", run, "--report", "bogus"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("memcpy-time"), "{stderr}");
}

/// Kernel families on the CloverLeaf Nsight export (102 template
/// instantiations): grouping keeps every kernel's time and count, each
/// family's variants are the names it merged, and the by-name answer says
/// how many families there are.
#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn kernels_group_into_families_without_losing_time() {
    let project = Project::new();
    let path = corpus().join("nsys/pipit_cloverleaf_a100_nsys2024.5.sqlite");
    let imported = project.json(&["import", path.to_str().expect("utf-8")]);
    let run = imported["run_id"].as_str().expect("run");
    let by_name = project.json(&["analyze", "gpu-summary", run, "--limit", "1000"]);
    let by_family = project.json(&["analyze", "gpu-summary", run, "--family", "--limit", "1000"]);
    let rows = |v: &Value| v["rows"].as_array().cloned().expect("rows");
    let sum = |v: &Value, field: &str| -> i64 {
        rows(v)
            .iter()
            .map(|r| r[field].as_i64().expect(field))
            .sum()
    };
    assert_eq!(by_family["by_family"], true);
    assert_eq!(by_family["grand_total"], by_name["grand_total"]);
    assert_eq!(sum(&by_family, "total"), sum(&by_name, "total"));
    assert_eq!(sum(&by_family, "count"), sum(&by_name, "count"));
    assert_eq!(
        sum(&by_family, "variants") as u64,
        by_name["total"].as_u64().expect("names")
    );
    assert_eq!(by_name["families"], by_family["total"]);
    assert!(
        by_family["total"].as_u64().expect("families") * 10 < by_name["total"].as_u64().expect("n"),
        "{by_family}"
    );
    // Family names carry no template arguments or parameter lists.
    for r in rows(&by_family) {
        let name = r["name"].as_str().expect("name");
        assert!(!name.contains('<') && !name.ends_with(')'), "{name}");
    }
}
