//! A track event's debug annotations, source location and flow ids as the
//! one JSON object of `args_json`, written straight into bytes.
//!
//! The bytes are the ones a `serde_json::Value` printed (serde_json's own
//! escaping and number formatting, non-finite floats as `null`, object keys
//! sorted with the last duplicate winning, as its `BTreeMap`-backed `Map`
//! does), without building the tree: building, printing and dropping those
//! values was 17 % of a track-event import's CPU. `tests` keeps the tree
//! version as the reference.

use std::borrow::Cow;
use std::ops::Range;

use serde::Serialize;

use super::proto::{DebugAnnotation, NestedValue, TrackEvent};
use super::sequence::Sequence;

/// Nesting depth beyond which annotation values are cut (hostile inputs).
const MAX_ANNOTATION_DEPTH: usize = 32;

/// What a nested value is cut to beyond [`MAX_ANNOTATION_DEPTH`].
const TOO_DEEP: &str = "[too deep]";

/// Shown for an interned id its sequence never defined.
pub(super) const UNKNOWN: &str = "[unknown]";

/// Buffers kept from one event to the next: the top-level object's
/// members and the finished text (a few allocations per event showed in
/// profiles).
#[derive(Default)]
pub struct ArgsScratch {
    object: Object,
    out: Vec<u8>,
}

impl ArgsScratch {
    /// The text of the last [`event_args`] that returned `true`.
    pub fn text(&self) -> &str {
        // Only serde_json output and UTF-8 keys went in.
        std::str::from_utf8(&self.out).unwrap_or("{}")
    }
}

/// Writes the event's `args_json` into `scratch` (read it with
/// [`ArgsScratch::text`]); `false` when the event has nothing to say.
/// Also counts the interned ids that were missing into `missing`.
pub fn event_args(
    seq: &Sequence,
    e: &TrackEvent,
    scratch: &mut ArgsScratch,
    missing: &mut u64,
) -> bool {
    let object = &mut scratch.object;
    object.clear();
    for a in &e.debug_annotations {
        let key = annotation_name(seq, a, missing);
        object.member(&key, |out| annotation_value(out, seq, a, 0, missing));
    }
    let location = e.source_location.as_ref().or_else(|| {
        e.source_location_iid
            .and_then(|iid| seq.source_locations.get(&iid))
    });
    if let Some(loc) = location {
        object.member("source", |out| {
            // Keys already in sorted order.
            out.extend_from_slice(b"{\"file\":");
            optional_text(out, loc.file_name.as_deref());
            out.extend_from_slice(b",\"function\":");
            optional_text(out, loc.function_name.as_deref());
            out.extend_from_slice(b",\"line\":");
            match loc.line_number {
                Some(line) => scalar(out, &line),
                None => out.extend_from_slice(b"null"),
            }
            out.push(b'}');
        });
    }
    for (key, first, second) in [
        ("flow_ids", &e.flow_ids, &e.flow_ids_old),
        (
            "terminating_flow_ids",
            &e.terminating_flow_ids,
            &e.terminating_flow_ids_old,
        ),
    ] {
        if !(first.is_empty() && second.is_empty()) {
            object.member(key, |out| {
                array(out, first.iter().chain(second), scalar);
            });
        }
    }
    if object.members.is_empty() {
        return false;
    }
    scratch.out.clear();
    object.write(&mut scratch.out);
    true
}

/// An object's members: key bytes and rendered values, each in one buffer,
/// written out sorted by key.
#[derive(Default)]
struct Object {
    keys: Vec<u8>,
    values: Vec<u8>,
    /// `(key, value)` ranges into the two buffers.
    members: Vec<(Range<usize>, Range<usize>)>,
}

impl Object {
    fn clear(&mut self) {
        self.keys.clear();
        self.values.clear();
        self.members.clear();
    }

    fn member(&mut self, key: &str, render: impl FnOnce(&mut Vec<u8>)) {
        let key_start = self.keys.len();
        self.keys.extend_from_slice(key.as_bytes());
        let start = self.values.len();
        render(&mut self.values);
        self.members
            .push((key_start..self.keys.len(), start..self.values.len()));
    }

    fn write(&mut self, out: &mut Vec<u8>) {
        let keys = &self.keys;
        // Byte order of UTF-8 is `str` order; stable, so of equal keys the
        // last one added is last: it wins.
        if self.members.len() > 1 {
            self.members
                .sort_by(|a, b| keys[a.0.clone()].cmp(&keys[b.0.clone()]));
        }
        out.push(b'{');
        let mut first = true;
        for (i, (key, value)) in self.members.iter().enumerate() {
            let key = &keys[key.clone()];
            if self
                .members
                .get(i + 1)
                .is_some_and(|next| &keys[next.0.clone()] == key)
            {
                continue;
            }
            if !first {
                out.push(b',');
            }
            first = false;
            text(out, key);
            out.push(b':');
            out.extend_from_slice(&self.values[value.clone()]);
        }
        out.push(b'}');
    }
}

/// Writes one value with serde_json's formatting. Writing into a `Vec`
/// cannot fail; `null` stands in if it ever did.
fn scalar<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    let start = out.len();
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.truncate(start);
        out.extend_from_slice(b"null");
    }
}

fn text(out: &mut Vec<u8>, bytes: &[u8]) {
    scalar(out, String::from_utf8_lossy(bytes).as_ref());
}

fn optional_text(out: &mut Vec<u8>, bytes: Option<&[u8]>) {
    match bytes {
        Some(b) => text(out, b),
        None => out.extend_from_slice(b"null"),
    }
}

fn array<T>(
    out: &mut Vec<u8>,
    items: impl IntoIterator<Item = T>,
    mut each: impl FnMut(&mut Vec<u8>, T),
) {
    out.push(b'[');
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        each(out, item);
    }
    out.push(b']');
}

fn annotation_name<'a>(
    seq: &'a Sequence,
    a: &'a DebugAnnotation,
    missing: &mut u64,
) -> Cow<'a, str> {
    if let Some(n) = &a.name {
        return String::from_utf8_lossy(n);
    }
    match a.name_iid.map(|iid| seq.annotation_names.get(&iid)) {
        Some(Some(n)) => Cow::Borrowed(n.as_str()),
        Some(None) => {
            *missing += 1;
            Cow::Borrowed(UNKNOWN)
        }
        None => Cow::Borrowed(""),
    }
}

fn annotation_value(
    out: &mut Vec<u8>,
    seq: &Sequence,
    a: &DebugAnnotation,
    depth: usize,
    missing: &mut u64,
) {
    if depth > MAX_ANNOTATION_DEPTH {
        return scalar(out, TOO_DEEP);
    }
    if let Some(v) = a.bool_value {
        return scalar(out, &v);
    }
    if let Some(v) = a.uint_value {
        return scalar(out, &v);
    }
    if let Some(v) = a.int_value {
        return scalar(out, &v);
    }
    if let Some(v) = a.double_value {
        return scalar(out, &v);
    }
    if let Some(v) = a.pointer_value {
        return scalar(out, &format!("0x{v:x}"));
    }
    if let Some(v) = &a.string_value {
        return text(out, v);
    }
    if let Some(iid) = a.string_value_iid {
        return match seq.annotation_strings.get(&iid) {
            Some(s) => scalar(out, s.as_str()),
            None => {
                *missing += 1;
                scalar(out, UNKNOWN)
            }
        };
    }
    if let Some(v) = &a.legacy_json_value {
        // Parsed and printed again, as it always was (keys sorted).
        return match serde_json::from_slice::<serde_json::Value>(v) {
            Ok(value) => scalar(out, &value),
            Err(_) => text(out, v),
        };
    }
    if let Some(v) = &a.nested_value {
        return nested(out, v, depth + 1);
    }
    if !a.dict_entries.is_empty() {
        let mut object = Object::default();
        for entry in &a.dict_entries {
            let key = annotation_name(seq, entry, missing);
            object.member(&key, |o| {
                annotation_value(o, seq, entry, depth + 1, missing)
            });
        }
        return object.write(out);
    }
    if !a.array_values.is_empty() {
        return array(out, &a.array_values, |o, v| {
            annotation_value(o, seq, v, depth + 1, missing)
        });
    }
    out.extend_from_slice(b"null");
}

fn nested(out: &mut Vec<u8>, v: &NestedValue, depth: usize) {
    if depth > MAX_ANNOTATION_DEPTH {
        return scalar(out, TOO_DEEP);
    }
    match v.nested_type {
        Some(1) => {
            let mut object = Object::default();
            for (key, value) in v.dict_keys.iter().zip(&v.dict_values) {
                object.member(&String::from_utf8_lossy(key), |o| {
                    nested(o, value, depth + 1)
                });
            }
            object.write(out);
        }
        Some(2) => array(out, &v.array_values, |o, item| nested(o, item, depth + 1)),
        _ => {
            if let Some(i) = v.int_value {
                scalar(out, &i)
            } else if let Some(d) = v.double_value {
                scalar(out, &d)
            } else if let Some(b) = v.bool_value {
                scalar(out, &b)
            } else if let Some(s) = &v.string_value {
                text(out, s)
            } else {
                out.extend_from_slice(b"null")
            }
        }
    }
}

#[cfg(test)]
#[path = "annotations_tests.rs"]
mod tests;
