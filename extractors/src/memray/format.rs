//! memray in the format registry. A capture is the `memray\0` magic, or
//! (memray's default) an lz4 frame (`04 22 4d 18`) whose decompressed
//! bytes start with it: the sniffer decompresses only the head's first
//! block. Streamed: records are read front to back, lz4 block by block.

use std::io::Read;

use crate::format_descriptor::{Extractor, Format, Reading};
use crate::memray::header::MEMRAY_MAGIC;
use crate::memray::source::LZ4_FRAME_MAGIC;
use crate::sniff::{Head, Sniffed};

use super::extract::{MEMRAY_EXTRACTOR_NAME, MEMRAY_EXTRACTOR_VERSION, extract_memray};

pub static FORMAT: Format = Format {
    kind: crate::format_kind::FormatKind::Memray,
    aliases: &["memray_bin"],
    description: "memray captures (`memray run`, header versions 12 and 13 = memray 1.19–1.20; lz4 or --no-compress; --native; --aggregate) → allocation sites as stacks under memory.alloc_bytes / memory.inuse_bytes (still allocated at the end: memray's leaks) / memory.peak_bytes (live at the heap's high-water mark), with their allocation counts; RSS and heap over time as mem.rss / mem.heap counters",
    sniff: Some(sniff),
    reading: Reading::Stream(
        Extractor {
            name: MEMRAY_EXTRACTOR_NAME,
            version: MEMRAY_EXTRACTOR_VERSION,
        },
        extract_memray,
    ),
    measurements: false,
};

/// How far into an lz4 frame the first literals of its first block can
/// start: the frame descriptor (at most 19 bytes), the block size, the
/// first token and its literal-length bytes (one per 255 literals of a
/// 64 KiB block).
const FIRST_LITERALS_WITHIN: usize = 512;

fn sniff(head: &Head<'_>) -> Option<Sniffed> {
    if head.bytes.starts_with(&MEMRAY_MAGIC) {
        return Sniffed::certain(Some("memray"), "memray capture magic `memray\\0`");
    }
    if !head.bytes.starts_with(&LZ4_FRAME_MAGIC) {
        return None;
    }
    let mut decoded = Vec::with_capacity(MEMRAY_MAGIC.len());
    let read = lz4_flex::frame::FrameDecoder::new(head.bytes)
        .take(MEMRAY_MAGIC.len() as u64)
        .read_to_end(&mut decoded);
    if read.is_ok() && decoded.starts_with(&MEMRAY_MAGIC) {
        return Sniffed::certain(
            Some("memray"),
            "an lz4 frame whose decompressed bytes start with `memray\\0`",
        );
    }
    // The head cut the first block: lz4 starts a block with literals, so
    // the magic is still visible right after the block header.
    let window = head
        .bytes
        .get(..head.bytes.len().min(FIRST_LITERALS_WITHIN))?;
    window
        .windows(MEMRAY_MAGIC.len())
        .any(|w| w == MEMRAY_MAGIC)
        .then(|| {
            Sniffed::likely(
                Some("memray"),
                "an lz4 frame whose first literals are `memray\\0`",
            )
        })?
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memray::test_capture::CaptureWriter;

    fn sniffed(bytes: &[u8]) -> Option<Sniffed> {
        sniff(&Head::new(bytes, None))
    }

    #[test]
    fn plain_and_lz4_captures_are_certain_and_other_lz4_is_not_memray() {
        let mut w = CaptureWriter::all_allocations(false);
        w.trailer();
        let plain = sniffed(&w.bytes).expect("plain");
        assert_eq!(plain.certainty, crate::sniff::Certainty::Certain);
        let lz4 = sniffed(&w.lz4()).expect("lz4");
        assert_eq!(lz4.certainty, crate::sniff::Certainty::Certain);
        assert_eq!(lz4.producer, Some("memray"));

        let mut other = Vec::new();
        let mut enc = lz4_flex::frame::FrameEncoder::new(&mut other);
        std::io::Write::write_all(&mut enc, b"not a capture at all").expect("write");
        enc.finish().expect("finish");
        assert!(sniffed(&other).is_none());
        assert!(sniffed(b"memra").is_none());
        assert!(sniffed(&LZ4_FRAME_MAGIC).is_none());
    }

    #[test]
    fn a_head_that_cuts_the_first_block_is_likely() {
        let mut w = CaptureWriter::all_allocations(false);
        // Incompressible bytes make the first block as long as it gets.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..70_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            w.bytes.push(x as u8);
        }
        let lz4 = w.lz4();
        let cut = &lz4[..1024];
        let s = sniffed(cut).expect("cut head");
        assert_eq!(s.certainty, crate::sniff::Certainty::Likely);
    }
}
