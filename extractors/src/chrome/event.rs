//! Parsing one captured event object with borrowed serde types.
//!
//! The scanner hands over the bytes of one array element. This module turns
//! them into a [`RawEvent`] of borrowed slices (`&RawValue` for everything
//! whose type varies between producers) without allocating in the common
//! case. Objects are read with hand-written visitors rather than derive so
//! duplicated keys are accepted (last wins) and counted instead of failing.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

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

/// The fields of an event flameox reads; everything else is ignored.
#[derive(Default, Debug)]
pub struct RawEvent<'a> {
    pub ph: Option<&'a RawValue>,
    pub name: Option<&'a RawValue>,
    pub cat: Option<&'a RawValue>,
    pub ts: Option<&'a RawValue>,
    pub dur: Option<&'a RawValue>,
    pub pid: Option<&'a RawValue>,
    pub tid: Option<&'a RawValue>,
    pub id: Option<&'a RawValue>,
    pub id2: Option<&'a RawValue>,
    pub args: Option<&'a RawValue>,
    pub bp: Option<&'a RawValue>,
    /// Known keys that appeared more than once (the last one was kept).
    pub duplicate_keys: u32,
}

impl<'de> Deserialize<'de> for RawEvent<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct EventVisitor;
        impl<'de> Visitor<'de> for EventVisitor {
            type Value = RawEvent<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a trace event object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut e = RawEvent::default();
                while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                    let value: &'de RawValue = map.next_value()?;
                    let slot = match key.as_ref() {
                        "ph" => &mut e.ph,
                        "name" => &mut e.name,
                        "cat" => &mut e.cat,
                        "ts" => &mut e.ts,
                        "dur" => &mut e.dur,
                        "pid" => &mut e.pid,
                        "tid" => &mut e.tid,
                        "id" => &mut e.id,
                        "id2" => &mut e.id2,
                        "args" => &mut e.args,
                        "bp" => &mut e.bp,
                        _ => continue,
                    };
                    if slot.replace(value).is_some() {
                        e.duplicate_keys += 1;
                    }
                }
                Ok(e)
            }
        }
        d.deserialize_map(EventVisitor)
    }
}

/// The `args` fields flameox maps to columns.
#[derive(Default, Debug)]
pub struct ArgsView<'a> {
    pub correlation: Option<&'a RawValue>,
    pub external_id: Option<&'a RawValue>,
    pub device: Option<&'a RawValue>,
    pub context: Option<&'a RawValue>,
    pub stream: Option<&'a RawValue>,
    pub bytes: Option<&'a RawValue>,
    pub graph_id: Option<&'a RawValue>,
    pub graph_node_id: Option<&'a RawValue>,
    pub name: Option<&'a RawValue>,
    pub device_id: Option<&'a RawValue>,
    pub total_allocated: Option<&'a RawValue>,
    pub total_reserved: Option<&'a RawValue>,
    pub duplicate_keys: u32,
}

impl<'de> Deserialize<'de> for ArgsView<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ArgsVisitor;
        impl<'de> Visitor<'de> for ArgsVisitor {
            type Value = ArgsView<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an args object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut a = ArgsView::default();
                while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                    let value: &'de RawValue = map.next_value()?;
                    let slot = match key.as_ref() {
                        "correlation" => &mut a.correlation,
                        "External id" | "external id" | "External ID" => &mut a.external_id,
                        "device" => &mut a.device,
                        "context" => &mut a.context,
                        "stream" => &mut a.stream,
                        "Bytes" | "bytes" => &mut a.bytes,
                        "graph id" | "graph_id" | "graphId" => &mut a.graph_id,
                        "graph node id" | "graph_node_id" | "graphNodeId" => &mut a.graph_node_id,
                        "name" => &mut a.name,
                        "Device Id" => &mut a.device_id,
                        "Total Allocated" => &mut a.total_allocated,
                        "Total Reserved" => &mut a.total_reserved,
                        _ => continue,
                    };
                    if slot.replace(value).is_some() {
                        a.duplicate_keys += 1;
                    }
                }
                Ok(a)
            }
        }
        d.deserialize_map(ArgsVisitor)
    }
}

/// All `args` pairs in order, duplicates resolved last-wins (for counters).
pub fn args_pairs(args: &RawValue) -> Option<Vec<(Cow<'_, str>, &RawValue)>> {
    struct Pairs<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);
    impl<'de> Deserialize<'de> for Pairs<'de> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct PairsVisitor;
            impl<'de> Visitor<'de> for PairsVisitor {
                type Value = Pairs<'de>;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                    let mut out: Vec<(Cow<'de, str>, &'de RawValue)> = Vec::new();
                    while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                        let value: &'de RawValue = map.next_value()?;
                        if let Some(slot) = out.iter_mut().find(|(k, _)| *k == key) {
                            slot.1 = value;
                        } else {
                            out.push((key, value));
                        }
                    }
                    Ok(Pairs(out))
                }
            }
            d.deserialize_map(PairsVisitor)
        }
    }
    serde_json::from_str::<Pairs>(args.get()).ok().map(|p| p.0)
}

/// Parses the `args` object (a non-object gives the empty view).
pub fn args_view(args: Option<&RawValue>) -> ArgsView<'_> {
    match args {
        Some(raw) if raw.get().starts_with('{') => {
            serde_json::from_str::<ArgsView>(raw.get()).unwrap_or_default()
        }
        _ => ArgsView::default(),
    }
}

/// A JSON string value, borrowed when it needs no unescaping.
pub fn raw_str(v: &RawValue) -> Option<Cow<'_, str>> {
    let text = v.get();
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(text).ok().map(Cow::Owned)
}

/// The text of a scalar: a string's contents, or a number's digits.
pub fn scalar_text(v: &RawValue) -> Option<Cow<'_, str>> {
    let text = v.get();
    if text.starts_with('"') {
        raw_str(v)
    } else if text.starts_with(['{', '[']) || text == "null" {
        None
    } else {
        Some(Cow::Borrowed(text))
    }
}

/// An integer from a number or numeric string (`"12"`, `12.0`, `"0x1f"`).
pub fn raw_i64(v: &RawValue) -> Option<i64> {
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
pub fn raw_f64(v: &RawValue) -> Option<f64> {
    let text = scalar_text(v)?;
    text.trim().parse::<f64>().ok().filter(|f| f.is_finite())
}

/// Microseconds (number or numeric string) → nanoseconds.
pub fn raw_micros(v: &RawValue) -> Result<i64, TimeError> {
    match scalar_text(v) {
        Some(text) => micros_text_to_ns(&text),
        None => Err(TimeError::Invalid),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_last_wins() {
        let e: RawEvent =
            serde_json::from_str(r#"{"ph":"X","ph":"i","name":"a","zz":[1]}"#).unwrap();
        assert_eq!(e.ph.map(|v| v.get()), Some("\"i\""));
        assert_eq!(e.duplicate_keys, 1);
    }

    #[test]
    fn numbers_as_strings() {
        let v: &RawValue = serde_json::from_str("\"42\"").unwrap();
        assert_eq!(raw_i64(v), Some(42));
        let v: &RawValue = serde_json::from_str("42.0").unwrap();
        assert_eq!(raw_i64(v), Some(42));
        let v: &RawValue = serde_json::from_str("\"1.5\"").unwrap();
        assert_eq!(raw_micros(v), Ok(1500));
        let v: &RawValue = serde_json::from_str("\"a\\\"b\"").unwrap();
        assert_eq!(raw_str(v).as_deref(), Some("a\"b"));
        let a = args_view(Some(
            serde_json::from_str(r#"{"External id":3,"Bytes":"7"}"#).unwrap(),
        ));
        assert_eq!(a.external_id.and_then(raw_i64), Some(3));
        assert_eq!(a.bytes.and_then(raw_i64), Some(7));
    }
}
