//! The layout of a version 7 `.dat` file: a header naming the
//! compression, then sections found through chained option sections.
//!
//! ```text
//! magic "7\0" endian long page_size  "zstd\0" "1.5.4\0"  u64 first options
//! section = u16 id, u16 flags (1 = compressed), u32 description, u64 size,
//!           content (compressed: one block u32 csize, u32 size, bytes)
//! ```
//! Option sections (id 0) give the offsets of the header-info, format,
//! printk and cmdline sections and one `BUFFER` option per instance; a
//! damaged metadata section is a note (its tables stay partial), damaged
//! options or buffer headers are errors.

use std::collections::HashSet;
use std::io::{Read, Seek};

use super::compression::{Codec, read_block};
use super::errors::TraceCmdError;
use super::file_source::FileSource;
use super::options::{
    FileOptions, OPT_CMDLINES, OPT_DONE, OPT_EVENT_FORMATS, OPT_FTRACE_EVENTS, OPT_HEADER_INFO,
    OPT_KALLSYMS, OPT_PRINTK, read_options,
};
use crate::kernel_events::endian_reader::{Endian, EndianReader};
use crate::kernel_events::tracing_data::{
    Preamble, TracingData, TracingDataError, read_cmdlines, read_event_systems,
    read_ftrace_formats, read_header_info, read_printk_formats,
};

const FLAG_COMPRESSED: u16 = 1;
/// Option sections followed before giving up on a chain.
const MAX_OPTION_SECTIONS: usize = 4096;
const MAX_NAME: usize = 256;

/// A section's 16-byte header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectionHeader {
    pub id: u16,
    pub flags: u16,
    pub size: u64,
}

impl SectionHeader {
    pub fn compressed(&self) -> bool {
        self.flags & FLAG_COMPRESSED != 0
    }
}

/// What the v7 header and sections hold.
pub struct V7Metadata {
    pub tracing: TracingData,
    pub options: FileOptions,
    pub codec: Codec,
    /// `name version` of the compression, `None` for `none`.
    pub compression: Option<String>,
}

/// Reads a v7 file's metadata; `after_preamble` is where the compression
/// name starts.
pub fn read_v7<R: Read + Seek>(
    source: &mut FileSource<R>,
    preamble: &Preamble,
    after_preamble: u64,
) -> Result<V7Metadata, TraceCmdError> {
    let endian = preamble.endian;
    let (name, version, first_options) = {
        let mut r = source
            .reader_at(after_preamble, endian)
            .map_err(TraceCmdError::io("the compression header", after_preamble))?;
        let name = r
            .cstring(MAX_NAME)
            .map_err(TraceCmdError::io("the compression name", after_preamble))?;
        let version = r
            .cstring(MAX_NAME)
            .map_err(TraceCmdError::io("the compression version", after_preamble))?;
        let first = r
            .u64()
            .map_err(TraceCmdError::io("the options offset", after_preamble))?;
        (name, version, first)
    };
    let codec = Codec::from_header(&name, &version)?;
    let compression = (codec != Codec::None).then(|| format!("{name} {version}"));

    let mut options = FileOptions::default();
    let mut seen = HashSet::new();
    let mut next = Some(first_options);
    while let Some(at) = next {
        if !seen.insert(at) || seen.len() > MAX_OPTION_SECTIONS {
            return Err(TraceCmdError::corrupt(
                "the options chain",
                at,
                "it loops back",
            ));
        }
        let (header, content) = read_section(source, at, endian, codec, "an options section")?;
        if header.id != OPT_DONE {
            return Err(TraceCmdError::corrupt(
                "an options section",
                at,
                format!("section id {} where options were expected", header.id),
            ));
        }
        let mut r = EndianReader::new(&content[..], endian);
        next = read_options(&mut r, true, at, &mut options)?;
    }

    let mut tracing = TracingData::new(preamble);
    let mut has_header_info = false;
    for (id, at) in options.sections.clone() {
        has_header_info |= id == OPT_HEADER_INFO;
        if let Err(e) = read_metadata_section(source, id, at, endian, codec, &mut tracing) {
            tracing.note(format!("metadata section {id} at offset {at}: {e}"));
        }
    }
    if !has_header_info {
        tracing.note("no header-info section: page layout assumed from the long size".into());
    }
    for buffer in &mut options.buffers {
        let header = read_section_header(source, buffer.offset, endian)?;
        buffer.compressed = header.compressed();
    }
    Ok(V7Metadata {
        tracing,
        options,
        codec,
        compression,
    })
}

pub fn read_section_header<R: Read + Seek>(
    source: &mut FileSource<R>,
    at: u64,
    endian: Endian,
) -> Result<SectionHeader, TraceCmdError> {
    let b = source
        .read_at(at, 16)
        .map_err(TraceCmdError::io("a section header", at))?;
    let int = |o: usize, n: usize| endian.uint_at(&b, o, n).unwrap_or(0);
    Ok(SectionHeader {
        id: int(0, 2) as u16,
        flags: int(2, 2) as u16,
        size: int(8, 8),
    })
}

/// A section's header and its (decompressed) content.
pub fn read_section<R: Read + Seek>(
    source: &mut FileSource<R>,
    at: u64,
    endian: Endian,
    codec: Codec,
    what: &'static str,
) -> Result<(SectionHeader, Vec<u8>), TraceCmdError> {
    let header = read_section_header(source, at, endian)?;
    let data_at = at.saturating_add(16);
    let content = if header.compressed() {
        read_block(source, data_at, endian, codec, what)?.0
    } else {
        source
            .read_at(data_at, header.size)
            .map_err(TraceCmdError::io(what, data_at))?
    };
    Ok((header, content))
}

fn read_metadata_section<R: Read + Seek>(
    source: &mut FileSource<R>,
    id: u16,
    at: u64,
    endian: Endian,
    codec: Codec,
    tracing: &mut TracingData,
) -> Result<(), TraceCmdError> {
    if id == OPT_KALLSYMS {
        // Symbols are not resolved here: only its size is kept.
        tracing.kallsyms_bytes = read_section_header(source, at, endian)?.size;
        return Ok(());
    }
    let (header, content) = read_section(source, at, endian, codec, "a metadata section")?;
    if header.id != id {
        return Err(TraceCmdError::corrupt(
            "a metadata section",
            at,
            format!("section id {} where {id} was expected", header.id),
        ));
    }
    let mut r = EndianReader::new(&content[..], endian);
    let result: Result<(), TracingDataError> = match id {
        OPT_HEADER_INFO => read_header_info(&mut r, tracing),
        OPT_FTRACE_EVENTS => read_ftrace_formats(&mut r, tracing),
        OPT_EVENT_FORMATS => read_event_systems(&mut r, tracing),
        OPT_PRINTK => read_printk_formats(&mut r, tracing),
        OPT_CMDLINES => read_cmdlines(&mut r, tracing),
        _ => Ok(()),
    };
    result.map_err(TraceCmdError::from)
}
