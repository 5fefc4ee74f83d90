//! One CPU's records, read page by page from the file.
//!
//! A CPU's data is a run of ring-buffer pages, stored plain or (v7) as
//! compressed chunks of whole pages. A `CpuStream` holds one block (a
//! chunk, or up to 64 plain pages) and the position in it, and loads the
//! next block when the current one is used up; so merging CPUs needs one
//! block per CPU in memory, never a whole CPU's data. Damage ends the page
//! or the CPU it is in, counted in the summary.

use std::io::{Read, Seek};

use super::compression::{Codec, read_block_header};
use super::file_source::FileSource;
use super::options::CpuData;
use super::pages::{Missed, RawRecord, RecordCursor, next_record, read_page_header};
use super::summary::TraceCmdSummary;
use crate::kernel_events::endian_reader::Endian;
use crate::kernel_events::tracing_data::PageHeaderLayout;

/// Plain pages read at once.
const PLAIN_BLOCK_PAGES: u64 = 64;

/// How pages are laid out, the same for every CPU of a buffer.
#[derive(Debug, Clone, Copy)]
pub struct PageContext {
    pub layout: PageHeaderLayout,
    pub endian: Endian,
    pub page_size: usize,
    pub codec: Codec,
}

#[derive(Debug, Clone, Copy)]
enum Supply {
    Plain {
        next: u64,
        end: u64,
    },
    /// The chunk count at `at` is still to be read.
    ChunkCount {
        at: u64,
        end: u64,
    },
    Chunked {
        next: u64,
        end: u64,
        left: u32,
    },
    Done,
}

pub struct CpuStream {
    pub cpu: u32,
    supply: Supply,
    block: Vec<u8>,
    next_page: usize,
    /// The page being walked: its range in `block` and the cursor in it.
    page: Option<(usize, usize, RecordCursor)>,
    /// The next record, its payload range relative to `block`.
    pending: Option<RawRecord>,
}

impl CpuStream {
    /// A stream over `data`, whose end is clipped to the file (with a note).
    pub fn new(
        data: CpuData,
        compressed: bool,
        file_len: u64,
        summary: &mut TraceCmdSummary,
    ) -> Self {
        let mut end = data.offset.saturating_add(data.size);
        if end > file_len {
            summary.note(format!(
                "CPU {} data ends at {end}, past the end of the {file_len}-byte file (truncated?)",
                data.cpu
            ));
            end = file_len;
        }
        let supply = match (data.size, compressed) {
            (0, _) => Supply::Done,
            (_, false) => Supply::Plain {
                next: data.offset,
                end,
            },
            // trace-cmd 3.1 records a compressed size 4 bytes short (the
            // chunk count is left out) and its reader ignores it: the
            // chunk headers, bounded by the file, delimit the data.
            (_, true) => Supply::ChunkCount {
                at: data.offset,
                end: file_len,
            },
        };
        CpuStream {
            cpu: data.cpu,
            supply,
            block: Vec::new(),
            next_page: 0,
            page: None,
            pending: None,
        }
    }

    /// The next record's timestamp (raw clock), if there is one.
    pub fn pending_ts(&self) -> Option<u64> {
        self.pending.map(|r| r.ts)
    }

    /// The next record's payload.
    pub fn pending_payload(&self) -> Option<&[u8]> {
        let r = self.pending?;
        self.block.get(r.start..r.start.checked_add(r.len)?)
    }

    /// Moves to the next record, loading pages and blocks as needed.
    pub fn advance<R: Read + Seek>(
        &mut self,
        source: &mut FileSource<R>,
        ctx: &PageContext,
        summary: &mut TraceCmdSummary,
    ) {
        self.pending = None;
        loop {
            if let Some((start, end, cursor)) = self.page.as_mut() {
                let page = self.block.get(*start..*end).unwrap_or_default();
                match next_record(page, cursor, ctx.endian) {
                    Ok(Some(rec)) => {
                        self.pending = Some(RawRecord {
                            start: rec.start.saturating_add(*start),
                            ..rec
                        });
                        return;
                    }
                    Ok(None) => self.page = None,
                    Err(e) => {
                        summary.page_errors += 1;
                        summary.note(format!("CPU {}: {e}", self.cpu));
                        self.page = None;
                    }
                }
                continue;
            }
            if self.next_page < self.block.len() {
                self.open_page(ctx, summary);
                continue;
            }
            match self.load_block(source, ctx) {
                Ok(true) => {}
                Ok(false) => return,
                Err(e) => {
                    summary.page_errors += 1;
                    summary.note(format!(
                        "CPU {}: {e}; its remaining data is skipped",
                        self.cpu
                    ));
                    self.supply = Supply::Done;
                    return;
                }
            }
        }
    }

    fn open_page(&mut self, ctx: &PageContext, summary: &mut TraceCmdSummary) {
        let start = self.next_page;
        let end = start.saturating_add(ctx.page_size).min(self.block.len());
        self.next_page = end;
        let page = self.block.get(start..end).unwrap_or_default();
        match read_page_header(page, &ctx.layout, ctx.endian) {
            Ok(header) => {
                summary.pages += 1;
                match header.missed {
                    Missed::None => {}
                    Missed::Unknown => summary.pages_with_unknown_loss += 1,
                    Missed::Count(n) => summary.lost_events = summary.lost_events.saturating_add(n),
                }
                self.page = Some((start, end, RecordCursor::new(&header)));
            }
            Err(e) => {
                summary.page_errors += 1;
                summary.note(format!("CPU {}: {e}", self.cpu));
            }
        }
    }

    /// Loads the next block; `Ok(false)` when the CPU's data is used up.
    fn load_block<R: Read + Seek>(
        &mut self,
        source: &mut FileSource<R>,
        ctx: &PageContext,
    ) -> Result<bool, String> {
        self.next_page = 0;
        self.block = Vec::new();
        match self.supply {
            Supply::Done => Ok(false),
            Supply::Plain { next, end } => {
                if next >= end {
                    self.supply = Supply::Done;
                    return Ok(false);
                }
                let len = (end - next).min(PLAIN_BLOCK_PAGES.saturating_mul(ctx.page_size as u64));
                self.block = source
                    .read_at(next, len)
                    .map_err(|e| format!("reading pages at offset {next}: {e}"))?;
                self.supply = Supply::Plain {
                    next: next.saturating_add(len),
                    end,
                };
                Ok(true)
            }
            Supply::ChunkCount { at, end } => {
                let count = source
                    .read_at(at, 4)
                    .map_err(|e| format!("reading the chunk count at offset {at}: {e}"))?;
                let count = ctx.endian.uint_at(&count, 0, 4).unwrap_or(0) as u32;
                self.supply = Supply::Chunked {
                    next: at.saturating_add(4),
                    end,
                    left: count,
                };
                Ok(true)
            }
            Supply::Chunked { next, end, left } => {
                if left == 0 {
                    self.supply = Supply::Done;
                    return Ok(false);
                }
                let header = read_block_header(source, next, ctx.endian)
                    .map_err(|e| format!("reading a chunk header at offset {next}: {e}"))?;
                let after = next.saturating_add(header.file_len());
                if after > end {
                    return Err(format!(
                        "the chunk at offset {next} runs past the CPU's data"
                    ));
                }
                let packed = source
                    .read_at(next.saturating_add(8), u64::from(header.compressed))
                    .map_err(|e| format!("reading the chunk at offset {next}: {e}"))?;
                self.block = ctx
                    .codec
                    .decompress(&packed, header.uncompressed)
                    .map_err(|e| format!("the chunk at offset {next}: {e}"))?;
                self.supply = Supply::Chunked {
                    next: after,
                    end,
                    left: left - 1,
                };
                Ok(true)
            }
        }
    }
}
