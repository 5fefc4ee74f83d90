//! The contract between an extractor and whoever drives it (the engine).

use std::collections::BTreeMap;

use arrow::record_batch::RecordBatch;
use serde::{Deserialize, Serialize};

use crate::schema::EvidenceTable;

/// Error a sink returns; the extractor stops and passes it up unchanged.
pub type SinkError = Box<dyn std::error::Error + Send + Sync>;

/// Receives record batches as an extractor fills them (at most
/// [`ExtractOptions::batch_rows`] rows each). Batches of one table arrive in
/// the order the table's files must keep (see [`EvidenceTable::sort_columns`]).
pub trait BatchSink {
    fn write_batch(&mut self, table: EvidenceTable, batch: RecordBatch) -> Result<(), SinkError>;
}

/// Counts rows per table as batches pass through to the real sink (the
/// numbers an [`ExtractionSummary`] reports).
pub struct CountingSink<'s, 'a> {
    pub inner: &'s mut dyn BatchSink,
    pub rows: &'a mut BTreeMap<String, u64>,
}

impl BatchSink for CountingSink<'_, '_> {
    fn write_batch(&mut self, table: EvidenceTable, batch: RecordBatch) -> Result<(), SinkError> {
        *self.rows.entry(table.name().to_string()).or_insert(0) += batch.num_rows() as u64;
        self.inner.write_batch(table, batch)
    }
}

/// Progress and cancellation, polled by extractors between batches of work.
pub trait ExtractObserver: Sync {
    /// Input bytes consumed so far (compressed bytes for gzip input).
    fn bytes_read(&self, _bytes: u64) {}
    /// When this returns true the extractor stops with [`ExtractError::Cancelled`].
    fn cancelled(&self) -> bool {
        false
    }
}

/// An observer that reports nothing and never cancels.
pub struct NoObserver;
impl ExtractObserver for NoObserver {}

/// What an extraction is for: the ids stamped on every row, and its limits.
#[derive(Debug, Clone)]
pub struct ExtractOptions {
    pub run_id: String,
    pub artifact_id: String,
    /// Forced producer (`torch.profiler`, `chrome`, …); `None` means detect.
    pub producer: Option<String>,
    /// Rows per emitted record batch (default 32,768: half a Parquet row
    /// group, so fewer rows wait in the queues to the writer).
    pub batch_rows: usize,
    /// Upper bound on `args_json` bytes per row; longer values are cut at a
    /// UTF-8 boundary and end with [`ARGS_TRUNCATED_MARKER`].
    pub max_args_bytes: usize,
    /// A folder for spill files (removed as soon as they are opened); `None`
    /// keeps everything in memory.
    pub spill_dir: Option<std::path::PathBuf>,
    /// Events a trace extractor holds in memory before it writes them to
    /// sorted runs in `spill_dir` (bounded-memory import; about 130 bytes
    /// per event). Ignored without a `spill_dir`.
    pub spill_after_events: usize,
    /// Import-time variant (`--variant`), stamped on every `measurements` row.
    pub variant: Option<String>,
    /// Import-time parameters (`--param k=v`), merged into every
    /// `measurements` row's `parameters_json`.
    pub parameters: BTreeMap<String, String>,
}

/// Default [`ExtractOptions::spill_after_events`]: about 65 MiB of events
/// (a Kineto trace of about 130 MB). Past it, imports take 1.1–1.2× the
/// time of holding every event and peak RSS stays within `quality.md`'s
/// 256 MiB + 10 % of the input (`docs/performance.md`, "Bounded-memory
/// events").
pub const DEFAULT_SPILL_AFTER_EVENTS: usize = 1 << 19;

/// Appended to an `args_json` value that was cut to the row bound.
pub const ARGS_TRUNCATED_MARKER: &str = "…[truncated]";

impl ExtractOptions {
    pub fn new(run_id: impl Into<String>, artifact_id: impl Into<String>) -> Self {
        ExtractOptions {
            run_id: run_id.into(),
            artifact_id: artifact_id.into(),
            producer: None,
            batch_rows: 32 * 1024,
            max_args_bytes: 4096,
            spill_dir: None,
            spill_after_events: DEFAULT_SPILL_AFTER_EVENTS,
            variant: None,
            parameters: BTreeMap::new(),
        }
    }
}

/// Why an extraction failed. Nothing it emitted may be published.
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    /// The input is not in a form this extractor can read.
    #[error("{message}")]
    Parse {
        message: String,
        /// Byte offset (in the decompressed stream) where reading failed.
        offset: Option<u64>,
    },
    /// The input (or its decompressed form) exceeds a configured limit.
    #[error("{message}")]
    TooLarge { message: String },
    #[error("reading the input failed: {0}")]
    Io(std::io::Error),
    #[error("writing evidence failed: {0}")]
    Sink(SinkError),
    #[error("extraction was cancelled")]
    Cancelled,
    /// The format is recognised but this version of it is not read.
    #[error("{format} version {found} is not supported (this build reads {supported})")]
    UnsupportedVersion {
        format: &'static str,
        found: String,
        supported: String,
    },
}

/// A typed limitation: something in the input was handled by a rule rather
/// than read as written. Stable `code`, how many times, and one example.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limitation {
    pub code: String,
    pub count: u64,
    pub message: String,
}

/// The typed summary every extractor returns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExtractionSummary {
    pub extractor: String,
    pub extractor_version: String,
    /// The input format (`chrome_json`, …).
    pub format: String,
    /// Detected or forced producer (`torch.profiler`, `chrome`, `py-spy`, …).
    pub producer: String,
    /// Rows written per table name.
    pub rows: BTreeMap<String, u64>,
    /// Earliest start and latest end over all events, in ns.
    pub time_span_ns: Option<(i64, i64)>,
    pub tracks: u64,
    /// Coverage flags (`correlation_ids`, `stream_identity`, `phase_annotations`, …).
    pub coverage: BTreeMap<String, bool>,
    pub limitations: Vec<Limitation>,
    /// Bounded producer metadata worth keeping on the run (e.g. `distributedInfo`).
    pub metadata: BTreeMap<String, serde_json::Value>,
    /// Bytes of (decompressed) input read.
    pub input_bytes: u64,
    /// Events seen in the input, whatever table they went to.
    pub input_events: u64,
    /// The longest `trace_events` row (ns): how far before a time window a
    /// slice overlapping it can start. Absent in older manifests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_event_dur_ns: Option<i64>,
}

impl From<std::io::Error> for ExtractError {
    /// Plain I/O errors stay [`ExtractError::Io`]; the markers that
    /// [`crate::input`] wraps in an `io::Error` become their typed variants.
    fn from(error: std::io::Error) -> Self {
        if let Some(inner) = error.get_ref() {
            if let Some(big) = inner.downcast_ref::<crate::input_errors::DecompressedTooLarge>() {
                return ExtractError::TooLarge {
                    message: big.to_string(),
                };
            }
            if let Some(bad) = inner.downcast_ref::<crate::input_errors::CorruptCompressedStream>()
            {
                return ExtractError::Parse {
                    message: bad.to_string(),
                    offset: None,
                };
            }
        }
        ExtractError::Io(error)
    }
}

/// Accumulates typed limitations: one entry per stable code, with a count and
/// the first example message.
#[derive(Debug, Default, Clone)]
pub struct LimitationLog {
    entries: BTreeMap<&'static str, (u64, String)>,
}

impl LimitationLog {
    /// Counts one occurrence of `code`; `message` is built only for the first.
    pub fn note(&mut self, code: &'static str, message: impl FnOnce() -> String) {
        self.note_n(code, 1, message);
    }

    /// Counts `n` occurrences of `code`.
    pub fn note_n(&mut self, code: &'static str, n: u64, message: impl FnOnce() -> String) {
        if n == 0 {
            return;
        }
        match self.entries.get_mut(code) {
            Some(entry) => entry.0 = entry.0.saturating_add(n),
            None => {
                self.entries.insert(code, (n, message()));
            }
        }
    }

    /// How many times `code` was noted.
    pub fn count(&self, code: &str) -> u64 {
        self.entries.get(code).map_or(0, |e| e.0)
    }

    /// The limitations, ordered by code.
    pub fn into_limitations(self) -> Vec<Limitation> {
        self.entries
            .into_iter()
            .map(|(code, (count, message))| Limitation {
                code: code.to_string(),
                count,
                message,
            })
            .collect()
    }
}
