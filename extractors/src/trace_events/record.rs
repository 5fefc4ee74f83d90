//! One stored event as a plain value, and its compact byte form.
//!
//! The in-memory [`EventStore`] keeps events column by column; when a
//! trace is too large for that, events leave the store as records in
//! spill runs ([`super::runs`]) and come back for nesting and output. The
//! byte form is written and read only by this process: varints, the ids,
//! start, track and `args_json` offset as differences from the previous
//! record of the run ([`RunDelta`]), and only the optional fields that are
//! present (most events have few). A Perfetto or Kineto event takes about
//! 20 bytes instead of the 64 of a fixed-width form; every byte saved is
//! written to the spill file and read back twice (by track, then by time).

use super::device_columns::DeviceFields;
use super::ids::{NO_ID, NO_PARENT, NONE};
use super::kinds::EventKind;
use super::store::EventStore;
use crate::varint::{get_i64, get_u64, put_i64, put_u64};

/// Bytes of the longest record: the presence word, the kind, then at
/// most ten bytes per varint (five for a 32-bit one).
pub const MAX_RECORD_BYTES: usize = 2 + 1 + 4 * 10 + 3 * 5 + 8 * 10 + 10 + 5 + 10 + 5 + 2 * 10;

/// Presence bits after the eight optional integers.
const PARENT_BIT: u32 = 1 << 8;
const CAT_BIT: u32 = 1 << 9;
const ARGS_BIT: u32 = 1 << 10;
const THREAD_BIT: u32 = 1 << 11;
/// The two flags ride in the presence word above its twelve bits.
const INSTANT_BIT: u32 = 1 << 12;
const DEVICE_ACTIVITY_BIT: u32 = 1 << 13;

/// What a record is written against: the previous record of its run.
/// Runs are sorted by track and time or by time, so the event id, start,
/// track and `args_json` offset usually differ by little from the last
/// record's and take a byte or two instead of eight.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunDelta {
    event_id: u64,
    ts: i64,
    track: u32,
    args_start: u64,
}

impl RunDelta {
    fn follow(&mut self, r: &EventRecord) {
        self.event_id = r.event_id;
        self.ts = r.ts;
        self.track = r.track;
        if r.args_len != NO_ID {
            self.args_start = r.args_start;
        }
    }
}

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

    /// Appends the byte form to `out`, written against the previous
    /// record of the run (`delta`, which moves on to this one).
    pub fn encode(&self, delta: &mut RunDelta, out: &mut Vec<u8>) {
        let optional = self.fields.to_array();
        let mut present = 0u32;
        for (bit, v) in optional.iter().enumerate() {
            if *v != NONE {
                present |= 1 << bit;
            }
        }
        for (set, bit) in [
            (self.parent_event_id != NO_PARENT, PARENT_BIT),
            (self.cat != NO_ID, CAT_BIT),
            (self.args_len != NO_ID, ARGS_BIT),
            (self.thread.is_some(), THREAD_BIT),
            (self.instant, INSTANT_BIT),
            (self.device_activity, DEVICE_ACTIVITY_BIT),
        ] {
            if set {
                present |= bit;
            }
        }
        put_u64(out, u64::from(present));
        out.push(self.kind as u8);
        put_i64(out, self.event_id.wrapping_sub(delta.event_id) as i64);
        put_i64(out, self.ts.wrapping_sub(delta.ts));
        put_i64(out, self.dur);
        put_i64(out, self.self_ns);
        // `NO_ID` wraps to 0, a single byte.
        put_u64(out, u64::from(self.name.wrapping_add(1)));
        put_i64(out, i64::from(self.track) - i64::from(delta.track));
        put_i64(out, i64::from(self.depth));
        for v in optional.iter().filter(|&&v| v != NONE) {
            put_i64(out, *v);
        }
        if present & PARENT_BIT != 0 {
            put_i64(out, self.parent_event_id.wrapping_sub(self.event_id) as i64);
        }
        if present & CAT_BIT != 0 {
            put_u64(out, u64::from(self.cat));
        }
        if present & ARGS_BIT != 0 {
            put_i64(out, self.args_start.wrapping_sub(delta.args_start) as i64);
            put_u64(out, u64::from(self.args_len));
        }
        if let Some((pid, tid)) = self.thread {
            put_i64(out, pid);
            put_i64(out, tid);
        }
        delta.follow(self);
    }

    /// Reads the record at the start of `bytes`, written by
    /// [`EventRecord::encode`] against `delta` (which then moves on to
    /// it), and its length; `None` when the bytes are not one (a damaged
    /// or cut spill file).
    pub fn decode(bytes: &[u8], delta: &mut RunDelta) -> Option<(Self, usize)> {
        let mut rest = bytes;
        let b = &mut rest;
        let present = u32::try_from(get_u64(b)?).ok()?;
        if present >> 14 != 0 {
            return None;
        }
        let (&kind, after) = b.split_first()?;
        *b = after;
        let kind = EventKind::from_code(kind)?;
        let event_id = delta.event_id.wrapping_add(get_i64(b)? as u64);
        let ts = delta.ts.wrapping_add(get_i64(b)?);
        let dur = get_i64(b)?;
        let self_ns = get_i64(b)?;
        let name = u32::try_from(get_u64(b)?).ok()?.wrapping_sub(1);
        let track = u32::try_from(i64::from(delta.track) + get_i64(b)?).ok()?;
        let depth = i32::try_from(get_i64(b)?).ok()?;
        let mut optional = [NONE; 8];
        for (bit, slot) in optional.iter_mut().enumerate() {
            if present & (1 << bit) != 0 {
                *slot = get_i64(b)?;
            }
        }
        let mut parent_event_id = NO_PARENT;
        if present & PARENT_BIT != 0 {
            parent_event_id = event_id.wrapping_add(get_i64(b)? as u64);
        }
        let mut cat = NO_ID;
        if present & CAT_BIT != 0 {
            cat = u32::try_from(get_u64(b)?).ok()?;
        }
        let (mut args_start, mut args_len) = (0, NO_ID);
        if present & ARGS_BIT != 0 {
            args_start = delta.args_start.wrapping_add(get_i64(b)? as u64);
            args_len = u32::try_from(get_u64(b)?).ok()?;
        }
        let mut thread = None;
        if present & THREAD_BIT != 0 {
            thread = Some((get_i64(b)?, get_i64(b)?));
        }
        let record = EventRecord {
            event_id,
            ts,
            dur,
            name,
            cat,
            kind,
            instant: present & INSTANT_BIT != 0,
            device_activity: present & DEVICE_ACTIVITY_BIT != 0,
            track,
            fields: DeviceFields::from_array(optional),
            args_start,
            args_len,
            thread,
            parent_event_id,
            depth,
            self_ns,
        };
        delta.follow(&record);
        Some((record, bytes.len() - rest.len()))
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

    /// Encodes `records` as one run and decodes them back one by one.
    fn round_trip(records: &[EventRecord]) -> Vec<u8> {
        let mut bytes = Vec::new();
        let mut delta = RunDelta::default();
        let mut ends = Vec::new();
        for r in records {
            r.encode(&mut delta, &mut bytes);
            ends.push(bytes.len());
        }
        let mut delta = RunDelta::default();
        let mut at = 0;
        for (r, end) in records.iter().zip(ends) {
            let (decoded, len) = EventRecord::decode(&bytes[at..], &mut delta).unwrap();
            assert_eq!(decoded, *r);
            assert!(len <= MAX_RECORD_BYTES);
            at += len;
            assert_eq!(at, end);
        }
        bytes
    }

    #[test]
    fn records_survive_their_byte_form_with_any_field_absent() {
        let mut all = Vec::new();
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
            r.instant = absent & 1 == 0;
            r.device_activity = absent & 2 == 0;
            // Every record alone, then all of them as one run (deltas).
            let bytes = round_trip(&[r]);
            let mut delta = RunDelta::default();
            assert_eq!(
                EventRecord::decode(&bytes, &mut delta),
                Some((r, bytes.len()))
            );
            for cut in 0..bytes.len() {
                let mut delta = RunDelta::default();
                assert_eq!(
                    EventRecord::decode(&bytes[..cut], &mut delta),
                    None,
                    "{absent} {cut}"
                );
            }
            all.push(r);
        }
        round_trip(&all);
    }

    #[test]
    fn extreme_values_fit_the_longest_record() {
        let mut far = full();
        far.event_id = u64::MAX;
        far.ts = i64::MAX;
        far.dur = i64::MIN;
        far.self_ns = i64::MIN;
        far.name = u32::MAX - 1;
        far.cat = u32::MAX - 1;
        far.track = u32::MAX;
        far.depth = i32::MIN;
        far.fields = DeviceFields::from_array([i64::MIN; 8]);
        far.parent_event_id = u64::MAX / 2;
        far.args_start = u64::MAX / 2 + 3;
        far.args_len = u32::MAX - 1;
        far.thread = Some((i64::MIN, i64::MIN));
        let mut near = far;
        near.event_id = 0;
        near.ts = i64::MIN;
        near.track = 0;
        near.args_start = 0;
        let bytes = round_trip(&[far, near, far]);
        let mut single = Vec::new();
        far.encode(&mut RunDelta::default(), &mut single);
        assert!(single.len() <= MAX_RECORD_BYTES, "{}", single.len());
        assert!(bytes.len() <= 3 * MAX_RECORD_BYTES);
    }

    #[test]
    fn neighbouring_records_of_a_run_take_few_bytes() {
        let mut r = full();
        r.fields = DeviceFields::ABSENT;
        (r.parent_event_id, r.thread, r.dur) = (NO_PARENT, None, 1_500);
        let run: Vec<EventRecord> = (0..100u64)
            .map(|k| EventRecord {
                event_id: 1_000_000 + 3 * k,
                ts: 5_000_000_000 + 2_000 * k as i64,
                args_start: (1 << 30) + 40 * k,
                ..r
            })
            .collect();
        let bytes = round_trip(&run);
        // The first record carries the absolute values, the rest small
        // differences: under a third of the 64 bytes a fixed-width form
        // (a 48-byte head, category, `args_json` offset and length) took.
        assert!(bytes.len() * 3 < 100 * 64, "{} bytes", bytes.len());
    }

    #[test]
    fn an_unknown_kind_is_refused() {
        let mut bytes = Vec::new();
        full().encode(&mut RunDelta::default(), &mut bytes);
        // The presence word of `full()` takes two bytes; the kind follows.
        let at = 2;
        for kind in 0..=u8::MAX {
            bytes[at] = kind;
            let decoded = EventRecord::decode(&bytes, &mut RunDelta::default());
            assert_eq!(decoded.is_some(), EventKind::from_code(kind).is_some());
            if let Some((d, _)) = decoded {
                assert_eq!(d.kind as u8, kind);
            }
        }
    }
}
