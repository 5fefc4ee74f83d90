//! Sorted runs of records in one unlinked spill file, and their k-way
//! merge: the external sort behind spilled callstack samples
//! ([`crate::timed_samples`]) and Perfetto's counter values and ftrace
//! records. Trace events have their own [`crate::trace_events::runs`], which
//! also renames tracks.
//!
//! A run is written whole, already sorted, each record behind its 4-byte
//! length; [`SortedRuns::merge`] reads every run a block at a time, so
//! memory holds one block per run, never the records.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::collections::binary_heap::PeekMut;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::marker::PhantomData;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Creates a read-write file in `dir` and unlinks it at once, so it
/// vanishes with the process whatever happens (crash, kill, error).
pub fn open_unlinked(dir: &std::path::Path, label: &str) -> io::Result<File> {
    #[cfg(test)]
    if full_disk::covers(dir, label) {
        return std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/full");
    }
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let serial = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let name = format!("{label}-{}-{nanos}-{serial}.spill", std::process::id());
    let path = dir.join(name);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)?;
    std::fs::remove_file(&path)?;
    Ok(file)
}

/// Tests: spill files that behave like a full disk. A `(folder, label)`
/// registered here makes [`open_unlinked`] open `/dev/full`, where every
/// write fails with "no space left on device"; keyed by folder so tests
/// running beside each other are not affected.
#[cfg(test)]
pub mod full_disk {
    use std::path::{Path, PathBuf};
    use std::sync::Mutex;

    static FULL: Mutex<Vec<(PathBuf, String)>> = Mutex::new(Vec::new());

    pub fn register(dir: &Path, label: &str) {
        if let Ok(mut full) = FULL.lock() {
            full.push((dir.to_path_buf(), label.to_owned()));
        }
    }

    pub(super) fn covers(dir: &Path, label: &str) -> bool {
        FULL.lock()
            .map(|full| full.iter().any(|(d, l)| d == dir && l == label))
            .unwrap_or(false)
    }
}

/// Bytes read from all runs at once during a merge.
const MERGE_READ_BYTES: usize = 8 << 20;
/// Bytes each run reads at a time when `runs` runs are merged: the merge
/// holds [`MERGE_READ_BYTES`] in all, 4 KiB to 1 MiB per run.
pub(crate) fn merge_block_bytes(runs: usize) -> usize {
    (MERGE_READ_BYTES / runs.max(1)).clamp(4 << 10, 1 << 20)
}

/// Bytes of a record's length prefix.
const LEN_BYTES: usize = 4;

/// A record that can leave memory for a run.
pub trait RunRecord: Sized {
    /// The merge order; runs must be written in it.
    type Key: Ord;
    fn key(&self) -> Self::Key;
    /// Appends the record's bytes to `out`.
    fn encode(&self, out: &mut Vec<u8>);
    /// The record `encode` wrote, `None` for bytes that are not one.
    fn decode(bytes: &[u8]) -> Option<Self>;
}

/// Where a list held up to a budget spills: its folder and budget, its
/// runs once one was written, and the first failure (kept for the read,
/// which then fails the extraction).
pub struct RunSpill<R> {
    dir: PathBuf,
    label: &'static str,
    budget: usize,
    runs: Option<SortedRuns<R>>,
    error: Option<io::Error>,
}

impl<R: RunRecord> RunSpill<R> {
    pub fn new(dir: &Path, label: &'static str, budget: usize) -> Self {
        RunSpill {
            dir: dir.to_path_buf(),
            label,
            budget: budget.max(1),
            runs: None,
            error: None,
        }
    }

    /// Whether a list holding `held` records should write a run now.
    pub fn full(&self, held: usize) -> bool {
        held >= self.budget && self.error.is_none()
    }

    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Whether some run was written.
    pub fn spilled(&self) -> bool {
        self.runs.is_some()
    }

    /// Writes `records` (in key order) as one run; `false` (and the error
    /// kept) when that failed.
    pub fn write(&mut self, records: impl Iterator<Item = R>) -> bool {
        if self.error.is_some() {
            return false;
        }
        let runs = match self.runs.take() {
            Some(runs) => Ok(runs),
            None => SortedRuns::create(&self.dir, self.label),
        };
        match runs.and_then(|mut runs| runs.write_run(records).map(|()| runs)) {
            Ok(runs) => {
                self.runs = Some(runs);
                true
            }
            Err(e) => {
                self.error = Some(e);
                false
            }
        }
    }

    /// The merge of every run written, or the first failure.
    pub fn merge(&mut self) -> io::Result<Option<Merge<'_, R>>> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.runs.as_mut().map(SortedRuns::merge).transpose()
    }
}

/// A record of a list replayed in time order, records at one time in
/// input order (Perfetto's ftrace records and counter values).
pub trait TimedRecord: Sized {
    fn ts(&self) -> i64;
    /// Appends the record's bytes to `out`.
    fn encode(&self, out: &mut Vec<u8>);
    /// The record `encode` wrote, `None` for bytes that are not one.
    fn decode(bytes: &[u8]) -> Option<Self>;
}

/// A timed record and its input position.
pub struct InputOrdered<T> {
    seq: u64,
    record: T,
}

impl<T: TimedRecord> RunRecord for InputOrdered<T> {
    type Key = (i64, u64);

    fn key(&self) -> (i64, u64) {
        (self.record.ts(), self.seq)
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.seq.to_le_bytes());
        self.record.encode(out);
    }

    fn decode(bytes: &[u8]) -> Option<Self> {
        let (seq, rest) = bytes.split_at_checked(8)?;
        Some(InputOrdered {
            seq: u64::from_le_bytes(seq.try_into().ok()?),
            record: T::decode(rest)?,
        })
    }
}

/// A list held up to a budget whose overflow goes to runs in time order,
/// records at one time in input order: each run is the held list sorted
/// stably and numbered after every earlier run.
pub struct TimeOrderedRuns<T> {
    spill: RunSpill<InputOrdered<T>>,
    /// Input position of the first record still held.
    first_seq: u64,
}

impl<T: TimedRecord> TimeOrderedRuns<T> {
    pub fn new(dir: &Path, label: &'static str, budget: usize) -> Self {
        TimeOrderedRuns {
            spill: RunSpill::new(dir, label, budget),
            first_seq: 0,
        }
    }

    /// Whether a list holding `held` records should write a run now.
    pub fn full(&self, held: usize) -> bool {
        self.spill.full(held)
    }

    /// Whether some run was written.
    pub fn spilled(&self) -> bool {
        self.spill.spilled()
    }

    /// Writes `held` as one run and empties it, keeping its capacity for
    /// the records to come (a failure is kept for [`Self::merge`], which
    /// then fails).
    pub fn write(&mut self, held: &mut Vec<T>) {
        held.sort_by_key(T::ts);
        let first = self.first_seq;
        self.first_seq += held.len() as u64;
        let records = held
            .drain(..)
            .zip(first..)
            .map(|(record, seq)| InputOrdered { seq, record });
        self.spill.write(records);
    }

    /// Every record written, in time order (nothing when none was).
    pub fn merge(&mut self) -> io::Result<impl Iterator<Item = io::Result<T>> + '_> {
        let merge = self.spill.merge()?;
        Ok(merge.into_iter().flatten().map(|r| r.map(|r| r.record)))
    }
}

/// Runs of records, each sorted by [`RunRecord::key`], in one file that
/// vanishes with the process.
pub struct SortedRuns<R> {
    writer: BufWriter<File>,
    /// Byte range `(start, end)` of each run.
    runs: Vec<(u64, u64)>,
    bytes: u64,
    encoded: Vec<u8>,
    records: PhantomData<R>,
}

impl<R: RunRecord> SortedRuns<R> {
    pub fn create(dir: &Path, label: &str) -> io::Result<Self> {
        Ok(SortedRuns {
            writer: BufWriter::with_capacity(1 << 20, open_unlinked(dir, label)?),
            runs: Vec::new(),
            bytes: 0,
            encoded: Vec::new(),
            records: PhantomData,
        })
    }

    /// Appends one run; `records` must come in key order.
    pub fn write_run(&mut self, records: impl Iterator<Item = R>) -> io::Result<()> {
        let start = self.bytes;
        for r in records {
            self.encoded.clear();
            self.encoded.extend_from_slice(&[0; LEN_BYTES]);
            r.encode(&mut self.encoded);
            let len = u32::try_from(self.encoded.len() - LEN_BYTES)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a record over 4 GiB"))?;
            self.encoded[..LEN_BYTES].copy_from_slice(&len.to_le_bytes());
            self.writer.write_all(&self.encoded)?;
            self.bytes += self.encoded.len() as u64;
        }
        if self.bytes > start {
            self.runs.push((start, self.bytes));
        }
        Ok(())
    }

    /// Every record of every run, smallest key first (equal keys in run
    /// order).
    pub fn merge(&mut self) -> io::Result<Merge<'_, R>> {
        self.writer.flush()?;
        let per_run = merge_block_bytes(self.runs.len());
        let file = self.writer.get_ref();
        let mut merge = Merge {
            file,
            cursors: Vec::with_capacity(self.runs.len()),
            heads: Vec::with_capacity(self.runs.len()),
            heap: BinaryHeap::with_capacity(self.runs.len()),
        };
        for &(start, end) in &self.runs {
            let mut cursor = BlockReader::new(start, end, per_run);
            let head: Option<R> = cursor.next_record(file)?;
            if let Some(r) = &head {
                merge.heap.push(Reverse((r.key(), merge.cursors.len())));
            }
            merge.cursors.push(cursor);
            merge.heads.push(head);
        }
        Ok(merge)
    }
}

/// Reads one run (a byte range of a spill file) a block at a time; shared
/// with the event runs of [`crate::trace_events::runs`].
pub(crate) struct BlockReader {
    /// File offset of the first byte not yet read into `block`.
    next: u64,
    end: u64,
    block_bytes: usize,
    block: Vec<u8>,
    /// Position of the next unread byte in `block`.
    at: usize,
}

fn damaged() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "a spilled record is damaged")
}

impl BlockReader {
    pub(crate) fn new(start: u64, end: u64, block_bytes: usize) -> Self {
        BlockReader {
            next: start,
            end,
            block_bytes,
            block: Vec::new(),
            at: 0,
        }
    }

    /// The bytes read but not consumed.
    pub(crate) fn unread(&self) -> &[u8] {
        &self.block[self.at..]
    }

    pub(crate) fn consume(&mut self, n: usize) {
        self.at = (self.at + n).min(self.block.len());
    }

    /// Makes at least `want` unread bytes available (fewer at the end).
    pub(crate) fn fill(&mut self, file: &File, want: usize) -> io::Result<()> {
        if self.block.len() - self.at >= want || self.next >= self.end {
            return Ok(());
        }
        self.block.drain(..self.at);
        self.at = 0;
        let kept = self.block.len();
        let read = (self.block_bytes.max(want) as u64).min(self.end - self.next) as usize;
        self.block.resize(kept + read, 0);
        file.read_exact_at(&mut self.block[kept..], self.next)?;
        self.next += read as u64;
        Ok(())
    }

    fn next_record<R: RunRecord>(&mut self, file: &File) -> io::Result<Option<R>> {
        self.fill(file, LEN_BYTES)?;
        let Some(prefix) = self.block.get(self.at..self.at + LEN_BYTES) else {
            return if self.at == self.block.len() {
                Ok(None)
            } else {
                Err(damaged())
            };
        };
        let mut len = [0u8; LEN_BYTES];
        len.copy_from_slice(prefix);
        let len = u32::from_le_bytes(len) as usize;
        self.fill(file, LEN_BYTES + len)?;
        let bytes = self
            .block
            .get(self.at + LEN_BYTES..self.at + LEN_BYTES + len)
            .ok_or_else(damaged)?;
        let record = R::decode(bytes).ok_or_else(damaged)?;
        self.at += LEN_BYTES + len;
        Ok(Some(record))
    }
}

/// The k-way merge of a [`SortedRuns`]' runs.
pub struct Merge<'a, R: RunRecord> {
    file: &'a File,
    cursors: Vec<BlockReader>,
    /// Each run's smallest record not yet yielded.
    heads: Vec<Option<R>>,
    heap: BinaryHeap<Reverse<(R::Key, usize)>>,
}

impl<R: RunRecord> Iterator for Merge<'_, R> {
    type Item = io::Result<R>;

    fn next(&mut self) -> Option<Self::Item> {
        let (cursors, file) = (&mut self.cursors, self.file);
        merge_step(&mut self.heap, &mut self.heads, |run| {
            let next = cursors[run].next_record::<R>(file)?;
            Ok(next.map(|r| (r.key(), r)))
        })
    }
}

/// One step of a k-way merge: yields the head of the run on top of `heap`
/// and replaces it with that run's next record (`read_next(run)`, with its
/// key). The top entry is overwritten in place, so the heap sifts once per
/// record instead of once for the pop and again for the push.
pub(crate) fn merge_step<K: Ord, R>(
    heap: &mut BinaryHeap<Reverse<(K, usize)>>,
    heads: &mut [Option<R>],
    read_next: impl FnOnce(usize) -> io::Result<Option<(K, R)>>,
) -> Option<io::Result<R>> {
    let mut top = heap.peek_mut()?;
    let run = top.0.1;
    let next = match read_next(run) {
        Ok(Some((key, r))) => {
            top.0 = (key, run);
            Some(r)
        }
        Ok(None) => {
            PeekMut::pop(top);
            None
        }
        Err(e) => return Some(Err(e)),
    };
    std::mem::replace(&mut heads[run], next).map(Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record of any length: a key and `len` copies of a byte.
    #[derive(Debug, Clone, PartialEq, Eq)]
    struct Blob(u32, Vec<u8>);

    impl RunRecord for Blob {
        type Key = u32;
        fn key(&self) -> u32 {
            self.0
        }
        fn encode(&self, out: &mut Vec<u8>) {
            out.extend_from_slice(&self.0.to_le_bytes());
            out.extend_from_slice(&self.1);
        }
        fn decode(bytes: &[u8]) -> Option<Self> {
            let key = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?);
            Some(Blob(key, bytes.get(4..)?.to_vec()))
        }
    }

    #[test]
    fn runs_of_records_of_any_length_merge_in_key_order() {
        let dir = crate::spill_compare::spill_dir("sorted-runs");
        let mut runs = SortedRuns::create(&dir, "test").unwrap();
        let mut all = Vec::new();
        // Record lengths up to past a block, so reads refill mid-record.
        for run in 0..5u32 {
            let mut records: Vec<Blob> = (0..40u32)
                .map(|i| {
                    let key = (i * 7919 + run * 104_729) % 1_000;
                    Blob(key, vec![run as u8; ((i * 997) % 9_000) as usize])
                })
                .collect();
            records.sort_by_key(|b| b.0);
            runs.write_run(records.iter().cloned()).unwrap();
            all.extend(records);
        }
        runs.write_run(std::iter::empty()).unwrap();
        // Equal keys come out in run order: a stable sort of the runs'
        // concatenation.
        all.sort_by_key(|b| b.0);
        let merged: Vec<Blob> = runs.merge().unwrap().collect::<io::Result<_>>().unwrap();
        assert_eq!(merged, all);
        crate::spill_compare::assert_no_spill_files_left(&dir);
    }
}
