//! Compact in-memory form of the events kept for the output tables.
//!
//! `trace_events` must be globally sorted by `(ts_ns, event_id)` and every
//! row needs its parent and self time, which are only known once a track is
//! complete. So events are held until the end of the input — in a
//! struct-of-arrays with interned strings and one byte arena for `args_json`,
//! about 120 bytes per event. Inputs larger than memory are not spilled to
//! disk yet (see `docs/extractors.md`).

use std::collections::HashMap;

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
    map: HashMap<Box<str>, u32>,
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
    pub device: i64,
    pub context: i64,
    pub stream: i64,
    pub correlation: i64,
    pub external: i64,
    pub graph_id: i64,
    pub graph_node_id: i64,
    pub bytes: i64,
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
    pub device: Vec<i64>,
    pub context: Vec<i64>,
    pub stream: Vec<i64>,
    pub correlation: Vec<i64>,
    pub external: Vec<i64>,
    pub graph_id: Vec<i64>,
    pub graph_node_id: Vec<i64>,
    pub bytes: Vec<i64>,
    pub args_start: Vec<u64>,
    pub args_len: Vec<u32>,
    pub arena: Vec<u8>,
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
        self.device.push(e.device);
        self.context.push(e.context);
        self.stream.push(e.stream);
        self.correlation.push(e.correlation);
        self.external.push(e.external);
        self.graph_id.push(e.graph_id);
        self.graph_node_id.push(e.graph_node_id);
        self.bytes.push(e.bytes);
        match args {
            Some(text) => {
                self.args_start.push(self.arena.len() as u64);
                self.args_len.push(text.len() as u32);
                self.arena.extend_from_slice(text.as_bytes());
            }
            None => {
                self.args_start.push(0);
                self.args_len.push(NO_ID);
            }
        }
        index
    }

    pub fn args(&self, i: usize) -> Option<&str> {
        let len = self.args_len[i];
        if len == NO_ID {
            return None;
        }
        let start = self.args_start[i] as usize;
        std::str::from_utf8(&self.arena[start..start + len as usize]).ok()
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
