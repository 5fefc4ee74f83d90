//! Go execution traces in the format registry: the 16-byte header
//! `go 1.NN trace` padded with NULs, whatever the version (an old or newer
//! one is then refused by name, not taken for another format). Streamed:
//! a 1.11–1.21 trace is held whole by the decoder, a 1.22+ one a
//! generation at a time.

use crate::format_descriptor::{Extractor, Format, Reading};
use crate::sniff::{Head, Sniffed};

use super::extract::{GO_TRACE_EXTRACTOR_NAME, GO_TRACE_EXTRACTOR_VERSION, extract_go_trace};
use super::header::looks_like_go_trace;

pub static FORMAT: Format = Format {
    kind: crate::format_kind::FormatKind::GoTrace,
    aliases: &["go_execution_trace", "gotrace"],
    description: "Go execution trace (runtime/trace, go test -trace; go1.11–go1.26) → goroutines as threads with thread_state rows, their runs as sched_slice rows on one cpu track per P, GC cycles, stop-the-world and sweeps, user tasks and regions, CPU samples (cpu.samples), heap counters",
    sniff: Some(sniff),
    reading: Reading::Stream(
        Extractor {
            name: GO_TRACE_EXTRACTOR_NAME,
            version: GO_TRACE_EXTRACTOR_VERSION,
        },
        extract_go_trace,
    ),
    measurements: false,
};

fn sniff(head: &Head<'_>) -> Option<Sniffed> {
    looks_like_go_trace(head.bytes)
        .then(|| {
            Sniffed::certain(
                Some("go.runtime/trace"),
                "Go execution trace header `go 1.NN trace`",
            )
        })
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sniff::Certainty;

    #[test]
    fn the_header_of_any_version_is_a_go_trace() {
        for text in [
            "go 1.19 trace",
            "go 1.23 trace",
            "go 1.5 trace",
            "go 1.99 trace",
        ] {
            let mut bytes = text.as_bytes().to_vec();
            bytes.resize(16, 0);
            bytes.extend_from_slice(b"\x01\x02rest");
            let head = Head::new(&bytes, Some("x.trace"));
            let sniffed = sniff(&head).map(|s| s.certainty);
            assert_eq!(sniffed, Some(Certainty::Certain), "{text}");
        }
        for other in [
            &b"go 1.19 trac"[..],
            b"",
            b"# tracer: nop\n",
            b"go 1.19 trace\0\0x",
        ] {
            assert!(sniff(&Head::new(other, None)).is_none());
        }
    }
}
