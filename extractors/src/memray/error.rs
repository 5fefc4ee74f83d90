//! Why a memray capture could not be read. One error type for every layer
//! of the decoder (decompression, header, record stream), each variant
//! carrying the decoded-stream offset where it was found so a damaged file
//! can be located.

/// A failure to read a memray capture file.
#[derive(Debug, thiserror::Error)]
pub enum MemrayError {
    /// Neither the lz4 frame magic (`04 22 4d 18`) nor `memray\0`.
    #[error(
        "not a memray capture: it starts neither with the lz4 frame magic nor with \"memray\\0\""
    )]
    NotMemray,
    /// A header version this decoder does not read (older memray releases
    /// wrote a different record layout).
    #[error(
        "memray capture header version {found} is not supported (supported versions: {supported:?}; version 12 is memray 1.19, 13 is memray 1.20)"
    )]
    UnsupportedVersion {
        found: i32,
        supported: &'static [i32],
    },
    /// The data ended inside a structure.
    #[error("memray capture truncated inside {what} (decoded offset {offset})")]
    Truncated { what: &'static str, offset: u64 },
    /// A value no writer produces (unknown record type, impossible index…).
    #[error("memray capture is corrupt at decoded offset {offset}: {detail}")]
    Corrupt { offset: u64, detail: String },
    /// The lz4 frame around the records is damaged.
    #[error(
        "lz4 decompression of the memray capture failed after {offset} decoded bytes: {source}"
    )]
    Decompress {
        offset: u64,
        #[source]
        source: std::io::Error,
    },
    /// The underlying reader failed.
    #[error("reading the memray capture failed after {offset} decoded bytes: {source}")]
    Io {
        offset: u64,
        #[source]
        source: std::io::Error,
    },
}

impl MemrayError {
    /// A `Corrupt` error at `offset`.
    pub fn corrupt(offset: u64, detail: impl Into<String>) -> Self {
        MemrayError::Corrupt {
            offset,
            detail: detail.into(),
        }
    }
}
