//! What can go wrong opening a trace-cmd `.dat` file.
//!
//! Damage found while the file's metadata is read stops the open with one
//! of these; damage inside the per-CPU ring-buffer data does not: it is
//! counted in the events summary and the rest is decoded.

use crate::kernel_events::tracing_data::TracingDataError;

/// The file versions this decoder reads.
pub const SUPPORTED_VERSIONS: &str = "6 and 7";

#[derive(Debug, thiserror::Error)]
pub enum TraceCmdError {
    #[error("not a trace-cmd file: the magic bytes 17 08 44 \"tracing\" are missing")]
    NotTraceCmd,
    #[error("trace-cmd file version {found:?} is not supported (supported: {SUPPORTED_VERSIONS})")]
    UnsupportedVersion { found: String },
    #[error(
        "trace-cmd file compressed with {name} {version}, which this decoder does not read (it reads zstd and zlib)"
    )]
    UnsupportedCompression { name: String, version: String },
    #[error(
        "the trace was recorded by a kernel with the pre-2.6.31 ring buffer layout, which is not supported"
    )]
    OldRingBuffer,
    #[error("trace-cmd file ends inside {what} (offset {offset})")]
    Truncated { what: &'static str, offset: u64 },
    #[error("trace-cmd file is corrupt in {what} (offset {offset}): {detail}")]
    Corrupt {
        what: &'static str,
        offset: u64,
        detail: String,
    },
    #[error("trace-cmd file has no buffer number {index} (it has {count})")]
    NoSuchBuffer { index: usize, count: usize },
    #[error("trace-cmd buffer {name:?} holds latency-tracer text, not ring-buffer pages")]
    LatencyBuffer { name: String },
    #[error(transparent)]
    TracingData(#[from] TracingDataError),
    #[error("reading the trace-cmd file failed in {what}: {source}")]
    Io {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
}

impl TraceCmdError {
    /// An I/O error while reading `what` at `offset`: end of file is
    /// `Truncated`, bad data `Corrupt`.
    pub fn io(what: &'static str, offset: u64) -> impl Fn(std::io::Error) -> TraceCmdError {
        move |e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => TraceCmdError::Truncated { what, offset },
            std::io::ErrorKind::InvalidData => TraceCmdError::Corrupt {
                what,
                offset,
                detail: e.to_string(),
            },
            _ => TraceCmdError::Io { what, source: e },
        }
    }

    pub fn corrupt(what: &'static str, offset: u64, detail: impl Into<String>) -> TraceCmdError {
        TraceCmdError::Corrupt {
            what,
            offset,
            detail: detail.into(),
        }
    }
}
