//! Go execution traces: the corpus trace (Go 1.19.8, four worker
//! goroutines for about 4 s on GOMAXPROCS 2, CPU profiling on) imports as
//! `go_trace`, each goroutine a thread whose runs are `sched_slice` rows
//! on the cpu track of its P, so `threads` and the summary say where the
//! Ps went and `hotspots` reads the CPU samples. Checked against this
//! test's own walk over the bytes, which knows nothing of flameox: per P
//! batch, a goroutine runs from its `GoStart*` to the next event that
//! takes it off that P.

use std::collections::BTreeMap;

use flameox_tests::{Project, corpus};

/// Goroutine-stopping events of go1.19 (GoEnd, GoStop, GoSched,
/// GoPreempt, GoSleep, GoBlock*, GoSysBlock, GoBlockGC): they end the run
/// on the P whose batch holds them.
const STOPS: [u8; 14] = [15, 16, 17, 18, 19, 20, 22, 23, 24, 25, 26, 27, 30, 42];

/// What the walk counts.
#[derive(Default, Debug)]
struct Walk {
    /// Complete events by type (the last one may be cut off).
    events: BTreeMap<u8, u64>,
    /// Per goroutine: runs (GoStart* to its stop, longer than 0 ticks) and
    /// their ticks.
    runs: BTreeMap<u64, (u64, u64)>,
    samples: BTreeMap<u64, u64>,
    gomaxprocs: u64,
    ticks_per_second: u64,
}

fn uvarint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let b = *bytes.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
        shift += 7;
    }
}

/// One event: type and arguments; `None` where the bytes end inside it.
fn event(bytes: &[u8], at: &mut usize) -> Option<(u8, Vec<u64>)> {
    let b = *bytes.get(*at)?;
    *at += 1;
    let (ty, inline) = (b & 0x3f, b >> 6);
    let mut args = Vec::new();
    if ty == 37 {
        args.push(uvarint(bytes, at)?);
        let len = uvarint(bytes, at)? as usize;
        *at += len;
    } else if inline == 3 {
        let len = uvarint(bytes, at)? as usize;
        let end = *at + len;
        let mut inner = *at;
        while inner < end.min(bytes.len()) {
            args.push(uvarint(bytes, &mut inner)?);
        }
        *at = end;
        if ty == 48 {
            let len = uvarint(bytes, at)? as usize;
            *at += len;
        }
    } else {
        for _ in 0..=inline {
            args.push(uvarint(bytes, at)?);
        }
    }
    (*at <= bytes.len()).then_some((ty, args))
}

fn walk(bytes: &[u8]) -> Walk {
    assert!(bytes.starts_with(b"go 1.19 trace\0\0\0"));
    let mut w = Walk::default();
    let mut at = 16;
    let (mut p, mut last) = (0u64, 0u64);
    let mut running: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    let mut end = 0u64;
    let stop = |w: &mut Walk, run: Option<(u64, u64)>, ticks: u64| {
        if let Some((g, start)) = run.filter(|(_, start)| ticks > *start) {
            let slot = w.runs.entry(g).or_default();
            *slot = (slot.0 + 1, slot.1 + (ticks - start));
        }
    };
    while let Some((ty, args)) = event(bytes, &mut at) {
        *w.events.entry(ty).or_default() += 1;
        match ty {
            1 => (p, last) = (args[0], args[1]),
            2 => w.ticks_per_second = args[0],
            3 | 35 | 37 => {}
            49 => {
                *w.samples.entry(args[3]).or_default() += 1;
                end = end.max(args[1]);
            }
            _ => {
                last += args[0];
                end = end.max(last);
                if ty == 4 {
                    w.gomaxprocs = args[1];
                }
                if matches!(ty, 14 | 38 | 41) {
                    let previous = running.insert(p, (args[1], last));
                    stop(&mut w, previous, last);
                } else if STOPS.contains(&ty) {
                    let run = running.remove(&p);
                    stop(&mut w, run, last);
                }
            }
        }
    }
    // Runs still open at the end last until the trace's last event.
    for run in std::mem::take(&mut running).into_values() {
        stop(&mut w, Some(run), end);
    }
    w
}

impl Walk {
    fn ns(&self, ticks: u64) -> i64 {
        (u128::from(ticks) * 1_000_000_000 / u128::from(self.ticks_per_second)) as i64
    }

    fn count(&self, ty: u8) -> u64 {
        self.events.get(&ty).copied().unwrap_or(0)
    }
}

/// Every `sched_slice` row's `(tid, dur_ns)`.
fn sched_rows(project: &Project) -> Vec<(i64, i64)> {
    project
        .window_events("sched_slice", &["tid", "dur_ns"])
        .iter()
        .map(|e| {
            (
                e["tid"].as_i64().expect("tid"),
                e["dur_ns"].as_i64().expect("dur"),
            )
        })
        .collect()
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn goroutines_are_threads_whose_runs_fill_the_ps() {
    let file = corpus().join("linux/go1.19_runtime_execution.trace");
    let bytes = std::fs::read(&file).expect("corpus");
    let w = walk(&bytes);
    let starts = w.count(14) + w.count(38) + w.count(41);
    assert!(starts > 500 && w.count(49) > 100, "{w:?}");
    let project = Project::new();
    let imported = project.json(&["import", file.to_str().expect("utf-8 path")]);
    assert_eq!(imported["kind"], "go_trace", "{imported}");
    assert_eq!(imported["producer"], "go.runtime/trace", "{imported}");
    assert_eq!(imported["limitations"], serde_json::json!([]), "{imported}");
    let meta = &imported["artifacts"][0]["metadata"];
    assert_eq!(meta["version"], "go1.19", "{meta}");
    assert_eq!(meta["events_by_type"]["GoStart"], w.count(14), "{meta}");
    assert_eq!(meta["events_by_type"]["CPUSample"], w.count(49), "{meta}");
    assert_eq!(meta["gc_cycles"], w.count(7), "{meta}");
    let all: u64 = w.events.values().sum();
    let counted: u64 = meta["events_by_type"]
        .as_object()
        .expect("events by type")
        .values()
        .filter_map(|v| v.as_u64())
        .sum();
    assert_eq!(counted, all, "{meta}");

    // One sched_slice row per run, on the goroutine's tid, as long as the
    // walk's run (each end rounded to ns once: 1 ns per run at most).
    let mut by_tid: BTreeMap<i64, (u64, i64)> = BTreeMap::new();
    for (tid, dur) in sched_rows(&project) {
        let slot = by_tid.entry(tid).or_default();
        *slot = (slot.0 + 1, slot.1 + dur);
    }
    let want: BTreeMap<i64, u64> = w.runs.iter().map(|(g, r)| (*g as i64, r.0)).collect();
    let got: BTreeMap<i64, u64> = by_tid.iter().map(|(t, r)| (*t, r.0)).collect();
    assert_eq!(got, want, "sched_slice rows per goroutine");
    for (g, (runs, ticks)) in &w.runs {
        let ns = by_tid[&(*g as i64)].1;
        let want = w.ns(*ticks);
        assert!((ns - want).abs() <= *runs as i64, "G{g}: {ns} vs {want}");
    }

    // `threads`: each goroutine's time on a P and samples; the workers are
    // the four that ran most, all `main.main.func2`.
    let threads = project.json(&["threads", "latest", "--limit", "1000"]);
    assert_eq!(threads["cpus"], w.gomaxprocs, "{threads}");
    let rows = threads["rows"].as_array().expect("rows");
    let row = |g: u64| {
        rows.iter()
            .find(|r| r["tid"].as_u64() == Some(g))
            .unwrap_or_else(|| panic!("G{g} listed: {threads}"))
    };
    for (g, (runs, _)) in &w.runs {
        let on_cpu = row(*g)["on_cpu_ns"].as_i64().expect("on cpu");
        assert!(
            (on_cpu - by_tid[&(*g as i64)].1).abs() <= *runs as i64,
            "G{g}"
        );
    }
    for (g, n) in w.samples.iter().filter(|(g, _)| **g != 0) {
        assert_eq!(row(*g)["samples"].as_u64(), Some(*n), "G{g} samples");
    }
    let mut ran: Vec<(u64, u64)> = w.runs.iter().map(|(g, r)| (r.1, *g)).collect();
    ran.sort_unstable_by(|a, b| b.cmp(a));
    let workers: Vec<u64> = ran.iter().take(4).map(|(_, g)| *g).collect();
    for g in &workers {
        assert_eq!(
            row(*g)["thread_name"],
            format!("G{g} main.main.func2"),
            "{threads}"
        );
    }
    let span = threads["span_ns"][1].as_i64().expect("span")
        - threads["span_ns"][0].as_i64().expect("span");
    let total = threads["on_cpu_total_ns"].as_i64().expect("on cpu total");
    let walked: i64 = w.runs.values().map(|r| w.ns(r.1)).sum();
    assert!(
        (total - walked).abs() <= starts as i64,
        "{total} vs {walked}"
    );
    assert!(
        total <= w.gomaxprocs as i64 * span,
        "{total} > {} Ps × {span}",
        w.gomaxprocs
    );
    let busy: i64 = workers.iter().map(|g| w.ns(w.runs[g].1)).sum();
    assert!(
        busy * 10 >= total * 9,
        "the workers ran {busy} of {total} ns"
    );

    // The headline names a worker; the Ps are the CPUs.
    let summary = project.json(&["analyze", "summary", "latest"]);
    let headline = summary["headline"].as_str().expect("headline");
    assert!(
        workers
            .iter()
            .any(|g| headline.contains(&format!("G{g} main.main.func2"))),
        "{headline}"
    );
    assert_eq!(summary["cpu"]["cpus"], w.gomaxprocs, "{summary}");

    // Hotspots read every CPU sample.
    let hot = project.json(&["analyze", "hotspots", "latest", "--limit", "5"]);
    assert_eq!(hot["metric"], "cpu.samples", "{hot}");
    assert_eq!(hot["total_self"], w.count(49), "{hot}");
    eprintln!(
        "go1.19 corpus: {starts} runs, {} CPU samples, {} GC cycles; on a P {total} ns of {} Ps × {span} ns, workers {workers:?} {busy} ns; headline: {headline}",
        w.count(49),
        w.count(7),
        w.gomaxprocs
    );
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn without_cpu_samples_the_headline_says_where_the_ps_went() {
    // The corpus trace less its CPUSample events (nothing refers to them):
    // a trace recorded without CPU profiling.
    let bytes =
        std::fs::read(corpus().join("linux/go1.19_runtime_execution.trace")).expect("corpus");
    let mut unsampled = bytes[..16].to_vec();
    let mut at = 16;
    loop {
        let start = at;
        let Some((ty, _)) = event(&bytes, &mut at) else {
            break;
        };
        if ty != 49 {
            unsampled.extend_from_slice(&bytes[start..at]);
        }
    }
    let w = walk(&unsampled);
    assert_eq!(w.count(49), 0);
    let (top, _) = w
        .runs
        .iter()
        .max_by_key(|(g, r)| (r.1, std::cmp::Reverse(**g)))
        .expect("a goroutine ran");
    let project = Project::new();
    std::fs::write(project.path().join("unsampled.trace"), &unsampled).expect("write");
    let imported = project.json(&["import", "unsampled.trace"]);
    assert_eq!(imported["coverage"]["cpu_samples"], false, "{imported}");
    let summary = project.json(&["analyze", "summary", "latest"]);
    let headline = summary["headline"].as_str().expect("headline");
    assert!(
        headline.contains(&format!("most on CPU: G{top} main.main.func2 (tid {top})")),
        "{headline}"
    );
    assert!(
        headline.contains(&format!("of {} CPUs × the trace", w.gomaxprocs)),
        "{headline}"
    );
    eprintln!("without CPU samples: {headline}");
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn cut_and_unsupported_go_traces_end_in_typed_answers() {
    let bytes =
        std::fs::read(corpus().join("linux/go1.19_runtime_execution.trace")).expect("corpus");
    let project = Project::new();
    // Cut inside the string and stack tables (a go1.19 trace writes them
    // last): every complete event is read, the cut is a limitation and
    // the stacks lost are counted.
    let cut = bytes.len() * 3 / 5;
    std::fs::write(project.path().join("cut.trace"), &bytes[..cut]).expect("write");
    let imported = project.json(&["import", "cut.trace"]);
    assert_eq!(imported["kind"], "go_trace", "{imported}");
    let codes: Vec<&str> = imported["limitations"]
        .as_array()
        .expect("limitations")
        .iter()
        .filter_map(|l| l["code"].as_str())
        .collect();
    assert!(codes.contains(&"truncated_input"), "{codes:?}");
    assert!(codes.contains(&"stack_missing"), "{codes:?}");
    let complete: u64 = walk(&bytes[..cut]).events.values().sum();
    let counted: u64 = imported["artifacts"][0]["metadata"]["events_by_type"]
        .as_object()
        .expect("events by type")
        .values()
        .filter_map(|v| v.as_u64())
        .sum();
    assert_eq!(counted, complete);
    // Cut before the frequency a go1.19 trace writes at its end: refused,
    // nothing published.
    let head = project.head();
    std::fs::write(
        project.path().join("short.trace"),
        &bytes[..bytes.len() / 3],
    )
    .expect("write");
    let err = project.json_err(&["import", "short.trace"], "ARTIFACT_PARSE_FAILED", 5);
    assert!(
        err["message"].as_str().unwrap_or("").contains("frequency"),
        "{err}"
    );
    assert_eq!(project.head(), head);
    // A version this build does not read is named.
    let mut old = bytes.clone();
    old[5..7].copy_from_slice(b"10");
    std::fs::write(project.path().join("old.trace"), &old).expect("write");
    let err = project.json_err(&["import", "old.trace"], "CAPABILITY_UNAVAILABLE", 3);
    assert_eq!(err["details"]["version_found"], "go1.10", "{err}");
    assert_eq!(
        err["details"]["versions_supported"], "go1.11–go1.26",
        "{err}"
    );
}
