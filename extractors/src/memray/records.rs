//! The record stream of an all-allocations capture (the default), one
//! record at a time, exactly as memray's `StreamingRecordWriter` encodes
//! it: a type byte whose high bits may carry flags (allocation: pointer
//! cache slot and allocator; frame push: entry flag; frame pop: count;
//! object: cache slot and created flag), then a body whose integers are
//! often deltas against the previous record's. The decoder keeps that
//! delta state and the 15-slot recent-address cache in step with the
//! writer's; it does not interpret stacks (see `reader.rs`).

use std::io::BufRead;

use crate::memray::error::MemrayError;
use crate::memray::events::{Allocator, AllocatorKind};
use crate::memray::wire::CaptureBytes;

/// The most segments one image may list (ELF program headers fit u16).
const MAX_SEGMENTS: u64 = 1 << 16;
/// Record type bytes without flags (memray's `RecordType`).
const TRAILER: u8 = 1;
const MEMORY_RECORD: u8 = 2;
pub(crate) const NATIVE_TRACE_INDEX: u8 = 5;
pub(crate) const MEMORY_MAP_START: u8 = 6;
pub(crate) const SEGMENT_HEADER: u8 = 7;
const SEGMENT: u8 = 8;
pub(crate) const THREAD_RECORD: u8 = 10;
pub(crate) const CONTEXT_SWITCH: u8 = 12;
pub(crate) const CODE_OBJECT: u8 = 14;

/// One loaded segment of an image: `[load_address + vaddr, … + memsz)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub vaddr: u64,
    pub memsz: u64,
}

/// A loaded executable or shared library and its segments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRecord {
    pub filename: String,
    /// The load bias: what memray adds to each segment's `vaddr`.
    pub load_address: u64,
    pub segments: Vec<Segment>,
}

/// A Python code object: names, first line and CPython's line table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeObjectRecord {
    pub id: u64,
    pub function: String,
    pub filename: String,
    pub first_line: i32,
    /// `co_linetable` (3.10+) or `co_lnotab` (older), as the interpreter had it.
    pub linetable: Vec<u8>,
}

/// One record of an all-allocations stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireRecord {
    /// The writer's end marker.
    Trailer,
    /// Zero bytes up to the end (an uncompressed capture of a killed process).
    Padding {
        zero_bytes: u64,
    },
    Allocation {
        address: u64,
        /// 0 for simple deallocators (memray does not write it).
        size: u64,
        allocator: Allocator,
        /// 0: none (also always 0 for simple deallocators).
        native_frame_id: u64,
    },
    /// RSS sample; time in ms since the header's start time.
    MemoryRecord {
        rss: u64,
        ms_since_start: u64,
    },
    ContextSwitch {
        tid: u64,
    },
    FramePush {
        code_object_id: u64,
        instruction_offset: i32,
        is_entry_frame: bool,
    },
    FramePop {
        count: u8,
    },
    CodeObject(CodeObjectRecord),
    /// Native stack node number (1 + count of earlier ones): `ip` called
    /// from node `parent` (0: outermost).
    NativeFrame {
        ip: u64,
        parent: u64,
    },
    /// The image list is about to be re-sent (a new generation starts).
    MemoryMapStart,
    Image(ImageRecord),
    ThreadName(String),
    Object {
        address: u64,
        created: bool,
        native_frame_id: u64,
    },
}

/// The writer's running state, mirrored (memray's `DeltaEncodedFields`
/// plus the pointer cache).
#[derive(Debug, Default)]
pub struct RecordDecoder {
    native_traces: bool,
    instruction_pointer: u64,
    data_pointer: u64,
    native_frame_id: u64,
    code_first_line: i32,
    recent_addresses: [u64; 15],
}

impl RecordDecoder {
    pub fn new(native_traces: bool) -> Self {
        RecordDecoder {
            native_traces,
            ..Default::default()
        }
    }

    /// The next record, or `None` when the input ends between records.
    pub fn next<R: BufRead>(
        &mut self,
        input: &mut CaptureBytes<R>,
    ) -> Result<Option<WireRecord>, MemrayError> {
        let Some(type_byte) = input.try_u8()? else {
            return Ok(None);
        };
        let record = if type_byte & 0x80 != 0 {
            self.allocation(input, type_byte & 0x7f)?
        } else if type_byte & 0x40 != 0 {
            WireRecord::FramePush {
                is_entry_frame: type_byte & 1 != 0,
                code_object_id: input.varint("a frame push's code object id")?,
                instruction_offset: input.signed_varint("a frame push's instruction offset")?
                    as i32,
            }
        } else if type_byte & 0x20 != 0 {
            self.object(input, type_byte & 0x1f)?
        } else if type_byte & 0x10 != 0 {
            WireRecord::FramePop {
                count: (type_byte & 0x0f) + 1,
            }
        } else {
            match type_byte {
                0 => WireRecord::Padding {
                    zero_bytes: input.rest_is_zero()?.saturating_add(1),
                },
                TRAILER => WireRecord::Trailer,
                MEMORY_RECORD => WireRecord::MemoryRecord {
                    rss: input.varint("a memory record's RSS")?,
                    ms_since_start: input.varint("a memory record's time")?,
                },
                CONTEXT_SWITCH => WireRecord::ContextSwitch {
                    tid: input.u64_le("a context switch's thread id")?,
                },
                CODE_OBJECT => WireRecord::CodeObject(self.code_object(input)?),
                NATIVE_TRACE_INDEX => {
                    let (ip, parent) = self.native_frame(input)?;
                    WireRecord::NativeFrame { ip, parent }
                }
                MEMORY_MAP_START => WireRecord::MemoryMapStart,
                SEGMENT_HEADER => WireRecord::Image(read_image(input)?),
                THREAD_RECORD => WireRecord::ThreadName(input.cstring("a thread name")?),
                other => {
                    return Err(MemrayError::corrupt(
                        input.offset().saturating_sub(1),
                        format!("unknown record type {other}"),
                    ));
                }
            }
        };
        Ok(Some(record))
    }

    /// A 4-bit cache slot: 0–14 reuse a recent address, 15 reads a new one
    /// (a delta of `address >> 3`) and pushes it to the front.
    fn address<R: BufRead>(
        &mut self,
        input: &mut CaptureBytes<R>,
        slot: u8,
    ) -> Result<u64, MemrayError> {
        if let Some(&cached) = self.recent_addresses.get(usize::from(slot)) {
            return Ok(cached);
        }
        let shifted = input.delta_u64(&mut self.data_pointer, "an address")?;
        let address = shifted << 3;
        self.recent_addresses.rotate_right(1);
        if let Some(front) = self.recent_addresses.first_mut() {
            *front = address;
        }
        Ok(address)
    }

    fn allocation<R: BufRead>(
        &mut self,
        input: &mut CaptureBytes<R>,
        flags: u8,
    ) -> Result<WireRecord, MemrayError> {
        let address = self.address(input, (flags >> 3) & 0x0f)?;
        let id = match flags & 7 {
            0 => input.u8("an allocator id")?,
            id => id,
        };
        let Some(allocator) = Allocator::from_id(id) else {
            return Err(MemrayError::corrupt(
                input.offset(),
                format!("unknown allocator id {id}"),
            ));
        };
        let simple_free = allocator.kind() == AllocatorKind::SimpleDeallocator;
        let native_frame_id = if self.native_traces && !simple_free {
            input.delta_u64(&mut self.native_frame_id, "an allocation's native stack id")?
        } else {
            0
        };
        let size = if simple_free {
            0
        } else {
            input.varint("an allocation's size")?
        };
        Ok(WireRecord::Allocation {
            address,
            size,
            allocator,
            native_frame_id,
        })
    }

    fn object<R: BufRead>(
        &mut self,
        input: &mut CaptureBytes<R>,
        flags: u8,
    ) -> Result<WireRecord, MemrayError> {
        let created = flags & 1 != 0;
        let address = self.address(input, (flags >> 1) & 0x0f)?;
        let native_frame_id = if self.native_traces && created {
            input.delta_u64(&mut self.native_frame_id, "an object's native stack id")?
        } else {
            0
        };
        Ok(WireRecord::Object {
            address,
            created,
            native_frame_id,
        })
    }

    /// A code object body (shared with aggregated captures).
    pub(crate) fn code_object<R: BufRead>(
        &mut self,
        input: &mut CaptureBytes<R>,
    ) -> Result<CodeObjectRecord, MemrayError> {
        let id = input.varint("a code object's id")?;
        let function = input.cstring("a code object's function name")?;
        let filename = input.cstring("a code object's file name")?;
        let delta = input.signed_varint("a code object's first line")?;
        self.code_first_line = i64::from(self.code_first_line).wrapping_add(delta) as i32;
        let len = input.varint("a code object's line table length")?;
        let linetable = input.blob(len, "a code object's line table")?;
        Ok(CodeObjectRecord {
            id,
            function,
            filename,
            first_line: self.code_first_line,
            linetable,
        })
    }

    /// A native stack node body (shared with aggregated captures).
    pub(crate) fn native_frame<R: BufRead>(
        &mut self,
        input: &mut CaptureBytes<R>,
    ) -> Result<(u64, u64), MemrayError> {
        let ip = input.delta_u64(&mut self.instruction_pointer, "a native frame's ip")?;
        let parent = input.delta_u64(&mut self.native_frame_id, "a native frame's parent")?;
        Ok((ip, parent))
    }
}

/// An image: file name, segment count, load address, then its segments,
/// each behind its own SEGMENT type byte.
pub(crate) fn read_image<R: BufRead>(
    input: &mut CaptureBytes<R>,
) -> Result<ImageRecord, MemrayError> {
    let filename = input.cstring("an image's file name")?;
    let count = input.varint("an image's segment count")?;
    if count > MAX_SEGMENTS {
        return Err(MemrayError::corrupt(
            input.offset(),
            format!("an image lists {count} segments"),
        ));
    }
    let load_address = input.u64_le("an image's load address")?;
    let mut segments = Vec::with_capacity(count.min(64) as usize);
    for _ in 0..count {
        let type_byte = input.u8("a segment record")?;
        if type_byte != SEGMENT {
            return Err(MemrayError::corrupt(
                input.offset().saturating_sub(1),
                format!("record type {type_byte} inside an image's segment list"),
            ));
        }
        segments.push(Segment {
            vaddr: input.u64_le("a segment's address")?,
            memsz: input.varint("a segment's size")?,
        });
    }
    Ok(ImageRecord {
        filename,
        load_address,
        segments,
    })
}

#[cfg(test)]
#[path = "records_tests.rs"]
mod tests;
