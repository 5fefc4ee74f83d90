//! The Perfetto extractor on small inputs built to make it do a lot: one
//! long interned string named a great many times (by callstacks, mapping
//! paths, categories, annotations, event names), scheduling over a great
//! many CPUs, one long compact-sched entry used by every switch. Each ends
//! within a deadline (a regression fails here instead of hanging), with
//! output of a bounded size and the limitations it owes.

mod common;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::perfetto::*;
use common::*;
use flameox_extractors::{EvidenceTable as T, ExtractionSummary, NoObserver, extract_perfetto};
use perfetto_protos::debug_annotation::{DebugAnnotation, DebugAnnotationName};
use perfetto_protos::ftrace_event::FtraceEvent;
use perfetto_protos::ftrace_event_bundle::{FtraceEventBundle, ftrace_event_bundle::CompactSched};
use perfetto_protos::interned_data::InternedData;
use perfetto_protos::profile_common::{Callstack, Frame, InternedString, Mapping};
use perfetto_protos::profile_packet::PerfSample;
use perfetto_protos::sched::SchedSwitchFtraceEvent;
use perfetto_protos::trace_packet::TracePacket;
use perfetto_protos::track_event::{EventCategory, EventName, track_event::Type};
use protobuf::MessageField;

/// Far above what any of these takes once bounded (well under a second
/// each in a release build), far below what they took before.
const DEADLINE: Duration = Duration::from_secs(60);

/// One MiB: the long interned string.
const LONG: usize = 1 << 20;

const SEQ: u32 = 10;

/// Extracts on a thread of its own: a run past the deadline fails the test.
fn run_bounded(name: &str, bytes: Vec<u8>) -> (ExtractionSummary, MemorySink) {
    let (tx, rx) = mpsc::channel();
    let input = bytes.len();
    std::thread::spawn(move || {
        let start = Instant::now();
        let mut sink = MemorySink::default();
        let result = extract_perfetto(&bytes[..], &options(), &mut sink, &NoObserver);
        let _ = tx.send((result.map(|s| (s, sink)), start.elapsed()));
    });
    match rx.recv_timeout(DEADLINE) {
        Ok((Ok(out), took)) => {
            eprintln!("{name}: {input} bytes in {took:?}");
            out
        }
        Ok((Err(e), _)) => panic!("{name}: {e}"),
        Err(_) => panic!("{name}: {input} bytes did not end within {DEADLINE:?}"),
    }
}

fn flagged(ts: u64, flags: u32) -> TracePacket {
    let mut p = packet(ts, SEQ);
    p.set_sequence_flags(flags);
    p
}

fn interned_string(iid: u64, s: &str) -> InternedString {
    InternedString {
        iid: Some(iid),
        str: Some(s.as_bytes().to_vec()),
        ..Default::default()
    }
}

fn sample(ts: u64, tid: u32, callstack: u64) -> TracePacket {
    let mut p = flagged(ts, NEEDS_STATE);
    p.set_perf_sample(PerfSample {
        pid: Some(1),
        tid: Some(tid),
        callstack_iid: Some(callstack),
        ..Default::default()
    });
    p
}

/// The distinct values of a dictionary column with how many rows use
/// each (rows are not turned into strings one by one: their values may
/// be long).
fn dictionary_counts(sink: &MemorySink, table: T, column: &str) -> Vec<(usize, usize)> {
    use arrow::array::AsArray;
    use arrow::datatypes::Int32Type;
    let mut counts = std::collections::BTreeMap::new();
    for batch in sink.batches.get(&table).into_iter().flatten() {
        let d = batch
            .column_by_name(column)
            .unwrap()
            .as_dictionary::<Int32Type>();
        let values = d.values().as_string::<i32>();
        for key in d.keys().iter().flatten() {
            *counts.entry(values.value(key as usize).len()).or_insert(0) += 1;
        }
    }
    counts.into_iter().collect()
}

/// Total bytes of a string column.
fn text_bytes(sink: &MemorySink, table: T, column: &str) -> usize {
    sink.strs(table, column)
        .iter()
        .map(|s| s.as_ref().map_or(0, String::len))
        .sum()
}

#[test]
fn callstacks_naming_one_long_frame_many_times_resolve_it_once() {
    let long = "f".repeat(LONG);
    let mut interned = InternedData::new();
    interned.function_names = vec![interned_string(1, &long)];
    interned.mapping_paths = vec![interned_string(1, "lib"), interned_string(2, "libbig.so")];
    interned.mappings = vec![Mapping {
        iid: Some(1),
        path_string_ids: vec![1, 2],
        ..Default::default()
    }];
    // Frame 1, and 20 000 more frames of the same function and mapping.
    let frame = |iid: u64| Frame {
        iid: Some(iid),
        function_name_id: Some(1),
        mapping_id: Some(1),
        rel_pc: Some(iid),
        ..Default::default()
    };
    interned.frames = (1..=20_001).map(frame).collect();
    interned.callstacks = vec![
        // Frame 1, 300 000 times.
        Callstack {
            iid: Some(1),
            frame_ids: vec![1; 300_000],
            ..Default::default()
        },
        // Each of the others once.
        Callstack {
            iid: Some(2),
            frame_ids: (2..=20_001).collect(),
            ..Default::default()
        },
    ];
    let mut first = flagged(0, CLEARED);
    first.interned_data = MessageField::some(interned);
    let bytes = trace(vec![
        first,
        sample(10, 2, 1),
        sample(20, 2, 1),
        sample(30, 2, 2),
    ]);
    assert!(bytes.len() < 4 << 20, "{} bytes", bytes.len());
    let (summary, sink) = run_bounded("long frame", bytes);
    // One frame, named once in the output.
    let functions = sink.strs(T::Frames, "function");
    assert_eq!(functions.len(), 1);
    assert_eq!(functions[0].as_deref().map(str::len), Some(LONG));
    assert_eq!(
        sink.strs(T::Frames, "module")[0].as_deref(),
        Some("libbig.so")
    );
    // The second callstack is the first one's first 20 000 nodes.
    assert_eq!(sink.rows(T::StackNodes), 300_000);
    assert_eq!(sink.rows(T::Samples), 3);
    assert_eq!(limitation(&summary, "interned_id_missing"), 0);
}

#[test]
fn a_mapping_path_of_one_long_piece_named_many_times_is_read_a_bounded_way() {
    let long = "m".repeat(LONG);
    let mut interned = InternedData::new();
    interned.function_names = vec![interned_string(1, "main")];
    let slashes = "/".repeat(20);
    interned.mapping_paths = vec![interned_string(1, &long), interned_string(2, &slashes)];
    interned.mappings = vec![
        // The long piece 500 000 times: only the first pieces are read.
        Mapping {
            iid: Some(1),
            path_string_ids: vec![1; 500_000],
            ..Default::default()
        },
        // A path of slashes alone names itself, cut.
        Mapping {
            iid: Some(2),
            path_string_ids: vec![2; 2000],
            ..Default::default()
        },
        // Fewer pieces of slashes: read whole.
        Mapping {
            iid: Some(3),
            path_string_ids: vec![2; 3],
            ..Default::default()
        },
    ];
    interned.frames = (1..=3)
        .map(|m| Frame {
            iid: Some(m),
            function_name_id: Some(1),
            mapping_id: Some(m),
            ..Default::default()
        })
        .collect();
    interned.callstacks = vec![Callstack {
        iid: Some(1),
        frame_ids: vec![1, 2, 3],
        ..Default::default()
    }];
    let mut first = flagged(0, CLEARED);
    first.interned_data = MessageField::some(interned);
    let bytes = trace(vec![first, sample(10, 2, 1)]);
    assert!(bytes.len() < 4 << 20, "{} bytes", bytes.len());
    let (summary, sink) = run_bounded("long mapping path", bytes);
    let mut modules: Vec<usize> = sink
        .strs(T::Frames, "module")
        .iter()
        .map(|m| m.as_ref().map_or(0, String::len))
        .collect();
    modules.sort();
    // 3 × 20 slashes and 2 separators; 4096 slashes (cut); the piece.
    assert_eq!(modules, vec![62, 4096, LONG]);
    assert_eq!(limitation(&summary, "mapping_path_truncated"), 2);
}

#[test]
fn categories_naming_one_long_category_many_times_are_cut() {
    let long = "c".repeat(LONG);
    let mut interned = InternedData::new();
    let mut category = EventCategory::new();
    category.set_iid(1);
    category.set_name(long);
    interned.event_categories = vec![category];
    let mut first = flagged(0, CLEARED);
    first.interned_data = MessageField::some(interned);
    let mut p = vec![thread_track(SEQ, 7, 1, 2, "t"), first];
    for i in 0..5 {
        let mut e = named(Type::TYPE_INSTANT, 7, "x");
        e.category_iids = vec![1; 100_000];
        p.push(with_event(flagged(10 + i, NEEDS_STATE), e));
    }
    // One long category alone is kept whole.
    let mut e = named(Type::TYPE_INSTANT, 7, "y");
    e.category_iids = vec![1];
    p.push(with_event(flagged(20, NEEDS_STATE), e));
    let bytes = trace(p);
    assert!(bytes.len() < 4 << 20, "{} bytes", bytes.len());
    let (summary, sink) = run_bounded("long category", bytes);
    assert_eq!(
        dictionary_counts(&sink, T::TraceEvents, "category"),
        vec![(4096, 5), (LONG, 1)]
    );
    assert_eq!(limitation(&summary, "category_truncated"), 5);
}

#[test]
fn annotations_naming_long_interned_strings_many_times_stay_within_the_args_bound() {
    let long = "a".repeat(LONG);
    let mut interned = InternedData::new();
    let mut name = DebugAnnotationName::new();
    name.set_iid(1);
    name.set_name(long.clone());
    interned.debug_annotation_names = vec![name];
    interned.debug_annotation_string_values = vec![interned_string(1, &long)];
    let mut first = flagged(0, CLEARED);
    first.interned_data = MessageField::some(interned);
    let mut p = vec![thread_track(SEQ, 7, 1, 2, "t"), first];
    let by_iid = || {
        let mut a = DebugAnnotation::new();
        a.set_name_iid(1);
        a.set_string_value_iid(1);
        a
    };
    // The long name and value, 60 000 times in one event.
    let mut e = named(Type::TYPE_INSTANT, 7, "same");
    e.debug_annotations = vec![by_iid(); 60_000];
    p.push(with_event(flagged(10, NEEDS_STATE), e));
    // 20 000 short names, each with the long value; and an undefined id.
    let mut e = named(Type::TYPE_INSTANT, 7, "many");
    e.debug_annotations = (0..20_000)
        .map(|i| {
            let mut a = DebugAnnotation::new();
            a.set_name(format!("k{i:05}"));
            a.set_string_value_iid(1);
            a
        })
        .collect();
    let mut undefined = DebugAnnotation::new();
    undefined.set_name("z".into());
    undefined.set_string_value_iid(404);
    e.debug_annotations.push(undefined);
    p.push(with_event(flagged(20, NEEDS_STATE), e));
    // The long value in an array of dictionaries, nested.
    let mut list = DebugAnnotation::new();
    list.set_name("list".into());
    list.array_values = (0..500)
        .map(|_| {
            let mut d = DebugAnnotation::new();
            d.dict_entries = vec![by_iid(); 100];
            d
        })
        .collect();
    let mut e = named(Type::TYPE_INSTANT, 7, "nested");
    e.debug_annotations = vec![list];
    p.push(with_event(flagged(30, NEEDS_STATE), e));
    let bytes = trace(p);
    assert!(bytes.len() < 4 << 20, "{} bytes", bytes.len());
    let (summary, sink) = run_bounded("long annotations", bytes);
    let max = options().max_args_bytes;
    let args = sink.strs(T::TraceEvents, "args_json");
    assert_eq!(args.len(), 3);
    let prefixes = [
        format!("{{\"{}", "a".repeat(100)),
        format!("{{\"k00000\":\"{}", "a".repeat(100)),
        format!("{{\"list\":[{{\"{}", "a".repeat(100)),
    ];
    for (a, prefix) in args.iter().zip(&prefixes) {
        let a = a.as_deref().expect("args");
        assert!(a.len() <= max, "{} bytes", a.len());
        assert!(a.starts_with(prefix.as_str()), "{}", &a[..40]);
        assert!(a.ends_with(flameox_extractors::api::ARGS_TRUNCATED_MARKER));
    }
    assert_eq!(limitation(&summary, "interned_id_missing"), 1);
}

#[test]
fn events_naming_one_long_interned_name_hash_it_once() {
    let long = "n".repeat(LONG);
    let mut interned = InternedData::new();
    let mut name = EventName::new();
    name.set_iid(1);
    name.set_name(long);
    interned.event_names = vec![name];
    // A category whose classification reads the name (`nccl` in a kernel).
    let mut category = EventCategory::new();
    category.set_iid(1);
    category.set_name("kernel".into());
    interned.event_categories = vec![category];
    let mut first = flagged(0, CLEARED);
    first.interned_data = MessageField::some(interned);
    let mut p = vec![thread_track(SEQ, 7, 1, 2, "t"), first];
    for i in 0..100_000 {
        let mut e = event(Type::TYPE_INSTANT, 7);
        e.set_name_iid(1);
        e.category_iids = vec![1];
        p.push(with_event(flagged(10 + i, NEEDS_STATE), e));
    }
    let bytes = trace(p);
    assert!(bytes.len() < 4 << 20, "{} bytes", bytes.len());
    let (_, sink) = run_bounded("long event name", bytes);
    // (name length, rows)
    assert_eq!(
        dictionary_counts(&sink, T::TraceEvents, "name"),
        vec![(LONG, 100_000)]
    );
}

fn switch(ts: u64, prev: i32, next: i32, comm: &str) -> FtraceEvent {
    let mut s = SchedSwitchFtraceEvent::new();
    s.set_prev_pid(prev);
    s.set_prev_state(1);
    s.set_next_pid(next);
    s.set_next_comm(comm.into());
    let mut e = FtraceEvent::new();
    e.set_timestamp(ts);
    e.set_sched_switch(s);
    e
}

#[test]
fn switches_over_a_great_many_cpus_are_not_quadratic() {
    // Each bundle a CPU of its own, each switch a task of its own: the
    // switch looks the task up instead of scanning every CPU.
    let n = 60_000u32;
    let p: Vec<TracePacket> = (0..n)
        .map(|cpu| {
            let mut b = FtraceEventBundle::new();
            b.set_cpu(cpu);
            b.event = vec![switch(u64::from(cpu) + 1, 0, cpu as i32 + 1, "t")];
            let mut p = TracePacket::new();
            p.set_ftrace_events(b);
            p
        })
        .collect();
    let bytes = trace(p);
    assert!(bytes.len() < 4 << 20, "{} bytes", bytes.len());
    let (_, sink) = run_bounded("many cpus", bytes);
    let kinds = sink.strs(T::TraceEvents, "kind");
    let slices = kinds
        .iter()
        .filter(|k| k.as_deref() == Some("sched_slice"))
        .count();
    assert_eq!(slices, n as usize);
}

#[test]
fn one_long_compact_sched_entry_used_by_every_switch_is_not_copied_per_switch() {
    let long = "p".repeat(LONG);
    let n = 100_000usize;
    let mut c = CompactSched::new();
    c.intern_table = vec![long];
    c.switch_timestamp = vec![1; n];
    c.switch_prev_state = vec![1; n];
    // Few tasks, switched in over and over; and one task named by it.
    c.switch_next_pid = (0..n).map(|i| (i % 8) as i32 + 1).collect();
    c.switch_next_prio = vec![120; n];
    c.switch_next_comm_index = vec![0; n];
    let mut b = FtraceEventBundle::new();
    b.set_cpu(0);
    b.compact_sched = MessageField::some(c);
    let mut p = TracePacket::new();
    p.set_ftrace_events(b);
    let bytes = trace(vec![p]);
    assert!(bytes.len() < 4 << 20, "{} bytes", bytes.len());
    let (summary, sink) = run_bounded("long comm", bytes);
    let kinds = sink.strs(T::TraceEvents, "kind");
    let slices = kinds
        .iter()
        .filter(|k| k.as_deref() == Some("sched_slice"))
        .count();
    assert_eq!(slices, n);
    // The threads are named by the cut comm.
    assert!(text_bytes(&sink, T::Tracks, "thread_name") <= 8 * 256);
    assert_eq!(limitation(&summary, "comm_truncated"), 8);
}

#[test]
fn compressed_packets_nested_thousands_deep_are_refused_not_followed() {
    // Each level wraps the one below in a compressed_packets packet: the
    // decoder used to recurse once per level (a stack overflow at a few
    // thousand) holding every level's inflated bytes.
    let mut packet = with_event(
        thread_track(SEQ, 1, 1, 1, "t"),
        named(Type::TYPE_INSTANT, 1, "innermost"),
    );
    for _ in 0..5000 {
        packet = compressed(vec![packet]);
    }
    let bytes = trace(vec![packet]);
    let (summary, _) = run_bounded("nested compressed_packets", bytes);
    assert_eq!(
        limitation(&summary, "malformed_packet"),
        1,
        "{:?}",
        summary.limitations
    );
}

#[test]
fn compressed_packets_that_inflate_past_the_budget_are_skipped() {
    // 300 MiB of zeros deflate to about 300 KB: past max(256 MiB, 500×).
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let block = vec![0u8; 1 << 20];
    for _ in 0..300 {
        std::io::Write::write_all(&mut z, &block).expect("deflate");
    }
    let blob = z.finish().expect("deflate");
    assert!(blob.len() * 500 < 256 << 20, "{} bytes", blob.len());
    let mut bomb = TracePacket::new();
    bomb.set_compressed_packets(blob);
    let track = thread_track(SEQ, 1, 1, 1, "t");
    let ok = with_event(packet(10, SEQ), named(Type::TYPE_INSTANT, 1, "kept"));
    let (summary, sink) = run_bounded("inflation bomb", trace(vec![track, bomb, ok]));
    assert_eq!(
        limitation(&summary, "compressed_packets_too_large"),
        1,
        "{:?}",
        summary.limitations
    );
    // The packets after it are read.
    assert!(sink.rows(T::TraceEvents) >= 1);
}
