//! Per-sequence incremental state: interned strings, frames and callstacks,
//! packet defaults and the legacy thread descriptor.
//!
//! Interning ids (`iid`s) mean something only on the
//! `trusted_packet_sequence_id` that defined them, and only until the
//! sequence clears its incremental state. A packet that needs incremental
//! state on a sequence whose state is unknown (never cleared, or packets
//! were dropped since) cannot be decoded faithfully; it is skipped and
//! counted, as Perfetto's own trace processor does.

use crate::FastHashMap;

use super::proto::{
    InternedData, Mapping, SEQ_INCREMENTAL_STATE_CLEARED, SEQ_NEEDS_INCREMENTAL_STATE,
    SourceLocation, TracePacket, TracePacketDefaults,
};

pub fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A frame resolved from the interning tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedFrame {
    pub function: Option<String>,
    pub module: Option<String>,
    pub rel_pc: Option<u64>,
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
    pub function_names: FastHashMap<u64, String>,
    pub mapping_paths: FastHashMap<u64, String>,
    pub mappings: FastHashMap<u64, Mapping>,
    pub frames: FastHashMap<u64, super::proto::Frame>,
    pub callstacks: FastHashMap<u64, Vec<u64>>,
    /// Callstack iid → aggregator stack id, valid until the next reset.
    pub stack_cache: FastHashMap<u64, Option<u32>>,
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
        let names = |map: &mut FastHashMap<u64, String>, items: &[super::proto::InternedName]| {
            for item in items {
                if let (Some(iid), Some(name)) = (item.iid, &item.name) {
                    map.insert(iid, lossy(name));
                }
            }
        };
        names(&mut self.event_names, &d.event_names);
        names(&mut self.categories, &d.event_categories);
        names(&mut self.annotation_names, &d.debug_annotation_names);
        let strings = |map: &mut FastHashMap<u64, String>,
                       items: &[super::proto::InternedString]| {
            for item in items {
                if let (Some(iid), Some(s)) = (item.iid, &item.str) {
                    map.insert(iid, lossy(s));
                }
            }
        };
        strings(
            &mut self.annotation_strings,
            &d.debug_annotation_string_values,
        );
        strings(&mut self.function_names, &d.function_names);
        strings(&mut self.function_names, &d.kernel_symbols);
        strings(&mut self.mapping_paths, &d.mapping_paths);
        for loc in &d.source_locations {
            if let Some(iid) = loc.iid {
                self.source_locations.insert(iid, loc.clone());
            }
        }
        for m in &d.mappings {
            if let Some(iid) = m.iid {
                self.mappings.insert(iid, m.clone());
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

    /// The mapping's path (its interned path pieces joined by `/`).
    fn mapping_path(&self, mapping: &Mapping) -> Option<String> {
        let parts: Vec<&str> = mapping
            .path_string_ids
            .iter()
            .filter_map(|id| self.mapping_paths.get(id).map(String::as_str))
            .collect();
        if parts.is_empty() {
            return None;
        }
        let joined = parts.join("/");
        Some(if joined.starts_with('/') || parts.len() == 1 {
            joined
        } else {
            format!("/{joined}")
        })
    }

    /// Resolves a frame iid; `None` when the frame was never interned.
    pub fn frame(&self, iid: u64) -> Option<ResolvedFrame> {
        let frame = self.frames.get(&iid)?;
        let function = frame
            .function_name_id
            .and_then(|id| self.function_names.get(&id))
            .filter(|name| !name.is_empty())
            .cloned();
        let module = frame
            .mapping_id
            .and_then(|id| self.mappings.get(&id))
            .and_then(|m| self.mapping_path(m));
        Some(ResolvedFrame {
            function,
            module,
            rel_pc: frame.rel_pc,
        })
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
