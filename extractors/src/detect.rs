//! Format detection by content.
//!
//! `flameox import PATH` without `--kind` must pick an extractor from the
//! bytes, because file names lie (`trace.json` that is gzip, `.pb` that is
//! pprof or Perfetto). The first (decompressed) bytes are read once into a
//! [`Head`] and each format of the registry ([`crate::formats`]) sniffs
//! it: SQLite and Nsight headers, the JSON first token and top-level keys,
//! text line shapes, protobuf field tags. The file name only breaks ties.

use crate::formats::FORMATS;
use crate::sniff::{Certainty, Head};

/// The input formats flameox knows about (not all have an extractor yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FormatKind {
    ChromeJson,
    SpeedscopeJson,
    ChromeCpuProfile,
    GeckoProfile,
    FoldedStacks,
    PerfettoProtobuf,
    Pprof,
    NsightSqlite,
    /// A folder from `nsys export --type parquetdir` (detected by
    /// [`crate::nsight::export_dir`], never from one file's head).
    NsightParquetDir,
    /// A folder from `nsys export --type arrowdir`.
    NsightArrowDir,
    NsightReport,
    Sqlite,
    /// pyperf JSON results (see [`crate::benchmarks::pyperf`]).
    PyperfJson,
    /// hyperfine `--export-json` (see [`crate::benchmarks::hyperfine`]).
    HyperfineJson,
    /// Google Benchmark JSON (see [`crate::benchmarks::gbench`]).
    GoogleBenchmarkJson,
    /// A criterion output folder (found by
    /// [`crate::benchmarks::criterion::criterion_members`]; one of its files
    /// alone is recognized only to say so).
    CriterionDir,
    Unknown,
}

impl FormatKind {
    /// Every kind, in a fixed order.
    pub const ALL: [FormatKind; 17] = [
        FormatKind::ChromeJson,
        FormatKind::SpeedscopeJson,
        FormatKind::ChromeCpuProfile,
        FormatKind::GeckoProfile,
        FormatKind::FoldedStacks,
        FormatKind::PerfettoProtobuf,
        FormatKind::Pprof,
        FormatKind::NsightSqlite,
        FormatKind::NsightParquetDir,
        FormatKind::NsightArrowDir,
        FormatKind::NsightReport,
        FormatKind::Sqlite,
        FormatKind::PyperfJson,
        FormatKind::HyperfineJson,
        FormatKind::GoogleBenchmarkJson,
        FormatKind::CriterionDir,
        FormatKind::Unknown,
    ];

    /// The stable snake_case name (used by `--kind` and in summaries).
    pub fn name(&self) -> &'static str {
        crate::formats::format(*self).map_or("unknown", |f| f.name)
    }

    /// Parses a `--kind` value: a format's name or one of its aliases.
    pub fn from_name(name: &str) -> Option<Self> {
        crate::formats::by_name(name).map(|f| f.kind)
    }
}

/// What [`detect`] concluded and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detection {
    pub kind: FormatKind,
    /// Likely producer (`torch.profiler`, `py-spy`, `chrome`, …) when visible.
    pub producer_hint: Option<String>,
    /// One sentence naming the evidence, for messages and logs.
    pub reason: String,
}

/// Detects the format of an input from its first (decompressed) bytes:
/// the first `Certain` answer of the registry's sniffers in their order,
/// else the first `Likely` one.
pub fn detect(head: &[u8], file_name: Option<&str>) -> Detection {
    if head.is_empty() {
        return unknown("empty input".to_owned());
    }
    let head = Head::new(head, file_name);
    let mut likely = None;
    for format in FORMATS {
        let Some(sniffed) = format.sniff.and_then(|sniff| sniff(&head)) else {
            continue;
        };
        let detection = Detection {
            kind: format.kind,
            producer_hint: sniffed.producer.map(str::to_owned),
            reason: sniffed.reason.to_owned(),
        };
        match sniffed.certainty {
            Certainty::Certain => return detection,
            Certainty::Likely => {
                likely.get_or_insert(detection);
            }
        }
    }
    likely.unwrap_or_else(|| {
        unknown(format!(
            "no known format matches the first bytes `{}`",
            escape_head(head.bytes, 32)
        ))
    })
}

fn unknown(reason: String) -> Detection {
    Detection {
        kind: FormatKind::Unknown,
        producer_hint: None,
        reason,
    }
}

/// The first `n` bytes, escaped for a message.
pub fn escape_head(head: &[u8], n: usize) -> String {
    head[..head.len().min(n)].escape_ascii().to_string()
}

#[cfg(test)]
#[path = "detect_tests.rs"]
mod tests;
