//! Test-only: builds memray capture bytes record by record, following
//! memray's `StreamingRecordWriter`/`AggregatingRecordWriter` encoding
//! (context switches before thread-specific records, the 15-slot address
//! cache, deltas), so the decoder's unit tests can state exact inputs.

use crate::memray::events::{Allocator, AllocatorKind};
use crate::memray::header::{CaptureLayout, MemrayHeader, encode_header, sample_header};

pub(crate) struct CaptureWriter {
    pub bytes: Vec<u8>,
    native: bool,
    data_pointer: u64,
    native_frame_id: u64,
    ip: u64,
    first_line: i32,
    cache: [u64; 15],
    last_tid: u64,
}

impl CaptureWriter {
    /// A capture starting with `header`.
    pub fn with_header(header: &MemrayHeader) -> Self {
        let mut w = Self::records_only(header.native_traces);
        w.bytes = encode_header(header);
        w
    }

    /// A sample all-allocations capture header.
    pub fn all_allocations(native: bool) -> Self {
        Self::with_header(&sample_header(native, CaptureLayout::AllAllocations))
    }

    /// No header: record bytes only.
    pub fn records_only(native: bool) -> Self {
        CaptureWriter {
            bytes: Vec::new(),
            native,
            data_pointer: 0,
            native_frame_id: 0,
            ip: 0,
            first_line: 0,
            cache: [0; 15],
            last_tid: 0,
        }
    }

    pub fn varint(&mut self, mut v: u64) {
        loop {
            let low = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.bytes.push(low);
                return;
            }
            self.bytes.push(low | 0x80);
        }
    }

    pub fn svarint(&mut self, v: i64) {
        self.varint(((v << 1) ^ (v >> 63)) as u64);
    }

    fn delta(&mut self, prev: u64, new: u64) {
        self.svarint(new.wrapping_sub(prev) as i64);
    }

    pub fn cstr(&mut self, s: &str) {
        self.bytes.extend(s.as_bytes());
        self.bytes.push(0);
    }

    fn switch_to(&mut self, tid: u64) {
        if self.last_tid != tid {
            self.last_tid = tid;
            self.bytes.push(12);
            self.bytes.extend(tid.to_le_bytes());
        }
    }

    /// Cache slot for `address`, updating the cache like the writer.
    fn slot(&mut self, address: u64) -> Option<u8> {
        if let Some(i) = self.cache.iter().position(|&a| a == address) {
            return Some(i as u8);
        }
        self.cache.rotate_right(1);
        self.cache[0] = address;
        None
    }

    pub fn alloc(&mut self, tid: u64, address: u64, size: u64, allocator: Allocator, native: u64) {
        self.switch_to(tid);
        let id = allocator as u8;
        let slot = self.slot(address);
        let mut token = 0x80 | (slot.unwrap_or(15) << 3);
        if id < 8 {
            token |= id;
        }
        self.bytes.push(token);
        if slot.is_none() {
            let (prev, new) = (self.data_pointer, address >> 3);
            self.data_pointer = new;
            self.delta(prev, new);
        }
        if id >= 8 {
            self.bytes.push(id);
        }
        let simple_free = allocator.kind() == AllocatorKind::SimpleDeallocator;
        if self.native && !simple_free {
            let prev = self.native_frame_id;
            self.native_frame_id = native;
            self.delta(prev, native);
        }
        if !simple_free {
            self.varint(size);
        }
    }

    pub fn push(&mut self, tid: u64, code_id: u64, offset: i32, entry: bool) {
        self.switch_to(tid);
        self.bytes.push(0x40 | u8::from(entry));
        self.varint(code_id);
        self.svarint(i64::from(offset));
    }

    pub fn pop(&mut self, tid: u64, mut count: u64) {
        self.switch_to(tid);
        while count > 0 {
            let n = count.min(16);
            count -= n;
            self.bytes.push(0x10 | (n as u8 - 1));
        }
    }

    pub fn code_object(&mut self, id: u64, function: &str, file: &str, first: i32, table: &[u8]) {
        self.bytes.push(14);
        self.varint(id);
        self.cstr(function);
        self.cstr(file);
        let prev = self.first_line;
        self.first_line = first;
        self.svarint(i64::from(first) - i64::from(prev));
        self.varint(table.len() as u64);
        self.bytes.extend(table);
    }

    pub fn native_frame(&mut self, ip: u64, parent: u64) {
        self.bytes.push(5);
        let prev_ip = self.ip;
        self.ip = ip;
        self.delta(prev_ip, ip);
        let prev = self.native_frame_id;
        self.native_frame_id = parent;
        self.delta(prev, parent);
    }

    pub fn memory(&mut self, rss: u64, ms_since_start: u64) {
        self.bytes.push(2);
        self.varint(rss);
        self.varint(ms_since_start);
    }

    pub fn map_start(&mut self) {
        self.bytes.push(6);
    }

    pub fn image(&mut self, name: &str, load_address: u64, segments: &[(u64, u64)]) {
        self.bytes.push(7);
        self.cstr(name);
        self.varint(segments.len() as u64);
        self.bytes.extend(load_address.to_le_bytes());
        for &(vaddr, memsz) in segments {
            self.bytes.push(8);
            self.bytes.extend(vaddr.to_le_bytes());
            self.varint(memsz);
        }
    }

    pub fn thread_name(&mut self, tid: u64, name: &str) {
        self.switch_to(tid);
        self.bytes.push(10);
        self.cstr(name);
    }

    pub fn trailer(&mut self) {
        self.bytes.push(1);
    }

    /// The bytes lz4-frame compressed, like `memray run` leaves them.
    pub fn lz4(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut enc = lz4_flex::frame::FrameEncoder::new(&mut out);
        std::io::Write::write_all(&mut enc, &self.bytes).unwrap();
        enc.finish().unwrap();
        out
    }

    // Aggregated-capture records (`AggregatingRecordWriter::writeTrailer`).

    pub fn agg_snapshot(&mut self, ms: u64, rss: u64, heap: u64) {
        self.bytes.push(1);
        for v in [ms, rss, heap] {
            self.bytes.extend(v.to_le_bytes());
        }
    }

    pub fn agg_thread(&mut self, tid: u64, name: &str) {
        self.bytes.push(12);
        self.bytes.extend(tid.to_le_bytes());
        self.bytes.push(10);
        self.cstr(name);
    }

    pub fn agg_frame(&mut self, frame_id: u64, code_id: u64, offset: i32, entry: bool) {
        self.bytes.push(4);
        self.varint(frame_id);
        self.varint(code_id);
        self.svarint(i64::from(offset));
        self.bytes.push(u8::from(entry));
    }

    pub fn agg_trace(&mut self, frame_id: u64, parent: u64) {
        self.bytes.push(3);
        self.varint(frame_id);
        self.varint(parent);
    }

    /// tid, allocator, native id, python stack, generation, then
    /// (count, bytes) at peak and leaked.
    #[allow(clippy::too_many_arguments)]
    pub fn agg_allocation(
        &mut self,
        tid: u64,
        allocator: Allocator,
        native: u64,
        python_stack: u64,
        generation: u64,
        peak: (u64, u64),
        leaked: (u64, u64),
    ) {
        self.bytes.push(2);
        self.bytes.extend(tid.to_le_bytes());
        self.bytes.push(allocator as u8);
        self.bytes.extend([0u8; 7]);
        for v in [
            native,
            python_stack,
            generation,
            peak.0,
            leaked.0,
            peak.1,
            leaked.1,
        ] {
            self.bytes.extend(v.to_le_bytes());
        }
    }

    pub fn agg_trailer(&mut self) {
        self.bytes.push(15);
    }
}
