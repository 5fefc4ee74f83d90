//! Compact in-memory form of the events kept for the output tables.
//!
//! `trace_events` must be globally sorted by `(ts_ns, event_id)` and every
//! row needs its parent and self time, which are only known once a track is
//! complete. So events are held until the end of the input — in a
//! struct-of-arrays with interned strings, about 55 bytes per event
//! (plus 64 for the few with device fields, [`DeviceColumns`]). The
//! `args_json` text (the bulk of a Kineto trace) goes to an [`ArgsArena`],
//! which moves to an unlinked spill file once it passes
//! [`ARGS_SPILL_AFTER_BYTES`], so it does not count against memory.

use crate::FastHashMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

use arrow::array::{ArrayRef, StringBuilder};

use super::device_columns::{DeviceColumns, DeviceFields};
use super::kinds::EventKind;

/// Sentinel for an absent optional integer.
pub const NONE: i64 = i64::MIN;
/// Sentinel for an absent interned string or index.
pub const NO_ID: u32 = u32::MAX;

pub fn opt(v: i64) -> Option<i64> {
    (v != NONE).then_some(v)
}

pub fn opt_id(v: u32) -> Option<u32> {
    (v != NO_ID).then_some(v)
}

/// Interned strings, ids dense in first-seen order.
#[derive(Default)]
pub struct Interner {
    map: FastHashMap<Box<str>, u32>,
    strings: Vec<Box<str>>,
}

impl Interner {
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.map.get(s) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings.push(s.into());
        self.map.insert(s.into(), id);
        id
    }

    pub fn get(&self, id: u32) -> &str {
        self.strings.get(id as usize).map_or("", |s| s)
    }

    pub fn lookup(&self, s: &str) -> Option<u32> {
        self.map.get(s).copied()
    }

    pub fn len(&self) -> usize {
        self.strings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.strings.is_empty()
    }
}

/// One event being added.
#[derive(Debug, Clone, Copy)]
pub struct NewEvent {
    pub event_id: u64,
    pub ts: i64,
    pub dur: i64,
    pub name: u32,
    pub cat: u32,
    pub kind: EventKind,
    pub track: u32,
    pub device_activity: bool,
    pub fields: DeviceFields,
}

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

/// The kept events, column by column.
#[derive(Default)]
pub struct EventStore {
    pub event_id: Vec<u64>,
    pub ts: Vec<i64>,
    /// -1 for an unterminated slice; 0 for instants.
    pub dur: Vec<i64>,
    pub name: Vec<u32>,
    pub cat: Vec<u32>,
    pub kind: Vec<EventKind>,
    pub instant: Vec<bool>,
    pub device_activity: Vec<bool>,
    pub track: Vec<u32>,
    /// Device, stream, correlation and the like: sparse.
    pub device: DeviceColumns,
    pub args_start: Vec<u64>,
    pub args_len: Vec<u32>,
    pub arena: ArgsArena,
    /// `(pid, tid)` of events whose thread is not their track's (a CPU
    /// track's scheduling slices name the task that ran); sparse.
    pub thread_override: crate::FastHashMap<u32, (i64, i64)>,
}

impl EventStore {
    pub fn len(&self) -> usize {
        self.ts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ts.is_empty()
    }

    /// Adds an event; `args` is stored already bounded.
    pub fn push(&mut self, e: NewEvent, instant: bool, args: Option<&str>) -> usize {
        let index = self.ts.len();
        self.event_id.push(e.event_id);
        self.ts.push(e.ts);
        self.dur.push(e.dur);
        self.name.push(e.name);
        self.cat.push(e.cat);
        self.kind.push(e.kind);
        self.instant.push(instant);
        self.device_activity.push(e.device_activity);
        self.track.push(e.track);
        self.device.push(e.fields);
        match args {
            Some(text) => {
                self.args_start.push(self.arena.append(text.as_bytes()));
                self.args_len.push(text.len() as u32);
            }
            None => {
                self.args_start.push(0);
                self.args_len.push(NO_ID);
            }
        }
        index
    }

    /// The `args_json` text of event `i` (after [`ArgsArena::finish_writes`]).
    pub fn args(&self, i: usize) -> io::Result<Option<String>> {
        let len = self.args_len[i];
        if len == NO_ID {
            return Ok(None);
        }
        self.arena.read(self.args_start[i], len).map(Some)
    }

    /// Keeps only the rows `keep` (ascending), renumbered from 0 in that
    /// order. The arena stays whole: rows already written elsewhere keep
    /// pointing into it.
    pub fn retain_rows(&mut self, keep: &[usize]) {
        fn retain<T: Copy>(column: &mut Vec<T>, keep: &[usize]) {
            for (new, &old) in keep.iter().enumerate() {
                column[new] = column[old];
            }
            column.truncate(keep.len());
        }
        retain(&mut self.event_id, keep);
        retain(&mut self.ts, keep);
        retain(&mut self.dur, keep);
        retain(&mut self.name, keep);
        retain(&mut self.cat, keep);
        retain(&mut self.kind, keep);
        retain(&mut self.instant, keep);
        retain(&mut self.device_activity, keep);
        retain(&mut self.track, keep);
        self.device.retain_rows(keep);
        retain(&mut self.args_start, keep);
        retain(&mut self.args_len, keep);
        let overrides = std::mem::take(&mut self.thread_override);
        self.thread_override = keep
            .iter()
            .enumerate()
            .filter_map(|(new, &old)| Some((new as u32, *overrides.get(&(old as u32))?)))
            .collect();
    }

    /// Hands every row to a store of its own (the arena stays here) and
    /// keeps the rows `keep` (ascending), renumbered from 0 in that order
    /// as [`Self::retain_rows`] would. `spare` lends its empty columns.
    pub fn split_off_keeping(&mut self, keep: &[usize], spare: EventStore) -> EventStore {
        let mut out = std::mem::replace(self, spare);
        std::mem::swap(&mut self.arena, &mut out.arena);
        for &old in keep {
            self.push_row_of(&out, old);
        }
        out
    }

    fn push_row_of(&mut self, from: &EventStore, i: usize) {
        let at = self.len() as u32;
        self.event_id.push(from.event_id[i]);
        self.ts.push(from.ts[i]);
        self.dur.push(from.dur[i]);
        self.name.push(from.name[i]);
        self.cat.push(from.cat[i]);
        self.kind.push(from.kind[i]);
        self.instant.push(from.instant[i]);
        self.device_activity.push(from.device_activity[i]);
        self.track.push(from.track[i]);
        self.device.push(from.device.get(i));
        self.args_start.push(from.args_start[i]);
        self.args_len.push(from.args_len[i]);
        if let Some(&thread) = from.thread_override.get(&(i as u32)) {
            self.thread_override.insert(at, thread);
        }
    }

    /// Empties every column, keeping capacity for at most `rows` rows.
    pub fn clear_rows(&mut self, rows: usize) {
        self.retain_rows(&[]);
        self.shrink_to(rows);
    }

    /// Lowers every column's capacity to at most `rows` (not below its length).
    pub fn shrink_to(&mut self, rows: usize) {
        self.event_id.shrink_to(rows);
        self.ts.shrink_to(rows);
        self.dur.shrink_to(rows);
        self.name.shrink_to(rows);
        self.cat.shrink_to(rows);
        self.kind.shrink_to(rows);
        self.instant.shrink_to(rows);
        self.device_activity.shrink_to(rows);
        self.track.shrink_to(rows);
        self.device.shrink_to(rows);
        self.args_start.shrink_to(rows);
        self.args_len.shrink_to(rows);
    }

    /// The end of a slice (`i64::MAX` when unterminated).
    pub fn end(&self, i: usize) -> i64 {
        let d = self.dur[i];
        if d < 0 {
            i64::MAX
        } else {
            self.ts[i].saturating_add(d)
        }
    }
}

/// One counter sample.
#[derive(Debug, Clone, Copy)]
pub struct CounterRow {
    pub track: u32,
    pub ts: i64,
    pub value: f64,
    pub name: u32,
    pub unit: u32,
}

/// A flow endpoint (`s`, `t`, `f`).
#[derive(Debug, Clone, Copy)]
pub struct FlowPoint {
    pub key: u32,
    pub numeric_id: i64,
    pub phase: u8,
    pub pid: super::tracks::Ident,
    pub tid: super::tracks::Ident,
    pub ts: i64,
    /// `bp: "e"`: bind to the enclosing slice.
    pub enclosing: bool,
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
