//! Track identity for Chrome traces: threads, GPU streams, async and
//! counter tracks.
//!
//! A track is where nesting happens, so its key must be exact: `(pid, tid)`
//! for threads, where producers write ids as numbers, numeric strings
//! (`"25738"`) or labels (`"stream 7"`, `"Spans"`). Numeric strings are the
//! same thread as the number; labels keep a null column and name the track.
//! Ids are dense in first-appearance order so re-extraction is stable.

use crate::FastHashMap;

use super::ids::{NO_ID, NONE};
use super::interner::Interner;

/// A pid or tid as written: absent, an integer, or a label (interned).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ident {
    None,
    Int(i64),
    Label(u32),
}

impl Ident {
    pub fn int(self) -> Option<i64> {
        match self {
            Ident::Int(i) => Some(i),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrackKind {
    Thread,
    GpuStream,
    Async,
    Counter,
    /// One CPU's scheduling timeline.
    Cpu,
    /// One thread's scheduling states.
    ThreadState,
    /// One CPU's hard interrupt or softirq handlers.
    Interrupt,
}

impl TrackKind {
    pub fn name(self) -> &'static str {
        match self {
            TrackKind::Thread => "thread",
            TrackKind::GpuStream => "gpu_stream",
            TrackKind::Async => "async",
            TrackKind::Counter => "counter",
            TrackKind::Cpu => "cpu",
            TrackKind::ThreadState => "thread_state",
            TrackKind::Interrupt => "interrupt",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Track {
    pub kind: TrackKind,
    pub pid: Ident,
    pub tid: Ident,
    /// Explicit name (async first event name, counter name); `NO_ID` = derive.
    pub name: u32,
    pub device: i64,
    pub stream: i64,
    /// Whether nesting on this track was improper somewhere.
    pub improper: bool,
}

/// All tracks plus the names learned from `M` events.
#[derive(Default)]
pub struct Tracks {
    pub list: Vec<Track>,
    threads: FastHashMap<(Ident, Ident), u32>,
    asyncs: FastHashMap<(Ident, u32, u32), u32>,
    counters: FastHashMap<(Ident, u32), u32>,
    memory: FastHashMap<(Ident, i64), u32>,
    pub process_names: FastHashMap<Ident, u32>,
    pub thread_names: FastHashMap<(Ident, Ident), u32>,
}

impl Tracks {
    fn add(&mut self, track: Track) -> u32 {
        let id = self.list.len() as u32;
        self.list.push(track);
        id
    }

    fn blank(kind: TrackKind, pid: Ident, tid: Ident) -> Track {
        Track {
            kind,
            pid,
            tid,
            name: NO_ID,
            device: NONE,
            stream: NONE,
            improper: false,
        }
    }

    pub fn thread(&mut self, pid: Ident, tid: Ident) -> u32 {
        if let Some(&id) = self.threads.get(&(pid, tid)) {
            return id;
        }
        let id = self.add(Self::blank(TrackKind::Thread, pid, tid));
        self.threads.insert((pid, tid), id);
        id
    }

    /// Marks a thread track as a GPU stream with its device/stream identity.
    pub fn mark_gpu(&mut self, track: u32, device: i64, stream: i64) {
        if let Some(t) = self.list.get_mut(track as usize) {
            if t.kind == TrackKind::Thread {
                t.kind = TrackKind::GpuStream;
            }
            if t.device == NONE {
                t.device = if device != NONE {
                    device
                } else {
                    t.pid.int().unwrap_or(NONE)
                };
            }
            if t.stream == NONE {
                t.stream = if stream != NONE {
                    stream
                } else {
                    t.tid.int().unwrap_or(NONE)
                };
            }
        }
    }

    /// A new track of `kind` with an explicit name (never merged with
    /// another; the caller keeps the identity).
    pub fn add_named(&mut self, kind: TrackKind, pid: Ident, tid: Ident, name: u32) -> u32 {
        let mut track = Self::blank(kind, pid, tid);
        track.name = name;
        self.add(track)
    }

    pub fn async_track(&mut self, pid: Ident, cat: u32, id: u32, first_name: u32) -> u32 {
        if let Some(&t) = self.asyncs.get(&(pid, cat, id)) {
            return t;
        }
        let mut track = Self::blank(TrackKind::Async, pid, Ident::None);
        track.name = first_name;
        let t = self.add(track);
        self.asyncs.insert((pid, cat, id), t);
        t
    }

    pub fn counter_track(&mut self, pid: Ident, name: u32) -> u32 {
        if let Some(&t) = self.counters.get(&(pid, name)) {
            return t;
        }
        let mut track = Self::blank(TrackKind::Counter, pid, Ident::None);
        track.name = name;
        let t = self.add(track);
        self.counters.insert((pid, name), t);
        t
    }

    pub fn memory_track(&mut self, pid: Ident, device: i64, strings: &mut Interner) -> u32 {
        if let Some(&t) = self.memory.get(&(pid, device)) {
            return t;
        }
        let label = if device == NONE {
            "[memory]".to_string()
        } else {
            format!("[memory] device {device}")
        };
        let mut track = Self::blank(TrackKind::Counter, pid, Ident::None);
        track.name = strings.intern(&label);
        track.device = device;
        let t = self.add(track);
        self.memory.insert((pid, device), t);
        t
    }

    /// The first thread/stream track of each process, for async parents.
    pub fn process_first_tracks(&self) -> FastHashMap<Ident, u32> {
        let mut first = FastHashMap::default();
        for (i, t) in self.list.iter().enumerate() {
            if matches!(t.kind, TrackKind::Thread | TrackKind::GpuStream) {
                first.entry(t.pid).or_insert(i as u32);
            }
        }
        first
    }

    pub fn label<'s>(&self, ident: Ident, strings: &'s Interner) -> Option<&'s str> {
        match ident {
            Ident::Label(l) => Some(strings.get(l)),
            _ => None,
        }
    }

    /// Process name from `M process_name`, else the pid label.
    pub fn process_name<'s>(&self, pid: Ident, strings: &'s Interner) -> Option<&'s str> {
        match self.process_names.get(&pid) {
            Some(&n) => Some(strings.get(n)),
            None => self.label(pid, strings),
        }
    }

    /// Thread name from `M thread_name`, else the tid label.
    pub fn thread_name<'s>(&self, t: &Track, strings: &'s Interner) -> Option<&'s str> {
        if !matches!(
            t.kind,
            TrackKind::Thread | TrackKind::GpuStream | TrackKind::ThreadState
        ) {
            return None;
        }
        match self.thread_names.get(&(t.pid, t.tid)) {
            Some(&n) => Some(strings.get(n)),
            None => self.label(t.tid, strings),
        }
    }

    /// The track's display name.
    pub fn display_name(&self, t: &Track, strings: &Interner) -> Option<String> {
        if t.name != NO_ID {
            return Some(strings.get(t.name).to_string());
        }
        if let Some(n) = self.thread_name(t, strings) {
            return Some(n.to_string());
        }
        match (t.kind, t.tid) {
            (TrackKind::GpuStream, _) if t.stream != NONE => Some(format!("stream {}", t.stream)),
            (_, Ident::Int(tid)) => Some(format!("thread {tid}")),
            _ => self.label(t.pid, strings).map(str::to_string),
        }
    }
}

impl Tracks {
    /// The thread track of `(pid, tid)` if one exists (flows never create tracks).
    pub fn find_thread(&self, pid: Ident, tid: Ident) -> Option<u32> {
        self.threads.get(&(pid, tid)).copied()
    }
}
