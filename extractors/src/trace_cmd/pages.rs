//! One ftrace ring-buffer page: its header and the records in it.
//!
//! trace-cmd copies the kernel's per-CPU ring-buffer pages verbatim. A
//! page starts with a 64-bit timestamp and a `long` commit word (the data
//! length in its low 27 bits, bit 31 "events were lost before this page",
//! bit 30 "and their count is stored after the data"). The data is a run of
//! 4-byte event headers (`type_len`:5, `time_delta`:27; bit order by
//! endianness) each followed by an array: 1–28 is a record of `type_len`×4
//! bytes, 0 a record whose length is the first array word, 29 padding, 30
//! a time extend, 31 an absolute timestamp. This module walks that without
//! trusting any length.

use crate::kernel_events::endian_reader::Endian;
use crate::kernel_events::tracing_data::PageHeaderLayout;

const COMMIT_MASK: u64 = (1 << 27) - 1;
const MISSED_EVENTS: u64 = 1 << 31;
const MISSED_STORED: u64 = 1 << 30;
const TYPE_DATA_MAX: u32 = 28;
const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;
/// An absolute timestamp lacks the top 5 bits; they come from the running time.
const TS_MSB: u64 = 0xf8 << 56;
const TS_SHIFT: u32 = 27;

/// Events the kernel dropped before a page (ring buffer full).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missed {
    None,
    /// Some were lost; the kernel did not store how many.
    Unknown,
    Count(u64),
}

/// A page's header, checked against the page's length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageHeader {
    pub timestamp: u64,
    /// Start of the data in the page.
    pub data_start: usize,
    /// End of the committed data in the page.
    pub data_end: usize,
    pub missed: Missed,
}

/// Why a page or a record in it could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageError {
    /// The page is shorter than its header.
    ShortHeader { len: usize },
    /// The commit says more data than the page holds.
    CommitPastEnd { commit: u64, room: usize },
    /// A record header or its length points past the committed data.
    RecordPastEnd { at: usize },
    /// A type-0 record announces fewer than 4 bytes.
    BadLength { at: usize, length: u32 },
}

impl std::fmt::Display for PageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PageError::ShortHeader { len } => {
                write!(f, "page of {len} bytes has no room for its header")
            }
            PageError::CommitPastEnd { commit, room } => {
                write!(f, "commit of {commit} bytes in a page with room for {room}")
            }
            PageError::RecordPastEnd { at } => {
                write!(f, "record at data offset {at} runs past the commit")
            }
            PageError::BadLength { at, length } => {
                write!(f, "record at data offset {at} has length {length}")
            }
        }
    }
}

/// Reads and checks the header of `page`.
pub fn read_page_header(
    page: &[u8],
    layout: &PageHeaderLayout,
    endian: Endian,
) -> Result<PageHeader, PageError> {
    let short = PageError::ShortHeader { len: page.len() };
    let timestamp = endian
        .uint_at(page, layout.timestamp_offset, 8)
        .ok_or(short.clone())?;
    let commit = endian
        .uint_at(page, layout.commit_offset, layout.commit_size)
        .ok_or(short.clone())?;
    if layout.data_offset > page.len() {
        return Err(short);
    }
    let room = page.len().saturating_sub(layout.data_offset);
    let size = commit & COMMIT_MASK;
    let data_end = usize::try_from(size)
        .ok()
        .and_then(|s| layout.data_offset.checked_add(s))
        .filter(|&end| end <= page.len())
        .ok_or(PageError::CommitPastEnd { commit: size, room })?;
    let missed = if commit & MISSED_EVENTS == 0 {
        Missed::None
    } else if commit & MISSED_STORED != 0 {
        match endian.uint_at(page, data_end, layout.commit_size) {
            Some(n) => Missed::Count(n),
            None => Missed::Unknown,
        }
    } else {
        Missed::Unknown
    };
    Ok(PageHeader {
        timestamp,
        data_start: layout.data_offset,
        data_end,
        missed,
    })
}

/// Where a walk over one page's records stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordCursor {
    /// Next event header, as an offset in the page.
    pub pos: usize,
    pub end: usize,
    /// The running timestamp (raw clock units).
    pub ts: u64,
}

impl RecordCursor {
    pub fn new(header: &PageHeader) -> Self {
        RecordCursor {
            pos: header.data_start,
            end: header.data_end,
            ts: header.timestamp,
        }
    }
}

/// A record's timestamp and where its payload lies in the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawRecord {
    pub ts: u64,
    pub start: usize,
    pub len: usize,
}

/// The next record of the page, `Ok(None)` at the end of its data.
/// Padding and time events only move the clock. After an error the cursor
/// is at the end: the rest of the page cannot be framed.
pub fn next_record(
    page: &[u8],
    cursor: &mut RecordCursor,
    endian: Endian,
) -> Result<Option<RawRecord>, PageError> {
    let result = step(page, cursor, endian);
    if result.is_err() {
        cursor.pos = cursor.end;
    }
    result
}

fn step(page: &[u8], c: &mut RecordCursor, endian: Endian) -> Result<Option<RawRecord>, PageError> {
    while c.pos < c.end {
        let at = c.pos;
        let past = PageError::RecordPastEnd { at };
        let word = read_u32(page, at, c.end, endian).ok_or(past.clone())?;
        let (type_len, delta) = if endian.is_big() {
            (word >> 27, word & ((1 << 27) - 1))
        } else {
            (word & 0x1f, word >> 5)
        };
        let array_at = at.checked_add(4).ok_or(past.clone())?;
        match type_len {
            TYPE_PADDING => {
                c.ts = c.ts.wrapping_add(u64::from(delta));
                if delta == 0 {
                    // The kernel's "null" padding: the rest of the page is unused.
                    c.pos = c.end;
                    return Ok(None);
                }
                let len = read_u32(page, array_at, c.end, endian).ok_or(past.clone())?;
                c.pos = advance(array_at, len as usize, c.end).ok_or(past)?;
            }
            TYPE_TIME_EXTEND | TYPE_TIME_STAMP => {
                let high = read_u32(page, array_at, c.end, endian).ok_or(past.clone())?;
                let value = (u64::from(high) << TS_SHIFT) | u64::from(delta);
                c.ts = if type_len == TYPE_TIME_STAMP {
                    value | (c.ts & TS_MSB)
                } else {
                    c.ts.wrapping_add(value)
                };
                c.pos = advance(array_at, 4, c.end).ok_or(past)?;
            }
            0 => {
                let length = read_u32(page, array_at, c.end, endian).ok_or(past.clone())?;
                if length < 4 {
                    return Err(PageError::BadLength { at, length });
                }
                let payload_len = (length as usize - 4).checked_add(3).ok_or(past.clone())? & !3;
                let start = array_at.checked_add(4).ok_or(past.clone())?;
                let next = advance(start, payload_len, c.end).ok_or(past)?;
                c.ts = c.ts.wrapping_add(u64::from(delta));
                c.pos = next;
                return Ok(Some(RawRecord {
                    ts: c.ts,
                    start,
                    len: payload_len,
                }));
            }
            n => {
                debug_assert!(n <= TYPE_DATA_MAX);
                let len = n as usize * 4;
                let next = advance(array_at, len, c.end).ok_or(past)?;
                c.ts = c.ts.wrapping_add(u64::from(delta));
                c.pos = next;
                return Ok(Some(RawRecord {
                    ts: c.ts,
                    start: array_at,
                    len,
                }));
            }
        }
    }
    Ok(None)
}

fn read_u32(page: &[u8], at: usize, end: usize, endian: Endian) -> Option<u32> {
    if at.checked_add(4)? > end {
        return None;
    }
    endian.uint_at(page, at, 4).map(|v| v as u32)
}

fn advance(from: usize, len: usize, end: usize) -> Option<usize> {
    from.checked_add(len).filter(|&next| next <= end)
}

#[cfg(test)]
#[path = "pages_tests.rs"]
pub(crate) mod tests;
