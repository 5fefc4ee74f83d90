//! Test-only writers of small trace-cmd files, v6 and v7 (plain, zlib,
//! zstd; either byte order), laid out as trace-cmd 3.x writes them.
//!
//! Every file holds the same trace: CPU 0 with `sched_waking` records at
//! 100, 300 (then a page after 5 lost events) 500; CPU 1 at 200, 300, 400
//! and one record of an id without a format. v6 files also carry an
//! instance `inst` with CPU 0's pages.

use crate::kernel_events::endian_reader::Endian;
use crate::kernel_events::tracing_data::tests::{
    COMMON, HEADER_EVENT, Writer, header_page, metadata_body, preamble, waking_format,
};
use crate::trace_cmd::pages::tests::PageBuilder;

pub const PAGE: usize = 4096;
pub const WAKING_ID: u32 = 300;
pub const UNKNOWN_ID: u32 = 999;

fn record(endian: Endian, id: u32, pid: i32, comm: &str) -> Vec<u8> {
    let mut w = Writer::new(endian);
    w.u16(id as u16).u16(0).u32(pid as u32);
    let mut name = [0u8; 16];
    for (d, s) in name.iter_mut().zip(comm.bytes()) {
        *d = s;
    }
    w.raw(&name).u32(pid as u32);
    w.bytes
}

/// The pages of CPU 0 and CPU 1.
pub fn cpu_pages(endian: Endian) -> [Vec<u8>; 2] {
    let mut a = PageBuilder::new(endian, 8);
    a.record(0, &record(endian, WAKING_ID, 10, "first"));
    a.record(200, &record(endian, WAKING_ID, 11, "second"));
    let mut b = PageBuilder::new(endian, 8);
    b.record(0, &record(endian, WAKING_ID, 12, "third"));
    let mut cpu0 = a.page(100, 0, None, PAGE);
    cpu0.extend(b.page(500, (1 << 31) | (1 << 30), Some(5), PAGE));
    let mut c = PageBuilder::new(endian, 8);
    c.record(0, &record(endian, WAKING_ID, 20, "x"));
    c.record(50, &record(endian, UNKNOWN_ID, 21, "y"));
    c.record(50, &record(endian, WAKING_ID, 22, "z"));
    c.record(100, &record(endian, WAKING_ID, 0, "idle"));
    [cpu0, c.page(200, 0, None, PAGE)]
}

fn pad_to_page(w: &mut Writer) {
    let len = w.bytes.len().div_ceil(PAGE) * PAGE;
    w.bytes.resize(len, 0);
}

fn patch_u64(w: &mut Writer, at: usize, v: u64) {
    let b = if w.endian.is_big() {
        v.to_be_bytes()
    } else {
        v.to_le_bytes()
    };
    w.bytes[at..at + 8].copy_from_slice(&b);
}

fn option(w: &mut Writer, id: u16, data: &[u8]) {
    w.u16(id).u32(data.len() as u32).raw(data);
}

/// A version 6 file.
pub fn v6_file(endian: Endian) -> Vec<u8> {
    let mut w = Writer::new(endian);
    w.raw(&preamble(endian, "6", 8, PAGE as u32));
    w.raw(&metadata_body(endian, 8, WAKING_ID, true));
    w.u32(2).raw(b"options  \0");
    option(&mut w, 4, b"");
    let mut stat = Writer::new(endian);
    stat.raw(b"entries: 5\noverrun: 3\n\0");
    option(&mut w, 2, &stat.bytes);
    let instance_ptr = w.bytes.len() + 6;
    let mut inst = Writer::new(endian);
    inst.u64(0).cstr("inst");
    option(&mut w, 3, &inst.bytes);
    w.u16(0).raw(b"flyrecord\0");
    let table = w.bytes.len();
    w.bytes.resize(table + 32, 0);
    w.sized8("local [global] counter\n");
    let pages = cpu_pages(endian);
    for (i, p) in pages.iter().enumerate() {
        pad_to_page(&mut w);
        let at = w.bytes.len() as u64;
        patch_u64(&mut w, table + 16 * i, at);
        patch_u64(&mut w, table + 16 * i + 8, p.len() as u64);
        w.raw(p);
    }
    let instance = w.bytes.len();
    patch_u64(&mut w, instance_ptr, instance as u64);
    w.raw(b"flyrecord\0");
    let inst_table = w.bytes.len();
    w.bytes.resize(inst_table + 32, 0);
    pad_to_page(&mut w);
    let at = w.bytes.len() as u64;
    patch_u64(&mut w, inst_table, at);
    patch_u64(&mut w, inst_table + 8, pages[0].len() as u64);
    w.raw(&pages[0]);
    w.bytes
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Compress {
    None,
    Zlib,
    Zstd,
}

fn pack(how: Compress, data: &[u8]) -> Vec<u8> {
    match how {
        Compress::None => data.to_vec(),
        Compress::Zstd => zstd::bulk::compress(data, 3).unwrap_or_default(),
        Compress::Zlib => {
            use std::io::Write;
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            let _ = e.write_all(data);
            e.finish().unwrap_or_default()
        }
    }
}

/// Writes a section (compressed as one block unless `how` is None).
fn section(w: &mut Writer, id: u16, how: Compress, content: &[u8]) -> u64 {
    let at = w.bytes.len() as u64;
    if how == Compress::None {
        w.u16(id)
            .u16(0)
            .u32(0)
            .u64(content.len() as u64)
            .raw(content);
    } else {
        let packed = pack(how, content);
        w.u16(id).u16(1).u32(0).u64(8 + packed.len() as u64);
        w.u32(packed.len() as u32)
            .u32(content.len() as u32)
            .raw(&packed);
    }
    at
}

/// A version 7 file, its sections and pages compressed with `how`.
pub fn v7_file(endian: Endian, how: Compress) -> Vec<u8> {
    let mut w = Writer::new(endian);
    w.raw(&preamble(endian, "7", 8, PAGE as u32));
    let name = match how {
        Compress::None => "none",
        Compress::Zlib => "zlib",
        Compress::Zstd => "zstd",
    };
    w.cstr(name).cstr("1.0");
    let first_options = w.bytes.len();
    w.u64(0);

    let mut pieces: Vec<(u16, Vec<u8>)> = Vec::new();
    let mut p = Writer::new(endian);
    p.raw(b"header_page\0")
        .sized8(&header_page(8))
        .raw(b"header_event\0")
        .sized8(HEADER_EVENT);
    pieces.push((16, p.bytes));
    pieces.push((17, Writer::new(endian).u32(0).bytes.clone()));
    let mut e = Writer::new(endian);
    let bad = format!("name: bad\nID: x\nformat:\n{COMMON}");
    e.u32(1)
        .cstr("sched")
        .u32(2)
        .sized8(&waking_format(WAKING_ID))
        .sized8(&bad);
    pieces.push((18, e.bytes));
    pieces.push((19, Writer::new(endian).u32(3).raw(b"abc").bytes.clone()));
    pieces.push((20, Writer::new(endian).u32(0).bytes.clone()));
    pieces.push((
        21,
        Writer::new(endian).sized8("10 first\n20 x\n").bytes.clone(),
    ));
    let mut offsets = Vec::new();
    for (id, content) in &pieces {
        offsets.push((*id, section(&mut w, *id, how, content)));
    }

    let buffer_at = w.bytes.len() as u64;
    let flags = u16::from(how != Compress::None);
    w.u16(3).u16(flags).u32(0).u64(0);
    let mut cpus = Vec::new();
    for (cpu, pages) in cpu_pages(endian).iter().enumerate() {
        pad_to_page(&mut w);
        let at = w.bytes.len() as u64;
        if how == Compress::None {
            w.raw(pages);
        } else {
            let chunks: Vec<&[u8]> = pages.chunks(PAGE).collect();
            w.u32(chunks.len() as u32);
            for chunk in chunks {
                let packed = pack(how, chunk);
                w.u32(packed.len() as u32)
                    .u32(chunk.len() as u32)
                    .raw(&packed);
            }
        }
        cpus.push((cpu as u32, at, w.bytes.len() as u64 - at));
    }

    // Two chained option sections: metadata offsets, then the buffer.
    let mut first = Writer::new(endian);
    for (id, at) in &offsets {
        let mut v = Writer::new(endian);
        v.u64(*at);
        option(&mut first, *id, &v.bytes);
    }
    option(&mut first, 4, b"[local] global\0");
    option(&mut first, 7, b"1000\0");
    let second_ptr = first.bytes.len() + 6;
    option(&mut first, 0, &[0u8; 8]);
    let mut second = Writer::new(endian);
    let mut b = Writer::new(endian);
    b.u64(buffer_at)
        .cstr("")
        .cstr("local")
        .u32(PAGE as u32)
        .u32(cpus.len() as u32);
    for (cpu, at, size) in &cpus {
        b.u32(*cpu).u64(*at).u64(*size);
    }
    option(&mut second, 3, &b.bytes);
    option(&mut second, 0, &[0u8; 8]);
    let second_at = section(&mut w, 0, Compress::None, &second.bytes);
    patch_u64(&mut first, second_ptr, second_at);
    let first_at = section(&mut w, 0, how, &first.bytes);
    patch_u64(&mut w, first_options, first_at);
    w.bytes
}
