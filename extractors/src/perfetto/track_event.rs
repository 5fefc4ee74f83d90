//! `TrackEvent` packets: slices (begin/end), instants, counters, flows and
//! debug annotations, with names and categories inline or interned.
//!
//! A slice end closes the most recent open slice on the same track, as in
//! Perfetto. Debug annotations become one JSON object in `args_json`
//! (bounded like every other extractor's args); flow ids are kept there too
//! (`flow_ids`, `terminating_flow_ids`) because the evidence has no flow
//! table.

use std::borrow::Cow;

use super::annotations::{UNKNOWN, event_args};
use super::decoder::{Decoder, EventRow, SlotKey};
use super::proto::{TYPE_COUNTER, TYPE_INSTANT, TYPE_SLICE_BEGIN, TYPE_SLICE_END, TrackEvent};
use super::sequence::Sequence;
use crate::chrome::kinds::classify;
use crate::chrome::store::{NO_ID, NONE};

impl Decoder {
    pub fn track_event(&mut self, sequence_id: u32, ts: Option<i64>, e: &TrackEvent) {
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
        if !(e.extra_counter_values.is_empty() && e.extra_double_counter_values.is_empty()) {
            let defaults = defaults.cloned();
            self.extra_counters(e, defaults.as_ref(), ts);
        }
        let slot = match (uuid, legacy_thread) {
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
            TYPE_SLICE_BEGIN | TYPE_INSTANT => self.slice_or_instant(sequence_id, slot, ts, e),
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
            _ => self.p.log.note("legacy_event_skipped", || {
                "a track event without a type (legacy JSON-style event) was skipped".to_string()
            }),
        }
    }

    /// Packet time, else the legacy per-sequence microsecond clock.
    fn event_time(&mut self, sequence_id: u32, ts: Option<i64>, e: &TrackEvent) -> Option<i64> {
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

    fn slice_or_instant(&mut self, sequence_id: u32, slot: u32, ts: i64, e: &TrackEvent) {
        let Some(seq) = self.sequences.get(&sequence_id) else {
            return;
        };
        let (name, missing_name) = event_name(seq, e);
        let categories = categories(seq, e);
        let mut missing_ids = 0;
        // The scratch leaves `self` while `seq` is borrowed from it.
        let mut scratch = std::mem::take(&mut self.args_scratch);
        let has_args = event_args(seq, e, &mut scratch, &mut missing_ids);
        let instant = e.r#type == Some(TYPE_INSTANT);
        if missing_name || missing_ids > 0 {
            self.p.log.note_n(
                "interned_id_missing",
                u64::from(missing_name) + missing_ids,
                || {
                    "an interned id was used before its sequence defined it; shown as \
                     `[unknown]`"
                        .to_string()
                },
            );
        }
        let class = classify(categories.as_deref(), &name, instant);
        // Interned while `seq` lends the names: no copy of either.
        let name = self.p.strings.intern(&name);
        let category = categories.map_or(NO_ID, |c| self.p.strings.intern(&c));
        let row = self.push_event(EventRow {
            slot,
            ts,
            dur: if instant { 0 } else { -1 },
            name,
            category,
            kind: class.kind,
            instant,
            correlation: e
                .correlation_id
                .and_then(|c| i64::try_from(c).ok())
                .unwrap_or(NONE),
            args: has_args.then(|| scratch.text()),
        });
        self.args_scratch = scratch;
        if !instant {
            self.open.entry(slot).or_default().push(row);
        }
    }

    fn slice_end(&mut self, slot: u32, ts: i64) {
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
        let descriptor = self.descriptors.get(&uuid).and_then(|d| d.counter.clone());
        let multiplier = descriptor
            .as_ref()
            .and_then(|c| c.unit_multiplier)
            .filter(|&m| m != 0)
            .unwrap_or(1) as f64;
        let mut value = value * multiplier;
        if descriptor.as_ref().and_then(|c| c.is_incremental) == Some(true) {
            let total = self.counter_totals.entry(uuid).or_insert(0.0);
            *total += value;
            value = *total;
        }
        let slot = self.slot(SlotKey::Uuid(uuid));
        self.counter_uuids.insert(uuid, slot);
        self.counter_row(slot, NO_ID, ts, value, None);
    }

    fn extra_counters(
        &mut self,
        e: &TrackEvent,
        defaults: Option<&super::proto::TrackEventDefaults>,
        ts: i64,
    ) {
        let ints = if e.extra_counter_track_uuids.is_empty() {
            defaults.map_or(&[][..], |d| &d.extra_counter_track_uuids[..])
        } else {
            &e.extra_counter_track_uuids[..]
        };
        let ints: Vec<(u64, f64)> = ints
            .iter()
            .zip(&e.extra_counter_values)
            .map(|(&u, &v)| (u, v as f64))
            .collect();
        let doubles = if e.extra_double_counter_track_uuids.is_empty() {
            defaults.map_or(&[][..], |d| &d.extra_double_counter_track_uuids[..])
        } else {
            &e.extra_double_counter_track_uuids[..]
        };
        let doubles: Vec<(u64, f64)> = doubles
            .iter()
            .zip(&e.extra_double_counter_values)
            .map(|(&u, &v)| (u, v))
            .collect();
        for (uuid, value) in ints.into_iter().chain(doubles) {
            self.uuid_counter(uuid, ts, value);
        }
    }
}

/// The event's name and whether an interned name was missing.
fn event_name<'a>(seq: &'a Sequence, e: &'a TrackEvent) -> (Cow<'a, str>, bool) {
    if let Some(name) = &e.name {
        return (String::from_utf8_lossy(name), false);
    }
    match e.name_iid {
        Some(iid) => match seq.event_names.get(&iid) {
            Some(n) => (Cow::Borrowed(n.as_str()), false),
            None => (Cow::Borrowed(UNKNOWN), true),
        },
        None => (Cow::Borrowed(""), false),
    }
}

/// Categories joined by `,` (inline first, then interned); one category
/// is lent, not copied.
fn categories<'a>(seq: &'a Sequence, e: &'a TrackEvent) -> Option<Cow<'a, str>> {
    let mut all = e
        .categories
        .iter()
        .map(|c| String::from_utf8_lossy(c))
        .chain(e.category_iids.iter().map(|iid| {
            seq.categories
                .get(iid)
                .map_or(Cow::Borrowed(UNKNOWN), |c| Cow::Borrowed(c.as_str()))
        }));
    let first = all.next()?;
    match all.next() {
        None => Some(first),
        Some(second) => {
            let mut joined = first.into_owned();
            for c in std::iter::once(second).chain(all) {
                joined.push(',');
                joined.push_str(&c);
            }
            Some(Cow::Owned(joined))
        }
    }
}
