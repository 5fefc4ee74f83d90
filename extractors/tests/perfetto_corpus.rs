//! The Perfetto extractor on the real traces in the corpus (Android system
//! traces, systing, the Perfetto SDK, Perfetto's Python builder and Rust's
//! `tracing-perfetto`), checked against values computed here with plain
//! code from the same file decoded by the `perfetto_protos` crate's full
//! generated types — a different decoder from the extractor's prost subset.

mod common;

use std::collections::{BTreeMap, HashMap};

use common::perfetto::decode;
use common::*;
use flameox_extractors::{EvidenceTable as T, ExtractionSummary, NoObserver, extract_perfetto};
use perfetto_protos::track_event::track_event::Type;

/// The first slice that began inside another on its track.
#[derive(Debug, Default, Clone, PartialEq)]
struct Nested {
    name: String,
    ts: i64,
    dur: i64,
    parent: String,
}

/// What the reference decoder's packets say.
#[derive(Debug, Default)]
struct Model {
    slices: u64,
    instants: u64,
    counter_values: u64,
    /// Sum of end − begin over matched track-event slices.
    slice_ns: i64,
    nested: Option<Nested>,
    /// sched_switch records whose next task is not the idle task.
    switches_to_task: u64,
    perf_samples: u64,
    atrace_begins: u64,
    gpu_counter_values: u64,
}

fn model(trace: &[u8]) -> Model {
    let mut m = Model::default();
    // Per track: open (name, ts, nested candidate index).
    let mut open: HashMap<u64, Vec<(String, i64)>> = HashMap::new();
    let mut candidate: Option<(u64, usize, Nested)> = None;
    for p in decode(trace) {
        let ts = p.timestamp() as i64;
        if p.has_track_event() {
            let e = p.track_event();
            let track = e.track_uuid();
            m.counter_values +=
                (e.extra_counter_values.len() + e.extra_double_counter_values.len()) as u64;
            match e.type_() {
                Type::TYPE_SLICE_BEGIN => {
                    m.slices += 1;
                    let stack = open.entry(track).or_default();
                    if candidate.is_none()
                        && let Some((parent, _)) = stack.last()
                    {
                        let n = Nested {
                            name: e.name().to_string(),
                            ts,
                            dur: -1,
                            parent: parent.clone(),
                        };
                        candidate = Some((track, stack.len(), n));
                    }
                    stack.push((e.name().to_string(), ts));
                }
                Type::TYPE_SLICE_END => {
                    let stack = open.entry(track).or_default();
                    if let Some((_, begin)) = stack.pop() {
                        m.slice_ns += ts - begin;
                        if let Some((t, depth, n)) = &mut candidate
                            && *t == track
                            && *depth == stack.len()
                            && n.dur < 0
                        {
                            n.dur = ts - begin;
                            m.nested = Some(n.clone());
                        }
                    }
                }
                Type::TYPE_INSTANT => m.instants += 1,
                Type::TYPE_COUNTER => m.counter_values += 1,
                _ => {}
            }
        }
        if p.has_ftrace_events() {
            let bundle = p.ftrace_events();
            for ev in &bundle.event {
                if ev.has_sched_switch() {
                    m.switches_to_task += u64::from(ev.sched_switch().next_pid() != 0);
                }
                if ev.has_print() {
                    m.atrace_begins += u64::from(ev.print().buf().starts_with("B|"));
                }
            }
            if let Some(compact) = bundle.compact_sched.as_ref() {
                m.switches_to_task +=
                    compact.switch_next_pid.iter().filter(|&&p| p != 0).count() as u64;
            }
        }
        if p.has_perf_sample() {
            m.perf_samples += u64::from(p.perf_sample().has_callstack_iid());
        }
        if p.has_gpu_counter_event() {
            m.gpu_counter_values += p.gpu_counter_event().counters.len() as u64;
        }
    }
    m
}

fn extract(path: &str) -> (ExtractionSummary, MemorySink, Model) {
    let bytes = std::fs::read(corpus(path)).expect("corpus file");
    let mut sink = MemorySink::default();
    let summary =
        extract_perfetto(bytes.as_slice(), &options(), &mut sink, &NoObserver).expect(path);
    (summary, sink, model(&bytes))
}

/// Rows of `trace_events` per kind, and the summed duration of terminated
/// rows of `kinds`.
fn by_kind(sink: &MemorySink) -> (BTreeMap<String, u64>, HashMap<String, i64>) {
    let kinds = sink.strs(T::TraceEvents, "kind");
    let durs = sink.i64s(T::TraceEvents, "dur_ns");
    let mut count = BTreeMap::new();
    let mut dur: HashMap<String, i64> = HashMap::new();
    for (k, d) in kinds.iter().zip(&durs) {
        let k = k.clone().expect("kind");
        *count.entry(k.clone()).or_insert(0) += 1;
        if let Some(d) = d.filter(|d| *d > 0) {
            *dur.entry(k).or_default() += d;
        }
    }
    (count, dur)
}

fn metric_total(sink: &MemorySink, metric: &str, column: &str) -> i64 {
    let metrics = sink.strs(T::Samples, "metric");
    let values = sink.i64s(T::Samples, column);
    metrics
        .iter()
        .zip(values)
        .filter(|(m, _)| m.as_deref() == Some(metric))
        .map(|(_, v)| v.unwrap_or(0))
        .sum()
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn track_event_traces_match_the_raw_packets() {
    for path in [
        "perfetto/perfetto_pybuilder_trackevent.pftrace",
        "perfetto/tokio_tracing_perfetto_trackevent.pftrace",
    ] {
        let (summary, sink, m) = extract(path);
        let (count, dur) = by_kind(&sink);
        let slices = count.get("cpu_slice").copied().unwrap_or(0);
        assert_eq!(slices, m.slices, "{path}: {count:?}");
        assert_eq!(
            count.get("instant").copied().unwrap_or(0),
            m.instants,
            "{path}"
        );
        assert_eq!(sink.rows(T::Counters) as u64, m.counter_values, "{path}");
        assert_eq!(
            dur.get("cpu_slice").copied().unwrap_or(0),
            m.slice_ns,
            "{path}"
        );
        // Slice self time sums to the wall-time reduction's total weight.
        let parents = sink.i64s(T::TraceEvents, "parent_event_id");
        let selfs = sink.i64s(T::TraceEvents, "self_ns");
        let self_total: i64 = selfs.iter().map(|s| s.unwrap_or(0)).sum();
        assert_eq!(
            metric_total(&sink, "trace.wall_ns", "weight"),
            self_total,
            "{path}"
        );
        assert!(parents.iter().any(Option::is_some), "{path}: nesting found");
        assert!(summary.coverage["track_events"], "{path}");
        // One specific nested slice: its duration and its parent's name.
        // (tracing-perfetto gives every span its own track: no nesting there.)
        let Some(nested) = m.nested.as_ref() else {
            assert!(
                !path.contains("pybuilder"),
                "the builder trace nests slices"
            );
            continue;
        };
        let names = sink.strs(T::TraceEvents, "name");
        let ts = sink.i64s(T::TraceEvents, "ts_ns");
        let durs = sink.i64s(T::TraceEvents, "dur_ns");
        let ids = sink.i64s(T::TraceEvents, "event_id");
        let row = (0..names.len())
            .find(|&i| names[i].as_deref() == Some(&nested.name) && ts[i] == Some(nested.ts))
            .expect("the nested slice is a row");
        assert_eq!(durs[row], Some(nested.dur), "{path}: {nested:?}");
        let parent = (0..ids.len())
            .find(|&i| ids[i] == parents[row])
            .expect("its parent is a row");
        assert_eq!(
            names[parent].as_deref(),
            Some(nested.parent.as_str()),
            "{path}"
        );
        assert!(
            summary
                .limitations
                .iter()
                .all(|l| l.code != "malformed_packet")
        );
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn system_traces_give_sched_slices_thread_states_and_samples() {
    for path in [
        "perfetto/android_qoe_sched_binder_cpuidle.perfetto-trace",
        "perfetto/systing_sched_softirq_perfsamples.pb",
    ] {
        let (summary, sink, m) = extract(path);
        let (count, dur) = by_kind(&sink);
        assert!(
            m.switches_to_task > 1000,
            "{path}: the model found switches"
        );
        assert_eq!(
            count.get("sched_slice").copied(),
            Some(m.switches_to_task),
            "{path}"
        );
        // Every thread's states tile its timeline: a thread's Running time
        // equals the CPU time its sched slices show.
        let tids = sink.i64s(T::TraceEvents, "tid");
        let names = sink.strs(T::TraceEvents, "name");
        let kinds = sink.strs(T::TraceEvents, "kind");
        let durs = sink.i64s(T::TraceEvents, "dur_ns");
        let mut running: HashMap<i64, i64> = HashMap::new();
        let mut on_cpu: HashMap<i64, i64> = HashMap::new();
        for i in 0..kinds.len() {
            let (Some(tid), Some(d)) = (tids[i], durs[i].filter(|d| *d >= 0)) else {
                continue;
            };
            match kinds[i].as_deref() {
                Some("sched_slice") => *on_cpu.entry(tid).or_default() += d,
                Some("thread_state") if names[i].as_deref() == Some("Running") => {
                    *running.entry(tid).or_default() += d
                }
                _ => {}
            }
        }
        assert!(!on_cpu.is_empty(), "{path}: sched slices name their thread");
        assert_eq!(running, on_cpu, "{path}");
        assert!(dur["sched_slice"] > 0);
        assert!(summary.coverage["scheduling"] && summary.coverage["thread_states"]);
        assert_eq!(
            metric_total(&sink, "cpu.samples", "count") as u64,
            m.perf_samples,
            "{path}"
        );
    }
    // The systing trace's samples resolve to named kernel and user frames.
    let (summary, sink, m) = extract("perfetto/systing_sched_softirq_perfsamples.pb");
    assert_eq!(m.perf_samples, 355);
    assert!(summary.coverage["callstack_samples"]);
    let functions = sink.strs(T::Frames, "function");
    assert!(
        functions
            .iter()
            .flatten()
            .any(|f| f.contains("intel_atomic_commit_tail"))
    );
}

/// Maps keyed by CPU or thread are seeded per instance; what ends at the
/// end of the trace (still-running tasks, open thread states) must still
/// come out in one order, or event and track ids change from one import of
/// the same bytes to the next (they did, before the end was sorted).
#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn system_traces_extract_to_the_same_rows_every_time() {
    for path in [
        "perfetto/android_qoe_sched_binder_cpuidle.perfetto-trace",
        "perfetto/systing_sched_softirq_perfsamples.pb",
    ] {
        let (_, first, _) = extract(path);
        for _ in 0..3 {
            let (_, again, _) = extract(path);
            for (table, batches) in &first.batches {
                assert_eq!(
                    Some(batches),
                    again.batches.get(table),
                    "{path}: {}",
                    table.name()
                );
            }
        }
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn atrace_markers_and_gpu_counters_become_slices_and_counters() {
    let (summary, sink, m) =
        extract("perfetto/android_nowinandroid_atrace_frametimeline.perfetto-trace");
    let categories = sink.strs(T::TraceEvents, "category");
    let atrace = categories
        .iter()
        .filter(|c| c.as_deref() == Some("atrace"))
        .count() as u64;
    assert!(m.atrace_begins > 100);
    assert!(
        atrace >= m.atrace_begins,
        "{atrace} rows for {} B markers",
        m.atrace_begins
    );
    // Frame timeline packets are known but not read, and say so.
    let by_type = &summary.metadata["packets_by_type"];
    assert!(by_type["not_read.frame_timeline_event"].as_u64() > Some(7000));

    let (summary, sink, m) = extract("perfetto/perfetto_sdk_example_gpu_counters.perfetto");
    assert!(m.gpu_counter_values > 0);
    assert_eq!(sink.rows(T::Counters) as u64, m.gpu_counter_values);
    assert!(summary.coverage["counters"]);
}
