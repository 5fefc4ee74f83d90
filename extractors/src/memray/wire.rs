//! The primitive encodings memray's record writer uses, read from a
//! decoded byte stream with bounds on everything: raw little-endian
//! integers (`writeSimpleType` on a 64-bit little-endian host), LEB128
//! varints, zig-zag signed varints, delta-encoded integers and
//! NUL-terminated strings. Tracks the decoded offset for error messages.

use std::io::{self, BufRead, Read};

use crate::memray::error::MemrayError;

/// The longest NUL-terminated string accepted (a command line, a path or
/// a thread name; memray writes them unbounded, real ones are far shorter).
pub const MAX_STRING_BYTES: u64 = 1 << 20;
/// The longest byte blob accepted (a code object's line table).
pub const MAX_BLOB_BYTES: u64 = 1 << 24;

/// A decoded capture stream with typed, bounded reads.
pub struct CaptureBytes<R: BufRead> {
    input: R,
    offset: u64,
    compressed: bool,
}

impl<R: BufRead> CaptureBytes<R> {
    /// Wraps `input`; `compressed` only changes how I/O errors are named.
    pub fn new(input: R, compressed: bool) -> Self {
        CaptureBytes {
            input,
            offset: 0,
            compressed,
        }
    }

    /// Decoded bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The wrapped reader.
    pub fn get_ref(&self) -> &R {
        &self.input
    }

    fn io_error(&self, error: io::Error, what: &'static str) -> MemrayError {
        if error.kind() == io::ErrorKind::UnexpectedEof {
            MemrayError::Truncated {
                what,
                offset: self.offset,
            }
        } else if self.compressed {
            MemrayError::Decompress {
                offset: self.offset,
                source: error,
            }
        } else {
            MemrayError::Io {
                offset: self.offset,
                source: error,
            }
        }
    }

    /// The next byte, or `None` at the end of the input.
    pub fn try_u8(&mut self) -> Result<Option<u8>, MemrayError> {
        loop {
            match self.input.fill_buf() {
                Ok(buf) => {
                    let Some(&b) = buf.first() else {
                        return Ok(None);
                    };
                    self.input.consume(1);
                    self.offset = self.offset.saturating_add(1);
                    return Ok(Some(b));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.io_error(e, "a record type")),
            }
        }
    }

    /// Exactly `N` bytes.
    pub fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], MemrayError> {
        let mut buf = [0u8; N];
        // Fast path: the bytes are already buffered.
        if let Ok(available) = self.input.fill_buf()
            && let Some(head) = available.get(..N)
        {
            buf.copy_from_slice(head);
            self.input.consume(N);
            self.offset = self.offset.saturating_add(N as u64);
            return Ok(buf);
        }
        match self.input.read_exact(&mut buf) {
            Ok(()) => {
                self.offset = self.offset.saturating_add(N as u64);
                Ok(buf)
            }
            Err(e) => Err(self.io_error(e, what)),
        }
    }

    pub fn u8(&mut self, what: &'static str) -> Result<u8, MemrayError> {
        let [b] = self.array::<1>(what)?;
        Ok(b)
    }

    /// A C++ `bool` written raw: 0 or 1, anything else is damage.
    pub fn bool(&mut self, what: &'static str) -> Result<bool, MemrayError> {
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(MemrayError::corrupt(
                self.offset.saturating_sub(1),
                format!("{what} is the byte {other}, not a bool"),
            )),
        }
    }

    pub fn i32_le(&mut self, what: &'static str) -> Result<i32, MemrayError> {
        Ok(i32::from_le_bytes(self.array(what)?))
    }

    pub fn u64_le(&mut self, what: &'static str) -> Result<u64, MemrayError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    pub fn i64_le(&mut self, what: &'static str) -> Result<i64, MemrayError> {
        Ok(i64::from_le_bytes(self.array(what)?))
    }

    /// An unsigned LEB128 varint of at most 10 bytes (memray's
    /// `readVarint`: bits past 64 are dropped, an 11th byte is an error).
    pub fn varint(&mut self, what: &'static str) -> Result<u64, MemrayError> {
        let mut value = 0u64;
        let mut shift = 0u32;
        loop {
            let byte = self.u8(what)?;
            value |= u64::from(byte & 0x7f).checked_shl(shift).unwrap_or(0);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
            shift += 7;
            if shift >= 64 {
                return Err(MemrayError::corrupt(
                    self.offset,
                    format!("{what}: varint longer than 10 bytes"),
                ));
            }
        }
    }

    /// A zig-zag signed varint.
    pub fn signed_varint(&mut self, what: &'static str) -> Result<i64, MemrayError> {
        let zigzag = self.varint(what)?;
        Ok(((zigzag >> 1) as i64) ^ -((zigzag & 1) as i64))
    }

    /// A delta against `*previous` (memray's `readIntegralDelta`, on
    /// unsigned 64-bit fields: wrapping).
    pub fn delta_u64(
        &mut self,
        previous: &mut u64,
        what: &'static str,
    ) -> Result<u64, MemrayError> {
        let delta = self.signed_varint(what)?;
        *previous = previous.wrapping_add(delta as u64);
        Ok(*previous)
    }

    /// A NUL-terminated string (lossy UTF-8), at most [`MAX_STRING_BYTES`].
    pub fn cstring(&mut self, what: &'static str) -> Result<String, MemrayError> {
        let mut buf = Vec::new();
        let read = (&mut self.input)
            .take(MAX_STRING_BYTES.saturating_add(1))
            .read_until(0, &mut buf);
        let n = match read {
            Ok(n) => n,
            Err(e) => return Err(self.io_error(e, what)),
        };
        self.offset = self.offset.saturating_add(n as u64);
        if buf.pop() != Some(0) {
            if n as u64 > MAX_STRING_BYTES {
                return Err(MemrayError::corrupt(
                    self.offset,
                    format!("{what}: no NUL within {MAX_STRING_BYTES} bytes"),
                ));
            }
            return Err(MemrayError::Truncated {
                what,
                offset: self.offset,
            });
        }
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    /// `len` raw bytes; memory grows only as the bytes actually arrive.
    pub fn blob(&mut self, len: u64, what: &'static str) -> Result<Vec<u8>, MemrayError> {
        if len > MAX_BLOB_BYTES {
            return Err(MemrayError::corrupt(
                self.offset,
                format!("{what}: length {len} is over {MAX_BLOB_BYTES}"),
            ));
        }
        let mut buf = Vec::new();
        let n = match (&mut self.input).take(len).read_to_end(&mut buf) {
            Ok(n) => n,
            Err(e) => return Err(self.io_error(e, what)),
        };
        self.offset = self.offset.saturating_add(n as u64);
        if (n as u64) < len {
            return Err(MemrayError::Truncated {
                what,
                offset: self.offset,
            });
        }
        Ok(buf)
    }

    /// Consumes the rest of the input, which must be zero bytes (the
    /// padding an uncompressed capture of a killed process ends with).
    /// Returns how many zero bytes there were.
    pub fn rest_is_zero(&mut self) -> Result<u64, MemrayError> {
        let mut zeros = 0u64;
        loop {
            let buf = match self.input.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.io_error(e, "zero padding")),
            };
            if buf.is_empty() {
                return Ok(zeros);
            }
            let len = buf.len();
            if let Some(at) = buf.iter().position(|&b| b != 0) {
                let offset = self.offset.saturating_add(at as u64);
                return Err(MemrayError::corrupt(
                    offset,
                    "a zero record type (padding) is followed by non-zero data",
                ));
            }
            self.input.consume(len);
            self.offset = self.offset.saturating_add(len as u64);
            zeros = zeros.saturating_add(len as u64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(data: &[u8]) -> CaptureBytes<&[u8]> {
        CaptureBytes::new(data, false)
    }

    #[test]
    fn varints_and_zigzag() {
        let mut b = bytes(&[0x00, 0x7f, 0xac, 0x02, 0x01, 0x02, 0x03, 0x04]);
        assert_eq!(b.varint("v").unwrap(), 0);
        assert_eq!(b.varint("v").unwrap(), 127);
        assert_eq!(b.varint("v").unwrap(), 300);
        assert_eq!(b.signed_varint("s").unwrap(), -1);
        assert_eq!(b.signed_varint("s").unwrap(), 1);
        assert_eq!(b.signed_varint("s").unwrap(), -2);
        assert_eq!(b.signed_varint("s").unwrap(), 2);
        assert_eq!(b.offset(), 8);
        let max = [0xffu8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(bytes(&max).varint("v").unwrap(), u64::MAX);
        let too_long = [0x80u8; 11];
        assert!(matches!(
            bytes(&too_long).varint("v"),
            Err(MemrayError::Corrupt { .. })
        ));
        assert!(matches!(
            bytes(&[0x80]).varint("v"),
            Err(MemrayError::Truncated { what: "v", .. })
        ));
    }

    #[test]
    fn deltas_wrap_like_unsigned_cpp() {
        let mut prev = 5u64;
        // zig-zag 0x0b = -6
        assert_eq!(bytes(&[0x0b]).delta_u64(&mut prev, "d").unwrap(), u64::MAX);
        assert_eq!(prev, u64::MAX);
    }

    #[test]
    fn strings_blobs_and_padding() {
        let mut b = bytes(b"abc\0\0tail");
        assert_eq!(b.cstring("s").unwrap(), "abc");
        assert_eq!(b.cstring("s").unwrap(), "");
        assert!(matches!(b.cstring("s"), Err(MemrayError::Truncated { .. })));
        assert_eq!(bytes(b"xyz").blob(2, "b").unwrap(), b"xy");
        assert!(matches!(
            bytes(b"xyz").blob(4, "b"),
            Err(MemrayError::Truncated { .. })
        ));
        assert!(matches!(
            bytes(b"").blob(u64::MAX, "b"),
            Err(MemrayError::Corrupt { .. })
        ));
        assert_eq!(bytes(&[0; 10]).rest_is_zero().unwrap(), 10);
        assert!(bytes(&[0, 0, 3]).rest_is_zero().is_err());
        assert!(matches!(
            bytes(&[2]).bool("flag"),
            Err(MemrayError::Corrupt { .. })
        ));
    }
}
