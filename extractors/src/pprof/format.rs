//! pprof `profile.proto` in the format registry: top-level fields with the
//! numbers and wire types of `Profile`, at least three of them or a file
//! named like a pprof profile.

use crate::format_descriptor::{Extractor, Format, Reading};
use crate::sniff::{Head, Sniffed};

use super::{PPROF_EXTRACTOR_NAME, PPROF_EXTRACTOR_VERSION, extract_pprof};

pub static FORMAT: Format = Format {
    kind: crate::format_kind::FormatKind::Pprof,
    aliases: &[],
    description: "pprof profile.proto, gzipped or plain (Go runtime/pprof, gperftools, async-profiler, …): one metric per sample type",
    sniff: Some(sniff),
    reading: Reading::Stream(
        Extractor {
            name: PPROF_EXTRACTOR_NAME,
            version: PPROF_EXTRACTOR_VERSION,
        },
        extract_pprof,
    ),
    measurements: false,
};

/// A file name pprof tools write (`*.pb.gz`, `*.prof`, `pprof` in it).
pub fn named_like_pprof(name: &str) -> bool {
    name.contains("pprof") || name.ends_with(".pb.gz") || name.ends_with(".prof")
}

/// No producer hint: the engine would pass it on as a forced producer, and
/// the extractor tells Go from other producers by the functions.
fn sniff(head: &Head<'_>) -> Option<Sniffed> {
    let proto = head.protobuf.as_ref()?;
    (proto.pprof_fields && (proto.fields >= 3 || named_like_pprof(&head.name)))
        .then(|| Sniffed::certain(None, "protobuf with pprof Profile field tags"))
        .flatten()
}
