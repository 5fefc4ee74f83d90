//! Structure-aware fuzz targets, one per decoder (`docs/reliability.md`).
//! Each builds a well-framed input of its format from random bytes — Chrome
//! events with the fields the extractor reads, Perfetto and pprof messages
//! from the extractors' own proto declarations, profiles in the shapes of
//! speedscope, V8 and Gecko, Nsight exports with the corpus export's tables —
//! and requires the extractor to end (within 10 s) with evidence or a typed
//! refusal: never a panic, never an I/O or sink error. Chrome also imports
//! every case a second time through spill runs and must land the same rows.
//! See `common/fuzz.rs` for the budget and replay variables.

mod common;

use std::io::Write;

use arbitrary::Unstructured;
use common::fuzz::{damage, drive, json_number, json_string, json_value, number};
use common::proto_gen::{Generator, Schema, put_varint};
use common::{MemorySink, options};
use flameox_extractors::{
    EvidenceTable, ExtractError, ExtractionSummary, NoObserver, extract_chrome_json,
    extract_cpuprofile, extract_folded_stacks, extract_gecko_profile, extract_nsight_sqlite,
    extract_perfetto, extract_pprof, extract_speedscope,
};

const NAMES: &[&str] = &[
    "aten::mm",
    "cudaLaunchKernel",
    "ProfilerStep#1",
    "ProfilerStep#2",
    "process_name",
    "thread_name",
    "volta_sgemm_128x64_nn",
    "Memcpy HtoD (Pageable -> Device)",
    "nccl:all_reduce",
    "main",
    "",
];

/// What an extraction may end with: evidence, or a typed refusal of the
/// input. I/O and sink errors mean the extractor broke, not the input.
/// Returns whether rows were written.
fn acceptable(result: &Result<(ExtractionSummary, MemorySink), ExtractError>) -> bool {
    match result {
        Ok((_, sink)) => sink.batches.values().flatten().any(|b| b.num_rows() > 0),
        Err(ExtractError::Parse { .. } | ExtractError::TooLarge { .. }) => false,
        Err(other) => panic!("not a typed refusal: {other:?}"),
    }
}

fn run<F>(extract: F) -> Result<(ExtractionSummary, MemorySink), ExtractError>
where
    F: FnOnce(&mut MemorySink) -> Result<ExtractionSummary, ExtractError>,
{
    let mut sink = MemorySink::default();
    extract(&mut sink).map(|s| (s, sink))
}

// ---- Chrome / Kineto JSON --------------------------------------------------

fn chrome_event(u: &mut Unstructured<'_>) -> String {
    const PHASES: &[&str] = &[
        "X", "B", "E", "i", "I", "C", "M", "b", "e", "n", "s", "t", "f", "P", "O", "N", "D", "R",
        "", "x",
    ];
    const CATS: &[&str] = &[
        "kernel",
        "cuda_runtime",
        "cpu_op",
        "gpu_memcpy",
        "gpu_memset",
        "ac2g",
        "python_function",
        "user_annotation",
        "cuda_driver",
    ];
    const ARG_KEYS: &[&str] = &[
        "correlation",
        "External id",
        "device",
        "stream",
        "name",
        "Input Dims",
        "bytes",
        "labels",
        "sort_index",
        "Sequence number",
    ];
    let mut members = Vec::new();
    let count = u.int_in_range(0..=9usize).unwrap_or(0);
    for _ in 0..count {
        let member = match u.int_in_range(0..=13u8).unwrap_or(0) {
            0 => format!("\"ph\":\"{}\"", u.choose(PHASES).unwrap_or(&"X")),
            1 => format!("\"name\":{}", json_string(u, NAMES)),
            2 => format!("\"cat\":{}", json_string(u, CATS)),
            3 | 4 => format!("\"ts\":{}", json_number(u)),
            5 => format!("\"dur\":{}", json_number(u)),
            6 => format!("\"pid\":{}", json_number(u)),
            7 => format!("\"tid\":{}", json_number(u)),
            8 => format!("\"id\":{}", json_number(u)),
            9 => format!("\"bp\":\"e\",\"id2\":{{\"local\":{}}}", json_number(u)),
            10 => format!("\"s\":\"{}\"", u.choose(&["g", "p", "t"]).unwrap_or(&"t")),
            _ => format!("\"args\":{}", json_value(u, ARG_KEYS, 3)),
        };
        members.push(member);
    }
    // Mostly complete events, so the nesting and reductions run.
    if u.ratio(2, 3).unwrap_or(false) {
        members.push(format!(
            "\"ph\":\"X\",\"name\":{},\"ts\":{},\"dur\":{},\"pid\":1,\"tid\":{}",
            json_string(u, NAMES),
            u.int_in_range(0..=5000u32).unwrap_or(0),
            u.int_in_range(0..=500u32).unwrap_or(0),
            u.int_in_range(1..=3u32).unwrap_or(1)
        ));
    }
    format!("{{{}}}", members.join(","))
}

fn chrome_document(u: &mut Unstructured<'_>) -> Vec<u8> {
    let n = u.int_in_range(0..=300usize).unwrap_or(0);
    let events: Vec<String> = (0..n).map(|_| chrome_event(u)).collect();
    let body = events.join(",");
    let text = if u.ratio(1, 4).unwrap_or(false) {
        format!("[{body}]")
    } else {
        format!(
            "{{\"schemaVersion\":1,\"deviceProperties\":{},\"traceEvents\":[{body}],\"traceName\":{}}}",
            json_value(u, &["id", "name"], 2),
            json_string(u, NAMES)
        )
    };
    damage(u, text.into_bytes())
}

fn rows(sink: &MemorySink) -> Vec<(EvidenceTable, usize)> {
    sink.batches.keys().map(|t| (*t, sink.rows(*t))).collect()
}

fn chrome_case(data: &[u8]) -> bool {
    let mut u = Unstructured::new(data);
    let doc = chrome_document(&mut u);
    let held = run(|sink| extract_chrome_json(&doc[..], &options(), sink, &NoObserver));
    let evidence = acceptable(&held);
    // The same input through spill runs lands the same rows.
    let dir = tempfile::tempdir().expect("spill dir");
    let mut spilled_options = options();
    spilled_options.spill_dir = Some(dir.path().to_path_buf());
    spilled_options.spill_after_events = 16;
    let spilled = run(|sink| extract_chrome_json(&doc[..], &spilled_options, sink, &NoObserver));
    acceptable(&spilled);
    if let (Ok((_, a)), Ok((_, b))) = (&held, &spilled) {
        assert_eq!(rows(a), rows(b), "held and spilled imports differ");
    }
    evidence
}

#[test]
fn fuzz_chrome_json() {
    assert!(drive("chrome_json", chrome_case) > 0);
}

// ---- Perfetto protobuf -----------------------------------------------------

const PERFETTO_WORDS: &[&str] = &[
    "RenderFrame",
    "cc",
    "disabled-by-default-devtools.timeline",
    "/system/lib64/libc.so",
    "CrRendererMain",
    "sched_switch",
    "main",
    "com.example.app",
    "gpu.counter",
    "",
];

/// A `compressed_packets` field holding a zlib blob of generated packets.
fn perfetto_special(
    u: &mut Unstructured<'_>,
    generator: &Generator<'_>,
    message: &str,
    tag: u32,
    depth: u32,
) -> Option<Vec<u8>> {
    if message != "TracePacket" || tag != 50 || depth == 0 {
        return None;
    }
    let inner = perfetto_packets(u, generator, depth - 1, 4);
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(&inner).ok()?;
    let mut blob = z.finish().ok()?;
    if u.ratio(1, 5).unwrap_or(false) {
        blob.truncate(blob.len() / 2);
    }
    Some(blob)
}

fn perfetto_packets(
    u: &mut Unstructured<'_>,
    generator: &Generator<'_>,
    depth: u32,
    max: usize,
) -> Vec<u8> {
    let mut out = Vec::new();
    let mut ts = 1_000u64;
    for _ in 0..u.int_in_range(0..=max).unwrap_or(0) {
        // Most packets carry a rising timestamp and a small sequence id
        // first (a generated field of the same number may override them),
        // so track events get as far as the tracks they name.
        let mut packet = Vec::new();
        if u.ratio(4, 5).unwrap_or(false) {
            ts += u.int_in_range(0..=5_000u64).unwrap_or(0);
            packet.push(0x40);
            put_varint(&mut packet, ts);
            packet.push(0x50);
            put_varint(&mut packet, u.int_in_range(1..=3u64).unwrap_or(1));
        }
        packet.extend(generator.message(u, "TracePacket", depth));
        out.push(0x0A);
        put_varint(&mut out, packet.len() as u64);
        out.extend_from_slice(&packet);
    }
    out
}

/// A thread track descriptor packet (uuid, pid, tid) on sequence 1.
fn thread_track_packet(uuid: u64, pid: u64, tid: u64) -> Vec<u8> {
    let mut thread = vec![0x08];
    put_varint(&mut thread, pid);
    thread.push(0x10);
    put_varint(&mut thread, tid);
    let mut descriptor = vec![0x08];
    put_varint(&mut descriptor, uuid);
    descriptor.push(0x22);
    put_varint(&mut descriptor, thread.len() as u64);
    descriptor.extend(thread);
    let mut packet = vec![0x50, 0x01, 0xE2, 0x03];
    put_varint(&mut packet, descriptor.len() as u64);
    packet.extend(descriptor);
    let mut framed = vec![0x0A];
    put_varint(&mut framed, packet.len() as u64);
    framed.extend(packet);
    framed
}

fn perfetto_case(data: &[u8]) -> bool {
    static SCHEMA: std::sync::OnceLock<Schema> = std::sync::OnceLock::new();
    let schema = SCHEMA.get_or_init(|| Schema::parse(include_str!("../src/perfetto/proto.rs")));
    let generator = Generator {
        schema,
        vocabulary: PERFETTO_WORDS,
        special: perfetto_special,
    };
    let mut u = Unstructured::new(data);
    let mut trace: Vec<u8> = (1..=4)
        .flat_map(|i| thread_track_packet(i, 1, 10 + i))
        .collect();
    trace.extend(perfetto_packets(&mut u, &generator, 6, 60));
    let trace = damage(&mut u, trace);
    acceptable(&run(|sink| {
        extract_perfetto(&trace[..], &options(), sink, &NoObserver)
    }))
}

#[test]
fn fuzz_perfetto_protobuf() {
    assert!(drive("perfetto_protobuf", perfetto_case) > 0);
}

// ---- pprof -----------------------------------------------------------------

fn no_special(
    _: &mut Unstructured<'_>,
    _: &Generator<'_>,
    _: &str,
    _: u32,
    _: u32,
) -> Option<Vec<u8>> {
    None
}

fn pprof_case(data: &[u8]) -> bool {
    static SCHEMA: std::sync::OnceLock<Schema> = std::sync::OnceLock::new();
    let schema = SCHEMA.get_or_init(|| Schema::parse(include_str!("../src/pprof/proto.rs")));
    let words = &[
        "",
        "samples",
        "count",
        "cpu",
        "nanoseconds",
        "main",
        "runtime.mallocgc",
        "/usr/lib/libc.so.6",
    ];
    let generator = Generator {
        schema,
        vocabulary: words,
        special: no_special,
    };
    let mut u = Unstructured::new(data);
    // A header that decodes (a sample type and a string table), then
    // anything the schema allows.
    let mut profile = vec![0x0A, 0x04, 0x08, 0x01, 0x10, 0x02];
    for word in ["", "samples", "count", "main", "f"] {
        profile.push(0x32);
        put_varint(&mut profile, word.len() as u64);
        profile.extend_from_slice(word.as_bytes());
    }
    profile.extend(generator.message(&mut u, "Profile", 5));
    let profile = damage(&mut u, profile);
    acceptable(&run(|sink| {
        extract_pprof(&profile[..], &options(), sink, &NoObserver)
    }))
}

#[test]
fn fuzz_pprof() {
    assert!(drive("pprof", pprof_case) > 0);
}

// ---- folded stacks ---------------------------------------------------------

fn folded_case(data: &[u8]) -> bool {
    let mut u = Unstructured::new(data);
    let mut text = String::new();
    for _ in 0..u.int_in_range(0..=200usize).unwrap_or(0) {
        let depth = u.int_in_range(0..=40usize).unwrap_or(0);
        let frames: Vec<&str> = (0..depth)
            .map(|_| {
                *u.choose(&["main", "a", "b;", "c d", "[kernel]", "x_[k]", "", " "])
                    .unwrap_or(&"a")
            })
            .collect();
        text += &frames.join(";");
        text += &match u.int_in_range(0..=4u8).unwrap_or(0) {
            0 => String::new(),
            1 => format!(" {}", number(&mut u)),
            _ => format!(" {}", u.int_in_range(0..=1000u32).unwrap_or(1)),
        };
        text += if u.ratio(1, 10).unwrap_or(false) {
            "\r\n"
        } else {
            "\n"
        };
    }
    let bytes = damage(&mut u, text.into_bytes());
    acceptable(&run(|sink| {
        extract_folded_stacks(&bytes[..], &options(), sink, &NoObserver)
    }))
}

#[test]
fn fuzz_folded_stacks() {
    assert!(drive("folded_stacks", folded_case) > 0);
}

// ---- speedscope, V8 cpuprofile, Gecko ---------------------------------------

/// A JSON array of `n` items from `item`.
fn array(
    u: &mut Unstructured<'_>,
    n: usize,
    item: impl Fn(&mut Unstructured<'_>) -> String,
) -> String {
    let items: Vec<String> = (0..n).map(|_| item(u)).collect();
    format!("[{}]", items.join(","))
}

fn small(u: &mut Unstructured<'_>, max: u32) -> String {
    // Mostly in range; now and then an extreme (still a JSON integer, so
    // one odd value does not make the whole document fail to parse).
    if u.ratio(1, 30).unwrap_or(false) {
        number(u).to_string()
    } else {
        u.int_in_range(0..=max).unwrap_or(0).to_string()
    }
}

fn speedscope_case(data: &[u8]) -> bool {
    let mut u = Unstructured::new(data);
    let frames = u.int_in_range(0..=20usize).unwrap_or(0);
    let frame_list = array(&mut u, frames, |u| {
        format!(
            "{{\"name\":{},\"file\":{},\"line\":{}}}",
            json_string(u, NAMES),
            json_string(u, &["a.py", "b.js"]),
            small(u, 100)
        )
    });
    let profiles = array(&mut u, 3, |u| {
        let n = u.int_in_range(0..=60usize).unwrap_or(0);
        if u.ratio(1, 2).unwrap_or(false) {
            format!(
                "{{\"type\":\"evented\",\"name\":\"t\",\"unit\":{},\"startValue\":0,\"endValue\":{},\"events\":{}}}",
                json_string(
                    u,
                    &["milliseconds", "nanoseconds", "bytes", "none", "furlongs"]
                ),
                small(u, 10_000),
                array(u, n, |u| format!(
                    "{{\"type\":\"{}\",\"frame\":{},\"at\":{}}}",
                    u.choose(&["O", "C", "X"]).unwrap_or(&"O"),
                    small(u, 24),
                    small(u, 10_000)
                ))
            )
        } else {
            format!(
                "{{\"type\":\"sampled\",\"name\":\"t\",\"unit\":\"none\",\"startValue\":0,\"endValue\":{},\"samples\":{},\"weights\":{}}}",
                small(u, 1000),
                array(u, n, |u| {
                    let d = u.int_in_range(0..=12usize).unwrap_or(0);
                    array(u, d, |u| small(u, 24))
                }),
                array(u, n, |u| small(u, 100))
            )
        }
    });
    let doc = format!(
        "{{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"shared\":{{\"frames\":{frame_list}}},\"profiles\":{profiles},\"activeProfileIndex\":{}}}",
        small(&mut u, 3)
    );
    let doc = damage(&mut u, doc.into_bytes());
    acceptable(&run(|sink| {
        extract_speedscope(&doc[..], &options(), sink, &NoObserver)
    }))
}

#[test]
fn fuzz_speedscope() {
    assert!(drive("speedscope", speedscope_case) > 0);
}

fn cpuprofile_case(data: &[u8]) -> bool {
    let mut u = Unstructured::new(data);
    let n = u.int_in_range(0..=40usize).unwrap_or(0);
    let nodes = array(&mut u, n, |u| {
        let kids = u.int_in_range(0..=3usize).unwrap_or(0);
        format!(
            "{{\"id\":{},\"callFrame\":{{\"functionName\":{},\"scriptId\":\"1\",\"url\":{},\"lineNumber\":{},\"columnNumber\":{}}},\"hitCount\":{},\"children\":{}}}",
            small(u, 48),
            json_string(u, NAMES),
            json_string(u, &["", "file:///a.js"]),
            small(u, 500),
            small(u, 80),
            small(u, 10),
            array(u, kids, |u| small(u, 48))
        )
    });
    let samples = u.int_in_range(0..=80usize).unwrap_or(0);
    let doc = format!(
        "{{\"nodes\":{nodes},\"startTime\":{},\"endTime\":{},\"samples\":{},\"timeDeltas\":{}}}",
        small(&mut u, 1000),
        small(&mut u, 100_000),
        array(&mut u, samples, |u| small(u, 48)),
        array(&mut u, samples, |u| small(u, 1000))
    );
    let doc = damage(&mut u, doc.into_bytes());
    acceptable(&run(|sink| {
        extract_cpuprofile(&doc[..], &options(), sink, &NoObserver)
    }))
}

#[test]
fn fuzz_cpuprofile() {
    assert!(drive("cpuprofile", cpuprofile_case) > 0);
}

fn gecko_thread(u: &mut Unstructured<'_>) -> String {
    let strings = array(u, 8, |u| {
        json_string(
            u,
            &[
                "main",
                "0x7fff1234",
                "foo (in libc.so)",
                "bar.js:10:2",
                "(root)",
            ],
        )
    });
    let frames = u.int_in_range(0..=12usize).unwrap_or(0);
    let stacks = u.int_in_range(0..=16usize).unwrap_or(0);
    let samples = u.int_in_range(0..=40usize).unwrap_or(0);
    format!(
        "{{\"name\":{},\"tid\":{},\"pid\":{},\"stringTable\":{strings},\
         \"frameTable\":{{\"schema\":{{\"location\":0,\"category\":1}},\"data\":{}}},\
         \"stackTable\":{{\"schema\":{{\"prefix\":0,\"frame\":1}},\"data\":{}}},\
         \"samples\":{{\"schema\":{{\"stack\":0,\"time\":1}},\"data\":{}}}}}",
        json_string(u, &["GeckoMain", "DOM Worker"]),
        small(u, 9),
        small(u, 9),
        array(u, frames, |u| format!("[{},{}]", small(u, 9), small(u, 3))),
        array(u, stacks, |u| {
            let prefix = if u.ratio(1, 3).unwrap_or(false) {
                "null".to_owned()
            } else {
                small(u, 16)
            };
            format!("[{prefix},{}]", small(u, 12))
        }),
        array(u, samples, |u| format!(
            "[{},{}.{}]",
            small(u, 16),
            small(u, 100_000),
            small(u, 999)
        ))
    )
}

fn gecko_case(data: &[u8]) -> bool {
    let mut u = Unstructured::new(data);
    let threads = u.int_in_range(0..=3usize).unwrap_or(0);
    let thread_list = array(&mut u, threads, gecko_thread);
    let libs = array(&mut u, 4, |u| {
        format!(
            "{{\"start\":{},\"end\":{},\"name\":\"libc.so\"}}",
            small(u, 0x7fff_0000),
            small(u, 0x7fff_ffff)
        )
    });
    let processes = if u.ratio(1, 3).unwrap_or(false) {
        let t = array(&mut u, 1, gecko_thread);
        format!(",\"processes\":[{{\"meta\":{{\"version\":24}},\"threads\":{t}}}]")
    } else {
        String::new()
    };
    let doc = format!(
        "{{\"meta\":{{\"version\":{},\"startTime\":{},\"interval\":{}}},\"libs\":{libs},\"threads\":{thread_list}{processes}}}",
        small(&mut u, 30),
        small(&mut u, 1_700_000_000),
        small(&mut u, 10)
    );
    let doc = damage(&mut u, doc.into_bytes());
    acceptable(&run(|sink| {
        extract_gecko_profile(&doc[..], &options(), sink, &NoObserver)
    }))
}

#[test]
fn fuzz_gecko_profile() {
    assert!(drive("gecko_profile", gecko_case) > 0);
}

// ---- Nsight Systems SQLite ---------------------------------------------------

/// The `CREATE TABLE` statements of a real export (the corpus's smallest).
fn nsight_tables() -> &'static [String] {
    static TABLES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    TABLES.get_or_init(|| {
        let path = common::corpus("nsys/flameox_smoke_nsys2025.5.2.sqlite");
        let conn =
            rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .expect("corpus export");
        let mut stmt = conn
            .prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND sql IS NOT NULL")
            .expect("schema");
        stmt.query_map([], |r| r.get::<_, String>(0))
            .expect("schema rows")
            .filter_map(Result::ok)
            .collect()
    })
}

fn nsight_case(data: &[u8]) -> bool {
    let mut u = Unstructured::new(data);
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("fuzz.sqlite");
    {
        let conn = rusqlite::Connection::open(&path).expect("create");
        conn.execute_batch("BEGIN").expect("begin");
        for create in nsight_tables() {
            conn.execute_batch(create).expect("create table");
            let table = create
                .split_whitespace()
                .nth(2)
                .unwrap_or("")
                .trim_matches(['"', '(']);
            let columns: usize = conn
                .prepare(&format!("SELECT * FROM \"{table}\" LIMIT 0"))
                .map(|s| s.column_count())
                .unwrap_or(0);
            if columns == 0 {
                continue;
            }
            let placeholders = vec!["?"; columns].join(",");
            let sql = format!("INSERT INTO \"{table}\" VALUES ({placeholders})");
            for _ in 0..u.int_in_range(0..=12usize).unwrap_or(0) {
                let values: Vec<rusqlite::types::Value> = (0..columns)
                    .map(|_| match u.int_in_range(0..=5u8).unwrap_or(0) {
                        0 => rusqlite::types::Value::Null,
                        1 => rusqlite::types::Value::Text(
                            (*u.choose(NAMES).unwrap_or(&"x")).to_owned(),
                        ),
                        2 => rusqlite::types::Value::Real(number(&mut u) as f64 / 3.0),
                        _ => rusqlite::types::Value::Integer(number(&mut u)),
                    })
                    .collect();
                // Constraint violations just skip the row.
                let _ = conn.execute(&sql, rusqlite::params_from_iter(values));
            }
        }
        conn.execute_batch("COMMIT").expect("commit");
    }
    acceptable(&run(|sink| {
        extract_nsight_sqlite(&path, &options(), sink, &NoObserver)
    }))
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn fuzz_nsight_sqlite() {
    assert!(drive("nsight_sqlite", nsight_case) > 0);
}

// ---- benchmark results (pyperf, hyperfine, Google Benchmark) ---------------

/// Changes values of a real document in place: numbers to extremes,
/// strings to others, members dropped, arrays cut or repeated, a value
/// replaced by another type.
fn mutate_value(u: &mut Unstructured<'_>, v: &mut serde_json::Value, depth: u32) {
    use serde_json::Value;
    if depth > 12 {
        return;
    }
    match v {
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                match u.int_in_range(0..=79u8).unwrap_or(0) {
                    0 => {
                        map.remove(&k);
                    }
                    1 => {
                        map.insert(k, Value::Null);
                    }
                    _ => {
                        if let Some(child) = map.get_mut(&k) {
                            mutate_value(u, child, depth + 1);
                        }
                    }
                }
            }
        }
        Value::Array(items) => {
            match u.int_in_range(0..=29u8).unwrap_or(0) {
                0 => items.truncate(u.int_in_range(0..=items.len()).unwrap_or(0)),
                1 if !items.is_empty() && items.len() < 10_000 => {
                    let copy = items[0].clone();
                    items.extend(std::iter::repeat_n(
                        copy,
                        u.int_in_range(1..=50usize).unwrap_or(1),
                    ));
                }
                _ => {}
            }
            for item in items.iter_mut() {
                mutate_value(u, item, depth + 1);
            }
        }
        Value::Number(_) if u.ratio(1, 40).unwrap_or(false) => {
            *v = match u.int_in_range(0..=4u8).unwrap_or(0) {
                0 => Value::from(number(u)),
                1 => Value::from(-1.5e300),
                2 => Value::from(f64::MIN_POSITIVE),
                3 => Value::String("12".into()),
                _ => Value::Null,
            };
        }
        Value::String(_) if u.ratio(1, 40).unwrap_or(false) => {
            *v = Value::String((*u.choose(NAMES).unwrap_or(&"")).to_owned());
        }
        _ => {}
    }
}

fn benchmark_case(data: &[u8]) -> bool {
    use flameox_extractors::{extract_gbench, extract_hyperfine, extract_pyperf};
    static DOCS: std::sync::OnceLock<Vec<(u8, serde_json::Value)>> = std::sync::OnceLock::new();
    let docs = DOCS.get_or_init(|| {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/benchmarks");
        [
            (0u8, "pyperf/pyperf_suite.json"),
            (1, "hyperfine/hyperfine_basic.json"),
            (1, "hyperfine/hyperfine_params.json"),
            (2, "gbench/gbench.json"),
        ]
        .into_iter()
        .map(|(kind, rel)| {
            let text = std::fs::read(dir.join(rel)).expect("benchmark fixture");
            (kind, serde_json::from_slice(&text).expect("fixture JSON"))
        })
        .collect()
    });
    let mut u = Unstructured::new(data);
    let Ok((kind, doc)) = u.choose(docs) else {
        return false;
    };
    let mut doc = doc.clone();
    mutate_value(&mut u, &mut doc, 0);
    let text = damage(&mut u, doc.to_string().into_bytes());
    let opts = options();
    acceptable(&run(|sink| match kind {
        0 => extract_pyperf(&text[..], &opts, sink, &NoObserver),
        1 => extract_hyperfine(&text[..], &opts, sink, &NoObserver),
        _ => extract_gbench(&text[..], &opts, sink, &NoObserver),
    }))
}

#[test]
fn fuzz_benchmark_results() {
    assert!(drive("benchmark_results", benchmark_case) > 0);
}
