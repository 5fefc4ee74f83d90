//! Timed samples past an aggregator's in-memory budget
//! ([`crate::timed_samples::TimedSamples::spill_to`]): sorted runs of
//! fixed 30-byte records in one unlinked spill file, merged back with the
//! samples still held, in the `samples` table's order. The merge holds
//! one block per run, never the samples.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::iter::Peekable;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::chrome::store::open_unlinked;
use crate::timed_samples::TimedSample;

/// Bytes of one spilled sample.
const SAMPLE_BYTES: usize = 30;
/// Bytes read from all runs at once during the merge.
const MERGE_READ_BYTES: usize = 8 << 20;

fn encode(s: &TimedSample, out: &mut [u8; SAMPLE_BYTES]) {
    out[0..8].copy_from_slice(&s.ts.to_le_bytes());
    out[8..16].copy_from_slice(&s.weight.to_le_bytes());
    out[16..20].copy_from_slice(&s.stack.to_le_bytes());
    out[20..24].copy_from_slice(&s.thread.to_le_bytes());
    out[24..28].copy_from_slice(&s.count.to_le_bytes());
    out[28..30].copy_from_slice(&s.metric.to_le_bytes());
}

fn decode(b: &[u8]) -> Option<TimedSample> {
    Some(TimedSample {
        ts: i64::from_le_bytes(b.get(0..8)?.try_into().ok()?),
        weight: i64::from_le_bytes(b.get(8..16)?.try_into().ok()?),
        stack: u32::from_le_bytes(b.get(16..20)?.try_into().ok()?),
        thread: u32::from_le_bytes(b.get(20..24)?.try_into().ok()?),
        count: u32::from_le_bytes(b.get(24..28)?.try_into().ok()?),
        metric: u16::from_le_bytes(b.get(28..30)?.try_into().ok()?),
    })
}

/// Sorted runs of samples in one file that vanishes with the process.
pub struct SampleRuns {
    writer: BufWriter<File>,
    /// Byte range `(start, end)` of each run.
    runs: Vec<(u64, u64)>,
    bytes: u64,
}

impl SampleRuns {
    pub fn create(dir: &Path) -> io::Result<Self> {
        Ok(SampleRuns {
            writer: BufWriter::with_capacity(1 << 20, open_unlinked(dir, "samples")?),
            runs: Vec::new(),
            bytes: 0,
        })
    }

    /// Appends one run; `samples` must come in [`TimedSample::order`].
    pub fn write_run(&mut self, samples: impl Iterator<Item = TimedSample>) -> io::Result<()> {
        let start = self.bytes;
        let mut encoded = [0u8; SAMPLE_BYTES];
        for s in samples {
            encode(&s, &mut encoded);
            self.writer.write_all(&encoded)?;
            self.bytes += SAMPLE_BYTES as u64;
        }
        if self.bytes > start {
            self.runs.push((start, self.bytes));
        }
        Ok(())
    }

    /// Every spilled sample and every sample of `held` (sorted), in
    /// [`TimedSample::order`].
    pub fn merge<'a, I: Iterator<Item = TimedSample> + 'a>(
        &'a mut self,
        held: I,
    ) -> io::Result<Merge<'a, I>> {
        self.writer.flush()?;
        let per_run = (MERGE_READ_BYTES / self.runs.len().max(1)).clamp(4 << 10, 1 << 20);
        let block_bytes = per_run / SAMPLE_BYTES * SAMPLE_BYTES;
        let file = self.writer.get_ref();
        let mut merge = Merge {
            file,
            cursors: Vec::with_capacity(self.runs.len()),
            heap: BinaryHeap::with_capacity(self.runs.len() + 1),
            held: held.peekable(),
        };
        for &(start, end) in &self.runs {
            let mut cursor = Cursor {
                next: start,
                end,
                block_bytes,
                block: Vec::new(),
                at: 0,
            };
            if let Some(s) = cursor.next_sample(file)? {
                merge
                    .heap
                    .push(Reverse((s.order(), merge.cursors.len(), s)));
            }
            merge.cursors.push(cursor);
        }
        Ok(merge)
    }
}

/// Reads one run a block at a time.
struct Cursor {
    next: u64,
    end: u64,
    block_bytes: usize,
    block: Vec<u8>,
    at: usize,
}

impl Cursor {
    fn next_sample(&mut self, file: &File) -> io::Result<Option<TimedSample>> {
        if self.at == self.block.len() {
            if self.next >= self.end {
                return Ok(None);
            }
            let read = (self.block_bytes as u64).min(self.end - self.next) as usize;
            self.block.resize(read, 0);
            file.read_exact_at(&mut self.block, self.next)?;
            self.next += read as u64;
            self.at = 0;
        }
        let bytes = self.block.get(self.at..self.at + SAMPLE_BYTES);
        let sample = bytes.and_then(decode).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidData, "a spilled sample is damaged")
        })?;
        self.at += SAMPLE_BYTES;
        Ok(Some(sample))
    }
}

type OrderKey = (i64, u32, u32, u16, i64, u32);

/// The merge of the runs and the held samples.
pub struct Merge<'a, I: Iterator<Item = TimedSample>> {
    file: &'a File,
    cursors: Vec<Cursor>,
    /// Each run's next sample, by its order.
    heap: BinaryHeap<Reverse<(OrderKey, usize, TimedSample)>>,
    held: Peekable<I>,
}

impl<I: Iterator<Item = TimedSample>> Iterator for Merge<'_, I> {
    type Item = io::Result<TimedSample>;

    fn next(&mut self) -> Option<Self::Item> {
        let from_runs = self.heap.peek().map(|Reverse((key, ..))| *key);
        let from_held = self.held.peek().map(TimedSample::order);
        match (from_runs, from_held) {
            (None, None) => None,
            (Some(run), Some(held)) if held < run => self.held.next().map(Ok),
            (None, Some(_)) => self.held.next().map(Ok),
            (Some(_), _) => {
                let Reverse((_, run, sample)) = self.heap.pop()?;
                match self.cursors[run].next_sample(self.file) {
                    Ok(Some(s)) => self.heap.push(Reverse((s.order(), run, s))),
                    Ok(None) => {}
                    Err(e) => return Some(Err(e)),
                }
                Some(Ok(sample))
            }
        }
    }
}
