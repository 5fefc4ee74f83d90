//! Tests of the extractor: a synthetic trace whose every row is known by
//! hand (goroutine states, runs on Ps, GC, tasks, regions, logs, samples,
//! counters), damaged and foreign inputs, cancellation; and the evidence
//! read back into rows for these and the corpus tests
//! (`extract_corpus_tests.rs`).
#![cfg(test)]

use std::collections::BTreeMap;
use std::path::Path;

use arrow::array::{Array, UInt64Array};
use arrow::record_batch::RecordBatch;

use super::extract::extract_go_trace_spilling;
use super::synthetic::V1Writer;
use crate::api::{ExtractError, ExtractObserver, ExtractionSummary, NoObserver};
use crate::schema::EvidenceTable;
use crate::spill_compare::{Extracted, batches_of, ints, options, texts};
use crate::stream_gaps::tests::Collect;

fn ids(b: &RecordBatch, name: &str) -> Vec<u64> {
    let c = b.column_by_name(name).unwrap();
    c.as_any()
        .downcast_ref::<UInt64Array>()
        .unwrap()
        .values()
        .to_vec()
}

/// One `trace_events` row, read back.
#[derive(Debug, Clone)]
pub(super) struct Ev {
    pub(super) ts: i64,
    pub(super) dur: i64,
    pub(super) name: String,
    pub(super) category: String,
    pub(super) kind: String,
    /// The track's kind and name.
    pub(super) track: (String, String),
    pub(super) tid: Option<i64>,
    pub(super) args: String,
}

/// The evidence of one extraction.
pub(super) struct Evidence {
    pub(super) summary: ExtractionSummary,
    pub(super) events: Vec<Ev>,
    /// track id → (kind, name, tid, thread name).
    pub(super) tracks: BTreeMap<u64, (String, String, Option<i64>, Option<String>)>,
    pub(super) batches: Collect,
}

pub(super) fn extract(bytes: &[u8], spill: Option<(&Path, usize)>) -> Extracted {
    let mut sink = Collect::default();
    let (summary, spilled) =
        extract_go_trace_spilling(bytes, &options(spill), &mut sink, &NoObserver).expect("extract");
    (summary, sink, spilled)
}

impl Evidence {
    pub(super) fn of(bytes: &[u8]) -> Evidence {
        let (summary, batches, _) = extract(bytes, None);
        let mut tracks = BTreeMap::new();
        for b in batches_of(&batches, EvidenceTable::Tracks) {
            let (kind, name) = (texts(&b, "kind"), texts(&b, "name"));
            let (tid, thread) = (ints(&b, "tid"), texts(&b, "thread_name"));
            for (i, id) in ids(&b, "track_id").into_iter().enumerate() {
                let kind = kind[i].clone().unwrap_or_default();
                let name = name[i].clone().unwrap_or_default();
                tracks.insert(id, (kind, name, tid[i], thread[i].clone()));
            }
        }
        let mut events = Vec::new();
        for b in batches_of(&batches, EvidenceTable::TraceEvents) {
            let (ts, dur, tid) = (ints(&b, "ts_ns"), ints(&b, "dur_ns"), ints(&b, "tid"));
            let (name, cat, kind) = (texts(&b, "name"), texts(&b, "category"), texts(&b, "kind"));
            let args = texts(&b, "args_json");
            for (i, track) in ids(&b, "track_id").into_iter().enumerate() {
                let t = &tracks[&track];
                events.push(Ev {
                    ts: ts[i].unwrap(),
                    dur: dur[i].unwrap(),
                    name: name[i].clone().unwrap(),
                    category: cat[i].clone().unwrap_or_default(),
                    kind: kind[i].clone().unwrap(),
                    track: (t.0.clone(), t.1.clone()),
                    tid: tid[i],
                    args: args[i].clone().unwrap_or_default(),
                });
            }
        }
        Evidence {
            summary,
            events,
            tracks,
            batches,
        }
    }

    pub(super) fn of_kind(&self, kind: &str) -> Vec<&Ev> {
        self.events.iter().filter(|e| e.kind == kind).collect()
    }

    /// `(metric, tid, count)` of every `samples` row.
    pub(super) fn samples(&self) -> Vec<(String, Option<i64>, i64)> {
        let mut out = Vec::new();
        for b in batches_of(&self.batches, EvidenceTable::Samples) {
            let (metric, tid, count) = (texts(&b, "metric"), ints(&b, "tid"), ints(&b, "count"));
            for i in 0..b.num_rows() {
                out.push((metric[i].clone().unwrap(), tid[i], count[i].unwrap()));
            }
        }
        out
    }
}

/// The strings, stacks and frequency of the synthetic trace (1 tick = 1 ns).
fn tables(w: &mut V1Writer) {
    w.string(1, "main.send");
    w.string(2, "main.go");
    w.string(3, "main.worker");
    w.string(4, "phase");
    w.string(5, "job");
    w.stack(1, &[(0x10, 1, 2, 7)]);
    w.stack(2, &[(0x20, 3, 2, 1)]);
    w.event(2, &[1_000_000_000]);
}

/// Two goroutines on one P, everything else around them (times in ns
/// from the first event at tick 1000).
fn synthetic() -> Vec<u8> {
    let mut w = V1Writer::new(19);
    w.batch(0, 1000);
    w.event(13, &[0, 7, 2, 1]); // GoCreate g7 (by no goroutine)
    w.event(13, &[0, 8, 2, 1]); // GoCreate g8
    w.event(14, &[10, 7, 1]); // 10: GoStart g7
    w.event(13, &[5, 9, 2, 1]); // 15: g7 creates g9
    w.event(18, &[5, 1]); // 20: GoPreempt g7
    w.event(14, &[5, 8, 1]); // 25: GoStart g8
    w.event(47, &[1, 0, 0, 4, 1]); // 26: region "phase" begins on g8
    w.event(48, &[1, 0, 4, 1]); // 27: log "phase": hello
    w.text("hello");
    w.event(47, &[1, 0, 1, 4, 1]); // 28: region ends
    w.event(23, &[12, 1]); // 40: GoBlockRecv g8 in main.send
    w.event(38, &[5, 7]); // 45: GoStartLocal g7
    w.event(7, &[5, 0, 0]); // 50: GCStart
    w.event(9, &[1, 0]); // 51: STW
    w.event(10, &[4]); // 55
    w.event(11, &[1, 1]); // 56: sweep on P0
    w.event(12, &[4, 100, 50]); // 60
    w.event(43, &[1, 1]); // 61: g7 assists
    w.event(44, &[4]); // 65
    w.event(8, &[5]); // 70: GCDone
    w.event(33, &[1, 4096]); // 71: HeapAlloc
    w.event(45, &[1, 1, 0, 5, 1]); // 72: task 1 "job"
    w.event(46, &[3, 1, 1]); // 75: task ends
    w.event(15, &[5]); // 80: GoEnd g7
    w.event(49, &[0, 1030, 0, 7, 1]); // sample at 30 on g7 in main.send
    w.event(49, &[0, 1042, 0, 0, 2]); // sample at 42, no goroutine
    tables(&mut w);
    w.bytes()
}

#[test]
fn every_piece_of_a_synthetic_trace_lands_where_it_belongs() {
    let ev = Evidence::of(&synthetic());
    let s = &ev.summary;
    assert_eq!(
        (s.format.as_str(), s.producer.as_str()),
        ("go_trace", "go.runtime/trace")
    );
    assert!(s.limitations.is_empty(), "{:?}", s.limitations);
    assert_eq!(s.metadata["version"], "go1.19");
    assert_eq!(s.metadata["gc_cycles"], 1);
    // Runs on P0: one sched_slice row per run, naming the goroutine.
    let runs: Vec<_> = ev
        .of_kind("sched_slice")
        .iter()
        .map(|e| (e.ts, e.dur, e.tid, e.track.clone(), e.name.as_str()))
        .collect();
    let p0 = ("cpu".to_owned(), "P0".to_owned());
    assert_eq!(
        runs,
        [
            (10, 10, Some(7), p0.clone(), "G7 main.worker"),
            (25, 15, Some(8), p0.clone(), "G8 main.worker"),
            (45, 35, Some(7), p0, "G7 main.worker"),
        ]
    );
    // States in the kernel's words, the reason and where in args.
    let states = |tid: i64| -> Vec<(i64, i64, String)> {
        ev.of_kind("thread_state")
            .iter()
            .filter(|e| e.tid == Some(tid))
            .map(|e| (e.ts, e.dur, e.name.clone()))
            .collect()
    };
    let want7 = [
        (0, 10, "Runnable"),
        (10, 10, "Running"),
        (20, 25, "Runnable (Preempted)"),
        (45, 35, "Running"),
    ];
    let want7: Vec<_> = want7
        .iter()
        .map(|(a, b, c)| (*a, *b, c.to_string()))
        .collect();
    assert_eq!(states(7), want7);
    let blocked = ev
        .of_kind("thread_state")
        .into_iter()
        .find(|e| e.name == "Blocked (chan receive)")
        .expect("g8 blocked");
    assert_eq!((blocked.tid, blocked.ts, blocked.dur), (Some(8), 40, 40));
    assert!(
        blocked.args.contains(r#""where":"main.send (main.go:7)""#),
        "{}",
        blocked.args
    );
    assert!(
        blocked.args.contains(r#""open_at_end":true"#),
        "{}",
        blocked.args
    );
    // Names: every goroutine is a thread of the Go program.
    let names: BTreeMap<i64, String> = ev
        .tracks
        .values()
        .filter(|t| t.0 == "thread_state")
        .filter_map(|t| Some((t.2?, t.3.clone()?)))
        .collect();
    assert_eq!(names[&7], "G7 main.worker");
    assert_eq!(names[&9], "G9 main.worker");
    // Instants on the state track; the region on the thread track.
    let go = ev
        .of_kind("instant")
        .into_iter()
        .find(|e| e.name == "go")
        .expect("go");
    assert_eq!(
        (go.tid, go.ts, go.track.0.as_str()),
        (Some(7), 15, "thread_state")
    );
    assert!(go.args.contains(r#""new_g":9"#), "{}", go.args);
    let log = ev
        .of_kind("instant")
        .into_iter()
        .find(|e| e.name == "phase")
        .expect("log");
    assert!(log.args.contains(r#""message":"hello""#), "{}", log.args);
    let annotations: Vec<_> = ev
        .of_kind("user_annotation")
        .iter()
        .map(|e| {
            (
                e.name.as_str(),
                e.category.as_str(),
                e.ts,
                e.dur,
                e.track.clone(),
                e.tid,
            )
        })
        .collect();
    assert_eq!(
        annotations,
        [
            (
                "phase",
                "region",
                26,
                2,
                ("thread".into(), "G8 main.worker".into()),
                Some(8)
            ),
            (
                "job",
                "task",
                72,
                3,
                ("async".into(), "user tasks 0".into()),
                None
            ),
        ]
    );
    // GC: async tracks, the assists on their goroutine's.
    let gc: Vec<_> = ev
        .of_kind("cpu_slice")
        .iter()
        .map(|e| (e.track.clone(), e.ts, e.dur, e.tid, e.category.as_str()))
        .collect();
    let t = |k: &str, n: &str| (k.to_owned(), n.to_owned());
    assert_eq!(
        gc,
        [
            (t("async", "GC cycles"), 50, 20, None, "gc"),
            (t("async", "GC stop-the-world"), 51, 4, None, "gc"),
            (t("async", "GC sweep on P0"), 56, 4, None, "gc"),
            (t("async", "GC mark assist"), 61, 4, Some(7), "gc"),
        ]
    );
    // Two CPU samples, one on g7; heap in bytes.
    let mut samples = ev.samples();
    samples.retain(|s| s.0 == "cpu.samples");
    samples.sort();
    assert_eq!(
        samples,
        [
            ("cpu.samples".into(), None, 1),
            ("cpu.samples".into(), Some(7), 1)
        ]
    );
    let counters = batches_of(&ev.batches, EvidenceTable::Counters);
    let c = &counters[0];
    assert_eq!(texts(c, "name"), [Some("go.heap_alloc".to_owned())]);
    assert_eq!(texts(c, "unit"), [Some("bytes".to_owned())]);
}

#[test]
fn damaged_foreign_and_cancelled_inputs_are_typed() {
    let bytes = synthetic();
    let run = |data: &[u8], observer: &dyn ExtractObserver| {
        let mut sink = Collect::default();
        extract_go_trace_spilling(data, &options(None), &mut sink, observer)
    };
    assert!(matches!(
        run(b"", &NoObserver),
        Err(ExtractError::Parse { .. })
    ));
    assert!(matches!(
        run(b"not a go trace at all", &NoObserver),
        Err(ExtractError::Parse {
            offset: Some(0),
            ..
        })
    ));
    let mut old = bytes.clone();
    old[5..7].copy_from_slice(b"10");
    match run(&old, &NoObserver) {
        Err(ExtractError::UnsupportedVersion { format, found, .. }) => {
            assert_eq!((format, found.as_str()), ("go_trace", "go1.10"));
        }
        other => panic!("{other:?}"),
    }
    // A 1.22 header with nothing after it holds no event.
    let mut empty = b"go 1.22 trace".to_vec();
    empty.resize(16, 0);
    assert!(matches!(
        run(&empty, &NoObserver),
        Err(ExtractError::Parse { .. })
    ));
    // Cut anywhere: a typed error or a partial import, never a panic.
    for cut in 0..bytes.len() {
        match run(&bytes[..cut], &NoObserver) {
            Ok((summary, _)) => assert!(summary.rows["trace_events"] > 0),
            Err(ExtractError::Parse { .. }) => {}
            Err(other) => panic!("cut at {cut}: {other:?}"),
        }
    }
    struct Cancelled;
    impl ExtractObserver for Cancelled {
        fn cancelled(&self) -> bool {
            true
        }
    }
    assert!(matches!(
        run(&bytes, &Cancelled),
        Err(ExtractError::Cancelled)
    ));
}
