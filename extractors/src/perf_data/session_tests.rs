//! Corpus checks of the whole decoder against independent readings of the
//! same files: `perf script` text (the real tool's output, stored in the
//! corpus, and run live when `perf` is installed) and a minimal record walk
//! written here without the decoder's code.

use std::collections::BTreeMap;
use std::path::Path;

use crate::perf_data::model::{PerfDataOptions, PerfDataSummary, PerfEvent, PerfSample};
use crate::perf_data::session::{read_perf_data, read_perf_pipe};

#[path = "pipe_mode_tests.rs"]
mod pipe_mode;

fn corpus(rel: &str) -> Vec<u8> {
    let path = Path::new(env!("FLAMEOX_CORPUS_DIR")).join(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn decode(bytes: &[u8], options: &PerfDataOptions) -> (Vec<PerfSample>, PerfDataSummary) {
    let mut samples = Vec::new();
    let summary = read_perf_data(std::io::Cursor::new(bytes), options, |ev| {
        if let PerfEvent::Sample(s) = ev {
            samples.push(*s);
        }
    })
    .unwrap_or_else(|e| panic!("decode failed: {e}"));
    (samples, summary)
}

fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default())
}

/// A walk of a little-endian file-mode data section written for the tests:
/// `(type, body)` per record.
fn walk_records(b: &[u8]) -> Vec<(u32, &[u8])> {
    let (mut at, end) = (le64(b, 40) as usize, (le64(b, 40) + le64(b, 48)) as usize);
    let mut out = Vec::new();
    while at + 8 <= end {
        let kind = u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or_default());
        let size = u16::from_le_bytes([b[at + 6], b[at + 7]]) as usize;
        assert!(size >= 8, "record size {size} at {at}");
        out.push((kind, &b[at + 8..at + size]));
        at += size;
    }
    assert_eq!(at, end);
    out
}

/// Event ids → attr index, read from the attrs section for the tests.
fn attr_ids(b: &[u8]) -> BTreeMap<u64, usize> {
    let (attr_size, attrs, n) = (
        le64(b, 16) as usize,
        le64(b, 24) as usize,
        le64(b, 32) / le64(b, 16),
    );
    let mut out = BTreeMap::new();
    for i in 0..n as usize {
        let ids_at = attrs + (i + 1) * attr_size - 16;
        let (off, size) = (le64(b, ids_at) as usize, le64(b, ids_at + 8) as usize);
        for k in 0..size / 8 {
            out.insert(le64(b, off + 8 * k), i);
        }
    }
    out
}

/// One sample of `perf script` text: `(comm, tid, time text, period,
/// frames)`, each frame `(address hex, symbol, module)`.
type ScriptSample = (String, i32, String, u64, Vec<(String, String, String)>);

fn parse_perf_script(text: &str) -> Vec<ScriptSample> {
    let mut out: Vec<ScriptSample> = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with(['\t', ' ']) {
            let l = line.trim();
            let (addr, rest) = l.split_once(' ').unwrap_or((l, ""));
            let open = rest.rfind(" (").unwrap_or(0);
            let module = rest[open..]
                .trim()
                .trim_start_matches('(')
                .trim_end_matches(')');
            let symbol = rest[..open].split("+0x").next().unwrap_or("");
            if let Some(last) = out.last_mut() {
                last.4
                    .push((addr.to_owned(), symbol.to_owned(), module.to_owned()));
            }
        } else {
            let t: Vec<&str> = line.split_whitespace().collect();
            let n = t.len();
            assert!(n >= 5, "{line}");
            out.push((
                t[..n - 4].join(" "),
                t[n - 4].parse().unwrap_or(-1),
                t[n - 3].trim_end_matches(':').to_owned(),
                t[n - 2].parse().unwrap_or(0),
                Vec::new(),
            ));
        }
    }
    out
}

fn seconds_text(ns: u64) -> String {
    format!("{}.{:06}", ns / 1_000_000_000, ns % 1_000_000_000 / 1000)
}

fn perf_installed() -> bool {
    std::process::Command::new("perf")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn callchain_samples_match_perf_script() {
    let bytes = corpus("linux/perf_mixed_cpuclock_callchains.perf.data");
    let script = String::from_utf8_lossy(&corpus("stacks/perf_mixed.perf-script.txt")).into_owned();
    let expected = parse_perf_script(&script);
    let (samples, summary) = decode(&bytes, &PerfDataOptions::default());
    let walked = walk_records(&bytes).iter().filter(|(k, _)| *k == 9).count();
    assert_eq!((samples.len(), expected.len(), walked), (684, 684, 684));
    assert!(
        summary.complete && summary.notes.is_empty(),
        "{:?}",
        summary.notes
    );
    assert_eq!(&*summary.events[0].name, "cpu-clock:ppp");
    let (mut frames, mut named, mut same_name) = (0, 0, 0);
    for (i, (s, (comm, tid, time, period, chain))) in samples.iter().zip(&expected).enumerate() {
        assert_eq!(s.tid, Some(*tid), "sample {i}");
        assert_eq!(s.comm.as_deref(), Some(comm.as_str()), "sample {i}");
        assert_eq!(seconds_text(s.ts_ns.unwrap_or(0)), *time, "sample {i}");
        assert_eq!(s.period, Some(*period), "sample {i}");
        assert_eq!(s.callchain.len(), chain.len(), "sample {i} at {time}");
        for (f, (addr, symbol, module)) in s.callchain.iter().zip(chain) {
            frames += 1;
            let shown = if module == "[unknown]" {
                f.ip
            } else {
                f.offset_in_module.unwrap_or(u64::MAX)
            };
            assert_eq!(format!("{shown:x}"), *addr, "sample {i} frame {addr}");
            assert_eq!(
                f.module.as_deref().unwrap_or("[unknown]"),
                module,
                "sample {i} frame {addr}"
            );
            assert_eq!(
                f.kernel,
                module == "[kernel.kallsyms]",
                "sample {i} frame {addr}"
            );
            if let Some(name) = &f.symbol {
                named += 1;
                same_name += usize::from(**name == **symbol);
            }
        }
    }
    assert_eq!(frames, 2882 - 684);
    // Names come from this machine's files (only when their build ids
    // match); where there are some, they are perf's names.
    eprintln!("{named} of {frames} frames named, {same_name} as perf script names them");
    assert!(same_name * 10 >= named * 9, "{same_name} of {named}");
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn tracepoint_counts_and_fields_match_an_independent_walk() {
    let bytes = corpus("linux/perf_sched_tracepoints.perf.data");
    let (samples, summary) = decode(
        &bytes,
        &PerfDataOptions {
            resolve_symbols: false,
            ..PerfDataOptions::default()
        },
    );
    assert!(summary.complete, "{:?}", summary.notes);
    // Independent: the IDENTIFIER word of each sample record → attr index.
    let ids = attr_ids(&bytes);
    let mut by_attr = vec![0u64; summary.events.len()];
    let mut comm_tids = std::collections::BTreeSet::new();
    for (kind, body) in walk_records(&bytes) {
        if kind == 9 {
            by_attr[ids[&le64(body, 0)]] += 1;
        } else if kind == 3 || kind == 7 {
            // COMM / FORK: the tid is the second / third u32.
            let at = if kind == 3 { 4 } else { 8 };
            comm_tids.insert(i32::from_le_bytes(
                body[at..at + 4].try_into().unwrap_or_default(),
            ));
        }
    }
    assert_eq!(by_attr, summary.samples_per_event);
    let mut by_name = BTreeMap::new();
    for s in &samples {
        *by_name.entry(s.event_name.to_string()).or_insert(0u64) += 1;
    }
    // The event order is the `-e` order of the recorded command line.
    let from_cmdline: Vec<&str> = summary
        .meta
        .cmdline
        .iter()
        .skip(1)
        .filter(|a| a.starts_with("sched:"))
        .map(String::as_str)
        .collect();
    let names: Vec<&str> = summary.events.iter().map(|e| &*e.name).take(8).collect();
    assert_eq!(names, from_cmdline);
    let expected = [3042, 1398, 1399, 29, 29, 11, 30, 14];
    for (name, n) in names.iter().zip(expected) {
        assert_eq!(by_name.get(*name), Some(&n), "{name}");
    }
    assert_eq!(summary.tracepoints_not_decoded, 0);
    let (mut switches, mut known_next) = (0, 0);
    for s in &samples {
        let ev = s
            .kernel_event
            .as_ref()
            .unwrap_or_else(|| panic!("undecoded {}", s.event_name));
        // common_pid in the raw record is the sample's tid (which the
        // kernel gives as -1 for a task that is exiting).
        if s.tid != Some(-1) {
            assert_eq!(Some(ev.pid), s.tid, "{}", s.event_name);
        }
        assert_eq!((Some(ev.cpu), Some(ev.ts_ns as u64)), (s.cpu, s.ts_ns));
        assert_eq!(Some(ev.name.as_str()), s.event_name.strip_prefix("sched:"));
        if ev.name == "sched_switch" {
            switches += 1;
            let int = |f: &str| ev.field(f).and_then(|v| v.as_i64()).unwrap_or(-1);
            assert_eq!(int("prev_pid") as i32, ev.pid);
            let next = int("next_pid") as i32;
            assert!(next >= 0);
            known_next += usize::from(next == 0 || comm_tids.contains(&next));
        }
    }
    assert_eq!(switches, 3042);
    assert!(
        known_next * 10 >= switches * 9,
        "{known_next} of {switches} next_pids known"
    );
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn tracepoint_samples_match_live_perf_script() {
    if !perf_installed() {
        eprintln!("perf is not installed: live comparison skipped");
        return;
    }
    let path = Path::new(env!("FLAMEOX_CORPUS_DIR")).join("linux/perf_sched_tracepoints.perf.data");
    let out = std::process::Command::new("perf")
        .args(["script", "-F", "tid,cpu,time,event,trace", "-i"])
        .arg(&path)
        .output()
        .unwrap_or_else(|e| panic!("perf script: {e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    let (samples, _) = decode(
        &corpus("linux/perf_sched_tracepoints.perf.data"),
        &PerfDataOptions {
            resolve_symbols: false,
            ..PerfDataOptions::default()
        },
    );
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), samples.len());
    for (line, s) in lines.iter().zip(&samples) {
        // `  tid [cpu] secs.usecs: sys:name: fields`
        let t: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(t[0].parse::<i32>().ok(), s.tid, "{line}");
        assert_eq!(t[1], format!("[{:03}]", s.cpu.unwrap_or(0)), "{line}");
        assert_eq!(
            t[2].trim_end_matches(':'),
            seconds_text(s.ts_ns.unwrap_or(0)),
            "{line}"
        );
        assert_eq!(t[3].trim_end_matches(':'), &*s.event_name, "{line}");
        let ev = s.kernel_event.as_ref().unwrap_or_else(|| panic!("{line}"));
        // Fields printed under their own names by these events' formats.
        if [
            "sched_switch",
            "sched_waking",
            "sched_wakeup",
            "sched_wakeup_new",
            "sched_migrate_task",
        ]
        .contains(&ev.name.as_str())
        {
            for (field, value) in ev.fields.iter().filter(|(f, _)| f.ends_with("pid")) {
                let shown = format!("{field}={}", value.as_text());
                assert!(t.contains(&shown.as_str()), "{shown} not in {line}");
            }
        }
    }
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn damaged_corpus_files_never_panic() {
    let options = PerfDataOptions {
        resolve_symbols: false,
        kernel_symbols: false,
        decode_tracepoints: true,
    };
    for rel in [
        "linux/perf_mixed_cpuclock_callchains.perf.data",
        "linux/perf_sched_tracepoints.perf.data",
    ] {
        let bytes = corpus(rel);
        let full = decode(&bytes, &options).0.len();
        // Fewer rounds on the large file: a debug-build decode of it is slow.
        let (cuts, rounds) = if bytes.len() > 200_000 {
            (60, 80)
        } else {
            (200, 300)
        };
        let step = (bytes.len() / cuts).max(1);
        for cut in (0..bytes.len())
            .step_by(step)
            .chain([1, 8, 15, 16, 17, 103, 104, 105])
        {
            let mut n = 0usize;
            let _ = read_perf_data(std::io::Cursor::new(&bytes[..cut]), &options, |_| n += 1);
            assert!(n <= full * 2 + 1000);
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..rounds {
            let mut damaged = bytes.clone();
            for _ in 0..1 + round % 8 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let at = (seed % damaged.len() as u64) as usize;
                damaged[at] ^= 1 << (seed >> 60 & 7);
            }
            if round % 50 == 0 {
                let at = (seed % damaged.len() as u64) as usize;
                let end = (at + 4096).min(damaged.len());
                damaged[at..end].fill(0);
            }
            let _ = read_perf_data(std::io::Cursor::new(&damaged), &options, |_| {});
            let _ = read_perf_pipe(&damaged[..], &options, |_| {});
        }
    }
}
