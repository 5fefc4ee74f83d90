//! Reads a memray capture file (`memray run` output, lz4-compressed or
//! not, all-allocations or `--aggregate`) into a stream of
//! [`MemrayEvent`]s, keeping the per-thread Python stacks that frame
//! push/pop records describe and the tables that resolve stack ids
//! ([`StackTables`]). Streaming: it reads from any `std::io::Read`, one
//! record at a time; memory grows only with the capture's stack, code
//! object and image tables.
//!
//! After an error the iterator ends; the events already returned stand (a
//! truncated capture gives everything before the damage, then the error).

use std::collections::HashMap;
use std::io::{BufRead, Read};

use crate::memray::aggregated::AggregatedEvents;
use crate::memray::error::MemrayError;
use crate::memray::events::{AllocationEvent, DeallocationEvent, MemrayEvent};
use crate::memray::header::{CaptureLayout, MemrayHeader, read_header};
use crate::memray::records::{RecordDecoder, WireRecord};
use crate::memray::source::CaptureStream;
use crate::memray::stacks::{PythonFrameKey, StackTables};
use crate::memray::wire::CaptureBytes;

/// How the record stream ended, and oddities met on the way.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecodeNotes {
    /// The writer's trailer was reached (a cleanly finished capture).
    pub ended_with_trailer: bool,
    /// Zero bytes the stream ended with (an unfinished uncompressed capture).
    pub zero_padding_bytes: u64,
    /// Allocation records read, frees included (memray's "total allocations").
    pub allocation_records: u64,
    /// Frames a FRAME_POP asked for beyond the thread's stack (ignored).
    pub pops_past_stack_bottom: u64,
}

impl DecodeNotes {
    /// One sentence per oddity, for a report's notes.
    pub fn describe(&self, header: &MemrayHeader) -> Vec<String> {
        let mut notes = Vec::new();
        if !self.ended_with_trailer {
            notes.push("the capture has no end marker: tracking did not finish".to_string());
        }
        if self.zero_padding_bytes > 0 {
            notes.push(format!(
                "{} zero bytes of unused file space at the end",
                self.zero_padding_bytes
            ));
        }
        if self.pops_past_stack_bottom > 0 {
            notes.push(format!(
                "{} Python frame pops found an empty stack",
                self.pops_past_stack_bottom
            ));
        }
        let all = header.layout == CaptureLayout::AllAllocations;
        if all && header.n_allocations != 0 && header.n_allocations != self.allocation_records {
            notes.push(format!(
                "the header counts {} allocation records, the stream holds {}",
                header.n_allocations, self.allocation_records
            ));
        }
        notes
    }
}

/// What the record-to-event steps of both layouts share.
pub(crate) struct StreamContext {
    pub stacks: StackTables,
    pub notes: DecodeNotes,
    /// The thread the last context switch named.
    pub current_tid: Option<u64>,
}

/// The outcome of decoding one record.
pub(crate) enum Step {
    Event(MemrayEvent),
    /// A table record: nothing to report, read on.
    Continue,
    End,
}

/// The error for a native stack node whose caller is not an earlier node.
pub(crate) fn bad_native_parent(offset: u64, stacks: &StackTables, parent: u64) -> MemrayError {
    MemrayError::corrupt(
        offset,
        format!(
            "native frame {} names caller {parent}, which is not an earlier frame",
            stacks.native_frame_count().saturating_add(1)
        ),
    )
}

/// Records → events for all-allocations captures, with each thread's
/// Python stack as frame push/pop records leave it.
struct AllAllocationsEvents {
    decoder: RecordDecoder,
    python_stacks: HashMap<u64, Vec<usize>>,
    start_ms: u64,
    not_before_ms: u64,
}

impl AllAllocationsEvents {
    fn top(&self, tid: u64) -> usize {
        let stack = self.python_stacks.get(&tid);
        stack.and_then(|s| s.last().copied()).unwrap_or(0)
    }

    fn step<B: BufRead>(
        &mut self,
        input: &mut CaptureBytes<B>,
        ctx: &mut StreamContext,
    ) -> Result<Step, MemrayError> {
        let Some(record) = self.decoder.next(input)? else {
            return Ok(Step::End);
        };
        let offset = input.offset();
        let thread = |ctx: &StreamContext, what: &str| {
            ctx.current_tid.ok_or_else(|| {
                MemrayError::corrupt(offset, format!("{what} before any context switch"))
            })
        };
        Ok(match record {
            WireRecord::Trailer => {
                ctx.notes.ended_with_trailer = true;
                Step::End
            }
            WireRecord::Padding { zero_bytes } => {
                ctx.notes.zero_padding_bytes = zero_bytes;
                Step::End
            }
            WireRecord::Allocation {
                address,
                size,
                allocator,
                native_frame_id,
            } => {
                ctx.notes.allocation_records = ctx.notes.allocation_records.saturating_add(1);
                let tid = thread(ctx, "an allocation")?;
                let not_before_ns = self.not_before_ms.saturating_mul(1_000_000);
                Step::Event(if allocator.is_deallocator() {
                    MemrayEvent::Deallocation(DeallocationEvent {
                        tid,
                        address,
                        size,
                        allocator,
                        not_before_ns,
                    })
                } else {
                    MemrayEvent::Allocation(AllocationEvent {
                        tid,
                        address,
                        size,
                        allocator,
                        python_stack: self.top(tid),
                        native_stack: (native_frame_id != 0).then_some(native_frame_id),
                        image_generation: ctx.stacks.current_generation(),
                        not_before_ns,
                    })
                })
            }
            WireRecord::MemoryRecord {
                rss,
                ms_since_start,
            } => {
                let ms_since_epoch = self.start_ms.saturating_add(ms_since_start);
                self.not_before_ms = ms_since_epoch;
                Step::Event(MemrayEvent::MemorySample {
                    ms_since_epoch,
                    rss_bytes: rss,
                    heap_bytes: None,
                })
            }
            WireRecord::ContextSwitch { tid } => {
                ctx.current_tid = Some(tid);
                self.python_stacks.entry(tid).or_default();
                Step::Event(MemrayEvent::ContextSwitch { tid })
            }
            WireRecord::FramePush {
                code_object_id,
                instruction_offset,
                is_entry_frame,
            } => {
                let tid = thread(ctx, "a frame push")?;
                let stack = self.python_stacks.entry(tid).or_default();
                let parent = stack.last().copied().unwrap_or(0);
                let frame = PythonFrameKey {
                    code_object_id,
                    instruction_offset,
                    is_entry_frame,
                };
                stack.push(ctx.stacks.push_python(parent, frame));
                Step::Continue
            }
            WireRecord::FramePop { count } => {
                let tid = thread(ctx, "a frame pop")?;
                let stack = self.python_stacks.entry(tid).or_default();
                let count = usize::from(count);
                let missing = count.saturating_sub(stack.len());
                stack.truncate(stack.len().saturating_sub(count));
                let notes = &mut ctx.notes;
                notes.pops_past_stack_bottom =
                    notes.pops_past_stack_bottom.saturating_add(missing as u64);
                Step::Continue
            }
            WireRecord::CodeObject(code) => {
                ctx.stacks.add_code_object(code);
                Step::Continue
            }
            WireRecord::NativeFrame { ip, parent } => {
                if !ctx.stacks.append_native_frame(ip, parent) {
                    return Err(bad_native_parent(offset, &ctx.stacks, parent));
                }
                Step::Continue
            }
            WireRecord::MemoryMapStart => Step::Event(MemrayEvent::NewImageGeneration {
                generation: ctx.stacks.start_generation(),
            }),
            WireRecord::Image(image) => {
                ctx.stacks.add_image(image);
                Step::Continue
            }
            WireRecord::ThreadName(name) => {
                let tid = ctx.current_tid.unwrap_or(0);
                ctx.stacks.set_thread_name(tid, name.clone());
                Step::Event(MemrayEvent::ThreadName { tid, name })
            }
            WireRecord::Object {
                address,
                created,
                native_frame_id,
            } => {
                let tid = ctx.current_tid.unwrap_or(0);
                Step::Event(MemrayEvent::Object {
                    tid,
                    address,
                    created,
                    python_stack: if created { self.top(tid) } else { 0 },
                    native_stack: (native_frame_id != 0).then_some(native_frame_id),
                })
            }
        })
    }
}

enum Layout {
    All(AllAllocationsEvents),
    Aggregated(AggregatedEvents),
}

/// A memray capture being read.
pub struct MemrayReader<R: Read> {
    input: CaptureBytes<CaptureStream<R>>,
    header: MemrayHeader,
    ctx: StreamContext,
    layout: Layout,
    finished: bool,
}

impl<R: Read> MemrayReader<R> {
    /// Sniffs compression and reads the header.
    pub fn open(input: R) -> Result<Self, MemrayError> {
        let stream = CaptureStream::open(input)?;
        let compressed = stream.is_compressed();
        let mut input = CaptureBytes::new(stream, compressed);
        let header = read_header(&mut input)?;
        let stacks = StackTables::new(
            header.python_version,
            header.main_tid,
            header.skipped_frames_on_main_tid,
        );
        let start_ms = u64::try_from(header.start_time_ms).unwrap_or(0);
        let layout = match header.layout {
            CaptureLayout::AllAllocations => Layout::All(AllAllocationsEvents {
                decoder: RecordDecoder::new(header.native_traces),
                python_stacks: HashMap::new(),
                start_ms,
                not_before_ms: start_ms,
            }),
            CaptureLayout::AggregatedAllocations => {
                Layout::Aggregated(AggregatedEvents::new(header.native_traces))
            }
        };
        Ok(MemrayReader {
            input,
            header,
            ctx: StreamContext {
                stacks,
                notes: DecodeNotes::default(),
                current_tid: None,
            },
            layout,
            finished: false,
        })
    }

    pub fn header(&self) -> &MemrayHeader {
        &self.header
    }

    /// The tables that resolve stack ids (complete once the stream ended).
    pub fn stacks(&self) -> &StackTables {
        &self.ctx.stacks
    }

    pub fn notes(&self) -> &DecodeNotes {
        &self.ctx.notes
    }

    pub fn is_compressed(&self) -> bool {
        self.input.get_ref().is_compressed()
    }

    /// Decoded bytes read so far.
    pub fn decoded_offset(&self) -> u64 {
        self.input.offset()
    }

    /// The next event; `None` at the end of the stream.
    pub fn next_event(&mut self) -> Result<Option<MemrayEvent>, MemrayError> {
        if self.finished {
            return Ok(None);
        }
        let result = loop {
            let step = match &mut self.layout {
                Layout::All(all) => all.step(&mut self.input, &mut self.ctx),
                Layout::Aggregated(agg) => agg.step(&mut self.input, &mut self.ctx),
            };
            match step {
                Ok(Step::Event(event)) => break Ok(Some(event)),
                Ok(Step::Continue) => continue,
                Ok(Step::End) => break Ok(None),
                Err(e) => break Err(e),
            }
        };
        if !matches!(result, Ok(Some(_))) {
            self.finished = true;
        }
        result
    }
}

impl<R: Read> Iterator for MemrayReader<R> {
    type Item = Result<MemrayEvent, MemrayError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_event().transpose()
    }
}

#[cfg(test)]
#[path = "reader_tests.rs"]
mod tests;
