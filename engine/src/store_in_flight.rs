//! Storing a file while its extractor reads it.
//!
//! Copying a 200 MB trace into the artifact store costs about half a second
//! of kernel write time, which used to sit in front of extraction on the
//! same core. Here a copier thread reads the source once, writes it into
//! staging while hashing, and hands the very same blocks to the extractor
//! through a bounded channel — so the bytes extracted are exactly the bytes
//! stored, and the second core pays for the copy.
//!
//! The artifact id (sha256) is normally the copier's own hash, known when
//! the copy ends: extraction runs meanwhile with a pending id that
//! [`crate::late_identity::LateIdSink`] replaces in every batch. The size and
//! modification time of the source are checked again when the copy ends; a
//! file that changed during the import is `ARTIFACT_INTEGRITY_FAILED` and
//! nothing is stored or published.
//!
//! When the store already holds an artifact of the same size (likely the
//! same file imported again) or the caller needs the id up front, a
//! read-only hash pass comes first instead, so bytes already stored are
//! neither copied nor extracted again; the copier's hash must then equal it.

use flameox_extractors::phase_cpu::{self, Phase};
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::thread::JoinHandle;
use std::time::SystemTime;

use crate::error::{ErrorCode, FlameoxError, Result, input_io_error, io_error};
use crate::fsutil::now_rfc3339;
use crate::late_identity::{LateArtifactId, PENDING_ARTIFACT_ID, ResolveOnDrop};
use crate::staging::StagingArea;
use crate::store::{
    self, ArtifactRecord, COPY_BLOCK_BYTES, HashingWriter, NewArtifact, check_regular_file,
};
use crate::workspace::Workspace;

/// Blocks in flight between the copier and the extractor (1 MiB each).
const BLOCKS_IN_FLIGHT: usize = 4;

/// A file on its way into the store.
pub enum StoringFile {
    /// The same bytes were stored before: extract from the stored payload.
    Placed(ArtifactRecord),
    /// The copier thread is running; [`Copying::take_reader`] streams it.
    Copying(Box<Copying>),
}

/// A running copy: the record it will become and the thread making it.
pub struct Copying {
    record: ArtifactRecord,
    tmp: PathBuf,
    blocks: Option<BlockReader>,
    thread: Option<JoinHandle<io::Result<(String, u64)>>>,
    /// Set when the id is the copier's hash (not known before the copy).
    late: Option<LateIdentity>,
    _staging: StagingArea,
}

/// What a copy whose id comes from the copier checks when it ends.
struct LateIdentity {
    id: Arc<LateArtifactId>,
    source: PathBuf,
    modified: Option<SystemTime>,
}

impl StoringFile {
    /// The artifact's identity and metadata (final once [`Self::finish`] returns).
    pub fn record(&self) -> &ArtifactRecord {
        match self {
            StoringFile::Placed(r) => r,
            StoringFile::Copying(c) => &c.record,
        }
    }

    /// Waits for the copy, checks it against the identity pass and places
    /// the artifact. Call it before publishing anything that names it.
    pub fn finish(self, ws: &Workspace) -> Result<ArtifactRecord> {
        match self {
            StoringFile::Placed(r) => Ok(r),
            StoringFile::Copying(mut c) => {
                // An extractor that never took (or already dropped) the
                // stream must not leave the copier blocked on a full channel.
                c.blocks = None;
                let copied = c
                    .thread
                    .take()
                    .ok_or_else(|| FlameoxError::internal("artifact copy finished twice"))?
                    .join()
                    .map_err(|_| FlameoxError::internal("the artifact copier thread panicked"))?
                    .map_err(|e| io_error("copying the input into the artifact store", e))?;
                let expected = c.record.artifact_id.trim_start_matches("sha256:");
                let changed = match &c.late {
                    Some(late) => {
                        copied.1 != c.record.bytes || source_state(&late.source).1 != late.modified
                    }
                    None => copied.0 != expected || copied.1 != c.record.bytes,
                };
                if changed {
                    return Err(FlameoxError::new(
                        ErrorCode::ArtifactIntegrityFailed,
                        "the input file changed while it was being imported",
                    )
                    .remedy("import it again once the program writing it has finished"));
                }
                let new = NewArtifact {
                    hex: copied.0,
                    bytes: copied.1,
                    kind: &c.record.kind,
                    original_name: c.record.original_name.clone(),
                    payload_name: c.record.payload_name.clone(),
                };
                store::place_artifact(ws, &c.tmp, new)
            }
        }
    }
}

impl Copying {
    /// The stream of copied blocks, for the extractor (once).
    pub fn take_reader(&mut self) -> Option<BlockReader> {
        self.blocks.take()
    }

    /// The slot the id arrives in when it is the copier's hash (the record
    /// then says [`PENDING_ARTIFACT_ID`] until [`StoringFile::finish`]).
    pub fn late_id(&self) -> Option<Arc<LateArtifactId>> {
        self.late.as_ref().map(|l| l.id.clone())
    }
}

/// When the id may come from the copier instead of a hash pass first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdTiming {
    /// The extractor's rows name the artifact only in `artifact_id`
    /// columns, which [`crate::late_identity::LateIdSink`] stamps.
    LateAllowed,
    /// The id is needed before extraction (e.g. hashed into row ids).
    UpFront,
}

/// Size and modification time of `path` (`(0, None)` when unreadable).
fn source_state(path: &Path) -> (u64, Option<SystemTime>) {
    match std::fs::metadata(path) {
        Ok(m) => (m.len(), m.modified().ok()),
        Err(_) => (0, None),
    }
}

/// The file name of an input (never its folder), for messages.
fn source_name(path: &Path) -> Option<&str> {
    path.file_name().and_then(|n| n.to_str())
}

/// True when the store may already hold these bytes: an artifact of the
/// same size exists (or the store cannot be listed).
fn maybe_stored(ws: &Workspace, bytes: u64) -> bool {
    store::list_artifacts(ws).map_or(true, |all| all.iter().any(|a| a.bytes == bytes))
}

/// Starts the copier thread. The id is the copier's hash when `timing`
/// allows and the bytes cannot be stored already; otherwise a read-only
/// hash pass comes first and bytes already stored are found, not copied.
pub fn begin_store_file(
    ws: &Workspace,
    source: &Path,
    kind: &str,
    timing: IdTiming,
) -> Result<StoringFile> {
    check_regular_file(source)?;
    let (size, modified) = source_state(source);
    let (artifact_id, bytes, late) = if timing == IdTiming::LateAllowed && !maybe_stored(ws, size) {
        let late = LateIdentity {
            id: LateArtifactId::new(),
            source: source.to_path_buf(),
            modified,
        };
        (PENDING_ARTIFACT_ID.to_string(), size, Some(late))
    } else {
        let (hex, bytes) = store::sha256_file(source).map_err(|e| {
            input_io_error("path", source_name(source), "reading the input file", e)
        })?;
        let artifact_id = format!("sha256:{hex}");
        if let Ok(existing) = store::read_artifact(ws, &artifact_id)
            && store::payload_path(ws, &existing).is_file()
        {
            return Ok(StoringFile::Placed(existing));
        }
        (artifact_id, bytes, None)
    };
    let original_name = store::original_name(source);
    let record = ArtifactRecord {
        schema_version: 1,
        artifact_id,
        bytes,
        kind: kind.to_owned(),
        payload_name: format!("payload{}", store::payload_extension(&original_name)),
        original_name,
        stored_at: now_rfc3339(),
    };
    let staging = StagingArea::create(ws, &format!("artifact-{}", uuid::Uuid::now_v7()))?;
    let tmp = staging.dir().join("payload.part");
    let input = File::open(source)
        .map_err(|e| input_io_error("path", source_name(source), "opening the input file", e))?;
    let out = HashingWriter::create(&tmp)
        .map_err(|e| io_error("copying the input into the artifact store", e))?;
    let (full_tx, full_rx) = sync_channel(BLOCKS_IN_FLIGHT);
    let (empty_tx, empty_rx) = channel();
    let announce = late.as_ref().map(|l| ResolveOnDrop(l.id.clone()));
    let thread = std::thread::Builder::new()
        .name("flameox-store-copy".into())
        .spawn(move || {
            let _phase = phase_cpu::enter(Phase::Hash);
            copy_and_forward(input, out, full_tx, empty_rx, announce)
        })
        .map_err(|e| io_error("starting the artifact copier", e))?;
    Ok(StoringFile::Copying(Box::new(Copying {
        record,
        tmp,
        blocks: Some(BlockReader {
            current: Vec::new(),
            at: 0,
            full: full_rx,
            empty: empty_tx,
        }),
        thread: Some(thread),
        late,
        _staging: staging,
    })))
}

/// The copier: every block is written (and hashed) and, while the reader
/// is still listening, forwarded to it. Runs to the end of the file even
/// when the extractor stops early, so the stored copy is always whole.
/// `announce` gets the id as soon as the last block is hashed (before the
/// file is synced); dropped unresolved, it reports the copy as failed.
fn copy_and_forward(
    mut input: File,
    mut out: HashingWriter,
    full: SyncSender<Vec<u8>>,
    empty: Receiver<Vec<u8>>,
    announce: Option<ResolveOnDrop>,
) -> io::Result<(String, u64)> {
    let mut forward = Some(full);
    loop {
        let mut block = empty
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(COPY_BLOCK_BYTES));
        block.resize(COPY_BLOCK_BYTES, 0);
        let n = loop {
            match input.read(&mut block) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        if n == 0 {
            if let Some(announce) = &announce {
                let (hex, _) = out.digest();
                announce.0.resolve(Ok(format!("sha256:{hex}")));
            }
            return out.finish();
        }
        block.truncate(n);
        out.write_all(&block)?;
        if let Some(tx) = &forward
            && tx.send(block).is_err()
        {
            forward = None;
        }
    }
}

/// The extractor's side of the copy: a `Read` over the forwarded blocks.
/// The end of the channel reads as the end of input; a copy error surfaces
/// from [`StoringFile::finish`], which runs before anything is published.
pub struct BlockReader {
    current: Vec<u8>,
    at: usize,
    full: Receiver<Vec<u8>>,
    empty: Sender<Vec<u8>>,
}

impl Read for BlockReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.current.len() {
            match self.full.recv() {
                Ok(next) => {
                    let used = std::mem::replace(&mut self.current, next);
                    self.at = 0;
                    // The copier may already be gone; a lost block is only
                    // a lost allocation to reuse.
                    let _ = self.empty.send(used);
                }
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len() - self.at);
        buf[..n].copy_from_slice(&self.current[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let project = tempfile::tempdir().unwrap();
        let (ws, _) = Workspace::init(project.path()).unwrap();
        (project, ws)
    }

    #[test]
    fn the_reader_sees_exactly_the_stored_bytes_and_the_copy_is_placed() {
        let (project, ws) = workspace();
        let source = project.path().join("big.json");
        let bytes: Vec<u8> = (0..(3 * COPY_BLOCK_BYTES + 12345))
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        std::fs::write(&source, &bytes).unwrap();
        let StoringFile::Copying(mut copying) =
            begin_store_file(&ws, &source, "x", IdTiming::LateAllowed).unwrap()
        else {
            panic!("a new file must be copied");
        };
        // A new size in an empty store: the id is the copier's hash.
        assert_eq!(copying.record.artifact_id, PENDING_ARTIFACT_ID);
        let late = copying.late_id().unwrap();
        let mut read = Vec::new();
        copying
            .take_reader()
            .unwrap()
            .read_to_end(&mut read)
            .unwrap();
        assert_eq!(read, bytes);
        let announced = late.wait().unwrap();
        let record = StoringFile::Copying(copying).finish(&ws).unwrap();
        assert_eq!(announced, record.artifact_id);
        assert_eq!(record.bytes, bytes.len() as u64);
        assert_eq!(
            std::fs::read(store::payload_path(&ws, &record)).unwrap(),
            bytes
        );
        assert!(store::verify_payload(&ws, &record).unwrap());
        // The same bytes again are found, not copied.
        let again = begin_store_file(&ws, &source, "x", IdTiming::LateAllowed).unwrap();
        assert!(matches!(again, StoringFile::Placed(_)));
        assert_eq!(again.finish(&ws).unwrap().artifact_id, record.artifact_id);
    }

    #[test]
    fn a_reader_that_stops_early_still_leaves_a_whole_copy() {
        let (project, ws) = workspace();
        let source = project.path().join("t.json");
        let bytes = vec![b'x'; 10 * COPY_BLOCK_BYTES];
        std::fs::write(&source, &bytes).unwrap();
        let StoringFile::Copying(mut copying) =
            begin_store_file(&ws, &source, "x", IdTiming::LateAllowed).unwrap()
        else {
            panic!("a new file must be copied");
        };
        let mut reader = copying.take_reader().unwrap();
        let mut first = [0u8; 100];
        reader.read_exact(&mut first).unwrap();
        drop(reader);
        let record = StoringFile::Copying(copying).finish(&ws).unwrap();
        assert!(store::verify_payload(&ws, &record).unwrap());
        assert_eq!(record.bytes, bytes.len() as u64);
    }

    /// Starts a copy of `source`, holds the stream so the copier waits,
    /// runs `change` on the file, then finishes.
    fn copy_while(source: &Path, timing: IdTiming, change: impl FnOnce(&Path)) -> FlameoxError {
        let (_project, ws) = workspace();
        let StoringFile::Copying(mut copying) = begin_store_file(&ws, source, "x", timing).unwrap()
        else {
            panic!("a new file must be copied");
        };
        assert_eq!(copying.late.is_some(), timing == IdTiming::LateAllowed);
        let reader = copying.take_reader().unwrap();
        change(source);
        drop(reader);
        let err = StoringFile::Copying(copying).finish(&ws).unwrap_err();
        assert!(store::list_artifacts(&ws).unwrap().is_empty());
        err
    }

    #[test]
    fn a_file_that_changes_during_the_import_is_an_integrity_failure() {
        let project = tempfile::tempdir().unwrap();
        // Larger than the blocks in flight: the copier cannot reach the end
        // of the file before the stream is read or dropped.
        let len = (BLOCKS_IN_FLIGHT + 4) * COPY_BLOCK_BYTES;
        for timing in [IdTiming::LateAllowed, IdTiming::UpFront] {
            let source = project.path().join("growing.json");
            std::fs::write(&source, vec![b'a'; len]).unwrap();
            let err = copy_while(&source, timing, |path| {
                let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
                f.write_all(&vec![b'b'; 3 * COPY_BLOCK_BYTES]).unwrap();
            });
            assert_eq!(err.code, ErrorCode::ArtifactIntegrityFailed, "{timing:?}");
            // Same size, other bytes near the end (after the blocks the
            // copier has read): caught by the hash pass, or by the
            // modification time when the id is the copier's hash.
            let source = project.path().join("rewritten.json");
            std::fs::write(&source, vec![b'a'; len]).unwrap();
            let err = copy_while(&source, timing, |path| {
                std::thread::sleep(std::time::Duration::from_millis(30));
                let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
                std::os::unix::fs::FileExt::write_all_at(&f, b"zzzz", (len - 10) as u64).unwrap();
            });
            assert_eq!(err.code, ErrorCode::ArtifactIntegrityFailed, "{timing:?}");
        }
    }
}
