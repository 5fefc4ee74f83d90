//! Opening a trace-cmd `.dat` file and reading its buffers' events.
//!
//! [`TraceCmdFile::open`] reads the header and metadata of a version 6 or
//! 7 file (little or big endian, v7 plain, zstd or zlib) and
//! [`TraceCmdFile::events`] merges one buffer's per-CPU pages into kernel
//! events in time order. The file is taken as `Read + Seek`: its pieces are
//! found by offset and the CPUs' data is read interleaved, one block per
//! CPU at a time, so the file never has to be in memory (a `&[u8]` works
//! through `std::io::Cursor`).

use std::io::{Read, Seek};

use super::compression::Codec;
use super::cpu_stream::{CpuStream, PageContext};
use super::errors::TraceCmdError;
use super::events::{TimeConversion, TraceEvents};
use super::file_source::FileSource;
use super::options::{BufferInfo, FileOptions};
use super::summary::TraceCmdSummary;
use super::v6_layout::read_v6;
use super::v7_sections::read_v7;
use crate::kernel_events::endian_reader::Endian;
use crate::kernel_events::tracing_data::{TracingData, TracingDataError, read_preamble};

/// Largest ring-buffer page accepted (kernels use 4–64 KiB sub-buffers).
const MAX_PAGE_SIZE: u32 = 16 << 20;
/// Clocks whose values are nanoseconds (the kernel's `in_ns` clocks).
const NS_CLOCKS: [&str; 7] = ["local", "global", "perf", "mono", "mono_raw", "boot", "tai"];

/// The fixed facts of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileHeader {
    /// 6 or 7.
    pub version: u32,
    pub big_endian: bool,
    /// The traced user space's `long` size.
    pub long_size: u8,
    pub page_size: u32,
    /// `zstd 1.5.4` etc.; `None` for v6 and uncompressed v7.
    pub compression: Option<String>,
    pub codec: Codec,
}

/// An opened `.dat` file: its metadata, and the buffers to read.
pub struct TraceCmdFile<R> {
    source: FileSource<R>,
    pub header: FileHeader,
    pub tracing: TracingData,
    pub options: FileOptions,
}

impl<R: Read + Seek> TraceCmdFile<R> {
    /// Reads the header and metadata. A version other than 6 or 7 is
    /// [`TraceCmdError::UnsupportedVersion`].
    pub fn open(reader: R) -> Result<Self, TraceCmdError> {
        let mut source = FileSource::new(reader).map_err(TraceCmdError::io("the file", 0))?;
        let (preamble, after_preamble) = {
            let mut r = source
                .reader_at(0, Endian::Little)
                .map_err(TraceCmdError::io("the file header", 0))?;
            let preamble = read_preamble(&mut r).map_err(|e| match e {
                TracingDataError::BadMagic => TraceCmdError::NotTraceCmd,
                other => TraceCmdError::from(other),
            })?;
            (preamble, r.position())
        };
        let version = match preamble.version.trim() {
            "6" => 6,
            "7" => 7,
            other => {
                return Err(TraceCmdError::UnsupportedVersion {
                    found: other.to_string(),
                });
            }
        };
        let (tracing, options, codec, compression) = if version == 6 {
            let (tracing, options) = read_v6(&mut source, &preamble)?;
            (tracing, options, Codec::None, None)
        } else {
            let m = read_v7(&mut source, &preamble, after_preamble)?;
            (m.tracing, m.options, m.codec, m.compression)
        };
        Ok(TraceCmdFile {
            source,
            header: FileHeader {
                version,
                big_endian: preamble.endian.is_big(),
                long_size: preamble.long_size,
                page_size: preamble.page_size,
                compression,
                codec,
            },
            tracing,
            options,
        })
    }

    /// The buffers (tracing instances); the top one has the empty name.
    pub fn buffers(&self) -> &[BufferInfo] {
        &self.options.buffers
    }

    /// Index of the top buffer in [`TraceCmdFile::buffers`].
    pub fn top_buffer(&self) -> Option<usize> {
        self.options.buffers.iter().position(|b| b.name.is_empty())
    }

    /// The events of buffer `index`, merged across CPUs in time order.
    pub fn events(&mut self, index: usize) -> Result<TraceEvents<'_, R>, TraceCmdError> {
        let buffer = self
            .options
            .buffers
            .get(index)
            .ok_or(TraceCmdError::NoSuchBuffer {
                index,
                count: self.options.buffers.len(),
            })?;
        if buffer.latency {
            return Err(TraceCmdError::LatencyBuffer {
                name: buffer.name.clone(),
            });
        }
        if self.tracing.old_ring_buffer_format {
            return Err(TraceCmdError::OldRingBuffer);
        }
        let page_size = buffer.page_size.unwrap_or(self.header.page_size);
        let layout = self.tracing.page_header;
        let smallest = layout.data_offset.saturating_add(4);
        if page_size > MAX_PAGE_SIZE || (page_size as usize) < smallest {
            return Err(TraceCmdError::corrupt(
                "the page size",
                buffer.offset,
                format!("{page_size} bytes is not a ring-buffer page size"),
            ));
        }
        let mut summary = self.summary_for(buffer);
        let file_len = self.source.len();
        let streams = buffer
            .cpus
            .iter()
            .map(|&cpu| CpuStream::new(cpu, buffer.compressed, file_len, &mut summary))
            .collect();
        let ctx = PageContext {
            layout,
            endian: if self.header.big_endian {
                Endian::Big
            } else {
                Endian::Little
            },
            page_size: page_size as usize,
            codec: self.header.codec,
        };
        let clock = TimeConversion {
            tsc2nsec: self.options.tsc2nsec.filter(|t| t.mult != 0),
            offset_ns: summary.ts_offset_ns,
        };
        Ok(TraceEvents::new(
            &mut self.source,
            &self.tracing,
            ctx,
            clock,
            streams,
            summary,
        ))
    }

    fn summary_for(&self, buffer: &BufferInfo) -> TraceCmdSummary {
        let o = &self.options;
        let clock = buffer.clock.clone().or_else(|| o.trace_clock.clone());
        let tsc2nsec_applied = o.tsc2nsec.is_some_and(|t| t.mult != 0);
        let mut summary = TraceCmdSummary {
            version: self.header.version,
            compression: self.header.compression.clone(),
            buffer: buffer.name.clone(),
            timestamps_in_ns: tsc2nsec_applied
                || clock.as_deref().is_none_or(|c| NS_CLOCKS.contains(&c)),
            clock,
            ts_offset_ns: o.offset_ns.saturating_add(o.date_offset_ns.unwrap_or(0)),
            tsc2nsec_applied,
            overruns: o.cpu_stats.iter().filter_map(|s| s.overrun).sum(),
            dropped_events: o.cpu_stats.iter().filter_map(|s| s.dropped_events).sum(),
            ..TraceCmdSummary::default()
        };
        if summary.clock.is_none() {
            summary.note("the file names no trace clock; `local` (ns) assumed".into());
        }
        if o.has_time_shift {
            summary.note("guest TIME_SHIFT host-sync data present and not applied".into());
        }
        for note in &self.tracing.notes {
            summary.note(note.clone());
        }
        summary
    }
}

#[cfg(test)]
#[path = "file_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "corpus_tests.rs"]
mod corpus_tests;
