//! Tests of tracing-data parsing, and the synthetic blobs the trace-cmd
//! tests build their files from.

use super::*;

/// Bytes written in one byte order.
pub(crate) struct Writer {
    pub endian: Endian,
    pub bytes: Vec<u8>,
}

impl Writer {
    pub fn new(endian: Endian) -> Self {
        Writer {
            endian,
            bytes: Vec::new(),
        }
    }
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.bytes.push(v);
        self
    }
    pub fn u16(&mut self, v: u16) -> &mut Self {
        let b = if self.endian.is_big() {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.bytes.extend(b);
        self
    }
    pub fn u32(&mut self, v: u32) -> &mut Self {
        let b = if self.endian.is_big() {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.bytes.extend(b);
        self
    }
    pub fn u64(&mut self, v: u64) -> &mut Self {
        let b = if self.endian.is_big() {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.bytes.extend(b);
        self
    }
    pub fn raw(&mut self, b: &[u8]) -> &mut Self {
        self.bytes.extend_from_slice(b);
        self
    }
    pub fn cstr(&mut self, s: &str) -> &mut Self {
        self.raw(s.as_bytes()).u8(0)
    }
    /// A 64-bit length, then the text.
    pub fn sized8(&mut self, s: &str) -> &mut Self {
        self.u64(s.len() as u64).raw(s.as_bytes())
    }
}

pub(crate) const COMMON: &str = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";

/// `sched_waking`-like: comm[16] at 8, pid at 24 (record size 28).
pub(crate) fn waking_format(id: u32) -> String {
    format!(
        "name: sched_waking\nID: {id}\nformat:\n{COMMON}\
\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n\nprint fmt: \"comm=%s pid=%d\"\n"
    )
}

pub(crate) fn header_page(long: usize) -> String {
    format!(
        "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
\tfield: local_t commit;\toffset:8;\tsize:{long};\tsigned:1;\n\
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
\tfield: char data;\toffset:{};\tsize:4080;\tsigned:1;\n",
        8 + long
    )
}

pub(crate) const HEADER_EVENT: &str = "# compressed entry header\n\ttype_len    :    5 bits\n\
\ttime_delta  :   27 bits\n\tarray       :   32 bits\n";

/// The pieces after the preamble: header info, 1 ftrace format, 1 system
/// with `sched_waking` (id `id`) and a broken format, kallsyms, printk,
/// then cmdlines when `cmdlines`.
pub(crate) fn metadata_body(endian: Endian, long: usize, id: u32, cmdlines: bool) -> Vec<u8> {
    let mut w = Writer::new(endian);
    w.raw(b"header_page\0").sized8(&header_page(long));
    w.raw(b"header_event\0").sized8(HEADER_EVENT);
    let print = format!(
        "name: print\nID: 5\nformat:\n{COMMON}\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n\
\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:1;\n"
    );
    w.u32(1).sized8(&print);
    w.u32(1)
        .cstr("sched")
        .u32(2)
        .sized8(&waking_format(id))
        .sized8("name: broken\n");
    w.u32(4).raw(b"abcd");
    let printk = "0xffffffff81000000 : \"hello %d\\n\"\n";
    w.u32(printk.len() as u32).raw(printk.as_bytes());
    if cmdlines {
        w.sized8("24501 bash\n24503 opt cgu.6\n");
    }
    w.bytes
}

pub(crate) fn preamble(endian: Endian, version: &str, long: u8, page: u32) -> Vec<u8> {
    let mut w = Writer::new(endian);
    w.raw(&TRACING_MAGIC)
        .cstr(version)
        .u8(u8::from(endian.is_big()))
        .u8(long)
        .u32(page);
    w.bytes
}

fn blob(endian: Endian, version: &str, cmdlines: bool) -> Vec<u8> {
    let mut b = preamble(endian, version, 8, 4096);
    b.extend(metadata_body(endian, 8, 300, cmdlines));
    b
}

#[test]
fn a_perf_blob_parses_in_both_byte_orders() {
    for endian in [Endian::Little, Endian::Big] {
        let bytes = blob(endian, "0.6", true);
        let data = match parse_tracing_data(&bytes) {
            Ok(d) => d,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(data.big_endian, endian.is_big());
        assert_eq!((data.long_size, data.page_size), (8, 4096));
        assert_eq!(data.page_header, PageHeaderLayout::for_long_size(8));
        assert!(!data.old_ring_buffer_format);
        let names: Vec<_> = data
            .formats
            .iter()
            .map(|f| (f.system.as_str(), f.name.as_str()))
            .collect();
        assert_eq!(names, [("ftrace", "print"), ("sched", "sched_waking")]);
        assert_eq!(
            data.format(300).map(|f| f.name.as_str()),
            Some("sched_waking")
        );
        assert_eq!(
            data.notes.len(),
            1,
            "the broken format is a note: {:?}",
            data.notes
        );
        assert_eq!(
            data.cmdlines.get(&24503).map(String::as_str),
            Some("opt cgu.6")
        );
        assert_eq!(
            data.printk_formats
                .get(&0xffff_ffff_8100_0000)
                .map(String::as_str),
            Some("hello %d\\n")
        );
        assert_eq!(data.kallsyms_bytes, 4);

        let mut raw = Writer::new(endian);
        raw.u16(300)
            .u16(0)
            .u32(77)
            .raw(b"kworker/0:1\0\0\0\0\0")
            .u32(15);
        let decoded = data
            .decode_record(&raw.bytes)
            .map(|(f, pid, v)| (f.id, pid, v));
        let want = vec![
            ("comm".to_string(), FieldValue::Str("kworker/0:1".into())),
            ("pid".to_string(), FieldValue::Int(15)),
        ];
        assert_eq!(decoded, Some((300, 77, want)));
    }
}

#[test]
fn version_0_5_has_no_cmdlines_and_a_32_bit_kernel_moves_the_data() {
    let mut bytes = preamble(Endian::Little, "0.5", 4, 4096);
    bytes.extend(metadata_body(Endian::Little, 4, 300, false));
    let data = parse_tracing_data(&bytes);
    let data = data.as_ref().ok();
    assert_eq!(data.map(|d| d.cmdlines.len()), Some(0));
    assert_eq!(data.map(|d| d.page_header.data_offset), Some(12));
    assert_eq!(data.map(|d| d.page_header.commit_size), Some(4));
    // perf 0.6 data cut right before the cmdlines: a note.
    let bytes = blob(Endian::Little, "0.6", false);
    let data = parse_tracing_data(&bytes);
    assert_eq!(data.map(|d| d.notes.len()).ok(), Some(2));
}

#[test]
fn every_truncation_and_flip_is_an_error_or_a_result_never_a_panic() {
    let bytes = blob(Endian::Little, "0.6", true);
    for len in 0..bytes.len() {
        let cut = bytes.get(..len).unwrap_or_default();
        // The cmdlines may be cut before their size (a note); anything
        // else missing is an error.
        if len < bytes.len() - 40 {
            assert!(parse_tracing_data(cut).is_err(), "cut at {len}");
        }
    }
    for at in 0..bytes.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut damaged = bytes.clone();
            if let Some(b) = damaged.get_mut(at) {
                *b ^= flip;
            }
            let _ = parse_tracing_data(&damaged);
        }
    }
    assert!(matches!(
        parse_tracing_data(b"\x17\x08\x44trac"),
        Err(TracingDataError::BadMagic)
    ));
}

/// perf.data's `HEADER_TRACING_DATA` section, found from the file header
/// here (the first feature section: bit 0 is never set).
fn perf_tracing_section() -> Vec<u8> {
    let path = std::path::Path::new(env!("FLAMEOX_CORPUS_DIR"))
        .join("linux/perf_sched_tracepoints.perf.data");
    let d = std::fs::read(path).unwrap_or_default();
    let u64_at = |at: usize| {
        d.get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes) as usize
    };
    assert_eq!(d.get(..8), Some(&b"PERFILE2"[..]));
    assert_eq!(u64_at(72) & 0b11, 0b10, "tracing data is the first feature");
    let table = u64_at(40) + u64_at(48);
    let (offset, size) = (u64_at(table), u64_at(table + 8));
    d.get(offset..offset + size).unwrap_or_default().to_vec()
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn perf_tracing_data_parses_whole_with_every_format_the_bytes_hold() {
    let section = perf_tracing_section();
    assert_eq!(section.len(), 11108);
    let (data, consumed) = match read_tracing_data(&section[..]) {
        Ok(d) => d,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(
        consumed,
        section.len() as u64,
        "the blob is read to its end"
    );
    // Independent count: the `ID: N` lines in the raw bytes.
    let text = String::from_utf8_lossy(&section);
    let mut ids: Vec<u32> = text
        .split("\nID: ")
        .skip(1)
        .filter_map(|rest| rest.split('\n').next()?.trim().parse().ok())
        .collect();
    ids.sort_unstable();
    let mut got: Vec<u32> = data.formats.iter().map(|f| f.id).collect();
    got.sort_unstable();
    assert_eq!(got, ids);
    let mut names: Vec<&str> = data.formats.iter().map(|f| f.name.as_str()).collect();
    names.sort_unstable();
    let recorded = [
        "sched_migrate_task",
        "sched_process_exec",
        "sched_process_exit",
        "sched_process_fork",
        "sched_switch",
        "sched_wakeup",
        "sched_wakeup_new",
        "sched_waking",
    ];
    assert_eq!(names, recorded, "the events `perf record -e` named");
    assert_eq!(
        (data.version.as_str(), data.big_endian, data.page_size),
        ("0.6", false, 4096)
    );
    assert_eq!(data.page_header, PageHeaderLayout::for_long_size(8));
    assert!(data.notes.is_empty(), "{:?}", data.notes);
    let switch = data.formats.iter().find(|f| f.name == "sched_switch");
    assert_eq!(
        switch
            .and_then(|f| f.field("next_pid"))
            .map(|f| (f.offset, f.size)),
        Some((56, 4))
    );

    for len in (0..section.len()).step_by(7) {
        let _ = parse_tracing_data(&section[..len]);
    }
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..2000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut damaged = section.clone();
        let at = (seed % damaged.len() as u64) as usize;
        damaged[at] ^= (seed >> 40) as u8 | 1;
        let _ = parse_tracing_data(&damaged);
    }
}
