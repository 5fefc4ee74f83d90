//! The parts of a file-mode perf.data that are found by offset: the file
//! header, the attrs section (each attr with its id array elsewhere in the
//! file) and the feature sections after the data section. They must be
//! read before the records (event names, build ids and tracepoint formats
//! are needed to decode them), hence `Read + Seek`. Every offset and size
//! is checked against the file's length before anything is allocated.

use std::io::{Read, Seek, SeekFrom};

use super::attrs::{EventAttr, EventTable, MAX_EVENTS};
use super::bytes::{ByteReader, Endian};
use super::error::PerfDataError;
use super::features::{PerfMeta, parse_feature_index};
use super::header::{FileHeader, FileSection, parse_file_header};

/// What precedes and follows the records of a file-mode perf.data.
#[derive(Debug, Clone)]
pub struct FileLayout {
    pub header: FileHeader,
    pub events: EventTable,
    pub meta: PerfMeta,
    /// The records: where they start and how many bytes (`None`: to the
    /// end of the file).
    pub data_offset: u64,
    pub data_size: Option<u64>,
    pub notes: Vec<String>,
}

/// Reads `section` if it lies inside a file of `file_len` bytes.
fn read_section<R: Read + Seek>(
    r: &mut R,
    section: FileSection,
    file_len: u64,
    what: &'static str,
) -> Result<Vec<u8>, PerfDataError> {
    let end = section.end().filter(|&e| e <= file_len);
    let Some(_) = end else {
        return Err(PerfDataError::Truncated {
            what,
            offset: section.offset,
            needed: section.size,
            available: file_len.saturating_sub(section.offset),
        });
    };
    let len = usize::try_from(section.size)
        .map_err(|_| PerfDataError::Malformed(format!("{what} of {} bytes", section.size)))?;
    r.seek(SeekFrom::Start(section.offset))?;
    let mut buf = vec![0u8; len];
    r.read_exact(&mut buf)?;
    Ok(buf)
}

/// Charges `section.size` to `budget`.
fn take_budget(budget: &mut u64, section: FileSection) -> Result<(), PerfDataError> {
    *budget = budget.checked_sub(section.size).ok_or_else(|| {
        PerfDataError::Malformed(format!(
            "sections add up to more than the file (one of {} bytes at {})",
            section.size, section.offset
        ))
    })?;
    Ok(())
}

/// Reads the header, attrs and features of a file-mode perf.data whose
/// header is `header_size` bytes.
pub fn read_file_layout<R: Read + Seek>(
    r: &mut R,
    endian: Endian,
    header_size: u64,
) -> Result<FileLayout, PerfDataError> {
    let file_len = r.seek(SeekFrom::End(0))?;
    let head = read_section(
        r,
        FileSection {
            offset: 0,
            size: header_size,
        },
        file_len,
        "file header",
    )?;
    let header = parse_file_header(&head, endian)?;
    let mut notes = Vec::new();

    // Attrs: `attr_size` bytes each, an attr then the section of its ids.
    let mut events = EventTable::default();
    let attr_size = header.attr_size;
    if !(24..=4096).contains(&attr_size) {
        return Err(PerfDataError::Malformed(format!(
            "attr entry size {attr_size} (expected 24..=4096)"
        )));
    }
    let attrs = read_section(r, header.attrs, file_len, "attrs section")?;
    if !header.attrs.size.is_multiple_of(attr_size) {
        notes.push(format!(
            "attrs section of {} bytes is not a multiple of the {attr_size}-byte entry; the rest is ignored",
            header.attrs.size
        ));
    }
    // Id arrays and feature sections may not add up to more than the file
    // (a damaged index pointing many entries at one big range).
    let mut budget = file_len;
    for entry in attrs.chunks_exact(attr_size as usize) {
        let split = entry.len() - 16;
        let (attr_bytes, ids_bytes) = entry.split_at(split);
        let attr = EventAttr::parse(attr_bytes, endian)
            .ok_or_else(|| PerfDataError::Malformed("attr shorter than 8 bytes".into()))?;
        let ids_section =
            FileSection::read(&mut ByteReader::new(ids_bytes, endian)).unwrap_or_default();
        let ids = match take_budget(&mut budget, ids_section)
            .and_then(|_| read_section(r, ids_section, file_len, "event ids"))
        {
            Ok(bytes) => {
                let mut ir = ByteReader::new(&bytes, endian);
                std::iter::from_fn(|| ir.u64()).collect()
            }
            Err(e) => {
                notes.push(format!(
                    "ids of event {} unreadable: {e}",
                    events.events.len()
                ));
                Vec::new()
            }
        };
        if events.push(attr, ids).is_none() {
            notes.push(format!(
                "more than {MAX_EVENTS} event attrs: the rest are ignored"
            ));
            break;
        }
    }
    if events.events.is_empty() {
        return Err(PerfDataError::Malformed("no event attrs".into()));
    }

    // The records, and the feature index right after them.
    let mut data_size = Some(header.data.size);
    let data_end = header.data.end().unwrap_or(u64::MAX);
    if data_end > file_len {
        notes.push(format!(
            "data section ends at {data_end} but the file has {file_len} bytes: read what is there"
        ));
        data_size = Some(file_len.saturating_sub(header.data.offset));
    } else if header.data.size == 0 && header.feature_bits().next().is_none() {
        notes.push("data size 0 in the header (recording not finished?): records read to the end of the file".into());
        data_size = None;
    }

    let mut meta = PerfMeta::default();
    let bits: Vec<u32> = header.feature_bits().collect();
    let index = FileSection {
        offset: data_end,
        size: (bits.len() as u64) * 16,
    };
    match read_section(r, index, file_len, "feature index") {
        Ok(bytes) => {
            for (bit, (offset, size)) in
                bits.iter()
                    .zip(parse_feature_index(&bytes, endian, bits.len()))
            {
                let section = FileSection { offset, size };
                let bytes = take_budget(&mut budget, section)
                    .and_then(|_| read_section(r, section, file_len, "feature section"));
                match bytes {
                    Ok(b) => {
                        if !meta.apply_feature(*bit, &b, endian) {
                            notes.push(format!("feature {bit} did not parse; skipped"));
                        }
                    }
                    Err(e) => notes.push(format!("feature {bit}: {e}")),
                }
            }
        }
        Err(e) if !bits.is_empty() => notes.push(format!("feature sections unreadable: {e}")),
        Err(_) => {}
    }
    events.apply_names(&meta.event_names);
    Ok(FileLayout {
        data_offset: header.data.offset,
        data_size,
        header,
        events,
        meta,
        notes,
    })
}
