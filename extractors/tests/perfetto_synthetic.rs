//! The Perfetto extractor on traces written here with the `perfetto_protos`
//! crate (the reference encoder, not the extractor's prost subset):
//! interning and its resets, packet loss, out-of-order sequences,
//! compressed packets, clock conversion, scheduling in both encodings,
//! callstack samples, counters and broken inputs.

mod common;

use common::perfetto::*;
use common::*;
use flameox_extractors::{
    EvidenceTable as T, ExtractError, ExtractionSummary, NoObserver, extract_perfetto,
};
use perfetto_protos::clock_snapshot::{ClockSnapshot, clock_snapshot::Clock};
use perfetto_protos::counter_descriptor::{CounterDescriptor, counter_descriptor::Unit};
use perfetto_protos::debug_annotation::DebugAnnotation;
use perfetto_protos::ftrace_event::FtraceEvent;
use perfetto_protos::ftrace_event_bundle::{FtraceEventBundle, ftrace_event_bundle::CompactSched};
use perfetto_protos::interned_data::InternedData;
use perfetto_protos::process_stats::{ProcessStats, process_stats::Process};
use perfetto_protos::profile_common::{Callstack, Frame, InternedString, Mapping};
use perfetto_protos::profile_packet::{PerfSample, perf_sample::SampleSkipReason};
use perfetto_protos::sched::{SchedSwitchFtraceEvent, SchedWakingFtraceEvent};
use perfetto_protos::trace_packet::TracePacket;
use perfetto_protos::track_descriptor::TrackDescriptor;
use perfetto_protos::track_event::track_event::Type;
use protobuf::{Enum, MessageField};

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

const SEQ: u32 = 10;

fn flagged(ts: u64, seq: u32, flags: u32) -> TracePacket {
    let mut p = packet(ts, seq);
    p.set_sequence_flags(flags);
    p
}

fn with_names(mut p: TracePacket, names: &[(u64, &str)]) -> TracePacket {
    p.interned_data = MessageField::some(interned_names(names));
    p
}

fn by_iid(kind: Type, track: u64, iid: u64) -> perfetto_protos::track_event::TrackEvent {
    let mut e = event(kind, track);
    e.set_name_iid(iid);
    e
}

#[test]
fn interned_names_follow_resets_and_lost_state_is_skipped() {
    let mut lost = flagged(5_000, SEQ, NEEDS_STATE);
    lost.set_previous_packet_dropped(true);
    let p = vec![
        thread_track(SEQ, 7, 100, 101, "worker"),
        with_event(
            with_names(flagged(1_000, SEQ, CLEARED), &[(1, "alpha")]),
            by_iid(Type::TYPE_SLICE_BEGIN, 7, 1),
        ),
        with_event(
            flagged(2_000, SEQ, NEEDS_STATE),
            event(Type::TYPE_SLICE_END, 7),
        ),
        // The state is cleared: iid 1 now means "beta".
        with_event(
            with_names(flagged(3_000, SEQ, CLEARED), &[(1, "beta")]),
            by_iid(Type::TYPE_SLICE_BEGIN, 7, 1),
        ),
        with_event(
            flagged(3_500, SEQ, NEEDS_STATE),
            event(Type::TYPE_SLICE_END, 7),
        ),
        // Another sequence uses interning without ever clearing: skipped.
        with_event(
            flagged(4_000, 11, NEEDS_STATE),
            by_iid(Type::TYPE_INSTANT, 7, 1),
        ),
        // Loss on the first sequence invalidates its state until a clear.
        with_event(lost, by_iid(Type::TYPE_INSTANT, 7, 1)),
        with_event(packet(6_000, SEQ), named(Type::TYPE_INSTANT, 7, "inline")),
    ];
    let (summary, sink) = run(&trace(p)).expect("extract");
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
fn sequences_keep_their_own_ids_when_packets_interleave_out_of_order() {
    // Sequence 1 writes later timestamps first; both use iid 1.
    let p = vec![
        thread_track(1, 7, 1, 2, "a"),
        thread_track(2, 8, 1, 3, "b"),
        with_event(
            with_names(flagged(900, 1, CLEARED), &[(1, "from-one")]),
            by_iid(Type::TYPE_SLICE_BEGIN, 7, 1),
        ),
        with_event(
            with_names(flagged(100, 2, CLEARED), &[(1, "from-two")]),
            by_iid(Type::TYPE_SLICE_BEGIN, 8, 1),
        ),
        with_event(flagged(950, 1, NEEDS_STATE), event(Type::TYPE_SLICE_END, 7)),
        with_event(
            flagged(200, 2, NEEDS_STATE),
            by_iid(Type::TYPE_INSTANT, 8, 1),
        ),
        with_event(flagged(300, 2, NEEDS_STATE), event(Type::TYPE_SLICE_END, 8)),
    ];
    let (_, sink) = run(&trace(p)).expect("extract");
    assert_eq!(
        events(&sink),
        vec![
            ("from-two".to_string(), 100, 200),
            ("from-two".to_string(), 200, 0),
            ("from-one".to_string(), 900, 50),
        ]
    );
    let depth = sink.i64s(T::TraceEvents, "depth");
    assert_eq!(depth, vec![Some(0), Some(1), Some(0)]);
}

#[test]
fn compressed_packets_give_the_same_rows_as_plain_ones() {
    let body = || {
        vec![
            thread_track(SEQ, 7, 1, 2, "main"),
            with_event(packet(100, SEQ), named(Type::TYPE_SLICE_BEGIN, 7, "outer")),
            with_event(packet(150, SEQ), named(Type::TYPE_SLICE_BEGIN, 7, "inner")),
            with_event(packet(180, SEQ), event(Type::TYPE_SLICE_END, 7)),
            with_event(packet(400, SEQ), event(Type::TYPE_SLICE_END, 7)),
        ]
    };
    let (_, plain) = run(&trace(body())).expect("plain");
    let mut packets = body();
    let tail = packets.split_off(3);
    let (summary, packed) = run(&trace(vec![compressed(packets), compressed(tail)])).expect("zlib");
    assert_eq!(events(&plain), events(&packed));
    assert_eq!(
        events(&packed),
        vec![
            ("outer".to_string(), 100, 300),
            ("inner".to_string(), 150, 30)
        ]
    );
    assert!(summary.coverage["compressed_packets"]);
    let depth = packed.i64s(T::TraceEvents, "depth");
    assert_eq!(depth, vec![Some(0), Some(1)]);
}

fn clock(id: u32, ts: u64) -> Clock {
    Clock {
        clock_id: Some(id),
        timestamp: Some(ts),
        ..Default::default()
    }
}

#[test]
fn clocks_convert_through_snapshots_or_are_reported() {
    let mut snapshot = ClockSnapshot::new();
    snapshot.clocks = vec![
        clock(6, 1_000_000),
        clock(3, 1_000),
        // A sequence-scoped incremental clock in microseconds.
        Clock {
            is_incremental: Some(true),
            unit_multiplier_ns: Some(1000),
            ..clock(64, 10)
        },
    ];
    let mut snap = TracePacket::new();
    snap.set_trusted_packet_sequence_id(SEQ);
    snap.set_clock_snapshot(snapshot);
    let in_clock = |ts: u64, id: u32, name: &str| {
        let mut p = packet(ts, SEQ);
        p.set_timestamp_clock_id(id);
        with_event(p, named(Type::TYPE_INSTANT, 7, name))
    };
    let p = vec![
        snap,
        thread_track(SEQ, 7, 1, 2, "main"),
        // Monotonic 1_500 → boottime 1_000_500.
        in_clock(1_500, 3, "mono"),
        // Realtime has no snapshot: skipped and reported.
        in_clock(9, 1, "realtime"),
        // Incremental: 10 µs + 5 µs, then + 2 µs.
        in_clock(5, 64, "inc1"),
        in_clock(2, 64, "inc2"),
    ];
    let (summary, sink) = run(&trace(p)).expect("extract");
    assert_eq!(
        events(&sink),
        vec![
            ("mono".to_string(), 1_000_500, 0),
            ("inc1".to_string(), 1_005_000, 0),
            ("inc2".to_string(), 1_007_000, 0),
        ]
    );
    assert_eq!(limitation(&summary, "clock_unconvertible"), 1);
}

fn bundle(cpu: u32, events: Vec<FtraceEvent>) -> TracePacket {
    let mut b = FtraceEventBundle::new();
    b.set_cpu(cpu);
    b.event = events;
    let mut p = TracePacket::new();
    p.set_trusted_packet_sequence_id(3);
    p.set_ftrace_events(b);
    p
}

fn switch(ts: u64, prev: i32, state: i64, next: i32, next_comm: &str) -> FtraceEvent {
    let s = SchedSwitchFtraceEvent {
        prev_comm: Some("prev".into()),
        prev_pid: Some(prev),
        prev_state: Some(state),
        next_comm: Some(next_comm.into()),
        next_pid: Some(next),
        next_prio: Some(120),
        ..Default::default()
    };
    let mut e = FtraceEvent::new();
    e.set_timestamp(ts);
    e.set_pid(prev as u32);
    e.set_sched_switch(s);
    e
}

fn waking(ts: u64, waker: u32, pid: i32) -> FtraceEvent {
    let w = SchedWakingFtraceEvent {
        comm: Some("t".into()),
        pid: Some(pid),
        target_cpu: Some(0),
        ..Default::default()
    };
    let mut e = FtraceEvent::new();
    e.set_timestamp(ts);
    e.set_pid(waker);
    e.set_sched_waking(w);
    e
}

#[test]
fn scheduling_becomes_cpu_slices_and_thread_states_in_either_encoding() {
    // CPU 0: idle → 10 (t=100) → sleeps, idle (t=300); 10 is woken from
    // CPU 1 at t=350 and runs on CPU 1 from t=400 to t=500 (preempted by 20).
    // CPU 1's bundle comes first in the file but its events are later.
    let plain = trace(vec![
        bundle(
            1,
            vec![
                waking(350, 20, 10),
                switch(400, 0, 0, 10, "ten"),
                switch(500, 10, 0, 20, "twenty"),
            ],
        ),
        bundle(
            0,
            vec![
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
    let compact = |cpu: u32, ts: &[u64], state: &[i64], next: &[i32], comm: &[u32]| {
        let c = CompactSched {
            intern_table: vec!["swapper".into(), "ten".into(), "twenty".into()],
            switch_timestamp: ts.to_vec(),
            switch_prev_state: state.to_vec(),
            switch_next_pid: next.to_vec(),
            switch_next_prio: vec![120; next.len()],
            switch_next_comm_index: comm.to_vec(),
            ..Default::default()
        };
        let mut b = FtraceEventBundle::new();
        b.set_cpu(cpu);
        b.compact_sched = MessageField::some(c);
        let mut p = TracePacket::new();
        p.set_trusted_packet_sequence_id(3);
        p.set_ftrace_events(b);
        p
    };
    let packed = trace(vec![
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

fn interned_string(iid: u64, s: &str) -> InternedString {
    InternedString {
        iid: Some(iid),
        str: Some(s.as_bytes().to_vec()),
        ..Default::default()
    }
}

#[test]
fn perf_samples_resolve_interned_callstacks_root_first() {
    let mut interned = InternedData::new();
    interned.function_names = vec![interned_string(1, "main"), interned_string(2, "compute")];
    interned.mapping_paths = vec![
        interned_string(1, "usr"),
        interned_string(2, "bin"),
        interned_string(3, "app"),
    ];
    interned.mappings = vec![Mapping {
        iid: Some(1),
        path_string_ids: vec![1, 2, 3],
        ..Default::default()
    }];
    let frame = |iid: u64, function: Option<u64>, pc: u64| Frame {
        iid: Some(iid),
        function_name_id: function,
        mapping_id: Some(1),
        rel_pc: Some(pc),
        ..Default::default()
    };
    interned.frames = vec![
        frame(1, Some(1), 0),
        frame(2, Some(2), 0),
        frame(3, None, 0xbeef),
    ];
    // Bottom (outermost) frame first.
    let callstack = |iid: u64, frames: &[u64]| Callstack {
        iid: Some(iid),
        frame_ids: frames.to_vec(),
        ..Default::default()
    };
    interned.callstacks = vec![callstack(1, &[1, 2, 3]), callstack(2, &[1, 2])];
    let sample = |ts: u64, callstack: u64| {
        let mut p = flagged(ts, SEQ, NEEDS_STATE);
        p.set_perf_sample(PerfSample {
            cpu: Some(0),
            pid: Some(40),
            tid: Some(41),
            callstack_iid: Some(callstack),
            ..Default::default()
        });
        p
    };
    let mut first = flagged(0, SEQ, CLEARED);
    first.interned_data = MessageField::some(interned);
    let mut skipped = packet(40, SEQ);
    let mut s = PerfSample::new();
    s.set_pid(40);
    s.set_sample_skipped_reason(SampleSkipReason::PROFILER_SKIP_READ_STAGE);
    skipped.set_perf_sample(s);
    let p = vec![first, sample(10, 1), sample(20, 1), sample(30, 2), skipped];
    let (summary, sink) = run(&trace(p)).expect("extract");
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
    let mut counter = TrackDescriptor::new();
    counter.set_uuid(9);
    counter.set_name("queue depth".into());
    counter.counter = MessageField::some(CounterDescriptor {
        unit: Some(Unit::UNIT_COUNT.into()),
        is_incremental: Some(true),
        ..Default::default()
    });
    let mut descriptor = TracePacket::new();
    descriptor.set_trusted_packet_sequence_id(SEQ);
    descriptor.set_track_descriptor(counter);
    let counter_at = |ts: u64, v: i64| {
        let mut e = event(Type::TYPE_COUNTER, 9);
        e.set_counter_value(v);
        with_event(packet(ts, SEQ), e)
    };
    let entry = |name: &str, f: &dyn Fn(&mut DebugAnnotation)| {
        let mut a = DebugAnnotation::new();
        a.set_name(name.into());
        f(&mut a);
        a
    };
    let request = entry("request", &|a| {
        a.dict_entries = vec![
            entry("id", &|a| a.set_int_value(42)),
            entry("path", &|a| a.set_string_value("/a".into())),
        ];
    });
    let mut tagged = named(Type::TYPE_INSTANT, 7, "tagged");
    tagged.debug_annotations = vec![request];
    let mut stats = ProcessStats::new();
    stats.processes = vec![Process {
        pid: Some(100),
        vm_rss_kb: Some(2048),
        ..Default::default()
    }];
    let mut stats_packet = packet(40, SEQ);
    stats_packet.set_process_stats(stats);
    let p = vec![
        thread_track(SEQ, 7, 100, 101, "main"),
        descriptor,
        counter_at(10, 5),
        counter_at(20, 3),
        with_event(packet(30, SEQ), tagged),
        stats_packet,
    ];
    let (_, sink) = run(&trace(p)).expect("extract");
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
    assert_eq!(Unit::UNIT_COUNT.value(), 2);
}

#[test]
fn broken_inputs_are_typed_errors_or_limitations() {
    // Empty, JSON, a varint that never ends, a length past the end.
    for garbage in [
        &b""[..],
        b"{\"traceEvents\": []}",
        b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
        b"\x0a\x7f\x40\x01",
    ] {
        match run(garbage) {
            Err(ExtractError::Parse { .. }) => {}
            other => panic!("{garbage:?}: {:?}", other.map(|s| s.0)),
        }
    }
    let mut bytes = trace(vec![
        thread_track(SEQ, 7, 1, 2, "main"),
        with_event(packet(100, SEQ), named(Type::TYPE_INSTANT, 7, "kept")),
    ]);
    // A packet whose track event (field 11) is not protobuf.
    bytes.extend_from_slice(&[0x0a, 0x05, 0x5a, 0x03, 0x0b, 0x0b, 0x0b]);
    let tail = trace(vec![with_event(
        packet(200, SEQ),
        named(Type::TYPE_INSTANT, 7, "lost"),
    )]);
    bytes.extend_from_slice(&tail[..tail.len() - 3]);
    let (summary, sink) = run(&bytes).expect("truncated keeps the start");
    assert_eq!(events(&sink), vec![("kept".to_string(), 100, 0)]);
    assert_eq!(limitation(&summary, "truncated_input"), 1);
    assert_eq!(limitation(&summary, "malformed_packet"), 1);
}

/// A track event without a type that carries only a legacy phase (what
/// Chromium writes for JSON-era trace macros).
fn legacy(
    name: &str,
    phase: u8,
    edit: impl FnOnce(&mut perfetto_protos::track_event::track_event::LegacyEvent),
) -> perfetto_protos::track_event::TrackEvent {
    let mut e = perfetto_protos::track_event::TrackEvent::new();
    e.set_track_uuid(7);
    e.set_name(name.into());
    let mut l = perfetto_protos::track_event::track_event::LegacyEvent::new();
    l.set_phase(i32::from(phase));
    edit(&mut l);
    e.legacy_event = MessageField::some(l);
    e
}

#[test]
fn legacy_phases_become_slices_instants_and_counters() {
    let value = |name: &str, v: i64| {
        let mut a = DebugAnnotation::new();
        a.set_name(name.into());
        a.set_int_value(v);
        a
    };
    let mut mem = legacy("mem", b'C', |_| {});
    mem.debug_annotations = vec![value("heap", 10), value("stack", 2)];
    let mut fps = legacy("fps", b'C', |_| {});
    fps.debug_annotations = vec![value("value", 60)];
    let p = vec![
        thread_track(SEQ, 7, 100, 101, "main"),
        with_event(packet(1_000, SEQ), legacy("outer", b'B', |_| {})),
        with_event(
            packet(2_000, SEQ),
            legacy("work", b'X', |l| l.set_duration_us(1)),
        ),
        with_event(packet(3_000, SEQ), legacy("mark", b'I', |_| {})),
        with_event(packet(4_000, SEQ), mem),
        with_event(packet(4_500, SEQ), fps),
        with_event(packet(5_000, SEQ), legacy("outer", b'E', |_| {})),
        with_event(
            packet(6_000, SEQ),
            legacy("elsewhere", b'X', |l| {
                l.set_duration_us(2);
                l.set_pid_override(200);
                l.set_tid_override(201);
            }),
        ),
        with_event(packet(7_000, SEQ), legacy("async", b'b', |_| {})),
    ];
    let (summary, sink) = run(&trace(p)).expect("extract");
    let mut got = events(&sink);
    got.sort();
    assert_eq!(
        got,
        vec![
            ("elsewhere".to_string(), 6_000, 2_000),
            ("mark".to_string(), 3_000, 0),
            ("outer".to_string(), 1_000, 4_000),
            ("work".to_string(), 2_000, 1_000),
        ]
    );
    let names = sink.strs(T::TraceEvents, "name");
    let tids = sink.i64s(T::TraceEvents, "tid");
    let kinds = sink.strs(T::TraceEvents, "kind");
    for ((name, tid), kind) in names.iter().zip(&tids).zip(&kinds) {
        let expected = if name.as_deref() == Some("elsewhere") {
            201
        } else {
            101
        };
        assert_eq!(*tid, Some(expected), "{name:?}");
        let instant = name.as_deref() == Some("mark");
        assert_eq!(kind.as_deref() == Some("instant"), instant, "{name:?}");
    }
    let counters: Vec<(String, f64)> = sink
        .strs(T::Counters, "name")
        .into_iter()
        .zip(sink.f64s(T::Counters, "value"))
        .map(|(n, v)| (n.unwrap_or_default(), v))
        .collect();
    assert_eq!(
        counters,
        vec![
            ("mem.heap".to_string(), 10.0),
            ("mem.stack".to_string(), 2.0),
            ("fps".to_string(), 60.0),
        ]
    );
    let skipped = summary
        .limitations
        .iter()
        .find(|l| l.code == "legacy_phase_skipped")
        .expect("the async phase is reported");
    assert_eq!(skipped.count, 1);
}
