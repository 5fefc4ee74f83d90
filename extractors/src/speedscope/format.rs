//! speedscope JSON in the format registry. py-spy writes `profiles` before
//! `shared`, so a long file's head may show only `profiles` (with its
//! `type`s) or only `shared`.

use crate::format_descriptor::{Extractor, Format, Reading};
use crate::sniff::{Head, Sniffed};

use super::{SPEEDSCOPE_EXTRACTOR_NAME, SPEEDSCOPE_EXTRACTOR_VERSION, extract_speedscope};

pub static FORMAT: Format = Format {
    kind: crate::format_kind::FormatKind::SpeedscopeJson,
    aliases: &["speedscope"],
    description: "speedscope JSON, sampled and evented profiles (py-spy, rbspy, Austin, speedscope exports)",
    sniff: Some(sniff),
    reading: Reading::Stream(
        Extractor {
            name: SPEEDSCOPE_EXTRACTOR_NAME,
            version: SPEEDSCOPE_EXTRACTOR_VERSION,
        },
        extract_speedscope,
    ),
    measurements: false,
};

fn sniff(head: &Head<'_>) -> Option<Sniffed> {
    let scan = head.object()?;
    let profiles =
        scan.has("profiles") && (head.contains(b"\"sampled\"") || head.contains(b"\"evented\""));
    let frames = scan.has("shared") && !scan.complete && head.contains(b"\"frames\"");
    let schema = scan.has("$schema") && head.contains(b"speedscope");
    (schema || (scan.has("shared") && scan.has("profiles")) || profiles || frames)
        .then(|| Sniffed::certain(None, "speedscope file schema"))
        .flatten()
}
