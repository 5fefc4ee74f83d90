//! File-level tests on synthetic v6/v7 files: merge order, timestamps,
//! instances, options, unsupported versions, and damage of every kind.

use std::io::Cursor;

use super::*;
use crate::kernel_events::model::FieldValue;

#[path = "synthetic_files.rs"]
mod synthetic;
use synthetic::{Compress, UNKNOWN_ID, v6_file, v7_file};

fn open(bytes: Vec<u8>) -> TraceCmdFile<Cursor<Vec<u8>>> {
    match TraceCmdFile::open(Cursor::new(bytes)) {
        Ok(f) => f,
        Err(e) => panic!("{e}"),
    }
}

/// (ts, cpu, pid, comm, `pid` field) of every event, and the summary.
type Row = (i64, u32, i32, Option<String>, Option<FieldValue>);

fn rows(file: &mut TraceCmdFile<Cursor<Vec<u8>>>, buffer: usize) -> (Vec<Row>, TraceCmdSummary) {
    let events = match file.events(buffer) {
        Ok(e) => e,
        Err(e) => panic!("{e}"),
    };
    let mut out = Vec::new();
    let summary = events.for_each_event(|e| {
        assert_eq!(e.name, "sched_waking");
        out.push((
            e.ts_ns,
            e.cpu,
            e.pid,
            e.comm.clone(),
            e.field("pid").cloned(),
        ));
    });
    (out, summary)
}

fn expected(offset: i64, comm_10: Option<&str>, comm_20: Option<&str>) -> Vec<Row> {
    let row = |ts: i64, cpu, pid, comm: Option<&str>| {
        (
            ts + offset,
            cpu,
            pid,
            comm.map(String::from),
            Some(FieldValue::Int(i64::from(pid))),
        )
    };
    vec![
        row(100, 0, 10, comm_10),
        row(200, 1, 20, comm_20),
        row(300, 0, 11, None),
        row(300, 1, 22, None),
        row(400, 1, 0, Some("<idle>")),
        row(500, 0, 12, None),
    ]
}

fn check_summary(s: &TraceCmdSummary) {
    assert_eq!(s.events_per_cpu.get(&0), Some(&3));
    assert_eq!(s.events_per_cpu.get(&1), Some(&3));
    assert_eq!(
        (s.cpus, s.pages, s.page_errors, s.lost_events),
        (2, 3, 0, 5)
    );
    assert_eq!(s.unknown_event_ids.get(&UNKNOWN_ID), Some(&1));
    assert_eq!(s.undecodable_records, 0);
}

#[test]
fn v6_files_merge_cpus_in_time_order_in_both_byte_orders() {
    for endian in [Endian::Little, Endian::Big] {
        let mut file = open(v6_file(endian));
        assert_eq!(
            (file.header.version, file.header.big_endian),
            (6, endian.is_big())
        );
        assert_eq!(file.buffers().len(), 2);
        let top = file.top_buffer().unwrap_or(usize::MAX);
        let (got, summary) = rows(&mut file, top);
        assert_eq!(got, expected(0, None, None), "{endian:?}");
        check_summary(&summary);
        assert_eq!(summary.clock.as_deref(), Some("global"));
        assert_eq!(summary.overruns, 3);
        assert_eq!(summary.compression, None);
        // The instance holds CPU 0's pages only.
        let (inst, s) = rows(&mut file, 1);
        assert_eq!(inst.len(), 3);
        assert_eq!((s.buffer.as_str(), s.cpus), ("inst", 2));
        assert!(matches!(
            file.events(2),
            Err(TraceCmdError::NoSuchBuffer { index: 2, count: 2 })
        ));
    }
}

#[test]
fn v7_files_read_plain_zlib_and_zstd_sections_and_chunks() {
    for how in [Compress::None, Compress::Zlib, Compress::Zstd] {
        for endian in [Endian::Little, Endian::Big] {
            let mut file = open(v7_file(endian, how));
            assert_eq!(file.header.version, 7);
            assert_eq!(file.header.compression.is_some(), how != Compress::None);
            assert_eq!(
                file.tracing.notes.len(),
                1,
                "the bad format: {:?}",
                file.tracing.notes
            );
            assert!(file.tracing.kallsyms_bytes > 0);
            let (got, summary) = rows(&mut file, 0);
            assert_eq!(
                got,
                expected(1000, Some("first"), Some("x")),
                "{how:?} {endian:?}"
            );
            check_summary(&summary);
            assert_eq!(
                (summary.clock.as_deref(), summary.ts_offset_ns),
                (Some("local"), 1000)
            );
            assert!(summary.timestamps_in_ns);
        }
    }
}

#[test]
fn versions_and_codecs_outside_the_supported_ones_are_named() {
    let mut bytes = v7_file(Endian::Little, Compress::None);
    bytes[10] = b'8';
    match TraceCmdFile::open(Cursor::new(bytes)) {
        Err(e @ TraceCmdError::UnsupportedVersion { .. }) => {
            let text = e.to_string();
            assert!(text.contains("\"8\"") && text.contains("6 and 7"), "{text}");
        }
        other => panic!("{:?}", other.err()),
    }
    let mut perf_style = v6_file(Endian::Little);
    perf_style.splice(10..11, *b"0.6");
    assert!(matches!(
        TraceCmdFile::open(Cursor::new(perf_style)),
        Err(TraceCmdError::UnsupportedVersion { found }) if found == "0.6"
    ));
    let mut lz4 = v7_file(Endian::Little, Compress::Zstd);
    let at = lz4.windows(5).position(|w| w == b"zstd\0").unwrap_or(0);
    lz4[at..at + 4].copy_from_slice(b"lz4x");
    assert!(matches!(
        TraceCmdFile::open(Cursor::new(lz4)),
        Err(TraceCmdError::UnsupportedCompression { .. })
    ));
    assert!(matches!(
        TraceCmdFile::open(Cursor::new(b"PK\x03\x04 not a trace".to_vec())),
        Err(TraceCmdError::NotTraceCmd)
    ));
}

/// Opens and reads every buffer; only panics count as failures.
fn read_everything(bytes: Vec<u8>) -> usize {
    let Ok(mut file) = TraceCmdFile::open(Cursor::new(bytes)) else {
        return 0;
    };
    let mut n = 0;
    for index in 0..file.buffers().len() {
        if let Ok(events) = file.events(index) {
            n += events.count();
        }
    }
    n
}

#[test]
fn every_truncation_and_many_flips_never_panic() {
    for bytes in [
        v6_file(Endian::Little),
        v6_file(Endian::Big),
        v7_file(Endian::Little, Compress::Zstd),
        v7_file(Endian::Big, Compress::Zlib),
        v7_file(Endian::Little, Compress::None),
    ] {
        // Every cut inside the metadata, a sample inside the zero padding
        // and the pages.
        for len in (0..bytes.len()).filter(|l| *l < 1600 || l % 37 == 0) {
            let n = read_everything(bytes[..len].to_vec());
            assert!(n <= 9, "a cut file cannot gain events");
        }
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..1500 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let mut damaged = bytes.clone();
            let at = (seed % damaged.len() as u64) as usize;
            damaged[at] ^= (seed >> 32) as u8 | 1;
            read_everything(damaged);
        }
        // Zeroed blocks.
        for start in (0..bytes.len()).step_by(512) {
            let mut damaged = bytes.clone();
            let end = (start + 512).min(damaged.len());
            damaged[start..end].fill(0);
            read_everything(damaged);
        }
    }
}
