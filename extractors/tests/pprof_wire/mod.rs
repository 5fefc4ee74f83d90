//! A minimal protobuf wire walker for pprof profiles, written for the tests
//! so expected values come from a code path that shares nothing with the
//! extractor (no prost, no flameox types): varints and length-delimited
//! fields by hand, packed and unpacked repeated scalars both accepted.
//! Shared by `extractors/tests/pprof_corpus.rs` and
//! `tests/tests/pprof_import.rs` (included with `#[path]`).
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet, HashMap};

enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

fn varint(b: &[u8], i: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let byte = b[*i];
        *i += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return v;
        }
        shift += 7;
    }
}

/// Every (field number, value) of one message, in wire order.
fn fields(b: &[u8]) -> Vec<(u64, Value<'_>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let tag = varint(b, &mut i);
        let value = match tag & 7 {
            0 => Value::Varint(varint(b, &mut i)),
            1 => {
                i += 8;
                Value::Fixed
            }
            2 => {
                let len = varint(b, &mut i) as usize;
                let v = &b[i..i + len];
                i += len;
                Value::Bytes(v)
            }
            5 => {
                i += 4;
                Value::Fixed
            }
            w => panic!("wire type {w} in a pprof profile"),
        };
        out.push((tag >> 3, value));
    }
    out
}

/// A repeated integer field occurrence: one unpacked value or a packed run.
fn ints(v: &Value) -> Vec<u64> {
    match v {
        Value::Varint(x) => vec![*x],
        Value::Bytes(b) => {
            let mut i = 0;
            let mut out = Vec::new();
            while i < b.len() {
                out.push(varint(b, &mut i));
            }
            out
        }
        Value::Fixed => panic!("fixed-width integer in a pprof varint field"),
    }
}

fn int(v: &Value) -> u64 {
    match v {
        Value::Varint(x) => *x,
        _ => panic!("expected a varint"),
    }
}

fn bytes<'a>(v: &Value<'a>) -> &'a [u8] {
    match v {
        Value::Bytes(b) => b,
        _ => panic!("expected a length-delimited field"),
    }
}

#[derive(Debug, Default)]
pub struct RawSample {
    pub locations: Vec<u64>,
    pub values: Vec<i64>,
}

#[derive(Debug, Default)]
pub struct RawLocation {
    pub address: u64,
    /// (function id, line), innermost first as on the wire.
    pub lines: Vec<(u64, i64)>,
}

#[derive(Debug, Default)]
pub struct RawProfile {
    /// (type, unit) as strings.
    pub sample_types: Vec<(String, String)>,
    pub samples: Vec<RawSample>,
    pub locations: HashMap<u64, RawLocation>,
    /// id → (name, system name, file) as strings.
    pub functions: HashMap<u64, (String, String, String)>,
    pub strings: Vec<String>,
    pub default_sample_type: String,
    pub time_nanos: i64,
    pub duration_nanos: i64,
}

/// Decodes the fields the models need from a whole (gunzipped) profile.
pub fn parse(b: &[u8]) -> RawProfile {
    let mut types = Vec::new();
    let mut functions = Vec::new();
    let mut default = 0;
    let mut p = RawProfile::default();
    for (field, v) in fields(b) {
        match field {
            1 => {
                let (mut t, mut u) = (0, 0);
                for (f, v) in fields(bytes(&v)) {
                    match f {
                        1 => t = int(&v),
                        2 => u = int(&v),
                        _ => {}
                    }
                }
                types.push((t, u));
            }
            2 => {
                let mut s = RawSample::default();
                for (f, v) in fields(bytes(&v)) {
                    match f {
                        1 => s.locations.extend(ints(&v)),
                        2 => s.values.extend(ints(&v).into_iter().map(|x| x as i64)),
                        _ => {}
                    }
                }
                p.samples.push(s);
            }
            4 => {
                let mut id = 0;
                let mut loc = RawLocation::default();
                for (f, v) in fields(bytes(&v)) {
                    match f {
                        1 => id = int(&v),
                        3 => loc.address = int(&v),
                        4 => {
                            let (mut func, mut line) = (0, 0);
                            for (f, v) in fields(bytes(&v)) {
                                match f {
                                    1 => func = int(&v),
                                    2 => line = int(&v) as i64,
                                    _ => {}
                                }
                            }
                            loc.lines.push((func, line));
                        }
                        _ => {}
                    }
                }
                p.locations.insert(id, loc);
            }
            5 => {
                let (mut id, mut name, mut system, mut file) = (0, 0, 0, 0);
                for (f, v) in fields(bytes(&v)) {
                    match f {
                        1 => id = int(&v),
                        2 => name = int(&v),
                        3 => system = int(&v),
                        4 => file = int(&v),
                        _ => {}
                    }
                }
                functions.push((id, name, system, file));
            }
            6 => p
                .strings
                .push(String::from_utf8(bytes(&v).to_vec()).expect("UTF-8 string")),
            9 => p.time_nanos = int(&v) as i64,
            10 => p.duration_nanos = int(&v) as i64,
            14 => default = int(&v),
            _ => {}
        }
    }
    let s = |i: u64| p.strings[i as usize].clone();
    p.sample_types = types.iter().map(|&(t, u)| (s(t), s(u))).collect();
    p.functions = functions
        .iter()
        .map(|&(id, n, sys, f)| (id, (s(n), s(sys), s(f))))
        .collect();
    p.default_sample_type = s(default);
    p
}

/// A frame as (function, file, line); file and line `None` when absent.
pub type FrameKey = (String, Option<String>, Option<i64>);

impl RawProfile {
    fn frame(&self, func: u64, line: i64) -> FrameKey {
        let (name, system, file) = &self.functions[&func];
        let name = if name.is_empty() { system } else { name };
        (
            name.clone(),
            (!file.is_empty()).then(|| file.clone()),
            (line > 0).then_some(line),
        )
    }

    /// Frames of a sample from leaf to root: each location's lines in wire
    /// order (innermost first), locations leaf first.
    pub fn leaf_to_root(&self, sample: &RawSample) -> Vec<FrameKey> {
        sample
            .locations
            .iter()
            .flat_map(|l| self.locations[l].lines.iter())
            .map(|&(f, line)| self.frame(f, line))
            .collect()
    }

    /// Σ value per column.
    pub fn totals(&self) -> Vec<i64> {
        let mut t = vec![0i64; self.sample_types.len()];
        for s in &self.samples {
            for (i, v) in s.values.iter().enumerate() {
                t[i] += v;
            }
        }
        t
    }

    /// (self, inclusive) per frame for one value column; inclusive counts a
    /// frame once per sample however often it recurs. Frames whose both
    /// values are 0 are left out.
    pub fn frame_values(&self, column: usize) -> BTreeMap<FrameKey, (i64, i64)> {
        let mut out: BTreeMap<FrameKey, (i64, i64)> = BTreeMap::new();
        for s in &self.samples {
            let v = s.values[column];
            let frames = self.leaf_to_root(s);
            out.entry(frames[0].clone()).or_default().0 += v;
            let distinct: BTreeSet<&FrameKey> = frames.iter().collect();
            for f in distinct {
                out.entry(f.clone()).or_default().1 += v;
            }
        }
        out.retain(|_, v| *v != (0, 0));
        out
    }
}
