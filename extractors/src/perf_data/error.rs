//! The ways reading a perf.data file can fail, as one typed error, so the
//! caller can tell "not perf.data" from "a perf.data version we do not
//! read" from "a damaged file" without parsing messages.

/// A perf.data file could not be read (or could not be read any further).
#[derive(Debug, thiserror::Error)]
pub enum PerfDataError {
    #[error("I/O error reading perf.data: {0}")]
    Io(#[from] std::io::Error),
    /// The first 8 bytes are not a perf.data magic.
    #[error("not a perf.data file (magic {0:02x?})")]
    NotPerfData([u8; 8]),
    /// A perf.data magic we recognise but do not decode.
    #[error("perf.data version {found} is not supported (supported: {supported})")]
    UnsupportedVersion {
        found: String,
        supported: &'static str,
    },
    /// A structure runs past the end of the bytes that hold it.
    #[error(
        "perf.data truncated: {what} at offset {offset} needs {needed} bytes, {available} are there"
    )]
    Truncated {
        what: &'static str,
        offset: u64,
        needed: u64,
        available: u64,
    },
    /// A value that cannot be right (a size smaller than its header, a
    /// count that does not fit its section, …).
    #[error("perf.data malformed: {0}")]
    Malformed(String),
}

/// The versions [`PerfDataError::UnsupportedVersion`] names as readable.
pub const SUPPORTED_VERSIONS: &str =
    "version 2 (magic PERFILE2), file and pipe mode, little and big endian";
