//! Protobuf fields of one XSpace message, read in place with their byte
//! offsets, so a damaged XSpace can be decoded up to the damage.
//!
//! Unlike [`crate::perfetto::wire`], a length-delimited field whose length
//! runs past the end of its enclosing message is not only an error: the
//! reader hands out the bytes that are there, marked truncated, and then
//! stops. The XSpace walk decodes such a cut plane or line as far as it
//! goes (a file cut short keeps every event before the cut) and says so in
//! a note. Every offset is absolute in the decoded input.

use crate::varint::get_u64;

/// One field's value, by wire type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FieldValue<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    /// A length-delimited payload (sub-message, string or bytes).
    Len(&'a [u8]),
}

/// One field of a message.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Field<'a> {
    pub number: u32,
    pub value: FieldValue<'a>,
    /// Absolute offset of the value (for `Len`, of its first payload byte).
    pub offset: usize,
    /// A `Len` payload shorter than its declared length: the message ended
    /// (or the input was cut) inside it.
    pub truncated: bool,
}

/// Why the field walk of a message stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireDamage {
    /// A key or varint value runs past the end, or past ten bytes.
    BadVarint { offset: usize },
    /// Field number 0 or above 2^29-1.
    BadFieldNumber { offset: usize },
    /// A group (3, 4) or reserved (6, 7) wire type.
    BadWireType { offset: usize, wire_type: u8 },
    /// A fixed-width value cut by the end of the message.
    CutFixed { offset: usize },
}

impl WireDamage {
    /// Absolute offset of the damage.
    pub fn offset(self) -> usize {
        match self {
            WireDamage::BadVarint { offset }
            | WireDamage::BadFieldNumber { offset }
            | WireDamage::BadWireType { offset, .. }
            | WireDamage::CutFixed { offset } => offset,
        }
    }

    /// What was wrong, for a note.
    pub fn describe(self) -> String {
        match self {
            WireDamage::BadVarint { offset } => format!("unterminated varint at byte {offset}"),
            WireDamage::BadFieldNumber { offset } => {
                format!("invalid protobuf field number at byte {offset}")
            }
            WireDamage::BadWireType { offset, wire_type } => {
                format!("unsupported protobuf wire type {wire_type} at byte {offset}")
            }
            WireDamage::CutFixed { offset } => {
                format!("fixed-width value cut short at byte {offset}")
            }
        }
    }
}

/// The fields of one message, in order; after a damaged or truncated field
/// it yields nothing more.
pub struct FieldReader<'a> {
    bytes: &'a [u8],
    /// Absolute offset of `bytes[0]`.
    base: usize,
    pos: usize,
    done: bool,
}

impl<'a> FieldReader<'a> {
    /// Reads `bytes`, which start at absolute offset `base` in the input.
    pub fn new(bytes: &'a [u8], base: usize) -> Self {
        FieldReader {
            bytes,
            base,
            pos: 0,
            done: false,
        }
    }

    fn at(&self) -> usize {
        self.base.saturating_add(self.pos)
    }

    fn varint(&mut self) -> Option<u64> {
        let mut rest = self.bytes.get(self.pos..)?;
        let before = rest.len();
        let v = get_u64(&mut rest)?;
        self.pos = self.pos.saturating_add(before.saturating_sub(rest.len()));
        Some(v)
    }

    fn fixed<const N: usize>(&mut self) -> Option<[u8; N]> {
        let rest = self.bytes.get(self.pos..)?;
        let (head, _) = rest.split_first_chunk::<N>()?;
        self.pos = self.pos.saturating_add(N);
        Some(*head)
    }

    fn next_field(&mut self) -> Result<Field<'a>, WireDamage> {
        let key_at = self.at();
        let key = self
            .varint()
            .ok_or(WireDamage::BadVarint { offset: key_at })?;
        let number = u32::try_from(key >> 3)
            .ok()
            .filter(|&n| n != 0 && n < (1 << 29))
            .ok_or(WireDamage::BadFieldNumber { offset: key_at })?;
        let offset = self.at();
        let wire_type = (key & 7) as u8;
        let mut truncated = false;
        let value = match wire_type {
            0 => FieldValue::Varint(self.varint().ok_or(WireDamage::BadVarint { offset })?),
            1 => FieldValue::Fixed64(u64::from_le_bytes(
                self.fixed::<8>().ok_or(WireDamage::CutFixed { offset })?,
            )),
            5 => FieldValue::Fixed32(u32::from_le_bytes(
                self.fixed::<4>().ok_or(WireDamage::CutFixed { offset })?,
            )),
            2 => {
                let declared = self.varint().ok_or(WireDamage::BadVarint { offset })?;
                let start = self.pos;
                let available = self.bytes.len().saturating_sub(start);
                let len = match usize::try_from(declared) {
                    Ok(len) if len <= available => len,
                    _ => {
                        truncated = true;
                        available
                    }
                };
                let end = start.saturating_add(len);
                let payload = self.bytes.get(start..end).unwrap_or_default();
                let offset = self.at();
                self.pos = end;
                return Ok(Field {
                    number,
                    value: FieldValue::Len(payload),
                    offset,
                    truncated,
                });
            }
            other => {
                return Err(WireDamage::BadWireType {
                    offset: key_at,
                    wire_type: other,
                });
            }
        };
        Ok(Field {
            number,
            value,
            offset,
            truncated,
        })
    }
}

impl<'a> Iterator for FieldReader<'a> {
    type Item = Result<Field<'a>, WireDamage>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.pos >= self.bytes.len() {
            return None;
        }
        let field = self.next_field();
        if field.as_ref().map_or(true, |f| f.truncated) {
            self.done = true;
        }
        Some(field)
    }
}

impl<'a> FieldValue<'a> {
    /// A varint field's value (`uint64`; `int64` is a cast of it).
    pub fn varint(self) -> Option<u64> {
        match self {
            FieldValue::Varint(v) => Some(v),
            _ => None,
        }
    }

    /// A `double` field's value.
    pub fn double(self) -> Option<f64> {
        match self {
            FieldValue::Fixed64(v) => Some(f64::from_bits(v)),
            _ => None,
        }
    }

    /// A length-delimited field's bytes.
    pub fn len_bytes(self) -> Option<&'a [u8]> {
        match self {
            FieldValue::Len(b) => Some(b),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(bytes: &[u8]) -> Vec<Result<Field<'_>, WireDamage>> {
        FieldReader::new(bytes, 100).collect()
    }

    #[test]
    fn fields_carry_absolute_offsets() {
        // field 1 varint 150, field 2 "hi", field 3 fixed64 7, field 4 fixed32 9
        let mut bytes = vec![0x08, 0x96, 0x01, 0x12, 0x02, b'h', b'i', 0x19];
        bytes.extend_from_slice(&7u64.to_le_bytes());
        bytes.push(0x25);
        bytes.extend_from_slice(&9u32.to_le_bytes());
        let fields: Vec<Field<'_>> = collect(&bytes).into_iter().flatten().collect();
        let got: Vec<(u32, FieldValue<'_>, usize)> = fields
            .iter()
            .map(|f| (f.number, f.value, f.offset))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, FieldValue::Varint(150), 101),
                (2, FieldValue::Len(b"hi"), 105),
                (3, FieldValue::Fixed64(7), 108),
                (4, FieldValue::Fixed32(9), 117),
            ]
        );
        assert!(fields.iter().all(|f| !f.truncated));
    }

    #[test]
    fn a_cut_payload_is_handed_out_truncated_and_ends_the_walk() {
        let bytes = [0x12, 0x09, b'a', b'b', b'c'];
        let got = collect(&bytes);
        assert_eq!(got.len(), 1);
        let field = got[0].unwrap();
        assert!(field.truncated);
        assert_eq!(field.value, FieldValue::Len(b"abc"));
        // A length beyond usize is also a truncation, not an overflow.
        let mut huge = vec![0x12];
        crate::varint::put_u64(&mut huge, u64::MAX);
        huge.push(b'x');
        let got = collect(&huge);
        assert_eq!(got[0].unwrap().value, FieldValue::Len(b"x"));
    }

    #[test]
    fn garbage_stops_the_walk_with_its_offset() {
        let cases: [(&[u8], WireDamage); 5] = [
            (&[0x08], WireDamage::BadVarint { offset: 101 }),
            (&[0x80; 11], WireDamage::BadVarint { offset: 100 }),
            (&[0x00, 0x01], WireDamage::BadFieldNumber { offset: 100 }),
            (
                &[0x0b],
                WireDamage::BadWireType {
                    offset: 100,
                    wire_type: 3,
                },
            ),
            (&[0x19, 1, 2], WireDamage::CutFixed { offset: 101 }),
        ];
        for (bytes, damage) in cases {
            let got = collect(bytes);
            assert_eq!(got.last(), Some(&Err(damage)), "{bytes:?}");
            assert!(!damage.describe().is_empty());
            assert!(damage.offset() >= 100);
        }
    }
}
