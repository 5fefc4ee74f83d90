//! The real trace-cmd file against the kernel's own text of the same ring
//! buffer (`linux/ftrace_sched_raw.txt`, read from `/sys/kernel/tracing/
//! trace` before `trace-cmd extract`), parsed here by a separate line parser.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::*;
use crate::kernel_events::model::{FieldValue, KernelEvent};

fn corpus(name: &str) -> PathBuf {
    Path::new(env!("FLAMEOX_CORPUS_DIR"))
        .join("linux")
        .join(name)
}

/// One line of the ftrace text: `comm-pid [cpu] flags secs.usecs: name: body`.
struct TextEvent {
    comm: String,
    pid: i32,
    cpu: u32,
    ts_us: i64,
    name: String,
    body: String,
}

fn parse_text_line(line: &str) -> Option<TextEvent> {
    let open = line.find(" [")?;
    let (comm, pid) = line.get(..open)?.trim().rsplit_once('-')?;
    let (cpu, rest) = line.get(open + 2..)?.split_once(']')?;
    let rest = rest.trim_start();
    let (_flags, rest) = rest.split_once(' ')?;
    let (ts, rest) = rest.trim_start().split_once(": ")?;
    let (name, body) = rest.split_once(": ")?;
    let (secs, usecs) = ts.split_once('.')?;
    Some(TextEvent {
        comm: comm.to_string(),
        pid: pid.parse().ok()?,
        cpu: cpu.parse().ok()?,
        ts_us: secs.parse::<i64>().ok()? * 1_000_000 + usecs.parse::<i64>().ok()?,
        name: name.to_string(),
        body: body.to_string(),
    })
}

/// How the kernel's print formats show a field: `prev_state` as task-state
/// letters (`R`, `S`, `D|W`…, `+` when preempted), `target_cpu` as `%03d`,
/// `group_dead` as a bool.
fn render(key: &str, value: &FieldValue) -> String {
    let number = value.as_i64().unwrap_or(i64::MIN);
    match key {
        "prev_state" => {
            const LETTERS: [(i64, &str); 8] = [
                (0x1, "S"),
                (0x2, "D"),
                (0x4, "T"),
                (0x8, "t"),
                (0x10, "X"),
                (0x20, "Z"),
                (0x40, "P"),
                (0x80, "I"),
            ];
            let set: Vec<&str> = LETTERS
                .iter()
                .filter(|(bit, _)| number & bit != 0)
                .map(|(_, l)| *l)
                .collect();
            let base = if set.is_empty() {
                "R".to_string()
            } else {
                set.join("|")
            };
            if number & 0x100 != 0 {
                base + "+"
            } else {
                base
            }
        }
        "target_cpu" => format!("{number:03}"),
        "group_dead" => (number != 0).to_string(),
        _ => value.as_text(),
    }
}

/// `key=value` as a whole token of `body`.
fn has_pair(body: &str, key: &str, value: &str) -> bool {
    let pair = format!("{key}={value}");
    body.match_indices(&pair).any(|(at, _)| {
        let before = body
            .get(..at)
            .is_none_or(|b| b.is_empty() || b.ends_with(' '));
        let after = body
            .get(at + pair.len()..)
            .is_none_or(|a| a.is_empty() || a.starts_with(' '));
        before && after
    })
}

fn decode_all() -> (Vec<KernelEvent>, TraceCmdSummary, Vec<u64>) {
    let file = std::fs::File::open(corpus("tracecmd_sched.dat"));
    let file = file
        .map_err(|e| e.to_string())
        .and_then(|f| TraceCmdFile::open(f).map_err(|e| e.to_string()));
    let mut file = match file {
        Ok(f) => f,
        Err(e) => panic!("{e}"),
    };
    // Uncompressed bytes per CPU from the chunk tables, walked here.
    let bytes = std::fs::read(corpus("tracecmd_sched.dat")).unwrap_or_default();
    let u32_at = |at: usize| {
        bytes
            .get(at..at + 4)
            .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let top = file.top_buffer().unwrap_or(usize::MAX);
    let mut per_cpu_bytes = Vec::new();
    for cpu in &file.buffers()[top].cpus {
        let mut at = cpu.offset as usize;
        let chunks = u32_at(at);
        at += 4;
        let mut total = 0u64;
        for _ in 0..chunks {
            total += u64::from(u32_at(at + 4));
            at += 8 + u32_at(at) as usize;
        }
        per_cpu_bytes.push(total);
    }
    let mut events = Vec::new();
    let summary = match file.events(top) {
        Ok(iter) => iter.for_each_event(|e| events.push(e)),
        Err(e) => panic!("{e}"),
    };
    (events, summary, per_cpu_bytes)
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn tracecmd_dat_matches_the_ftrace_text_of_the_same_buffer_event_by_event() {
    let text = std::fs::read_to_string(corpus("ftrace_sched_raw.txt")).unwrap_or_default();
    let header_total: usize = text
        .lines()
        .find_map(|l| l.split("entries-written: ").nth(1))
        .and_then(|v| v.split('/').next())
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let body: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect();
    let expected: Vec<TextEvent> = body.iter().filter_map(|l| parse_text_line(l)).collect();
    assert_eq!(expected.len(), body.len(), "every text line parses");
    assert_eq!(expected.len(), header_total);
    assert_eq!(expected.len(), 6012);

    let (events, summary, per_cpu_bytes) = decode_all();
    assert_eq!(events.len(), expected.len());
    let mut comm_agrees = 0;
    let mut fields_checked = 0;
    for (i, (got, want)) in events.iter().zip(&expected).enumerate() {
        let at = format!("event {i} ({} at {} µs)", want.name, want.ts_us);
        // The kernel prints µs rounded to nearest (`ns2usecs` adds 500).
        assert_eq!(
            (
                got.cpu,
                (got.ts_ns + 500) / 1000,
                got.name.as_str(),
                got.pid
            ),
            (want.cpu, want.ts_us, want.name.as_str(), want.pid),
            "{at}"
        );
        for (key, value) in &got.fields {
            let shown = render(key, value);
            // sched_process_fork prints its parent_* fields as comm=/pid=.
            let label = key.strip_prefix("parent_").unwrap_or(key);
            assert!(
                has_pair(&want.body, label, &shown),
                "{at}: {key}={shown} not in {:?}",
                want.body
            );
            fields_checked += 1;
        }
        if got.comm.as_deref() == Some(want.comm.as_str()) {
            comm_agrees += 1;
        }
    }
    // The text names each task from the kernel's cmdline table at print
    // time, the .dat from the table saved at extract time (pid 0 is
    // `<idle>` in both); nothing ran in between, so they agree for all.
    assert_eq!(comm_agrees, events.len());
    assert!(fields_checked > 6012 * 3);

    let mut by_name_text = BTreeMap::new();
    let mut by_cpu_text = BTreeMap::new();
    for e in &expected {
        *by_name_text.entry(e.name.as_str()).or_insert(0u64) += 1;
        *by_cpu_text.entry(e.cpu).or_insert(0u64) += 1;
    }
    let mut by_name = BTreeMap::new();
    for e in &events {
        *by_name.entry(e.name.as_str()).or_insert(0u64) += 1;
    }
    assert_eq!(by_name, by_name_text);
    assert_eq!(by_name.get("sched_switch"), Some(&2979));
    assert_eq!(summary.events_per_cpu, by_cpu_text);

    assert_eq!(
        (
            summary.version,
            summary.compression.as_deref(),
            summary.cpus
        ),
        (7, Some("zstd 1.5.4"), 2)
    );
    assert_eq!(summary.clock.as_deref(), Some("local"));
    let lost_lines = text.lines().filter(|l| l.contains("LOST")).count() as u64;
    assert_eq!(
        (summary.lost_events, summary.pages_with_unknown_loss),
        (lost_lines, 0)
    );
    assert_eq!(
        (
            summary.page_errors,
            summary.unknown_records(),
            summary.undecodable_records
        ),
        (0, 0, 0)
    );
    assert_eq!(summary.pages * 4096, per_cpu_bytes.iter().sum::<u64>());
    assert!(summary.notes.is_empty(), "{:?}", summary.notes);
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn damaged_copies_of_the_real_file_fail_or_decode_partially_without_panicking() {
    let bytes = std::fs::read(corpus("tracecmd_sched.dat")).unwrap_or_default();
    assert!(bytes.len() > 1_000_000);
    let read = |b: Vec<u8>| -> Option<usize> {
        let mut file = TraceCmdFile::open(std::io::Cursor::new(b)).ok()?;
        let n = file.events(0).ok()?.count();
        Some(n)
    };
    // The pieces trace-cmd 3.1.6 wrote: header, metadata sections, the
    // (mostly kallsyms) middle, the buffer section and the CPU chunks.
    let len = bytes.len();
    let mut cuts: Vec<usize> = (0..12).map(|i| i * len / 12).collect();
    cuts.extend([
        1,
        9,
        12,
        30,
        40,
        100,
        2100,
        124_000,
        1_136_900,
        1_138_700,
        1_139_300,
        1_142_790,
        1_150_000,
        1_163_270,
        1_170_000,
        len - 1,
    ]);
    for cut in cuts {
        let n = read(bytes[..cut.min(len)].to_vec()).unwrap_or(0);
        assert!(n <= 6012, "cut at {cut}");
    }
    let mut seed = 0x853c_49e6_748f_ea9bu64;
    let mut flips: Vec<usize> = (0..40)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            // Half in the metadata before kallsyms, half in the buffer and pages.
            if seed.is_multiple_of(2) {
                (seed >> 8) as usize % 124_466
            } else {
                1_136_876 + (seed >> 8) as usize % (len - 1_136_876)
            }
        })
        .collect();
    flips.extend([10, 11, 12, 13, 16, 20, 30]);
    for at in flips {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x5a;
        let _ = read(damaged);
    }
    let mut zeroed = bytes.clone();
    zeroed[1_142_784..1_150_000].fill(0);
    let n = read(zeroed).unwrap_or(0);
    assert!(n > 0 && n < 6012, "CPU 1 survives a zeroed CPU 0: {n}");
}
