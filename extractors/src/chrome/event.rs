//! Reading the fields of one indexed event.
//!
//! The scanner thread indexes each array element ([`super::event_index`]);
//! this module turns the spans into a [`RawEvent`] of borrowed slices of raw
//! JSON text (for everything whose type varies between producers) and reads
//! numbers, strings and times out of them without allocating in the common
//! case.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::event_index::{EventIndex, arg, field};
use super::time::{TimeError, micros_text_to_ns};

/// A map key, borrowed when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// The fields of an event flameox reads, as raw JSON text; everything else
/// is ignored.
#[derive(Default, Debug)]
pub struct RawEvent<'a> {
    pub ph: Option<&'a str>,
    pub name: Option<&'a str>,
    pub cat: Option<&'a str>,
    pub ts: Option<&'a str>,
    pub dur: Option<&'a str>,
    pub pid: Option<&'a str>,
    pub tid: Option<&'a str>,
    pub id: Option<&'a str>,
    pub id2: Option<&'a str>,
    pub args: Option<&'a str>,
    pub bp: Option<&'a str>,
    /// The mapped members of `args` (empty unless `args` is an object).
    pub args_view: ArgsView<'a>,
    /// Known keys that appeared more than once (the last one was kept).
    pub duplicate_keys: u32,
}

impl<'a> RawEvent<'a> {
    /// The event whose text is `text`, from the spans the indexer found.
    pub fn from_index(text: &'a str, index: &EventIndex) -> Self {
        let f = |slot: usize| index.fields[slot].text(text);
        let a = |slot: usize| index.args[slot].text(text);
        RawEvent {
            ph: f(field::PH),
            name: f(field::NAME),
            cat: f(field::CAT),
            ts: f(field::TS),
            dur: f(field::DUR),
            pid: f(field::PID),
            tid: f(field::TID),
            id: f(field::ID),
            id2: f(field::ID2),
            args: f(field::ARGS),
            bp: f(field::BP),
            args_view: ArgsView {
                correlation: a(arg::CORRELATION),
                external_id: a(arg::EXTERNAL_ID),
                device: a(arg::DEVICE),
                context: a(arg::CONTEXT),
                stream: a(arg::STREAM),
                bytes: a(arg::BYTES),
                graph_id: a(arg::GRAPH_ID),
                graph_node_id: a(arg::GRAPH_NODE_ID),
                name: a(arg::NAME),
                device_id: a(arg::DEVICE_ID),
                total_allocated: a(arg::TOTAL_ALLOCATED),
                total_reserved: a(arg::TOTAL_RESERVED),
                duplicate_keys: index.args_duplicate_keys,
            },
            duplicate_keys: index.duplicate_keys,
        }
    }
}

/// The `args` fields flameox maps to columns (raw JSON text).
#[derive(Default, Debug)]
pub struct ArgsView<'a> {
    pub correlation: Option<&'a str>,
    pub external_id: Option<&'a str>,
    pub device: Option<&'a str>,
    pub context: Option<&'a str>,
    pub stream: Option<&'a str>,
    pub bytes: Option<&'a str>,
    pub graph_id: Option<&'a str>,
    pub graph_node_id: Option<&'a str>,
    pub name: Option<&'a str>,
    pub device_id: Option<&'a str>,
    pub total_allocated: Option<&'a str>,
    pub total_reserved: Option<&'a str>,
    pub duplicate_keys: u32,
}

/// An object's members in order, repeats included, as serde reads them
/// (keys unescaped, values as raw JSON text); `None` if `text` is not one.
pub fn object_members(text: &str) -> Option<Vec<(Cow<'_, str>, &str)>> {
    struct Members<'a>(Vec<(Cow<'a, str>, &'a str)>);
    impl<'de> Deserialize<'de> for Members<'de> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct MembersVisitor;
            impl<'de> Visitor<'de> for MembersVisitor {
                type Value = Members<'de>;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                    let mut out = Vec::new();
                    while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                        let value: &'de RawValue = map.next_value()?;
                        out.push((key, value.get()));
                    }
                    Ok(Members(out))
                }
            }
            d.deserialize_map(MembersVisitor)
        }
    }
    serde_json::from_str::<Members>(text).ok().map(|m| m.0)
}

/// All `args` pairs in order, duplicates resolved last-wins in the first
/// one's place (for counters). Values are raw JSON text.
pub fn args_pairs(args: &str) -> Option<Vec<(Cow<'_, str>, &str)>> {
    let members = object_members(args)?;
    let mut out: Vec<(Cow<'_, str>, &str)> = Vec::with_capacity(members.len());
    // A few keys (the usual counter) are deduplicated by a scan; many by a
    // map, so a counter with millions of args stays linear.
    let mut slots: Option<crate::FastHashMap<Cow<'_, str>, usize>> = None;
    for (key, value) in members {
        if out.len() == DEDUP_BY_SCAN && slots.is_none() {
            slots = Some(
                out.iter()
                    .enumerate()
                    .map(|(i, (k, _))| (k.clone(), i))
                    .collect(),
            );
        }
        let found = match &slots {
            Some(map) => map.get(&key).copied(),
            None => out.iter().position(|(k, _)| *k == key),
        };
        match found {
            Some(i) => out[i].1 = value,
            None => {
                if let Some(map) = &mut slots {
                    map.insert(key.clone(), out.len());
                }
                out.push((key, value));
            }
        }
    }
    Some(out)
}

/// Keys [`args_pairs`] deduplicates by scanning before it builds a map.
const DEDUP_BY_SCAN: usize = 32;

/// A JSON string value, borrowed when it needs no unescaping.
pub fn raw_str(text: &str) -> Option<Cow<'_, str>> {
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(text).ok().map(Cow::Owned)
}

/// The text of a scalar: a string's contents, or a number's digits.
pub fn scalar_text(text: &str) -> Option<Cow<'_, str>> {
    if text.starts_with('"') {
        raw_str(text)
    } else if text.starts_with(['{', '[']) || text == "null" {
        None
    } else {
        Some(Cow::Borrowed(text))
    }
}

/// An integer from a number or numeric string (`"12"`, `12.0`, `"0x1f"`).
pub fn raw_i64(v: &str) -> Option<i64> {
    let text = scalar_text(v)?;
    int_from_text(text.trim())
}

/// An integer from text, accepting integral decimals and `0x` hex.
pub fn int_from_text(t: &str) -> Option<i64> {
    if let Ok(i) = t.parse::<i64>() {
        return Some(i);
    }
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16).ok().map(|u| u as i64);
    }
    let f = t.parse::<f64>().ok()?;
    (f.is_finite() && f.fract() == 0.0 && f.abs() < 9.2e18).then_some(f as i64)
}

/// A float from a number or numeric string.
pub fn raw_f64(v: &str) -> Option<f64> {
    let text = scalar_text(v)?;
    text.trim().parse::<f64>().ok().filter(|f| f.is_finite())
}

/// Microseconds (number or numeric string) → nanoseconds.
pub fn raw_micros(v: &str) -> Result<i64, TimeError> {
    match scalar_text(v) {
        Some(text) => micros_text_to_ns(&text),
        None => Err(TimeError::Invalid),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chrome::event_index::Indexer;

    fn indexed(text: &str) -> RawEvent<'_> {
        let mut index = EventIndex::default();
        Indexer::default()
            .index(text.as_bytes(), &mut index)
            .unwrap();
        RawEvent::from_index(text, &index)
    }

    #[test]
    fn duplicate_keys_last_wins() {
        let e = indexed(r#"{"ph":"X","ph":"i","name":"a","zz":[1]}"#);
        assert_eq!(e.ph, Some("\"i\""));
        assert_eq!(e.duplicate_keys, 1);
    }

    #[test]
    fn numbers_as_strings() {
        assert_eq!(raw_i64("\"42\""), Some(42));
        assert_eq!(raw_i64("42.0"), Some(42));
        assert_eq!(raw_micros("\"1.5\""), Ok(1500));
        assert_eq!(raw_str("\"a\\\"b\"").as_deref(), Some("a\"b"));
        let e = indexed(r#"{"args":{"External id":3,"Bytes":"7"}}"#);
        assert_eq!(e.args_view.external_id.and_then(raw_i64), Some(3));
        assert_eq!(e.args_view.bytes.and_then(raw_i64), Some(7));
    }
}
