//! The "tracing data" blob: everything needed to read raw kernel trace
//! records, as trace-cmd and perf save it.
//!
//! Both trace-cmd `.dat` files (inline in version 6, as sections in 7) and
//! perf.data (feature `HEADER_TRACING_DATA`) carry the same sequence:
//! magic `17 08 44 "tracing"`, a version string, endianness, long size,
//! page size, then `header_page`/`header_event`, the ftrace formats, the
//! event formats per system, kallsyms, printk formats and (version ≥ 0.6)
//! the saved cmdlines. [`parse_tracing_data`] reads the whole blob; the
//! `read_*` pieces are shared with trace-cmd v7, whose sections hold one
//! piece each.

use std::collections::HashMap;
use std::io::{self, Read};

use super::endian_reader::{Endian, EndianReader};
use super::model::FieldValue;
use super::tracefs_decode::record_event_id;
use super::tracefs_format::{EventFormat, parse_event_format, parse_field_line};

/// The 3 bytes that start tracing data (and trace-cmd files), then "tracing".
pub const TRACING_MAGIC: [u8; 10] = [0x17, 0x08, 0x44, b't', b'r', b'a', b'c', b'i', b'n', b'g'];
/// A decoded record: its format, `common_pid` and fields.
pub type DecodedRecord<'a> = (&'a EventFormat, i32, Vec<(String, FieldValue)>);

/// Most diagnostics kept; later ones are counted.
const MAX_NOTES: usize = 64;
/// Longest system name or version string accepted.
const MAX_NAME: usize = 4096;

/// Where the ring-buffer page header keeps its fields (`header_page`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageHeaderLayout {
    pub timestamp_offset: usize,
    /// Size of `commit`: the kernel's `long` (4 or 8).
    pub commit_offset: usize,
    pub commit_size: usize,
    /// Where the first event starts in a page.
    pub data_offset: usize,
}

impl PageHeaderLayout {
    /// The layout for a kernel `long` of `long_size` bytes.
    pub fn for_long_size(long_size: u8) -> Self {
        let long = if long_size == 4 { 4 } else { 8 };
        PageHeaderLayout {
            timestamp_offset: 0,
            commit_offset: 8,
            commit_size: long,
            data_offset: 8 + long,
        }
    }
}

/// The fixed start of tracing data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preamble {
    /// `0.6` (perf), `6`/`7` (trace-cmd).
    pub version: String,
    pub endian: Endian,
    /// The traced user space's `long` size, as the header says.
    pub long_size: u8,
    pub page_size: u32,
}

/// Event formats and the tables that go with them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracingData {
    pub version: String,
    pub big_endian: bool,
    /// The header's `long` size; the kernel's is `page_header.commit_size`.
    pub long_size: u8,
    pub page_size: u32,
    pub page_header: PageHeaderLayout,
    /// `header_event` does not describe the `type_len` ring buffer (Linux
    /// 2.6.30 and older), whose pages this crate does not read.
    pub old_ring_buffer_format: bool,
    /// Every format that parsed, ftrace's first; see [`TracingData::format`].
    pub formats: Vec<EventFormat>,
    /// pid → comm from `saved_cmdlines`.
    pub cmdlines: HashMap<i32, String>,
    /// Address → format string from `printk_formats`.
    pub printk_formats: HashMap<u64, String>,
    /// Size of the kallsyms text, skipped (symbols are not resolved here).
    pub kallsyms_bytes: u64,
    /// Formats that did not parse, duplicate ids, missing parts.
    pub notes: Vec<String>,
    by_id: HashMap<u32, usize>,
}

/// Why tracing data could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TracingDataError {
    #[error("not tracing data: the magic bytes 17 08 44 \"tracing\" are missing")]
    BadMagic,
    #[error("tracing data ends inside {what}")]
    Truncated { what: &'static str },
    #[error("tracing data is corrupt in {what}: {detail}")]
    Corrupt { what: &'static str, detail: String },
    #[error("reading tracing data failed in {what}: {source}")]
    Io {
        what: &'static str,
        #[source]
        source: io::Error,
    },
}

/// Attaches what was being read to an I/O error.
pub(crate) fn in_part(what: &'static str) -> impl Fn(io::Error) -> TracingDataError {
    move |e| match e.kind() {
        io::ErrorKind::UnexpectedEof => TracingDataError::Truncated { what },
        io::ErrorKind::InvalidData => TracingDataError::Corrupt {
            what,
            detail: e.to_string(),
        },
        _ => TracingDataError::Io { what, source: e },
    }
}

impl TracingData {
    /// Empty tables for a file with this preamble.
    pub fn new(preamble: &Preamble) -> Self {
        TracingData {
            version: preamble.version.clone(),
            big_endian: preamble.endian.is_big(),
            long_size: preamble.long_size,
            page_size: preamble.page_size,
            page_header: PageHeaderLayout::for_long_size(preamble.long_size),
            old_ring_buffer_format: false,
            formats: Vec::new(),
            cmdlines: HashMap::new(),
            printk_formats: HashMap::new(),
            kallsyms_bytes: 0,
            notes: Vec::new(),
            by_id: HashMap::new(),
        }
    }

    /// The format whose id is `id`.
    pub fn format(&self, id: u32) -> Option<&EventFormat> {
        self.by_id.get(&id).and_then(|&i| self.formats.get(i))
    }

    /// Decodes a raw record by its `common_type`: its format, `common_pid`
    /// and fields. `None` for an unknown id or a record too short.
    pub fn decode_record(&self, raw: &[u8]) -> Option<DecodedRecord<'_>> {
        let format = self.format(record_event_id(raw, self.big_endian)?)?;
        let (pid, fields) = format.decode(raw, self.big_endian)?;
        Some((format, pid, fields))
    }

    pub(crate) fn note(&mut self, text: String) {
        if self.notes.len() < MAX_NOTES {
            self.notes.push(text);
        } else if self.notes.len() == MAX_NOTES {
            self.notes.push("further notes left out".to_string());
        }
    }

    fn add_format(&mut self, system: &str, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        match parse_event_format(system, &text) {
            Ok(format) => {
                if self.by_id.contains_key(&format.id) {
                    self.note(format!(
                        "event id {} appears twice; {}:{} ignored",
                        format.id, system, format.name
                    ));
                } else {
                    self.by_id.insert(format.id, self.formats.len());
                    self.formats.push(format);
                }
            }
            Err(e) => self.note(format!("a {system} event format was skipped: {e}")),
        }
    }
}

/// Reads a whole tracing-data blob (perf's `HEADER_TRACING_DATA` section,
/// or the start of a trace-cmd v6 file).
pub fn parse_tracing_data(bytes: &[u8]) -> Result<TracingData, TracingDataError> {
    read_tracing_data(bytes).map(|(data, _)| data)
}

/// [`parse_tracing_data`] from a stream; also returns the bytes consumed.
pub fn read_tracing_data<R: Read>(reader: R) -> Result<(TracingData, u64), TracingDataError> {
    let mut r = EndianReader::new(reader, Endian::Little);
    let preamble = read_preamble(&mut r)?;
    let data = read_metadata_body(&mut r, &preamble)?;
    Ok((data, r.position()))
}

/// Magic, version, endianness, long size and page size. Switches `r` to
/// the file's byte order.
pub fn read_preamble<R: Read>(r: &mut EndianReader<R>) -> Result<Preamble, TracingDataError> {
    let magic: [u8; 10] = r.array().map_err(|_| TracingDataError::BadMagic)?;
    if magic != TRACING_MAGIC {
        return Err(TracingDataError::BadMagic);
    }
    let version = r.cstring(MAX_NAME).map_err(in_part("the version string"))?;
    let endian = match r.u8().map_err(in_part("the endian flag"))? {
        0 => Endian::Little,
        _ => Endian::Big,
    };
    r.set_endian(endian);
    let long_size = r.u8().map_err(in_part("the long size"))?;
    let page_size = r.u32().map_err(in_part("the page size"))?;
    Ok(Preamble {
        version,
        endian,
        long_size,
        page_size,
    })
}

/// Everything after the preamble, in the v6/perf order.
pub fn read_metadata_body<R: Read>(
    r: &mut EndianReader<R>,
    preamble: &Preamble,
) -> Result<TracingData, TracingDataError> {
    let mut data = TracingData::new(preamble);
    read_header_info(r, &mut data)?;
    read_ftrace_formats(r, &mut data)?;
    read_event_systems(r, &mut data)?;
    read_kallsyms(r, &mut data)?;
    read_printk_formats(r, &mut data)?;
    let has_cmdlines = preamble
        .version
        .trim()
        .parse::<f64>()
        .map(|v| v >= 0.6)
        .unwrap_or(false);
    if has_cmdlines {
        read_cmdlines(r, &mut data)?;
    }
    Ok(data)
}

/// `header_page\0` + size + text, `header_event\0` + size + text.
pub fn read_header_info<R: Read>(
    r: &mut EndianReader<R>,
    data: &mut TracingData,
) -> Result<(), TracingDataError> {
    let tag: [u8; 12] = r.array().map_err(in_part("header_page"))?;
    if &tag != b"header_page\0" {
        return Err(corrupt("header_page", "the `header_page` tag is missing"));
    }
    let len = r.u64().map_err(in_part("header_page"))?;
    let page = r.blob(len).map_err(in_part("header_page"))?;
    apply_header_page(data, &String::from_utf8_lossy(&page));
    let tag: [u8; 13] = r.array().map_err(in_part("header_event"))?;
    if &tag != b"header_event\0" {
        return Err(corrupt("header_event", "the `header_event` tag is missing"));
    }
    let len = r.u64().map_err(in_part("header_event"))?;
    let event = r.blob(len).map_err(in_part("header_event"))?;
    data.old_ring_buffer_format = !String::from_utf8_lossy(&event).contains("type_len");
    Ok(())
}

fn apply_header_page(data: &mut TracingData, text: &str) {
    let mut layout = data.page_header;
    for line in text.lines() {
        let Ok(field) = parse_field_line(line.trim()) else {
            continue;
        };
        match field.name.as_str() {
            "timestamp" => layout.timestamp_offset = field.offset,
            "commit" if matches!(field.size, 4 | 8) => {
                layout.commit_offset = field.offset;
                layout.commit_size = field.size;
            }
            "data" => layout.data_offset = field.offset,
            _ => {}
        }
    }
    data.page_header = layout;
}

/// Count, then (size, `format` text) per ftrace event.
pub fn read_ftrace_formats<R: Read>(
    r: &mut EndianReader<R>,
    data: &mut TracingData,
) -> Result<(), TracingDataError> {
    let count = r.u32().map_err(in_part("the ftrace formats"))?;
    for _ in 0..count {
        let len = r.u64().map_err(in_part("the ftrace formats"))?;
        let text = r.blob(len).map_err(in_part("the ftrace formats"))?;
        data.add_format("ftrace", &text);
    }
    Ok(())
}

/// Count of systems; per system its name, a count, and (size, text) per event.
pub fn read_event_systems<R: Read>(
    r: &mut EndianReader<R>,
    data: &mut TracingData,
) -> Result<(), TracingDataError> {
    let systems = r.u32().map_err(in_part("the event formats"))?;
    for _ in 0..systems {
        let system = r
            .cstring(MAX_NAME)
            .map_err(in_part("an event system name"))?;
        let events = r.u32().map_err(in_part("the event formats"))?;
        for _ in 0..events {
            let len = r.u64().map_err(in_part("the event formats"))?;
            let text = r.blob(len).map_err(in_part("the event formats"))?;
            data.add_format(&system, &text);
        }
    }
    Ok(())
}

/// 32-bit size, then `/proc/kallsyms` (skipped).
pub fn read_kallsyms<R: Read>(
    r: &mut EndianReader<R>,
    data: &mut TracingData,
) -> Result<(), TracingDataError> {
    let len = r.u32().map_err(in_part("kallsyms"))?;
    r.skip(u64::from(len)).map_err(in_part("kallsyms"))?;
    data.kallsyms_bytes = u64::from(len);
    Ok(())
}

/// 32-bit size, then `printk_formats` lines `0xADDR : "format"`.
pub fn read_printk_formats<R: Read>(
    r: &mut EndianReader<R>,
    data: &mut TracingData,
) -> Result<(), TracingDataError> {
    let len = r.u32().map_err(in_part("the printk formats"))?;
    let text = r
        .blob(u64::from(len))
        .map_err(in_part("the printk formats"))?;
    for line in String::from_utf8_lossy(&text).lines() {
        let Some((addr, fmt)) = line.split_once(':') else {
            continue;
        };
        let addr = addr.trim();
        let addr = addr.strip_prefix("0x").unwrap_or(addr);
        if let Ok(addr) = u64::from_str_radix(addr, 16) {
            let fmt = fmt.trim();
            let fmt = fmt.strip_prefix('"').unwrap_or(fmt);
            let fmt = fmt.strip_suffix('"').unwrap_or(fmt);
            data.printk_formats.insert(addr, fmt.to_string());
        }
    }
    Ok(())
}

/// 64-bit size, then `saved_cmdlines` lines `pid comm`. A blob that ends
/// right before it (some perf writers) is a note, not an error.
pub fn read_cmdlines<R: Read>(
    r: &mut EndianReader<R>,
    data: &mut TracingData,
) -> Result<(), TracingDataError> {
    let len = match r.u64() {
        Ok(len) => len,
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            data.note("the saved cmdlines are missing".to_string());
            return Ok(());
        }
        Err(e) => return Err(in_part("the saved cmdlines")(e)),
    };
    let text = r.blob(len).map_err(in_part("the saved cmdlines"))?;
    for line in String::from_utf8_lossy(&text).lines() {
        let Some((pid, comm)) = line.trim_start().split_once(' ') else {
            continue;
        };
        if let Ok(pid) = pid.parse::<i32>() {
            data.cmdlines.insert(pid, comm.to_string());
        }
    }
    Ok(())
}

fn corrupt(what: &'static str, detail: &str) -> TracingDataError {
    TracingDataError::Corrupt {
        what,
        detail: detail.to_string(),
    }
}

#[cfg(test)]
#[path = "tracing_data_tests.rs"]
pub(crate) mod tests;
