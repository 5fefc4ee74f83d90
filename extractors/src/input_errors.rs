//! The failures of reading a compressed input, carried inside an
//! `io::Error` through the readers that extractors hold; [`crate::api`]
//! turns them into typed extraction errors. A leaf, so the error
//! conversion and the input streams do not import each other.

/// The error carried inside an `io::Error` when decompressed bytes pass the
/// cap; `ExtractError::from(io::Error)` turns it into [`crate::api::ExtractError::TooLarge`].
#[derive(Debug)]
pub struct DecompressedTooLarge {
    pub cap_bytes: u64,
    pub compressed_bytes: u64,
}

impl std::fmt::Display for DecompressedTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "decompressed size exceeds {} bytes (the cap for {} compressed bytes)",
            self.cap_bytes, self.compressed_bytes
        )
    }
}
impl std::error::Error for DecompressedTooLarge {}

/// The error carried inside an `io::Error` when the gzip stream is corrupt or
/// cut off; extractors treat it like the end of a truncated input.
#[derive(Debug)]
pub struct CorruptCompressedStream {
    pub detail: String,
}

impl std::fmt::Display for CorruptCompressedStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the gzip stream is corrupt or truncated: {}",
            self.detail
        )
    }
}
impl std::error::Error for CorruptCompressedStream {}
