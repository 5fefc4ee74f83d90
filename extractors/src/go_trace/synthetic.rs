//! Test-only writers of small Go execution traces in both layouts, so unit
//! tests can state the bytes of an edge case instead of needing a Go
//! toolchain. They write what the runtime writes, not what the decoder
//! expects: argument counts follow `runtime/trace.go`'s encoding.
#![cfg(test)]

use crate::varint::put_u64;

fn header(minor: u32) -> Vec<u8> {
    let mut h = format!("go 1.{minor} trace").into_bytes();
    h.resize(16, 0);
    h
}

/// A 1.11–1.21 trace under construction.
pub(super) struct V1Writer {
    buf: Vec<u8>,
}

impl V1Writer {
    pub(super) fn new(minor: u32) -> Self {
        V1Writer { buf: header(minor) }
    }

    /// A batch header for P `p` (-1: no P) at `ticks`.
    pub(super) fn batch(&mut self, p: i64, ticks: u64) {
        self.buf.push(1 | 1 << 6);
        put_u64(&mut self.buf, p as u64);
        put_u64(&mut self.buf, ticks);
    }

    /// An event of type `ty` with `values` (timestamp delta first):
    /// inline up to three values, length-prefixed from four.
    pub(super) fn event(&mut self, ty: u8, values: &[u64]) {
        if values.len() <= 3 {
            self.buf.push(ty | ((values.len().max(1) - 1) as u8) << 6);
            for &v in values {
                put_u64(&mut self.buf, v);
            }
        } else {
            self.prefixed(ty, values);
        }
    }

    fn prefixed(&mut self, ty: u8, values: &[u64]) {
        self.buf.push(ty | 3 << 6);
        let mut payload = Vec::new();
        for &v in values {
            put_u64(&mut payload, v);
        }
        put_u64(&mut self.buf, payload.len() as u64);
        self.buf.extend_from_slice(&payload);
    }

    /// A string table entry.
    pub(super) fn string(&mut self, id: u64, s: &str) {
        self.buf.push(37);
        put_u64(&mut self.buf, id);
        put_u64(&mut self.buf, s.len() as u64);
        self.buf.extend_from_slice(s.as_bytes());
    }

    /// A stack table entry: frames of (pc, function id, file id, line).
    pub(super) fn stack(&mut self, id: u64, frames: &[(u64, u64, u64, u64)]) {
        let mut values = vec![id, frames.len() as u64];
        for &(pc, f, file, line) in frames {
            values.extend([pc, f, file, line]);
        }
        self.prefixed(3, &values);
    }

    /// The inline string that follows a `UserLog` event.
    pub(super) fn text(&mut self, s: &str) {
        put_u64(&mut self.buf, s.len() as u64);
        self.buf.extend_from_slice(s.as_bytes());
    }

    pub(super) fn raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The bytes after the header.
    pub(super) fn body(&self) -> Vec<u8> {
        self.buf.get(16..).unwrap_or(&[]).to_vec()
    }

    /// The whole file.
    pub(super) fn bytes(&self) -> Vec<u8> {
        self.buf.clone()
    }
}

/// A 1.22+ trace under construction.
pub(super) struct V2Writer {
    minor: u32,
    buf: Vec<u8>,
    generation: Option<u64>,
}

impl V2Writer {
    pub(super) fn new(minor: u32) -> Self {
        V2Writer {
            minor,
            buf: header(minor),
            generation: None,
        }
    }

    /// A batch of generation `gen` written by thread `m` at `ticks` (from
    /// 1.26, after an end-of-generation marker when the generation is new).
    pub(super) fn batch(&mut self, generation: u64, m: u64, ticks: u64, data: &[u8]) {
        if self.minor >= 26 && self.generation.is_some_and(|g| g != generation) {
            self.buf.push(52);
        }
        self.generation = Some(generation);
        self.buf.push(1);
        for v in [generation, m, ticks, data.len() as u64] {
            put_u64(&mut self.buf, v);
        }
        self.buf.extend_from_slice(data);
    }

    /// An event batch: each event is a type and its values (time delta
    /// first).
    pub(super) fn events(&mut self, generation: u64, m: u64, ticks: u64, events: &[(u8, &[u64])]) {
        let mut data = Vec::new();
        for &(ty, values) in events {
            data.push(ty);
            for &v in values {
                put_u64(&mut data, v);
            }
        }
        self.batch(generation, m, ticks, &data);
    }

    pub(super) fn strings(&mut self, generation: u64, strings: &[(u64, &str)]) {
        let mut data = vec![4];
        for &(id, s) in strings {
            data.push(5);
            put_u64(&mut data, id);
            put_u64(&mut data, s.len() as u64);
            data.extend_from_slice(s.as_bytes());
        }
        self.batch(generation, u64::MAX, 0, &data);
    }

    pub(super) fn stacks(&mut self, generation: u64, stacks: &[(u64, Vec<[u64; 4]>)]) {
        let mut data = vec![2];
        for (id, frames) in stacks {
            data.push(3);
            put_u64(&mut data, *id);
            put_u64(&mut data, frames.len() as u64);
            for v in frames.iter().flatten() {
                put_u64(&mut data, *v);
            }
        }
        self.batch(generation, u64::MAX, 0, &data);
    }

    /// The frequency: a lone `Frequency` batch before 1.25, a sync batch
    /// with a clock snapshot from 1.25.
    pub(super) fn frequency(&mut self, generation: u64, ticks_per_second: u64) {
        let mut data = Vec::new();
        if self.minor >= 25 {
            data.push(50);
        }
        data.push(8);
        put_u64(&mut data, ticks_per_second);
        if self.minor >= 25 {
            data.extend_from_slice(&[51, 0, 0, 0, 0]);
        }
        self.batch(generation, u64::MAX, 0, &data);
    }

    pub(super) fn body(&self) -> Vec<u8> {
        self.buf.get(16..).unwrap_or(&[]).to_vec()
    }

    pub(super) fn bytes(&self) -> Vec<u8> {
        self.buf.clone()
    }
}
