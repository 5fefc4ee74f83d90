//! Per-sequence incremental state: interned strings, frames and callstacks,
//! packet defaults and the legacy thread descriptor.
//!
//! Interning ids (`iid`s) mean something only on the
//! `trusted_packet_sequence_id` that defined them, and only until the
//! sequence clears its incremental state. A packet that needs incremental
//! state on a sequence whose state is unknown (never cleared, or packets
//! were dropped since) cannot be decoded faithfully; it is skipped and
//! counted, as Perfetto's own trace processor does.

use std::borrow::Cow;

use crate::FastHashMap;

use super::proto::{
    InternedData, Mapping, SEQ_INCREMENTAL_STATE_CLEARED, SEQ_NEEDS_INCREMENTAL_STATE,
    SourceLocation, TracePacket, TracePacketDefaults,
};

pub fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Mapping path pieces read per mapping: real paths have a handful
/// (`/system/lib64/libc.so` is three); the rest are not read (counted as
/// `mapping_path_truncated`), so resolving a module costs at most this many
/// lookups however long the interned list.
pub const MAX_PATH_PIECES: usize = 256;

/// Longest module name made of `/` alone (a path whose pieces hold
/// nothing but slashes); longer ones are cut (`mapping_path_truncated`).
pub const MAX_SLASH_MODULE_BYTES: usize = 4096;

/// An interned function name with the serial of its definition: caches
/// keyed by serials stay right when an iid is defined again.
pub struct Defined {
    pub serial: u64,
    pub text: String,
}

/// An interned mapping path piece and its last non-empty `/` segment,
/// found once when it is defined.
pub struct PathPiece {
    pub serial: u64,
    pub text: String,
    pub segment: Option<std::ops::Range<usize>>,
}

impl PathPiece {
    fn new(serial: u64, text: String) -> Self {
        let mut end = text.len();
        let mut segment = None;
        for (i, b) in text.bytes().enumerate().rev() {
            if b == b'/' {
                if i + 1 < end {
                    segment = Some(i + 1..end);
                    break;
                }
                end = i;
            }
        }
        if segment.is_none() && end > 0 {
            segment = Some(0..end);
        }
        PathPiece {
            serial,
            text,
            segment,
        }
    }
}

/// What names a frame's function: an interned name (by definition), or
/// its relative pc when it has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FunctionRef {
    Named { iid: u64, serial: u64 },
    Pc(u64),
}

/// A frame's module: the last non-empty segment of its mapping's path
/// (what the stacks show), by the definition of the piece that holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModuleRef {
    None,
    Segment {
        iid: u64,
        serial: u64,
    },
    /// A path of slashes alone: the path itself, this many bytes long.
    Slashes(usize),
}

/// A frame by the definitions it is made of: equal keys give the same
/// aggregator frame, so each is hashed and stored once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FrameKey {
    pub function: FunctionRef,
    pub module: ModuleRef,
}

#[derive(Default)]
pub struct Sequence {
    /// Incremental state is known (cleared at least once, no loss since).
    pub valid: bool,
    pub event_names: FastHashMap<u64, String>,
    pub categories: FastHashMap<u64, String>,
    pub annotation_names: FastHashMap<u64, String>,
    pub annotation_strings: FastHashMap<u64, String>,
    pub source_locations: FastHashMap<u64, SourceLocation>,
    pub function_names: FastHashMap<u64, Defined>,
    pub mapping_paths: FastHashMap<u64, PathPiece>,
    pub mappings: FastHashMap<u64, Mapping>,
    pub frames: FastHashMap<u64, super::proto::Frame>,
    pub callstacks: FastHashMap<u64, Vec<u64>>,
    /// Callstack iid → aggregator stack id, valid until the next reset.
    pub stack_cache: FastHashMap<u64, Option<u32>>,
    /// Event name iid → the processor's string id (dropped when the iid
    /// is defined again): a name is hashed once, not once per event.
    pub event_name_ids: FastHashMap<u64, u32>,
    /// Category iid → the processor's string id, likewise.
    pub category_ids: FastHashMap<u64, u32>,
    /// Mapping iid → its module (dropped when the mapping or any path
    /// piece is defined again).
    pub module_cache: FastHashMap<u64, ModuleRef>,
    /// Frame content → aggregator frame id: the aggregator hashes a
    /// frame's text, once per distinct frame instead of once per use.
    pub frame_ids: FastHashMap<FrameKey, u32>,
    /// Serial of the next function name or path piece definition.
    next_serial: u64,
    pub defaults: Option<TracePacketDefaults>,
    /// Legacy `ThreadDescriptor` packet: `(pid, tid)` and the reference
    /// time for delta timestamps (µs).
    pub thread: Option<(i32, i32)>,
    pub legacy_time_us: Option<i64>,
    /// Last timestamp of a `StreamingProfilePacket` (µs).
    pub profile_time_us: Option<i64>,
}

/// What the packet's flags mean for its sequence.
#[derive(Debug, PartialEq, Eq)]
pub enum Admission {
    Accept,
    /// The packet needs interned state the sequence does not have.
    SkipNeedsState,
}

/// A frame's module as resolved from its mapping, and whether the
/// mapping's path had to be cut.
pub struct ResolvedModule {
    pub module: ModuleRef,
    pub truncated: bool,
}

impl Sequence {
    fn reset(&mut self) {
        *self = Sequence {
            valid: true,
            ..Sequence::default()
        };
    }

    /// Applies the packet's sequence flags, loss markers and interned data;
    /// says whether the packet's payload can be decoded.
    pub fn admit(&mut self, packet: &TracePacket) -> Admission {
        let flags = packet.sequence_flags.unwrap_or(0);
        if packet.previous_packet_dropped == Some(true) {
            self.valid = false;
        }
        if flags & SEQ_INCREMENTAL_STATE_CLEARED != 0
            || packet.incremental_state_cleared == Some(true)
        {
            self.reset();
        }
        if flags & SEQ_NEEDS_INCREMENTAL_STATE != 0 && !self.valid {
            return Admission::SkipNeedsState;
        }
        if let Some(defaults) = &packet.trace_packet_defaults {
            self.defaults = Some(defaults.as_ref().clone());
        }
        if let Some(data) = &packet.interned_data {
            self.intern(data);
        }
        Admission::Accept
    }

    fn intern(&mut self, d: &InternedData) {
        let names = |map: &mut FastHashMap<u64, String>,
                     ids: &mut FastHashMap<u64, u32>,
                     items: &[super::proto::InternedName]| {
            for item in items {
                if let (Some(iid), Some(name)) = (item.iid, &item.name) {
                    map.insert(iid, lossy(name));
                    ids.remove(&iid);
                }
            }
        };
        names(
            &mut self.event_names,
            &mut self.event_name_ids,
            &d.event_names,
        );
        names(
            &mut self.categories,
            &mut self.category_ids,
            &d.event_categories,
        );
        for item in &d.debug_annotation_names {
            if let (Some(iid), Some(name)) = (item.iid, &item.name) {
                self.annotation_names.insert(iid, lossy(name));
            }
        }
        for item in &d.debug_annotation_string_values {
            if let (Some(iid), Some(s)) = (item.iid, &item.str) {
                self.annotation_strings.insert(iid, lossy(s));
            }
        }
        for item in d.function_names.iter().chain(&d.kernel_symbols) {
            if let (Some(iid), Some(s)) = (item.iid, &item.str) {
                let serial = self.serial();
                let text = lossy(s);
                self.function_names.insert(iid, Defined { serial, text });
            }
        }
        for item in &d.mapping_paths {
            if let (Some(iid), Some(s)) = (item.iid, &item.str) {
                let serial = self.serial();
                self.mapping_paths
                    .insert(iid, PathPiece::new(serial, lossy(s)));
            }
        }
        if !d.mapping_paths.is_empty() {
            self.module_cache.clear();
        }
        for loc in &d.source_locations {
            if let Some(iid) = loc.iid {
                self.source_locations.insert(iid, loc.clone());
            }
        }
        for m in &d.mappings {
            if let Some(iid) = m.iid {
                self.mappings.insert(iid, m.clone());
                self.module_cache.remove(&iid);
            }
        }
        for f in &d.frames {
            if let Some(iid) = f.iid {
                self.frames.insert(iid, f.clone());
            }
        }
        for c in &d.callstacks {
            if let Some(iid) = c.iid {
                self.callstacks.insert(iid, c.frame_ids.clone());
                self.stack_cache.remove(&iid);
            }
        }
    }

    fn serial(&mut self) -> u64 {
        self.next_serial += 1;
        self.next_serial
    }

    /// The module of a mapping: the last non-empty `/` segment of its path
    /// (its interned pieces joined by `/`), as the stacks name it. Reads at
    /// most [`MAX_PATH_PIECES`] pieces; cached per mapping.
    fn module(&mut self, mapping_id: Option<u64>) -> ResolvedModule {
        let unresolved = ResolvedModule {
            module: ModuleRef::None,
            truncated: false,
        };
        let Some(iid) = mapping_id else {
            return unresolved;
        };
        if let Some(&module) = self.module_cache.get(&iid) {
            return ResolvedModule {
                module,
                truncated: false,
            };
        }
        let Some(mapping) = self.mappings.get(&iid) else {
            return unresolved;
        };
        let ids = &mapping.path_string_ids;
        let mut truncated = ids.len() > MAX_PATH_PIECES;
        let mut known = 0usize;
        let mut slashes = 0usize;
        let mut module = None;
        for id in ids[..ids.len().min(MAX_PATH_PIECES)].iter().rev() {
            let Some(piece) = self.mapping_paths.get(id) else {
                continue;
            };
            known += 1;
            if piece.segment.is_some() {
                module = Some(ModuleRef::Segment {
                    iid: *id,
                    serial: piece.serial,
                });
                break;
            }
            slashes = slashes.saturating_add(piece.text.len());
        }
        let module = match module {
            Some(m) => m,
            None if known == 0 => ModuleRef::None,
            // Pieces of slashes alone (or empty): the path has no
            // non-empty segment and is its own name.
            None => {
                let len = slashes.saturating_add(known - 1);
                truncated |= len > MAX_SLASH_MODULE_BYTES;
                ModuleRef::Slashes(len.min(MAX_SLASH_MODULE_BYTES))
            }
        };
        self.module_cache.insert(iid, module);
        ResolvedModule { module, truncated }
    }

    /// Resolves a frame iid to the definitions it is made of; `None` when
    /// the frame was never interned. The second value says the mapping's
    /// path was cut.
    pub fn frame_key(&mut self, iid: u64) -> Option<(FrameKey, bool)> {
        let frame = self.frames.get(&iid)?;
        let (function_name_id, mapping_id, rel_pc) =
            (frame.function_name_id, frame.mapping_id, frame.rel_pc);
        let function = function_name_id
            .and_then(|id| {
                self.function_names
                    .get(&id)
                    .filter(|name| !name.text.is_empty())
                    .map(|name| FunctionRef::Named {
                        iid: id,
                        serial: name.serial,
                    })
            })
            .unwrap_or(FunctionRef::Pc(rel_pc.unwrap_or(0)));
        let module = self.module(mapping_id);
        Some((
            FrameKey {
                function,
                module: module.module,
            },
            module.truncated,
        ))
    }

    /// The text of a frame key: its function name (or `0x<rel_pc>`, then
    /// unsymbolized) and its module.
    pub fn frame_text(&self, key: &FrameKey) -> (Cow<'_, str>, Option<Cow<'_, str>>, bool) {
        let (function, symbolized) = match key.function {
            FunctionRef::Named { iid, .. } => match self.function_names.get(&iid) {
                Some(name) => (Cow::Borrowed(name.text.as_str()), true),
                None => (Cow::Borrowed(""), true),
            },
            FunctionRef::Pc(pc) => (Cow::Owned(format!("0x{pc:x}")), false),
        };
        let module = match key.module {
            ModuleRef::None => None,
            ModuleRef::Segment { iid, .. } => Some(
                self.mapping_paths
                    .get(&iid)
                    .and_then(|p| p.segment.clone().map(|r| &p.text[r]))
                    .map_or(Cow::Borrowed(""), Cow::Borrowed),
            ),
            ModuleRef::Slashes(n) => Some(Cow::Owned("/".repeat(n))),
        };
        (function, module, symbolized)
    }
}

#[cfg(test)]
mod tests {
    use super::super::proto::InternedName;
    use super::*;

    fn names_packet(flags: u32, iid: u64, name: &str) -> TracePacket {
        TracePacket {
            sequence_flags: Some(flags),
            interned_data: Some(Box::new(InternedData {
                event_names: vec![InternedName {
                    iid: Some(iid),
                    name: Some(name.as_bytes().to_vec()),
                }],
                ..Default::default()
            })),
            ..Default::default()
        }
    }

    #[test]
    fn a_clear_drops_old_ids_and_loss_invalidates_until_the_next_clear() {
        let mut s = Sequence::default();
        assert_eq!(
            s.admit(&names_packet(SEQ_NEEDS_INCREMENTAL_STATE, 1, "x")),
            Admission::SkipNeedsState
        );
        assert_eq!(
            s.admit(&names_packet(SEQ_INCREMENTAL_STATE_CLEARED, 1, "a")),
            Admission::Accept
        );
        assert_eq!(s.event_names.get(&1).map(String::as_str), Some("a"));
        assert_eq!(
            s.admit(&names_packet(SEQ_INCREMENTAL_STATE_CLEARED, 2, "b")),
            Admission::Accept
        );
        assert!(!s.event_names.contains_key(&1));
        let dropped = TracePacket {
            previous_packet_dropped: Some(true),
            sequence_flags: Some(SEQ_NEEDS_INCREMENTAL_STATE),
            ..Default::default()
        };
        assert_eq!(s.admit(&dropped), Admission::SkipNeedsState);
    }
}
