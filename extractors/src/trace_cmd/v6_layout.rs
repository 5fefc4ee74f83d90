//! The layout of a version 6 `.dat` file: the tracing data inline, then
//! the CPU count, options and the `flyrecord` table of per-CPU offsets.
//!
//! ```text
//! tracing data (magic … saved cmdlines)   u32 cpus
//! ["options  \0" options… u16 0]          "flyrecord\0" | "latency  \0"
//! cpus × (u64 offset, u64 size)           [u64 size, trace_clock text]
//! ```
//! Extra instances (`BUFFER` options) point at their own
//! `[options] flyrecord` block with the same CPU count.

use std::io::{Read, Seek};

use super::errors::TraceCmdError;
use super::file_source::FileSource;
use super::options::{BufferInfo, CpuData, FileOptions, read_options, selected_clock};
use crate::kernel_events::endian_reader::{Endian, EndianReader};
use crate::kernel_events::tracing_data::{
    Preamble, TracingData, read_metadata_body, read_preamble,
};

/// Longest `trace_clock` text accepted.
const MAX_CLOCK_TEXT: u64 = 64 * 1024;

/// Reads a v6 file's metadata; the top buffer is `options.buffers[0]`.
pub fn read_v6<R: Read + Seek>(
    source: &mut FileSource<R>,
    preamble: &Preamble,
) -> Result<(TracingData, FileOptions), TraceCmdError> {
    let file_len = source.len();
    let mut options = FileOptions::default();
    let (tracing, cpus, top) = {
        let mut r = source
            .reader_at(0, Endian::Little)
            .map_err(TraceCmdError::io("the file header", 0))?;
        read_preamble(&mut r)?;
        let mut tracing = read_metadata_body(&mut r, preamble)?;
        let cpus = r
            .u32()
            .map_err(TraceCmdError::io("the CPU count", r.position()))?;
        let top = read_data_block(&mut r, 0, cpus, file_len, &mut options)?;
        if options.trace_clock_option && !top.latency {
            // trace-cmd once wrote this text damaged; it falls back to
            // `local` then, and so does this reader (with a note).
            match read_clock_text(&mut r) {
                Some(clock) => options.trace_clock = Some(clock),
                None => {
                    tracing.note("the trace_clock text after the CPU data is unreadable".into())
                }
            }
        }
        (tracing, cpus, top)
    };
    let instances = std::mem::take(&mut options.buffers);
    options.buffers.push(top);
    for mut instance in instances {
        let mut r = source
            .reader_at(instance.offset, preamble.endian)
            .map_err(TraceCmdError::io("an instance's data", instance.offset))?;
        let mut ignored = FileOptions::default();
        let block = read_data_block(&mut r, instance.offset, cpus, file_len, &mut ignored)?;
        instance.cpus = block.cpus;
        instance.latency = block.latency;
        options.buffers.push(instance);
    }
    Ok((tracing, options))
}

/// `[options] flyrecord|latency [cpu table]` at the reader's position
/// (`base` is its file offset, for errors).
fn read_data_block<R: Read>(
    r: &mut EndianReader<R>,
    base: u64,
    cpus: u32,
    file_len: u64,
    options: &mut FileOptions,
) -> Result<BufferInfo, TraceCmdError> {
    let at = |r: &EndianReader<R>| base.saturating_add(r.position());
    let mut kind: [u8; 10] = r
        .array()
        .map_err(TraceCmdError::io("the data marker", at(r)))?;
    if kind.starts_with(b"options") {
        read_options(r, false, at(r), options)?;
        kind = r
            .array()
            .map_err(TraceCmdError::io("the data marker", at(r)))?;
    }
    let mut buffer = BufferInfo::default();
    if kind.starts_with(b"latency") {
        buffer.latency = true;
        return Ok(buffer);
    }
    if !kind.starts_with(b"flyrecord") {
        let shown = String::from_utf8_lossy(&kind).into_owned();
        return Err(TraceCmdError::corrupt(
            "the data marker",
            at(r),
            format!("{shown:?} is neither flyrecord nor latency"),
        ));
    }
    if u64::from(cpus).saturating_mul(16) > file_len {
        return Err(TraceCmdError::corrupt(
            "the CPU count",
            at(r),
            format!("{cpus} CPUs cannot fit in the file"),
        ));
    }
    for cpu in 0..cpus {
        let offset = r.u64().map_err(TraceCmdError::io("the CPU table", at(r)))?;
        let size = r.u64().map_err(TraceCmdError::io("the CPU table", at(r)))?;
        buffer.cpus.push(CpuData { cpu, offset, size });
    }
    Ok(buffer)
}

fn read_clock_text<R: Read>(r: &mut EndianReader<R>) -> Option<String> {
    let len = r.u64().ok().filter(|&l| l <= MAX_CLOCK_TEXT)?;
    let text = r.blob(len).ok()?;
    selected_clock(&String::from_utf8_lossy(&text))
}
