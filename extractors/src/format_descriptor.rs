//! What the registry holds for one format ([`Format`]): how it is sniffed
//! and read, and what to say when it is not. Types only; the list is
//! [`crate::formats::FORMATS`].

use std::path::Path;

use crate::api::{BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary};
use crate::format_kind::FormatKind;
use crate::input::InputStream;
use crate::sniff::{Head, Sniffed};

/// Reads a format's bytes as a stream (decompressed, bounded).
pub type StreamRead = fn(
    InputStream,
    &ExtractOptions,
    &mut dyn BatchSink,
    &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError>;

/// Reads a stored file or a stored folder's archive by path.
pub type PathRead = fn(
    &Path,
    &ExtractOptions,
    &mut dyn BatchSink,
    &dyn ExtractObserver,
) -> Result<ExtractionSummary, ExtractError>;

/// Looks at a head and says whether it is this format.
pub type Sniff = fn(&Head<'_>) -> Option<Sniffed>;

/// The extractor stamped on summaries and operation digests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extractor {
    pub name: &'static str,
    /// Bumped whenever the rows produced for the same input change.
    pub version: &'static str,
}

/// Why a recognized input is not read, and what to do instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// The argument at fault (`path` or `kind`), or `None` when this build
    /// lacks the capability.
    pub argument: Option<&'static str>,
    pub message: &'static str,
    /// Commands that would help, in order.
    pub remedies: &'static [&'static str],
}

/// How a format's bytes are read.
#[derive(Clone, Copy)]
pub enum Reading {
    /// Streamed while the artifact store copies it.
    Stream(Extractor, StreamRead),
    /// Stored first, then read by path (SQLite needs random access).
    StoredFile(Extractor, PathRead),
    /// A folder, stored as one archive and read from it; a single file
    /// detected as this format is refused with `as_a_file`.
    StoredFolder {
        extractor: Extractor,
        read: PathRead,
        as_a_file: Refusal,
    },
    /// Recognized but not read.
    Refused(Refusal),
}

/// One input format.
pub struct Format {
    pub kind: FormatKind,
    /// Other names `--kind` accepts.
    pub aliases: &'static [&'static str],
    /// What it is and which tools write it (shown by `capabilities`).
    pub description: &'static str,
    /// Recognizes the format from a head; `None` when it is found by a
    /// folder's shape instead.
    pub sniff: Option<Sniff>,
    pub reading: Reading,
    /// Benchmark results: rows are measurements that carry the run's
    /// variant and parameters and hash the artifact id into their ids, so
    /// the id is needed before extraction and the labels belong to the
    /// extraction's identity.
    pub measurements: bool,
}

impl Format {
    /// The stable snake_case name (`--kind`, summaries, artifact records).
    pub fn name(&self) -> &'static str {
        self.kind.name()
    }

    /// The extractor that reads this format, if any.
    pub fn extractor(&self) -> Option<Extractor> {
        match self.reading {
            Reading::Stream(e, _) | Reading::StoredFile(e, _) => Some(e),
            Reading::StoredFolder { extractor, .. } => Some(extractor),
            Reading::Refused(_) => None,
        }
    }
}
