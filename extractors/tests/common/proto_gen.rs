//! Well-framed protobuf generated from the extractors' own message
//! declarations: the `#[prost(…, tag = "N")]` lines of a `proto.rs` are read
//! into a schema, and messages are built from it with field values an
//! `Unstructured` picks (known fields with the right wire type most of the
//! time, unknown fields and wrong wire types sometimes). So a fuzz case
//! reaches the decoders' logic instead of stopping at protobuf framing.

use std::collections::HashMap;

use arbitrary::Unstructured;

use super::fuzz::number;

/// How one field is encoded.
#[derive(Debug, Clone)]
pub enum FieldKind {
    Varint { signed_zigzag: bool },
    Fixed64,
    Fixed32,
    Bytes,
    Message(String),
}

#[derive(Debug, Clone)]
pub struct Field {
    pub tag: u32,
    pub kind: FieldKind,
    pub repeated: bool,
}

/// Message name → its fields, read from a prost `proto.rs`.
pub struct Schema {
    pub messages: HashMap<String, Vec<Field>>,
}

impl Schema {
    /// Parses `pub struct X {` blocks and their `#[prost(…)]` fields.
    pub fn parse(source: &str) -> Schema {
        let mut messages: HashMap<String, Vec<Field>> = HashMap::new();
        let mut current: Option<String> = None;
        let mut pending: Option<(String, u32, bool)> = None;
        for line in source.lines().map(str::trim) {
            if let Some(rest) = line.strip_prefix("pub struct ") {
                let name = rest.split([' ', '{']).next().unwrap_or("").to_owned();
                messages.entry(name.clone()).or_default();
                current = Some(name);
                continue;
            }
            if line.starts_with("#[prost(") && line.contains("tag = \"") {
                let kind = line["#[prost(".len()..]
                    .split([',', ' ', ')'])
                    .next()
                    .unwrap_or("")
                    .to_owned();
                let tag = line
                    .split("tag = \"")
                    .nth(1)
                    .and_then(|t| t.split('"').next())
                    .and_then(|t| t.parse().ok())
                    .unwrap_or(0);
                pending = Some((kind, tag, line.contains("repeated")));
                continue;
            }
            if let (Some((kind, tag, repeated)), Some(message)) = (pending.take(), &current)
                && line.starts_with("pub ")
            {
                let kind = match kind.as_str() {
                    "message" => {
                        let ty = line
                            .rsplit(['<', ' '])
                            .next()
                            .unwrap_or("")
                            .trim_end_matches([',', '>'])
                            .to_owned();
                        FieldKind::Message(ty)
                    }
                    "bytes" | "string" => FieldKind::Bytes,
                    "sint32" | "sint64" => FieldKind::Varint {
                        signed_zigzag: true,
                    },
                    "fixed64" | "sfixed64" | "double" => FieldKind::Fixed64,
                    "fixed32" | "sfixed32" | "float" => FieldKind::Fixed32,
                    _ => FieldKind::Varint {
                        signed_zigzag: false,
                    },
                };
                if let Some(fields) = messages.get_mut(message) {
                    fields.push(Field {
                        tag,
                        kind,
                        repeated,
                    });
                }
            }
        }
        Schema { messages }
    }
}

pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_key(out: &mut Vec<u8>, tag: u32, wire: u8) {
    put_varint(out, (u64::from(tag) << 3) | u64::from(wire));
}

/// Builds messages of a [`Schema`], strings drawn from a vocabulary.
pub struct Generator<'s> {
    pub schema: &'s Schema,
    pub vocabulary: &'s [&'s str],
    /// Called for a length-delimited field before the generic encoding; may
    /// return bytes of its own (e.g. a zlib blob for `compressed_packets`).
    pub special: fn(&mut Unstructured<'_>, &Generator<'_>, &str, u32, u32) -> Option<Vec<u8>>,
}

impl Generator<'_> {
    /// An encoded `message` nested at most `depth` deep.
    pub fn message(&self, u: &mut Unstructured<'_>, message: &str, depth: u32) -> Vec<u8> {
        let mut out = Vec::new();
        let fields = self
            .schema
            .messages
            .get(message)
            .cloned()
            .unwrap_or_default();
        let count = u.int_in_range(0..=10usize).unwrap_or(0);
        for _ in 0..count {
            if u.is_empty() {
                break;
            }
            let pick = u.int_in_range(0..=19u8).unwrap_or(0);
            if pick == 0 || fields.is_empty() {
                // An unknown field, or a known one with a wrong wire type.
                let tag = u.int_in_range(1..=120u32).unwrap_or(1);
                let wire = u.int_in_range(0..=2u8).unwrap_or(0);
                self.scalar(u, &mut out, tag, wire);
                continue;
            }
            let Ok(field) = u.choose(&fields) else { break };
            let times = if field.repeated {
                u.int_in_range(1..=4usize).unwrap_or(1)
            } else {
                1
            };
            for _ in 0..times {
                self.field(u, &mut out, message, field, depth);
            }
        }
        out
    }

    fn field(
        &self,
        u: &mut Unstructured<'_>,
        out: &mut Vec<u8>,
        message: &str,
        field: &Field,
        depth: u32,
    ) {
        if let Some(bytes) = (self.special)(u, self, message, field.tag, depth) {
            put_key(out, field.tag, 2);
            put_varint(out, bytes.len() as u64);
            out.extend_from_slice(&bytes);
            return;
        }
        match &field.kind {
            FieldKind::Varint { signed_zigzag } => {
                let v = number(u);
                let v = if *signed_zigzag {
                    ((v << 1) ^ (v >> 63)) as u64
                } else {
                    v as u64
                };
                if field.repeated && u.ratio(1, 3).unwrap_or(false) {
                    // Packed.
                    let mut packed = Vec::new();
                    for _ in 0..u.int_in_range(0..=20usize).unwrap_or(0) {
                        put_varint(&mut packed, number(u) as u64);
                    }
                    put_key(out, field.tag, 2);
                    put_varint(out, packed.len() as u64);
                    out.extend_from_slice(&packed);
                } else {
                    put_key(out, field.tag, 0);
                    put_varint(out, v);
                }
            }
            FieldKind::Fixed64 => {
                put_key(out, field.tag, 1);
                out.extend_from_slice(&(number(u) as u64).to_le_bytes());
            }
            FieldKind::Fixed32 => {
                put_key(out, field.tag, 5);
                out.extend_from_slice(&(number(u) as u32).to_le_bytes());
            }
            FieldKind::Bytes => {
                let text = self.text(u);
                put_key(out, field.tag, 2);
                put_varint(out, text.len() as u64);
                out.extend_from_slice(&text);
            }
            FieldKind::Message(ty) => {
                let body = if depth == 0 {
                    Vec::new()
                } else {
                    self.message(u, ty, depth - 1)
                };
                put_key(out, field.tag, 2);
                put_varint(out, body.len() as u64);
                out.extend_from_slice(&body);
            }
        }
    }

    fn scalar(&self, u: &mut Unstructured<'_>, out: &mut Vec<u8>, tag: u32, wire: u8) {
        match wire {
            0 => {
                put_key(out, tag, 0);
                put_varint(out, number(u) as u64);
            }
            1 => {
                put_key(out, tag, 1);
                out.extend_from_slice(&(number(u) as u64).to_le_bytes());
            }
            _ => {
                let text = self.text(u);
                put_key(out, tag, 2);
                put_varint(out, text.len() as u64);
                out.extend_from_slice(&text);
            }
        }
    }

    /// A string from the vocabulary, empty, invalid UTF-8, or long.
    pub fn text(&self, u: &mut Unstructured<'_>) -> Vec<u8> {
        let word = u.choose(self.vocabulary).copied().unwrap_or("x");
        match u.int_in_range(0..=9u8).unwrap_or(0) {
            0 => Vec::new(),
            1 => b"\xff\xfe\xc0".to_vec(),
            2 => word
                .repeat(u.int_in_range(1..=3000usize).unwrap_or(1))
                .into_bytes(),
            _ => word.as_bytes().to_vec(),
        }
    }
}
