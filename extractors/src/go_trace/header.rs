//! The 16-byte header every Go execution trace starts with,
//! `go 1.NN trace` padded with NULs, and what its version number says about
//! the layout that follows: per-P batches (1.11–1.21, `events_v1.rs`) or
//! generations of per-M batches (1.22+, `events_v2.rs`).

use super::error::GoTraceError;

/// Bytes of the header.
pub const HEADER_LEN: usize = 16;

/// The versions this decoder reads, for error messages.
pub const SUPPORTED_VERSIONS: &str =
    "go1.11–go1.21 (per-P batch format) and go1.22–go1.26 (generation format)";

/// The trace format version: the `NN` of `go 1.NN trace`. Go writes the
/// version of the format, not of the toolchain (1.19 and 1.20 both write
/// `go 1.19`, 1.23 and 1.24 both write `go 1.23`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct TraceVersion {
    pub minor: u32,
}

/// The two layouts of the trace body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    /// 1.11–1.21: per-P batches ordered by goroutine sequence numbers,
    /// string and stack tables anywhere, frequency in the footer.
    PerProcBatches,
    /// 1.22+: self-contained generations of per-M batches, each with its
    /// own string and stack tables and frequency.
    Generations,
}

impl TraceVersion {
    /// The layout of this version's body.
    pub fn format(self) -> TraceFormat {
        if self.minor >= 22 {
            TraceFormat::Generations
        } else {
            TraceFormat::PerProcBatches
        }
    }
}

impl std::fmt::Display for TraceVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "go1.{}", self.minor)
    }
}

/// The version named by a header, whether or not it is supported.
fn header_minor(head: &[u8]) -> Option<u32> {
    let rest = head.strip_prefix(b"go 1.")?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 3 {
        return None;
    }
    let (num, tail) = rest.split_at(digits);
    let tail = tail.strip_prefix(b" trace")?;
    let minor = std::str::from_utf8(num).ok()?.parse().ok()?;
    // Everything after " trace" up to 16 bytes is NUL padding.
    let pad = HEADER_LEN.checked_sub(5 + digits + 6)?;
    if tail.len() < pad || tail.iter().take(pad).any(|&b| b != 0) {
        return None;
    }
    Some(minor)
}

/// True when `head` (at least the first 16 bytes of a file) is a Go
/// execution trace header of any version.
pub fn looks_like_go_trace(head: &[u8]) -> bool {
    head.get(..HEADER_LEN).and_then(header_minor).is_some()
}

/// Reads the header's version and checks that this decoder reads it.
pub fn parse_header(head: &[u8]) -> Result<TraceVersion, GoTraceError> {
    let bytes = head.get(..HEADER_LEN).unwrap_or(head);
    let Some(minor) = header_minor(bytes) else {
        return Err(GoTraceError::NotGoTrace {
            found: String::from_utf8_lossy(bytes).into_owned(),
        });
    };
    if (11..=26).contains(&minor) {
        Ok(TraceVersion { minor })
    } else {
        Err(GoTraceError::UnsupportedVersion {
            found: format!("1.{minor}"),
            supported: SUPPORTED_VERSIONS,
        })
    }
}

/// Reads and checks the header from the front of a stream.
pub fn read_header(reader: &mut impl std::io::Read) -> Result<TraceVersion, GoTraceError> {
    let mut head = [0u8; HEADER_LEN];
    let mut filled = 0;
    while filled < HEADER_LEN {
        let Some(rest) = head.get_mut(filled..) else {
            break;
        };
        match reader.read(rest) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    parse_header(head.get(..filled).unwrap_or(&[]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(text: &str) -> Vec<u8> {
        let mut h = text.as_bytes().to_vec();
        h.resize(HEADER_LEN, 0);
        h
    }

    #[test]
    fn reads_the_supported_versions_and_their_formats() {
        let v = parse_header(&header("go 1.19 trace")).unwrap();
        assert_eq!(v, TraceVersion { minor: 19 });
        assert_eq!(v.format(), TraceFormat::PerProcBatches);
        let v = parse_header(&header("go 1.22 trace")).unwrap();
        assert_eq!(v.format(), TraceFormat::Generations);
        assert_eq!(v.to_string(), "go1.22");
        assert!(looks_like_go_trace(&header("go 1.5 trace")));
    }

    #[test]
    fn old_and_future_versions_are_named_in_the_error() {
        for (text, found) in [("go 1.5 trace", "1.5"), ("go 1.27 trace", "1.27")] {
            match parse_header(&header(text)) {
                Err(GoTraceError::UnsupportedVersion { found: f, .. }) => assert_eq!(f, found),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn other_bytes_are_not_a_go_trace() {
        for bad in [
            &b"go 1.19 trace\0\0x"[..],
            b"go 1.19 trac",
            b"",
            b"go 1. trace\0\0\0\0\0",
            b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0",
        ] {
            assert!(matches!(
                parse_header(bad),
                Err(GoTraceError::NotGoTrace { .. })
            ));
            assert!(!looks_like_go_trace(bad));
        }
    }

    #[test]
    fn reads_the_header_from_a_short_stream() {
        let mut short: &[u8] = b"go 1.1";
        assert!(read_header(&mut short).is_err());
        let bytes = header("go 1.21 trace");
        let mut r = bytes.as_slice();
        assert_eq!(read_header(&mut r).unwrap().minor, 21);
    }
}
