//! Reading the integers and strings of kernel tracing metadata in the
//! byte order the recording machine used.
//!
//! trace-cmd `.dat` files and perf's `HEADER_TRACING_DATA` write every
//! number in the traced machine's endianness (a flag byte says which), and
//! their blobs are length-prefixed. This reader is the one place where a
//! length read from the file becomes a read: blobs grow only as bytes
//! actually arrive, so a damaged length cannot make it allocate more than
//! the input holds.

use std::io::{self, Read};

/// The byte order of the traced machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endian {
    Little,
    Big,
}

impl Endian {
    /// `true` for [`Endian::Big`].
    pub fn is_big(self) -> bool {
        self == Endian::Big
    }

    pub fn u16(self, b: [u8; 2]) -> u16 {
        match self {
            Endian::Little => u16::from_le_bytes(b),
            Endian::Big => u16::from_be_bytes(b),
        }
    }

    pub fn u32(self, b: [u8; 4]) -> u32 {
        match self {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        }
    }

    pub fn u64(self, b: [u8; 8]) -> u64 {
        match self {
            Endian::Little => u64::from_le_bytes(b),
            Endian::Big => u64::from_be_bytes(b),
        }
    }

    /// The unsigned integer of `size` (1, 2, 4 or 8) bytes at `offset`,
    /// or `None` when it does not fit in `bytes` or the size is another.
    pub fn uint_at(self, bytes: &[u8], offset: usize, size: usize) -> Option<u64> {
        let end = offset.checked_add(size)?;
        let b = bytes.get(offset..end)?;
        match size {
            1 => b.first().map(|&v| u64::from(v)),
            2 => b.try_into().ok().map(|a| u64::from(self.u16(a))),
            4 => b.try_into().ok().map(|a| u64::from(self.u32(a))),
            8 => b.try_into().ok().map(|a| self.u64(a)),
            _ => None,
        }
    }
}

/// A `Read` that decodes numbers in a fixed byte order and counts bytes.
pub struct EndianReader<R> {
    inner: R,
    endian: Endian,
    position: u64,
}

impl<R: Read> EndianReader<R> {
    pub fn new(inner: R, endian: Endian) -> Self {
        EndianReader {
            inner,
            endian,
            position: 0,
        }
    }

    pub fn endian(&self) -> Endian {
        self.endian
    }

    pub fn set_endian(&mut self, endian: Endian) {
        self.endian = endian;
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> u64 {
        self.position
    }

    pub fn array<const N: usize>(&mut self) -> io::Result<[u8; N]> {
        let mut buf = [0u8; N];
        self.inner.read_exact(&mut buf)?;
        self.position = self.position.saturating_add(N as u64);
        Ok(buf)
    }

    pub fn u8(&mut self) -> io::Result<u8> {
        self.array::<1>().map(|[b]| b)
    }

    pub fn u16(&mut self) -> io::Result<u16> {
        let e = self.endian;
        self.array().map(|b| e.u16(b))
    }

    pub fn u32(&mut self) -> io::Result<u32> {
        let e = self.endian;
        self.array().map(|b| e.u32(b))
    }

    pub fn u64(&mut self) -> io::Result<u64> {
        let e = self.endian;
        self.array().map(|b| e.u64(b))
    }

    /// A NUL-terminated string of at most `max` bytes before the NUL
    /// (lossy UTF-8); longer is `InvalidData`.
    pub fn cstring(&mut self, max: usize) -> io::Result<String> {
        let mut out = Vec::new();
        loop {
            let b = self.u8()?;
            if b == 0 {
                return Ok(String::from_utf8_lossy(&out).into_owned());
            }
            if out.len() >= max {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("a string longer than {max} bytes without its NUL"),
                ));
            }
            out.push(b);
        }
    }

    /// Exactly `len` bytes; the buffer grows as bytes arrive, so a length
    /// larger than the input fails with `UnexpectedEof` without allocating it.
    pub fn blob(&mut self, len: u64) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        let got = (&mut self.inner).take(len).read_to_end(&mut out)?;
        self.position = self.position.saturating_add(got as u64);
        if (got as u64) < len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("{len} bytes announced, {got} present"),
            ));
        }
        Ok(out)
    }

    /// Skips exactly `len` bytes.
    pub fn skip(&mut self, len: u64) -> io::Result<()> {
        let got = io::copy(&mut (&mut self.inner).take(len), &mut io::sink())?;
        self.position = self.position.saturating_add(got);
        if got < len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("{len} bytes to skip, {got} present"),
            ));
        }
        Ok(())
    }

    pub fn into_inner(self) -> R {
        self.inner
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_follow_the_byte_order() {
        let bytes = [1u8, 2, 3, 4, 5, 6, 7, 8];
        let mut le = EndianReader::new(&bytes[..], Endian::Little);
        assert_eq!(le.u16().ok(), Some(0x0201));
        assert_eq!(le.u32().ok(), Some(0x0605_0403));
        let mut be = EndianReader::new(&bytes[..], Endian::Big);
        assert_eq!(be.u64().ok(), Some(0x0102_0304_0506_0708));
        assert_eq!(be.position(), 8);
        assert_eq!(Endian::Big.uint_at(&bytes, 6, 2), Some(0x0708));
        assert_eq!(Endian::Big.uint_at(&bytes, 7, 2), None);
        assert_eq!(Endian::Big.uint_at(&bytes, usize::MAX, 2), None);
        assert_eq!(Endian::Big.uint_at(&bytes, 0, 3), None);
    }

    #[test]
    fn a_huge_blob_length_fails_without_allocating_it() {
        let bytes = [0u8; 10];
        let mut r = EndianReader::new(&bytes[..], Endian::Little);
        let err = r.blob(u64::MAX).err().map(|e| e.kind());
        assert_eq!(err, Some(io::ErrorKind::UnexpectedEof));
        let mut r = EndianReader::new(&bytes[..], Endian::Little);
        assert!(r.skip(11).is_err());
    }

    #[test]
    fn strings_need_their_nul_within_the_limit() {
        let mut r = EndianReader::new(&b"abc\0def"[..], Endian::Little);
        assert_eq!(r.cstring(8).ok().as_deref(), Some("abc"));
        assert!(r.cstring(8).is_err(), "no NUL before the end");
        let mut r = EndianReader::new(&b"abcdef\0"[..], Endian::Little);
        assert!(r.cstring(3).is_err());
    }
}
