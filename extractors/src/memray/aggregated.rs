//! The record stream of an aggregated capture (`memray run --aggregate`,
//! memray's `AggregatingRecordWriter`): everything is written when
//! tracking stops — RSS snapshots with the heap size, thread names, image
//! lists, code objects, native stack nodes, the Python frame and stack
//! tables, surviving objects, then one record per allocation location with
//! its totals at the high-water mark and at exit. Type bytes carry no flags
//! here; the numbering is memray's `AggregatedRecordType`. This file
//! decodes those records and turns them into the reader's events.

use std::io::BufRead;

use crate::memray::error::MemrayError;
use crate::memray::events::{AggregatedSite, Allocator, MemrayEvent};
use crate::memray::reader::{Step, StreamContext, bad_native_parent};
use crate::memray::records::{
    CODE_OBJECT, CONTEXT_SWITCH, CodeObjectRecord, ImageRecord, MEMORY_MAP_START,
    NATIVE_TRACE_INDEX, RecordDecoder, SEGMENT_HEADER, THREAD_RECORD, read_image,
};
use crate::memray::stacks::PythonFrameKey;
use crate::memray::wire::CaptureBytes;

const MEMORY_SNAPSHOT: u8 = 1;
const AGGREGATED_ALLOCATION: u8 = 2;
const PYTHON_TRACE_INDEX: u8 = 3;
const PYTHON_FRAME_INDEX: u8 = 4;
const SURVIVING_OBJECT: u8 = 13;
const AGGREGATED_TRAILER: u8 = 15;

/// memray's `AggregatedAllocation` as stored (a raw 72-byte struct).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AggregatedAllocationRecord {
    pub tid: u64,
    pub allocator: Allocator,
    pub native_frame_id: u64,
    /// Index into the capture's Python stack table.
    pub python_stack: u64,
    pub image_generation: u64,
    pub allocations_at_peak: u64,
    pub allocations_leaked: u64,
    pub bytes_at_peak: u64,
    pub bytes_leaked: u64,
}

/// One record of an aggregated stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AggregatedRecord {
    Trailer,
    Padding {
        zero_bytes: u64,
    },
    MemorySnapshot {
        ms_since_epoch: u64,
        rss: u64,
        heap: u64,
    },
    Allocation(AggregatedAllocationRecord),
    /// Stack node (1 + count of earlier ones): frame `frame_id` called
    /// from node `parent`.
    PythonStackNode {
        frame_id: u64,
        parent: u64,
    },
    /// Frame table entry `frame_id` (they come in order 0, 1, 2, …).
    PythonFrame {
        frame_id: u64,
        code_object_id: u64,
        instruction_offset: i32,
        is_entry_frame: bool,
    },
    NativeFrame {
        ip: u64,
        parent: u64,
    },
    MemoryMapStart,
    Image(ImageRecord),
    ThreadName(String),
    ContextSwitch {
        tid: u64,
    },
    SurvivingObject {
        address: u64,
        native_frame_id: u64,
    },
    CodeObject(CodeObjectRecord),
}

/// Decodes aggregated records, keeping the few deltas they use.
pub struct AggregatedDecoder {
    native_traces: bool,
    shared: RecordDecoder,
}

impl AggregatedDecoder {
    pub fn new(native_traces: bool) -> Self {
        AggregatedDecoder {
            native_traces,
            shared: RecordDecoder::new(native_traces),
        }
    }

    /// The next record, or `None` when the input ends between records.
    pub fn next<R: BufRead>(
        &mut self,
        input: &mut CaptureBytes<R>,
    ) -> Result<Option<AggregatedRecord>, MemrayError> {
        let Some(type_byte) = input.try_u8()? else {
            return Ok(None);
        };
        let record = match type_byte {
            0 => AggregatedRecord::Padding {
                zero_bytes: input.rest_is_zero()?.saturating_add(1),
            },
            AGGREGATED_TRAILER => AggregatedRecord::Trailer,
            MEMORY_SNAPSHOT => AggregatedRecord::MemorySnapshot {
                ms_since_epoch: input.u64_le("a memory snapshot's time")?,
                rss: input.u64_le("a memory snapshot's RSS")?,
                heap: input.u64_le("a memory snapshot's heap size")?,
            },
            AGGREGATED_ALLOCATION => AggregatedRecord::Allocation(read_allocation(input)?),
            PYTHON_TRACE_INDEX => AggregatedRecord::PythonStackNode {
                frame_id: input.varint("a Python stack node's frame")?,
                parent: input.varint("a Python stack node's parent")?,
            },
            PYTHON_FRAME_INDEX => AggregatedRecord::PythonFrame {
                frame_id: input.varint("a Python frame's id")?,
                code_object_id: input.varint("a Python frame's code object")?,
                instruction_offset: input.signed_varint("a Python frame's offset")? as i32,
                is_entry_frame: input.bool("a Python frame's entry flag")?,
            },
            NATIVE_TRACE_INDEX => {
                let (ip, parent) = self.shared.native_frame(input)?;
                AggregatedRecord::NativeFrame { ip, parent }
            }
            MEMORY_MAP_START => AggregatedRecord::MemoryMapStart,
            SEGMENT_HEADER => AggregatedRecord::Image(read_image(input)?),
            THREAD_RECORD => AggregatedRecord::ThreadName(input.cstring("a thread name")?),
            CONTEXT_SWITCH => AggregatedRecord::ContextSwitch {
                tid: input.u64_le("a context switch's thread id")?,
            },
            SURVIVING_OBJECT => {
                let shifted = input.varint("a surviving object's address")?;
                let native_frame_id = if self.native_traces {
                    input.varint("a surviving object's native stack")?
                } else {
                    0
                };
                AggregatedRecord::SurvivingObject {
                    address: shifted << 3,
                    native_frame_id,
                }
            }
            CODE_OBJECT => AggregatedRecord::CodeObject(self.shared.code_object(input)?),
            other => {
                return Err(MemrayError::corrupt(
                    input.offset().saturating_sub(1),
                    format!("unknown aggregated record type {other}"),
                ));
            }
        };
        Ok(Some(record))
    }
}

/// Records → events for aggregated captures: frame and stack tables go
/// into the stack tables, sites and snapshots come out as events.
pub(crate) struct AggregatedEvents {
    decoder: AggregatedDecoder,
    /// The Python frame table (frame id = position).
    frames: Vec<PythonFrameKey>,
}

impl AggregatedEvents {
    pub(crate) fn new(native_traces: bool) -> Self {
        AggregatedEvents {
            decoder: AggregatedDecoder::new(native_traces),
            frames: Vec::new(),
        }
    }

    pub(crate) fn step<R: BufRead>(
        &mut self,
        input: &mut CaptureBytes<R>,
        ctx: &mut StreamContext,
    ) -> Result<Step, MemrayError> {
        let Some(record) = self.decoder.next(input)? else {
            return Ok(Step::End);
        };
        let offset = input.offset();
        let as_index = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        Ok(match record {
            AggregatedRecord::Trailer => {
                ctx.notes.ended_with_trailer = true;
                Step::End
            }
            AggregatedRecord::Padding { zero_bytes } => {
                ctx.notes.zero_padding_bytes = zero_bytes;
                Step::End
            }
            AggregatedRecord::MemorySnapshot {
                ms_since_epoch,
                rss,
                heap,
            } => Step::Event(MemrayEvent::MemorySample {
                ms_since_epoch,
                rss_bytes: rss,
                heap_bytes: Some(heap),
            }),
            AggregatedRecord::Allocation(a) => {
                ctx.notes.allocation_records = ctx.notes.allocation_records.saturating_add(1);
                Step::Event(MemrayEvent::Aggregated(AggregatedSite {
                    tid: a.tid,
                    allocator: a.allocator,
                    python_stack: as_index(a.python_stack),
                    native_stack: (a.native_frame_id != 0).then_some(a.native_frame_id),
                    image_generation: as_index(a.image_generation),
                    allocations_at_peak: a.allocations_at_peak,
                    bytes_at_peak: a.bytes_at_peak,
                    allocations_leaked: a.allocations_leaked,
                    bytes_leaked: a.bytes_leaked,
                }))
            }
            AggregatedRecord::PythonFrame {
                frame_id,
                code_object_id,
                instruction_offset,
                is_entry_frame,
            } => {
                if frame_id != self.frames.len() as u64 {
                    let due = self.frames.len();
                    let detail = format!("Python frame {frame_id} where {due} was due");
                    return Err(MemrayError::corrupt(offset, detail));
                }
                self.frames.push(PythonFrameKey {
                    code_object_id,
                    instruction_offset,
                    is_entry_frame,
                });
                Step::Continue
            }
            AggregatedRecord::PythonStackNode { frame_id, parent } => {
                let frame = self.frames.get(as_index(frame_id));
                match frame {
                    Some(&f) if ctx.stacks.append_python_node(as_index(parent), f) => {
                        Step::Continue
                    }
                    _ => {
                        let detail = format!(
                            "Python stack node (frame {frame_id}, parent {parent}) refers to nothing earlier"
                        );
                        return Err(MemrayError::corrupt(offset, detail));
                    }
                }
            }
            AggregatedRecord::NativeFrame { ip, parent } => {
                if !ctx.stacks.append_native_frame(ip, parent) {
                    return Err(bad_native_parent(offset, &ctx.stacks, parent));
                }
                Step::Continue
            }
            AggregatedRecord::MemoryMapStart => Step::Event(MemrayEvent::NewImageGeneration {
                generation: ctx.stacks.start_generation(),
            }),
            AggregatedRecord::Image(image) => {
                ctx.stacks.add_image(image);
                Step::Continue
            }
            AggregatedRecord::ThreadName(name) => {
                let tid = ctx.current_tid.unwrap_or(0);
                ctx.stacks.set_thread_name(tid, name.clone());
                Step::Event(MemrayEvent::ThreadName { tid, name })
            }
            // Here a context switch only says whose name follows.
            AggregatedRecord::ContextSwitch { tid } => {
                ctx.current_tid = Some(tid);
                Step::Continue
            }
            AggregatedRecord::SurvivingObject {
                address,
                native_frame_id,
            } => Step::Event(MemrayEvent::Object {
                tid: ctx.current_tid.unwrap_or(0),
                address,
                created: true,
                python_stack: 0,
                native_stack: (native_frame_id != 0).then_some(native_frame_id),
            }),
            AggregatedRecord::CodeObject(code) => {
                ctx.stacks.add_code_object(code);
                Step::Continue
            }
        })
    }
}

fn read_allocation<R: BufRead>(
    input: &mut CaptureBytes<R>,
) -> Result<AggregatedAllocationRecord, MemrayError> {
    let tid = input.u64_le("an aggregated allocation")?;
    let id = input.u8("an aggregated allocation")?;
    let _padding: [u8; 7] = input.array("an aggregated allocation")?;
    let Some(allocator) = Allocator::from_id(id) else {
        return Err(MemrayError::corrupt(
            input.offset(),
            format!("unknown allocator id {id} in an aggregated allocation"),
        ));
    };
    let mut next = || input.u64_le("an aggregated allocation");
    Ok(AggregatedAllocationRecord {
        tid,
        allocator,
        native_frame_id: next()?,
        python_stack: next()?,
        image_generation: next()?,
        allocations_at_peak: next()?,
        allocations_leaked: next()?,
        bytes_at_peak: next()?,
        bytes_leaked: next()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memray::test_capture::CaptureWriter;

    #[test]
    fn decodes_every_aggregated_record_kind() {
        let mut w = CaptureWriter::records_only(true);
        w.agg_snapshot(1000, 2000, 300);
        w.agg_thread(2, "worker");
        w.map_start();
        w.image("/bin/python", 0x4000, &[(0, 0x100)]);
        w.code_object(9, "f", "f.py", 12, &[]);
        w.native_frame(0x4010, 0);
        w.agg_frame(0, 9, 6, true);
        w.agg_trace(0, 0);
        w.bytes.extend([13, 0x02, 0x01]); // surviving object 0x10, native 1
        w.agg_allocation(2, Allocator::Malloc, 1, 1, 1, (3, 300), (1, 100));
        w.agg_trailer();
        let mut input = CaptureBytes::new(&w.bytes[..], false);
        let mut d = AggregatedDecoder::new(true);
        let mut records = Vec::new();
        while let Some(r) = d.next(&mut input).unwrap() {
            records.push(r);
        }
        assert_eq!(records.len(), 12);
        assert!(records.contains(&AggregatedRecord::SurvivingObject {
            address: 0x10,
            native_frame_id: 1
        }));
        assert!(
            records.contains(&AggregatedRecord::Allocation(AggregatedAllocationRecord {
                tid: 2,
                allocator: Allocator::Malloc,
                native_frame_id: 1,
                python_stack: 1,
                image_generation: 1,
                allocations_at_peak: 3,
                allocations_leaked: 1,
                bytes_at_peak: 300,
                bytes_leaked: 100,
            }))
        );
        assert_eq!(records.last(), Some(&AggregatedRecord::Trailer));
        for cut in 0..w.bytes.len() - 1 {
            let mut input = CaptureBytes::new(&w.bytes[..cut], false);
            let mut d = AggregatedDecoder::new(true);
            while let Ok(Some(_)) = d.next(&mut input) {}
        }
        let mut bad = CaptureBytes::new(&[8u8][..], false);
        assert!(AggregatedDecoder::new(false).next(&mut bad).is_err());
    }
}
