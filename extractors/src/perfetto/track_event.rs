//! `TrackEvent` packets: slices (begin/end), instants, counters, flows and
//! debug annotations, with names and categories inline or interned.
//!
//! A slice end closes the most recent open slice on the same track, as in
//! Perfetto. Debug annotations become one JSON object in `args_json`
//! (bounded like every other extractor's args); flow ids are kept there too
//! (`flow_ids`, `terminating_flow_ids`) because the evidence has no flow
//! table.

use serde_json::{Map, Value, json};

use super::decoder::{Decoder, EventRow, SlotKey};
use super::proto::{
    DebugAnnotation, NestedValue, TYPE_COUNTER, TYPE_INSTANT, TYPE_SLICE_BEGIN, TYPE_SLICE_END,
    TrackEvent,
};
use super::sequence::{Sequence, lossy};
use crate::chrome::kinds::classify;
use crate::chrome::store::{NO_ID, NONE};

/// Nesting depth beyond which annotation values are cut (hostile inputs).
const MAX_ANNOTATION_DEPTH: usize = 32;

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
        let (args, missing_ids) = event_args(seq, e);
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
        let args = args.map(|a| a.to_string());
        let row = self.push_event(EventRow {
            slot,
            ts,
            dur: if instant { 0 } else { -1 },
            name: &name,
            category: categories.as_deref(),
            kind: class.kind,
            instant,
            correlation: e
                .correlation_id
                .and_then(|c| i64::try_from(c).ok())
                .unwrap_or(NONE),
            args: args.as_deref(),
        });
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
fn event_name(seq: &Sequence, e: &TrackEvent) -> (String, bool) {
    if let Some(name) = &e.name {
        return (lossy(name), false);
    }
    match e.name_iid {
        Some(iid) => match seq.event_names.get(&iid) {
            Some(n) => (n.clone(), false),
            None => ("[unknown]".to_string(), true),
        },
        None => (String::new(), false),
    }
}

/// Categories joined by `,` (inline first, then interned).
fn categories(seq: &Sequence, e: &TrackEvent) -> Option<String> {
    let mut all: Vec<String> = e.categories.iter().map(|c| lossy(c)).collect();
    for iid in &e.category_iids {
        all.push(
            seq.categories
                .get(iid)
                .cloned()
                .unwrap_or_else(|| "[unknown]".into()),
        );
    }
    (!all.is_empty()).then(|| all.join(","))
}

/// Debug annotations, source location and flow ids as one JSON object;
/// also how many interned ids were missing.
fn event_args(seq: &Sequence, e: &TrackEvent) -> (Option<Value>, u64) {
    let mut missing = 0;
    let mut map = Map::new();
    for a in &e.debug_annotations {
        let name = annotation_name(seq, a, &mut missing);
        map.insert(name, annotation_value(seq, a, 0, &mut missing));
    }
    let location = e.source_location.as_ref().or_else(|| {
        e.source_location_iid
            .and_then(|iid| seq.source_locations.get(&iid))
    });
    if let Some(loc) = location {
        map.insert(
            "source".into(),
            json!({
                "file": loc.file_name.as_deref().map(lossy),
                "function": loc.function_name.as_deref().map(lossy),
                "line": loc.line_number,
            }),
        );
    }
    let flows: Vec<u64> = e.flow_ids.iter().chain(&e.flow_ids_old).copied().collect();
    if !flows.is_empty() {
        map.insert("flow_ids".into(), json!(flows));
    }
    let terminating: Vec<u64> = e
        .terminating_flow_ids
        .iter()
        .chain(&e.terminating_flow_ids_old)
        .copied()
        .collect();
    if !terminating.is_empty() {
        map.insert("terminating_flow_ids".into(), json!(terminating));
    }
    ((!map.is_empty()).then_some(Value::Object(map)), missing)
}

fn annotation_name(seq: &Sequence, a: &DebugAnnotation, missing: &mut u64) -> String {
    if let Some(n) = &a.name {
        return lossy(n);
    }
    match a.name_iid.map(|iid| seq.annotation_names.get(&iid)) {
        Some(Some(n)) => n.clone(),
        Some(None) => {
            *missing += 1;
            "[unknown]".into()
        }
        None => String::new(),
    }
}

fn annotation_value(seq: &Sequence, a: &DebugAnnotation, depth: usize, missing: &mut u64) -> Value {
    if depth > MAX_ANNOTATION_DEPTH {
        return Value::String("[too deep]".into());
    }
    if let Some(v) = a.bool_value {
        return json!(v);
    }
    if let Some(v) = a.uint_value {
        return json!(v);
    }
    if let Some(v) = a.int_value {
        return json!(v);
    }
    if let Some(v) = a.double_value {
        return json!(v);
    }
    if let Some(v) = a.pointer_value {
        return json!(format!("0x{v:x}"));
    }
    if let Some(v) = &a.string_value {
        return json!(lossy(v));
    }
    if let Some(iid) = a.string_value_iid {
        return match seq.annotation_strings.get(&iid) {
            Some(s) => json!(s),
            None => {
                *missing += 1;
                json!("[unknown]")
            }
        };
    }
    if let Some(v) = &a.legacy_json_value {
        return serde_json::from_slice(v).unwrap_or_else(|_| json!(lossy(v)));
    }
    if let Some(v) = &a.nested_value {
        return nested(v, depth + 1);
    }
    if !a.dict_entries.is_empty() {
        let mut map = Map::new();
        for entry in &a.dict_entries {
            let name = annotation_name(seq, entry, missing);
            map.insert(name, annotation_value(seq, entry, depth + 1, missing));
        }
        return Value::Object(map);
    }
    if !a.array_values.is_empty() {
        return Value::Array(
            a.array_values
                .iter()
                .map(|v| annotation_value(seq, v, depth + 1, missing))
                .collect(),
        );
    }
    Value::Null
}

fn nested(v: &NestedValue, depth: usize) -> Value {
    if depth > MAX_ANNOTATION_DEPTH {
        return Value::String("[too deep]".into());
    }
    match v.nested_type {
        Some(1) => Value::Object(
            v.dict_keys
                .iter()
                .zip(&v.dict_values)
                .map(|(k, v)| (lossy(k), nested(v, depth + 1)))
                .collect(),
        ),
        Some(2) => Value::Array(
            v.array_values
                .iter()
                .map(|v| nested(v, depth + 1))
                .collect(),
        ),
        _ => {
            if let Some(i) = v.int_value {
                json!(i)
            } else if let Some(d) = v.double_value {
                json!(d)
            } else if let Some(b) = v.bool_value {
                json!(b)
            } else if let Some(s) = &v.string_value {
                json!(lossy(s))
            } else {
                Value::Null
            }
        }
    }
}
