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

pub use crate::format_kind::FormatKind;
pub use crate::sniff::escape_head;

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

#[cfg(test)]
#[path = "detect_tests.rs"]
mod tests;
