//! A minimal protobuf writer and reader for tests, independent of prost and
//! of the extractor's declarations: traces are encoded field by field with
//! Perfetto's numbers, and corpus traces are walked without a schema.
#![allow(dead_code)]

use std::io::Write;

/// A message under construction.
#[derive(Default, Clone)]
pub struct Msg(pub Vec<u8>);

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

impl Msg {
    pub fn new() -> Self {
        Msg(Vec::new())
    }
    pub fn varint(mut self, field: u32, v: u64) -> Self {
        put_varint(&mut self.0, u64::from(field) << 3);
        put_varint(&mut self.0, v);
        self
    }
    pub fn int(self, field: u32, v: i64) -> Self {
        self.varint(field, v as u64)
    }
    pub fn fixed64(mut self, field: u32, v: u64) -> Self {
        put_varint(&mut self.0, (u64::from(field) << 3) | 1);
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn double(self, field: u32, v: f64) -> Self {
        self.fixed64(field, v.to_bits())
    }
    pub fn bytes(mut self, field: u32, b: &[u8]) -> Self {
        put_varint(&mut self.0, (u64::from(field) << 3) | 2);
        put_varint(&mut self.0, b.len() as u64);
        self.0.extend_from_slice(b);
        self
    }
    pub fn str(self, field: u32, s: &str) -> Self {
        self.bytes(field, s.as_bytes())
    }
    pub fn msg(self, field: u32, m: Msg) -> Self {
        self.bytes(field, &m.0)
    }
    pub fn packed(self, field: u32, values: &[u64]) -> Self {
        let mut body = Vec::new();
        for &v in values {
            put_varint(&mut body, v);
        }
        self.bytes(field, &body)
    }
}

/// A `Trace`: each packet as field 1.
pub fn trace(packets: &[Msg]) -> Vec<u8> {
    packets
        .iter()
        .fold(Msg::new(), |t, p| t.msg(1, p.clone()))
        .0
}

/// Packets wrapped in one zlib `compressed_packets` packet.
pub fn compressed(packets: &[Msg]) -> Msg {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&trace(packets)).expect("deflate");
    Msg::new().bytes(50, &z.finish().expect("deflate"))
}

/// One field's value as read without a schema.
#[derive(Debug, Clone, Copy)]
pub enum Val<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    Bytes(&'a [u8]),
}

impl<'a> Val<'a> {
    pub fn u(self) -> u64 {
        match self {
            Val::Varint(v) | Val::Fixed64(v) => v,
            Val::Fixed32(v) => u64::from(v),
            Val::Bytes(_) => panic!("not a number"),
        }
    }
    pub fn b(self) -> &'a [u8] {
        match self {
            Val::Bytes(b) => b,
            _ => panic!("not bytes"),
        }
    }
}

fn get_varint(b: &[u8], i: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let byte = b[*i];
        *i += 1;
        v |= u64::from(byte & 0x7f) << shift;
        shift += 7;
        if byte < 0x80 {
            return v;
        }
    }
}

/// Every field of a message, in order.
pub fn fields(b: &[u8]) -> Vec<(u32, Val<'_>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let key = get_varint(b, &mut i);
        let field = (key >> 3) as u32;
        let val = match key & 7 {
            0 => Val::Varint(get_varint(b, &mut i)),
            1 => {
                let v = u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
                i += 8;
                Val::Fixed64(v)
            }
            5 => {
                let v = u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
                i += 4;
                Val::Fixed32(v)
            }
            2 => {
                let len = get_varint(b, &mut i) as usize;
                let v = &b[i..i + len];
                i += len;
                Val::Bytes(v)
            }
            w => panic!("wire type {w}"),
        };
        out.push((field, val));
    }
    out
}

/// The first value of `field`.
pub fn get<'a>(fs: &[(u32, Val<'a>)], field: u32) -> Option<Val<'a>> {
    fs.iter().find(|(f, _)| *f == field).map(|(_, v)| *v)
}

/// Every value of `field` (a packed field's bytes are expanded as varints).
pub fn all_varints(fs: &[(u32, Val<'_>)], field: u32) -> Vec<u64> {
    let mut out = Vec::new();
    for (f, v) in fs {
        if *f != field {
            continue;
        }
        match v {
            Val::Bytes(b) => {
                let mut i = 0;
                while i < b.len() {
                    out.push(get_varint(b, &mut i));
                }
            }
            other => out.push(other.u()),
        }
    }
    out
}

/// Every packet of a trace, with compressed packets inflated in place.
pub fn packets(trace: &[u8]) -> Vec<Vec<u8>> {
    use std::io::Read;
    let mut out = Vec::new();
    for (f, v) in fields(trace) {
        if f != 1 {
            continue;
        }
        let p = v.b();
        match get(&fields(p), 50) {
            Some(z) => {
                let mut inflated = Vec::new();
                flate2::read::ZlibDecoder::new(z.b())
                    .read_to_end(&mut inflated)
                    .expect("inflate");
                out.extend(packets(&inflated));
            }
            None => out.push(p.to_vec()),
        }
    }
    out
}
