//! Why decoding a Go execution trace failed, and the limits that bound what
//! the decoder holds in memory. Damage found after some of the trace was
//! read is not an error: it becomes a note in the summary and the decoder
//! returns what it could read (see `decode.rs`).

/// The ways a Go execution trace can fail to decode.
#[derive(Debug, thiserror::Error)]
pub enum GoTraceError {
    /// The first 16 bytes are not `go 1.NN trace` padded with NULs.
    #[error("not a Go execution trace (header {found:?})")]
    NotGoTrace { found: String },
    /// A Go trace header of a version this decoder does not read.
    #[error("Go execution trace version go{found} is not supported (supported: {supported})")]
    UnsupportedVersion {
        found: String,
        supported: &'static str,
    },
    /// The bytes are not a valid trace of the header's version, and nothing
    /// usable was read before the damage.
    #[error("malformed Go execution trace at byte {offset}: {what}")]
    Malformed { offset: u64, what: String },
    /// The trace never states its timestamp frequency (a 1.11–1.21 trace
    /// writes it in its footer, so this usually means the file was cut).
    #[error("Go execution trace has no frequency event (truncated?)")]
    MissingFrequency,
    /// The input exceeds a [`DecodeLimits`] bound.
    #[error("Go execution trace too large: {what} is {size} bytes, the limit is {limit}")]
    TooLarge {
        what: &'static str,
        size: u64,
        limit: u64,
    },
    #[error("reading the Go execution trace failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Bounds on what the decoder holds. A 1.11–1.21 trace must be held whole
/// (its per-P batches are merged by causal order, and an event can depend
/// on one anywhere later in the file); a 1.22+ trace is held one generation
/// at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeLimits {
    /// Largest 1.11–1.21 trace accepted (bytes after the header).
    pub max_v1_bytes: u64,
    /// Largest 1.22+ generation accepted (sum of its batch payloads).
    pub max_generation_bytes: u64,
}

impl Default for DecodeLimits {
    fn default() -> Self {
        DecodeLimits {
            max_v1_bytes: 1 << 30,
            max_generation_bytes: 256 << 20,
        }
    }
}

/// Counts damage and oddities by kind, so a damaged trace yields a bounded
/// list of notes however many events are affected.
#[derive(Debug, Default, Clone)]
pub(crate) struct NoteLog {
    counts: std::collections::BTreeMap<&'static str, (u64, String)>,
}

impl NoteLog {
    /// Records one occurrence of `kind`; the first `example` is kept.
    pub(crate) fn add(&mut self, kind: &'static str, example: impl FnOnce() -> String) {
        let entry = self.counts.entry(kind).or_insert_with(|| (0, example()));
        entry.0 = entry.0.saturating_add(1);
    }

    /// How many times `kind` was recorded.
    #[cfg(test)]
    pub(crate) fn count(&self, kind: &str) -> u64 {
        self.counts.get(kind).map_or(0, |(n, _)| *n)
    }

    /// Moves every note of `other` into this log.
    pub(crate) fn merge(&mut self, other: NoteLog) {
        for (kind, (n, example)) in other.counts {
            let entry = self.counts.entry(kind).or_insert((0, example));
            entry.0 = entry.0.saturating_add(n);
        }
    }

    /// One line per kind: `kind ×count: first example`.
    pub(crate) fn lines(&self) -> Vec<String> {
        self.counts
            .iter()
            .map(|(kind, (n, example))| format!("{kind} x{n}: {example}"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_count_by_kind_and_keep_the_first_example() {
        let mut log = NoteLog::default();
        log.add("a", || "first".into());
        log.add("a", || "second".into());
        log.add("b", || "only".into());
        let mut other = NoteLog::default();
        other.add("a", || "third".into());
        log.merge(other);
        assert_eq!(log.count("a"), 3);
        assert_eq!(log.lines(), vec!["a x3: first", "b x1: only"]);
    }

    #[test]
    fn errors_name_what_was_found() {
        let e = GoTraceError::UnsupportedVersion {
            found: "1.10".into(),
            supported: "x",
        };
        assert!(e.to_string().contains("go1.10"));
    }
}
