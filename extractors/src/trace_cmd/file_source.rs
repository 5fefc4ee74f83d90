//! Random access to a trace-cmd file, bounded by its length.
//!
//! A `.dat` file is a set of pieces found by offset (options, sections,
//! per-CPU data that is read interleaved while CPUs are merged), so it is
//! read through `Read + Seek`. Every read is checked against the file's
//! length first: an offset or size from a damaged file fails as
//! `UnexpectedEof` before anything is allocated for it.

use std::io::{self, BufReader, Read, Seek, SeekFrom};

use crate::kernel_events::endian_reader::{Endian, EndianReader};

pub struct FileSource<R> {
    reader: R,
    len: u64,
}

impl<R: Read + Seek> FileSource<R> {
    pub fn new(mut reader: R) -> io::Result<Self> {
        let len = reader.seek(SeekFrom::End(0))?;
        reader.seek(SeekFrom::Start(0))?;
        Ok(FileSource { reader, len })
    }

    /// The file's length in bytes.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Exactly `len` bytes at `offset`.
    pub fn read_at(&mut self, offset: u64, len: u64) -> io::Result<Vec<u8>> {
        let end = offset.checked_add(len).filter(|&end| end <= self.len);
        let size = end.and_then(|_| usize::try_from(len).ok()).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "{len} bytes at offset {offset} are past the end of a {}-byte file",
                    self.len
                ),
            )
        })?;
        self.reader.seek(SeekFrom::Start(offset))?;
        let mut out = vec![0u8; size];
        self.reader.read_exact(&mut out)?;
        Ok(out)
    }

    /// A buffered reader from `offset` on (positions count from `offset`).
    pub fn reader_at(
        &mut self,
        offset: u64,
        endian: Endian,
    ) -> io::Result<EndianReader<BufReader<&mut R>>> {
        if offset > self.len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "offset {offset} is past the end of a {}-byte file",
                    self.len
                ),
            ));
        }
        self.reader.seek(SeekFrom::Start(offset))?;
        Ok(EndianReader::new(
            BufReader::with_capacity(64 * 1024, &mut self.reader),
            endian,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn reads_past_the_end_fail_before_allocating() {
        let mut s = match FileSource::new(Cursor::new(vec![1u8, 2, 3, 4])) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(s.len(), 4);
        assert_eq!(s.read_at(1, 2).ok(), Some(vec![2, 3]));
        for (offset, len) in [(0, 5), (4, 1), (u64::MAX, 2), (2, u64::MAX)] {
            let kind = s.read_at(offset, len).err().map(|e| e.kind());
            assert_eq!(kind, Some(io::ErrorKind::UnexpectedEof), "{offset} {len}");
        }
        assert!(s.reader_at(5, Endian::Little).is_err());
        let mut r = match s.reader_at(2, Endian::Big) {
            Ok(r) => r,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(r.u16().ok(), Some(0x0304));
    }
}
