//! The extractor's own promises, below the end-to-end tests: it stops when
//! cancelled, reports progress up to the file's size, and answers inputs
//! it cannot read with typed errors.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::api::{BatchSink, ExtractError, ExtractObserver, ExtractOptions, SinkError};
use crate::schema::EvidenceTable;

use super::extract_perf_data;

#[derive(Default)]
struct Rows(u64);

impl BatchSink for Rows {
    fn write_batch(
        &mut self,
        table: EvidenceTable,
        batch: arrow::record_batch::RecordBatch,
    ) -> Result<(), SinkError> {
        assert_eq!(batch.schema(), table.schema(), "schema of {}", table.name());
        self.0 += batch.num_rows() as u64;
        Ok(())
    }
}

/// Cancels once `cancel_after` bytes were read; remembers the progress.
struct Watch {
    cancel_after: u64,
    read: AtomicU64,
}

impl ExtractObserver for Watch {
    fn bytes_read(&self, bytes: u64) {
        self.read.fetch_max(bytes, Ordering::Relaxed);
    }
    fn cancelled(&self) -> bool {
        self.read.load(Ordering::Relaxed) >= self.cancel_after
    }
}

fn corpus_file(rel: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("FLAMEOX_CORPUS_DIR")).join(rel)
}

fn extract(path: &std::path::Path, cancel_after: u64) -> (Result<u64, ExtractError>, u64) {
    let options = ExtractOptions::new("r", "a");
    let watch = Watch {
        cancel_after,
        read: AtomicU64::new(0),
    };
    let mut rows = Rows::default();
    let out = extract_perf_data(path, &options, &mut rows, &watch)
        .map(|s| s.rows.get("samples").copied().unwrap_or(0));
    (out, watch.read.load(Ordering::Relaxed))
}

#[test]
#[cfg_attr(
    corpus_absent,
    ignore = "needs the shared corpus: bash benches/corpus.sh fetch --from <mirror>, or set FLAMEOX_CORPUS"
)]
fn progress_reaches_the_file_size_and_cancellation_stops_the_read() {
    let path = corpus_file("linux/perf_sched_tracepoints.perf.data");
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let (whole, read) = extract(&path, u64::MAX);
    assert!(whole.is_ok(), "{whole:?}");
    assert_eq!(read, size);
    for cancel_after in [0, 1, size / 3, size * 2 / 3] {
        let (cut, read) = extract(&path, cancel_after);
        assert!(matches!(cut, Err(ExtractError::Cancelled)), "{cut:?}");
        assert!(read < size, "stopped at {read} of {size}");
    }
}

#[test]
fn inputs_that_are_not_readable_perf_data_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{e}"));
        path
    };
    let mut v1 = b"PERFFILE".to_vec();
    v1.extend_from_slice(&[0u8; 200]);
    match extract(&write("v1", &v1), u64::MAX).0 {
        Err(ExtractError::UnsupportedVersion { format, found, .. }) => {
            assert_eq!(format, "perf_data");
            assert!(found.starts_with('1'), "{found}");
        }
        other => panic!("{other:?}"),
    }
    for bytes in [
        &b""[..],
        b"hello, world",
        b"PERFILE2",
        b"PERFILE2\x10\0\0\0\0\0\0\0",
    ] {
        let got = extract(&write("x", bytes), u64::MAX).0;
        assert!(
            matches!(got, Err(ExtractError::Parse { .. })),
            "{bytes:?}: {got:?}"
        );
    }
}
