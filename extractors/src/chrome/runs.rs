//! Sorted runs of event records in one unlinked spill file, and their
//! k-way merge: the external sort behind [`super::external`].
//!
//! A run is written whole, already sorted; [`RunFile::merge`] then reads
//! every run a block at a time and yields records in the global order of
//! a key, so memory holds one block per run, never the events.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::record::{EventRecord, HEAD_BYTES, MAX_RECORD_BYTES};
use super::store::{EventStore, open_unlinked};

/// Bytes of records read from all runs at once during a merge.
const MERGE_READ_BYTES: usize = 8 << 20;

/// Runs of records, each sorted, in one file that vanishes with the process.
pub struct RunFile {
    writer: BufWriter<File>,
    /// Byte range `(start, end)` of each run.
    runs: Vec<(u64, u64)>,
    bytes: u64,
    encoded: Vec<u8>,
}

impl RunFile {
    pub fn create(dir: &Path, label: &str) -> io::Result<Self> {
        Ok(RunFile {
            writer: BufWriter::with_capacity(1 << 20, open_unlinked(dir, label)?),
            runs: Vec::new(),
            bytes: 0,
            encoded: Vec::with_capacity(MAX_RECORD_BYTES),
        })
    }

    /// Appends one run; `records` must already be in the merge key's order.
    pub fn write_run(&mut self, records: impl Iterator<Item = EventRecord>) -> io::Result<()> {
        let start = self.bytes;
        for r in records {
            self.encoded.clear();
            r.encode(&mut self.encoded);
            self.writer.write_all(&self.encoded)?;
            self.bytes += self.encoded.len() as u64;
        }
        if self.bytes > start {
            self.runs.push((start, self.bytes));
        }
        Ok(())
    }

    /// Every record of every run, smallest `key` first. Keys must be
    /// distinct (they end in the event id).
    pub fn merge<K: Ord>(&mut self, key: fn(&EventRecord) -> K) -> io::Result<Merge<'_, K>> {
        self.writer.flush()?;
        let per_run = (MERGE_READ_BYTES / self.runs.len().max(1)).clamp(4 << 10, 1 << 20);
        let file = self.writer.get_ref();
        let mut merge = Merge {
            file,
            cursors: Vec::with_capacity(self.runs.len()),
            heads: Vec::with_capacity(self.runs.len()),
            heap: BinaryHeap::with_capacity(self.runs.len()),
            key,
        };
        for &(start, end) in &self.runs {
            let mut cursor = Cursor {
                next: start,
                end,
                block_bytes: per_run,
                block: Vec::new(),
                at: 0,
            };
            let head = cursor.next_record(file)?;
            if let Some(r) = &head {
                merge.heap.push(Reverse((key(r), merge.cursors.len())));
            }
            merge.cursors.push(cursor);
            merge.heads.push(head);
        }
        Ok(merge)
    }
}

/// Reads one run a block at a time.
struct Cursor {
    /// File offset of the first byte not yet read into `block`.
    next: u64,
    end: u64,
    block_bytes: usize,
    block: Vec<u8>,
    /// Position of the next unread record in `block`.
    at: usize,
}

impl Cursor {
    /// Makes at least `want` unread bytes available in `block` (fewer at
    /// the end of the run).
    fn fill(&mut self, file: &File, want: usize) -> io::Result<()> {
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

    fn next_record(&mut self, file: &File) -> io::Result<Option<EventRecord>> {
        self.fill(file, MAX_RECORD_BYTES)?;
        let rest = &self.block[self.at..];
        if rest.is_empty() {
            return Ok(None);
        }
        let damaged = || {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "a spilled event record is damaged",
            )
        };
        let len = EventRecord::encoded_len(rest)
            .filter(|&len| len >= HEAD_BYTES && len <= rest.len())
            .ok_or_else(damaged)?;
        let record = EventRecord::decode(&rest[..len]).ok_or_else(damaged)?;
        self.at += len;
        Ok(Some(record))
    }
}

/// The k-way merge of a [`RunFile`]'s runs.
pub struct Merge<'a, K> {
    file: &'a File,
    cursors: Vec<Cursor>,
    /// Each run's smallest record not yet yielded.
    heads: Vec<Option<EventRecord>>,
    heap: BinaryHeap<Reverse<(K, usize)>>,
    key: fn(&EventRecord) -> K,
}

impl<K: Ord> Iterator for Merge<'_, K> {
    type Item = io::Result<EventRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        let Reverse((_, run)) = self.heap.pop()?;
        let next = match self.cursors[run].next_record(self.file) {
            Ok(next) => next,
            Err(e) => return Some(Err(e)),
        };
        if let Some(r) = &next {
            self.heap.push(Reverse(((self.key)(r), run)));
        }
        std::mem::replace(&mut self.heads[run], next).map(Ok)
    }
}

/// Order of records within a track for nesting: `(track, ts asc, dur desc
/// with unterminated longest, event_id asc)`, as [`super::nesting::nest`].
pub fn nesting_key(r: &EventRecord) -> (u32, i64, Reverse<i64>, u64) {
    (r.track, r.ts, Reverse(r.sort_dur()), r.event_id)
}

/// [`nesting_key`] of row `i` of a store, before it becomes a record.
pub fn nesting_key_of(s: &EventStore, i: usize) -> (u32, i64, Reverse<i64>, u64) {
    let sort_dur = if s.dur[i] < 0 { i64::MAX } else { s.dur[i] };
    (s.track[i], s.ts[i], Reverse(sort_dur), s.event_id[i])
}

/// Output order of `trace_events`: `(ts, event_id)`.
pub fn output_key(r: &EventRecord) -> (i64, u64) {
    (r.ts, r.event_id)
}
