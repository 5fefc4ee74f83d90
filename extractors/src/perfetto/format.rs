//! Perfetto protobuf in the format registry: a head of field-1 LEN records
//! (`TracePacket`s). A file named like pprof leaves the tie to pprof.

use crate::format_descriptor::{Extractor, Format, Reading};
use crate::sniff::{Head, Sniffed};

use super::{PERFETTO_EXTRACTOR_NAME, PERFETTO_EXTRACTOR_VERSION, extract_perfetto};

pub static FORMAT: Format = Format {
    kind: crate::format_kind::FormatKind::PerfettoProtobuf,
    aliases: &["perfetto"],
    description: "Perfetto protobuf: track events, ftrace scheduling and atrace, callstack samples, process stats, counters",
    sniff: Some(sniff),
    reading: Reading::Stream(
        Extractor {
            name: PERFETTO_EXTRACTOR_NAME,
            version: PERFETTO_EXTRACTOR_VERSION,
        },
        extract_perfetto,
    ),
    measurements: false,
};

fn sniff(head: &Head<'_>) -> Option<Sniffed> {
    if !head.protobuf.as_ref()?.only_packets {
        return None;
    }
    if crate::pprof::named_like_pprof(&head.name) {
        Sniffed::likely(Some("perfetto"), "protobuf of field-1 records")
    } else {
        Sniffed::certain(Some("perfetto"), "protobuf of field-1 TracePacket records")
    }
}
