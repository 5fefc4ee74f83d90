//! Callstack samples waiting for thread and process names (known only
//! when the input is read), 16 bytes each. Past the in-memory budget they
//! are appended to an unlinked spill file, so a profile of any length
//! holds at most the budget; they are read back once, file first, when
//! they move into the stack aggregator.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::sorted_runs::open_unlinked;

/// A callstack sample waiting for thread names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingSample {
    pub ts: i64,
    pub stack: u32,
    /// Index into [`super::decoder::Decoder::sample_threads`].
    pub thread: u32,
}

const PENDING_BYTES: usize = 16;

/// Held samples between two shrinks of the list while it is drained
/// (16 bytes each: 8 MiB).
const SHRINK_EVERY_SAMPLES: usize = 1 << 19;

fn decode(b: &[u8; PENDING_BYTES]) -> PendingSample {
    let [
        t0,
        t1,
        t2,
        t3,
        t4,
        t5,
        t6,
        t7,
        s0,
        s1,
        s2,
        s3,
        h0,
        h1,
        h2,
        h3,
    ] = *b;
    PendingSample {
        ts: i64::from_le_bytes([t0, t1, t2, t3, t4, t5, t6, t7]),
        stack: u32::from_le_bytes([s0, s1, s2, s3]),
        thread: u32::from_le_bytes([h0, h1, h2, h3]),
    }
}

#[derive(Default)]
pub struct PendingSamples {
    held: Vec<PendingSample>,
    /// Where samples past `budget` go.
    spill: Option<(PathBuf, usize)>,
    file: Option<BufWriter<File>>,
    written: u64,
    /// The first spill failure, reported by [`Self::drain`].
    error: Option<io::Error>,
}

impl PendingSamples {
    /// Holds at most `budget` samples; the rest go to a file in `dir`.
    pub fn spill_to(&mut self, dir: &Path, budget: usize) {
        self.spill = Some((dir.to_path_buf(), budget.max(1)));
    }

    /// Keeps `sample`; a failed spill keeps it held and is reported by
    /// [`Self::drain`].
    pub fn push(&mut self, sample: PendingSample) {
        self.held.push(sample);
        let Some((dir, budget)) = &self.spill else {
            return;
        };
        if self.held.len() < *budget || self.error.is_some() {
            return;
        }
        match Self::append(&mut self.file, dir, &self.held) {
            Ok(()) => {
                self.written += self.held.len() as u64;
                self.held.clear();
            }
            Err(e) => self.error = Some(e),
        }
    }

    fn append(
        file: &mut Option<BufWriter<File>>,
        dir: &Path,
        held: &[PendingSample],
    ) -> io::Result<()> {
        let writer = match file {
            Some(writer) => writer,
            None => file.insert(BufWriter::with_capacity(
                1 << 20,
                open_unlinked(dir, "pending-samples")?,
            )),
        };
        for s in held {
            writer.write_all(&s.ts.to_le_bytes())?;
            writer.write_all(&s.stack.to_le_bytes())?;
            writer.write_all(&s.thread.to_le_bytes())?;
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.written == 0 && self.held.is_empty()
    }

    /// Samples pushed so far.
    pub fn len(&self) -> u64 {
        self.written + self.held.len() as u64
    }

    /// Calls `each` with every sample once (spilled ones first); the list
    /// gives its memory back as it goes.
    pub fn drain(&mut self, mut each: impl FnMut(PendingSample)) -> io::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if let Some(writer) = self.file.take() {
            let mut file = writer
                .into_inner()
                .map_err(io::IntoInnerError::into_error)?;
            file.seek(SeekFrom::Start(0))?;
            let mut reader = BufReader::with_capacity(1 << 20, file);
            let mut bytes = [0u8; PENDING_BYTES];
            for _ in 0..self.written {
                reader.read_exact(&mut bytes)?;
                each(decode(&bytes));
            }
            self.written = 0;
        }
        while let Some(s) = self.held.pop() {
            each(s);
            // Give back every 8 MiB drained (a large list shrinks in
            // place: glibc remaps it), so a sample is never held twice.
            if self.held.capacity() - self.held.len() >= SHRINK_EVERY_SAMPLES {
                self.held.shrink_to_fit();
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(n: u32) -> Vec<PendingSample> {
        (0..n)
            .map(|i| PendingSample {
                ts: i64::from(i) * -7 + i64::MAX / 3,
                stack: i.wrapping_mul(2_654_435_761),
                thread: i % 5,
            })
            .collect()
    }

    fn drained(pending: &mut PendingSamples) -> Vec<PendingSample> {
        let mut out = Vec::new();
        pending.drain(|s| out.push(s)).unwrap();
        out.sort_by_key(|s| (s.ts, s.stack, s.thread));
        out
    }

    #[test]
    fn every_sample_comes_back_once_through_the_file_or_held() {
        let dir = crate::spill_compare::spill_dir("pending-samples");
        let mut want = samples(1_000);
        want.sort_by_key(|s| (s.ts, s.stack, s.thread));
        for budget in [None, Some(1), Some(3), Some(999), Some(1_000), Some(4_000)] {
            let mut pending = PendingSamples::default();
            if let Some(budget) = budget {
                pending.spill_to(&dir, budget);
            }
            for s in samples(1_000) {
                pending.push(s);
            }
            assert_eq!(pending.len(), 1_000);
            assert!(pending.held.len() < budget.unwrap_or(usize::MAX));
            assert_eq!(drained(&mut pending), want, "budget {budget:?}");
            assert!(pending.is_empty());
        }
        crate::spill_compare::assert_no_spill_files_left(&dir);
    }

    #[test]
    fn a_spill_that_cannot_be_written_fails_the_drain() {
        let mut pending = PendingSamples::default();
        pending.spill_to(Path::new("/nonexistent/flameox/spill"), 2);
        for s in samples(5) {
            pending.push(s);
        }
        assert!(pending.drain(|_| {}).is_err());
    }
}
