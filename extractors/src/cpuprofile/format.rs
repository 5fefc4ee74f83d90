//! V8 `.cpuprofile` in the format registry: an object with `nodes` beside
//! `startTime` or `samples` (or a head cut off inside `nodes`).

use crate::format_descriptor::{Extractor, Format, Reading};
use crate::sniff::{Head, Sniffed};

use super::{CPUPROFILE_EXTRACTOR_NAME, CPUPROFILE_EXTRACTOR_VERSION, extract_cpuprofile};

pub static FORMAT: Format = Format {
    kind: crate::format_kind::FormatKind::ChromeCpuProfile,
    aliases: &["cpuprofile"],
    description: "V8 .cpuprofile (node --cpu-prof, Chrome DevTools 'Save profile')",
    sniff: Some(sniff),
    reading: Reading::Stream(
        Extractor {
            name: CPUPROFILE_EXTRACTOR_NAME,
            version: CPUPROFILE_EXTRACTOR_VERSION,
        },
        extract_cpuprofile,
    ),
    measurements: false,
};

fn sniff(head: &Head<'_>) -> Option<Sniffed> {
    let scan = head.object()?;
    (scan.has("nodes") && (scan.has("startTime") || scan.has("samples") || !scan.complete))
        .then(|| Sniffed::certain(Some("v8"), "V8 cpuprofile (`nodes`, `startTime`)"))
        .flatten()
}
