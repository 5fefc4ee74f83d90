//! The one registry of input formats: each format is one [`Format`]
//! descriptor — its name and aliases, how it is sniffed from its first
//! bytes, what it holds, and how it is read (streamed, from a stored file,
//! from a stored folder, or refused with what to do instead). Detection
//! ([`crate::detect::detect`]), the engine's import planning and dispatch,
//! and `capabilities` all iterate [`FORMATS`]; a new format is a folder
//! with its extractor and descriptor plus one line here.

use std::path::Path;

use crate::api::{BatchSink, ExtractError, ExtractObserver, ExtractOptions, ExtractionSummary};
use crate::detect::FormatKind;
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
    /// The stable snake_case name (`--kind`, summaries, artifact records).
    pub name: &'static str,
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
    /// The extractor that reads this format, if any.
    pub fn extractor(&self) -> Option<Extractor> {
        match self.reading {
            Reading::Stream(e, _) | Reading::StoredFile(e, _) => Some(e),
            Reading::StoredFolder { extractor, .. } => Some(extractor),
            Reading::Refused(_) => None,
        }
    }
}

/// Every format, in detection order: a sniffer earlier in the list wins a
/// tie (`Certain` answers first, then `Likely` ones).
pub static FORMATS: [&Format; 16] = [
    &crate::nsight::formats::SQLITE_EXPORT,
    &crate::nsight::formats::OTHER_SQLITE,
    &crate::nsight::formats::REPORT,
    &crate::nsight::formats::PARQUET_DIR,
    &crate::nsight::formats::ARROW_DIR,
    &crate::chrome::FORMAT,
    &crate::speedscope::FORMAT,
    &crate::cpuprofile::FORMAT,
    &crate::benchmarks::formats::GBENCH,
    &crate::benchmarks::formats::PYPERF,
    &crate::benchmarks::formats::HYPERFINE,
    &crate::benchmarks::formats::CRITERION,
    &crate::gecko::FORMAT,
    &crate::folded::FORMAT,
    &crate::perfetto::FORMAT,
    &crate::pprof::FORMAT,
];

/// The descriptor of `kind` (`None` for [`FormatKind::Unknown`]).
pub fn format(kind: FormatKind) -> Option<&'static Format> {
    FORMATS.iter().copied().find(|f| f.kind == kind)
}

/// The format a `--kind` value names: its name or an alias, any case.
pub fn by_name(name: &str) -> Option<&'static Format> {
    let lower = name.trim().to_ascii_lowercase();
    FORMATS
        .iter()
        .copied()
        .find(|f| f.name == lower || f.aliases.contains(&lower.as_str()))
}

/// Names of the formats this build reads.
pub fn readable_names() -> Vec<&'static str> {
    FORMATS
        .iter()
        .filter(|f| f.extractor().is_some())
        .map(|f| f.name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_one_descriptor_and_names_are_unique() {
        for kind in FormatKind::ALL {
            let count = FORMATS.iter().filter(|f| f.kind == kind).count();
            let expected = usize::from(kind != FormatKind::Unknown);
            assert_eq!(count, expected, "{kind:?}");
        }
        let mut names: Vec<&str> = FORMATS
            .iter()
            .flat_map(|f| std::iter::once(f.name).chain(f.aliases.iter().copied()))
            .collect();
        let all = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all, "a name or alias is used twice");
        for f in FORMATS {
            assert_eq!(by_name(f.name).map(|g| g.kind), Some(f.kind));
            assert_eq!(f.kind.name(), f.name);
            assert!(!f.description.is_empty(), "{}", f.name);
        }
    }
}
