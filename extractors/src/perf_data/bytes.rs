//! Bounds-checked, endian-aware reads of the fixed-width integers and
//! NUL-terminated strings perf.data is made of. Every read returns `None`
//! past the end instead of panicking, so no file byte can crash a decoder.

/// The byte order of a perf.data file (that of the machine that wrote it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endian {
    Little,
    Big,
}

impl Endian {
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
    pub fn is_big(self) -> bool {
        self == Endian::Big
    }
}

/// A cursor over a byte slice that reads integers in one byte order.
#[derive(Debug, Clone)]
pub struct ByteReader<'a> {
    buf: &'a [u8],
    pos: usize,
    endian: Endian,
}

impl<'a> ByteReader<'a> {
    pub fn new(buf: &'a [u8], endian: Endian) -> Self {
        ByteReader {
            buf,
            pos: 0,
            endian,
        }
    }
    pub fn endian(&self) -> Endian {
        self.endian
    }
    pub fn pos(&self) -> usize {
        self.pos
    }
    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }
    /// The bytes not read yet.
    pub fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or(&[])
    }
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let out = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(out)
    }
    pub fn skip(&mut self, n: usize) -> Option<()> {
        self.bytes(n).map(|_| ())
    }
    /// Skips `n` bytes given as a file value (`u64`).
    pub fn skip_u64(&mut self, n: u64) -> Option<()> {
        self.skip(usize::try_from(n).ok()?)
    }
    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.bytes(N)?.try_into().ok()
    }
    pub fn u8(&mut self) -> Option<u8> {
        self.array::<1>().map(|[b]| b)
    }
    pub fn u16(&mut self) -> Option<u16> {
        let b = self.array()?;
        Some(self.endian.u16(b))
    }
    pub fn u32(&mut self) -> Option<u32> {
        let b = self.array()?;
        Some(self.endian.u32(b))
    }
    pub fn i32(&mut self) -> Option<i32> {
        self.u32().map(|v| v as i32)
    }
    pub fn u64(&mut self) -> Option<u64> {
        let b = self.array()?;
        Some(self.endian.u64(b))
    }
}

/// The text of `bytes` up to its first NUL (all of it without one), with
/// invalid UTF-8 replaced.
pub fn c_string(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(bytes.get(..end).unwrap_or(&[])).into_owned()
}

/// A `u64` read from the file as a `usize`, or `None` when it cannot be one.
pub fn to_usize(v: u64) -> Option<usize> {
    usize::try_from(v).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_byte_orders_and_stops_at_the_end() {
        let b = [1u8, 0, 0, 0, 0, 0, 0, 2, 9];
        let mut le = ByteReader::new(&b, Endian::Little);
        assert_eq!(le.u64(), Some(0x0200_0000_0000_0001));
        assert_eq!(le.u16(), None);
        assert_eq!(le.u8(), Some(9));
        assert_eq!(le.u8(), None);
        let mut be = ByteReader::new(&b, Endian::Big);
        assert_eq!(be.u32(), Some(0x0100_0000));
        assert_eq!(be.u32(), Some(2));
        assert_eq!(be.skip(2), None);
        assert_eq!(be.remaining(), 1);
        assert_eq!(be.skip_u64(u64::MAX), None);
    }

    #[test]
    fn c_strings_stop_at_nul() {
        assert_eq!(c_string(b"abc\0def"), "abc");
        assert_eq!(c_string(b"abc"), "abc");
        assert_eq!(c_string(b""), "");
    }
}
