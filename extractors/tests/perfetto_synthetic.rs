//! The Perfetto extractor on traces written here field by field (not with
//! the extractor's own prost types): interning and its resets, packet loss,
//! compressed packets, clock conversion, scheduling in both encodings,
//! callstack samples, counters and broken inputs.

mod common;

use common::protobuf::{Msg, compressed, trace};
use common::*;
use flameox_extractors::{
    EvidenceTable as T, ExtractError, ExtractionSummary, NoObserver, extract_perfetto,
};

fn run(bytes: &[u8]) -> Result<(ExtractionSummary, MemorySink), ExtractError> {
    let mut sink = MemorySink::default();
    let summary = extract_perfetto(bytes, &options(), &mut sink, &NoObserver)?;
    Ok((summary, sink))
}

/// `(name, ts, dur)` of every trace event, in output order.
fn events(sink: &MemorySink) -> Vec<(String, i64, i64)> {
    let names = sink.strs(T::TraceEvents, "name");
    let ts = sink.i64s(T::TraceEvents, "ts_ns");
    let dur = sink.i64s(T::TraceEvents, "dur_ns");
    names
        .into_iter()
        .zip(ts)
        .zip(dur)
        .map(|((n, t), d)| (n.unwrap_or_default(), t.unwrap_or(0), d.unwrap_or(0)))
        .collect()
}

// ---- packet builders (Perfetto field numbers) ---------------------------

const SEQ: u32 = 10;
const CLEARED: u64 = 1;
const NEEDS_STATE: u64 = 2;

fn packet(ts: u64, seq: u32) -> Msg {
    Msg::new().varint(8, ts).varint(10, u64::from(seq))
}

fn thread_track(uuid: u64, pid: u64, tid: u64, name: &str) -> Msg {
    let thread = Msg::new().varint(1, pid).varint(2, tid).str(5, name);
    packet(0, SEQ).msg(60, Msg::new().varint(1, uuid).msg(4, thread))
}

fn interned_names(names: &[(u64, &str)]) -> Msg {
    names.iter().fold(Msg::new(), |m, (iid, name)| {
        m.msg(2, Msg::new().varint(1, *iid).str(2, name))
    })
}

/// A track event of `kind` (1 begin, 2 end, 3 instant, 4 counter).
fn event(kind: u64, track: u64) -> Msg {
    Msg::new().varint(9, kind).varint(11, track)
}

#[test]
fn interned_names_follow_resets_and_lost_state_is_skipped() {
    let p = vec![
        thread_track(7, 100, 101, "worker"),
        packet(1_000, SEQ)
            .varint(13, CLEARED)
            .msg(12, interned_names(&[(1, "alpha")]))
            .msg(11, event(1, 7).varint(10, 1)),
        packet(2_000, SEQ)
            .varint(13, NEEDS_STATE)
            .msg(11, event(2, 7)),
        // The state is cleared: iid 1 now means "beta".
        packet(3_000, SEQ)
            .varint(13, CLEARED)
            .msg(12, interned_names(&[(1, "beta")]))
            .msg(11, event(1, 7).varint(10, 1)),
        packet(3_500, SEQ)
            .varint(13, NEEDS_STATE)
            .msg(11, event(2, 7)),
        // Another sequence uses interning without ever clearing: skipped.
        packet(4_000, 11)
            .varint(13, NEEDS_STATE)
            .msg(11, event(3, 7).varint(10, 1)),
        // Loss on the first sequence invalidates its state until a clear.
        packet(5_000, SEQ)
            .varint(42, 1)
            .varint(13, NEEDS_STATE)
            .msg(11, event(3, 7).varint(10, 1)),
        packet(6_000, SEQ).msg(11, event(3, 7).str(23, "inline")),
    ];
    let (summary, sink) = run(&trace(&p)).expect("extract");
    assert_eq!(
        events(&sink),
        vec![
            ("alpha".to_string(), 1_000, 1_000),
            ("beta".to_string(), 3_000, 500),
            ("inline".to_string(), 6_000, 0),
        ]
    );
    assert_eq!(limitation(&summary, "incremental_state_missing"), 2);
    let threads = sink.strs(T::Tracks, "thread_name");
    assert!(threads.iter().any(|t| t.as_deref() == Some("worker")));
    let tids = sink.i64s(T::TraceEvents, "tid");
    assert!(tids.iter().all(|t| *t == Some(101)));
}

#[test]
fn compressed_packets_give_the_same_rows_as_plain_ones() {
    let body = vec![
        thread_track(7, 1, 2, "main"),
        packet(100, SEQ).msg(11, event(1, 7).str(23, "outer")),
        packet(150, SEQ).msg(11, event(1, 7).str(23, "inner")),
        packet(180, SEQ).msg(11, event(2, 7)),
        packet(400, SEQ).msg(11, event(2, 7)),
    ];
    let (_, plain) = run(&trace(&body)).expect("plain");
    let (summary, packed) =
        run(&trace(&[compressed(&body[..3]), compressed(&body[3..])])).expect("compressed");
    assert_eq!(events(&plain), events(&packed));
    assert_eq!(events(&plain).len(), 2);
    assert!(summary.coverage["compressed_packets"]);
    let depth = packed.i64s(T::TraceEvents, "depth");
    assert_eq!(depth, vec![Some(0), Some(1)]);
}

#[test]
fn clocks_convert_through_snapshots_or_are_reported() {
    let snapshot = Msg::new()
        .msg(1, Msg::new().varint(1, 6).varint(2, 1_000_000))
        .msg(1, Msg::new().varint(1, 3).varint(2, 1_000))
        .msg(
            1,
            // A sequence-scoped incremental clock in microseconds.
            Msg::new()
                .varint(1, 64)
                .varint(2, 10)
                .varint(3, 1)
                .varint(4, 1000),
        );
    let p = vec![
        Msg::new().varint(10, u64::from(SEQ)).msg(6, snapshot),
        thread_track(7, 1, 2, "main"),
        // Monotonic 1_500 → boottime 1_000_500.
        packet(1_500, SEQ)
            .varint(58, 3)
            .msg(11, event(3, 7).str(23, "mono")),
        // Realtime has no snapshot: skipped and reported.
        packet(9, SEQ)
            .varint(58, 1)
            .msg(11, event(3, 7).str(23, "realtime")),
        // Incremental: 10 µs + 5 µs, then + 2 µs.
        packet(5, SEQ)
            .varint(58, 64)
            .msg(11, event(3, 7).str(23, "inc1")),
        packet(2, SEQ)
            .varint(58, 64)
            .msg(11, event(3, 7).str(23, "inc2")),
    ];
    let (summary, sink) = run(&trace(&p)).expect("extract");
    let mut got = events(&sink);
    got.sort_by_key(|e| e.1);
    assert_eq!(
        got,
        vec![
            ("mono".to_string(), 1_000_500, 0),
            ("inc1".to_string(), 1_000_000 + 5_000, 0),
            ("inc2".to_string(), 1_000_000 + 7_000, 0),
        ]
    );
    assert_eq!(limitation(&summary, "clock_unconvertible"), 1);
}

/// A bundle of plain `sched_switch` / `sched_waking` events on `cpu`.
fn bundle(cpu: u64, events: &[Msg]) -> Msg {
    let b = events
        .iter()
        .fold(Msg::new().varint(1, cpu), |b, e| b.msg(2, e.clone()));
    Msg::new().varint(10, 3).msg(1, b)
}

fn switch(ts: u64, prev: u64, state: u64, next: u64, next_comm: &str) -> Msg {
    let s = Msg::new()
        .str(1, "prev")
        .varint(2, prev)
        .varint(4, state)
        .str(5, next_comm)
        .varint(6, next)
        .varint(7, 120);
    Msg::new().varint(1, ts).varint(2, prev).msg(4, s)
}

fn waking(ts: u64, waker: u64, pid: u64) -> Msg {
    let w = Msg::new().str(1, "t").varint(2, pid).varint(5, 0);
    Msg::new().varint(1, ts).varint(2, waker).msg(20, w)
}

#[test]
fn scheduling_becomes_cpu_slices_and_thread_states_in_either_encoding() {
    // CPU 0: idle → 10 (t=100) → sleeps, idle (t=300); 10 is woken from
    // CPU 1 at t=350 and runs on CPU 1 from t=400 to t=500 (preempted by 20).
    // CPU 1's bundle comes first in the file but its events are later.
    let plain = trace(&[
        bundle(
            1,
            &[
                waking(350, 20, 10),
                switch(400, 0, 0, 10, "ten"),
                switch(500, 10, 0, 20, "twenty"),
            ],
        ),
        bundle(
            0,
            &[
                switch(100, 0, 0, 10, "ten"),
                switch(300, 10, 1, 0, "swapper"),
            ],
        ),
    ]);
    let (summary, sink) = run(&plain).expect("plain");
    let kinds = sink.strs(T::TraceEvents, "kind");
    let tids = sink.i64s(T::TraceEvents, "tid");
    let rows: Vec<(String, String, Option<i64>, i64, i64)> = events(&sink)
        .into_iter()
        .zip(kinds)
        .zip(tids)
        .map(|(((n, t, d), k), tid)| (k.unwrap_or_default(), n, tid, t, d))
        .collect();
    let of = |kind: &str, tid: i64| -> Vec<(String, i64, i64)> {
        rows.iter()
            .filter(|r| r.0 == kind && r.2 == Some(tid))
            .map(|r| (r.1.clone(), r.3, r.4))
            .collect()
    };
    assert_eq!(
        of("sched_slice", 10),
        vec![("ten".to_string(), 100, 200), ("ten".to_string(), 400, 100)]
    );
    assert_eq!(
        of("thread_state", 10),
        vec![
            ("Running".to_string(), 100, 200),
            ("Sleeping".to_string(), 300, 50),
            ("Runnable".to_string(), 350, 50),
            ("Running".to_string(), 400, 100),
            ("Runnable (Preempted)".to_string(), 500, -1),
        ]
    );
    assert!(summary.coverage["scheduling"]);

    // The same switches in compact encoding give the same CPU slices.
    let compact = |cpu: u64, ts: &[u64], state: &[u64], next: &[u64], comm: &[u64]| {
        let c = Msg::new()
            .str(5, "swapper")
            .str(5, "ten")
            .str(5, "twenty")
            .packed(1, ts)
            .packed(2, state)
            .packed(3, next)
            .packed(6, comm);
        Msg::new()
            .varint(10, 3)
            .msg(1, Msg::new().varint(1, cpu).msg(4, c))
    };
    let packed = trace(&[
        compact(1, &[400, 100], &[0, 0], &[10, 20], &[1, 2]),
        compact(0, &[100, 200], &[0, 1], &[10, 0], &[1, 0]),
    ]);
    let (_, sink) = run(&packed).expect("compact");
    let kinds = sink.strs(T::TraceEvents, "kind");
    let slices: Vec<(String, i64, i64)> = events(&sink)
        .into_iter()
        .zip(kinds)
        .filter(|(_, k)| k.as_deref() == Some("sched_slice"))
        .map(|(e, _)| e)
        .collect();
    assert_eq!(
        slices,
        vec![
            ("ten".to_string(), 100, 200),
            ("ten".to_string(), 400, 100),
            ("twenty".to_string(), 500, -1),
        ]
    );
}

#[test]
fn perf_samples_resolve_interned_callstacks_root_first() {
    let interned = Msg::new()
        .msg(5, Msg::new().varint(1, 1).str(2, "main"))
        .msg(5, Msg::new().varint(1, 2).str(2, "compute"))
        .msg(17, Msg::new().varint(1, 1).str(2, "usr"))
        .msg(17, Msg::new().varint(1, 2).str(2, "bin"))
        .msg(17, Msg::new().varint(1, 3).str(2, "app"))
        .msg(19, Msg::new().varint(1, 1).packed(7, &[1, 2, 3]))
        .msg(6, Msg::new().varint(1, 1).varint(2, 1).varint(3, 1))
        .msg(6, Msg::new().varint(1, 2).varint(2, 2).varint(3, 1))
        .msg(6, Msg::new().varint(1, 3).varint(3, 1).varint(4, 0xbeef))
        // Bottom (outermost) frame first.
        .msg(7, Msg::new().varint(1, 1).packed(2, &[1, 2, 3]))
        .msg(7, Msg::new().varint(1, 2).packed(2, &[1, 2]));
    let sample = |ts: u64, callstack: u64| {
        packet(ts, SEQ).varint(13, NEEDS_STATE).msg(
            66,
            Msg::new()
                .varint(1, 0)
                .varint(2, 40)
                .varint(3, 41)
                .varint(4, callstack),
        )
    };
    let p = vec![
        packet(0, SEQ).varint(13, CLEARED).msg(12, interned),
        sample(10, 1),
        sample(20, 1),
        sample(30, 2),
        // A sample the profiler skipped carries no stack.
        packet(40, SEQ).msg(66, Msg::new().varint(2, 40).varint(18, 1)),
    ];
    let (summary, sink) = run(&trace(&p)).expect("extract");
    let metric = sink.strs(T::FrameTotals, "metric");
    let function = sink.strs(T::FrameTotals, "function");
    let module = sink.strs(T::FrameTotals, "module");
    let self_v = sink.i64s(T::FrameTotals, "self_value");
    let incl = sink.i64s(T::FrameTotals, "inclusive_value");
    let mut totals: Vec<(String, Option<String>, i64, i64)> = (0..metric.len())
        .filter(|&i| metric[i].as_deref() == Some("cpu.samples"))
        .map(|i| {
            (
                function[i].clone().unwrap_or_default(),
                module[i].clone(),
                self_v[i].unwrap_or(0),
                incl[i].unwrap_or(0),
            )
        })
        .collect();
    totals.sort();
    assert_eq!(
        totals,
        vec![
            ("0xbeef".to_string(), Some("app".to_string()), 2, 2),
            ("compute".to_string(), Some("app".to_string()), 1, 3),
            ("main".to_string(), Some("app".to_string()), 0, 3),
        ]
    );
    assert!(!summary.coverage["symbolized_frames"]);
    assert_eq!(limitation(&summary, "sample_skipped_by_producer"), 1);
    let ts = sink.i64s(T::Samples, "ts_ns");
    assert_eq!(ts, vec![Some(10), Some(20), Some(30)]);
}

#[test]
fn counters_annotations_and_process_stats_are_kept() {
    let counter_track = Msg::new()
        .varint(1, 9)
        .str(2, "queue depth")
        .msg(8, Msg::new().varint(3, 2).varint(5, 1));
    let annotations = Msg::new()
        .str(10, "request")
        .msg(11, Msg::new().str(10, "id").varint(4, 42))
        .msg(11, Msg::new().str(10, "path").str(6, "/a"));
    let stats = Msg::new().msg(1, Msg::new().varint(1, 100).varint(3, 2048));
    let p = vec![
        thread_track(7, 100, 101, "main"),
        packet(0, SEQ).msg(60, counter_track),
        packet(10, SEQ).msg(11, event(4, 9).varint(30, 5)),
        packet(20, SEQ).msg(11, event(4, 9).varint(30, 3)),
        packet(30, SEQ).msg(11, event(3, 7).str(23, "tagged").msg(4, annotations)),
        packet(40, SEQ).msg(9, stats),
    ];
    let (_, sink) = run(&trace(&p)).expect("extract");
    let names = sink.strs(T::Counters, "name");
    let values = sink.f64s(T::Counters, "value");
    let units = sink.strs(T::Counters, "unit");
    let rows: Vec<(String, f64, Option<String>)> = names
        .into_iter()
        .zip(values)
        .zip(units)
        .map(|((n, v), u)| (n.unwrap_or_default(), v, u))
        .collect();
    assert_eq!(
        rows,
        vec![
            // Incremental: 5, then 5 + 3.
            ("queue depth".to_string(), 5.0, Some("count".to_string())),
            ("queue depth".to_string(), 8.0, Some("count".to_string())),
            (
                "mem.rss".to_string(),
                2048.0 * 1024.0,
                Some("bytes".to_string())
            ),
        ]
    );
    let args = sink.strs(T::TraceEvents, "args_json");
    let args: serde_json::Value =
        serde_json::from_str(args[0].as_deref().expect("args")).expect("json");
    assert_eq!(
        args,
        serde_json::json!({"request": {"id": 42, "path": "/a"}})
    );
}

#[test]
fn broken_inputs_are_typed_errors_or_limitations() {
    for garbage in [
        &b""[..],
        b"{\"traceEvents\": []}",
        b"\x0a\xff\xff\xff\xff\x7f",
    ] {
        match run(garbage) {
            Err(ExtractError::Parse { .. }) => {}
            other => panic!("{garbage:?}: {:?}", other.map(|s| s.0)),
        }
    }
    let good = vec![
        thread_track(7, 1, 2, "main"),
        packet(100, SEQ).msg(11, event(3, 7).str(23, "kept")),
        // A packet whose track event is not protobuf.
        packet(150, SEQ).bytes(11, b"\x0b\x0b\x0b"),
        packet(200, SEQ).msg(11, event(3, 7).str(23, "lost")),
    ];
    let bytes = trace(&good);
    let (summary, sink) = run(&bytes[..bytes.len() - 3]).expect("truncated keeps the start");
    assert_eq!(events(&sink), vec![("kept".to_string(), 100, 0)]);
    assert_eq!(limitation(&summary, "truncated_input"), 1);
    assert_eq!(limitation(&summary, "malformed_packet"), 1);
}
