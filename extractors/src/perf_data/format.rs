//! perf.data in the format registry: the magic `PERFILE2` (little-endian
//! writer; `2ELIFREP` big-endian), followed by a 16-byte size in pipe mode
//! (`perf record -o -`) or the file header's size. The version-1 magic
//! `PERFFILE` is recognised so that it is refused by its version, not
//! taken for something else. Read from the stored file: file mode finds
//! its attrs and features by offset.

use crate::format_descriptor::{Extractor, Format, Reading};
use crate::sniff::{Head, Sniffed};

use super::extract::{PERF_DATA_EXTRACTOR_NAME, PERF_DATA_EXTRACTOR_VERSION, extract_perf_data};

pub static FORMAT: Format = Format {
    kind: crate::format_kind::FormatKind::PerfData,
    aliases: &["perf", "perf_record"],
    description: "Linux perf record files (perf.data version 2, file and pipe mode, either byte order) → call-stack samples under cpu.samples (kernel and user frames; named from this machine's files when their build ids match, else module+offset), sched tracepoints as per-CPU sched_slice and per-thread thread_state rows",
    sniff: Some(sniff),
    reading: Reading::StoredFile(
        Extractor {
            name: PERF_DATA_EXTRACTOR_NAME,
            version: PERF_DATA_EXTRACTOR_VERSION,
        },
        extract_perf_data,
    ),
    measurements: false,
};

/// The pipe-mode header's size field (the file header is larger).
const PIPE_HEADER_SIZE: u64 = 16;

fn sniff(head: &Head<'_>) -> Option<Sniffed> {
    let magic = head.bytes.get(..8)?;
    let size = |big: bool| {
        let word: [u8; 8] = head.bytes.get(8..16)?.try_into().ok()?;
        Some(if big {
            u64::from_be_bytes(word)
        } else {
            u64::from_le_bytes(word)
        })
    };
    match magic {
        b"PERFILE2" | b"2ELIFREP" => {
            if size(magic == b"2ELIFREP") == Some(PIPE_HEADER_SIZE) {
                Sniffed::certain(
                    Some("perf"),
                    "perf.data pipe-mode magic `PERFILE2` with a 16-byte header",
                )
            } else {
                Sniffed::certain(Some("perf"), "perf.data magic `PERFILE2`")
            }
        }
        b"PERFFILE" | b"ELIFFREP" => Sniffed::certain(
            Some("perf"),
            "perf.data version-1 magic `PERFFILE` (this version is not read)",
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sniff::Certainty;

    fn head_of(bytes: &[u8]) -> Option<Sniffed> {
        let head = Head {
            bytes,
            body: bytes,
            name: String::new(),
            json: crate::sniff::JsonHead::NotJson,
            protobuf: None,
        };
        sniff(&head)
    }

    #[test]
    fn both_byte_orders_pipe_mode_and_version_one_are_recognised() {
        let mut file = b"PERFILE2".to_vec();
        file.extend_from_slice(&104u64.to_le_bytes());
        let mut pipe = b"PERFILE2".to_vec();
        pipe.extend_from_slice(&16u64.to_le_bytes());
        let mut big_pipe = b"2ELIFREP".to_vec();
        big_pipe.extend_from_slice(&16u64.to_be_bytes());
        for (bytes, reason) in [
            (&file[..], "perf.data magic"),
            (&pipe[..], "pipe-mode"),
            (&big_pipe[..], "pipe-mode"),
            (&b"2ELIFREP"[..], "perf.data magic"),
            (&b"PERFFILE\0\0"[..], "version-1"),
        ] {
            let s = head_of(bytes).unwrap_or_else(|| panic!("{bytes:?} not sniffed"));
            assert_eq!(s.certainty, Certainty::Certain);
            assert_eq!(s.producer, Some("perf"));
            assert!(s.reason.contains(reason), "{}", s.reason);
        }
        for other in [&b"PERFILE"[..], b"", b"SQLite format 3\0", b"perf.data"] {
            assert!(head_of(other).is_none(), "{other:?}");
        }
    }
}
