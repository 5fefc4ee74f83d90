//! A track event's debug annotations, source location and flow ids as the
//! one JSON object of `args_json`, written straight into bytes.
//!
//! The bytes are the ones a `serde_json::Value` printed (serde_json's own
//! escaping and number formatting, non-finite floats as `null`, object keys
//! sorted with the last duplicate winning, as its `BTreeMap`-backed `Map`
//! does), without building the tree: building, printing and dropping those
//! values was 17 % of a track-event import's CPU. `tests` keeps the tree
//! version as the reference.
//!
//! Work and memory stay proportional to the event's own bytes, whatever
//! long interned strings it names: values are written only for the
//! members that end up in the text, and only as far as the args bound
//! keeps ([`event_args_bounded`]).

use std::borrow::Cow;
use std::cmp::Ordering;

use serde::Serialize;

use super::proto::{DebugAnnotation, NestedValue, SourceLocation};
use super::sequence::Sequence;
use super::track_event_view::TrackEventView;

/// Nesting depth beyond which annotation values are cut (hostile inputs).
const MAX_ANNOTATION_DEPTH: usize = 32;

/// What a nested value is cut to beyond [`MAX_ANNOTATION_DEPTH`].
const TOO_DEEP: &str = "[too deep]";

/// Shown for an interned id its sequence never defined.
pub(super) const UNKNOWN: &str = "[unknown]";

/// Members an object gathers before its first compaction (sorted, the
/// last of equal keys kept, the members whose text would begin past the
/// bound dropped).
const COMPACT_AT: usize = 64;

/// Buffers kept from one event to the next: the top-level object's
/// members and the finished text (a few allocations per event showed in
/// profiles).
#[derive(Default)]
pub struct ArgsScratch {
    members: Vec<Member<'static>>,
    out: Vec<u8>,
}

impl ArgsScratch {
    /// The text of the last [`event_args`] that returned `true`.
    pub fn text(&self) -> &str {
        // Only serde_json output and whole UTF-8 characters went in.
        std::str::from_utf8(&self.out).unwrap_or("{}")
    }
}

/// Writes the event's `args_json` into `scratch` (read it with
/// [`ArgsScratch::text`]); `false` when the event has nothing to say.
/// Also counts the interned ids that were missing into `missing`.
pub fn event_args(
    seq: &Sequence,
    e: &TrackEventView<'_>,
    scratch: &mut ArgsScratch,
    missing: &mut u64,
) -> bool {
    event_args_bounded(seq, e, scratch, missing, usize::MAX)
}

/// [`event_args`] for args that are cut to `max_bytes` afterwards
/// (`bound_args`): only what the cut keeps is worked out, so the text cuts
/// to the same bytes while an event naming a long interned string (or
/// name) many times costs about `max_bytes`, not the string's length per
/// use.
///
/// The text written is the full text up to byte `max_bytes` at least, and
/// longer than `max_bytes` whenever the full text is: values are written
/// up to that byte, members whose text would begin past it are dropped
/// (whatever their values, the members before them reach it), and values
/// are written only for the members that survive (of equal keys the last).
pub fn event_args_bounded(
    seq: &Sequence,
    e: &TrackEventView<'_>,
    scratch: &mut ArgsScratch,
    missing: &mut u64,
    max_bytes: usize,
) -> bool {
    let limit = max_bytes.saturating_add(1);
    let mut object = Object::new(recycle(std::mem::take(&mut scratch.members)), limit);
    let mut any = false;
    for a in &e.debug_annotations {
        let key = annotation_name(seq, a, missing);
        count_missing(seq, a, 0, missing);
        object.add(key, Value::Annotation(a, 0));
        any = true;
    }
    let location = e.source_location.as_ref().or_else(|| {
        e.source_location_iid
            .and_then(|iid| seq.source_locations.get(&iid))
    });
    if let Some(loc) = location {
        object.add(Cow::Borrowed("source"), Value::Location(loc));
        any = true;
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
            object.add(Cow::Borrowed(key), Value::Flows(first, second));
            any = true;
        }
    }
    if any {
        scratch.out.clear();
        object.write(&mut scratch.out, seq, limit);
    }
    scratch.members = recycle(object.members);
    any
}

/// An empty list of members of any lifetime in the allocation of `list`.
fn recycle<'b>(mut list: Vec<Member<'_>>) -> Vec<Member<'b>> {
    list.clear();
    // Empty: nothing is mapped, and the collect reuses the allocation.
    list.into_iter()
        .map(|_| -> Member<'b> { unreachable!("the list is empty") })
        .collect()
}

/// Counts the interned ids a value names that its sequence never defined,
/// as writing it in full would (the values written may be fewer).
fn count_missing(seq: &Sequence, a: &DebugAnnotation, depth: usize, missing: &mut u64) {
    if depth > MAX_ANNOTATION_DEPTH
        || a.bool_value.is_some()
        || a.uint_value.is_some()
        || a.int_value.is_some()
        || a.double_value.is_some()
        || a.pointer_value.is_some()
        || a.string_value.is_some()
    {
        return;
    }
    if let Some(iid) = a.string_value_iid {
        if !seq.annotation_strings.contains_key(&iid) {
            *missing += 1;
        }
        return;
    }
    if a.legacy_json_value.is_some() || a.nested_value.is_some() {
        return;
    }
    if !a.dict_entries.is_empty() {
        for entry in &a.dict_entries {
            if entry.name.is_none()
                && entry
                    .name_iid
                    .is_some_and(|iid| !seq.annotation_names.contains_key(&iid))
            {
                *missing += 1;
            }
            count_missing(seq, entry, depth + 1, missing);
        }
        return;
    }
    for v in &a.array_values {
        count_missing(seq, v, depth + 1, missing);
    }
}

/// One member of an object: its key and where its value comes from (the
/// value is written only if the member is kept).
struct Member<'a> {
    key: Cow<'a, str>,
    value: Value<'a>,
}

enum Value<'a> {
    /// A debug annotation's value at a nesting depth.
    Annotation(&'a DebugAnnotation, usize),
    Nested(&'a NestedValue, usize),
    Location(&'a SourceLocation),
    Flows(&'a [u64], &'a [u64]),
}

/// An object's members, written out sorted by key (the last of equal
/// keys winning, as serde_json's `BTreeMap`-backed `Map` does).
struct Object<'a> {
    members: Vec<Member<'a>>,
    /// Bytes of the object's text that matter: keys are compared on as
    /// many bytes (two keys equal that far are each written past the
    /// bound), and members whose text would begin past it are dropped.
    keep: usize,
    /// The least key dropped that way: it and every key after it begin
    /// past `keep` whatever else is added.
    horizon: Option<Cow<'a, str>>,
    compact_at: usize,
}

/// Keys in byte order (that of `str`) on their first `keep` bytes.
fn key_order(a: &str, b: &str, keep: usize) -> Ordering {
    if std::ptr::eq(a, b) {
        return Ordering::Equal;
    }
    let a = &a.as_bytes()[..a.len().min(keep)];
    let b = &b.as_bytes()[..b.len().min(keep)];
    a.cmp(b)
}

impl<'a> Object<'a> {
    fn new(members: Vec<Member<'a>>, keep: usize) -> Self {
        Object {
            members,
            keep,
            horizon: None,
            compact_at: COMPACT_AT,
        }
    }

    fn add(&mut self, key: Cow<'a, str>, value: Value<'a>) {
        if let Some(horizon) = &self.horizon
            && key_order(&key, horizon, self.keep) != Ordering::Less
        {
            return;
        }
        self.members.push(Member { key, value });
        if self.members.len() >= self.compact_at {
            self.compact();
            self.compact_at = self.members.len().saturating_mul(2).max(COMPACT_AT);
        }
    }

    /// Sorts the members by key, keeps the last of equal keys and drops
    /// the members whose text begins at byte `keep` or later whatever the
    /// values: each member before them takes at least its key's bytes,
    /// two quotes, `:`, a one-byte value and `,`.
    fn compact(&mut self) {
        let keep = self.keep;
        let members = &mut self.members;
        // Stable: of equal keys the last one added is last.
        members.sort_by(|a, b| key_order(&a.key, &b.key, keep));
        let n = members.len();
        let mut kept = 0;
        for i in 0..n {
            if i + 1 < n && key_order(&members[i].key, &members[i + 1].key, keep) == Ordering::Equal
            {
                continue;
            }
            members.swap(kept, i);
            kept += 1;
        }
        members.truncate(kept);
        // `{`, then each member before.
        let mut at = 1usize;
        for i in 0..members.len() {
            if at >= keep {
                self.horizon = Some(members[i].key.clone());
                members.truncate(i);
                break;
            }
            at = at.saturating_add(members[i].key.len()).saturating_add(5);
        }
    }

    /// Writes the object; stops once `out` holds `limit` bytes.
    fn write(&mut self, out: &mut Vec<u8>, seq: &Sequence, limit: usize) {
        if self.members.len() > 1 {
            self.compact();
        }
        out.push(b'{');
        for (i, m) in self.members.iter().enumerate() {
            if out.len() >= limit {
                return;
            }
            if i > 0 {
                out.push(b',');
            }
            bounded_text(out, &m.key, limit);
            out.push(b':');
            m.value.write(out, seq, limit);
        }
        out.push(b'}');
    }
}

impl Value<'_> {
    fn write(&self, out: &mut Vec<u8>, seq: &Sequence, limit: usize) {
        match *self {
            Value::Annotation(a, depth) => annotation_value(out, seq, a, depth, limit),
            Value::Nested(v, depth) => nested(out, seq, v, depth, limit),
            Value::Location(loc) => {
                // Keys already in sorted order.
                out.extend_from_slice(b"{\"file\":");
                optional_text(out, loc.file_name.as_deref(), limit);
                out.extend_from_slice(b",\"function\":");
                optional_text(out, loc.function_name.as_deref(), limit);
                out.extend_from_slice(b",\"line\":");
                match loc.line_number {
                    Some(line) => scalar(out, &line),
                    None => out.extend_from_slice(b"null"),
                }
                out.push(b'}');
            }
            Value::Flows(first, second) => array(out, first.iter().chain(second), limit, scalar),
        }
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

/// A JSON string of `s`, or of as much of it as takes `out` to `limit`
/// bytes: escaping never shortens text, and the escaped start of a string
/// is the start of the escaped string.
fn bounded_text(out: &mut Vec<u8>, s: &str, limit: usize) {
    let room = limit.saturating_sub(out.len());
    if s.len() <= room {
        return scalar(out, s);
    }
    let mut cut = room;
    while !s.is_char_boundary(cut) {
        cut += 1;
    }
    scalar(out, &s[..cut]);
}

/// [`bounded_text`] of bytes read as UTF-8 (invalid sequences replaced).
/// A long text is read only as far as the bound: the replaced text of the
/// first `room + 4` bytes starts with at least `room` bytes of the
/// replaced text of all of them (a sequence is decided by its 4 bytes at
/// most, and replacing never shortens).
fn text(out: &mut Vec<u8>, bytes: &[u8], limit: usize) {
    let room = limit.saturating_sub(out.len());
    let read = &bytes[..bytes.len().min(room.saturating_add(4))];
    bounded_text(out, &String::from_utf8_lossy(read), limit);
}

fn optional_text(out: &mut Vec<u8>, bytes: Option<&[u8]>, limit: usize) {
    match bytes {
        Some(b) => text(out, b, limit),
        None => out.extend_from_slice(b"null"),
    }
}

/// A JSON array of `items`; stops once `out` holds `limit` bytes.
fn array<T>(
    out: &mut Vec<u8>,
    items: impl IntoIterator<Item = T>,
    limit: usize,
    mut each: impl FnMut(&mut Vec<u8>, T),
) {
    out.push(b'[');
    for (i, item) in items.into_iter().enumerate() {
        if out.len() >= limit {
            return;
        }
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
    limit: usize,
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
        return text(out, v, limit);
    }
    if let Some(iid) = a.string_value_iid {
        return match seq.annotation_strings.get(&iid) {
            Some(s) => bounded_text(out, s, limit),
            None => scalar(out, UNKNOWN),
        };
    }
    if let Some(v) = &a.legacy_json_value {
        // Parsed and printed again, as it always was (keys sorted).
        return match serde_json::from_slice::<serde_json::Value>(v) {
            Ok(value) => scalar(out, &value),
            Err(_) => text(out, v, limit),
        };
    }
    if let Some(v) = &a.nested_value {
        return nested(out, seq, v, depth + 1, limit);
    }
    if !a.dict_entries.is_empty() {
        let keep = limit.saturating_sub(out.len());
        let mut object = Object::new(Vec::new(), keep);
        for entry in &a.dict_entries {
            let key = annotation_name(seq, entry, &mut 0);
            object.add(key, Value::Annotation(entry, depth + 1));
        }
        return object.write(out, seq, limit);
    }
    if !a.array_values.is_empty() {
        return array(out, &a.array_values, limit, |o, v| {
            annotation_value(o, seq, v, depth + 1, limit)
        });
    }
    out.extend_from_slice(b"null");
}

/// A nested value (`seq` only passes through: nested values intern nothing).
fn nested(out: &mut Vec<u8>, seq: &Sequence, v: &NestedValue, depth: usize, limit: usize) {
    if depth > MAX_ANNOTATION_DEPTH {
        return scalar(out, TOO_DEEP);
    }
    match v.nested_type {
        Some(1) => {
            let keep = limit.saturating_sub(out.len());
            let mut object = Object::new(Vec::new(), keep);
            for (key, value) in v.dict_keys.iter().zip(&v.dict_values) {
                object.add(
                    String::from_utf8_lossy(key),
                    Value::Nested(value, depth + 1),
                );
            }
            object.write(out, seq, limit);
        }
        Some(2) => array(out, &v.array_values, limit, |o, item| {
            nested(o, seq, item, depth + 1, limit)
        }),
        _ => {
            if let Some(i) = v.int_value {
                scalar(out, &i)
            } else if let Some(d) = v.double_value {
                scalar(out, &d)
            } else if let Some(b) = v.bool_value {
                scalar(out, &b)
            } else if let Some(s) = &v.string_value {
                text(out, s, limit)
            } else {
                out.extend_from_slice(b"null")
            }
        }
    }
}

#[cfg(test)]
#[path = "annotations_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "annotations_bound_tests.rs"]
mod bound_tests;
