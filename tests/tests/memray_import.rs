//! memray captures (issue: allocations with native and Python stacks →
//! `analyze_memory` and memory flame graphs): a capture imports by
//! content as `memray`, and what `analyze memory` answers — peak heap,
//! bytes and allocations still allocated at the end (memray's leaks),
//! total allocated, the top site of each view — equals what memray
//! 1.20.0's own Python API (`memray.FileReader`, run from the profilers
//! virtualenv CI installs) says of the same file. The allocation sites are
//! stacks under `memory.*` metrics, so hotspots, callers and flame graphs
//! read them unchanged. A cut capture ends in a typed answer.

use std::path::Path;
use std::process::Command;

use flameox_tests::{Project, corpus, profilers_python};
use serde_json::Value;

/// memray's own reading of a capture: metadata, the high-water-mark and
/// leak records (the largest site of each by its innermost Python frame,
/// as `memray summary` groups), and the allocated total over every
/// allocating record (frees: pymalloc_free, free, munmap).
const ORACLE: &str = r#"
import collections, json, sys
import memray
r = memray.FileReader(sys.argv[1])
m = r.metadata
leaked = list(r.get_leaked_allocation_records())
peak = list(r.get_high_watermark_allocation_records())
def top(records):
    by = collections.Counter()
    for x in records:
        st = x.stack_trace()
        by[tuple(st[0][:3]) if st else None] += x.size
    frame, size = by.most_common(1)[0]
    return {"function": frame[0], "file": frame[1], "line": frame[2], "bytes": size}
out = {
    "peak": m.peak_memory,
    "leaked_bytes": sum(x.size for x in leaked),
    "leaked_allocations": sum(x.n_allocations for x in leaked),
    "peak_allocations": sum(x.n_allocations for x in peak),
    "top_leaked": top(leaked),
    "top_peak": top(peak),
    "threads": sorted({x.thread_name for x in peak + leaked}),
}
if m.file_format.name == "ALL_ALLOCATIONS":
    allocs = [x for x in r.get_allocation_records() if int(x.allocator) not in (1, 5, 15)]
    out["allocated_bytes"] = sum(x.size for x in allocs)
    out["allocations"] = len(allocs)
print(json.dumps(out))
"#;

fn oracle(bin: &Path, capture: &Path) -> Value {
    let out = Command::new(bin.join("python3"))
        .args(["-c", ORACLE])
        .arg(capture)
        .output()
        .expect("run memray's reader");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("oracle JSON")
}

/// The heap section's one profile and its lists.
fn heap(memory: &Value) -> (&Value, &Value, &Value) {
    let heap = &memory["heap"];
    let totals = heap["totals"].as_array().expect("totals");
    assert_eq!(totals.len(), 1, "{heap}");
    (&totals[0], &heap["leaked"], &heap["at_peak"])
}

fn assert_top_site(list: &Value, want: &Value) {
    let top = &list["sites"][0];
    assert_eq!(top["function"], want["function"], "{list}");
    assert_eq!(top["file"], want["file"], "{list}");
    assert_eq!(top["line"], want["line"], "{list}");
    assert_eq!(top["bytes"], want["bytes"], "{list}");
    let total = list["total_bytes"].as_f64().expect("total");
    let share = want["bytes"].as_f64().expect("bytes") * 100.0 / total;
    assert!((top["percent"].as_f64().expect("percent") - share).abs() < 1e-9);
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_native_capture_answers_peak_leaks_and_sites_as_memray_does() {
    let Some(bin) = profilers_python(&["memray"]) else {
        return;
    };
    let file = corpus().join("misc/memray_workload_native.bin");
    let want = oracle(&bin, &file);
    let project = Project::new();
    let imported = project.json(&["import", file.to_str().expect("utf-8 path")]);
    assert_eq!(imported["kind"], "memray", "{imported}");

    let memory = project.json(&["analyze", "memory", "latest"]);
    let (totals, leaked, at_peak) = heap(&memory);
    assert_eq!(totals["peak_bytes"], want["peak"], "{totals}");
    assert_eq!(totals["peak_allocations"], want["peak_allocations"]);
    assert_eq!(totals["leaked_bytes"], want["leaked_bytes"]);
    assert_eq!(totals["leaked_allocations"], want["leaked_allocations"]);
    assert_eq!(totals["allocated_bytes"], want["allocated_bytes"]);
    assert_eq!(totals["allocations"], want["allocations"]);
    assert!(totals["peak_ns"].is_i64(), "the peak has a time: {totals}");
    assert_eq!(leaked["total_bytes"], want["leaked_bytes"]);
    assert_eq!(at_peak["total_bytes"], want["peak"]);
    assert_top_site(leaked, &want["top_leaked"]);
    assert_top_site(at_peak, &want["top_peak"]);
    // RSS and heap over time, in bytes; the heap series reaches the peak
    // and ends at what was still allocated.
    let series = memory["series"].as_array().expect("series");
    let named = |n: &str| series.iter().find(|s| s["series"] == n).expect(n);
    assert_eq!(named("mem.heap")["peak"].as_f64(), want["peak"].as_f64());
    assert_eq!(
        named("mem.heap")["last"].as_f64(),
        want["leaked_bytes"].as_f64()
    );
    assert_eq!(named("mem.rss")["unit"], "bytes");
    // A person reads the headline first: peak, then leaks.
    let text = project.run(&["analyze", "memory", "latest"]);
    let text = String::from_utf8_lossy(&text.stdout);
    let headline = text
        .lines()
        .find(|l| l.starts_with("heap: "))
        .expect("headline");
    let (peak_at, leaks_at) = (headline.find("peak heap"), headline.find("(leaks)"));
    assert!(peak_at.is_some() && peak_at < leaks_at, "{headline}");

    // The sites are stacks: hotspots total the leaks, callers walk up from
    // the top leak's Python frame, a flame graph draws them.
    let hot = project.json(&[
        "analyze",
        "hotspots",
        "latest",
        "--metric",
        "memory.inuse_bytes",
        "--flamegraph",
        project.path().join("leaks.svg").to_str().expect("utf-8"),
    ]);
    assert_eq!(hot["total_self"], want["leaked_bytes"], "{hot}");
    let svg = std::fs::read_to_string(project.path().join("leaks.svg")).expect("svg");
    let top = want["top_leaked"]["function"].as_str().expect("function");
    let escaped = top.replace('<', "&lt;").replace('>', "&gt;");
    assert!(svg.contains(&escaped), "the flame graph names {top}");
    let callers = project.json(&[
        "stacks",
        "callers",
        "latest",
        top,
        "--metric",
        "memory.inuse_bytes",
    ]);
    let weight: i64 = callers["rows"]
        .as_array()
        .expect("callers")
        .iter()
        .filter_map(|r| r["weight"].as_i64())
        .sum();
    assert!(weight >= want["top_leaked"]["bytes"].as_i64().expect("bytes"));
    // Named threads are the samples' thread identities.
    let workers: Vec<&str> = want["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .filter_map(Value::as_str)
        .filter(|n| n.starts_with("worker"))
        .collect();
    assert!(!workers.is_empty(), "{want}");
    for name in workers {
        let scoped = project.json(&[
            "analyze",
            "hotspots",
            "latest",
            "--metric",
            "memory.alloc_bytes",
            "--thread",
            name,
        ]);
        assert!(
            scoped["total_self"].as_i64().unwrap_or(0) > 0,
            "{name}: {scoped}"
        );
    }
}

#[test]
fn an_aggregated_capture_answers_peak_and_leaks_without_an_allocated_total() {
    let Some(bin) = profilers_python(&["memray"]) else {
        return;
    };
    let project = Project::new();
    let script = project.path().join("work.py");
    std::fs::write(
        &script,
        "import threading\nkept = []\ndef grow(n):\n    return [bytearray(4096) for _ in range(n)]\n\
         def worker():\n    kept.append(grow(50))\n\
         t = threading.Thread(target=worker, name='filler')\nt.start(); t.join()\n\
         tmp = grow(300)\ndel tmp\nkept.append(bytearray(1 << 20))\n",
    )
    .expect("script");
    let capture = project.path().join("agg.bin");
    let ran = Command::new(bin.join("python3"))
        .args(["-m", "memray", "run", "--aggregate", "-q", "-o"])
        .arg(&capture)
        .arg(&script)
        .current_dir(project.path())
        .output()
        .expect("memray run");
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let want = oracle(&bin, &capture);
    let imported = project.json(&["import", capture.to_str().expect("utf-8")]);
    assert_eq!(imported["kind"], "memray", "{imported}");
    let text = imported.to_string();
    assert!(text.contains("no_allocation_history"), "{imported}");

    let memory = project.json(&["analyze", "memory", "latest"]);
    let (totals, leaked, at_peak) = heap(&memory);
    assert_eq!(totals["peak_bytes"], want["peak"], "{totals}");
    assert_eq!(totals["peak_allocations"], want["peak_allocations"]);
    assert_eq!(totals["leaked_bytes"], want["leaked_bytes"]);
    assert_eq!(totals["leaked_allocations"], want["leaked_allocations"]);
    assert!(totals["allocated_bytes"].is_null(), "{totals}");
    assert_top_site(leaked, &want["top_leaked"]);
    assert_top_site(at_peak, &want["top_peak"]);
    let codes: Vec<&str> = memory["limitations"]
        .as_array()
        .expect("limitations")
        .iter()
        .filter_map(|l| l["code"].as_str())
        .collect();
    assert!(codes.contains(&"heap_allocated_total_missing"), "{codes:?}");
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_cut_capture_ends_in_a_typed_answer() {
    let bytes = std::fs::read(corpus().join("misc/memray_workload_native.bin")).expect("corpus");
    let project = Project::new();
    // Cut inside lz4's last block: the records of the blocks before it
    // stand, with a limitation.
    let cut = project.path().join("cut.bin");
    std::fs::write(&cut, &bytes[..bytes.len() - 1000]).expect("write");
    let imported = project.json(&["import", cut.to_str().expect("utf-8")]);
    assert_eq!(imported["kind"], "memray", "{imported}");
    let text = imported.to_string();
    assert!(text.contains("truncated_input"), "{imported}");
    let memory = project.json(&["analyze", "memory", "latest"]);
    let (totals, _, _) = heap(&memory);
    let peak = totals["peak_bytes"].as_i64().expect("peak");
    assert!(peak > 0, "{totals}");
    // Cut inside the first block: no record decodes, so nothing is
    // published and the error says why.
    let before = project.head();
    let half = project.path().join("half.bin");
    std::fs::write(&half, &bytes[..bytes.len() / 2]).expect("write");
    let err = project.json_err(
        &["import", half.to_str().expect("utf-8")],
        "ARTIFACT_PARSE_FAILED",
        5,
    );
    assert!(
        err["message"]
            .as_str()
            .is_some_and(|m| m.contains("truncated")),
        "{err}"
    );
    assert_eq!(project.head(), before);
    // The first bytes only (inside the header): refused, nothing published.
    let head = project.path().join("head.bin");
    std::fs::write(&head, &bytes[..24]).expect("write");
    project.json_err(
        &["import", head.to_str().expect("utf-8")],
        "ARTIFACT_PARSE_FAILED",
        5,
    );
    assert_eq!(project.head(), before);
}
