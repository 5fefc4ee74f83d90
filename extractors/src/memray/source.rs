//! The decoded byte stream of a memray capture file. `memray run` writes
//! the records and then, by default, lz4-frame compresses the whole file
//! (it starts with `04 22 4d 18`); `--no-compress` leaves it as written,
//! starting with the `memray\0` magic. Like memray's `FileSource`, this
//! sniffs the first four bytes and hands out the records' bytes either way,
//! streaming: nothing beyond one lz4 block is held in memory.

use std::io::{self, BufRead, BufReader, Chain, Cursor, Read};

use lz4_flex::frame::FrameDecoder;

use crate::memray::error::MemrayError;

/// The lz4 frame magic number, as it appears in the file.
pub const LZ4_FRAME_MAGIC: [u8; 4] = [0x04, 0x22, 0x4d, 0x18];
/// The first four bytes of an uncompressed capture (`memray\0`'s start).
const PLAIN_PREFIX: [u8; 4] = *b"memr";

/// The input with the sniffed bytes put back in front.
type Rewound<R> = Chain<Cursor<Vec<u8>>, R>;

/// Counts the compressed bytes an lz4 decoder pulls, so the frame
/// sequence can tell "this frame ended" from "the input ended".
struct CountingReader<R> {
    inner: R,
    consumed: u64,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.consumed = self.consumed.saturating_add(n as u64);
        Ok(n)
    }
}

/// One or more concatenated lz4 frames read as one stream (memray writes
/// one; `cat`-joined captures would hold several).
struct Lz4Frames<R: Read> {
    decoder: FrameDecoder<CountingReader<R>>,
}

impl<R: Read> Read for Lz4Frames<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        let (dst, _) = buf.split_at_mut(n);
        let (src, _) = available.split_at(n);
        dst.copy_from_slice(src);
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for Lz4Frames<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        // An empty answer from the decoder means "a frame ended" when it
        // consumed compressed bytes to say so, and "end of input" when it
        // did not; every retry consumes input, so this ends.
        loop {
            let before = self.decoder.get_ref().consumed;
            if !self.decoder.fill_buf()?.is_empty() {
                return self.decoder.fill_buf();
            }
            if self.decoder.get_ref().consumed == before {
                return Ok(&[]);
            }
        }
    }

    fn consume(&mut self, amt: usize) {
        self.decoder.consume(amt);
    }
}

/// The capture's decoded bytes: plain or lz4-decompressed.
pub struct CaptureStream<R: Read> {
    inner: StreamKind<R>,
}

enum StreamKind<R: Read> {
    Plain(BufReader<Rewound<R>>),
    Lz4(Box<Lz4Frames<Rewound<R>>>),
}

impl<R: Read> CaptureStream<R> {
    /// Sniffs the first bytes of `input`: lz4 frame → decompress; `memr…`
    /// → read as is; anything else is not a memray capture.
    pub fn open(mut input: R) -> Result<Self, MemrayError> {
        let mut head = Vec::with_capacity(4);
        (&mut input)
            .take(4)
            .read_to_end(&mut head)
            .map_err(|source| MemrayError::Io { offset: 0, source })?;
        let is_lz4 = head.as_slice() == LZ4_FRAME_MAGIC;
        let is_plain = head.as_slice() == PLAIN_PREFIX;
        let rewound = Cursor::new(head).chain(input);
        let inner = if is_lz4 {
            StreamKind::Lz4(Box::new(Lz4Frames {
                decoder: FrameDecoder::new(CountingReader {
                    inner: rewound,
                    consumed: 0,
                }),
            }))
        } else if is_plain {
            StreamKind::Plain(BufReader::new(rewound))
        } else {
            return Err(MemrayError::NotMemray);
        };
        Ok(CaptureStream { inner })
    }

    /// Whether the file was lz4-compressed.
    pub fn is_compressed(&self) -> bool {
        matches!(self.inner, StreamKind::Lz4(_))
    }
}

impl<R: Read> Read for CaptureStream<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.inner {
            StreamKind::Plain(r) => r.read(buf),
            StreamKind::Lz4(r) => r.read(buf),
        }
    }
}

impl<R: Read> BufRead for CaptureStream<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        match &mut self.inner {
            StreamKind::Plain(r) => r.fill_buf(),
            StreamKind::Lz4(r) => r.fill_buf(),
        }
    }

    fn consume(&mut self, amt: usize) {
        match &mut self.inner {
            StreamKind::Plain(r) => r.consume(amt),
            StreamKind::Lz4(r) => r.consume(amt),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compress(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut enc = lz4_flex::frame::FrameEncoder::new(&mut out);
        std::io::Write::write_all(&mut enc, data).unwrap();
        enc.finish().unwrap();
        out
    }

    fn read_all(bytes: &[u8]) -> Result<Vec<u8>, MemrayError> {
        let mut s = CaptureStream::open(bytes)?;
        let mut out = Vec::new();
        s.read_to_end(&mut out)
            .map_err(|source| MemrayError::Io { offset: 0, source })?;
        Ok(out)
    }

    #[test]
    fn plain_and_compressed_give_the_same_bytes() {
        let data = b"memray\0 some records".repeat(50);
        assert_eq!(read_all(&data).unwrap(), data);
        assert_eq!(read_all(&compress(&data)).unwrap(), data);
        assert!(
            CaptureStream::open(&compress(&data)[..])
                .unwrap()
                .is_compressed()
        );
    }

    #[test]
    fn concatenated_frames_are_one_stream() {
        let mut joined = compress(b"memray\0first-");
        joined.extend(compress(b""));
        joined.extend(compress(b"second"));
        assert_eq!(read_all(&joined).unwrap(), b"memray\0first-second");
    }

    #[test]
    fn other_magic_and_short_inputs_are_not_memray() {
        for bad in [&b""[..], b"mem", b"PK\x03\x04rest", b"\x04\x22\x4d"] {
            assert!(matches!(
                CaptureStream::open(bad),
                Err(MemrayError::NotMemray)
            ));
        }
    }
}
