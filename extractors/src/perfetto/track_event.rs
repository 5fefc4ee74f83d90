//! `TrackEvent` packets: slices (begin/end), instants, counters, flows and
//! debug annotations, with names and categories inline or interned.
//!
//! A slice end closes the most recent open slice on the same track, as in
//! Perfetto. Debug annotations become one JSON object in `args_json`
//! (bounded like every other extractor's args); flow ids are kept there too
//! (`flow_ids`, `terminating_flow_ids`) because the evidence has no flow
//! table.

use std::borrow::Cow;

use super::annotations::{UNKNOWN, event_args_bounded};
use super::decoder::{Decoder, EventRow, SlotKey};
use super::proto::{TYPE_COUNTER, TYPE_INSTANT, TYPE_SLICE_BEGIN, TYPE_SLICE_END};
use super::sequence::Sequence;
use super::track_event_view::TrackEventView as TrackEvent;
use crate::FastHashMap;
use crate::trace_events::ids::{NO_ID, NONE};
use crate::trace_events::interner::Interner;
use crate::trace_events::kinds::{Classified, classify};

impl Decoder {
    pub fn track_event(&mut self, sequence_id: u32, ts: Option<i64>, e: &TrackEvent<'_>) {
        let Some(ts) = self.event_time(sequence_id, ts, e) else {
            self.p.log.note("event_without_timestamp", || {
                "a track event has no timestamp; skipped".to_string()
            });
            return;
        };
        let seq = self.sequences.entry(sequence_id).or_default();
        let defaults = seq
            .defaults
            .as_ref()
            .and_then(|d| d.track_event_defaults.as_ref());
        let uuid = e.track_uuid.or_else(|| defaults.and_then(|d| d.track_uuid));
        let legacy_thread = seq.thread;
        let kind = e.r#type.unwrap_or(0);
        if e.has_extra_counters() {
            self.extra_counters(sequence_id, e, ts);
        }
        let slot = match (uuid, legacy_thread) {
            _ if kind == 0 && e.legacy_event.is_some() => {
                return self.legacy_event(sequence_id, uuid, legacy_thread, ts, e);
            }
            (Some(u), _) if u != 0 || legacy_thread.is_none() => self.slot(SlotKey::Uuid(u)),
            (_, Some((pid, tid))) => self.slot(SlotKey::Thread(pid, tid)),
            _ => {
                self.p.log.note("event_without_track", || {
                    "a track event names no track and its sequence no thread; skipped".to_string()
                });
                return;
            }
        };
        match kind {
            TYPE_SLICE_BEGIN => self.slice_or_instant(sequence_id, slot, ts, e, Shape::Begin),
            TYPE_INSTANT => self.slice_or_instant(sequence_id, slot, ts, e, Shape::Instant),
            TYPE_SLICE_END => self.slice_end(slot, ts),
            TYPE_COUNTER => {
                if let Some(u) = uuid {
                    let value = e.counter_value.map(|v| v as f64).or(e.double_counter_value);
                    match value {
                        Some(v) => self.uuid_counter(u, ts, v),
                        None => self.p.log.note("counter_without_value", || {
                            "a counter event has no value; skipped".to_string()
                        }),
                    }
                }
            }
            _ => self.p.log.note("untyped_event_skipped", || {
                "a track event without a type or a legacy phase was skipped".to_string()
            }),
        }
    }

    /// Packet time, else the legacy per-sequence microsecond clock.
    fn event_time(&mut self, sequence_id: u32, ts: Option<i64>, e: &TrackEvent<'_>) -> Option<i64> {
        if ts.is_some() {
            return ts;
        }
        let seq = self.sequences.entry(sequence_id).or_default();
        let us = match (e.timestamp_absolute_us, e.timestamp_delta_us) {
            (Some(abs), _) => abs,
            (None, Some(delta)) => seq.legacy_time_us?.checked_add(delta)?,
            (None, None) => return None,
        };
        seq.legacy_time_us = Some(us);
        us.checked_mul(1000)
    }

    pub(super) fn slice_or_instant(
        &mut self,
        sequence_id: u32,
        slot: u32,
        ts: i64,
        e: &TrackEvent<'_>,
        shape: Shape,
    ) {
        // The scratch leaves `self` while the sequence is borrowed from it.
        let mut scratch = std::mem::take(&mut self.args_scratch);
        let max_args_bytes = self.max_args_bytes;
        let Decoder {
            sequences,
            p,
            class_cache,
            ..
        } = self;
        let Some(seq) = sequences.get_mut(&sequence_id) else {
            self.args_scratch = scratch;
            return;
        };
        let mut missing_ids = 0;
        let has_args = event_args_bounded(seq, e, &mut scratch, &mut missing_ids, max_args_bytes);
        let instant = shape == Shape::Instant;
        // The name first, then the category: the processor numbers its
        // strings in the order they are first seen.
        let (name, missing_name) = event_name(seq, &mut p.strings, e);
        let (category, truncated) = categories(seq, &mut p.strings, e);
        if missing_name || missing_ids > 0 {
            p.log.note_n(
                "interned_id_missing",
                u64::from(missing_name) + missing_ids,
                || {
                    "an interned id was used before its sequence defined it; shown as \
                     `[unknown]`"
                        .to_string()
                },
            );
        }
        if truncated {
            p.log.note("category_truncated", || {
                format!(
                    "a track event's categories joined by `,` pass {MAX_JOINED_CATEGORY_BYTES} \
                     bytes; cut there"
                )
            });
        }
        let class = classified(class_cache, &p.strings, category, name, instant);
        let row = self.push_event(EventRow {
            slot,
            ts,
            dur: match shape {
                Shape::Instant => 0,
                Shape::Begin => -1,
                Shape::Complete(dur) => dur,
            },
            name,
            category: category.unwrap_or(NO_ID),
            kind: class.kind,
            instant,
            correlation: e
                .correlation_id
                .and_then(|c| i64::try_from(c).ok())
                .unwrap_or(NONE),
            args: has_args.then(|| scratch.text()),
        });
        self.args_scratch = scratch;
        if shape == Shape::Begin {
            self.open.entry(slot).or_default().push(row);
        }
    }

    pub(super) fn slice_end(&mut self, slot: u32, ts: i64) {
        let Some(row) = self.open.get_mut(&slot).and_then(Vec::pop) else {
            self.p.log.note("unmatched_slice_end", || {
                "a slice end has no open slice on its track; ignored".to_string()
            });
            return;
        };
        let start = self.p.store.ts[row];
        if ts < start {
            self.p.log.note("negative_duration", || {
                "a slice ends before it begins; its duration was set to 0".to_string()
            });
        }
        self.p.store.dur[row] = ts.saturating_sub(start).max(0);
    }

    /// A value on a counter track (absolute or incremental per descriptor).
    fn uuid_counter(&mut self, uuid: u64, ts: i64, value: f64) {
        // Only the two numbers: the descriptor (its unit name may be long)
        // is not copied per value.
        let (multiplier, incremental) = self
            .descriptors
            .get(&uuid)
            .and_then(|d| d.counter.as_ref())
            .map_or((None, None), |c| (c.unit_multiplier, c.is_incremental));
        let multiplier = multiplier.filter(|&m| m != 0).unwrap_or(1) as f64;
        let mut value = value * multiplier;
        if incremental == Some(true) {
            let total = self.counter_totals.entry(uuid).or_insert(0.0);
            *total += value;
            value = *total;
        }
        let slot = self.slot(SlotKey::Uuid(uuid));
        self.counter_uuids.insert(uuid, slot);
        self.counter_row(slot, NO_ID, ts, value, None);
    }

    /// The event's extra counter values on the tracks it (or its
    /// sequence's defaults) lists. The defaults are read in place: a long
    /// default list is not copied per event.
    fn extra_counters(&mut self, sequence_id: u32, e: &TrackEvent<'_>, ts: i64) {
        let defaults = self
            .sequences
            .get(&sequence_id)
            .and_then(|s| s.defaults.as_ref())
            .and_then(|d| d.track_event_defaults.as_ref());
        let ints = if e.extra_counter_track_uuids.is_empty() {
            defaults.map_or(&[][..], |d| &d.extra_counter_track_uuids[..])
        } else {
            &e.extra_counter_track_uuids[..]
        };
        let ints: Vec<(u64, f64)> = ints
            .iter()
            .zip(e.extra_counter_values())
            .map(|(&u, v)| (u, v as f64))
            .collect();
        let doubles = if e.extra_double_counter_track_uuids.is_empty() {
            defaults.map_or(&[][..], |d| &d.extra_double_counter_track_uuids[..])
        } else {
            &e.extra_double_counter_track_uuids[..]
        };
        let doubles: Vec<(u64, f64)> = doubles
            .iter()
            .copied()
            .zip(e.extra_double_counter_values())
            .collect();
        for (uuid, value) in ints.into_iter().chain(doubles) {
            self.uuid_counter(uuid, ts, value);
        }
    }
}

/// What one track event adds to its track.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// A slice that a later end closes.
    Begin,
    /// A slice whose duration (ns) is known.
    Complete(i64),
    Instant,
}

/// Longest category string built by joining an event's categories: past
/// it the string is cut (`category_truncated`), so an event naming one
/// long interned category many times costs at most this much.
pub const MAX_JOINED_CATEGORY_BYTES: usize = 4096;

/// Names at least this long have their classification cached: classifying
/// may search the whole name, once per distinct name then.
const CLASSIFY_CACHE_MIN_BYTES: usize = 256;

/// The event's name (interned in `strings`) and whether an interned name
/// was missing. An interned name is hashed once per definition, not once
/// per event.
pub(super) fn event_name(
    seq: &mut Sequence,
    strings: &mut Interner,
    e: &TrackEvent<'_>,
) -> (u32, bool) {
    if let Some(name) = e.name() {
        return (strings.intern(&String::from_utf8_lossy(name)), false);
    }
    // Old Chromium wrote the interned name inside the legacy event.
    match e
        .name_iid
        .or_else(|| e.legacy_event.as_ref().and_then(|l| l.name_iid))
    {
        Some(iid) => {
            if let Some(&id) = seq.event_name_ids.get(&iid) {
                return (id, false);
            }
            match seq.event_names.get(&iid) {
                Some(n) => {
                    let id = strings.intern(n);
                    seq.event_name_ids.insert(iid, id);
                    (id, false)
                }
                None => (strings.intern(UNKNOWN), true),
            }
        }
        None => (strings.intern(""), false),
    }
}

/// Categories joined by `,` (inline first, then interned), interned in
/// `strings`; `true` when the joined string was cut at
/// [`MAX_JOINED_CATEGORY_BYTES`].
fn categories(
    seq: &mut Sequence,
    strings: &mut Interner,
    e: &TrackEvent<'_>,
) -> (Option<u32>, bool) {
    let mut inline = e.categories();
    match (inline.len(), &e.category_iids[..]) {
        (0, []) => (None, false),
        (1, []) => {
            let only = inline.next().unwrap_or_default();
            (Some(strings.intern(&String::from_utf8_lossy(only))), false)
        }
        (0, &[iid]) => {
            if let Some(&id) = seq.category_ids.get(&iid) {
                return (Some(id), false);
            }
            match seq.categories.get(&iid) {
                Some(c) => {
                    let id = strings.intern(c);
                    seq.category_ids.insert(iid, id);
                    (Some(id), false)
                }
                None => (Some(strings.intern(UNKNOWN)), false),
            }
        }
        (_, iids) => {
            let all = inline
                .map(String::from_utf8_lossy)
                .chain(iids.iter().map(|iid| {
                    seq.categories
                        .get(iid)
                        .map_or(Cow::Borrowed(UNKNOWN), |c| Cow::Borrowed(c.as_str()))
                }));
            let mut joined = String::new();
            let mut truncated = false;
            for (i, c) in all.enumerate() {
                let separator = if i == 0 { "" } else { "," };
                for piece in [separator, &c] {
                    let room = MAX_JOINED_CATEGORY_BYTES - joined.len();
                    if piece.len() <= room {
                        joined.push_str(piece);
                    } else {
                        let mut cut = room;
                        while !piece.is_char_boundary(cut) {
                            cut -= 1;
                        }
                        joined.push_str(&piece[..cut]);
                        truncated = true;
                        break;
                    }
                }
                if truncated {
                    break;
                }
            }
            (Some(strings.intern(&joined)), truncated)
        }
    }
}

/// The event's classification; cached by string ids for long names, whose
/// classifying may read the whole name.
fn classified(
    cache: &mut FastHashMap<(u32, u32, bool), Classified>,
    strings: &Interner,
    category: Option<u32>,
    name: u32,
    instant: bool,
) -> Classified {
    let name_text = strings.get(name);
    let category_text = category.map(|c| strings.get(c));
    if name_text.len() < CLASSIFY_CACHE_MIN_BYTES {
        return classify(category_text, name_text, instant);
    }
    let key = (name, category.unwrap_or(NO_ID), instant);
    *cache
        .entry(key)
        .or_insert_with(|| classify(category_text, name_text, instant))
}
