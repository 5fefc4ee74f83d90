//! One stored event as a plain value, and its compact byte form.
//!
//! The in-memory [`EventStore`] keeps events column by column; when a
//! trace is too large for that, events leave the store as records in
//! spill runs ([`super::runs`]) and come back for nesting and output. The
//! byte form is little-endian and written and read only by this process:
//! a fixed head, then only the optional fields that are present (most
//! events have few), so a record is about half the fixed-width size.

use super::device_columns::DeviceFields;
use super::event_batch::NO_PARENT;
use super::kinds::EventKind;
use super::store::{EventStore, NO_ID, NONE};

/// Bytes of a record's fixed head (the rest depends on its presence bits).
pub const HEAD_BYTES: usize = 48;
/// Bytes of the largest record.
pub const MAX_RECORD_BYTES: usize = HEAD_BYTES + 9 * 8 + 4 + 12 + 16;

/// Presence bits after the eight optional integers.
const PARENT_BIT: u16 = 1 << 8;
const CAT_BIT: u16 = 1 << 9;
const ARGS_BIT: u16 = 1 << 10;
const THREAD_BIT: u16 = 1 << 11;

/// Every column of one event, plus what nesting derives for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventRecord {
    pub event_id: u64,
    pub ts: i64,
    /// -1 for an unterminated slice; 0 for instants.
    pub dur: i64,
    pub name: u32,
    pub cat: u32,
    pub kind: EventKind,
    pub instant: bool,
    pub device_activity: bool,
    pub track: u32,
    pub fields: DeviceFields,
    pub args_start: u64,
    pub args_len: u32,
    /// The `(pid, tid)` the row names instead of its track's (a Perfetto
    /// scheduling slice names the task on a CPU track).
    pub thread: Option<(i64, i64)>,
    /// Set by nesting: the parent's event id or [`NO_PARENT`].
    pub parent_event_id: u64,
    pub depth: i32,
    pub self_ns: i64,
}

impl EventRecord {
    /// Row `i` of `store`, with nothing derived yet.
    pub fn from_store(s: &EventStore, i: usize) -> Self {
        EventRecord {
            event_id: s.event_id[i],
            ts: s.ts[i],
            dur: s.dur[i],
            name: s.name[i],
            cat: s.cat[i],
            kind: s.kind[i],
            instant: s.instant[i],
            device_activity: s.device_activity[i],
            track: s.track[i],
            fields: s.device.get(i),
            args_start: s.args_start[i],
            args_len: s.args_len[i],
            thread: if s.thread_override.is_empty() {
                None
            } else {
                s.thread_override.get(&(i as u32)).copied()
            },
            parent_event_id: NO_PARENT,
            depth: 0,
            self_ns: 0,
        }
    }

    /// The end of the slice (`i64::MAX` when unterminated), as
    /// [`EventStore::end`].
    pub fn end(&self) -> i64 {
        if self.dur < 0 {
            i64::MAX
        } else {
            self.ts.saturating_add(self.dur)
        }
    }

    /// Duration for ordering within a track: unterminated sorts as longest.
    pub fn sort_dur(&self) -> i64 {
        if self.dur < 0 { i64::MAX } else { self.dur }
    }

    /// Appends the byte form to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let optional = self.fields.to_array();
        let mut present = 0u16;
        for (bit, v) in optional.iter().enumerate() {
            if *v != NONE {
                present |= 1 << bit;
            }
        }
        if self.parent_event_id != NO_PARENT {
            present |= PARENT_BIT;
        }
        if self.cat != NO_ID {
            present |= CAT_BIT;
        }
        if self.args_len != NO_ID {
            present |= ARGS_BIT;
        }
        if self.thread.is_some() {
            present |= THREAD_BIT;
        }
        out.extend_from_slice(&self.event_id.to_le_bytes());
        out.extend_from_slice(&self.ts.to_le_bytes());
        out.extend_from_slice(&self.dur.to_le_bytes());
        out.extend_from_slice(&self.self_ns.to_le_bytes());
        out.extend_from_slice(&self.name.to_le_bytes());
        out.extend_from_slice(&self.track.to_le_bytes());
        out.extend_from_slice(&self.depth.to_le_bytes());
        let flags = u8::from(self.instant) | (u8::from(self.device_activity) << 1);
        out.extend_from_slice(&[self.kind as u8, flags]);
        out.extend_from_slice(&present.to_le_bytes());
        for v in optional.iter().filter(|&&v| v != NONE) {
            out.extend_from_slice(&v.to_le_bytes());
        }
        if present & PARENT_BIT != 0 {
            out.extend_from_slice(&self.parent_event_id.to_le_bytes());
        }
        if present & CAT_BIT != 0 {
            out.extend_from_slice(&self.cat.to_le_bytes());
        }
        if present & ARGS_BIT != 0 {
            out.extend_from_slice(&self.args_start.to_le_bytes());
            out.extend_from_slice(&self.args_len.to_le_bytes());
        }
        if let Some((pid, tid)) = self.thread {
            out.extend_from_slice(&pid.to_le_bytes());
            out.extend_from_slice(&tid.to_le_bytes());
        }
    }

    /// The length of the record whose head starts `bytes` (`None` before a
    /// whole head).
    pub fn encoded_len(bytes: &[u8]) -> Option<usize> {
        let present = u16::from_le_bytes(bytes.get(46..48)?.try_into().ok()?);
        let integers = (present & 0xff).count_ones() as usize;
        let parent = usize::from(present & PARENT_BIT != 0);
        let cat = usize::from(present & CAT_BIT != 0);
        let args = usize::from(present & ARGS_BIT != 0);
        let thread = usize::from(present & THREAD_BIT != 0);
        Some(HEAD_BYTES + 8 * (integers + parent) + 4 * cat + 12 * args + 16 * thread)
    }

    /// Reads the record at the start of `bytes`, written by
    /// [`EventRecord::encode`]; `None` when the bytes are not one (a
    /// damaged or cut spill file).
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        let len = Self::encoded_len(bytes)?;
        let bytes = bytes.get(..len)?;
        let u64_at = |k: usize| -> Option<u64> {
            Some(u64::from_le_bytes(bytes.get(k..k + 8)?.try_into().ok()?))
        };
        let (event_id, ts) = (u64_at(0)?, u64_at(8)? as i64);
        let (dur, self_ns) = (u64_at(16)? as i64, u64_at(24)? as i64);
        let u32_at = |k: usize| -> Option<u32> {
            Some(u32::from_le_bytes(bytes.get(k..k + 4)?.try_into().ok()?))
        };
        let (name, track, depth) = (u32_at(32)?, u32_at(36)?, u32_at(40)? as i32);
        let kind = EventKind::from_code(*bytes.get(44)?)?;
        let flags = *bytes.get(45)?;
        let present = u16::from_le_bytes(bytes.get(46..48)?.try_into().ok()?);
        let mut at = HEAD_BYTES;
        let mut next = |n: usize| -> Option<&[u8]> {
            let field = bytes.get(at..at + n)?;
            at += n;
            Some(field)
        };
        let mut optional = [NONE; 8];
        for (bit, slot) in optional.iter_mut().enumerate() {
            if present & (1 << bit) != 0 {
                *slot = i64::from_le_bytes(next(8)?.try_into().ok()?);
            }
        }
        let mut parent_event_id = NO_PARENT;
        if present & PARENT_BIT != 0 {
            parent_event_id = u64::from_le_bytes(next(8)?.try_into().ok()?);
        }
        let mut cat = NO_ID;
        if present & CAT_BIT != 0 {
            cat = u32::from_le_bytes(next(4)?.try_into().ok()?);
        }
        let (mut args_start, mut args_len) = (0, NO_ID);
        if present & ARGS_BIT != 0 {
            args_start = u64::from_le_bytes(next(8)?.try_into().ok()?);
            args_len = u32::from_le_bytes(next(4)?.try_into().ok()?);
        }
        let mut thread = None;
        if present & THREAD_BIT != 0 {
            let pid = i64::from_le_bytes(next(8)?.try_into().ok()?);
            let tid = i64::from_le_bytes(next(8)?.try_into().ok()?);
            thread = Some((pid, tid));
        }
        Some(EventRecord {
            event_id,
            ts,
            dur,
            name,
            cat,
            kind,
            instant: flags & 1 != 0,
            device_activity: flags & 2 != 0,
            track,
            fields: DeviceFields::from_array(optional),
            args_start,
            args_len,
            thread,
            parent_event_id,
            depth,
            self_ns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> EventRecord {
        EventRecord {
            event_id: u64::MAX - 3,
            ts: i64::MIN + 1,
            dur: -1,
            name: 7,
            cat: 8,
            kind: EventKind::NvtxRange,
            instant: true,
            device_activity: true,
            track: 3,
            fields: DeviceFields {
                device: 1,
                context: -5,
                stream: 7,
                correlation: 1 << 40,
                external: 2,
                graph_id: 3,
                graph_node_id: 4,
                bytes: 5,
            },
            args_start: 1 << 35,
            args_len: 17,
            thread: Some((-1, i64::MAX)),
            parent_event_id: 99,
            depth: -2,
            self_ns: 123,
        }
    }

    #[test]
    fn records_survive_their_byte_form_with_any_field_absent() {
        let mut bytes = Vec::new();
        full().encode(&mut bytes);
        assert_eq!(bytes.len(), MAX_RECORD_BYTES);
        for absent in 0u32..1 << 12 {
            let mut r = full();
            let mut optional = [
                &mut r.fields.device,
                &mut r.fields.context,
                &mut r.fields.stream,
                &mut r.fields.correlation,
                &mut r.fields.external,
                &mut r.fields.graph_id,
                &mut r.fields.graph_node_id,
                &mut r.fields.bytes,
            ];
            for (bit, v) in optional.iter_mut().enumerate() {
                if absent & (1 << bit) != 0 {
                    **v = NONE;
                }
            }
            if absent & (1 << 8) != 0 {
                r.parent_event_id = NO_PARENT;
            }
            if absent & (1 << 9) != 0 {
                r.cat = NO_ID;
            }
            if absent & (1 << 10) != 0 {
                (r.args_start, r.args_len) = (0, NO_ID);
            }
            if absent & (1 << 11) != 0 {
                r.thread = None;
            }
            bytes.clear();
            r.encode(&mut bytes);
            let present = 12 - absent.count_ones() as usize;
            assert!(bytes.len() >= HEAD_BYTES + 4 * present);
            assert_eq!(EventRecord::encoded_len(&bytes), Some(bytes.len()));
            assert_eq!(EventRecord::decode(&bytes), Some(r));
            // A cut record is refused, never misread.
            assert_eq!(EventRecord::decode(&bytes[..bytes.len() - 1]), None);
        }
    }

    #[test]
    fn an_unknown_kind_is_refused() {
        let mut bytes = Vec::new();
        full().encode(&mut bytes);
        for kind in 0..=u8::MAX {
            bytes[44] = kind;
            let decoded = EventRecord::decode(&bytes);
            assert_eq!(decoded.is_some(), EventKind::from_code(kind).is_some());
            if let Some(d) = decoded {
                assert_eq!(d.kind as u8, kind);
            }
        }
    }
}
