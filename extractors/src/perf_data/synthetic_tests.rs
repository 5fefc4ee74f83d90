//! The decoder on small perf.data files built here byte by byte: both byte
//! orders, file and pipe mode, records out of time order, maps inherited
//! across fork, unknown records, and every truncation.

use crate::perf_data::attrs::*;
use crate::perf_data::bytes::Endian;
use crate::perf_data::error::PerfDataError;
use crate::perf_data::model::{PerfDataOptions, PerfDataSummary, PerfEvent, PerfSample};
use crate::perf_data::sample::{CONTEXT_KERNEL, CONTEXT_USER};
use crate::perf_data::session::{read_perf_data, read_perf_pipe};

struct W(Endian, Vec<u8>);

impl W {
    fn new(e: Endian) -> W {
        W(e, Vec::new())
    }
    fn u16(&mut self, v: u16) -> &mut W {
        let b = if self.0.is_big() {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.1.extend(b);
        self
    }
    fn u32(&mut self, v: u32) -> &mut W {
        let b = if self.0.is_big() {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.1.extend(b);
        self
    }
    fn u64(&mut self, v: u64) -> &mut W {
        let b = if self.0.is_big() {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.1.extend(b);
        self
    }
    fn bytes(&mut self, b: &[u8]) -> &mut W {
        self.1.extend(b);
        self
    }
    /// A NUL-terminated string padded to 8 bytes.
    fn cstr(&mut self, s: &str) -> &mut W {
        self.1.extend(s.as_bytes());
        self.1.push(0);
        while !self.1.len().is_multiple_of(8) {
            self.1.push(0);
        }
        self
    }
    fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.1)
    }
}

const ST: u64 = SAMPLE_IDENTIFIER
    | SAMPLE_IP
    | SAMPLE_TID
    | SAMPLE_TIME
    | SAMPLE_CPU
    | SAMPLE_PERIOD
    | SAMPLE_CALLCHAIN;

fn attr(e: Endian, kind: u32, config: u64, sample_type: u64) -> Vec<u8> {
    let mut w = W::new(e);
    w.u32(kind)
        .u32(128)
        .u64(config)
        .u64(1)
        .u64(sample_type)
        .u64(0);
    let flags: u64 = 1 << 18; // sample_id_all
    w.u64(if e.is_big() {
        flags.reverse_bits()
    } else {
        flags
    });
    w.bytes(&[0; 80]);
    w.take()
}

fn record(e: Endian, kind: u32, misc: u16, body: &[u8]) -> Vec<u8> {
    let mut w = W::new(e);
    w.u32(kind).u16(misc).u16(body.len() as u16 + 8).bytes(body);
    w.take()
}

/// sample_id trailer for `ST`: pid/tid, time, cpu, identifier.
fn trailer(w: &mut W, tid: u32, time: u64, id: u64) {
    w.u32(tid).u32(tid).u64(time).u32(0).u32(0).u64(id);
}

fn sample(e: Endian, id: u64, tid: u32, time: u64, chain: &[u64], raw: Option<&[u8]>) -> Vec<u8> {
    let mut w = W::new(e);
    w.u64(id)
        .u64(chain.get(1).copied().unwrap_or(0))
        .u32(tid)
        .u32(tid)
        .u64(time)
        .u32(1)
        .u32(0)
        .u64(1000);
    w.u64(chain.len() as u64);
    for &ip in chain {
        w.u64(ip);
    }
    if let Some(raw) = raw {
        w.u32(raw.len() as u32).bytes(raw);
    }
    record(e, 9, 2, &w.take())
}

/// The records every variant of the test file holds.
fn records(e: Endian) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = W::new(e);
    w.u32(10).u32(10).cstr("app");
    trailer(&mut w, 10, 100, 1);
    out.extend(record(e, 3, 1 << 13, &w.take()));
    w.u32(10)
        .u32(10)
        .u64(0x40_0000)
        .u64(0x1000)
        .u64(0)
        .bytes(&[0; 24])
        .u32(5)
        .u32(2)
        .cstr("/nonexistent/flameox/app");
    trailer(&mut w, 10, 110, 1);
    out.extend(record(e, 10, 2, &w.take()));
    w.u32(u32::MAX)
        .u32(0)
        .u64(0xffff_0000)
        .u64(0x1_0000)
        .u64(0xffff_0000)
        .cstr("[kernel.kallsyms]_text");
    trailer(&mut w, 0, 0, 1);
    out.extend(record(e, 1, 1, &w.take()));
    out.extend(sample(
        e,
        1,
        10,
        300,
        &[
            CONTEXT_KERNEL,
            0xffff_0010,
            CONTEXT_USER,
            0x40_0010,
            0x50_0000,
        ],
        None,
    ));
    out.extend(sample(e, 2, 10, 200, &[CONTEXT_USER, 0x40_0020], None));
    out.extend(record(e, 68, 0, &[]));
    w.u32(11).u32(10).u32(11).u32(10).u64(400);
    trailer(&mut w, 11, 400, 1);
    out.extend(record(e, 7, 0, &w.take()));
    out.extend(sample(
        e,
        3,
        11,
        500,
        &[CONTEXT_USER, 0x40_0030],
        Some(&[7, 0, 0, 0]),
    ));
    w.u64(1).u64(5);
    trailer(&mut w, 11, 510, 1);
    out.extend(record(e, 2, 0, &w.take()));
    out.extend(record(e, 200, 0, &[1, 2, 3, 4, 5, 6, 7, 8]));
    w.u32(11).u32(10).u32(11).u32(10).u64(600);
    trailer(&mut w, 11, 600, 1);
    out.extend(record(e, 4, 0, &w.take()));
    out
}

fn event_desc(e: Endian, attrs: &[(Vec<u8>, Vec<u64>, &str)]) -> Vec<u8> {
    let mut w = W::new(e);
    w.u32(attrs.len() as u32).u32(128);
    for (a, ids, name) in attrs {
        w.bytes(a).u32(ids.len() as u32);
        let mut padded = name.as_bytes().to_vec();
        padded.resize((name.len() + 1).div_ceil(8) * 8, 0);
        w.u32(padded.len() as u32).bytes(&padded);
        for &id in ids {
            w.u64(id);
        }
    }
    w.take()
}

fn events(e: Endian) -> Vec<(Vec<u8>, Vec<u64>, &'static str)> {
    vec![
        (attr(e, PERF_TYPE_SOFTWARE, 0, ST), vec![1, 2], "cpu-clock"),
        (
            attr(e, PERF_TYPE_TRACEPOINT, 7, ST | SAMPLE_RAW),
            vec![3],
            "sched:fake",
        ),
    ]
}

fn file(e: Endian) -> Vec<u8> {
    let evs = events(e);
    let data = records(e);
    let ids_at = 104 + 144 * evs.len() as u64;
    let data_at = ids_at + 8 * 3;
    let mut w = W::new(e);
    w.bytes(if e.is_big() { b"2ELIFREP" } else { b"PERFILE2" })
        .u64(104)
        .u64(144);
    w.u64(104)
        .u64(144 * evs.len() as u64)
        .u64(data_at)
        .u64(data.len() as u64)
        .u64(0)
        .u64(0);
    w.u64(1 << 12).u64(0).u64(0).u64(0); // features: EVENT_DESC
    let mut next_ids = ids_at;
    for (a, ids, _) in &evs {
        w.bytes(a).u64(next_ids).u64(8 * ids.len() as u64);
        next_ids += 8 * ids.len() as u64;
    }
    for (_, ids, _) in &evs {
        for &id in ids {
            w.u64(id);
        }
    }
    w.bytes(&data);
    let desc = event_desc(e, &evs);
    let desc_at = data_at + data.len() as u64 + 16;
    w.u64(desc_at).u64(desc.len() as u64).bytes(&desc);
    w.take()
}

fn pipe(e: Endian) -> Vec<u8> {
    let mut out = if e.is_big() {
        b"2ELIFREP".to_vec()
    } else {
        b"PERFILE2".to_vec()
    };
    out.extend(W::new(e).u64(16).take());
    let evs = events(e);
    for (a, ids, _) in &evs {
        let mut w = W::new(e);
        w.bytes(a);
        for &id in ids {
            w.u64(id);
        }
        out.extend(record(e, 64, 0, &w.take()));
    }
    let mut w = W::new(e);
    w.u64(12).bytes(&event_desc(e, &evs));
    out.extend(record(e, 80, 0, &w.take()));
    out.extend(records(e));
    out
}

fn collect(
    result: impl FnOnce(&mut dyn FnMut(PerfEvent)) -> Result<PerfDataSummary, PerfDataError>,
) -> (Vec<PerfSample>, Vec<PerfEvent>, PerfDataSummary) {
    let (mut samples, mut others) = (Vec::new(), Vec::new());
    let summary = result(&mut |ev| match ev {
        PerfEvent::Sample(s) => samples.push(*s),
        other => others.push(other),
    })
    .unwrap_or_else(|e| panic!("{e}"));
    (samples, others, summary)
}

fn opts() -> PerfDataOptions {
    PerfDataOptions {
        resolve_symbols: true,
        kernel_symbols: false,
        decode_tracepoints: true,
    }
}

fn check(samples: &[PerfSample], others: &[PerfEvent], summary: &PerfDataSummary) {
    assert!(summary.complete, "{:?}", summary.notes);
    let times: Vec<_> = samples.iter().map(|s| s.ts_ns).collect();
    assert_eq!(times, vec![Some(200), Some(300), Some(500)], "time order");
    let names: Vec<_> = samples.iter().map(|s| &*s.event_name).collect();
    assert_eq!(names, vec!["cpu-clock", "cpu-clock", "sched:fake"]);
    assert_eq!(summary.samples_per_event, vec![2, 1]);
    let labels: Vec<String> = samples[1].callchain.iter().map(|f| f.label()).collect();
    assert_eq!(
        labels,
        vec![
            "[kernel.kallsyms]+0xffff0010",
            "/nonexistent/flameox/app+0x10",
            "0x500000"
        ]
    );
    assert_eq!(samples[1].comm.as_deref(), Some("app"));
    assert_eq!(
        (samples[1].cpu, samples[1].period, samples[1].pid),
        (Some(1), Some(1000), Some(10))
    );
    // The forked child inherits the name and the maps.
    assert_eq!(samples[2].comm.as_deref(), Some("app"));
    assert_eq!(samples[2].callchain[0].offset_in_module, Some(0x30));
    assert_eq!(samples[2].raw.as_deref(), Some(&[7u8, 0, 0, 0][..]));
    assert_eq!(samples[2].tracepoint_id, Some(7));
    assert_eq!(summary.lost_records, 5);
    assert_eq!(summary.record_counts.get(&200), Some(&1));
    // The kernel map (time 0) comes first, then the exec's name.
    assert!(matches!(
        others.first(),
        Some(PerfEvent::Mmap { pid: -1, .. })
    ));
    assert!(matches!(
        others.get(1),
        Some(PerfEvent::Comm { exec: true, .. })
    ));
    assert!(matches!(
        others.last(),
        Some(PerfEvent::Exit { ts_ns: 600, .. })
    ));
    assert_eq!(
        summary.threads.get(&11).and_then(|t| t.parent_tid),
        Some(10)
    );
}

#[test]
fn file_mode_in_both_byte_orders() {
    for e in [Endian::Little, Endian::Big] {
        let bytes = file(e);
        let (samples, others, summary) =
            collect(|cb| read_perf_data(std::io::Cursor::new(&bytes), &opts(), cb));
        check(&samples, &others, &summary);
        assert_eq!(summary.big_endian, e.is_big());
        assert!(!summary.pipe_mode);
    }
}

#[test]
fn pipe_mode_in_both_byte_orders() {
    for e in [Endian::Little, Endian::Big] {
        let bytes = pipe(e);
        let (samples, others, summary) = collect(|cb| read_perf_pipe(&bytes[..], &opts(), cb));
        check(&samples, &others, &summary);
        assert!(summary.pipe_mode);
        let (again, _, _) = collect(|cb| read_perf_data(std::io::Cursor::new(&bytes), &opts(), cb));
        assert_eq!(again, samples);
    }
}

#[test]
fn every_truncation_is_an_error_or_a_partial_result() {
    for bytes in [file(Endian::Little), pipe(Endian::Big)] {
        for cut in 0..bytes.len() {
            let mut n = 0;
            match read_perf_data(std::io::Cursor::new(&bytes[..cut]), &opts(), |_| n += 1) {
                Ok(summary) => assert!(n <= 20 && (!summary.complete || summary.samples <= 3)),
                Err(_) => assert_eq!(n, 0),
            }
        }
    }
}

#[test]
fn versions_and_sizes_that_cannot_be_read_are_typed_errors() {
    let mut v1 = file(Endian::Little);
    v1[..8].copy_from_slice(b"PERFFILE");
    let err = read_perf_data(std::io::Cursor::new(&v1), &opts(), |_| {});
    assert!(
        matches!(err, Err(PerfDataError::UnsupportedVersion { .. })),
        "{err:?}"
    );
    let mut bad_attr = file(Endian::Little);
    bad_attr[16..24].copy_from_slice(&7u64.to_le_bytes());
    let err = read_perf_data(std::io::Cursor::new(&bad_attr), &opts(), |_| {});
    assert!(matches!(err, Err(PerfDataError::Malformed(_))), "{err:?}");
    let file_mode = file(Endian::Little);
    let err = read_perf_pipe(&file_mode[..], &opts(), |_| {});
    assert!(matches!(err, Err(PerfDataError::Malformed(_))), "{err:?}");
    // A data section running past the end: what is there, with a note.
    let mut long = file(Endian::Little);
    long[48..56].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let (samples, _, summary) =
        collect(|cb| read_perf_data(std::io::Cursor::new(&long), &opts(), cb));
    assert_eq!(samples.len(), 3);
    assert!(!summary.notes.is_empty());
}
