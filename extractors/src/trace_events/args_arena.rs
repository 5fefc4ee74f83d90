//! The `args_json` text of the kept events: memory first, then an
//! unlinked spill file once it passes [`ARGS_SPILL_AFTER_BYTES`], so the
//! bulk of a Kineto trace does not count against memory.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

use arrow::array::{ArrayRef, StringBuilder};

use super::ids::NO_ID;
use crate::sorted_runs::open_unlinked;

/// Bytes of `args_json` text kept in memory before the arena spills to disk.
pub const ARGS_SPILL_AFTER_BYTES: usize = 4 << 20;

/// Append-only store of `args_json` text: memory first, then (when a spill
/// folder was given) a file that is unlinked as soon as it is opened, so it
/// vanishes with the process whatever happens.
#[derive(Default)]
pub struct ArgsArena {
    memory: Vec<u8>,
    spill: Option<BufWriter<File>>,
    spill_dir: Option<PathBuf>,
    len: u64,
    error: Option<io::Error>,
}

/// Reads of spilled text closer than this are merged into one read.
const READ_GAP_BYTES: u64 = 64 << 10;
/// Upper bound on one merged read.
const READ_SPAN_BYTES: u64 = 8 << 20;

impl ArgsArena {
    pub fn new(spill_dir: Option<PathBuf>) -> Self {
        ArgsArena {
            spill_dir,
            ..ArgsArena::default()
        }
    }

    /// Appends text; returns its start offset. An I/O failure is kept and
    /// reported by [`ArgsArena::finish_writes`].
    pub fn append(&mut self, bytes: &[u8]) -> u64 {
        let start = self.len;
        self.len += bytes.len() as u64;
        if self.error.is_some() {
            return start;
        }
        if self.spill.is_none()
            && self.memory.len() + bytes.len() > ARGS_SPILL_AFTER_BYTES
            && let Some(dir) = &self.spill_dir
        {
            match open_spill(dir, &self.memory) {
                Ok(writer) => {
                    self.spill = Some(writer);
                    self.memory = Vec::new();
                }
                Err(e) => self.error = Some(e),
            }
        }
        match &mut self.spill {
            Some(writer) => {
                if let Err(e) = writer.write_all(bytes) {
                    self.error = Some(e);
                }
            }
            None => self.memory.extend_from_slice(bytes),
        }
        start
    }

    /// Flushes the spill file; call once before reading.
    pub fn finish_writes(&mut self) -> io::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        match &mut self.spill {
            Some(writer) => writer.flush(),
            None => Ok(()),
        }
    }

    /// Reads `len` bytes at `start` as text.
    pub fn read(&self, start: u64, len: u32) -> io::Result<String> {
        let bytes = match &self.spill {
            Some(writer) => {
                let mut buf = vec![0u8; len as usize];
                writer.get_ref().read_exact_at(&mut buf, start)?;
                buf
            }
            None => {
                let from = start as usize;
                self.memory
                    .get(from..from + len as usize)
                    .unwrap_or_default()
                    .to_vec()
            }
        };
        String::from_utf8(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }

    /// Calls `each` with the text of every `(start, len)` piece in request
    /// order, without a `String` per piece: in memory the text is lent
    /// in place; from a spill file nearby pieces are read together.
    pub fn for_each_piece(
        &self,
        pieces: &[(u64, u32)],
        mut each: impl FnMut(&str),
    ) -> io::Result<()> {
        let text = |bytes: &[u8]| -> io::Result<()> {
            let s = std::str::from_utf8(bytes)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            each(s);
            Ok(())
        };
        let mut text = text;
        let Some(writer) = &self.spill else {
            for &(start, len) in pieces {
                let from = start as usize;
                text(
                    self.memory
                        .get(from..from + len as usize)
                        .unwrap_or_default(),
                )?;
            }
            return Ok(());
        };
        let mut order: Vec<usize> = (0..pieces.len()).collect();
        order.sort_unstable_by_key(|&k| pieces[k].0);
        // Each piece's place in `buf`, filled span by span.
        let mut at = vec![0usize; pieces.len()];
        let mut buf = Vec::new();
        let mut j = 0;
        while j < order.len() {
            let span_start = pieces[order[j]].0;
            let mut span_end = span_start + u64::from(pieces[order[j]].1);
            let mut k = j + 1;
            while k < order.len() {
                let (start, len) = pieces[order[k]];
                let end = start + u64::from(len);
                if start > span_end + READ_GAP_BYTES || end - span_start > READ_SPAN_BYTES {
                    break;
                }
                span_end = span_end.max(end);
                k += 1;
            }
            let base = buf.len();
            buf.resize(base + (span_end - span_start) as usize, 0);
            writer
                .get_ref()
                .read_exact_at(&mut buf[base..], span_start)?;
            for &piece in &order[j..k] {
                at[piece] = base + (pieces[piece].0 - span_start) as usize;
            }
            j = k;
        }
        for (piece, &(_, len)) in pieces.iter().enumerate() {
            let from = at[piece];
            text(&buf[from..from + len as usize])?;
        }
        Ok(())
    }

    /// The `args_json` column of one batch, built straight from the arena
    /// (no `String` per row): one `(start, len)` per row, `len == NO_ID`
    /// for a row without args.
    pub fn column(&self, rows: &[(u64, u32)]) -> io::Result<ArrayRef> {
        let pieces: Vec<(u64, u32)> = rows.iter().copied().filter(|r| r.1 != NO_ID).collect();
        // Sized once: growing from empty copied the batch's text ~log(n) times.
        let text_bytes = pieces.iter().map(|p| p.1 as usize).sum();
        let mut column = StringBuilder::with_capacity(rows.len(), text_bytes);
        // Pieces come in row order, so rows without args are emitted
        // between them as the cursor passes.
        let mut rest = rows.iter();
        self.for_each_piece(&pieces, |text| {
            for &(_, len) in rest.by_ref() {
                if len == NO_ID {
                    column.append_null();
                } else {
                    column.append_value(text);
                    break;
                }
            }
        })?;
        rest.for_each(|_| column.append_null());
        Ok(Arc::new(column.finish()))
    }

    /// Whether the text lives on disk.
    pub fn spilled(&self) -> bool {
        self.spill.is_some()
    }
}

fn open_spill(dir: &std::path::Path, already: &[u8]) -> io::Result<BufWriter<File>> {
    let mut writer = BufWriter::with_capacity(1 << 20, open_unlinked(dir, "args")?);
    writer.write_all(already)?;
    Ok(writer)
}
/// Bounds `args_json` to `max` bytes at a char boundary, appending the marker.
pub fn bound_args<'a>(text: &'a str, max: usize, marker: &str) -> std::borrow::Cow<'a, str> {
    if text.len() <= max {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut cut = max.saturating_sub(marker.len());
    while cut > 0 && !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut out = String::with_capacity(cut + marker.len());
    out.push_str(&text[..cut]);
    out.push_str(marker);
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_arena_spills_past_its_threshold_and_reads_back_exactly() {
        let dir = std::env::temp_dir().join(format!("flameox-arena-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut arena = ArgsArena::new(Some(dir.clone()));
        let chunk: Vec<u8> = (0..1 << 20).map(|i| b'a' + (i % 26) as u8).collect();
        let mut starts = Vec::new();
        for n in 0..40u8 {
            let mut piece = chunk.clone();
            piece[0] = b'0' + n % 10;
            starts.push(arena.append(&piece));
        }
        arena.finish_writes().unwrap();
        assert!(arena.spilled());
        // The spill file is unlinked: nothing is left in the folder.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        for (n, start) in starts.iter().enumerate() {
            let text = arena.read(*start, 1 << 20).unwrap();
            assert_eq!(text.as_bytes()[0], b'0' + (n % 10) as u8);
            assert_eq!(&text.as_bytes()[1..], &chunk[1..]);
        }
        let reversed: Vec<(u64, u32)> = starts.iter().rev().map(|&s| (s, 1 << 20)).collect();
        let mut many = Vec::new();
        arena
            .for_each_piece(&reversed, |text| many.push(text.to_string()))
            .unwrap();
        for (k, text) in many.iter().enumerate() {
            assert_eq!(text.as_bytes()[0], b'0' + ((39 - k) % 10) as u8);
        }
        let mut memory_only = ArgsArena::new(None);
        let at = memory_only.append(b"{\"a\":1}");
        memory_only.finish_writes().unwrap();
        assert!(!memory_only.spilled());
        assert_eq!(memory_only.read(at, 7).unwrap(), "{\"a\":1}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
