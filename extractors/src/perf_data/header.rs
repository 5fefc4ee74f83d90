//! The start of a perf.data file: the magic that gives the version and the
//! byte order, then either the 16-byte pipe header (`perf record -o -`) or
//! the file header with the attrs, data and feature-bitmap sections.

use super::bytes::{ByteReader, Endian};
use super::error::{PerfDataError, SUPPORTED_VERSIONS};

/// Bytes of the pipe-mode header (`magic`, `size`).
pub const PIPE_HEADER_SIZE: u64 = 16;
/// Bytes of the file header up to and including `event_types`.
const FILE_HEADER_MIN: u64 = 72;
/// Bytes of today's file header (with the 256-bit feature bitmap).
pub const FILE_HEADER_SIZE: u64 = 104;

/// Where a part of the file is: an absolute offset and a length.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileSection {
    pub offset: u64,
    pub size: u64,
}

impl FileSection {
    pub(crate) fn read(r: &mut ByteReader<'_>) -> Option<FileSection> {
        Some(FileSection {
            offset: r.u64()?,
            size: r.u64()?,
        })
    }
    /// The first offset past the section (`None` if it overflows).
    pub fn end(&self) -> Option<u64> {
        self.offset.checked_add(self.size)
    }
}

/// `perf_file_header`: where the attrs and the records are, and which
/// feature sections follow the records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileHeader {
    pub header_size: u64,
    /// Bytes of one attrs entry (`perf_event_attr` + its ids section).
    pub attr_size: u64,
    pub attrs: FileSection,
    pub data: FileSection,
    pub event_types: FileSection,
    /// The feature bitmap (`HEADER_*` bits), as four 64-bit words.
    pub features: [u64; 4],
}

impl FileHeader {
    pub fn has_feature(&self, bit: u32) -> bool {
        let word = (bit / 64) as usize;
        self.features
            .get(word)
            .is_some_and(|w| w & (1u64 << (bit % 64)) != 0)
    }
    /// The feature bits set, in ascending order (the order of the feature
    /// sections' index after the data section).
    pub fn feature_bits(&self) -> impl Iterator<Item = u32> + '_ {
        (0u32..256).filter(|&b| self.has_feature(b))
    }
}

/// What the first bytes of a perf.data stream say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// Pipe mode: records follow the 16-byte header directly; the attrs
    /// and features come as records.
    Pipe { endian: Endian },
    /// File mode: `header_size` bytes of header (read with [`parse_file_header`]).
    File { endian: Endian, header_size: u64 },
}

/// Reads the magic and header size from the first 16 bytes.
pub fn parse_start(first: &[u8]) -> Result<Start, PerfDataError> {
    let magic: [u8; 8] = match first.get(..8).and_then(|m| m.try_into().ok()) {
        Some(m) => m,
        None => {
            return Err(PerfDataError::Truncated {
                what: "perf.data magic",
                offset: 0,
                needed: 8,
                available: first.len() as u64,
            });
        }
    };
    // The magic is the u64 0x32454c4946524550 written in the writer's byte
    // order, so its bytes read "PERFILE2" on a little-endian machine.
    let endian = match &magic {
        b"PERFILE2" => Endian::Little,
        b"2ELIFREP" => Endian::Big,
        b"PERFFILE" | b"ELIFFREP" => {
            return Err(PerfDataError::UnsupportedVersion {
                found: "1 (magic PERFFILE)".to_owned(),
                supported: SUPPORTED_VERSIONS,
            });
        }
        m if m.starts_with(b"PERFILE") || m.ends_with(b"ELIFREP") => {
            return Err(PerfDataError::UnsupportedVersion {
                found: format!("magic {:?}", String::from_utf8_lossy(m)),
                supported: SUPPORTED_VERSIONS,
            });
        }
        _ => return Err(PerfDataError::NotPerfData(magic)),
    };
    let mut r = ByteReader::new(first.get(8..).unwrap_or(&[]), endian);
    let size = r.u64().ok_or(PerfDataError::Truncated {
        what: "perf.data header size",
        offset: 8,
        needed: 8,
        available: first.len().saturating_sub(8) as u64,
    })?;
    if size == PIPE_HEADER_SIZE {
        return Ok(Start::Pipe { endian });
    }
    if !(FILE_HEADER_MIN..=4096).contains(&size) || !size.is_multiple_of(8) {
        return Err(PerfDataError::Malformed(format!(
            "header size {size} is neither the pipe header ({PIPE_HEADER_SIZE}) nor a file header ({FILE_HEADER_MIN}..=4096, 8-aligned)"
        )));
    }
    Ok(Start::File {
        endian,
        header_size: size,
    })
}

/// Reads `perf_file_header` from its `header_size` bytes.
pub fn parse_file_header(bytes: &[u8], endian: Endian) -> Result<FileHeader, PerfDataError> {
    let truncated = |needed: u64| PerfDataError::Truncated {
        what: "perf.data file header",
        offset: 0,
        needed,
        available: bytes.len() as u64,
    };
    let mut r = ByteReader::new(bytes, endian);
    r.skip(8).ok_or_else(|| truncated(FILE_HEADER_MIN))?;
    let mut fields = || -> Option<(u64, u64, FileSection, FileSection, FileSection)> {
        Some((
            r.u64()?,
            r.u64()?,
            FileSection::read(&mut r)?,
            FileSection::read(&mut r)?,
            FileSection::read(&mut r)?,
        ))
    };
    let (header_size, attr_size, attrs, data, event_types) =
        fields().ok_or_else(|| truncated(FILE_HEADER_MIN))?;
    let mut features = [0u64; 4];
    for word in features.iter_mut() {
        match r.u64() {
            Some(w) => *word = w,
            None => break,
        }
    }
    if data.end().is_none() || attrs.end().is_none() {
        return Err(PerfDataError::Malformed(format!(
            "data section {data:?} or attrs section {attrs:?} overflows"
        )));
    }
    Ok(FileHeader {
        header_size,
        attr_size,
        attrs,
        data,
        event_types,
        features,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_gives_byte_order_and_mode() {
        let mut le = b"PERFILE2".to_vec();
        le.extend_from_slice(&16u64.to_le_bytes());
        assert_eq!(
            parse_start(&le).ok(),
            Some(Start::Pipe {
                endian: Endian::Little
            })
        );
        let mut be = b"2ELIFREP".to_vec();
        be.extend_from_slice(&104u64.to_be_bytes());
        assert_eq!(
            parse_start(&be).ok(),
            Some(Start::File {
                endian: Endian::Big,
                header_size: 104
            })
        );
    }

    #[test]
    fn old_and_foreign_magics_are_told_apart() {
        let mut v1 = b"PERFFILE".to_vec();
        v1.extend_from_slice(&104u64.to_le_bytes());
        match parse_start(&v1) {
            Err(PerfDataError::UnsupportedVersion { found, supported }) => {
                assert!(found.contains('1'));
                assert!(supported.contains("PERFILE2"));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse_start(b"\x7fELF\x02\x01\x01\x00abcdefgh"),
            Err(PerfDataError::NotPerfData(_))
        ));
        assert!(matches!(
            parse_start(b"PERF"),
            Err(PerfDataError::Truncated { .. })
        ));
        let mut odd = b"PERFILE2".to_vec();
        odd.extend_from_slice(&17u64.to_le_bytes());
        assert!(matches!(
            parse_start(&odd),
            Err(PerfDataError::Malformed(_))
        ));
    }

    #[test]
    fn feature_bits_are_listed_in_order() {
        let h = FileHeader {
            header_size: 104,
            attr_size: 136,
            attrs: FileSection::default(),
            data: FileSection::default(),
            event_types: FileSection::default(),
            features: [0b110, 1 << 3, 0, 1 << 63],
        };
        assert_eq!(h.feature_bits().collect::<Vec<_>>(), vec![1, 2, 67, 255]);
        assert!(!h.has_feature(300));
    }
}
