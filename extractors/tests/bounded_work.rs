//! Small inputs built to make an extractor do far more work than their
//! size: each used to take minutes to hours (quadratic loops, walks
//! repeated per event) and must now end within a deadline, with the
//! evidence a linear pass gives. A regression fails here instead of
//! hanging the suite. Perfetto's own cases are in `perfetto_hostile.rs`.

mod common;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{MemorySink, limitation, options};
use flameox_extractors::{
    EvidenceTable as T, ExtractError, ExtractionSummary, NoObserver, extract_chrome_json,
    extract_gecko_profile, extract_speedscope,
};

/// Well above what each takes now (a debug build), well below before.
const DEADLINE: Duration = Duration::from_secs(60);

type Extract = fn(&[u8], &mut MemorySink) -> Result<ExtractionSummary, ExtractError>;

fn run_bounded(name: &str, input: String, extract: Extract) -> (ExtractionSummary, MemorySink) {
    let (tx, rx) = mpsc::channel();
    let bytes = input.len();
    std::thread::spawn(move || {
        let started = Instant::now();
        let mut sink = MemorySink::default();
        let result = extract(input.as_bytes(), &mut sink);
        let _ = tx.send((result.map(|s| (s, sink)), started.elapsed()));
    });
    match rx.recv_timeout(DEADLINE) {
        Ok((Ok(out), took)) => {
            eprintln!("{name}: {bytes} bytes in {took:?}");
            out
        }
        Ok((Err(e), _)) => panic!("{name}: {e}"),
        Err(_) => panic!("{name}: {bytes} bytes did not end within {DEADLINE:?}"),
    }
}

fn chrome(bytes: &[u8], sink: &mut MemorySink) -> Result<ExtractionSummary, ExtractError> {
    extract_chrome_json(bytes, &options(), sink, &NoObserver)
}

#[test]
fn slices_under_many_unterminated_begins_do_not_walk_them() {
    // Every X slice's nearest aggregated ancestor lies past all the open
    // begins: the reduction used to walk them once per slice.
    let n = 40_000;
    let mut events: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"ph":"B","name":"open","pid":1,"tid":1,"ts":{i}}}"#))
        .collect();
    events.extend((0..n).map(|i| {
        format!(
            r#"{{"ph":"X","name":"x","pid":1,"tid":1,"ts":{},"dur":1}}"#,
            n + i * 2
        )
    }));
    let (s, sink) = run_bounded("open begins", format!("[{}]", events.join(",")), chrome);
    assert_eq!(limitation(&s, "unterminated_slice"), n as u64);
    assert_eq!(sink.rows(T::TraceEvents), 2 * n);
}

#[test]
fn flows_after_many_instants_bind_without_scanning_them() {
    // Device work without a correlation id makes the extractor bind flows
    // to slices; each flow used to scan back over every instant before it.
    let n = 60_000;
    let mut events = vec![
        r#"{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":1,"args":{"device":0,"stream":7}}"#.to_owned(),
        r#"{"ph":"X","cat":"cuda_runtime","name":"launch","pid":1,"tid":1,"ts":0,"dur":1}"#.to_owned(),
    ];
    events.extend((0..n).map(|i| {
        format!(
            r#"{{"ph":"i","name":"i","pid":1,"tid":1,"ts":{},"s":"t"}}"#,
            10 + i
        )
    }));
    events.extend((0..n).map(|i| {
        format!(
            r#"{{"ph":"s","id":{i},"cat":"ac2g","name":"ac2g","pid":1,"tid":1,"ts":{}}}"#,
            10 + n + i
        )
    }));
    let (_, sink) = run_bounded(
        "flows after instants",
        format!("[{}]", events.join(",")),
        chrome,
    );
    assert_eq!(sink.rows(T::TraceEvents), n + 2);
}

#[test]
fn a_counter_with_a_great_many_args_is_read_once() {
    // Counter args are deduplicated by key: a scan per key was quadratic.
    let n = 300_000;
    let args: Vec<String> = (0..n).map(|i| format!(r#""k{i}":{i}"#)).collect();
    let input = format!(
        r#"[{{"ph":"C","name":"c","pid":1,"ts":1,"args":{{{}}}}}]"#,
        args.join(",")
    );
    let (_, sink) = run_bounded("counter args", input, chrome);
    assert_eq!(sink.rows(T::Counters), n);
}

#[test]
fn a_great_many_top_level_keys_are_counted_not_kept() {
    let keys: Vec<String> = (0..100_000)
        .map(|i| format!(r#""meta{i}":"{}""#, "v".repeat(100)))
        .collect();
    let input = format!(
        r#"{{{},"traceEvents":[{{"ph":"X","name":"a","ts":1,"dur":1,"pid":1,"tid":1}}]}}"#,
        keys.join(",")
    );
    let (s, _) = run_bounded("metadata keys", input, chrome);
    assert_eq!(s.metadata["omitted_keys"], 100_000 - 64);
    assert!(
        s.metadata.len() < 100,
        "{} metadata keys kept",
        s.metadata.len()
    );
}

#[test]
fn closes_of_frames_never_opened_do_not_scan_the_open_stack() {
    let n = 100_000;
    let mut events: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"type":"O","frame":0,"at":{i}}}"#))
        .collect();
    events.extend((0..n).map(|i| format!(r#"{{"type":"C","frame":1,"at":{}}}"#, n + i)));
    let input = format!(
        r#"{{"$schema":"https://www.speedscope.app/file-format-schema.json","shared":{{"frames":[{{"name":"a"}},{{"name":"b"}}]}},"profiles":[{{"type":"evented","name":"t","unit":"none","startValue":0,"endValue":{},"events":[{}]}}]}}"#,
        3 * n,
        events.join(",")
    );
    let (s, _) = run_bounded("unmatched closes", input, |b, sink| {
        extract_speedscope(b, &options(), sink, &NoObserver)
    });
    assert_eq!(limitation(&s, "unmatched_close"), n as u64);
}

#[test]
fn address_frames_find_their_library_by_search() {
    // Every address frame looked at every library: frames × libraries.
    let n = 60_000u64;
    let libs: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"start":{},"end":{},"name":"lib{i}.so"}}"#,
                i * 4096,
                i * 4096 + 4096
            )
        })
        .collect();
    let strings: Vec<String> = (0..n)
        .map(|i| format!(r#""0x{:x}""#, i * 4096 + 7))
        .collect();
    let frames: Vec<String> = (0..n).map(|i| format!("[{i}]")).collect();
    let stacks: Vec<String> = (0..n).map(|i| format!("[null,{i}]")).collect();
    let samples: Vec<String> = (0..n).map(|i| format!("[{i},{i}]")).collect();
    let input = format!(
        r#"{{"meta":{{"version":24,"startTime":0,"interval":1}},"libs":[{}],"threads":[{{"name":"GeckoMain","tid":1,"pid":1,"stringTable":[{}],"frameTable":{{"schema":{{"location":0}},"data":[{}]}},"stackTable":{{"schema":{{"prefix":0,"frame":1}},"data":[{}]}},"samples":{{"schema":{{"stack":0,"time":1}},"data":[{}]}}}}]}}"#,
        libs.join(","),
        strings.join(","),
        frames.join(","),
        stacks.join(","),
        samples.join(",")
    );
    let (_, sink) = run_bounded("address frames", input, |b, sink| {
        extract_gecko_profile(b, &options(), sink, &NoObserver)
    });
    assert_eq!(sink.rows(T::Frames), n as usize);
}
