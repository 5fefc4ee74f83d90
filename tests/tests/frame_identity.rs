//! Frame identity and recursion against oracles computed here from the
//! raw files: a before/after pair of viztracer traces of one program whose
//! edit shifts every line and renames the file compares function by
//! function (nothing "removed" and "added"), with the whole-run totals
//! first and call counts on both sides; a recursive `fib` counts each span
//! of time once in its instances and its `fib → fib` edge; a py-spy profile
//! ranks functions, not lines.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Command;

use crate::support::mcp::Session;
use flameox_tests::{Project, corpus, corpus_json, micros_to_ns, profilers_bin};
use serde_json::{Value, json};

/// The program before the edit: a heavy `normalize`, an unchanged `fib`.
const BEFORE: &str = "\
def normalize(rows):
    total = 0
    for r in rows:
        total += sum(x * x for x in r)
    return total

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def main(scale):
    rows = [[i, i + 1, i + 2] for i in range(2000)]
    for _ in range(5):
        normalize(rows * scale)
    for _ in range(3):
        fib(12)

main(1)
";

/// After: two lines added on top (every function moves down) and
/// `normalize` called on four times the rows (a change that outgrows the
/// ~2× speed difference two recordings can show on a loaded 2-core
/// machine, so the comparison's first row does not depend on which
/// recording was slowed); saved under another file name.
fn after() -> String {
    format!(
        "\"\"\"After the edit.\"\"\"\nimport os\n{}",
        BEFORE.replace("main(1)\n", "main(4)\n")
    )
}

/// Records `source` saved as `name` with viztracer into `out`.
fn record(bin: &Path, dir: &Path, name: &str, source: &str, out: &str) -> std::path::PathBuf {
    let script = dir.join(name);
    std::fs::write(&script, source).expect("write script");
    let trace = dir.join(out);
    let status = Command::new(bin.join("viztracer"))
        .args(["--quiet", "--ignore_c_function", "-o"])
        .arg(&trace)
        .arg(&script)
        .current_dir(dir)
        .status()
        .expect("run viztracer");
    assert!(status.success(), "viztracer failed on {name}");
    trace
}

/// One slice: start, duration, function.
type Slice = (i64, i64, String);

/// Per function (the name before ` (`): summed self time (duration minus
/// children, viztracer slices nest properly) and slice count, and the sum
/// of every slice's self time.
fn oracle(trace: &Path) -> (BTreeMap<String, (i64, i64)>, i64) {
    let doc: Value =
        serde_json::from_slice(&std::fs::read(trace).expect("read trace")).expect("trace JSON");
    let mut per_thread: BTreeMap<(i64, i64), Vec<Slice>> = BTreeMap::new();
    for e in doc["traceEvents"].as_array().expect("events") {
        if e["ph"] != "X" {
            continue;
        }
        let ts = micros_to_ns(&e["ts"]);
        let dur = micros_to_ns(&e["dur"]);
        let name = e["name"].as_str().unwrap_or("");
        let function = name.split(" (").next().unwrap_or(name).to_owned();
        per_thread
            .entry((
                e["pid"].as_i64().unwrap_or(0),
                e["tid"].as_i64().unwrap_or(0),
            ))
            .or_default()
            .push((ts, dur, function));
    }
    let mut out: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    let mut whole = 0;
    for slices in per_thread.values_mut() {
        slices.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let mut selfs: Vec<i64> = slices.iter().map(|s| s.1).collect();
        let mut stack: Vec<usize> = Vec::new();
        for i in 0..slices.len() {
            while stack
                .last()
                .is_some_and(|&t| slices[t].0 + slices[t].1 <= slices[i].0)
            {
                stack.pop();
            }
            if let Some(&parent) = stack.last() {
                selfs[parent] -= slices[i].1;
            }
            stack.push(i);
        }
        for (s, own) in slices.iter().zip(selfs) {
            let e = out.entry(s.2.clone()).or_default();
            e.0 += own;
            e.1 += 1;
            whole += own;
        }
    }
    (out, whole)
}

#[cfg_attr(
    profilers_absent,
    ignore = "needs the tools .ci/run installs (py-spy, viztracer, pytest, coverage, moto[server]): set FLAMEOX_PROFILERS_VENV"
)]
#[test]
fn a_moved_and_renamed_function_compares_as_itself() {
    let Some(bin) = profilers_bin(&["viztracer"]) else {
        return;
    };
    let project = Project::new();
    let dir = project.path();
    let before = record(&bin, dir, "workload.py", BEFORE, "before.json");
    let after = record(&bin, dir, "workload_v2.py", &after(), "after.json");
    let base = project.json(&["import", before.to_str().expect("utf-8")]);
    let target = project.json(&["import", after.to_str().expect("utf-8")]);
    let (base_run, target_run) = (
        base["run_id"].as_str().expect("run").to_owned(),
        target["run_id"].as_str().expect("run").to_owned(),
    );
    let r = project.json(&[
        "analyze",
        "compare-hotspots",
        &target_run,
        &base_run,
        "--limit",
        "50",
    ]);
    let (want_before, whole_before) = oracle(&before);
    let (want_after, whole_after) = oracle(&after);
    // The whole first.
    assert_eq!(
        r["whole"]["base_total_self"].as_i64(),
        Some(whole_before),
        "{r}"
    );
    assert_eq!(
        r["whole"]["target_total_self"].as_i64(),
        Some(whole_after),
        "{r}"
    );
    assert_eq!(r["matched_by"], "function_and_file");
    // Every function is on both sides: nothing removed and re-added.
    assert!(r["matched_share_of_base"].as_f64() >= Some(0.99), "{r}");
    assert!(r["matched_share_of_target"].as_f64() >= Some(0.99), "{r}");
    assert!(r["warning"].is_null(), "{r}");
    let rows = r["rows"].as_array().expect("rows");
    for row in rows {
        assert_ne!(row["matched"], "base_only", "{row}");
        assert_ne!(row["matched"], "target_only", "{row}");
    }
    let row = |f: &str| {
        rows.iter()
            .find(|r| {
                r["function"]
                    .as_str()
                    .is_some_and(|n| n.starts_with(&format!("{f} (")))
            })
            .unwrap_or_else(|| panic!("{f} missing: {r}"))
    };
    // `normalize` grew most: four times the rows. Its values and counts equal
    // the oracle's on both sides; the renamed file matched by name.
    let normalize = row("normalize");
    assert_eq!(rows[0]["function"], normalize["function"], "{r}");
    assert_eq!(normalize["matched"], "function_only", "{normalize}");
    assert_eq!(
        normalize["base_self"].as_i64(),
        Some(want_before["normalize"].0)
    );
    assert_eq!(
        normalize["target_self"].as_i64(),
        Some(want_after["normalize"].0)
    );
    assert_eq!(
        normalize["base_count"].as_i64(),
        Some(want_before["normalize"].1)
    );
    assert_eq!(
        normalize["target_count"].as_i64(),
        Some(want_after["normalize"].1)
    );
    assert!(normalize["delta_self"].as_i64() > Some(0), "{normalize}");
    // `fib` is the same calls on both sides.
    let fib = row("fib");
    assert_eq!(fib["base_count"], fib["target_count"], "{fib}");
    assert_eq!(fib["base_count"].as_i64(), Some(want_before["fib"].1));
}

/// "What changed between these two runs of my program?" asked as an agent
/// asks it, over the stdio server: two imports and one comparison (within
/// 5 calls and 20 KB), whose text headline gives the whole-run change and
/// whose first row is the function that really changed.
#[cfg_attr(
    profilers_absent,
    ignore = "needs the tools .ci/run installs (py-spy, viztracer, pytest, coverage, moto[server]): set FLAMEOX_PROFILERS_VENV"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_asks_what_changed_between_two_runs() {
    let Some(bin) = profilers_bin(&["viztracer"]) else {
        return;
    };
    let project = tempfile::tempdir().expect("project");
    let dir = project.path().canonicalize().expect("canonical project");
    let before = record(&bin, &dir, "workload.py", BEFORE, "before.json");
    let after = record(&bin, &dir, "workload_v2.py", &after(), "after.json");
    let (_, whole_before) = oracle(&before);
    let (_, whole_after) = oracle(&after);
    let mut s = Session::start(&dir, &["--init"]).await;
    let base = s
        .ok("import_artifact", json!({ "path": "before.json" }))
        .await;
    let target = s
        .ok("import_artifact", json!({ "path": "after.json" }))
        .await;
    let r = s
        .ok(
            "compare_hotspots",
            json!({ "target": target["run_id"], "base": base["run_id"], "limit": 10 }),
        )
        .await;
    assert_eq!(r["whole"]["base_total_self"].as_i64(), Some(whole_before));
    assert_eq!(r["whole"]["target_total_self"].as_i64(), Some(whole_after));
    assert!(
        r["rows"][0]["function"]
            .as_str()
            .is_some_and(|f| f.starts_with("normalize (")),
        "{r}"
    );
    let (_, _, transcript) = s.close().await;
    let bytes: usize = transcript.iter().map(String::len).sum();
    assert!(transcript.len() <= 5, "{} calls", transcript.len());
    assert!(bytes <= 20 * 1024, "{bytes} bytes of results");
    let answer: Value = serde_json::from_str(&transcript[2]).expect("result JSON");
    let headline = answer["content"][0]["text"].as_str().expect("text");
    let ms = |ns: i64| ns as f64 / 1e6;
    let ratio = (whole_after as f64 / whole_before as f64 - 1.0) * 100.0;
    assert!(headline.contains("whole "), "{headline}");
    assert!(
        headline.contains(&format!("({ratio:+.1} %)")),
        "{headline}: whole {} ms → {} ms",
        ms(whole_before),
        ms(whole_after)
    );
    assert!(
        headline.contains("matched by function and file"),
        "{headline}"
    );
}

#[cfg_attr(
    profilers_absent,
    ignore = "needs the tools .ci/run installs (py-spy, viztracer, pytest, coverage, moto[server]): set FLAMEOX_PROFILERS_VENV"
)]
#[test]
fn a_recursion_counts_each_span_of_time_once() {
    let Some(bin) = profilers_bin(&["viztracer"]) else {
        return;
    };
    let project = Project::new();
    let trace = record(
        &bin,
        project.path(),
        "fibrec.py",
        "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n\nfor _ in range(3):\n    fib(12)\n",
        "fib.json",
    );
    let run = project.json(&["import", trace.to_str().expect("utf-8")])["run_id"]
        .as_str()
        .expect("run")
        .to_owned();
    // Oracle: the outermost fib calls (not inside another fib).
    let doc: Value = serde_json::from_slice(&std::fs::read(&trace).expect("read")).expect("json");
    let mut fibs: Vec<(i64, i64)> = doc["traceEvents"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"].as_str().is_some_and(|n| n.starts_with("fib (")))
        .map(|e| (micros_to_ns(&e["ts"]), micros_to_ns(&e["dur"])))
        .collect();
    fibs.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    let (mut outer, mut reach, mut outermost) = (0i64, i64::MIN, 0);
    for (ts, dur) in &fibs {
        if *ts >= reach {
            outer += dur;
            outermost += 1;
            reach = ts + dur;
        }
    }
    assert_eq!(outermost, 3);
    assert!(!fibs.is_empty(), "fib slices");
    // `find` matches the file name too (`<module> (…/fibrec.py:1)`).
    let found = project.json(&["stacks", "find", &run, "fib ("]);
    let key = found["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| {
            r["function"]
                .as_str()
                .is_some_and(|f| f.starts_with("fib ("))
        })
        .and_then(|r| r["frame"].as_str())
        .expect("the fib frame")
        .to_owned();
    let instances = project.json(&["stacks", "instances", &run, &key]);
    assert_eq!(instances["total"].as_u64(), Some(fibs.len() as u64));
    assert_eq!(
        instances["total_dur_ns"].as_i64(),
        Some(outer),
        "{instances}"
    );
    assert_eq!(
        instances["nested"].as_u64(),
        Some((fibs.len() - outermost) as u64)
    );
    // fib → fib weighs each stack once: never more than fib's own time.
    let callers = project.json(&["stacks", "callers", &run, &key, "--limit", "10"]);
    let fib_fib = callers["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["frame"] == key)
        .expect("fib calls fib");
    assert!(fib_fib["weight"].as_i64() <= Some(outer), "{callers}");
    let text = project.run(&["stacks", "instances", &run, &key]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("counted once"), "{text}");
    // The bare function name is enough: one file defines `fib`.
    let by_name = project.json(&["stacks", "callers", &run, "fib", "--limit", "10"]);
    assert_eq!(by_name["rows"], callers["rows"], "{by_name}");
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_sampled_profile_ranks_functions_not_lines() {
    let path = "stacks/pyspy_workload.speedscope.json";
    let doc = corpus_json(path);
    // Oracle: self samples (one per sample; the weights are seconds) per
    // (function, file) over every profile, the leaf last in each stack.
    let frames = doc["shared"]["frames"].as_array().expect("frames");
    let mut per_function: HashMap<(String, String), i64> = HashMap::new();
    for profile in doc["profiles"].as_array().expect("profiles") {
        for stack in profile["samples"].as_array().expect("samples") {
            let Some(leaf) = stack
                .as_array()
                .and_then(|s| s.last())
                .and_then(Value::as_u64)
            else {
                continue;
            };
            let f = &frames[leaf as usize];
            let key = (
                f["name"].as_str().unwrap_or("").to_owned(),
                f["file"].as_str().unwrap_or("").to_owned(),
            );
            *per_function.entry(key).or_default() += 1;
        }
    }
    let best = per_function.values().copied().max().expect("samples");
    let project = Project::new();
    let run = project.json(&["import", corpus().join(path).to_str().expect("utf-8")])["run_id"]
        .as_str()
        .expect("run")
        .to_owned();
    let hot = project.json(&["analyze", "hotspots", &run, "--metric", "cpu.samples"]);
    let rows = hot["rows"].as_array().expect("rows");
    assert_eq!(rows[0]["self_value"].as_i64(), Some(best), "{hot}");
    let mut seen = std::collections::BTreeSet::new();
    for r in rows {
        let key = (r["function"].clone(), r["file"].clone());
        assert!(
            seen.insert(format!("{key:?}")),
            "a function listed twice: {r}"
        );
    }
    // Per line on request: at least as many rows.
    let lines = project.json(&[
        "analyze",
        "hotspots",
        &run,
        "--metric",
        "cpu.samples",
        "--by-line",
    ]);
    assert!(lines["total"].as_u64() >= hot["total"].as_u64(), "{lines}");
}
