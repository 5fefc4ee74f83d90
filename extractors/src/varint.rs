//! LEB128 varints and zigzag signed integers: the byte form of spilled
//! event records ([`crate::trace_events::record`]) and of protobuf framing.
//!
//! Small numbers take one byte, any `u64` at most [`MAX_VARINT_BYTES`].
//! Readers return `None` on bytes that end inside a varint or run past ten
//! bytes, never a wrong value.

/// Bytes of the longest varint (a `u64` with its top bit set).
pub const MAX_VARINT_BYTES: usize = 10;

/// Appends `v` as a varint.
pub fn put_u64(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends `v` zigzag-encoded, so small negatives are short too.
pub fn put_i64(out: &mut Vec<u8>, v: i64) {
    put_u64(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// Reads a varint from the front of `bytes` and advances past it.
pub fn get_u64(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for i in 0..MAX_VARINT_BYTES {
        let (&b, rest) = bytes.split_first()?;
        *bytes = rest;
        value |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Some(value);
        }
    }
    None
}

/// Reads a zigzag-encoded signed integer ([`put_i64`]).
pub fn get_i64(bytes: &mut &[u8]) -> Option<i64> {
    let v = get_u64(bytes)?;
    Some(((v >> 1) as i64) ^ -((v & 1) as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_width_round_trips_and_a_cut_varint_is_refused() {
        let mut values: Vec<i64> = vec![0, 1, -1, 63, -64, 64, -65, i64::MAX, i64::MIN];
        values.extend((0..64).map(|s| 1i64 << s));
        values.extend((0..64).map(|s| (1i64 << s).wrapping_neg()));
        for v in values {
            let mut bytes = Vec::new();
            put_i64(&mut bytes, v);
            assert!(bytes.len() <= MAX_VARINT_BYTES);
            let mut read = bytes.as_slice();
            assert_eq!(get_i64(&mut read), Some(v));
            assert!(read.is_empty());
            let mut cut = &bytes[..bytes.len() - 1];
            assert_eq!(get_i64(&mut cut), None, "{v}");
            let mut unsigned = Vec::new();
            put_u64(&mut unsigned, v as u64);
            let mut read = unsigned.as_slice();
            assert_eq!(get_u64(&mut read), Some(v as u64));
        }
        // Small magnitudes take one byte.
        let mut bytes = Vec::new();
        put_i64(&mut bytes, -64);
        put_u64(&mut bytes, 127);
        assert_eq!(bytes.len(), 2);
        // Eleven continuation bytes are not a varint.
        let mut long: &[u8] = &[0x80; 11];
        assert_eq!(get_u64(&mut long), None);
    }
}
