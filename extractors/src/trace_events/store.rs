//! Compact in-memory form of the events kept for the output tables.
//!
//! `trace_events` must be globally sorted by `(ts_ns, event_id)` and every
//! row needs its parent and self time, which are only known once a track is
//! complete. So events are held until the end of the input — in a
//! struct-of-arrays with interned strings, about 55 bytes per event
//! (plus 64 for the few with device fields, [`DeviceColumns`]). The
//! `args_json` text (the bulk of a Kineto trace) goes to an [`ArgsArena`],
//! which moves to an unlinked spill file once it passes
//! [`super::args_arena::ARGS_SPILL_AFTER_BYTES`], so it does not count against memory.

use super::args_arena::ArgsArena;
use super::device_columns::{DeviceColumns, DeviceFields};
use std::io;

use super::ids::NO_ID;
use super::kinds::EventKind;
use super::tracks::Ident;

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
    pub pid: Ident,
    pub tid: Ident,
    pub ts: i64,
    /// `bp: "e"`: bind to the enclosing slice.
    pub enclosing: bool,
}
