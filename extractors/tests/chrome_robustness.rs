//! Each robustness rule of the Chrome extractor, on a small hand-written input.

mod common;

use common::*;
use flameox_extractors::{EvidenceTable as T, ExtractError};

fn ev(fields: &str) -> String {
    format!("{{{fields}}}")
}

#[test]
fn control_characters_are_escaped_and_counted() {
    let input = b"[{\"ph\":\"X\",\"name\":\"a\tb\",\"ts\":1,\"dur\":2,\"pid\":1,\"tid\":1}]";
    let (s, sink) = extract_bytes(input).unwrap();
    assert_eq!(limitation(&s, "control_characters_escaped"), 1);
    assert_eq!(
        sink.strs(T::TraceEvents, "name"),
        vec![Some("a\tb".to_string())]
    );
}

#[test]
fn invalid_utf8_is_replaced() {
    let input = b"[{\"ph\":\"X\",\"name\":\"a\xffb\",\"ts\":1,\"dur\":2,\"pid\":1,\"tid\":1}]";
    let (s, sink) = extract_bytes(input).unwrap();
    assert_eq!(limitation(&s, "invalid_utf8_replaced"), 1);
    assert_eq!(
        sink.strs(T::TraceEvents, "name"),
        vec![Some("a\u{fffd}b".to_string())]
    );
}

#[test]
fn duplicate_keys_last_wins() {
    let (s, sink) =
        extract_bytes(br#"[{"ph":"X","name":"a","ts":1,"ts":2,"dur":1,"pid":1,"tid":1}]"#).unwrap();
    assert_eq!(limitation(&s, "duplicate_keys"), 1);
    assert_eq!(sink.i64s(T::TraceEvents, "ts_ns"), vec![Some(2000)]);
}

#[test]
fn numbers_as_strings_are_accepted() {
    let (s, sink) = extract_bytes(
        br#"[{"ph":"X","name":"a","ts":"1.5","dur":"2","pid":"3","tid":"4","args":{"correlation":"9","External id":"8"}}]"#,
    )
    .unwrap();
    assert!(s.limitations.is_empty(), "{:?}", s.limitations);
    assert_eq!(sink.i64s(T::TraceEvents, "ts_ns"), vec![Some(1500)]);
    assert_eq!(sink.i64s(T::TraceEvents, "dur_ns"), vec![Some(2000)]);
    assert_eq!(sink.i64s(T::TraceEvents, "pid"), vec![Some(3)]);
    assert_eq!(sink.i64s(T::TraceEvents, "tid"), vec![Some(4)]);
    assert_eq!(sink.i64s(T::TraceEvents, "correlation_id"), vec![Some(9)]);
    assert_eq!(sink.i64s(T::TraceEvents, "external_id"), vec![Some(8)]);
}

#[test]
fn missing_duration_is_an_instant_length_slice() {
    let (s, sink) = extract_bytes(br#"[{"ph":"X","name":"a","ts":1,"pid":1,"tid":1}]"#).unwrap();
    assert_eq!(limitation(&s, "missing_duration"), 1);
    assert_eq!(sink.i64s(T::TraceEvents, "dur_ns"), vec![Some(0)]);
}

#[test]
fn unmatched_end_is_dropped_and_unterminated_begin_kept() {
    let input =
        br#"[{"ph":"E","ts":1,"pid":1,"tid":1},{"ph":"B","name":"open","ts":2,"pid":1,"tid":1},
        {"ph":"X","name":"child","ts":3,"dur":1,"pid":1,"tid":1}]"#;
    let (s, sink) = extract_bytes(input).unwrap();
    assert_eq!(limitation(&s, "unmatched_end"), 1);
    assert_eq!(limitation(&s, "unterminated_slice"), 1);
    assert_eq!(
        sink.i64s(T::TraceEvents, "event_id"),
        vec![Some(1), Some(2)]
    );
    assert_eq!(
        sink.i64s(T::TraceEvents, "dur_ns"),
        vec![Some(-1), Some(1000)]
    );
    assert_eq!(
        sink.i64s(T::TraceEvents, "self_ns"),
        vec![Some(-1), Some(1000)]
    );
    assert_eq!(
        sink.i64s(T::TraceEvents, "parent_event_id"),
        vec![None, Some(1)]
    );
}

#[test]
fn begin_end_pairs_match_per_thread_stack() {
    let input = br#"[{"ph":"B","name":"a","ts":0,"pid":1,"tid":1},{"ph":"B","name":"b","ts":1,"pid":1,"tid":1},
        {"ph":"B","name":"x","ts":1,"pid":1,"tid":2},{"ph":"E","ts":3,"pid":1,"tid":1},{"ph":"E","ts":9,"pid":1,"tid":1},
        {"ph":"E","ts":4,"pid":1,"tid":2}]"#;
    let (s, sink) = extract_bytes(input).unwrap();
    assert!(s.limitations.is_empty(), "{:?}", s.limitations);
    assert_eq!(
        sink.i64s(T::TraceEvents, "event_id"),
        vec![Some(0), Some(1), Some(2)]
    );
    assert_eq!(
        sink.i64s(T::TraceEvents, "dur_ns"),
        vec![Some(9000), Some(2000), Some(3000)]
    );
    assert_eq!(
        sink.i64s(T::TraceEvents, "self_ns"),
        vec![Some(7000), Some(2000), Some(3000)]
    );
    assert_eq!(
        sink.i64s(T::TraceEvents, "depth"),
        vec![Some(0), Some(1), Some(0)]
    );
}

#[test]
fn negative_duration_is_clamped() {
    let (s, sink) =
        extract_bytes(br#"[{"ph":"X","name":"a","ts":5,"dur":-3,"pid":1,"tid":1}]"#).unwrap();
    assert_eq!(limitation(&s, "negative_duration"), 1);
    assert_eq!(sink.i64s(T::TraceEvents, "dur_ns"), vec![Some(0)]);
}

#[test]
fn malformed_events_are_skipped() {
    let input = br#"[{"ph":"X","ts":1,,}, 42, {"ph":"X","name":"ok","ts":1,"dur":1}, {}, {"ph":"X","ts":"soon"}]"#;
    let (s, sink) = extract_bytes(input).unwrap();
    assert_eq!(limitation(&s, "malformed_event"), 3);
    assert_eq!(limitation(&s, "missing_phase"), 1);
    assert_eq!(sink.i64s(T::TraceEvents, "event_id"), vec![Some(2)]);
    assert_eq!(s.input_events, 5);
}

#[test]
fn improper_nesting_is_counted() {
    let input = br#"[{"ph":"X","name":"a","ts":0,"dur":10,"pid":1,"tid":1},{"ph":"X","name":"b","ts":5,"dur":10,"pid":1,"tid":1}]"#;
    let (s, sink) = extract_bytes(input).unwrap();
    assert_eq!(limitation(&s, "improper_nesting"), 1);
    assert_eq!(
        sink.i64s(T::TraceEvents, "self_ns"),
        vec![Some(5000), Some(10000)]
    );
}

#[test]
fn deep_nesting_does_not_overflow_the_stack() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let input = format!(
        r#"[{{"ph":"X","name":"deep","ts":1,"dur":1,"args":{deep}}},{deep},{{"ph":"X","name":"ok","ts":2,"dur":1}}]"#
    );
    let (s, sink) = extract_bytes(input.as_bytes()).unwrap();
    // The deep array element is not an event; the event with deep args is
    // kept (its args are skipped iteratively by serde and stored bounded).
    assert_eq!(limitation(&s, "malformed_event"), 1);
    assert_eq!(
        sink.strs(T::TraceEvents, "name"),
        vec![Some("deep".to_string()), Some("ok".to_string())]
    );
    // Unterminated deep nesting: a parse error, not a crash.
    let open = format!("[{}", "{\"a\":[".repeat(100_000));
    assert!(matches!(
        extract_bytes(open.as_bytes()),
        Err(ExtractError::Parse { .. })
    ));
}

#[test]
fn huge_strings_are_fine() {
    let big = "x".repeat(5 << 20);
    let input = format!(r#"[{{"ph":"X","name":"{big}","ts":1,"dur":1,"args":{{"s":"{big}"}}}}]"#);
    let (_, sink) = extract_bytes(input.as_bytes()).unwrap();
    let args = sink.strs(T::TraceEvents, "args_json");
    let a = args[0].as_ref().unwrap();
    assert!(a.len() <= 4096 && a.ends_with(flameox_extractors::api::ARGS_TRUNCATED_MARKER));
}

#[test]
fn args_are_cut_at_a_char_boundary() {
    let mut opts = options();
    opts.max_args_bytes = 24;
    let input = r#"[{"ph":"X","name":"a","ts":1,"dur":1,"args":{"k":"ééééééééééééééééé"}}]"#;
    let (_, sink) = extract_with(input.as_bytes(), &opts).unwrap();
    let a = sink.strs(T::TraceEvents, "args_json")[0].clone().unwrap();
    assert!(a.len() <= 24, "{a}");
    assert!(a.ends_with(flameox_extractors::api::ARGS_TRUNCATED_MARKER));
}

#[test]
fn timestamps_are_exact_nanoseconds() {
    let input = br#"[{"ph":"X","name":"a","ts":88437691101.729,"dur":0.0015,"pid":1,"tid":1},
        {"ph":"i","name":"b","ts":1e3,"pid":1,"tid":1},{"ph":"X","name":"c","ts":"4909914216204.635","dur":13.7}]"#;
    let (_, sink) = extract_bytes(input).unwrap();
    let ts = sink.i64s(T::TraceEvents, "ts_ns");
    assert_eq!(
        ts,
        vec![
            Some(1_000_000),
            Some(88_437_691_101_729),
            Some(4_909_914_216_204_635)
        ]
    );
    assert_eq!(
        sink.i64s(T::TraceEvents, "dur_ns"),
        vec![Some(0), Some(2), Some(13_700)]
    );
}

#[test]
fn timestamp_overflow_skips_the_event() {
    let input = br#"[{"ph":"X","name":"a","ts":99999999999999999999,"dur":1},{"ph":"X","name":"b","ts":1,"dur":1}]"#;
    let (s, sink) = extract_bytes(input).unwrap();
    assert_eq!(limitation(&s, "timestamp_overflow"), 1);
    assert_eq!(sink.rows(T::TraceEvents), 1);
}

#[test]
fn truncated_and_non_trace_inputs() {
    let (s, sink) =
        extract_bytes(br#"{"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":1},{"ph":"X","na"#)
            .unwrap();
    assert_eq!(limitation(&s, "truncated_input"), 1);
    assert_eq!(sink.rows(T::TraceEvents), 1);
    let (s, _) = extract_bytes(br#"[{"ph":"X","name":"a","ts":1,"dur":1}"#).unwrap();
    assert_eq!(limitation(&s, "truncated_input"), 1);
    for bad in [
        &b""[..],
        b"   ",
        b"hello",
        b"{\"a\":1}",
        b"[",
        b"[{\"ph\":",
        b"{\"traceEvents\":3}",
        b"\x1f\x8b\x08",
    ] {
        match extract_bytes(bad) {
            Err(ExtractError::Parse { message, .. }) => assert!(!message.is_empty()),
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(bad)),
        }
    }
    match extract_bytes(b"hello") {
        Err(ExtractError::Parse { message, offset }) => {
            assert!(message.contains("hello") && offset == Some(0), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn phases_counters_memory_async_flows_and_names() {
    let input = br#"{"schemaVersion":1,"distributedInfo":{"rank":3},"traceEvents":[
      {"ph":"M","name":"process_name","pid":10,"tid":0,"args":{"name":"python"}},
      {"ph":"M","name":"thread_name","pid":10,"tid":11,"args":{"name":"main"}},
      {"ph":"X","cat":"user_annotation","name":"ProfilerStep#7","pid":10,"tid":11,"ts":100,"dur":100},
      {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":10,"tid":11,"ts":110,"dur":20,"args":{"External id":5}},
      {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":10,"tid":11,"ts":115,"dur":5,"args":{"External id":5,"correlation":77}},
      {"ph":"X","cat":"kernel","name":"sgemm","pid":0,"tid":7,"ts":300,"dur":50,"args":{"device":0,"stream":7,"correlation":77}},
      {"ph":"X","cat":"kernel","name":"ncclKernel_AllReduce","pid":0,"tid":7,"ts":400,"dur":5,"args":{"device":0,"stream":7}},
      {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":10,"tid":11,"ts":140,"dur":5},
      {"ph":"s","id":91,"pid":10,"tid":11,"ts":140,"cat":"ac2g","name":"ac2g"},
      {"ph":"f","id":91,"pid":0,"tid":7,"ts":400,"cat":"ac2g","name":"ac2g","bp":"e"},
      {"ph":"C","name":"mem","pid":10,"ts":120,"args":{"value":5}},
      {"ph":"C","name":"q","pid":10,"ts":121,"args":{"a":1,"b":"2"}},
      {"ph":"i","cat":"cpu_instant_event","name":"[memory]","pid":10,"tid":11,"ts":125,"s":"t","args":{"Device Type":1,"Device Id":0,"Bytes":512,"Total Allocated":1024,"Total Reserved":2048}},
      {"ph":"b","cat":"net","name":"req","id":"0x1","pid":10,"ts":150},
      {"ph":"n","cat":"net","name":"step","id":"0x1","pid":10,"ts":155},
      {"ph":"e","cat":"net","name":"req","id":"0x1","pid":10,"ts":170},
      {"ph":"P","name":"ProfileChunk","pid":10,"tid":11,"ts":1},
      {"ph":"O","name":"snapshot","pid":10,"tid":11,"ts":1}
    ],"traceName":"x.json"}"#;
    let (s, sink) = extract_bytes(input).unwrap();
    assert_eq!(s.producer, "torch.profiler");
    assert_eq!(s.metadata["distributedInfo"]["rank"], 3);
    assert_eq!(s.metadata["traceName"], "x.json");
    assert_eq!(limitation(&s, "profile_chunks_not_extracted"), 1);
    assert_eq!(limitation(&s, "unknown_phase"), 1);
    assert_eq!(limitation(&s, "correlation_from_flow"), 2);
    for flag in [
        "correlation_ids",
        "external_ids",
        "stream_identity",
        "phase_annotations",
        "flows",
        "counters",
    ] {
        assert!(s.coverage[flag], "{flag}");
    }
    let names = sink.strs(T::TraceEvents, "name");
    let kinds = sink.strs(T::TraceEvents, "kind");
    let phases = sink.strs(T::TraceEvents, "phase");
    let sources = sink.strs(T::TraceEvents, "phase_source");
    let corr = sink.i64s(T::TraceEvents, "correlation_id");
    let bytes = sink.i64s(T::TraceEvents, "bytes");
    let find = |n: &str| names.iter().position(|x| x.as_deref() == Some(n)).unwrap();
    let k = |n: &str| kinds[find(n)].clone().unwrap();
    assert_eq!(k("aten::mm"), "cpu_op");
    assert_eq!(k("cudaLaunchKernel"), "runtime_api");
    assert_eq!(k("sgemm"), "kernel");
    assert_eq!(k("ncclKernel_AllReduce"), "communication");
    assert_eq!(k("[memory]"), "instant");
    assert_eq!(k("req"), "cpu_slice");
    assert_eq!(bytes[find("[memory]")], Some(512));
    assert_eq!(phases[find("aten::mm")].as_deref(), Some("ProfilerStep#7"));
    assert_eq!(sources[find("aten::mm")].as_deref(), Some("profiler_step"));
    assert_eq!(phases[find("sgemm")].as_deref(), Some("ProfilerStep#7"));
    assert_eq!(sources[find("sgemm")].as_deref(), Some("correlation"));
    assert_eq!(corr[find("ncclKernel_AllReduce")], Some(91));
    assert_eq!(
        phases[find("ncclKernel_AllReduce")].as_deref(),
        Some("ProfilerStep#7")
    );
    // Tracks: the thread, the GPU stream, counters, memory, async.
    let tkind = sink.strs(T::Tracks, "kind");
    let tname = sink.strs(T::Tracks, "name");
    let gpu = tkind
        .iter()
        .position(|k| k.as_deref() == Some("gpu_stream"))
        .unwrap();
    assert_eq!(sink.i64s(T::Tracks, "stream")[gpu], Some(7));
    assert_eq!(sink.i64s(T::Tracks, "device")[gpu], Some(0));
    let main = tname
        .iter()
        .position(|n| n.as_deref() == Some("main"))
        .unwrap();
    assert_eq!(
        sink.strs(T::Tracks, "process_name")[main].as_deref(),
        Some("python")
    );
    let asy = tkind
        .iter()
        .position(|k| k.as_deref() == Some("async"))
        .unwrap();
    assert_eq!(tname[asy].as_deref(), Some("req"));
    assert_eq!(
        sink.i64s(T::Tracks, "parent_track_id")[asy],
        Some(main as i64)
    );
    // Counters.
    let cnames = sink.strs(T::Counters, "name");
    let cvals = sink.f64s(T::Counters, "value");
    let got: Vec<(String, f64)> = cnames.into_iter().map(|n| n.unwrap()).zip(cvals).collect();
    assert_eq!(
        got,
        vec![
            ("mem".to_string(), 5.0),
            ("q.a".to_string(), 1.0),
            ("q.b".to_string(), 2.0),
            ("Total Allocated".to_string(), 1024.0),
            ("Total Reserved".to_string(), 2048.0)
        ]
    );
    let units = sink.strs(T::Counters, "unit");
    assert_eq!(units[3].as_deref(), Some("bytes"));
    // Async pair is a 20 µs slice with an instant inside.
    let dur = sink.i64s(T::TraceEvents, "dur_ns");
    assert_eq!(dur[find("req")], Some(20_000));
    assert_eq!(
        sink.i64s(T::TraceEvents, "parent_event_id")[find("step")],
        Some(13)
    );
}

#[test]
fn reductions_from_nested_slices() {
    // a[0,10] > b[2,6] > c[3,4]; and a second root b[20,21] on another thread.
    let input = br#"[{"ph":"X","name":"a","cat":"m","ts":0,"dur":10,"pid":1,"tid":1},
      {"ph":"X","name":"b","cat":"m","ts":2,"dur":4,"pid":1,"tid":1},
      {"ph":"X","name":"c","cat":"m","ts":3,"dur":1,"pid":1,"tid":1},
      {"ph":"X","name":"b","cat":"m","ts":20,"dur":1,"pid":1,"tid":2}]"#;
    let (s, sink) = extract_bytes(input).unwrap();
    assert_eq!(s.rows["frames"], 3);
    assert_eq!(s.rows["stack_nodes"], 4);
    assert_eq!(s.rows["samples"], 4);
    let func = sink.strs(T::FrameTotals, "function");
    let tid = sink.i64s(T::FrameTotals, "tid");
    let selfv = sink.i64s(T::FrameTotals, "self_value");
    let incl = sink.i64s(T::FrameTotals, "inclusive_value");
    let count = sink.i64s(T::FrameTotals, "sample_count");
    let row = |f: &str, t: i64| {
        let i = (0..func.len())
            .find(|&i| func[i].as_deref() == Some(f) && tid[i] == Some(t))
            .unwrap();
        (selfv[i].unwrap(), incl[i].unwrap(), count[i].unwrap())
    };
    assert_eq!(row("a", 1), (6000, 10000, 1));
    assert_eq!(row("b", 1), (3000, 4000, 1));
    assert_eq!(row("c", 1), (1000, 1000, 1));
    assert_eq!(row("b", 2), (1000, 1000, 1));
    assert_eq!(s.rows["call_edges"], 2);
    let w = sink.i64s(T::CallEdges, "weight");
    let c = sink.i64s(T::CallEdges, "count");
    let mut edges: Vec<(i64, i64)> = w
        .iter()
        .zip(&c)
        .map(|(w, c)| (w.unwrap(), c.unwrap()))
        .collect();
    edges.sort();
    // (b→c): weight 1000 count 1; (a→b): weight of stacks a/b and a/b/c = 3000 + 1000, count 1.
    assert_eq!(edges, vec![(1000, 1), (4000, 1)]);
}

#[test]
fn gzip_bomb_is_refused() {
    use flate2::{Compression, write::GzEncoder};
    use std::io::Write;
    let mut enc = GzEncoder::new(Vec::new(), Compression::best());
    enc.write_all(b"[").unwrap();
    let chunk = vec![b' '; 1 << 20];
    for _ in 0..40 {
        enc.write_all(&chunk).unwrap();
    }
    let dir = std::env::temp_dir().join(format!("flameox-bomb-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bomb.json.gz");
    std::fs::write(&path, enc.finish().unwrap()).unwrap();
    let limits = flameox_extractors::InputLimits {
        max_ratio: 100,
        min_decompressed_cap_bytes: 1 << 20,
    };
    let stream = flameox_extractors::open_input(&path, &limits).unwrap();
    let mut sink = MemorySink::default();
    let r = flameox_extractors::extract_chrome_json(
        stream,
        &options(),
        &mut sink,
        &flameox_extractors::NoObserver,
    );
    assert!(matches!(r, Err(ExtractError::TooLarge { .. })), "{r:?}");
}

#[test]
fn cancellation_is_honoured() {
    struct Cancel;
    impl flameox_extractors::ExtractObserver for Cancel {
        fn cancelled(&self) -> bool {
            true
        }
    }
    let mut sink = MemorySink::default();
    let r = flameox_extractors::extract_chrome_json(&b"[]"[..], &options(), &mut sink, &Cancel);
    assert!(matches!(r, Err(ExtractError::Cancelled)));
    let _ = ev("");
}

/// Extracts `input` on a thread and fails (instead of hanging the suite)
/// when it does not end within `limit`.
fn extract_within(
    input: Vec<u8>,
    limit: std::time::Duration,
) -> Result<(flameox_extractors::ExtractionSummary, MemorySink), ExtractError> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(extract_bytes(&input));
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("the extraction did not end within {limit:?}"))
}

#[test]
fn a_stray_closer_after_a_malformed_event_ends_the_scan() {
    // The regression of issue 25: one `]` of an args array replaced by `\`
    // makes the event swallow the rest of the array; the scanner then meets
    // the document's last `}` where an element starts. It used to take that
    // as an empty value without consuming it and loop forever.
    let input = br#"{"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":1,"args":{"t":["x"\}},{"ph":"X","name":"b","ts":2,"dur":1}],"k":1}"#;
    let (s, _) = extract_within(input.to_vec(), std::time::Duration::from_secs(10)).unwrap();
    assert!(
        limitation(&s, "malformed_event") >= 1,
        "{:?}",
        s.limitations
    );
    // Every closer alone where an element starts is consumed too.
    for stray in ["}", "}}}", ":}", "} }"] {
        let input = format!(
            r#"[{{"ph":"X","name":"a","ts":1,"dur":1}},{stray},{{"ph":"X","name":"b","ts":2,"dur":1}}]"#
        );
        let (s, sink) =
            extract_within(input.into_bytes(), std::time::Duration::from_secs(10)).unwrap();
        assert!(
            limitation(&s, "malformed_event") >= 1,
            "{stray}: {:?}",
            s.limitations
        );
        assert_eq!(sink.rows(T::TraceEvents), 2, "{stray}");
    }
}
