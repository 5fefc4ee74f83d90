//! The one registry of input formats: each format is one
//! [`Format`](crate::format_descriptor::Format) descriptor — its aliases,
//! how it is sniffed from its first bytes, what it holds, and how it is
//! read (streamed, from a stored file, from a stored folder, or refused
//! with what to do instead). Detection ([`crate::detect::detect`]), the
//! engine's import planning and dispatch, and `capabilities` all iterate
//! [`FORMATS`]; a new format is a folder with its extractor and descriptor
//! plus one line here.

pub use crate::format_descriptor::{
    Extractor, Format, PathRead, Reading, Refusal, Sniff, StreamRead,
};
use crate::format_kind::FormatKind;

/// Every format, in detection order: a sniffer earlier in the list wins a
/// tie (`Certain` answers first, then `Likely` ones).
pub static FORMATS: [&Format; 31] = [
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
    &crate::coverage_json::FORMAT,
    &crate::junit_xml::FORMAT,
    &crate::otlp::FORMAT,
    &crate::rocprof::FORMAT,
    &crate::rocprof::CSV_FORMAT,
    &crate::rocprof::CSV_DIR_FORMAT,
    &crate::configuration_observations::FORMAT,
    &crate::reduced_stacks::FORMAT,
    &crate::gecko::FORMAT,
    &crate::importtime::FORMAT,
    &crate::trace_cmd::FORMAT,
    &crate::perf_data::FORMAT,
    &crate::memray::FORMAT,
    &crate::go_trace::FORMAT,
    &crate::ftrace_text::FORMAT,
    &crate::folded::FORMAT,
    &crate::xplane::FORMAT,
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
        .find(|f| f.name() == lower || f.aliases.contains(&lower.as_str()))
}

impl FormatKind {
    /// Parses a `--kind` value: a format's name or one of its aliases.
    pub fn from_name(name: &str) -> Option<Self> {
        by_name(name).map(|f| f.kind)
    }
}

/// Names of the formats this build reads.
pub fn readable_names() -> Vec<&'static str> {
    FORMATS
        .iter()
        .filter(|f| f.extractor().is_some())
        .map(|f| f.name())
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
            .flat_map(|f| std::iter::once(f.name()).chain(f.aliases.iter().copied()))
            .collect();
        let all = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all, "a name or alias is used twice");
        for f in FORMATS {
            assert_eq!(by_name(f.name()).map(|g| g.kind), Some(f.kind));
            assert!(!f.description.is_empty(), "{}", f.name());
        }
    }
}
