//! Sorted runs of event records in one unlinked spill file, and their
//! k-way merge: the external sort behind [`super::external`].
//!
//! A run is written whole, already sorted; [`RunFile::merge`] then reads
//! every run a block at a time and yields records in the global order of
//! a key, so memory holds one block per run, never the events.
//!
//! Perfetto writes runs before it knows its tracks (rows carry a slot);
//! [`RunFile::retrack`] renames the slots afterwards and keeps every run
//! in nesting order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::mpsc::{Receiver, SyncSender, channel, sync_channel};
use std::thread::JoinHandle;

use super::record::{EventRecord, MAX_RECORD_BYTES, RunDelta};
use super::store::EventStore;
use crate::sorted_runs::{BlockReader, merge_block_bytes, merge_step, open_unlinked};

/// Runs of records, each sorted, in one file that vanishes with the process.
pub struct RunFile {
    writer: BufWriter<File>,
    /// Byte range `(start, end)` of each run.
    runs: Vec<(u64, u64)>,
    bytes: u64,
    encoded: Vec<u8>,
    /// Per track id, whether some record of a run names it.
    tracks_seen: Vec<bool>,
    /// Applied to every record's track as it is read back ([`Self::retrack`]).
    track_map: Option<Vec<u32>>,
}

impl RunFile {
    pub fn create(dir: &Path, label: &str) -> io::Result<Self> {
        Ok(RunFile {
            writer: BufWriter::with_capacity(1 << 20, open_unlinked(dir, label)?),
            runs: Vec::new(),
            bytes: 0,
            encoded: Vec::with_capacity(MAX_RECORD_BYTES),
            tracks_seen: Vec::new(),
            track_map: None,
        })
    }

    /// Appends one run; `records` must already be in the merge key's order.
    pub fn write_run(&mut self, records: impl Iterator<Item = EventRecord>) -> io::Result<()> {
        let start = self.bytes;
        let mut delta = RunDelta::default();
        for r in records {
            let track = r.track as usize;
            if track >= self.tracks_seen.len() {
                self.tracks_seen.resize(track + 1, false);
            }
            self.tracks_seen[track] = true;
            self.encoded.clear();
            r.encode(&mut delta, &mut self.encoded);
            self.writer.write_all(&self.encoded)?;
            self.bytes += self.encoded.len() as u64;
        }
        if self.bytes > start {
            self.runs.push((start, self.bytes));
        }
        Ok(())
    }

    /// Puts every record written so far on track `map[track]`, for runs
    /// sorted by [`nesting_key`] whose track column held placeholders.
    /// When `map` keeps the order of the tracks the runs name, records
    /// are renamed as they are read back; otherwise each run is read back
    /// whole, renamed, sorted again and written to a new file in `dir`
    /// (one run in memory at a time).
    pub fn retrack(&mut self, dir: &Path, map: &[u32]) -> io::Result<()> {
        let named: Vec<u32> = (0..self.tracks_seen.len())
            .filter(|&t| self.tracks_seen[t])
            .map(|t| map.get(t).copied().ok_or_else(unmapped))
            .collect::<io::Result<_>>()?;
        if named.windows(2).all(|w| w[0] < w[1]) {
            self.track_map = Some(map.to_vec());
            return Ok(());
        }
        self.writer.flush()?;
        let mut renamed = RunFile::create(dir, "events-by-track")?;
        let mut records = Vec::new();
        for &(start, end) in &self.runs {
            let mut cursor = Cursor::new(start, end, 1 << 20);
            records.clear();
            while let Some(mut r) = cursor.next_record(self.writer.get_ref(), None)? {
                r.track = *map.get(r.track as usize).ok_or_else(unmapped)?;
                records.push(r);
            }
            records.sort_unstable_by_key(nesting_key);
            renamed.write_run(records.iter().copied())?;
        }
        *self = renamed;
        Ok(())
    }

    /// Every record of every run, smallest `key` first. Keys must be
    /// distinct (they end in the event id).
    pub fn merge<K: Ord>(&mut self, key: fn(&EventRecord) -> K) -> io::Result<Merge<'_, K>> {
        self.writer.flush()?;
        let per_run = merge_block_bytes(self.runs.len());
        let file = self.writer.get_ref();
        let mut merge = Merge {
            file,
            cursors: Vec::with_capacity(self.runs.len()),
            heads: Vec::with_capacity(self.runs.len()),
            heap: BinaryHeap::with_capacity(self.runs.len()),
            key,
            track_map: self.track_map.as_deref(),
        };
        for &(start, end) in &self.runs {
            let mut cursor = Cursor::new(start, end, per_run);
            let head = cursor.next_record(file, merge.track_map)?;
            if let Some(r) = &head {
                merge.heap.push(Reverse((key(r), merge.cursors.len())));
            }
            merge.cursors.push(cursor);
            merge.heads.push(head);
        }
        Ok(merge)
    }
}

/// Records the merging thread of [`RunFile::for_each_merged`] hands over
/// at a time (about half a MiB).
const MERGED_CHUNK: usize = 4096;

impl RunFile {
    /// Calls `each` with every record of [`Self::merge`] in `key` order;
    /// the merge itself (reading and decoding the runs, choosing the
    /// smallest head) runs on a second thread a few chunks ahead, so the
    /// consumer's work and the merge's overlap on two cores. Stops at the
    /// first error of either side.
    pub fn for_each_merged<K, E>(
        &mut self,
        key: fn(&EventRecord) -> K,
        mut each: impl FnMut(EventRecord) -> Result<(), E>,
    ) -> Result<(), E>
    where
        K: Ord + Send,
        E: From<io::Error>,
    {
        let merge = self.merge(key)?;
        let (full_tx, full_rx) = sync_channel::<Vec<EventRecord>>(2);
        let (empty_tx, empty_rx) = channel::<Vec<EventRecord>>();
        std::thread::scope(|scope| {
            let merging = std::thread::Builder::new()
                .name("flameox-merge".into())
                .spawn_scoped(scope, move || -> io::Result<()> {
                    let _phase = crate::phase_cpu::enter(crate::phase_cpu::Phase::Spill);
                    let mut chunk = Vec::with_capacity(MERGED_CHUNK);
                    for record in merge {
                        chunk.push(record?);
                        if chunk.len() == MERGED_CHUNK {
                            let next = empty_rx
                                .try_recv()
                                .unwrap_or_else(|_| Vec::with_capacity(MERGED_CHUNK));
                            if full_tx.send(std::mem::replace(&mut chunk, next)).is_err() {
                                // The consumer stopped; its error is the one told.
                                return Ok(());
                            }
                        }
                    }
                    if !chunk.is_empty() {
                        let _ = full_tx.send(chunk);
                    }
                    Ok(())
                })?;
            let mut consumed = Ok(());
            'chunks: for mut chunk in full_rx.iter() {
                for record in chunk.drain(..) {
                    if let Err(e) = each(record) {
                        consumed = Err(e);
                        break 'chunks;
                    }
                }
                // The merge may be done already; then the chunk goes.
                let _ = empty_tx.send(chunk);
            }
            // Unblocks the merge if the consumer stopped early.
            drop(full_rx);
            let merged = merging
                .join()
                .map_err(|_| io::Error::other("the run merge thread panicked"))?;
            consumed?;
            merged?;
            Ok(())
        })
    }
}

/// A [`RunFile`] whose runs are sorted and written on a thread of its own:
/// pass 2's time-ordered runs, which the walk hands over as it finishes
/// rows instead of stopping to sort and write them.
pub struct RunSorter {
    jobs: SyncSender<Vec<EventRecord>>,
    spares: Receiver<Vec<EventRecord>>,
    thread: JoinHandle<io::Result<RunFile>>,
}

impl RunSorter {
    /// Starts the thread that writes `runs`' runs, each sorted by `key`.
    pub fn start<K: Ord + Send + 'static>(
        mut runs: RunFile,
        key: fn(&EventRecord) -> K,
    ) -> io::Result<Self> {
        // One list being written while the next fills.
        let (jobs, job_rx) = sync_channel::<Vec<EventRecord>>(0);
        let (spare_tx, spares) = channel::<Vec<EventRecord>>();
        let thread = std::thread::Builder::new()
            .name("flameox-sort".into())
            .spawn(move || -> io::Result<RunFile> {
                let _phase = crate::phase_cpu::enter(crate::phase_cpu::Phase::Spill);
                // The keys are sorted, not the records: moving 136-byte
                // records through a sort was most of pass 2's `memmove`.
                let mut order: Vec<(K, u32)> = Vec::new();
                for mut records in job_rx {
                    order.clear();
                    order.extend(
                        records
                            .iter()
                            .enumerate()
                            .map(|(at, r)| (key(r), at as u32)),
                    );
                    order.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                    runs.write_run(order.iter().map(|&(_, at)| records[at as usize]))?;
                    records.clear();
                    let _ = spare_tx.send(records);
                }
                Ok(runs)
            })?;
        Ok(RunSorter {
            jobs,
            spares,
            thread,
        })
    }

    /// Hands `records` over as one run; returns an empty list (with
    /// capacity, once one came back) to fill next.
    pub fn write(&mut self, records: Vec<EventRecord>) -> io::Result<Vec<EventRecord>> {
        let capacity = records.capacity();
        if self.jobs.send(records).is_err() {
            return Err(io::Error::other("the run sorting thread stopped"));
        }
        Ok(self
            .spares
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(capacity)))
    }

    /// Waits for every run to be written; the writer's error if it failed.
    pub fn finish(self) -> io::Result<RunFile> {
        drop(self.jobs);
        self.thread
            .join()
            .map_err(|_| io::Error::other("the run sorting thread panicked"))?
    }
}

/// Reads one run's event records, each against the one before.
struct Cursor(BlockReader, RunDelta);

/// A record names a track the map does not cover.
fn unmapped() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        "a spilled event record names a track that was never resolved",
    )
}

impl Cursor {
    fn new(start: u64, end: u64, block_bytes: usize) -> Self {
        Cursor(
            BlockReader::new(start, end, block_bytes),
            RunDelta::default(),
        )
    }

    /// The next record, its track renamed through `map` if given.
    fn next_record(&mut self, file: &File, map: Option<&[u32]>) -> io::Result<Option<EventRecord>> {
        self.0.fill(file, MAX_RECORD_BYTES)?;
        let rest = self.0.unread();
        if rest.is_empty() {
            return Ok(None);
        }
        let damaged = || {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "a spilled event record is damaged",
            )
        };
        let (mut record, len) = EventRecord::decode(rest, &mut self.1).ok_or_else(damaged)?;
        if let Some(map) = map {
            record.track = *map.get(record.track as usize).ok_or_else(unmapped)?;
        }
        self.0.consume(len);
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
    track_map: Option<&'a [u32]>,
}

impl<K: Ord> Iterator for Merge<'_, K> {
    type Item = io::Result<EventRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        let (cursors, file, map, key) = (&mut self.cursors, self.file, self.track_map, self.key);
        merge_step(&mut self.heap, &mut self.heads, |run| {
            let next = cursors[run].next_record(file, map)?;
            Ok(next.map(|r| (key(&r), r)))
        })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spill_compare::{assert_no_spill_files_left, spill_dir};
    use crate::trace_events::device_columns::DeviceFields;
    use crate::trace_events::ids::NO_ID;
    use crate::trace_events::ids::NO_PARENT;
    use crate::trace_events::kinds::EventKind;

    fn record(event_id: u64, track: u32, ts: i64, dur: i64) -> EventRecord {
        EventRecord {
            event_id,
            ts,
            dur,
            name: 0,
            cat: NO_ID,
            kind: EventKind::CpuSlice,
            instant: false,
            device_activity: false,
            track,
            fields: DeviceFields::ABSENT,
            args_start: 0,
            args_len: NO_ID,
            thread: None,
            parent_event_id: NO_PARENT,
            depth: 0,
            self_ns: 0,
        }
    }

    /// Three runs over slots 0..4, each sorted by slot, with interleaved
    /// timestamps so merged slots must interleave.
    fn slot_runs(dir: &Path) -> (RunFile, Vec<EventRecord>) {
        let mut file = RunFile::create(dir, "test-runs").unwrap();
        let mut all = Vec::new();
        let mut id = 0;
        for run in 0..3i64 {
            let mut records = Vec::new();
            for slot in 0..4u32 {
                for k in 0..5i64 {
                    let ts = k * 10 + run * 3 + i64::from(slot);
                    records.push(record(id, slot, ts, 7 - k));
                    id += 1;
                }
            }
            records.sort_unstable_by_key(nesting_key);
            file.write_run(records.iter().copied()).unwrap();
            all.extend(records);
        }
        (file, all)
    }

    fn merged(file: &mut RunFile) -> Vec<EventRecord> {
        file.merge(nesting_key)
            .unwrap()
            .collect::<io::Result<_>>()
            .unwrap()
    }

    #[test]
    fn retracked_runs_merge_in_the_nesting_order_of_the_new_tracks() {
        let dir = spill_dir("retrack");
        // Order-keeping (renamed while read), two slots on one track, and
        // an order-reversing map (both rewrite the runs).
        for map in [vec![2, 5, 6, 9], vec![1, 0, 1, 2], vec![3, 2, 1, 0]] {
            let (mut file, all) = slot_runs(&dir);
            file.retrack(&dir, &map).unwrap();
            let mut want: Vec<EventRecord> = all
                .iter()
                .map(|r| EventRecord {
                    track: map[r.track as usize],
                    ..*r
                })
                .collect();
            want.sort_unstable_by_key(nesting_key);
            assert_eq!(merged(&mut file), want, "map {map:?}");
        }
        assert_no_spill_files_left(&dir);
    }

    #[test]
    fn a_map_that_misses_a_track_is_an_error_not_a_panic() {
        let dir = spill_dir("retrack-short");
        let (mut file, _) = slot_runs(&dir);
        let err = file.retrack(&dir, &[0, 1]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert_no_spill_files_left(&dir);
    }
}
