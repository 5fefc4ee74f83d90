//! The compression of trace-cmd v7 sections and ring-buffer chunks.
//!
//! A v7 header names the algorithm (`zstd`, `zlib` or `none`). Compressed
//! metadata sections hold one block, per-CPU data a count of chunks; both
//! are `u32 compressed size, u32 uncompressed size, bytes`. zstd blocks are
//! whole zstd frames, zlib blocks zlib streams (`compress2`). A block's
//! output is capped at its announced size and at [`MAX_BLOCK_BYTES`].

use std::io::{self, Read, Seek};

use super::errors::TraceCmdError;
use super::file_source::FileSource;
use crate::kernel_events::endian_reader::Endian;

/// Largest uncompressed block accepted (trace-cmd writes chunks of a few
/// pages and sections of a few MiB).
pub const MAX_BLOCK_BYTES: u32 = 256 << 20;

/// How the file's compressed parts are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    None,
    Zstd,
    Zlib,
}

impl Codec {
    /// The codec a v7 header names.
    pub fn from_header(name: &str, version: &str) -> Result<Codec, TraceCmdError> {
        match name {
            "none" | "" => Ok(Codec::None),
            "zstd" => Ok(Codec::Zstd),
            "zlib" => Ok(Codec::Zlib),
            _ => Err(TraceCmdError::UnsupportedCompression {
                name: name.to_string(),
                version: version.to_string(),
            }),
        }
    }

    /// Decompresses one block to exactly `expected` bytes.
    pub fn decompress(self, input: &[u8], expected: u32) -> io::Result<Vec<u8>> {
        if expected > MAX_BLOCK_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a block of {expected} bytes is over the {MAX_BLOCK_BYTES}-byte limit"),
            ));
        }
        // One byte more than announced, to tell a longer stream apart.
        let limit = u64::from(expected) + 1;
        let mut out = Vec::new();
        match self {
            Codec::None => out.extend_from_slice(input.get(..expected as usize).unwrap_or(input)),
            Codec::Zstd => {
                zstd::stream::read::Decoder::new(input)?
                    .take(limit)
                    .read_to_end(&mut out)?;
            }
            Codec::Zlib => {
                flate2::read::ZlibDecoder::new(input)
                    .take(limit)
                    .read_to_end(&mut out)?;
            }
        }
        if out.len() != expected as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "a block decompressed to {} bytes, its header says {expected}",
                    out.len()
                ),
            ));
        }
        Ok(out)
    }
}

/// A block's sizes, read from its 8-byte header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockHeader {
    pub compressed: u32,
    pub uncompressed: u32,
}

impl BlockHeader {
    /// Bytes the block takes in the file, header included.
    pub fn file_len(&self) -> u64 {
        8 + u64::from(self.compressed)
    }
}

pub fn read_block_header<R: Read + Seek>(
    source: &mut FileSource<R>,
    offset: u64,
    endian: Endian,
) -> io::Result<BlockHeader> {
    let b = source.read_at(offset, 8)?;
    let word = |i: usize| -> u32 {
        let mut a = [0u8; 4];
        if let Some(src) = b.get(i..i + 4) {
            a.copy_from_slice(src);
        }
        endian.u32(a)
    };
    Ok(BlockHeader {
        compressed: word(0),
        uncompressed: word(4),
    })
}

/// The block at `offset`, decompressed; also its length in the file.
pub fn read_block<R: Read + Seek>(
    source: &mut FileSource<R>,
    offset: u64,
    endian: Endian,
    codec: Codec,
    what: &'static str,
) -> Result<(Vec<u8>, u64), TraceCmdError> {
    let header =
        read_block_header(source, offset, endian).map_err(TraceCmdError::io(what, offset))?;
    let data_at = offset.saturating_add(8);
    let packed = source
        .read_at(data_at, u64::from(header.compressed))
        .map_err(TraceCmdError::io(what, data_at))?;
    let data = codec
        .decompress(&packed, header.uncompressed)
        .map_err(|e| TraceCmdError::corrupt(what, data_at, e.to_string()))?;
    Ok((data, header.file_len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Cursor, Write};

    #[test]
    fn zstd_and_zlib_blocks_round_trip_and_sizes_are_checked() {
        let text = b"sched_switch sched_switch sched_switch".repeat(50);
        let zstd = zstd::bulk::compress(&text, 3).unwrap_or_default();
        let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        let _ = enc.write_all(&text);
        let zlib = enc.finish().unwrap_or_default();
        let n = text.len() as u32;
        for (codec, packed) in [(Codec::Zstd, &zstd), (Codec::Zlib, &zlib)] {
            assert_eq!(codec.decompress(packed, n).ok().as_deref(), Some(&text[..]));
            assert!(
                codec.decompress(packed, n - 1).is_err(),
                "longer than announced"
            );
            assert!(
                codec.decompress(packed, n + 1).is_err(),
                "shorter than announced"
            );
            assert!(codec.decompress(&packed[..packed.len() / 2], n).is_err());
            assert!(codec.decompress(packed, u32::MAX).is_err());
        }
        assert!(matches!(
            Codec::from_header("lz4", "1"),
            Err(TraceCmdError::UnsupportedCompression { .. })
        ));

        let mut file = Vec::new();
        file.extend((zstd.len() as u32).to_le_bytes());
        file.extend(n.to_le_bytes());
        file.extend(&zstd);
        let mut source = match FileSource::new(Cursor::new(file.clone())) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        let got = read_block(&mut source, 0, Endian::Little, Codec::Zstd, "a test block");
        assert_eq!(got.ok(), Some((text.clone(), file.len() as u64)));
        let mut short = FileSource::new(Cursor::new(file[..file.len() - 1].to_vec())).ok();
        let got = short
            .as_mut()
            .map(|s| read_block(s, 0, Endian::Little, Codec::Zstd, "a test block"));
        assert!(matches!(got, Some(Err(TraceCmdError::Truncated { .. }))));
    }
}
