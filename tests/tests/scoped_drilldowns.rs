//! Callers, callees and example stacks scoped to a phase or a window,
//! through the real binary, against a walker written here over the Kineto
//! JSON (each host slice's parent is the innermost slice enclosing it on
//! its thread), and against the unscoped drill-downs (a window over the
//! whole trace must change nothing, for slices and for timed samples).

use std::collections::BTreeMap;

use flameox_tests::{NOT_HOST_CATEGORIES as NOT_HOST, Project, corpus_json, micros_to_ns};
use serde_json::Value;

const TRACE: &str = "kineto/param_dlrm_8rank/worker0_step_12.1694128201545.pt.trace.json";
const STEP: &str = "ProfilerStep#10";
const FRAME: &str = "aten::copy_";

struct Slice {
    name: String,
    start: i64,
    end: i64,
    parent: Option<usize>,
}

/// Host slices with their parents: per thread, in start order (longer
/// first on a tie), each one's parent is the innermost open slice that
/// encloses it.
fn host_slices(doc: &Value) -> Vec<Slice> {
    let mut by_thread: BTreeMap<(i64, i64), Vec<Slice>> = BTreeMap::new();
    for e in doc["traceEvents"].as_array().expect("events") {
        let cat = e["cat"].as_str().unwrap_or("").to_lowercase();
        if e["ph"] != "X" || NOT_HOST.contains(&cat.as_str()) {
            continue;
        }
        let start = micros_to_ns(&e["ts"]);
        let end = start + micros_to_ns(&e["dur"]);
        if end <= start {
            continue;
        }
        by_thread
            .entry((
                e["pid"].as_i64().unwrap_or(0),
                e["tid"].as_i64().unwrap_or(0),
            ))
            .or_default()
            .push(Slice {
                name: e["name"].as_str().unwrap_or("").to_owned(),
                start,
                end,
                parent: None,
            });
    }
    let mut out = Vec::new();
    for (_, mut slices) in by_thread {
        slices.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
        let base = out.len();
        let mut open: Vec<usize> = Vec::new();
        for (i, mut s) in slices.into_iter().enumerate() {
            while let Some(&top) = open.last() {
                let t: &Slice = &out[base + top];
                if t.end >= s.end && t.start <= s.start {
                    break;
                }
                open.pop();
            }
            s.parent = open.last().map(|&p| base + p);
            open.push(i);
            out.push(s);
        }
    }
    out
}

/// name → (summed ns, slices).
type Sums = BTreeMap<String, (i64, i64)>;

fn add(sums: &mut Sums, name: &str, ns: i64) {
    let slot = sums.entry(name.to_owned()).or_default();
    slot.0 += ns;
    slot.1 += 1;
}

/// The answer's rows as name → (weight, count).
fn rows(answer: &Value) -> Sums {
    let mut out = Sums::new();
    for r in answer["rows"].as_array().expect("rows") {
        let slot = out
            .entry(r["function"].as_str().expect("function").to_owned())
            .or_default();
        slot.0 += r["weight"].as_i64().expect("weight");
        slot.1 += r["count"].as_i64().expect("count");
    }
    out
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn callers_callees_and_stacks_in_a_phase_match_the_slices_of_the_file() {
    let doc = corpus_json(TRACE);
    let slices = host_slices(&doc);
    let step = slices.iter().find(|s| s.name == STEP).expect("the step");
    let (from, to) = (step.start, step.end);
    let mut callers = Sums::new();
    let mut callees = Sums::new();
    let mut inclusive = 0;
    for (i, s) in slices.iter().enumerate() {
        if s.name != FRAME || s.start < from || s.start >= to {
            continue;
        }
        inclusive += s.end - s.start;
        if let Some(p) = s.parent {
            add(&mut callers, &slices[p].name, s.end - s.start);
        }
        for c in slices.iter().filter(|c| c.parent == Some(i)) {
            add(&mut callees, &c.name, c.end - c.start);
        }
    }
    assert!(callers.len() > 1 && !callees.is_empty(), "{callers:?}");

    let project = Project::new();
    let run = project.import_corpus(TRACE);
    let page = ["--phase", STEP, "--limit", "1000"];
    let got = project.json(&[&["stacks", "callers", &run, FRAME][..], &page[..]].concat());
    assert_eq!(got["phase"]["start_ns"].as_i64(), Some(from), "{got}");
    assert_eq!(got["phase"]["end_ns"].as_i64(), Some(to));
    assert!(got["window_rule"].as_str().is_some(), "{got}");
    assert_eq!(rows(&got), callers);
    let got = project.json(&[&["stacks", "callees", &run, FRAME][..], &page[..]].concat());
    assert_eq!(rows(&got), callees);

    // Every stack through the frame once: their weights sum to its time.
    let got = project.json(&[&["stacks", "examples", &run, FRAME][..], &page[..]].concat());
    let stacks = got["stacks"].as_array().expect("stacks");
    assert!(!stacks.is_empty());
    let mut summed = 0;
    for s in stacks {
        let frames: Vec<&str> = s["frames"]
            .as_array()
            .expect("frames")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        // (The backward pass runs on its own thread, in the step's time
        // but not under the step's slice.)
        assert!(frames.contains(&FRAME), "{frames:?}");
        summed += s["weight"].as_i64().expect("weight");
    }
    assert_eq!(got["total"].as_u64(), Some(stacks.len() as u64));
    assert_eq!(summed, inclusive);

    // The phase is a window: the same rows as the explicit one.
    let (s, e) = (from.to_string(), to.to_string());
    let windowed = project.json(&[
        "stacks",
        "callers",
        &run,
        FRAME,
        "--start-ns",
        &s,
        "--end-ns",
        &e,
        "--limit",
        "1000",
    ]);
    assert_eq!(rows(&windowed), callers);
    assert_eq!(windowed["window_ns"][0].as_i64(), Some(from));
}

/// A window over the whole trace answers what the unscoped call answers:
/// slices (rebuilt from events) against the `call_edges` reduction, and
/// timed CPU samples against the same reduction.
#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn a_window_over_the_whole_trace_changes_no_drill_down() {
    let project = Project::new();
    for (rel, frame) in [(TRACE, FRAME), ("stacks/node20_work.cpuprofile", "fib")] {
        let run = project.import_corpus(rel);
        let wide = ["--start-ns", "0", "--end-ns", "9000000000000000000"];
        for direction in ["callers", "callees"] {
            let whole = project.json(&["stacks", direction, &run, frame, "--limit", "1000"]);
            let windowed = project.json(
                &[
                    &["stacks", direction, &run, frame, "--limit", "1000"][..],
                    &wide[..],
                ]
                .concat(),
            );
            assert!(!rows(&whole).is_empty(), "{rel} {direction}");
            assert_eq!(rows(&windowed), rows(&whole), "{rel} {direction}");
        }
        let whole = project.json(&["stacks", "examples", &run, frame, "--limit", "1000"]);
        let windowed = project.json(
            &[
                &["stacks", "examples", &run, frame, "--limit", "1000"][..],
                &wide[..],
            ]
            .concat(),
        );
        assert_eq!(windowed["stacks"], whole["stacks"], "{rel}");
    }
    // One end of a window alone is refused, as is a phase with a window.
    let run = project.import_corpus(TRACE);
    project.json_err(
        &["stacks", "callers", &run, FRAME, "--start-ns", "1"],
        "INVALID_ARGUMENTS",
        2,
    );
    project.json_err(
        &[
            "stacks",
            "callees",
            &run,
            FRAME,
            "--phase",
            STEP,
            "--start-ns",
            "1",
            "--end-ns",
            "2",
        ],
        "INVALID_ARGUMENTS",
        2,
    );
}
