//! Every Chrome/Kineto JSON trace in the shared corpus imports through the
//! real binary, and its hotspots agree with an independent in-memory model
//! written here (not the production code path): per-thread self times sum to
//! the time the thread's slices cover, and the top-10 self times match.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};

use flameox_tests::{Project, corpus};
use serde::Deserialize;
use serde_json::value::RawValue;

fn chrome_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["chrome_json", "kineto", "kineto/param_dlrm_8rank"] {
        for entry in std::fs::read_dir(corpus().join(dir)).expect("corpus folder") {
            let path = entry.expect("entry").path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if path.is_file() && (name.ends_with(".json") || name.ends_with(".json.gz")) {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(
        files.len() >= 25,
        "expected the corpus's Chrome/Kineto files, found {}",
        files.len()
    );
    files
}

fn read_all(path: &Path) -> Vec<u8> {
    let raw = std::fs::read(path).unwrap();
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .unwrap();
        out
    } else {
        raw
    }
}

#[derive(Deserialize)]
struct Wrapped<'a> {
    #[serde(rename = "traceEvents", borrow)]
    events: Vec<&'a RawValue>,
}

#[derive(Deserialize)]
struct Ev<'a> {
    #[serde(borrow)]
    ph: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    cat: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pid: Option<&'a RawValue>,
    #[serde(borrow)]
    tid: Option<&'a RawValue>,
    #[serde(borrow)]
    ts: Option<&'a RawValue>,
    #[serde(borrow)]
    dur: Option<&'a RawValue>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    id2: Option<&'a RawValue>,
}

/// Exact decimal microseconds → ns (this test's own parser).
fn us_to_ns(raw: &RawValue) -> Option<i64> {
    let text = raw.get().trim().trim_matches('"');
    if text.contains(['e', 'E']) {
        return text
            .parse::<f64>()
            .ok()
            .map(|v| (v * 1000.0).round() as i64);
    }
    let (neg, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    let mut ns: i128 = int.parse::<i128>().ok()? * 1000;
    let digits: Vec<u32> = frac.chars().filter_map(|c| c.to_digit(10)).collect();
    for (i, d) in digits.iter().take(3).enumerate() {
        ns += i128::from(*d) * 10i128.pow(2 - i as u32);
    }
    if digits.len() > 3 && digits[3] >= 5 {
        ns += 1;
    }
    let ns = if neg { -ns } else { ns };
    i64::try_from(ns).ok()
}

struct Slice {
    key: (String, String),
    ts: i64,
    dur: i64,
    order: usize,
}

/// The model: slices per track, reconstructed from the raw events.
struct Model {
    tracks: BTreeMap<String, Vec<Slice>>,
    /// track label → (pid, tid) when both are integers (thread tracks).
    thread_ids: HashMap<String, (i64, i64)>,
}

fn build_model(bytes: &[u8]) -> Model {
    let events: Vec<&RawValue> = if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        serde_json::from_slice(bytes).unwrap_or_default()
    } else {
        serde_json::from_slice::<Wrapped>(bytes)
            .map(|w| w.events)
            .unwrap_or_default()
    };
    let mut model = Model {
        tracks: BTreeMap::new(),
        thread_ids: HashMap::new(),
    };
    let mut open: HashMap<String, Vec<(String, String, i64, usize)>> = HashMap::new();
    for (order, raw) in events.iter().enumerate() {
        let Ok(ev) = serde_json::from_str::<Ev>(raw.get()) else {
            continue;
        };
        let ph = ev.ph.as_deref().unwrap_or("");
        let name = ev.name.as_deref().unwrap_or("").to_owned();
        let cat = ev.cat.as_deref().unwrap_or("").to_owned();
        let pid = ev
            .pid
            .map(|r| r.get().trim_matches('"').to_owned())
            .unwrap_or_default();
        let tid = ev
            .tid
            .map(|r| r.get().trim_matches('"').to_owned())
            .unwrap_or_default();
        let Some(ts) = ev.ts.and_then(us_to_ns) else {
            continue;
        };
        let thread = format!("thread:{pid}:{tid}");
        match ph {
            "X" => {
                let Some(dur) = ev.dur.and_then(us_to_ns) else {
                    continue;
                };
                // Kineto's own recording span is no work: not a frame.
                if cat == "Trace" && name.starts_with("PyTorch Profiler") {
                    continue;
                }
                if let (Ok(p), Ok(t)) = (pid.parse::<i64>(), tid.parse::<i64>()) {
                    model.thread_ids.insert(thread.clone(), (p, t));
                }
                model.tracks.entry(thread).or_default().push(Slice {
                    key: (name, cat),
                    ts,
                    dur: dur.max(0),
                    order,
                });
            }
            "B" => open.entry(thread).or_default().push((name, cat, ts, order)),
            "E" => {
                if let Some((n, c, start, o)) = open.get_mut(&thread).and_then(Vec::pop) {
                    if let (Ok(p), Ok(t)) = (pid.parse::<i64>(), tid.parse::<i64>()) {
                        model.thread_ids.insert(thread.clone(), (p, t));
                    }
                    model.tracks.entry(thread).or_default().push(Slice {
                        key: (n, c),
                        ts: start,
                        dur: (ts - start).max(0),
                        order: o,
                    });
                }
            }
            "b" | "e" => {
                let id = ev
                    .id
                    .or(ev.id2)
                    .map(|r| r.get().trim_matches('"').to_owned())
                    .unwrap_or_default();
                let track = format!("async:{pid}:{cat}:{id}");
                if ph == "b" {
                    open.entry(track).or_default().push((name, cat, ts, order));
                } else if let Some(stack) = open.get_mut(&track)
                    && let Some(pos) = stack.iter().rposition(|(n, ..)| *n == name)
                {
                    {
                        let (n, c, start, o) = stack.remove(pos);
                        model.tracks.entry(track).or_default().push(Slice {
                            key: (n, c),
                            ts: start,
                            dur: (ts - start).max(0),
                            order: o,
                        });
                    }
                }
            }
            _ => {}
        }
    }
    model
}

/// Self time per frame key on one track and whether nesting was proper.
/// A slice's self time is the time it *owns*: each instant belongs to the
/// latest-starting slice (in nesting order) still open then — for proper
/// nesting, its duration minus its children's. Computed here with a heap
/// over elementary intervals, not the product's stack sweep.
fn self_times(slices: &mut [Slice], totals: &mut HashMap<(String, String), i64>) -> (i64, bool) {
    use std::collections::BinaryHeap;
    slices.sort_by(|a, b| {
        a.ts.cmp(&b.ts)
            .then(b.dur.cmp(&a.dur))
            .then(a.order.cmp(&b.order))
    });
    // Proper nesting: no slice ends after the slice it starts inside.
    let mut proper = true;
    let mut stack: Vec<usize> = Vec::new();
    for i in 0..slices.len() {
        let ts = slices[i].ts;
        while stack
            .last()
            .is_some_and(|&top| slices[top].ts + slices[top].dur <= ts)
        {
            stack.pop();
        }
        if let Some(&parent) = stack.last()
            && ts + slices[i].dur > slices[parent].ts + slices[parent].dur
        {
            proper = false;
        }
        stack.push(i);
    }
    let mut selfs = vec![0i64; slices.len()];
    let mut bounds: Vec<i64> = slices.iter().flat_map(|s| [s.ts, s.ts + s.dur]).collect();
    bounds.sort_unstable();
    bounds.dedup();
    // Open slices by position in nesting order (the max is the owner).
    let mut open: BinaryHeap<usize> = BinaryHeap::new();
    let mut next = 0;
    for w in bounds.windows(2) {
        let (from, to) = (w[0], w[1]);
        while next < slices.len() && slices[next].ts <= from {
            open.push(next);
            next += 1;
        }
        while open
            .peek()
            .is_some_and(|&k| slices[k].ts + slices[k].dur <= from)
        {
            open.pop();
        }
        if let Some(&owner) = open.peek() {
            selfs[owner] += to - from;
        }
    }
    let mut sum = 0;
    for (slice, s) in slices.iter().zip(selfs) {
        sum += s;
        *totals.entry(slice.key.clone()).or_default() += s;
    }
    (sum, proper)
}

fn union_length(slices: &[Slice]) -> i64 {
    let mut spans: Vec<(i64, i64)> = slices.iter().map(|s| (s.ts, s.ts + s.dur)).collect();
    spans.sort();
    let (mut total, mut cur) = (0i64, None::<(i64, i64)>);
    for (a, b) in spans {
        match cur {
            Some((s, e)) if a <= e => cur = Some((s, e.max(b))),
            Some((s, e)) => {
                total += e - s;
                cur = Some((a, b));
            }
            None => cur = Some((a, b)),
        }
    }
    if let Some((s, e)) = cur {
        total += e - s;
    }
    total
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn corpus_traces_import_and_hotspots_match_an_independent_model() {
    let project = Project::new();
    for file in chrome_files() {
        let label = file.file_name().unwrap().to_string_lossy().to_string();
        let imported = project.json(&["import", file.to_str().unwrap()]);
        let run = imported["run_id"].as_str().unwrap().to_owned();
        let mut model = build_model(&read_all(&file));
        let mut totals: HashMap<(String, String), i64> = HashMap::new();
        let mut per_thread_checks = 0;
        let thread_ids = model.thread_ids.clone();
        let mut track_results = Vec::new();
        for (track, slices) in model.tracks.iter_mut() {
            let union = union_length(slices);
            let (sum, proper) = self_times(slices, &mut totals);
            track_results.push((track.clone(), union, sum, proper));
        }
        // Per thread: the product's self total for that thread = covered time.
        // Improperly nested tracks too: owned time still covers the union once.
        for (track, union, sum, _proper) in &track_results {
            let Some((pid, tid)) = thread_ids.get(track) else {
                continue;
            };
            if per_thread_checks >= 12 {
                continue;
            }
            assert_eq!(sum, union, "{label} {track}: model self sum vs union");
            let same_tid_elsewhere = thread_ids
                .iter()
                .filter(|(t, (_, x))| *x == *tid && *t != track)
                .count();
            let mut args = vec![
                "analyze".to_owned(),
                "hotspots".into(),
                run.clone(),
                format!("--thread={tid}"),
                "--limit".into(),
                "1".into(),
            ];
            if same_tid_elsewhere > 0 {
                args.push(format!("--process={pid}"));
            }
            let argv: Vec<&str> = args.iter().map(String::as_str).collect();
            let page = project.json(&argv);
            assert_eq!(
                page["total_self"].as_i64(),
                Some(*union),
                "{label} {track}: self total vs covered time"
            );
            per_thread_checks += 1;
        }
        // Top 10 by self: same values, and each named frame has the model's value.
        let page = project.json(&["analyze", "hotspots", &run, "--limit", "10"]);
        let rows = page["rows"].as_array().unwrap();
        let mut expected: Vec<i64> = totals.values().copied().collect();
        expected.sort_by(|a, b| b.cmp(a));
        expected.truncate(rows.len());
        let got: Vec<i64> = rows
            .iter()
            .map(|r| r["self_value"].as_i64().unwrap())
            .collect();
        assert_eq!(got, expected, "{label}: top self values");
        for row in rows {
            let key = (
                row["function"].as_str().unwrap().to_owned(),
                row["category"].as_str().unwrap_or("").to_owned(),
            );
            assert_eq!(
                totals.get(&key).copied(),
                row["self_value"].as_i64(),
                "{label}: {key:?}"
            );
        }
        assert!(!rows.is_empty(), "{label}: no hotspots");
    }
}
