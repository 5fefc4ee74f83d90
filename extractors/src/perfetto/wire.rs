//! Protobuf fields read in place: each field of a message's bytes as its
//! number and a borrowed value, protozero-style, with nothing copied or
//! allocated.
//!
//! Used where prost's owned messages cost more than the work done with
//! them (every packet's envelope, every track event). A message whose
//! bytes are not well-formed protobuf (a varint that runs past ten bytes, a
//! length past the end, a group or reserved wire type) ends the iteration
//! with an error, as prost's decoding fails on it.

use crate::varint::get_u64;

/// One field's value, by wire type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    Bytes(&'a [u8]),
}

/// The bytes are not well-formed protobuf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

/// The fields of one message, in order.
pub struct Fields<'a> {
    bytes: &'a [u8],
    failed: bool,
}

impl<'a> Fields<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Fields {
            bytes,
            failed: false,
        }
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Value<'a>), Malformed>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.bytes.is_empty() || self.failed {
            return None;
        }
        let field = next_field(&mut self.bytes);
        if field.is_err() {
            self.failed = true;
        }
        Some(field)
    }
}

/// A varint; most keys and many values are one byte.
#[inline(always)]
fn varint(bytes: &mut &[u8]) -> Option<u64> {
    match bytes.split_first() {
        Some((&b, rest)) if b < 0x80 => {
            *bytes = rest;
            Some(u64::from(b))
        }
        _ => get_u64(bytes),
    }
}

#[inline]
fn next_field<'a>(bytes: &mut &'a [u8]) -> Result<(u32, Value<'a>), Malformed> {
    let key = varint(bytes).ok_or(Malformed)?;
    let number = u32::try_from(key >> 3).map_err(|_| Malformed)?;
    if number == 0 {
        return Err(Malformed);
    }
    let value = match key & 7 {
        0 => Value::Varint(varint(bytes).ok_or(Malformed)?),
        1 => Value::Fixed64(u64::from_le_bytes(take::<8>(bytes)?)),
        5 => Value::Fixed32(u32::from_le_bytes(take::<4>(bytes)?)),
        2 => {
            let len = varint(bytes).ok_or(Malformed)?;
            let len = usize::try_from(len).map_err(|_| Malformed)?;
            if len > bytes.len() {
                return Err(Malformed);
            }
            let (value, rest) = bytes.split_at(len);
            *bytes = rest;
            Value::Bytes(value)
        }
        _ => return Err(Malformed),
    };
    Ok((number, value))
}

fn take<const N: usize>(bytes: &mut &[u8]) -> Result<[u8; N], Malformed> {
    let (head, rest) = bytes.split_first_chunk::<N>().ok_or(Malformed)?;
    *bytes = rest;
    Ok(*head)
}

/// The values of a repeated varint field: one unpacked occurrence, or a
/// packed run (appended to `out`).
pub fn varints(value: Value<'_>, out: &mut Vec<u64>) -> Result<(), Malformed> {
    match value {
        Value::Varint(v) => out.push(v),
        Value::Bytes(mut packed) => {
            while !packed.is_empty() {
                out.push(varint(&mut packed).ok_or(Malformed)?);
            }
        }
        _ => return Err(Malformed),
    }
    Ok(())
}

/// The values of a repeated 64-bit fixed field (`fixed64`, `double` as
/// bits): one unpacked occurrence, or a packed run (appended to `out`).
pub fn fixed64s(value: Value<'_>, out: &mut Vec<u64>) -> Result<(), Malformed> {
    match value {
        Value::Fixed64(v) => out.push(v),
        Value::Bytes(packed) => {
            let (chunks, rest) = packed.as_chunks::<8>();
            if !rest.is_empty() {
                return Err(Malformed);
            }
            out.extend(chunks.iter().map(|c| u64::from_le_bytes(*c)));
        }
        _ => return Err(Malformed),
    }
    Ok(())
}

impl<'a> Value<'a> {
    /// A varint field's value (prost's `uint64`; `int64` and `int32` are
    /// casts of it).
    pub fn varint(self) -> Result<u64, Malformed> {
        match self {
            Value::Varint(v) => Ok(v),
            _ => Err(Malformed),
        }
    }

    /// A `double` field's value.
    pub fn double(self) -> Result<f64, Malformed> {
        match self {
            Value::Fixed64(v) => Ok(f64::from_bits(v)),
            _ => Err(Malformed),
        }
    }

    /// A length-delimited field's bytes.
    pub fn bytes(self) -> Result<&'a [u8], Malformed> {
        match self {
            Value::Bytes(b) => Ok(b),
            _ => Err(Malformed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_read_in_place_and_garbage_stops_them() {
        // field 1 varint 150, field 2 bytes "hi", field 3 fixed64 7, field 4 fixed32 9
        let mut bytes = vec![0x08, 0x96, 0x01, 0x12, 0x02, b'h', b'i', 0x19];
        bytes.extend_from_slice(&7u64.to_le_bytes());
        bytes.push(0x25);
        bytes.extend_from_slice(&9u32.to_le_bytes());
        let fields: Vec<_> = Fields::new(&bytes).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            fields,
            vec![
                (1, Value::Varint(150)),
                (2, Value::Bytes(b"hi")),
                (3, Value::Fixed64(7)),
                (4, Value::Fixed32(9)),
            ]
        );
        // A length past the end, a group wire type, field number 0.
        for bad in [&[0x12, 0x05, b'h'][..], &[0x0b], &[0x00, 0x01]] {
            let read: Vec<_> = Fields::new(bad).collect();
            assert_eq!(read.last(), Some(&Err(Malformed)), "{bad:?}");
        }
    }

    #[test]
    fn field_walk_reports_numbers_and_rejects_garbage() {
        let numbers: Result<Vec<u32>, _> = Fields::new(&[0x40, 0x05, 0x5a, 0x01, 0x00])
            .map(|f| f.map(|(n, _)| n))
            .collect();
        assert_eq!(numbers, Ok(vec![8, 11]));
        assert!(Fields::new(&[0x5a, 0x09, 0x00]).any(|f| f.is_err()));
    }

    #[test]
    fn repeated_fields_read_packed_and_unpacked() {
        let mut out = Vec::new();
        varints(Value::Varint(3), &mut out).unwrap();
        varints(Value::Bytes(&[0x01, 0x96, 0x01]), &mut out).unwrap();
        assert_eq!(out, vec![3, 1, 150]);
        assert!(varints(Value::Bytes(&[0x96]), &mut out).is_err());
        let mut fixed = Vec::new();
        let packed: Vec<u8> = [5u64, 6].iter().flat_map(|v| v.to_le_bytes()).collect();
        fixed64s(Value::Bytes(&packed), &mut fixed).unwrap();
        fixed64s(Value::Fixed64(8), &mut fixed).unwrap();
        assert_eq!(fixed, vec![5, 6, 8]);
        assert!(fixed64s(Value::Bytes(&packed[..7]), &mut fixed).is_err());
    }
}
